/*
 * ch_coord_admin.c: ListGroups, DescribeGroups, DeleteGroups: the
 * operator's view of groups.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/ch_common.h"
#include "group/ch_coord_int.h"
#include "proto/ch_acl.h"
#include "proto/generated/ch_errors.h"

/* True if s is one of the n strings of list, ignoring case (ListGroups filters). */
static bool
str_in_ci(const ch_str *list, int32_t n, const char *s)
{
	size_t len = strlen(s);
	for (int32_t i = 0; i < n; i++)
		if (list[i].len >= 0 && (size_t)list[i].len == len &&
		    strncasecmp(list[i].p, s, len) == 0)
			return true;
	return false;
}

void
ch_coord_list(ch_coord *c, const ch_coord_req *req)
{
	const ch_ListGroupsRequest *rq = req->body;
	void *token = req->token;
	int16_t version = req->version;
	COORD_CHECK_ON_RETURN(c, CH_STR_NULL);
	ch_ListGroupsResponse r;
	ch_ListGroupsResponse_init(&r);
	r.Groups = ch_xcalloc(c->groups.n ? c->groups.n : 1, sizeof(*r.Groups));
	r.Groups_n = 0;
	/* Kafka's listGroups: partitions not loaded add nothing; one still
	 * loading fails the whole list (it would be incomplete). */
	if (ch_coord_partition_count(c, CH_COORD_LOADING) > 0) {
		r.ErrorCode = CH_KERR_COORDINATOR_LOAD_IN_PROGRESS;
		c->ops.respond(c->ops.ud, token, &r);
		free(r.Groups);
		return;
	}
	bool by_state = version >= 4 && rq->StatesFilter_n > 0;
	bool by_type = version >= 5 && rq->TypesFilter_n > 0;
	ch_map_foreach (&c->groups, e) {
		const ch_coord_group *g = e->value;
		const char *state = ch_coord_group_state_name(g->state);
		if (by_state && !str_in_ci(rq->StatesFilter, rq->StatesFilter_n, state))
			continue;
		if (by_type && !str_in_ci(rq->TypesFilter, rq->TypesFilter_n, "classic"))
			continue;
		ch_ListGroupsResponse_ListedGroup *o = &r.Groups[r.Groups_n++];
		o->GroupId = ch_str_c(g->group_id);
		o->ProtocolType = ch_str_c(g->protocol_type ? g->protocol_type : "");
		o->GroupState = ch_str_c(state);
		o->GroupType = ch_str_c("classic");
	}
	c->ops.respond(c->ops.ud, token, &r);
	free(r.Groups);
}

