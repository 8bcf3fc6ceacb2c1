/*
 * whatif_test.c: the admin API's what-if (ch_coord_whatif.h) against the
 * assignors run directly. Random groups (topics, members with random
 * subscriptions, a current assignment, members added and removed) are put
 * into a ch_coord_whatif_group the way the coordinator holds them: each
 * member's ConsumerProtocolSubscription per protocol and its assignment as
 * ConsumerProtocolAssignment bytes. The what-if's answer must be what
 * ch_assign gives on an input built here from the model (owned = the
 * current assignment at the group's generation, added members subscribing
 * to every topic), round after round for cooperative-sticky; moved, newly
 * assigned, unassigned, balance and rounds are counted here again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign/ch_assign.h"
#include "assign/ch_assign_proto.h"
#include "common/ch_test.h"
#include "group/ch_coord_whatif.h"

#define MAXT 3
#define MAXM 8
#define GEN 7

static uint64_t rng = 88172645463325252ull;
static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

typedef struct model {
	int nt;
	char tname[MAXT][8];
	int32_t tparts[MAXT];
	int nm;
	char mid[MAXM][16];
	bool sub[MAXM][MAXT];
	bool has_assignment[MAXM];
	ch_assign_tp *cur[MAXM]; /* topic: model index */
	int32_t ncur[MAXM];
	bool removed[MAXM];
	int add;
} model;

/* (topic name, partition) of a result, sortable across topic orders. */
typedef struct named_tp {
	const char *topic;
	int32_t partition;
} named_tp;

static int
ntp_cmp(const void *x, const void *y)
{
	const named_tp *a = x, *b = y;
	int c = strcmp(a->topic, b->topic);
	return c ? c : (a->partition > b->partition) - (a->partition < b->partition);
}

static int
owner_now(const model *md, int t, int32_t p)
{
	for (int i = 0; i < md->nm; i++)
		for (int32_t k = 0; k < md->ncur[i]; k++)
			if (md->cur[i][k].topic == t && md->cur[i][k].partition == p)
				return i;
	return -1;
}

/* The group as the coordinator would hold it, and the change. */
static void
build_group(const model *md, ch_coord_whatif_group *g, ch_buf *bufs)
{
	memset(g, 0, sizeof(*g));
	g->group_id = strdup("g");
	g->protocol_type = strdup("consumer");
	g->protocol = strdup("range");
	g->generation = GEN;
	g->state = CH_COORD_GROUP_STABLE;
	g->topics = calloc(MAXT, sizeof(*g->topics));
	/* topics in reverse model order: the what-if's indices differ from ours */
	for (int t = md->nt - 1; t >= 0; t--) {
		char *n = strdup(md->tname[t]);
		g->topics[g->n_topics++] =
			(ch_assign_topic){{n, (int32_t)strlen(n)}, md->tparts[t], NULL};
	}
	g->members = calloc(MAXM, sizeof(*g->members));
	g->n_members = md->nm;
	int nb = 0;
	for (int i = 0; i < md->nm; i++) {
		ch_coord_whatif_member *m = &g->members[i];
		m->member_id = strdup(md->mid[i]);
		m->client_id = strdup("c");
		m->n_protocols = 4;
		m->protocol_names = calloc(4, sizeof(char *));
		m->metadata = calloc(4, sizeof(uint8_t *));
		m->metadata_len = calloc(4, sizeof(int32_t));
		ch_str topics[MAXT];
		int n = 0;
		for (int t = 0; t < md->nt; t++)
			if (md->sub[i][t])
				topics[n++] = ch_str_c(md->tname[t]);
		for (int k = 0; k < 4; k++) {
			ch_buf *b = &bufs[nb++];
			ch_buf_init(b);
			ch_assign_member_metadata(b, (ch_assign_kind)k, 3, topics, n, NULL, 0,
						  CH_ASSIGN_NO_GENERATION, CH_STR_NULL);
			m->protocol_names[k] = strdup(ch_assign_name((ch_assign_kind)k));
			m->metadata[k] = malloc(b->len);
			memcpy(m->metadata[k], b->data, b->len);
			m->metadata_len[k] = (int32_t)b->len;
		}
		if (md->has_assignment[i]) {
			ch_assign_tp tps[64];
			for (int32_t k = 0; k < md->ncur[i]; k++) /* into the group's topic order */
				tps[k] = (ch_assign_tp){md->nt - 1 - md->cur[i][k].topic,
							md->cur[i][k].partition};
			ch_buf b;
			ch_buf_init(&b);
			/* the writer wants runs of one topic together */
			for (int32_t x = 0; x < md->ncur[i]; x++)
				for (int32_t y = x + 1; y < md->ncur[i]; y++)
					if (tps[y].topic < tps[x].topic) {
						ch_assign_tp s = tps[x];
						tps[x] = tps[y];
						tps[y] = s;
					}
			ch_assign_assignment_write(&b, 3, g->topics, tps, md->ncur[i],
						   CH_BYTES_NULL);
			m->assignment = malloc(b.len);
			memcpy(m->assignment, b.data, b.len);
			m->assignment_len = (int32_t)b.len;
			ch_buf_free(&b);
		}
	}
}

