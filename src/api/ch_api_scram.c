/*
 * ch_api_scram.c: DescribeUserScramCredentials and AlterUserScramCredentials
 * (KIP-554) on the broker's SCRAM credential store, with Kafka's checks and
 * messages (ScramImage.describe, ScramControlManager.alterCredentials). The
 * client salts and hashes (it sends SaltedPassword); the broker keeps
 * StoredKey and ServerKey. An alteration is one durable rewrite of the
 * store: all of a request's accepted changes or none.
 */
#include <stdio.h>
#include <string.h>

#include "api/ch_api.h"
#include "proto/ch_acl.h"
#include "auth/ch_scram_store.h"
#include "broker/ch_broker.h"
#include "common/ch_common.h"
#include "common/ch_log.h"
#include "proto/generated/ch_errors.h"

/* Kafka's ScramMechanism types: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512, else unknown. */
static int
mech_of_type(int8_t type, ch_scram_mech *out)
{
	if (type == 1 || type == 2) {
		*out = type == 1 ? CH_SCRAM_SHA_256 : CH_SCRAM_SHA_512;
		return 0;
	}
	return -1;
}

static int8_t
type_of_mech(ch_scram_mech m)
{
	return m == CH_SCRAM_SHA_256 ? 1 : 2;
}

/* Whether the wire string equals the C string. */
static bool
str_eq(ch_str a, const char *b)
{
	return a.len >= 0 && (size_t)a.len == strlen(b) && memcmp(a.p, b, (size_t)a.len) == 0;
}

/* Fills one describe result for user (its credentials, or RESOURCE_NOT_FOUND). */
static void
describe_one(ch_req *req, const ch_scram_store *st, const char *user,
	     ch_DescribeUserScramCredentialsResponse_DescribeUserScramCredentialsResult *r)
{
	r->User = ch_str_c(user);
	r->CredentialInfos =
		CH_REQ_NEW_ARRAY(req, ch_DescribeUserScramCredentialsResponse_CredentialInfo, 2);
	r->CredentialInfos_n = 0;
	for (int m = 0; m < 2; m++) {
		ch_scram_cred c;
		if (st && ch_scram_store_get(st, user, (ch_scram_mech)m, &c)) {
			r->CredentialInfos[r->CredentialInfos_n].Mechanism = type_of_mech(c.mech);
			r->CredentialInfos[r->CredentialInfos_n].Iterations = c.iterations;
			r->CredentialInfos_n++;
		}
	}
	if (r->CredentialInfos_n == 0) {
		char msg[CH_SCRAM_NAME_MAX + 80];
		snprintf(msg, sizeof(msg),
			 "Attempt to describe a user credential that does not exist: %s", user);
		r->ErrorCode = CH_KERR_RESOURCE_NOT_FOUND;
		r->ErrorMessage = ch_str_c(ch_req_strdup(req, ch_str_c(msg)));
	}
}

void
ch_api_DescribeUserScramCredentials(ch_req *req)
{
	const ch_DescribeUserScramCredentialsRequest *rq = req->body;
	const ch_scram_store *st = req->bk->scram;
	ch_DescribeUserScramCredentialsResponse resp;
	ch_DescribeUserScramCredentialsResponse_init(&resp);
	typedef ch_DescribeUserScramCredentialsResponse_DescribeUserScramCredentialsResult result;
	if (!ch_api_cluster_allowed(req, CH_ACL_DESCRIBE)) {
		/* DescribeUserScramCredentialsRequest.getErrorResponse: the error at
		 * the top and once per user asked, with no name */
		resp.ErrorCode = CH_KERR_CLUSTER_AUTHORIZATION_FAILED;
		resp.ErrorMessage = ch_str_c(ch_kerr_message(resp.ErrorCode));
		int32_t n = rq->Users_n > 0 ? rq->Users_n : 0;
		resp.Results = CH_REQ_NEW_ARRAY(req, result, n + 1);
		resp.Results_n = n;
		for (int32_t i = 0; i < n; i++) {
			resp.Results[i].User = CH_STR_LIT("");
			resp.Results[i].ErrorCode = resp.ErrorCode;
			resp.Results[i].ErrorMessage = resp.ErrorMessage;
			resp.Results[i].CredentialInfos_n = 0;
		}
		ch_api_send(req, &resp);
		return;
	}
	if (rq->Users_n <= 0) {
		/* Every user with a credential, once. */
		size_t n = 0;
		const char *u;
		const ch_scram_cred *c;
		while (st && ch_scram_store_at(st, n, &u, &c))
			n++;
		resp.Results = CH_REQ_NEW_ARRAY(req, result, n);
		for (size_t i = 0; i < n; i++) {
			ch_scram_store_at(st, i, &u, &c);
			bool seen = false;
			for (int32_t k = 0; k < resp.Results_n && !seen; k++)
				seen = str_eq(resp.Results[k].User, u);
			if (!seen)
				describe_one(req, st, u, &resp.Results[resp.Results_n++]);
		}
		ch_api_send(req, &resp);
		return;
	}
	resp.Results = CH_REQ_NEW_ARRAY(req, result, rq->Users_n);
	for (int32_t i = 0; i < rq->Users_n; i++) {
		ch_str name = rq->Users[i].Name;
		bool first = true, dup = false;
		for (int32_t k = 0; k < rq->Users_n; k++) {
			bool same = rq->Users[k].Name.len == name.len &&
				    memcmp(rq->Users[k].Name.p, name.p,
					   (size_t)CH_MAX(name.len, 0)) == 0;
			if (same && k < i)
				first = false;
			if (same && k != i)
				dup = true;
		}
		if (!first)
			continue;
		result *r = &resp.Results[resp.Results_n++];
		char *user = ch_req_strdup(req, name);
		if (dup) {
			char msg[CH_SCRAM_NAME_MAX + 100];
			snprintf(msg, sizeof(msg),
				 "Cannot describe SCRAM credentials for the same user twice in a "
				 "single "
				 "request: %s",
				 user);
			r->User = ch_str_c(user);
			r->ErrorCode = CH_KERR_DUPLICATE_RESOURCE;
			r->ErrorMessage = ch_str_c(ch_req_strdup(req, ch_str_c(msg)));
			r->CredentialInfos = CH_REQ_NEW_ARRAY(
				req, ch_DescribeUserScramCredentialsResponse_CredentialInfo, 0);
			continue;
		}
		describe_one(req, st, user, r);
	}
	ch_api_send(req, &resp);
}