void
ch_coord_describe(ch_coord *c, const ch_coord_req *req)
{
	const ch_DescribeGroupsRequest *rq = req->body;
	void *token = req->token;
	COORD_CHECK_ON_RETURN(c, CH_STR_NULL);
	ch_DescribeGroupsResponse r;
	ch_DescribeGroupsResponse_init(&r);
	int32_t n = CH_MAX(rq->Groups_n, 0);
	r.Groups = ch_xcalloc((size_t)(n ? n : 1), sizeof(*r.Groups));
	r.Groups_n = n;
	size_t nmembers = 0;
	for (int32_t i = 0; i < n; i++) {
		const ch_coord_group *g = ch_coord_group_find(c, rq->Groups[i]);
		nmembers += g ? g->members.n : 0;
	}
	ch_DescribeGroupsResponse_DescribedGroupMember *pool =
		ch_xcalloc(nmembers ? nmembers : 1, sizeof(*pool));
	/* v6's error messages, freed once answered */
	char **msgs = ch_xcalloc((size_t)(n ? n : 1), sizeof(*msgs));
	size_t used = 0;
	for (int32_t i = 0; i < n; i++) {
		ch_DescribeGroupsResponse_DescribedGroup *o = &r.Groups[i];
		const ch_coord_group *g = ch_coord_group_find(c, rq->Groups[i]);
		o->GroupId = rq->Groups[i];
		o->ErrorMessage = CH_STR_NULL;
		o->AuthorizedOperations =
			rq->IncludeAuthorizedOperations ? CH_GROUP_AUTHORIZED_OPS : INT32_MIN;
		int16_t load_err =
			rq->Groups[i].len < 0 ? 0 : ch_coord_load_error(c, rq->Groups[i]);
		if (rq->Groups[i].len < 0 || load_err) {
			o->ErrorCode = load_err ? load_err : CH_KERR_INVALID_GROUP_ID;
			o->GroupState = ch_str_c("");
			o->ProtocolType = ch_str_c("");
			o->ProtocolData = ch_str_c("");
			if (load_err) /* Kafka's getErrorDescribedGroupList: no operations */
				o->AuthorizedOperations = INT32_MIN;
			continue;
		}
		const coord_rule *rule = ch_coord_rule_for(REQ_DESCRIBE, g);
		if (rule->act == ACT_DESCRIBE_DEAD) {
			/* Kafka describes an unknown group as Dead, no error up to
			 * v5; v6 (KIP-1043) adds GROUP_ID_NOT_FOUND and the
			 * GroupIdNotFoundException's message, still Dead. */
			o->ErrorCode = CH_KERR_NONE;
			o->GroupState = ch_str_c("Dead");
			o->ProtocolType = ch_str_c("");
			o->ProtocolData = ch_str_c("");
			o->Members_n = 0;
			if (req->version >= 6) {
				size_t cap = (size_t)rq->Groups[i].len + 32;
				msgs[i] = ch_xmalloc(cap);
				snprintf(msgs[i], cap, "Group %.*s not found.",
					 (int)rq->Groups[i].len, rq->Groups[i].p);
				o->ErrorCode = CH_KERR_GROUP_ID_NOT_FOUND;
				o->ErrorMessage = ch_str_c(msgs[i]);
			}
			continue;
		}
		bool stable = rule->act == ACT_DESCRIBE_FULL;
		o->ErrorCode = CH_KERR_NONE;
		o->GroupState = ch_str_c(ch_coord_group_state_name(g->state));
		o->ProtocolType = ch_str_c(g->protocol_type ? g->protocol_type : "");
		/* Protocol and metadata only when Stable; the assignment a member
		 * holds in every state (Kafka 4's ClassicGroupMember.describeNoMetadata;
		 * 3.9 showed it only when Stable). */
		o->ProtocolData = ch_str_c(stable && g->protocol_name ? g->protocol_name : "");
		o->Members = pool + used;
		o->Members_n = 0;
		for (const ch_coord_member *m = g->first; m; m = m->next) {
			ch_DescribeGroupsResponse_DescribedGroupMember *x =
				&o->Members[o->Members_n++];
			used++;
			x->MemberId = ch_str_c(m->member_id);
			x->GroupInstanceId = ch_str_c(m->instance_id);
			x->ClientId = ch_str_c(coord_member_client_id(m));
			x->ClientHost = ch_str_c(coord_member_client_host(m));
			x->MemberMetadata = (ch_bytes){(const uint8_t *)"", 0};
			x->MemberAssignment = (ch_bytes){(const uint8_t *)"", 0};
			if (m->assignment)
				x->MemberAssignment = (ch_bytes){m->assignment, m->assignment_len};
			if (!stable)
				continue;
			for (int32_t p = 0; p < m->n_protocols; p++)
				if (g->protocol_name &&
				    strcmp(m->protocols[p].name, g->protocol_name) == 0)
					x->MemberMetadata =
						(ch_bytes){m->protocols[p].metadata,
							   m->protocols[p].metadata_len};
		}
	}
	c->ops.respond(c->ops.ud, token, &r);
	for (int32_t i = 0; i < n; i++)
		free(msgs[i]);
	free(msgs);
	free(pool);
	free(r.Groups);
}

/* ---- DeleteGroups ---------------------------------------------------------- */

typedef struct del_ctx {
	ch_DeleteGroupsResponse_DeletableGroupResult **deleted;
	int32_t n;
} del_ctx;

/* DeleteGroups once its tombstones are durable or failed: a failure goes on each deleted group. */
static void
delete_finish(ch_coord *c, deferred *d, int64_t now)
{
	(void)c, (void)now;
	del_ctx *x = d->ctx;
	if (d->error)
		for (int32_t i = 0; i < x->n; i++)
			x->deleted[i]->ErrorCode = d->error == CH_KERR_KAFKA_STORAGE_ERROR
							   ? CH_KERR_NOT_COORDINATOR
							   : d->error;
}

