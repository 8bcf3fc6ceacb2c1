/*
 * ch_coord_table.c: the state table: what each group state does with each
 * request. The request handlers (ch_coord.c, ch_coord_offsets.c,
 * ch_coord_admin.c) look their cell up here and do what it says; the copy
 * of the table in ch_coord.h is rendered from these rules (the group_coord
 * test compares them), so the documentation and the code cannot drift.
 *
 * A cell is an action and, for ACT_ANSWER, the error answered. `check`
 * marks the cells where the member is validated first (Kafka's
 * ClassicGroup.validateMember and the generation; validateOffsetCommit for
 * commits): its error, if any, is the answer instead.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/ch_common.h"
#include "group/ch_coord_int.h"
#include "proto/generated/ch_errors.h"

#define A(e)                                                                                       \
	{                                                                                          \
		ACT_ANSWER, CH_KERR_##e, false                                                     \
	}
#define C(e)                                                                                       \
	{                                                                                          \
		ACT_ANSWER, CH_KERR_##e, true                                                      \
	} /* after the member check */
#define DO(a)                                                                                      \
	{                                                                                          \
		ACT_##a, 0, false                                                                  \
	}
#define DOC(a)                                                                                     \
	{                                                                                          \
		ACT_##a, 0, true                                                                   \
	} /* after the member check */
#define NEVER                                                                                      \
	{                                                                                          \
		ACT_NEVER, CH_KERR_UNKNOWN_MEMBER_ID, false                                        \
	}

/* Columns: no such group, then ch_coord_group_state order. */
static const coord_rule rules[COORD_REQ_N][COORD_COL_N] = {
	/*                       no group        Empty           Preparing        Completing       Stable           Dead */
	[REQ_JOIN_NEW] = {DO(CREATE), DO(JOIN_NEW), DO(JOIN_NEW), DO(JOIN_NEW), DO(JOIN_NEW),
			  A(COORDINATOR_NOT_AVAILABLE)},
	[REQ_JOIN_STATIC_NEW] = {DO(CREATE), DO(JOIN_ADD), DO(JOIN_ADD), DO(JOIN_ADD), DO(JOIN_ADD),
				 A(COORDINATOR_NOT_AVAILABLE)},
	[REQ_JOIN_STATIC] = {NEVER, NEVER, DO(JOIN_REPLACE), DO(JOIN_REPLACE_REBALANCE),
			     DO(JOIN_REPLACE_KEEP), A(COORDINATOR_NOT_AVAILABLE)},
	[REQ_JOIN_PENDING] = {NEVER, DO(JOIN_ADD), DO(JOIN_ADD), DO(JOIN_ADD), DO(JOIN_ADD),
			      A(COORDINATOR_NOT_AVAILABLE)},
	[REQ_JOIN_KNOWN] = {NEVER, NEVER, DO(JOIN_UPDATE), DO(JOIN_RESEND), DO(JOIN_CURRENT),
			    A(COORDINATOR_NOT_AVAILABLE)},
	[REQ_JOIN_FENCED] = {NEVER, NEVER, DO(JOIN_FENCED), DO(JOIN_FENCED), DO(JOIN_FENCED),
			     A(COORDINATOR_NOT_AVAILABLE)},
	[REQ_JOIN_UNKNOWN] = {A(UNKNOWN_MEMBER_ID), A(UNKNOWN_MEMBER_ID), A(UNKNOWN_MEMBER_ID),
			      A(UNKNOWN_MEMBER_ID), A(UNKNOWN_MEMBER_ID),
			      A(COORDINATOR_NOT_AVAILABLE)},
	[REQ_SYNC] = {A(UNKNOWN_MEMBER_ID), C(UNKNOWN_MEMBER_ID), C(REBALANCE_IN_PROGRESS),
		      DOC(SYNC_WAIT), DOC(SYNC_ASSIGNMENT), A(COORDINATOR_NOT_AVAILABLE)},
	[REQ_HEARTBEAT] = {A(UNKNOWN_MEMBER_ID), C(UNKNOWN_MEMBER_ID), C(REBALANCE_IN_PROGRESS),
			   C(NONE), C(NONE), A(COORDINATOR_NOT_AVAILABLE)},
	[REQ_LEAVE] = {DO(LEAVE), DO(LEAVE), DO(LEAVE), DO(LEAVE), DO(LEAVE),
		       A(COORDINATOR_NOT_AVAILABLE)},
	[REQ_COMMIT] = {DO(COMMIT_SIMPLE), DOC(COMMIT), DOC(COMMIT), C(REBALANCE_IN_PROGRESS),
			DOC(COMMIT), A(COORDINATOR_NOT_AVAILABLE)},
	[REQ_FETCH] = {DO(FETCH), DO(FETCH), DO(FETCH), DO(FETCH), DO(FETCH), DO(FETCH)},
	[REQ_DESCRIBE] = {DO(DESCRIBE_DEAD), DO(DESCRIBE_SUMMARY), DO(DESCRIBE_SUMMARY),
			  DO(DESCRIBE_SUMMARY), DO(DESCRIBE_FULL), DO(DESCRIBE_SUMMARY)},
	[REQ_DELETE] = {A(GROUP_ID_NOT_FOUND), DO(DELETE), A(NON_EMPTY_GROUP), A(NON_EMPTY_GROUP),
			A(NON_EMPTY_GROUP), A(GROUP_ID_NOT_FOUND)},
};