/* Runs kind directly on the model; checks the what-if's result r. */
static void
check_against_direct(const model *md, ch_assign_kind kind, const ch_coord_whatif_result *r)
{
	ch_assign_topic topics[MAXT];
	for (int t = 0; t < md->nt; t++)
		topics[t] = (ch_assign_topic){ch_str_c(md->tname[t]), md->tparts[t], NULL};
	ch_assign_member ms[MAXM + 4];
	int32_t subs[MAXM + 4][MAXT];
	ch_assign_owned own[MAXM + 4][MAXT];
	int32_t ownp[MAXM + 4][64];
	int idx[MAXM + 4], n = 0;
	char sim[4][32];
	bool any[MAXT] = {0};
	for (int i = 0; i < md->nm; i++)
		for (int t = 0; t < md->nt; t++)
			any[t] |= md->sub[i][t];
	for (int i = 0; i < md->nm + md->add; i++) {
		if (i < md->nm && md->removed[i])
			continue;
		ch_assign_member *m = &ms[n];
		memset(m, 0, sizeof(*m));
		m->instance_id = CH_STR_NULL;
		m->rack = CH_STR_NULL;
		m->generation = CH_ASSIGN_NO_GENERATION;
		int32_t nt = 0;
		for (int t = 0; t < md->nt; t++)
			if (i < md->nm ? md->sub[i][t] : any[t])
				subs[n][nt++] = t;
		m->topics = subs[n];
		m->ntopics = nt;
		if (i < md->nm) {
			m->member_id = ch_str_c(md->mid[i]);
			if (md->has_assignment[i]) {
				m->generation = GEN;
				int32_t runs = 0;
				for (int t = 0; t < md->nt; t++) {
					int32_t c = 0;
					for (int32_t k = 0; k < md->ncur[i]; k++)
						if (md->cur[i][k].topic == t)
							ownp[n][t * 20 + c++] =
								md->cur[i][k].partition;
					if (c)
						own[n][runs++] =
							(ch_assign_owned){t, &ownp[n][t * 20], c};
				}
				m->owned = own[n];
				m->nowned = runs;
			}
		} else {
			snprintf(sim[i - md->nm], sizeof(sim[0]), "simulated-member-%d",
				 i - md->nm + 1);
			m->member_id = ch_str_c(sim[i - md->nm]);
		}
		idx[n++] = i;
	}
	ch_assign_input in = {topics, md->nt, ms, n};
	ch_assign_result res;
	int rounds = 1;
	CH_CHECK(ch_assign(kind, &in, &res) == CH_OK);
	int32_t revoked_first = 0;
	while (kind == CH_ASSIGN_COOPERATIVE_STICKY) {
		int32_t revoked = 0;
		for (int x = 0; x < n; x++)
			for (int32_t o = 0; o < ms[x].nowned; o++)
				for (int32_t k = 0; k < ms[x].owned[o].n; k++) {
					bool kept = false;
					for (int32_t y = res.off[x]; y < res.off[x + 1]; y++)
						kept |= res.tps[y].topic == ms[x].owned[o].topic &&
							res.tps[y].partition ==
								ms[x].owned[o].partitions[k];
					revoked += !kept;
				}
		if (rounds == 1)
			revoked_first = revoked;
		if (!revoked || rounds == CH_COORD_WHATIF_MAX_ROUNDS)
			break;
		/* the owners rejoin with what the round left them */
		for (int x = 0; x < n; x++) {
			int32_t runs = 0;
			for (int t = 0; t < md->nt; t++) {
				int32_t c = 0;
				for (int32_t y = res.off[x]; y < res.off[x + 1]; y++)
					if (res.tps[y].topic == t)
						ownp[x][t * 20 + c++] = res.tps[y].partition;
				if (c)
					own[x][runs++] = (ch_assign_owned){t, &ownp[x][t * 20], c};
			}
			ms[x].owned = own[x];
			ms[x].nowned = runs;
			ms[x].generation = GEN + rounds;
		}
		ch_assign_result_free(&res);
		CH_CHECK(ch_assign(kind, &in, &res) == CH_OK);
		rounds++;
	}
	CH_CHECK_EQ_INT(r->rounds, rounds);
	CH_CHECK_EQ_INT(r->revoked_first_round, revoked_first);
	CH_CHECK_EQ_INT(r->n_owners, n);
	int32_t moved = 0, fresh = 0, assigned = 0, mn = n ? INT32_MAX : 0, mx = 0;
	for (int x = 0; x < n && x < r->n_owners; x++) {
		CH_CHECK_EQ_STR(r->owners[x].member_id, ms[x].member_id.p);
		CH_CHECK(r->owners[x].simulated == (idx[x] >= md->nm));
		int32_t cnt = res.off[x + 1] - res.off[x];
		CH_CHECK_EQ_INT(r->owners[x].n_after, cnt);
		if (r->owners[x].n_after != cnt)
			continue;
		named_tp want[64], got[64];
		for (int32_t y = 0; y < cnt; y++) {
			const ch_assign_tp *tp = &res.tps[res.off[x] + y];
			want[y] = (named_tp){md->tname[tp->topic], tp->partition};
			/* the what-if's topic indices are into its group's topics */
			got[y] = (named_tp){md->tname[md->nt - 1 - r->owners[x].after[y].topic],
					    r->owners[x].after[y].partition};
			int prev = owner_now(md, tp->topic, tp->partition);
			if (prev < 0)
				fresh++;
			else if (prev != idx[x])
				moved++;
		}
		qsort(want, (size_t)cnt, sizeof(*want), ntp_cmp);
		qsort(got, (size_t)cnt, sizeof(*got), ntp_cmp);
		for (int32_t y = 0; y < cnt; y++) {
			CH_CHECK_EQ_STR(got[y].topic, want[y].topic);
			CH_CHECK_EQ_INT(got[y].partition, want[y].partition);
		}
		assigned += cnt;
		mn = CH_MIN(mn, cnt);
		mx = CH_MAX(mx, cnt);
	}
	int32_t subscribed = 0;
	for (int t = 0; t < md->nt; t++) {
		bool s = false;
		for (int x = 0; x < n; x++)
			for (int32_t k = 0; k < ms[x].ntopics; k++)
				s |= ms[x].topics[k] == t;
		subscribed += s ? md->tparts[t] : 0;
	}
	CH_CHECK_EQ_INT(r->moved, moved);
	CH_CHECK_EQ_INT(r->newly_assigned, fresh);
	CH_CHECK_EQ_INT(r->assigned, assigned);
	CH_CHECK_EQ_INT(r->unassigned, subscribed - assigned);
	CH_CHECK_EQ_INT(r->min_partitions, mn);
	CH_CHECK_EQ_INT(r->max_partitions, mx);
	ch_assign_result_free(&res);
}

