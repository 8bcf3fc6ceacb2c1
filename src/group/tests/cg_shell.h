/*
 * cg_shell.h: a fake shell for the consumer-protocol core (ch_coord_cg.h),
 * shared by its unit tests and its simulator: topics in memory, member ids
 * from a seeded generator, the last response copied out.
 */
#ifndef CG_SHELL_H
#define CG_SHELL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"
#include "group/ch_coord_cg.h"
#include "proto/generated/ch_errors.h"

#define CG_SHELL_TOPICS 8

typedef struct cg_shell_topic {
	char name[16];
	ch_uuid id;
	int32_t partitions;
} cg_shell_topic;

/* The last response, copied. */
typedef struct cg_answer {
	int16_t err;
	char msg[512];
	char member_id[64];
	bool has_member_id;
	int32_t epoch;
	int32_t interval;
	bool has_assignment;
	ch_coord_cg_tp *tps;
	int32_t ntps;
} cg_answer;

typedef struct cg_shell {
	cg_shell_topic topics[CG_SHELL_TOPICS];
	int ntopics;
	char classic[8][32]; /* names of classic groups */
	int nclassic;
	uint64_t rng;
	cg_answer a;
	int answers;
	ch_coord_cg *cg;
} cg_shell;

static inline uint64_t
cg_shell_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int
cg_shell_tp_cmp(const void *a, const void *b)
{
	return ch_coord_cg_tp_cmp(a, b);
}

static void
cg_shell_respond(void *ud, void *token, const void *resp)
{
	(void)token;
	cg_shell *sh = ud;
	const ch_ConsumerGroupHeartbeatResponse *r = resp;
	free(sh->a.tps);
	memset(&sh->a, 0, sizeof sh->a);
	sh->answers++;
	sh->a.err = r->ErrorCode;
	if (r->ErrorMessage.len >= 0)
		snprintf(sh->a.msg, sizeof sh->a.msg, "%.*s", (int)r->ErrorMessage.len,
			 r->ErrorMessage.p);
	if (r->MemberId.len >= 0) {
		sh->a.has_member_id = true;
		snprintf(sh->a.member_id, sizeof sh->a.member_id, "%.*s", (int)r->MemberId.len,
			 r->MemberId.p);
	}
	sh->a.epoch = r->MemberEpoch;
	sh->a.interval = r->HeartbeatIntervalMs;
	if (r->Assignment) {
		sh->a.has_assignment = true;
		int32_t n = 0;
		for (int32_t i = 0; i < r->Assignment->TopicPartitions_n; i++)
			n += r->Assignment->TopicPartitions[i].Partitions_n;
		sh->a.tps = calloc((size_t)(n ? n : 1), sizeof *sh->a.tps);
		for (int32_t i = 0; i < r->Assignment->TopicPartitions_n; i++) {
			const ch_ConsumerGroupHeartbeatResponse_TopicPartitions *t =
				&r->Assignment->TopicPartitions[i];
			for (int32_t k = 0; k < t->Partitions_n; k++)
				sh->a.tps[sh->a.ntps++] =
					(ch_coord_cg_tp){t->TopicId, t->Partitions[k]};
		}
		qsort(sh->a.tps, (size_t)sh->a.ntps, sizeof *sh->a.tps, cg_shell_tp_cmp);
	}
}

static bool
cg_shell_topic_cb(void *ud, ch_str name, ch_coord_cg_topic *out)
{
	cg_shell *sh = ud;
	for (int i = 0; i < sh->ntopics; i++)
		if (ch_str_eq_c(name, sh->topics[i].name)) {
			out->id = sh->topics[i].id;
			out->partitions = sh->topics[i].partitions;
			return true;
		}
	return false;
}

static bool
cg_shell_classic(void *ud, ch_str id)
{
	cg_shell *sh = ud;
	for (int i = 0; i < sh->nclassic; i++)
		if (ch_str_eq_c(id, sh->classic[i]))
			return true;
	return false;
}

static void
cg_shell_uuid(void *ud, ch_uuid *out)
{
	cg_shell *sh = ud;
	for (int i = 0; i < 16; i += 8) {
		uint64_t r = cg_shell_rand(&sh->rng);
		memcpy(out->b + i, &r, 8);
	}
	out->b[0] &= 0x7f; /* never a base64 starting with '-' (ch_uuid.h) */
}

static inline void
cg_shell_add_topic(cg_shell *sh, const char *name, int32_t partitions)
{
	cg_shell_topic *t = &sh->topics[sh->ntopics++];
	snprintf(t->name, sizeof t->name, "%s", name);
	memset(&t->id, 0, sizeof t->id);
	t->id.b[0] = (uint8_t)sh->ntopics;
	t->id.b[15] = 0x5a;
	t->partitions = partitions;
}

static inline void
cg_shell_init(cg_shell *sh, const ch_coord_cg_config *cfg, uint64_t seed)
{
	memset(sh, 0, sizeof *sh);
	sh->rng = seed * 0x9e3779b97f4a7c15ull + 1;
	ch_coord_cg_ops ops = {
		.ud = sh,
		.respond = cg_shell_respond,
		.topic = cg_shell_topic_cb,
		.classic_group_exists = cg_shell_classic,
		.random_uuid = cg_shell_uuid,
	};
	sh->cg = ch_coord_cg_new(cfg, &ops);
}

static inline void
cg_shell_free(cg_shell *sh)
{
	ch_coord_cg_free(sh->cg);
	free(sh->a.tps);
}

/* One heartbeat in, its answer in sh->a. */
static inline void
cg_shell_heartbeat(cg_shell *sh, int64_t now, int16_t version,
		   const ch_ConsumerGroupHeartbeatRequest *rq)
{
	ch_coord_req req = {.now = now,
			    .version = version,
			    .body = rq,
			    .client_id = CH_STR_LIT("c"),
			    .client_host = "/127.0.0.1"};
	int before = sh->answers;
	ch_coord_cg_heartbeat(sh->cg, &req);
	if (sh->answers != before + 1) {
		fprintf(stderr, "heartbeat answered %d times\n", sh->answers - before);
		abort();
	}
}

#endif