const coord_rule *
ch_coord_rule_at(coord_req req, int col)
{
	return &rules[req][col];
}

const coord_rule *
ch_coord_rule_for(coord_req req, const ch_coord_group *g)
{
	return ch_coord_rule_at(req, g ? (int)g->state + 1 : COORD_COL_NO_GROUP);
}

/* ---- the rendered table (ch_coord.h) ------------------------------------- */

static const char *const req_labels[COORD_REQ_N] = {
	[REQ_JOIN_NEW] = "JoinGroup, no id",    [REQ_JOIN_STATIC_NEW] = "  new instance",
	[REQ_JOIN_STATIC] = "  known instance", [REQ_JOIN_PENDING] = "  pending id",
	[REQ_JOIN_KNOWN] = "  member's id",     [REQ_JOIN_FENCED] = "  fenced instance",
	[REQ_JOIN_UNKNOWN] = "  unknown id",    [REQ_SYNC] = "SyncGroup",
	[REQ_HEARTBEAT] = "Heartbeat",          [REQ_LEAVE] = "LeaveGroup",
	[REQ_COMMIT] = "OffsetCommit",          [REQ_FETCH] = "OffsetFetch",
	[REQ_DESCRIBE] = "DescribeGroups",      [REQ_DELETE] = "DeleteGroups",
};

static const char *const col_labels[COORD_COL_N] = {"no group",   "Empty",  "Preparing",
						    "Completing", "Stable", "Dead"};

/* What each action does, and which Kafka function (4.x group-coordinator:
 * GroupMetadataManager, ClassicGroup, OffsetMetadataManager) it follows. */