/* One user's outcome in an alteration. */
typedef struct alter_user {
	ch_str name;
	int16_t err;
	const char *msg;
	bool del;    /* the accepted change is a deletion */
	int32_t idx; /* its index in Deletions or Upsertions */
} alter_user;

/* The user's slot in v[0..*n), added when new. */
static alter_user *
user_slot(alter_user *v, size_t *n, ch_str name)
{
	for (size_t i = 0; i < *n; i++)
		if (v[i].name.len == name.len &&
		    memcmp(v[i].name.p, name.p, (size_t)CH_MAX(name.len, 0)) == 0)
			return &v[i];
	v[*n].name = name;
	v[*n].idx = -1;
	return &v[(*n)++];
}

/* Kafka's validateScramUsernameAndMechanism. */
static int16_t
check_name_mech(ch_str name, int8_t type, const char **msg)
{
	ch_scram_mech m;
	if (name.len <= 0) {
		*msg = "Username must not be empty";
		return CH_KERR_UNACCEPTABLE_CREDENTIAL;
	}
	if (mech_of_type(type, &m) != 0) {
		*msg = "Unknown SCRAM mechanism";
		return CH_KERR_UNSUPPORTED_SASL_MECHANISM;
	}
	if (name.len >= CH_SCRAM_NAME_MAX) {
		*msg = "Username is too long";
		return CH_KERR_UNACCEPTABLE_CREDENTIAL;
	}
	return CH_KERR_NONE;
}

/* Marks u refused for want of ALTER on the cluster when denied; whether it did. */
static bool
deny(alter_user *u, bool denied)
{
	if (denied) {
		u->err = CH_KERR_CLUSTER_AUTHORIZATION_FAILED;
		u->msg = ch_kerr_message(u->err);
	}
	return denied;
}

