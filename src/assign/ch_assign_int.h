/*
 * ch_assign_int.h: the prepared input every assignor works on (internal).
 *
 * ch_as_prep turns the caller's input into integer form once:
 *   topics   sorted by name, internal id t; partition (t, p) gets the global
 *            id t_base[t] + p, so ascending global ids are (name, partition)
 *            order: the order Kafka sorts partitions in, and the order of
 *            every result list.
 *   members  sorted in Kafka's MemberInfo order (static members first by
 *            group.instance.id, then member id), internal id m. Internal
 *            order is the tie-breaker everywhere, which is what makes the
 *            result independent of the input order.
 *   equal    whether all members subscribe to the same topics (found in
 *            O(subscriptions) without sorting), and which; the equal case
 *            of the sticky assignors needs nothing more.
 *   subs     (ch_as_expand) per member its subscribed topics (internal ids, ascending,
 *            deduplicated, existing topics only) in one CSR array; the
 *            position of (m, t) in it is a "slot".
 *   ts       (ch_as_expand) per topic its subscribers (ascending) with their slots.
 * Every assignor fills owner[global id] (a member or -1) and ch_as_result
 * converts that to the caller's shape. Scratch memory is tracked in the
 * context and freed in one go; a failed allocation sets `oom`.
 */
#ifndef CH_ASSIGN_INT_H
#define CH_ASSIGN_INT_H

#include "assign/ch_assign.h"

typedef struct ch_as {
	const ch_assign_input *in;
	void **blk; /* scratch blocks, freed by ch_as_free */
	int32_t nblk, capblk;
	bool oom;

	int32_t nt;      /* topics */
	int32_t *t_ext;  /* internal -> caller index */
	int32_t *t_int;  /* caller index -> internal */
	int32_t *t_base; /* nt + 1 first global ids; t_base[nt] = np */
	int32_t np;      /* partitions of all topics */

	int32_t nm;     /* members */
	int32_t *m_ext; /* internal -> caller index */

	bool equal;              /* every member subscribes to the same topics */
	uint8_t *eq_flag;        /* per topic: the first member subscribes to it */
	int32_t *eq_topics, neq; /* its topics, ascending (all members' if equal) */
	int32_t *ident;          /* 0 .. nm-1: every topic's subscribers when equal */

	/* Built on demand by ch_as_expand: */
	int32_t *sub_off; /* nm + 1 */
	int32_t *sub;     /* internal topic ids */
	int32_t *ts_off;  /* nt + 1 */
	int32_t *ts_mem;  /* subscribers of each topic, ascending */
	int32_t *ts_slot; /* their slot in sub[] */
	int32_t *sub_q;   /* per slot: its position in ts_mem[] */

	int32_t *owner; /* np: the assignment being built */
} ch_as;

void *ch_as_alloc(ch_as *as, size_t n);
int32_t *ch_as_i32(ch_as *as, size_t n, int fill); /* fill: -1 or 0 via memset */
int ch_as_prep(ch_as *as, const ch_assign_input *in, char *errstr, size_t errlen);
int ch_as_expand(ch_as *as);
int ch_as_result(ch_as *as, ch_assign_result *out);
void ch_as_free(ch_as *as);

/* Subscribers of topic t, ascending, without ch_as_expand when all
 * subscriptions are equal. */
static inline int32_t
ch_as_subs(const ch_as *as, int32_t t, const int32_t **mem)
{
	if (as->ts_off) {
		*mem = as->ts_mem + as->ts_off[t];
		return as->ts_off[t + 1] - as->ts_off[t];
	}
	*mem = as->ident;
	return as->eq_flag[t] ? as->nm : 0;
}

/* The slot of (m, t), or -1 when m does not subscribe to t. */
int32_t ch_as_slot(const ch_as *as, int32_t m, int32_t t);
/* Compare two strings as Java's String.compareTo does for ASCII. */
int ch_as_strcmp(ch_str a, ch_str b);

int ch_as_range(ch_as *as);
int ch_as_roundrobin(ch_as *as);
int ch_as_server_range(ch_as *as);
/* coop: withhold partitions another member still claims. gen: honour
 * generations (client side) rather than taking every claim (server side). */
int ch_as_sticky(ch_as *as, bool coop, bool gen);

#endif
