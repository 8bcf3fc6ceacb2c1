/*
 * cl_admin_scram.c: the admin client's SCRAM user calls (KIP-554):
 * DescribeUserScramCredentials and AlterUserScramCredentials, one request
 * to any broker each (Java's describeUserScramCredentials /
 * alterUserScramCredentials). Contracts in include/cohort/cohort.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cl_admin_int.h"

/* ---- describe ------------------------------------------------------------------------- */

typedef struct {
	cohort_scram_users pub;
	ch_arena arena;
} scram_res;

typedef struct scram_call {
	scram_res *r;
	const char *const *users;
	size_t n;
} scram_call;

/* Encodes the named users, or a null list (every user). */
static void
build_describe(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n, size_t *encoded)
{
	(void)items;
	scram_call *sc = k->ud;
	ch_DescribeUserScramCredentialsRequest m;
	ch_DescribeUserScramCredentialsRequest_init(&m);
	ch_DescribeUserScramCredentialsRequest_UserName *u = calloc(sc->n + 1, sizeof(*u));
	if (!u) {
		b->oom = true;
		return;
	}
	for (size_t i = 0; i < sc->n; i++)
		u[i].Name = ch_str_c(sc->users[i]);
	m.Users = sc->n ? u : NULL;
	m.Users_n = sc->n ? (int32_t)sc->n : -1;
	ch_DescribeUserScramCredentialsRequest_encode(b, version, &m);
	free(u);
	*encoded = n;
}

/* Copies the answer's users into the result (top-level error: the item's). */
static void
done_describe(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	(void)version;
	(void)n;
	scram_call *sc = k->ud;
	scram_res *r = sc->r;
	const ch_DescribeUserScramCredentialsResponse *m = resp;
	if (m->ErrorCode) {
		ad_done(k, items[0], m->ErrorCode);
		return;
	}
	bool oom = false;
	int32_t nr = m->Results_n > 0 ? m->Results_n : 0;
	r->pub.users = ch_arena_alloc(&r->arena, sizeof(cohort_scram_user) * ((size_t)nr + 1));
	if (!r->pub.users)
		oom = true;
	for (int32_t i = 0; !oom && i < nr; i++) {
		const ch_DescribeUserScramCredentialsResponse_DescribeUserScramCredentialsResult
			*x = &m->Results[i];
		cohort_scram_user *u = &r->pub.users[r->pub.users_n++];
		memset(u, 0, sizeof(*u));
		u->name = ad_strdup(&r->arena, x->User, &oom);
		u->err = x->ErrorCode;
		u->errmsg = x->ErrorMessage.len > 0 ? ad_strdup(&r->arena, x->ErrorMessage, &oom)
						    : NULL;
		for (int32_t j = 0; j < x->CredentialInfos_n && u->creds_n < 2; j++) {
			u->creds[u->creds_n].mechanism = x->CredentialInfos[j].Mechanism;
			u->creds[u->creds_n].iterations = x->CredentialInfos[j].Iterations;
			u->creds_n++;
		}
	}
	if (oom)
		ad_done(k, items[0], COHORT_ERR__NOMEM);
}

static const ad_ops describe_ops = {
	.api = CH_APIKEY_DESCRIBE_USER_SCRAM_CREDENTIALS,
	.route = R_ANY,
	.max_version = -1,
	.build = build_describe,
	.done = done_describe,
};

cohort_err
cohort_admin_describe_scram_users(cohort_admin *a, const char *const *users, size_t n,
				  int timeout_ms, cohort_scram_users **out)
{
	if (!a || !out || (n && !users))
		return COHORT_ERR__INVALID_ARG;
	for (size_t i = 0; i < n; i++)
		if (!users[i])
			return COHORT_ERR__INVALID_ARG;
	*out = NULL;
	scram_res *r = calloc(1, sizeof(*r));
	scram_call sc = {r, users, n};
	cohort_err err = COHORT_OK;
	ad_call *k = r ? ad_new(&a->c, &describe_ops, 1, &sc, &err, timeout_ms) : NULL;
	if (!k) {
		free(r);
		return COHORT_ERR__NOMEM;
	}
	ch_arena_init(&r->arena);
	cohort_err cerr = ad_run(k);
	if (cerr || err) {
		cohort_scram_users_free(&r->pub);
		return cerr ? cerr : err;
	}
	*out = &r->pub;
	return COHORT_OK;
}