void
ch_coord_delete_groups(ch_coord *c, const ch_coord_req *req)
{
	const ch_DeleteGroupsRequest *rq = req->body;
	int64_t now = req->now;
	COORD_CHECK_ON_RETURN(c, CH_STR_NULL);
	deferred *d = ch_coord_deferred_new(req, sizeof(ch_DeleteGroupsResponse), delete_finish);
	ch_DeleteGroupsResponse *r = d->resp;
	ch_DeleteGroupsResponse_init(r);
	int32_t n = CH_MAX(rq->GroupsNames_n, 0);
	r->Results = ch_coord_deferred_alloc(d, (size_t)n, sizeof(*r->Results));
	del_ctx *x = ch_coord_deferred_alloc(d, 1, sizeof(*x));
	x->deleted = ch_coord_deferred_alloc(d, (size_t)n, sizeof(*x->deleted));
	d->ctx = x;
	r->Results_n = 0;
	for (int32_t i = 0; i < n; i++) {
		ch_str id = rq->GroupsNames[i];
		/* A group named twice is answered once (Kafka collects the ids in a set). */
		bool seen = false;
		for (int32_t j = 0; j < i && !seen; j++)
			seen = ch_str_eq(rq->GroupsNames[j], id);
		if (seen)
			continue;
		ch_DeleteGroupsResponse_DeletableGroupResult *o = &r->Results[r->Results_n++];
		o->GroupId = ch_coord_deferred_str(d, id);
		ch_coord_group *g = id.len <= 0 ? NULL : ch_coord_group_find(c, id);
		int16_t load_err = id.len <= 0 ? 0 : ch_coord_load_error(c, id);
		const coord_rule *rule = ch_coord_rule_for(REQ_DELETE, g);
		if (id.len <= 0) {
			o->ErrorCode = CH_KERR_INVALID_GROUP_ID;
		} else if (load_err) {
			o->ErrorCode = load_err;
		} else if (rule->act != ACT_DELETE) {
			COORD_NEVER(c, rule);
			o->ErrorCode = rule->err;
		} else {
			/* Tombstones for every offset and the group itself. */
			size_t nrec = g->offsets.n + 1, k = 0;
			ch_coord_record *recs = ch_xcalloc(nrec, sizeof(*recs));
			ch_map_foreach (&g->offsets, oe) {
				const offset_entry *e = oe->value;
				ch_coord_record_offset_tombstone(&recs[k++], g->group_id, e->topic,
								 e->partition);
			}
			ch_coord_record_group_tombstone(&recs[k++], g);
			ch_coord_deferred_add_append(c, d, g, recs, k);
			for (size_t j = 0; j < k; j++)
				ch_coord_record_free(&recs[j]);
			free(recs);
			coord_reason why = ch_coord_reason_make(
				CH_COORD_CAUSE_DELETED, "deleted by DeleteGroups (%zu offsets)",
				g->offsets.n);
			ch_coord_group_delete(g, now, &why);
			o->ErrorCode = CH_KERR_NONE;
			x->deleted[x->n++] = o;
		}
	}
	ch_coord_deferred_start(c, d, now);
}

/* ---- introspection for /metrics and the admin API ------------------------------------ */

const ch_coord_stats *
ch_coord_get_stats(const ch_coord *c)
{
	return &c->stats;
}

void
ch_coord_foreach_group(const ch_coord *c, void (*fn)(void *ud, const ch_coord_group_view *g),
		       void *ud)
{
	ch_map_foreach (&c->groups, e) {
		const ch_coord_group *g = e->value;
		ch_coord_group_view v = {g->group_id,          g->state,      g->protocol_type,
					 g->protocol_name,     g->generation, (int32_t)g->members.n,
					 (int32_t)g->offsets.n};
		fn(ud, &v);
	}
}

void
ch_coord_foreach_member(const ch_coord *c, const char *group_id,
			void (*fn)(void *ud, const ch_coord_member_view *m), void *ud)
{
	const ch_coord_group *g = ch_coord_group_find(c, ch_str_c(group_id));
	if (!g)
		return;
	int32_t cap = 0;
	const char **names = NULL;
	const uint8_t **meta = NULL;
	int32_t *lens = NULL;
	for (const ch_coord_member *m = g->first; m; m = m->next) {
		if (m->n_protocols > cap) { /* one set of arrays, grown to the most protocols */
			cap = m->n_protocols;
			names = ch_xrealloc(names, (size_t)cap * sizeof(*names));
			meta = ch_xrealloc(meta, (size_t)cap * sizeof(*meta));
			lens = ch_xrealloc(lens, (size_t)cap * sizeof(*lens));
		}
		for (int32_t i = 0; i < m->n_protocols; i++) {
			names[i] = m->protocols[i].name;
			meta[i] = m->protocols[i].metadata;
			lens[i] = m->protocols[i].metadata_len;
		}
		ch_coord_member_view v = {m->member_id,
					  m->instance_id,
					  coord_member_client_id(m),
					  coord_member_client_host(m),
					  m->n_protocols,
					  names,
					  meta,
					  lens,
					  m->assignment,
					  m->assignment ? m->assignment_len : 0};
		fn(ud, &v);
	}
	free(names);
	free(meta);
	free(lens);
}

void
ch_coord_foreach_offset(const ch_coord *c, const char *group_id,
			void (*fn)(void *ud, const ch_coord_offset_view *o), void *ud)
{
	const ch_coord_group *g = ch_coord_group_find(c, ch_str_c(group_id));
	if (!g)
		return;
	ch_map_foreach (&g->offsets, e) {
		const offset_entry *o = e->value;
		ch_coord_offset_view v = {o->topic,     o->topic_len,
					  o->partition, o->offset,
					  o->commit_ts, ch_coord_offset_expires_at(g, o)};
		fn(ud, &v);
	}
}
