/*
 * cl_admin_groups.c: the admin calls on consumer groups: describe cluster
 * (the brokers list groups need), list groups, find coordinators, describe
 * groups (DescribeGroups, and ConsumerGroupDescribe for KIP-848's groups).
 * Each call is an ad_call (cl_admin_int.h); results live in an
 * arena freed by the call's free function.
 */
#include "client/cl_admin_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "assign/ch_assign_proto.h"

/* A public result and the arena holding everything it points at. */
#define AD_RESULT(type)                                                                            \
	struct {                                                                                   \
		type pub;                                                                          \
		ch_arena arena;                                                                    \
	}

/* ---- describe cluster ------------------------------------------------------ */

typedef AD_RESULT(cohort_cluster) cluster_res;

/* Encodes Metadata for no topics (brokers, controller, cluster id only). */
static void
build_cluster(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n, size_t *encoded)
{
	(void)k;
	(void)items;
	ch_MetadataRequest m;
	ch_MetadataRequest_init(&m);
	ch_MetadataRequest_MetadataRequestTopic none;
	m.Topics = &none; /* an empty list: no topics, never all */
	m.Topics_n = 0;
	m.AllowAutoTopicCreation = false;
	ch_MetadataRequest_encode(b, version, &m);
	*encoded = n;
}