void
ch_api_AlterUserScramCredentials(ch_req *req)
{
	const ch_AlterUserScramCredentialsRequest *rq = req->body;
	ch_scram_store *st = req->bk->scram;
	ch_AlterUserScramCredentialsResponse resp;
	ch_AlterUserScramCredentialsResponse_init(&resp);
	size_t nd = rq->Deletions_n > 0 ? (size_t)rq->Deletions_n : 0;
	size_t nu = rq->Upsertions_n > 0 ? (size_t)rq->Upsertions_n : 0;
	alter_user *users = CH_REQ_NEW_ARRAY(req, alter_user, nd + nu + 1);
	size_t n = 0;
	static const char dup_msg[] =
		"A user credential cannot be altered twice in the same request";
	/* ALTER on the cluster, else every user named fails (Kafka's getErrorResponse) */
	bool denied = !ch_api_cluster_allowed(req, CH_ACL_ALTER);
	for (size_t i = 0; i < nd; i++) {
		const ch_AlterUserScramCredentialsRequest_ScramCredentialDeletion *d =
			&rq->Deletions[i];
		alter_user *u = user_slot(users, &n, d->Name);
		if (u->err || deny(u, denied))
			continue;
		if (u->idx >= 0) {
			u->err = CH_KERR_DUPLICATE_RESOURCE;
			u->msg = dup_msg;
			continue;
		}
		u->err = check_name_mech(d->Name, d->Mechanism, &u->msg);
		ch_scram_mech m;
		ch_scram_cred c;
		if (!u->err &&
		    (mech_of_type(d->Mechanism, &m),
		     !st || !ch_scram_store_get(st, ch_req_strdup(req, d->Name), m, &c))) {
			u->err = CH_KERR_RESOURCE_NOT_FOUND;
			u->msg = "Attempt to delete a user credential that does not exist";
		}
		if (!u->err) {
			u->del = true;
			u->idx = (int32_t)i;
		}
	}
	for (size_t i = 0; i < nu; i++) {
		const ch_AlterUserScramCredentialsRequest_ScramCredentialUpsertion *p =
			&rq->Upsertions[i];
		alter_user *u = user_slot(users, &n, p->Name);
		if (u->err || deny(u, denied))
			continue;
		if (u->idx >= 0) {
			u->err = CH_KERR_DUPLICATE_RESOURCE;
			u->msg = dup_msg;
			continue;
		}
		u->err = check_name_mech(p->Name, p->Mechanism, &u->msg);
		if (!u->err && p->Iterations < CH_SCRAM_MIN_ITERATIONS) {
			u->err = CH_KERR_UNACCEPTABLE_CREDENTIAL;
			u->msg = "Too few iterations";
		} else if (!u->err && p->Iterations > CH_SCRAM_MAX_ITERATIONS) {
			u->err = CH_KERR_UNACCEPTABLE_CREDENTIAL;
			u->msg = "Too many iterations";
		} else if (!u->err && (p->Salt.len <= 0 || p->Salt.len > CH_SCRAM_SALT_MAX ||
				       p->SaltedPassword.len <= 0)) {
			u->err = CH_KERR_UNACCEPTABLE_CREDENTIAL;
			u->msg = "Invalid salt or salted password";
		}
		if (!u->err) {
			u->del = false;
			u->idx = (int32_t)i;
		}
	}
	/* The accepted changes, in one durable rewrite. */
	ch_scram_change *ch = CH_REQ_NEW_ARRAY(req, ch_scram_change, n + 1);
	ch_scram_cred *creds = CH_REQ_NEW_ARRAY(req, ch_scram_cred, n + 1);
	size_t nch = 0;
	for (size_t i = 0; i < n; i++) {
		alter_user *u = &users[i];
		if (u->err || u->idx < 0)
			continue;
		ch_scram_change *c = &ch[nch];
		c->user = ch_req_strdup(req, u->name);
		if (u->del) {
			mech_of_type(rq->Deletions[u->idx].Mechanism, &c->mech);
			c->cred = NULL;
		} else {
			const ch_AlterUserScramCredentialsRequest_ScramCredentialUpsertion *p =
				&rq->Upsertions[u->idx];
			mech_of_type(p->Mechanism, &c->mech);
			if (ch_scram_cred_from_salted(c->mech, p->SaltedPassword.p,
						      (size_t)p->SaltedPassword.len, p->Salt.p,
						      (size_t)p->Salt.len, p->Iterations,
						      &creds[nch]) != 0) {
				u->err = CH_KERR_UNACCEPTABLE_CREDENTIAL;
				u->msg = "Invalid salted password";
				continue;
			}
			c->cred = &creds[nch];
		}
		nch++;
	}
	char why[256] = "";
	bool failed = false;
	if (nch && (!st || ch_scram_store_apply(st, ch, nch, why, sizeof(why)) != 0)) {
		CH_LOGE("api", "AlterUserScramCredentials: %s", st ? why : "no credential store");
		failed = true;
	}
	/* Kafka's order: deletions, upsertions, then the errors. */
	resp.Results = CH_REQ_NEW_ARRAY(
		req, ch_AlterUserScramCredentialsResponse_AlterUserScramCredentialsResult, n + 1);
	for (int pass = 0; pass < 3; pass++) {
		for (size_t i = 0; i < n; i++) {
			alter_user *u = &users[i];
			bool ok = !u->err && u->idx >= 0;
			if ((pass == 0 && !(ok && u->del)) || (pass == 1 && !(ok && !u->del)) ||
			    (pass == 2 && ok))
				continue;
			ch_AlterUserScramCredentialsResponse_AlterUserScramCredentialsResult *r =
				&resp.Results[resp.Results_n++];
			r->User = u->name;
			if (ok && failed) {
				r->ErrorCode = CH_KERR_UNKNOWN_SERVER_ERROR;
				r->ErrorMessage =
					ch_str_c("the credential store could not be written");
			} else if (!ok) {
				r->ErrorCode = u->err;
				r->ErrorMessage = ch_str_c(u->msg);
			} else {
				r->ErrorMessage = CH_STR_NULL;
			}
		}
	}
	if (nch && !failed)
		CH_LOGI("api", "%s: %zu SCRAM credential change(s) stored", req->peer, nch);
	ch_api_send(req, &resp);
}