/* A random model: its current assignment is range's over its members. */
static void
random_model(model *md)
{
	memset(md, 0, sizeof(*md));
	md->nt = 1 + (int)rnd(MAXT);
	for (int t = 0; t < md->nt; t++) {
		snprintf(md->tname[t], sizeof(md->tname[t]), "t%d", t);
		md->tparts[t] = 1 + (int32_t)rnd(9);
	}
	md->nm = 1 + (int)rnd(MAXM - 1);
	for (int i = 0; i < md->nm; i++) {
		snprintf(md->mid[i], sizeof(md->mid[i]), "m-%02u-%d", rnd(100), i);
		int any = 0;
		for (int t = 0; t < md->nt; t++)
			any += md->sub[i][t] = rnd(3) != 0;
		if (!any)
			md->sub[i][rnd((uint32_t)md->nt)] = true;
		md->has_assignment[i] = rnd(5) != 0;
	}
	for (int t = 0; t < md->nt; t++) { /* the group's topics are those subscribed */
		bool any = false;
		for (int i = 0; i < md->nm; i++)
			any |= md->sub[i][t];
		if (!any)
			md->sub[0][t] = true;
	}
	ch_assign_topic topics[MAXT];
	for (int t = 0; t < md->nt; t++)
		topics[t] = (ch_assign_topic){ch_str_c(md->tname[t]), md->tparts[t], NULL};
	ch_assign_member ms[MAXM];
	int32_t subs[MAXM][MAXT];
	for (int i = 0; i < md->nm; i++) {
		int32_t n = 0;
		for (int t = 0; t < md->nt; t++)
			if (md->sub[i][t])
				subs[i][n++] = t;
		ms[i] = (ch_assign_member){
			ch_str_c(md->mid[i]),   CH_STR_NULL, CH_STR_NULL, subs[i], n, NULL, 0,
			CH_ASSIGN_NO_GENERATION};
	}
	ch_assign_input in = {topics, md->nt, ms, md->nm};
	ch_assign_result res;
	ch_assign(rnd(2) ? CH_ASSIGN_RANGE : CH_ASSIGN_ROUNDROBIN, &in, &res);
	for (int i = 0; i < md->nm; i++) {
		if (!md->has_assignment[i])
			continue; /* what it had went away with a rebalance: nobody owns it */
		md->ncur[i] = res.off[i + 1] - res.off[i];
		md->cur[i] = malloc(sizeof(ch_assign_tp) * (size_t)(md->ncur[i] + 1));
		memcpy(md->cur[i], res.tps + res.off[i],
		       sizeof(ch_assign_tp) * (size_t)md->ncur[i]);
	}
	ch_assign_result_free(&res);
	for (int i = 0; i < md->nm; i++)
		md->removed[i] = md->nm > 1 && rnd(4) == 0;
	md->add = (int)rnd(3);
}