/* qsort order of nodes: by id. */
static int
cmp_node(const void *a, const void *b)
{
	const cohort_node *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

/* Copies the brokers, controller and cluster id of the answer into the result. */
static void
done_cluster(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	(void)version;
	(void)n;
	cluster_res *r = k->ud;
	const ch_MetadataResponse *m = resp;
	bool oom = false;
	r->pub.cluster_id = ad_strdup(&r->arena, m->ClusterId, &oom);
	r->pub.controller_id = m->ControllerId;
	r->pub.brokers =
		ch_arena_alloc(&r->arena, sizeof(cohort_node) * ((size_t)m->Brokers_n + 1));
	if (!r->pub.brokers)
		oom = true;
	for (int32_t i = 0; !oom && i < m->Brokers_n; i++) {
		const ch_MetadataResponse_MetadataResponseBroker *br = &m->Brokers[i];
		cohort_node *d = &r->pub.brokers[r->pub.brokers_n++];
		d->id = br->NodeId;
		d->host = ad_strdup(&r->arena, br->Host, &oom);
		d->port = br->Port;
		d->rack = ad_strdup(&r->arena, br->Rack, &oom);
		if (br->Host.len >= 0)
			cl_broker_upsert(k->c, br->NodeId, br->Host.p, br->Host.len, br->Port);
	}
	if (!oom)
		qsort(r->pub.brokers, r->pub.brokers_n, sizeof(cohort_node), cmp_node);
	else
		ad_done(k, items[0], COHORT_ERR__NOMEM);
}

static const ad_ops cluster_ops = {
	.api = CH_APIKEY_METADATA,
	.route = R_ANY,
	.max_version = -1,
	.build = build_cluster,
	.done = done_cluster,
};

cohort_err
cohort_admin_describe_cluster(cohort_admin *a, int timeout_ms, cohort_cluster **out)
{
	if (!a || !out)
		return COHORT_ERR__INVALID_ARG;
	*out = NULL;
	cluster_res *r = calloc(1, sizeof(*r));
	cohort_err err = COHORT_OK;
	ad_call *k = r ? ad_new(&a->c, &cluster_ops, 1, r, &err, timeout_ms) : NULL;
	if (!k) {
		free(r);
		return COHORT_ERR__NOMEM;
	}
	ch_arena_init(&r->arena);
	r->pub.controller_id = -1;
	cohort_err cerr = ad_run(k);
	if (cerr || err) {
		cohort_cluster_free(&r->pub);
		return cerr ? cerr : err;
	}
	*out = &r->pub;
	return COHORT_OK;
}

void
cohort_cluster_free(cohort_cluster *c)
{
	if (!c)
		return;
	cluster_res *r = (cluster_res *)c;
	ch_arena_free(&r->arena);
	free(r);
}

/* ---- list groups ------------------------------------------------------------------ */

typedef AD_RESULT(cohort_group_list) list_res;

typedef struct list_call {
	list_res *r;
	const char *const *states;
	size_t nstates;
	const char *const *types;
	size_t ntypes;
	size_t cap; /* groups allocated */
	bool oom;
} list_call;

/* Java's rule for filters a broker cannot take: a states filter needs v4,
 * a types filter v5 unless it asks for "classic" only (an older broker has
 * no other kind); otherwise that broker's answer is UNSUPPORTED_VERSION. */
static bool
filters_fit(const list_call *l, int16_t version)
{
	if (l->nstates && version < 4)
		return false;
	for (size_t i = 0; version < 5 && i < l->ntypes; i++)
		if (strcasecmp(l->types[i], "classic") != 0)
			return false;
	return true;
}

/* Encodes ListGroups with the filters the version carries (none it cannot: see filters_fit). */
static void
build_list(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n, size_t *encoded)
{
	list_call *l = k->ud;
	if (!filters_fit(l, version))
		ad_done(k, items[0], CH_KERR_UNSUPPORTED_VERSION);
	ch_ListGroupsRequest m;
	ch_ListGroupsRequest_init(&m);
	ch_str *f = calloc(l->nstates + l->ntypes + 1, sizeof(*f));
	if (!f) {
		b->oom = true;
		return;
	}
	for (size_t i = 0; i < l->nstates; i++)
		f[i] = ch_str_c(l->states[i]);
	for (size_t i = 0; i < l->ntypes; i++)
		f[l->nstates + i] = ch_str_c(l->types[i]);
	if (version >= 4) {
		m.StatesFilter = f;
		m.StatesFilter_n = (int32_t)l->nstates;
	}
	if (version >= 5) {
		m.TypesFilter = f + l->nstates;
		m.TypesFilter_n = (int32_t)l->ntypes;
	}
	ch_ListGroupsRequest_encode(b, version, &m);
	free(f);
	*encoded = items[0]->st == IT_DONE ? 0 : n;
}

/* Adds a broker's groups to the result; coordinator loading or unavailable retries it. */
static void
done_list(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	list_call *l = k->ud;
	list_res *r = l->r;
	const ch_ListGroupsResponse *m = resp;
	if (n == 0) /* the filters did not fit this broker's version */
		return;
	ad_item *it = items[0];
	if (m->ErrorCode == CH_KERR_COORDINATOR_LOAD_IN_PROGRESS ||
	    m->ErrorCode == CH_KERR_COORDINATOR_NOT_AVAILABLE) {
		ad_retry(k, it, m->ErrorCode, false);
		return;
	}
	if (m->ErrorCode) {
		ad_done(k, it, m->ErrorCode);
		return;
	}
	for (int32_t i = 0; i < m->Groups_n; i++) {
		const ch_ListGroupsResponse_ListedGroup *g = &m->Groups[i];
		ch_str state = version >= 4 ? g->GroupState : CH_STR_NULL;
		ch_str type = version >= 5 ? g->GroupType : CH_STR_NULL;
		if (r->pub.groups_n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 16;
			cohort_group_listing *ng = realloc(r->pub.groups, cap * sizeof(*ng));
			if (!ng) {
				l->oom = true;
				return;
			}
			r->pub.groups = ng;
			l->cap = cap;
		}
		cohort_group_listing *d = &r->pub.groups[r->pub.groups_n++];
		d->group_id = ad_strdup(&r->arena, g->GroupId, &l->oom);
		d->protocol_type = ad_strdup(&r->arena, g->ProtocolType, &l->oom);
		d->state = ad_strdup(&r->arena, state, &l->oom);
		d->type = ad_strdup(&r->arena, type, &l->oom);
		d->coordinator = it->node;
		if (!d->group_id || !d->protocol_type)
			l->oom = true;
	}
}

static const ad_ops list_ops = {
	.api = CH_APIKEY_LIST_GROUPS,
	.route = R_NODE,
	.max_batch = 1,
	.max_version = -1,
	.build = build_list,
	.done = done_list,
};

/* qsort order of listings: by group id. */
static int
cmp_listing(const void *a, const void *b)
{
	return strcmp(((const cohort_group_listing *)a)->group_id,
		      ((const cohort_group_listing *)b)->group_id);
}

cohort_err
cohort_admin_list_groups(cohort_admin *a, const char *const *states, size_t states_n,
			 const char *const *types, size_t types_n, int timeout_ms,
			 cohort_group_list **out)
{
	if (!a || !out || (states_n && !states) || (types_n && !types))
		return COHORT_ERR__INVALID_ARG;
	for (size_t i = 0; i < states_n; i++)
		if (!states[i])
			return COHORT_ERR__INVALID_ARG;
	for (size_t i = 0; i < types_n; i++)
		if (!types[i])
			return COHORT_ERR__INVALID_ARG;
	*out = NULL;
	int64_t start = ch_now_mono_ms();
	cohort_cluster *cl = NULL;
	cohort_err err = cohort_admin_describe_cluster(a, timeout_ms, &cl);
	if (err)
		return err;
	int64_t left = ad_timeout(&a->c, timeout_ms) - (ch_now_mono_ms() - start);
	list_res *r = calloc(1, sizeof(*r));
	cohort_err *errs = calloc(cl->brokers_n + 1, sizeof(*errs));
	list_call l = {r, states, states_n, types, types_n, 0, false};
	ad_call *k = r && errs ? ad_new(&a->c, &list_ops, cl->brokers_n, &l, errs,
					(int)(left > 0 ? left : 0))
			       : NULL;
	if (!k) {
		free(r);
		free(errs);
		cohort_cluster_free(cl);
		return COHORT_ERR__NOMEM;
	}
	ch_arena_init(&r->arena);
	for (size_t i = 0; i < cl->brokers_n; i++)
		k->items[i].node = cl->brokers[i].id;
	cohort_err cerr = ad_run(k);
	r->pub.errors = ch_arena_alloc(&r->arena, sizeof(cohort_node_error) * (cl->brokers_n + 1));
	if (!r->pub.errors)
		l.oom = true;
	for (size_t i = 0; !l.oom && i < cl->brokers_n; i++)
		if (errs[i])
			r->pub.errors[r->pub.errors_n++] =
				(cohort_node_error){cl->brokers[i].id, errs[i]};
	err = cerr ? cerr : l.oom ? COHORT_ERR__NOMEM : ad_first_err(errs, cl->brokers_n);
	free(errs);
	cohort_cluster_free(cl);
	if (cerr || l.oom) {
		cohort_group_list_free(&r->pub);
		return err;
	}
	if (r->pub.groups_n)
		qsort(r->pub.groups, r->pub.groups_n, sizeof(cohort_group_listing), cmp_listing);
	*out = &r->pub;
	return err;
}

void
cohort_group_list_free(cohort_group_list *l)
{
	if (!l)
		return;
	list_res *r = (list_res *)l;
	free(r->pub.groups);
	ch_arena_free(&r->arena);
	free(r);
}

/* ---- find coordinators -------------------------------------------------------------------- */

typedef AD_RESULT(cohort_coordinators) coord_res;

/* Lookup-only call: the coordinators' addresses are copied at the end. */
static void
finish_coords(ad_call *k)
{
	coord_res *r = k->ud;
	bool oom = false;
	for (size_t i = 0; i < k->n; i++) {
		ad_item *it = &k->items[i];
		cohort_coordinator *d = &r->pub.groups[it->idx];
		d->err = it->err;
		if (it->st == IT_DONE && !it->err)
			ad_node(&r->arena, k->c, it->node, &d->node, &oom);
		else
			d->node.id = -1;
	}
	if (oom)
		k->err = COHORT_ERR__NOMEM;
}

static const ad_ops coord_ops = {
	.api = CH_APIKEY_FIND_COORDINATOR,
	.route = R_COORD,
	.max_version = -1,
	.finish = finish_coords,
};

/* Copies the group ids into an arena and checks them; INVALID_ARG for a NULL. */
static cohort_err
copy_groups(ch_arena *a, const char *const *groups, size_t n, const char ***out)
{
	if (n && !groups)
		return COHORT_ERR__INVALID_ARG;
	const char **g = ch_arena_alloc(a, sizeof(char *) * (n + 1));
	if (!g)
		return COHORT_ERR__NOMEM;
	bool oom = false;
	for (size_t i = 0; i < n; i++) {
		if (!groups[i])
			return COHORT_ERR__INVALID_ARG;
		g[i] = ad_strdup_c(a, groups[i], &oom);
	}
	*out = g;
	return oom ? COHORT_ERR__NOMEM : COHORT_OK;
}

cohort_err
cohort_admin_find_coordinators(cohort_admin *a, const char *const *groups, size_t n, int timeout_ms,
			       cohort_coordinators **out)
{
	if (!a || !out)
		return COHORT_ERR__INVALID_ARG;
	*out = NULL;
	coord_res *r = calloc(1, sizeof(*r));
	if (!r)
		return COHORT_ERR__NOMEM;
	ch_arena_init(&r->arena);
	const char **ids = NULL;
	cohort_err err = copy_groups(&r->arena, groups, n, &ids);
	r->pub.groups = ch_arena_alloc(&r->arena, sizeof(cohort_coordinator) * (n + 1));
	cohort_err *errs = calloc(n + 1, sizeof(*errs));
	ad_call *k = !err && r->pub.groups && errs
			     ? ad_new(&a->c, &coord_ops, n, r, errs, timeout_ms)
			     : NULL;
	if (!k) {
		free(errs);
		cohort_coordinators_free(&r->pub);
		return err ? err : COHORT_ERR__NOMEM;
	}
	r->pub.groups_n = n;
	for (size_t i = 0; i < n; i++) {
		k->items[i].key = ids[i];
		r->pub.groups[i].group_id = ids[i];
	}
	cohort_err cerr = ad_run(k);
	err = cerr ? cerr : ad_first_err(errs, n);
	free(errs);
	if (cerr) {
		cohort_coordinators_free(&r->pub);
		return cerr;
	}
	*out = &r->pub;
	return err;
}

void
cohort_coordinators_free(cohort_coordinators *c)
{
	if (!c)
		return;
	coord_res *r = (coord_res *)c;
	ch_arena_free(&r->arena);
	free(r);
}

/* ---- describe groups ------------------------------------------------------------------------- */

typedef AD_RESULT(cohort_group_descriptions) describe_res;

/* The body of a build function whose request lists the batch's group ids
 * in its field F (DescribeGroups, ConsumerGroupDescribe). */
#define BUILD_GROUP_LIST(Req, F)                                                                   \
	do {                                                                                       \
		(void)k;                                                                           \
		Req m;                                                                             \
		Req##_init(&m);                                                                    \
		ch_str *g = ad_keys(items, n, b);                                                  \
		if (!g)                                                                            \
			return;                                                                    \
		m.F = g;                                                                           \
		m.F##_n = (int32_t)n;                                                              \
		Req##_encode(b, version, &m);                                                      \
		free(g);                                                                           \
		*encoded = n;                                                                      \
	} while (0)

/* Encodes DescribeGroups for the batch's groups. */
static void
build_describe(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n, size_t *encoded)
{
	BUILD_GROUP_LIST(ch_DescribeGroupsRequest, Groups);
}

/* qsort order of partitions: topic, then partition. */
static int
cmp_tp(const void *a, const void *b)
{
	const cohort_tp *x = a, *y = b;
	int c = strcmp(x->topic, y->topic);
	return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

/* The member's subscription and assignment, decoded with the consumer
 * embedded protocol (src/assign/ch_assign_proto), copied into ra. */
static void
decode_member(ch_arena *ra, cohort_member_description *d, ch_bytes meta, ch_bytes asg, bool *oom)
{
	ch_arena tmp;
	ch_arena_init(&tmp);
	if (meta.len > 0) {
		ch_assign_subscription s;
		if (ch_assign_subscription_decode(meta.p, (size_t)meta.len, &tmp, &s) != CH_OK) {
			d->decode_err = COHORT_ERR__BAD_MSG;
		} else if (s.m.Topics_n > 0) {
			d->subscription = ch_arena_alloc(ra, sizeof(char *) * (size_t)s.m.Topics_n);
			if (!d->subscription)
				*oom = true;
			for (int32_t i = 0; d->subscription && i < s.m.Topics_n; i++)
				d->subscription[d->subscription_n++] =
					ad_strdup(ra, s.m.Topics[i], oom);
		}
	}
	if (asg.len > 0) {
		ch_assign_assignment as;
		if (ch_assign_assignment_decode(asg.p, (size_t)asg.len, &tmp, &as) != CH_OK) {
			d->decode_err = COHORT_ERR__BAD_MSG;
		} else {
			size_t total = 0;
			for (int32_t i = 0; i < as.m.AssignedPartitions_n; i++)
				if (as.m.AssignedPartitions[i].Partitions_n > 0)
					total += (size_t)as.m.AssignedPartitions[i].Partitions_n;
			d->assignment = ch_arena_alloc(ra, sizeof(cohort_tp) * (total + 1));
			if (!d->assignment)
				*oom = true;
			for (int32_t i = 0; d->assignment && i < as.m.AssignedPartitions_n; i++) {
				const ch_ConsumerProtocolAssignment_TopicPartition *tp =
					&as.m.AssignedPartitions[i];
				const char *topic = ad_strdup(ra, tp->Topic, oom);
				for (int32_t j = 0; topic && j < tp->Partitions_n; j++)
					d->assignment[d->assignment_n++] =
						(cohort_tp){topic, tp->Partitions[j]};
			}
			if (d->assignment_n)
				qsort(d->assignment, d->assignment_n, sizeof(cohort_tp), cmp_tp);
		}
	}
	ch_arena_free(&tmp);
}

/* Copies raw bytes into ra (NULL, 0 for none). */
static const void *
copy_bytes(ch_arena *ra, ch_bytes b, size_t *len, bool *oom)
{
	*len = b.len > 0 ? (size_t)b.len : 0;
	if (!*len)
		return NULL;
	void *d = ch_arena_alloc(ra, *len);
	if (!d) {
		*oom = true;
		return NULL;
	}
	memcpy(d, b.p, *len);
	return d;
}

/* One described group into the result. */
static void
take_group(ad_call *k, ad_item *it, const ch_DescribeGroupsResponse_DescribedGroup *g)
{
	describe_res *r = k->ud;
	ch_arena *ra = &r->arena;
	cohort_group_description *d = &r->pub.groups[it->idx];
	bool oom = false;
	d->err = g->ErrorCode;
	d->type = g->ErrorCode == 0 && !ch_str_eq_c(g->GroupState, "Dead") ? "classic" : NULL;
	d->state = ad_strdup(ra, g->GroupState, &oom);
	d->protocol_type = ad_strdup(ra, g->ProtocolType, &oom);
	d->protocol = ad_strdup(ra, g->ProtocolData, &oom);
	ad_node(ra, k->c, it->node, &d->coordinator, &oom);
	int32_t nm = g->Members_n > 0 ? g->Members_n : 0;
	d->members = ch_arena_alloc(ra, sizeof(cohort_member_description) * ((size_t)nm + 1));
	if (!d->members)
		oom = true;
	bool consumer = g->ProtocolType.len <= 0 || ch_str_eq_c(g->ProtocolType, "consumer");
	for (int32_t i = 0; d->members && i < nm; i++) {
		const ch_DescribeGroupsResponse_DescribedGroupMember *m = &g->Members[i];
		cohort_member_description *md = &d->members[d->members_n++];
		md->member_id = ad_strdup(ra, m->MemberId, &oom);
		md->group_instance_id = ad_strdup(ra, m->GroupInstanceId, &oom);
		md->client_id = ad_strdup(ra, m->ClientId, &oom);
		md->host = ad_strdup(ra, m->ClientHost, &oom);
		md->member_epoch = -1;
		md->metadata = copy_bytes(ra, m->MemberMetadata, &md->metadata_len, &oom);
		md->assignment_bytes =
			copy_bytes(ra, m->MemberAssignment, &md->assignment_bytes_len, &oom);
		if (consumer)
			decode_member(ra, md, m->MemberMetadata, m->MemberAssignment, &oom);
	}
	ad_done(k, it, oom ? COHORT_ERR__NOMEM : g->ErrorCode);
}

/* Takes each group of the answer; coordinator errors retry (ad_coordinator_error). */
static void
done_describe(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	(void)version;
	const ch_DescribeGroupsResponse *m = resp;
	for (size_t i = 0; i < n; i++) {
		ad_item *it = items[i];
		const ch_DescribeGroupsResponse_DescribedGroup *g =
			AD_FIND(m->Groups, m->Groups_n, GroupId, it->key);
		if (!g)
			ad_done(k, it, COHORT_ERR__BAD_MSG);
		else if (!ad_coordinator_error(k, it, g->ErrorCode))
			take_group(k, it, g);
	}
}

/* At most v5: from v6 (KIP-1043) a group that does not exist, or is a
 * consumer group, is GROUP_ID_NOT_FOUND where cohort.h promises a Dead
 * description (and the CLI says "does not exist" from it). */
static const ad_ops describe_ops = {
	.api = CH_APIKEY_DESCRIBE_GROUPS,
	.route = R_COORD,
	.max_version = 5,
	.build = build_describe,
	.done = done_describe,
};

/* A describe result for the n groups, every group "not described yet"
 * (coordinator -1, no epochs); NULL with *err set on a bad argument or OOM. */
static describe_res *
describe_res_new(const char *const *groups, size_t n, const char ***ids, cohort_err *err)
{
	describe_res *r = calloc(1, sizeof(*r));
	if (!r) {
		*err = COHORT_ERR__NOMEM;
		return NULL;
	}
	ch_arena_init(&r->arena);
	*err = copy_groups(&r->arena, groups, n, ids);
	r->pub.groups = ch_arena_alloc(&r->arena, sizeof(cohort_group_description) * (n + 1));
	if (!*err && !r->pub.groups)
		*err = COHORT_ERR__NOMEM;
	if (*err) {
		cohort_group_descriptions_free(&r->pub);
		return NULL;
	}
	r->pub.groups_n = n;
	for (size_t i = 0; i < n; i++) {
		r->pub.groups[i].group_id = (*ids)[i];
		r->pub.groups[i].coordinator.id = -1;
		r->pub.groups[i].group_epoch = -1;
		r->pub.groups[i].assignment_epoch = -1;
	}
	return r;
}

/* Runs ops over the groups which[0..nw) of r (indexes into r's groups),
 * ud the call's data; each one's error goes to errs[index]. Returns the
 * call-level error. */
static cohort_err
describe_run(cohort_admin *a, describe_res *r, const ad_ops *ops, void *ud, const size_t *which,
	     size_t nw, cohort_err *errs, int timeout_ms)
{
	ad_call *k = ad_new(&a->c, ops, nw, ud, errs, timeout_ms);
	if (!k)
		return COHORT_ERR__NOMEM;
	for (size_t j = 0; j < nw; j++) {
		k->items[j].key = r->pub.groups[which[j]].group_id;
		k->items[j].idx = which[j];
	}
	return ad_run(k);
}

/* ---- describe consumer groups (KIP-848) -------------------------------------------------------- */

/* A ConsumerGroupDescribe call's data: the result, and per group whether
 * DescribeGroups must describe it instead (not a consumer group). */
typedef struct cgd_call {
	describe_res *r;
	bool *classic;
} cgd_call;

/* Encodes ConsumerGroupDescribe for the batch's groups. */
static void
build_cgd(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n, size_t *encoded)
{
	BUILD_GROUP_LIST(ch_ConsumerGroupDescribeRequest, GroupIds);
}

/* A ConsumerGroupDescribe assignment as sorted partitions in ra. */
static cohort_tp *
cgd_partitions(ch_arena *ra, const ch_ConsumerGroupDescribeResponse_Assignment *as, size_t *n,
	       bool *oom)
{
	size_t total = 0;
	for (int32_t i = 0; i < as->TopicPartitions_n; i++)
		if (as->TopicPartitions[i].Partitions_n > 0)
			total += (size_t)as->TopicPartitions[i].Partitions_n;
	*n = 0;
	cohort_tp *tp = ch_arena_alloc(ra, sizeof(cohort_tp) * (total + 1));
	if (!tp) {
		*oom = true;
		return NULL;
	}
	for (int32_t i = 0; i < as->TopicPartitions_n; i++) {
		const ch_ConsumerGroupDescribeResponse_TopicPartitions *t = &as->TopicPartitions[i];
		const char *topic = ad_strdup(ra, t->TopicName, oom);
		for (int32_t j = 0; topic && j < t->Partitions_n; j++)
			tp[(*n)++] = (cohort_tp){topic, t->Partitions[j]};
	}
	if (*n)
		qsort(tp, *n, sizeof(cohort_tp), cmp_tp);
	return tp;
}

/* One consumer group of a ConsumerGroupDescribe answer into the result. */
static void
take_cgroup(ad_call *k, ad_item *it, const ch_ConsumerGroupDescribeResponse_DescribedGroup *g)
{
	describe_res *r = ((cgd_call *)k->ud)->r;
	ch_arena *ra = &r->arena;
	cohort_group_description *d = &r->pub.groups[it->idx];
	bool oom = false;
	d->type = "consumer";
	d->state = ad_strdup(ra, g->GroupState, &oom);
	d->protocol_type = "consumer";
	d->protocol = ad_strdup(ra, g->AssignorName, &oom);
	d->group_epoch = g->GroupEpoch;
	d->assignment_epoch = g->AssignmentEpoch;
	ad_node(ra, k->c, it->node, &d->coordinator, &oom);
	int32_t nm = g->Members_n > 0 ? g->Members_n : 0;
	d->members = ch_arena_alloc(ra, sizeof(cohort_member_description) * ((size_t)nm + 1));
	if (!d->members)
		oom = true;
	for (int32_t i = 0; d->members && i < nm; i++) {
		const ch_ConsumerGroupDescribeResponse_Member *m = &g->Members[i];
		cohort_member_description *md = &d->members[d->members_n++];
		*md = (cohort_member_description){0};
		md->member_id = ad_strdup(ra, m->MemberId, &oom);
		md->group_instance_id = ad_strdup(ra, m->InstanceId, &oom);
		md->rack = ad_strdup(ra, m->RackId, &oom);
		md->client_id = ad_strdup(ra, m->ClientId, &oom);
		md->host = ad_strdup(ra, m->ClientHost, &oom);
		md->member_epoch = m->MemberEpoch;
		md->subscribed_topic_regex = ad_strdup(ra, m->SubscribedTopicRegex, &oom);
		md->member_type = m->MemberType == 1   ? "consumer"
				  : m->MemberType == 0 ? "classic"
						       : NULL; /* -1: v0, unknown */
		int32_t ns = m->SubscribedTopicNames_n > 0 ? m->SubscribedTopicNames_n : 0;
		md->subscription = ch_arena_alloc(ra, sizeof(char *) * ((size_t)ns + 1));
		if (!md->subscription)
			oom = true;
		for (int32_t j = 0; md->subscription && j < ns; j++)
			md->subscription[md->subscription_n++] =
				ad_strdup(ra, m->SubscribedTopicNames[j], &oom);
		md->assignment = cgd_partitions(ra, &m->Assignment, &md->assignment_n, &oom);
		md->target_assignment =
			cgd_partitions(ra, &m->TargetAssignment, &md->target_assignment_n, &oom);
	}
	ad_done(k, it, oom ? COHORT_ERR__NOMEM : COHORT_OK);
}

/* Each group of the answer: a consumer group is taken, GROUP_ID_NOT_FOUND
 * (unknown, or a classic group) marks it for DescribeGroups, coordinator
 * errors retry, other errors are the group's. */
static void
done_cgd(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	(void)version;
	cgd_call *l = k->ud;
	const ch_ConsumerGroupDescribeResponse *m = resp;
	for (size_t i = 0; i < n; i++) {
		ad_item *it = items[i];
		const ch_ConsumerGroupDescribeResponse_DescribedGroup *g =
			AD_FIND(m->Groups, m->Groups_n, GroupId, it->key);
		if (!g) {
			ad_done(k, it, COHORT_ERR__BAD_MSG);
		} else if (ad_coordinator_error(k, it, g->ErrorCode)) {
			continue;
		} else if (g->ErrorCode == CH_KERR_GROUP_ID_NOT_FOUND) {
			l->classic[it->idx] = true;
			ad_done(k, it, COHORT_OK);
		} else if (g->ErrorCode) {
			ad_done(k, it, g->ErrorCode);
		} else {
			take_cgroup(k, it, g);
		}
	}
}

static const ad_ops cgd_ops = {
	.api = CH_APIKEY_CONSUMER_GROUP_DESCRIBE,
	.route = R_COORD,
	.max_version = -1,
	.build = build_cgd,
	.done = done_cgd,
};

/* Both describe calls: with consumer, ConsumerGroupDescribe first and
 * DescribeGroups for the groups it leaves (see cohort.h); else
 * DescribeGroups for all. */
static cohort_err
describe(cohort_admin *a, const char *const *groups, size_t n, int timeout_ms, bool consumer,
	 cohort_group_descriptions **out)
{
	if (!a || !out)
		return COHORT_ERR__INVALID_ARG;
	*out = NULL;
	const char **ids = NULL;
	cohort_err err;
	describe_res *r = describe_res_new(groups, n, &ids, &err);
	cohort_err *errs = r ? calloc(n + 1, sizeof(*errs)) : NULL;
	size_t *which = errs ? calloc(n + 1, sizeof(*which)) : NULL;
	bool *classic = which ? calloc(n + 1, sizeof(*classic)) : NULL;
	if (!classic) {
		free(which);
		free(errs);
		if (r)
			cohort_group_descriptions_free(&r->pub);
		return r ? COHORT_ERR__NOMEM : err;
	}
	int64_t start = ch_now_mono_ms();
	size_t nc = 0;
	cohort_err cerr = COHORT_OK;
	for (size_t i = 0; i < n; i++)
		which[i] = i;
	if (consumer) {
		cgd_call l = {r, classic};
		cerr = describe_run(a, r, &cgd_ops, &l, which, n, errs, timeout_ms);
	}
	/* the rest through DescribeGroups, in what is left of the timeout: a
	 * coordinator without API 69 fails the request with NO_COMMON_VERSION */
	for (size_t i = 0; !cerr && i < n; i++)
		if (!consumer || classic[i] || errs[i] == COHORT_ERR__NO_COMMON_VERSION ||
		    errs[i] == CH_KERR_UNSUPPORTED_VERSION) {
			errs[i] = COHORT_OK;
			which[nc++] = i;
		}
	int64_t left = ad_timeout(&a->c, timeout_ms) - (ch_now_mono_ms() - start);
	if (nc)
		cerr = describe_run(a, r, &describe_ops, r, which, nc, errs,
				    (int)(left > 0 ? left : 0));
	free(which);
	free(classic);
	for (size_t i = 0; i < n; i++)
		r->pub.groups[i].err = errs[i];
	err = cerr ? cerr : ad_first_err(errs, n);
	free(errs);
	if (cerr) {
		cohort_group_descriptions_free(&r->pub);
		return cerr;
	}
	*out = &r->pub;
	return err;
}

cohort_err
cohort_admin_describe_groups(cohort_admin *a, const char *const *groups, size_t n, int timeout_ms,
			     cohort_group_descriptions **out)
{
	return describe(a, groups, n, timeout_ms, false, out);
}

cohort_err
cohort_admin_describe_consumer_groups(cohort_admin *a, const char *const *groups, size_t n,
				      int timeout_ms, cohort_group_descriptions **out)
{
	return describe(a, groups, n, timeout_ms, true, out);
}

void
cohort_group_descriptions_free(cohort_group_descriptions *d)
{
	if (!d)
		return;
	describe_res *r = (describe_res *)d;
	ch_arena_free(&r->arena);
	free(r);
}