static const struct {
	const char *token;
	const char *doc;
} acts[ACT_N] = {
	[ACT_NEVER] = {"-", "cannot happen (no such member can exist in that state)"},
	[ACT_ANSWER] = {NULL, "that error (below), nothing changes"},
	[ACT_CREATE] = {"create", "the group is created Empty, then as Empty "
				  "(getOrMaybeCreateClassicGroup: only without a member id)"},
	[ACT_JOIN_NEW] = {"new",
			  "v4+: MEMBER_ID_REQUIRED with a new id, kept pending until the member "
			  "joins with it (KIP-394); v0-v3: add (classicGroupJoinNewDynamicMember)"},
	[ACT_JOIN_ADD] = {"add",
			  "the member is added and the group rebalances; from Empty after "
			  "group.initial.rebalance.delay.ms (addMemberThenRebalanceOrCompleteJoin, "
			  "InitialDelayedJoin); cohort: in CompletingRebalance (or Stable with "
			  "members to sync) it waits for the generation to be stored and synced "
			  "(group.rebalance.join.waits.for.sync)"},
	[ACT_JOIN_FENCED] = {"fenced",
			     "FENCED_INSTANCE_ID: a newer member id holds the instance; logged "
			     "with both ids (validateExistingMember)"},
	[ACT_JOIN_REPLACE] =
		{"replace",
		 "new member id for the instance, the old one fenced; the join "
		 "phase goes on (updateStaticMemberThenRebalanceOrCompleteJoin, KIP-345)"},
	[ACT_JOIN_REPLACE_REBALANCE] =
		{"replace+rb", "replace, and rebalance: the leader may have assigned to the "
			       "old id (updateStaticMemberThenRebalanceOrCompleteJoin)"},
	[ACT_JOIN_REPLACE_KEEP] = {"keep|rb",
				   "replace; protocol unchanged: stored, answered with the current "
				   "generation, no rebalance (v9+: a returning leader gets "
				   "SkipAssignment, KIP-814); else rebalance "
				   "(updateStaticMemberThenRebalanceOrCompleteJoin)"},
	[ACT_JOIN_UPDATE] = {"update",
			     "the member's protocols are updated and its JoinGroup waits for the "
			     "join phase (classicGroupJoinExistingMember, "
			     "updateMemberThenRebalanceOrCompleteJoin)"},
	[ACT_JOIN_RESEND] =
		{"resend|rb",
		 "same protocols: this generation's JoinGroup answer again (a lost "
		 "response); else update and rebalance (classicGroupJoinExistingMember)"},
	[ACT_JOIN_CURRENT] = {"current|rb",
			      "a follower with the same protocols gets the current generation; the "
			      "leader or changed protocols: update and rebalance "
			      "(classicGroupJoinExistingMember)"},
	[ACT_SYNC_WAIT] = {"wait",
			   "the SyncGroup waits; the leader's assignment is stored, then every "
			   "waiting member is answered (classicGroupSyncToClassicGroup)"},
	[ACT_SYNC_ASSIGNMENT] = {"assignment",
				 "the member's stored assignment: a late follower or a retry "
				 "(classicGroupSyncToClassicGroup)"},
	[ACT_LEAVE] = {"remove",
		       "each named member leaves, an unknown one gets UNKNOWN_MEMBER_ID, a fenced "
		       "one FENCED_INSTANCE_ID (classicGroupLeaveToClassicGroup, "
		       "removeMemberAndUpdateClassicGroup)"},
	[ACT_COMMIT] = {"commit", "the offsets are appended and answered once durable "
				  "(ClassicGroup.validateOffsetCommit passed)"},
	[ACT_COMMIT_SIMPLE] = {"simple",
			       "generation -1: the group is created, then as Empty; else "
			       "ILLEGAL_GENERATION (OffsetMetadataManager.validateOffsetCommit)"},
	[ACT_FETCH] = {"offsets", "the committed offsets; -1 and \"\" where none (fetchOffsets, "
				  "fetchAllOffsets)"},
	[ACT_DESCRIBE_FULL] = {"full", "state, protocol, members with metadata and assignment "
				       "(describeGroups)"},
	[ACT_DESCRIBE_SUMMARY] = {"summary",
				  "state and members with their assignment, no protocol or "
				  "metadata (describeGroups: describeNoMetadata)"},
	[ACT_DESCRIBE_DEAD] = {"Dead",
			       "described as Dead: no error up to v5, GROUP_ID_NOT_FOUND with "
			       "\"Group <id> not found.\" from v6 (describeGroups, KIP-1043)"},
	[ACT_DELETE] = {"delete", "tombstones for the offsets and the group, answered once durable "
				  "(ClassicGroup.validateDeleteGroup passed)"},
};