static void
t_random_groups_against_direct_runs(void)
{
	for (int round = 0; round < 400; round++) {
		model md;
		random_model(&md);
		ch_coord_whatif_group g;
		ch_buf bufs[MAXM * 4];
		build_group(&md, &g, bufs);
		const char *rm[MAXM];
		int nrm = 0;
		for (int i = 0; i < md.nm; i++)
			if (md.removed[i])
				rm[nrm++] = md.mid[i];
		ch_coord_whatif_change chg = {md.add, rm, nrm};
		for (int k = 0; k <= CH_ASSIGN_COOPERATIVE_STICKY; k++) {
			ch_coord_whatif_result r;
			int rc = ch_coord_whatif_run(&g, (ch_assign_kind)k, &chg, &r);
			CH_CHECK(rc == CH_OK);
			if (rc == CH_OK)
				check_against_direct(&md, (ch_assign_kind)k, &r);
			ch_coord_whatif_result_free(&r);
		}
		for (int i = 0; i < md.nm * 4; i++)
			ch_buf_free(&bufs[i]);
		for (int i = 0; i < md.nm; i++)
			free(md.cur[i]);
		ch_coord_whatif_group_free(&g);
	}
}

/* Two members of six partitions, a third added: cooperative-sticky moves
 * two, in two rounds (revoked first, then handed over); range moves three
 * in one; eager sticky moves two. A removed member's partitions move. */