void
cohort_scram_users_free(cohort_scram_users *u)
{
	if (!u)
		return;
	scram_res *r = (scram_res *)u;
	ch_arena_free(&r->arena);
	free(r);
}

/* ---- alter ---------------------------------------------------------------------------- */

typedef struct alter_call {
	cohort_scram_alteration *v;
	size_t n;
} alter_call;

/* Encodes every alteration: iterations 0 as a deletion, the rest as upsertions. */
static void
build_alter(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n, size_t *encoded)
{
	(void)items;
	alter_call *ac = k->ud;
	ch_AlterUserScramCredentialsRequest m;
	ch_AlterUserScramCredentialsRequest_init(&m);
	m.Deletions = calloc(ac->n + 1, sizeof(*m.Deletions));
	m.Upsertions = calloc(ac->n + 1, sizeof(*m.Upsertions));
	if (!m.Deletions || !m.Upsertions) {
		free(m.Deletions);
		free(m.Upsertions);
		b->oom = true;
		return;
	}
	m.Deletions_n = m.Upsertions_n = 0;
	for (size_t i = 0; i < ac->n; i++) {
		const cohort_scram_alteration *x = &ac->v[i];
		if (x->iterations == 0) {
			m.Deletions[m.Deletions_n].Name = ch_str_c(x->user);
			m.Deletions[m.Deletions_n++].Mechanism = (int8_t)x->mechanism;
			continue;
		}
		ch_AlterUserScramCredentialsRequest_ScramCredentialUpsertion *u =
			&m.Upsertions[m.Upsertions_n++];
		u->Name = ch_str_c(x->user);
		u->Mechanism = (int8_t)x->mechanism;
		u->Iterations = x->iterations;
		u->Salt = (ch_bytes){x->salt, (int32_t)x->salt_len};
		u->SaltedPassword = (ch_bytes){x->salted_password, (int32_t)x->salted_password_len};
	}
	ch_AlterUserScramCredentialsRequest_encode(b, version, &m);
	free(m.Deletions);
	free(m.Upsertions);
	*encoded = n;
}

/* Each alteration gets the result the broker gave its user. */
static void
done_alter(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	(void)version;
	(void)items;
	(void)n;
	alter_call *ac = k->ud;
	const ch_AlterUserScramCredentialsResponse *m = resp;
	for (size_t i = 0; i < ac->n; i++) {
		cohort_scram_alteration *x = &ac->v[i];
		const ch_AlterUserScramCredentialsResponse_AlterUserScramCredentialsResult *r =
			AD_FIND(m->Results, m->Results_n, User, x->user);
		x->err = r ? r->ErrorCode : COHORT_ERR__INVALID_ARG;
		x->errmsg[0] = '\0';
		if (r && r->ErrorMessage.len > 0)
			snprintf(x->errmsg, sizeof(x->errmsg), "%.*s", (int)r->ErrorMessage.len,
				 r->ErrorMessage.p);
		else if (!r)
			snprintf(x->errmsg, sizeof(x->errmsg),
				 "the broker's answer left this user out");
	}
}

static const ad_ops alter_ops = {
	.api = CH_APIKEY_ALTER_USER_SCRAM_CREDENTIALS,
	.route = R_ANY,
	.max_version = -1,
	.build = build_alter,
	.done = done_alter,
};

cohort_err
cohort_admin_alter_scram_users(cohort_admin *a, cohort_scram_alteration *v, size_t n,
			       int timeout_ms)
{
	if (!a || !v || n == 0)
		return COHORT_ERR__INVALID_ARG;
	for (size_t i = 0; i < n; i++) {
		cohort_scram_alteration *x = &v[i];
		if (!x->user || x->iterations < 0 ||
		    (x->iterations > 0 && (!x->salt || !x->salted_password)) ||
		    x->salt_len > INT32_MAX || x->salted_password_len > INT32_MAX)
			return COHORT_ERR__INVALID_ARG;
		x->err = COHORT_OK;
		x->errmsg[0] = '\0';
	}
	alter_call ac = {v, n};
	cohort_err err = COHORT_OK;
	ad_call *k = ad_new(&a->c, &alter_ops, 1, &ac, &err, timeout_ms);
	if (!k)
		return COHORT_ERR__NOMEM;
	cohort_err cerr = ad_run(k);
	if (cerr || err)
		return cerr ? cerr : err;
	for (size_t i = 0; i < n; i++)
		if (v[i].err)
			return v[i].err;
	return COHORT_OK;
}