/* Short names of the errors in ACT_ANSWER cells. */
static const struct {
	int16_t err;
	const char *token;
} errs[] = {
	{CH_KERR_UNKNOWN_MEMBER_ID, "UNKNOWN"},
	{CH_KERR_REBALANCE_IN_PROGRESS, "REBALANCING"},
	{CH_KERR_COORDINATOR_NOT_AVAILABLE, "NOT_AVAIL"},
	{CH_KERR_NON_EMPTY_GROUP, "NON_EMPTY"},
	{CH_KERR_GROUP_ID_NOT_FOUND, "NOT_FOUND"},
};

/* The table's short name of an error (UNKNOWN, REBALANCING, ...), else Kafka's name. */
static const char *
err_token(int16_t err)
{
	for (size_t i = 0; i < CH_ARRAY_LEN(errs); i++)
		if (errs[i].err == err)
			return errs[i].token;
	return ch_kerr_name(err);
}

typedef struct out {
	char *p;
	size_t cap, len;
} out;

/* Appends formatted text to o, counting what did not fit (o->len may pass o->cap). */
static void __attribute__((format(printf, 2, 3))) put(out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(o->p + CH_MIN(o->len, o->cap), o->cap > o->len ? o->cap - o->len : 0, fmt,
			  ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

/* One comment line: " * " + text, without trailing blanks. */
static void
line(out *o, const char *text)
{
	size_t n = strlen(text);
	while (n && text[n - 1] == ' ')
		n--;
	put(o, " *%s%.*s\n", n ? " " : "", (int)n, text);
}

/* `first`, then the words of `text` wrapped at `width` columns; lines
 * after the first start at column `indent`. */
static void
wrapped(out *o, const char *first, const char *text, int indent, int width)
{
	char buf[256];
	int len = snprintf(buf, sizeof(buf), "%s", first);
	bool line_start = false; /* at the indent of a continuation line */
	for (const char *p = text; *p;) {
		int w = (int)strcspn(p, " ");
		if (!line_start && len + 1 + w > width) {
			line(o, buf);
			len = snprintf(buf, sizeof(buf), "%*s", indent, "");
			line_start = true;
		}
		len += snprintf(buf + len, sizeof(buf) - (size_t)len, "%s%.*s",
				line_start ? "" : " ", w, p);
		line_start = false;
		p += w;
		p += strspn(p, " ");
	}
	line(o, buf);
}

size_t
ch_coord_state_table(char *buf, size_t cap)
{
	out o = {buf, cap, 0};
	char row[256];
	int n = snprintf(row, sizeof(row), "%-18s", "");
	for (int col = 0; col < COORD_COL_N; col++)
		n += snprintf(row + n, sizeof(row) - (size_t)n, "%-13s", col_labels[col]);
	line(&o, row);
	for (int req = 0; req < COORD_REQ_N; req++) {
		n = snprintf(row, sizeof(row), "%-18s", req_labels[req]);
		for (int col = 0; col < COORD_COL_N; col++) {
			const coord_rule *r = &rules[req][col];
			const char *tok =
				r->act == ACT_ANSWER ? err_token(r->err) : acts[r->act].token;
			char cell[32];
			snprintf(cell, sizeof(cell), "%s%s", tok, r->check ? "*" : "");
			n += snprintf(row + n, sizeof(row) - (size_t)n, "%-13s", cell);
		}
		line(&o, row);
	}
	line(&o, "");
	wrapped(&o, "*",
		"the member is checked first (validateMember, then the generation; "
		"SyncGroup also the protocol type and name; OffsetCommit: validateOffsetCommit):"
		" its error is the answer if it fails",
		2, 78);
	for (int a = 0; a < ACT_N; a++) {
		if (a == ACT_ANSWER)
			continue;
		char first[32];
		snprintf(first, sizeof(first), "%-11s", acts[a].token);
		wrapped(&o, first, acts[a].doc, 12, 78);
	}
	for (size_t i = 0; i < CH_ARRAY_LEN(errs); i++) {
		snprintf(row, sizeof(row), "%-11s %s", errs[i].token, ch_kerr_name(errs[i].err));
		line(&o, row);
	}
	return o.len;
}