static void
t_scale_out_numbers(void)
{
	model md;
	memset(&md, 0, sizeof(md));
	md.nt = 1;
	strcpy(md.tname[0], "t");
	md.tparts[0] = 6;
	md.nm = 2;
	strcpy(md.mid[0], "a");
	strcpy(md.mid[1], "b");
	ch_assign_tp a[] = {{0, 0}, {0, 1}, {0, 2}}, b[] = {{0, 3}, {0, 4}, {0, 5}};
	md.cur[0] = a;
	md.cur[1] = b;
	md.ncur[0] = md.ncur[1] = 3;
	md.sub[0][0] = md.sub[1][0] = md.has_assignment[0] = md.has_assignment[1] = true;
	md.add = 1;
	ch_coord_whatif_group g;
	ch_buf bufs[8];
	build_group(&md, &g, bufs);
	ch_coord_whatif_change chg = {1, NULL, 0};
	ch_coord_whatif_result r;
	CH_CHECK(ch_coord_whatif_run(&g, CH_ASSIGN_COOPERATIVE_STICKY, &chg, &r) == CH_OK);
	CH_CHECK_EQ_INT(r.moved, 2);
	CH_CHECK_EQ_INT(r.rounds, 2);
	CH_CHECK_EQ_INT(r.revoked_first_round, 2);
	CH_CHECK_EQ_INT(r.min_partitions, 2);
	CH_CHECK_EQ_INT(r.max_partitions, 2);
	ch_coord_whatif_result_free(&r);
	CH_CHECK(ch_coord_whatif_run(&g, CH_ASSIGN_RANGE, &chg, &r) == CH_OK);
	CH_CHECK_EQ_INT(r.moved, 3); /* a:0,1 b:2,3 new:4,5 */
	CH_CHECK_EQ_INT(r.rounds, 1);
	ch_coord_whatif_result_free(&r);
	CH_CHECK(ch_coord_whatif_run(&g, CH_ASSIGN_STICKY, &chg, &r) == CH_OK);
	CH_CHECK_EQ_INT(r.moved, 2);
	ch_coord_whatif_result_free(&r);
	const char *gone[] = {"b"};
	ch_coord_whatif_change rm = {0, gone, 1};
	CH_CHECK(ch_coord_whatif_run(&g, CH_ASSIGN_COOPERATIVE_STICKY, &rm, &r) == CH_OK);
	CH_CHECK_EQ_INT(r.moved, 3); /* b's three go to a, in one round: nobody revokes */
	CH_CHECK_EQ_INT(r.rounds, 1);
	CH_CHECK_EQ_INT(r.max_partitions, 6);
	ch_coord_whatif_result_free(&r);
	const char *nobody[] = {"zz"};
	ch_coord_whatif_change bad = {0, nobody, 1};
	CH_CHECK(ch_coord_whatif_run(&g, CH_ASSIGN_RANGE, &bad, &r) == CH_ERR);
	CH_CHECK(strstr(r.errstr, "no member zz") != NULL);
	ch_coord_whatif_result_free(&r);
	free(g.protocol_type);
	g.protocol_type = strdup("connect");
	CH_CHECK(ch_coord_whatif_run(&g, CH_ASSIGN_RANGE, &chg, &r) == CH_ERR);
	CH_CHECK(strstr(r.errstr, "not a consumer group") != NULL);
	ch_coord_whatif_result_free(&r);
	for (int i = 0; i < 8; i++)
		ch_buf_free(&bufs[i]);
	ch_coord_whatif_group_free(&g);
}

CH_TEST_MAIN(CH_TEST(t_random_groups_against_direct_runs), CH_TEST(t_scale_out_numbers))
