/*
 * Unit tests of auth/ch_authz: StandardAuthorizer's decisions (patterns,
 * principals, hosts, implications, deny wins, super users, the default when
 * no ACL names a resource), filters, and the durable store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth/ch_authz.h"
#include "common/ch_common.h"
#include "common/ch_test.h"

static char dir_tmpl[] = "/tmp/authz_test_XXXXXX";
static const char *dir;

static void
remove_dir(void)
{
	char *p = ch_path_join(dir, "acls");
	unlink(p);
	free(p);
	rmdir(dir);
}

/* A fresh store in the test's directory (made at first use, removed at exit). */
static ch_acl_store *
fresh_store(void)
{
	if (!dir) {
		dir = mkdtemp(dir_tmpl);
		if (!dir)
			abort();
		atexit(remove_dir);
	}
	char *p = ch_path_join(dir, "acls");
	unlink(p);
	free(p);
	char err[256] = "";
	ch_acl_store *s = ch_acl_store_open(dir, err, sizeof(err));
	CH_CHECK(s != NULL);
	return s;
}

static ch_acl
acl(int rt, const char *name, int pat, const char *principal, const char *host, int op, int perm)
{
	ch_acl a = {(int8_t)rt, (int8_t)pat, (int8_t)op, (int8_t)perm, name, principal, host};
	return a;
}

static void
add(ch_acl_store *s, ch_acl a)
{
	char err[256], why[256];
	CH_CHECK(ch_acl_invalid(&a, why, sizeof(why)) == NULL);
	CH_CHECK(ch_acl_store_add(s, &a, 1, err, sizeof(err)) == 0);
}

#define ALICE "User:alice"
#define BOB "User:bob"
#define HOST "127.0.0.1"

static bool
may(const ch_authz *z, const char *who, int op, int rt, const char *name)
{
	return ch_authz_allowed(z, who, HOST, op, rt, name);
}

static void
t_literal_and_default(void)
{
	ch_acl_store *s = fresh_store();
	ch_authz z = {s, NULL, false};
	/* Nothing names the group: the default (deny, then allow when asked). */
	CH_CHECK(!may(&z, ALICE, CH_ACL_READ, CH_RES_GROUP, "g"));
	z.allow_if_no_acl = true;
	CH_CHECK(may(&z, ALICE, CH_ACL_READ, CH_RES_GROUP, "g"));
	add(s, acl(CH_RES_GROUP, "g", CH_PAT_LITERAL, ALICE, "*", CH_ACL_READ, CH_PERM_ALLOW));
	CH_CHECK(may(&z, ALICE, CH_ACL_READ, CH_RES_GROUP, "g"));
	/* An ACL names the group now: bob is denied even with the default on. */
	CH_CHECK(!may(&z, BOB, CH_ACL_READ, CH_RES_GROUP, "g"));
	/* Other groups and other resource types still get the default. */
	CH_CHECK(may(&z, BOB, CH_ACL_READ, CH_RES_GROUP, "g2"));
	CH_CHECK(may(&z, BOB, CH_ACL_READ, CH_RES_TOPIC, "g"));
	z.allow_if_no_acl = false;
	CH_CHECK(!may(&z, ALICE, CH_ACL_READ, CH_RES_GROUP, "g2"));
	CH_CHECK(!may(&z, ALICE, CH_ACL_READ, CH_RES_TOPIC, "g"));
	/* A literal name is the whole name. */
	CH_CHECK(!may(&z, ALICE, CH_ACL_READ, CH_RES_GROUP, "gg"));
	ch_acl_store_close(s);
}

static void
t_deny_wins(void)
{
	ch_acl_store *s = fresh_store();
	ch_authz z = {s, NULL, false};
	add(s, acl(CH_RES_TOPIC, "t", CH_PAT_LITERAL, ALICE, "*", CH_ACL_WRITE, CH_PERM_ALLOW));
	add(s, acl(CH_RES_TOPIC, "t", CH_PAT_LITERAL, "User:*", "*", CH_ACL_ALL, CH_PERM_ALLOW));
	CH_CHECK(may(&z, ALICE, CH_ACL_WRITE, CH_RES_TOPIC, "t"));
	CH_CHECK(may(&z, BOB, CH_ACL_WRITE, CH_RES_TOPIC, "t"));
	/* A DENY on the wildcard resource beats the literal ALLOWs. */
	add(s, acl(CH_RES_TOPIC, "*", CH_PAT_LITERAL, ALICE, "*", CH_ACL_WRITE, CH_PERM_DENY));
	CH_CHECK(!may(&z, ALICE, CH_ACL_WRITE, CH_RES_TOPIC, "t"));
	CH_CHECK(may(&z, BOB, CH_ACL_WRITE, CH_RES_TOPIC, "t"));
	/* DENY WRITE does not deny DESCRIBE (or READ). */
	CH_CHECK(may(&z, ALICE, CH_ACL_DESCRIBE, CH_RES_TOPIC, "t"));
	CH_CHECK(may(&z, ALICE, CH_ACL_READ, CH_RES_TOPIC, "t"));
	/* DENY ALL denies everything. */
	add(s, acl(CH_RES_TOPIC, "t", CH_PAT_PREFIXED, BOB, "*", CH_ACL_ALL, CH_PERM_DENY));
	CH_CHECK(!may(&z, BOB, CH_ACL_DESCRIBE, CH_RES_TOPIC, "t"));
	CH_CHECK(!may(&z, BOB, CH_ACL_DESCRIBE, CH_RES_TOPIC, "tx"));
	ch_acl_store_close(s);
}

static void
t_prefixed(void)
{
	ch_acl_store *s = fresh_store();
	ch_authz z = {s, NULL, false};
	add(s,
	    acl(CH_RES_TOPIC, "orders-", CH_PAT_PREFIXED, ALICE, "*", CH_ACL_READ, CH_PERM_ALLOW));
	CH_CHECK(may(&z, ALICE, CH_ACL_READ, CH_RES_TOPIC, "orders-"));
	CH_CHECK(may(&z, ALICE, CH_ACL_READ, CH_RES_TOPIC, "orders-eu"));
	CH_CHECK(!may(&z, ALICE, CH_ACL_READ, CH_RES_TOPIC, "orders"));
	CH_CHECK(!may(&z, ALICE, CH_ACL_READ, CH_RES_TOPIC, "xorders-eu"));
	/* "*" is literal only as a LITERAL pattern: PREFIXED "*" is a prefix. */
	add(s, acl(CH_RES_GROUP, "*", CH_PAT_PREFIXED, ALICE, "*", CH_ACL_READ, CH_PERM_ALLOW));
	CH_CHECK(!may(&z, ALICE, CH_ACL_READ, CH_RES_GROUP, "g"));
	CH_CHECK(may(&z, ALICE, CH_ACL_READ, CH_RES_GROUP, "*g"));
	add(s, acl(CH_RES_GROUP, "*", CH_PAT_LITERAL, ALICE, "*", CH_ACL_READ, CH_PERM_ALLOW));
	CH_CHECK(may(&z, ALICE, CH_ACL_READ, CH_RES_GROUP, "g"));
	ch_acl_store_close(s);
}

static void
t_hosts_and_principals(void)
{
	ch_acl_store *s = fresh_store();
	ch_authz z = {s, NULL, false};
	add(s,
	    acl(CH_RES_GROUP, "g", CH_PAT_LITERAL, ALICE, "10.0.0.1", CH_ACL_READ, CH_PERM_ALLOW));
	CH_CHECK(ch_authz_allowed(&z, ALICE, "10.0.0.1", CH_ACL_READ, CH_RES_GROUP, "g"));
	CH_CHECK(!ch_authz_allowed(&z, ALICE, HOST, CH_ACL_READ, CH_RES_GROUP, "g"));
	/* Principals compare whole, case-sensitively; only User:* is a wildcard. */
	CH_CHECK(!ch_authz_allowed(&z, "User:Alice", "10.0.0.1", CH_ACL_READ, CH_RES_GROUP, "g"));
	add(s, acl(CH_RES_GROUP, "h", CH_PAT_LITERAL, "User:*", "*", CH_ACL_READ, CH_PERM_ALLOW));
	CH_CHECK(may(&z, "User:ANONYMOUS", CH_ACL_READ, CH_RES_GROUP, "h"));
	add(s, acl(CH_RES_GROUP, "k", CH_PAT_LITERAL, "Group:*", "*", CH_ACL_READ, CH_PERM_ALLOW));
	CH_CHECK(!may(&z, ALICE, CH_ACL_READ, CH_RES_GROUP, "k"));
	ch_acl_store_close(s);
}

static void
t_implications(void)
{
	ch_acl_store *s = fresh_store();
	ch_authz z = {s, NULL, false};
	static const int implies_describe[] = {CH_ACL_READ, CH_ACL_WRITE, CH_ACL_DELETE,
					       CH_ACL_ALTER};
	for (size_t i = 0; i < CH_ARRAY_LEN(implies_describe); i++) {
		char name[16];
		snprintf(name, sizeof(name), "t%zu", i);
		add(s, acl(CH_RES_TOPIC, name, CH_PAT_LITERAL, ALICE, "*", implies_describe[i],
			   CH_PERM_ALLOW));
		CH_CHECK(may(&z, ALICE, CH_ACL_DESCRIBE, CH_RES_TOPIC, name));
		CH_CHECK(!may(&z, ALICE, CH_ACL_DESCRIBE_CONFIGS, CH_RES_TOPIC, name));
	}
	/* READ does not imply WRITE; CREATE does not imply DESCRIBE. */
	CH_CHECK(!may(&z, ALICE, CH_ACL_WRITE, CH_RES_TOPIC, "t0"));
	add(s, acl(CH_RES_TOPIC, "c", CH_PAT_LITERAL, ALICE, "*", CH_ACL_CREATE, CH_PERM_ALLOW));
	CH_CHECK(!may(&z, ALICE, CH_ACL_DESCRIBE, CH_RES_TOPIC, "c"));
	add(s, acl(CH_RES_TOPIC, "cfg", CH_PAT_LITERAL, ALICE, "*", CH_ACL_ALTER_CONFIGS,
		   CH_PERM_ALLOW));
	CH_CHECK(may(&z, ALICE, CH_ACL_DESCRIBE_CONFIGS, CH_RES_TOPIC, "cfg"));
	CH_CHECK(!may(&z, ALICE, CH_ACL_DESCRIBE, CH_RES_TOPIC, "cfg"));
	add(s, acl(CH_RES_CLUSTER, "kafka-cluster", CH_PAT_LITERAL, ALICE, "*", CH_ACL_ALL,
		   CH_PERM_ALLOW));
	CH_CHECK(may(&z, ALICE, CH_ACL_IDEMPOTENT_WRITE, CH_RES_CLUSTER, "kafka-cluster"));
	CH_CHECK_EQ_INT(ch_authz_ops(&z, ALICE, HOST, CH_RES_CLUSTER, "kafka-cluster"),
			CH_CLUSTER_AUTHORIZED_OPS);
	/* READ on a group: READ and DESCRIBE (bits 3 and 8). */
	add(s, acl(CH_RES_GROUP, "g", CH_PAT_LITERAL, ALICE, "*", CH_ACL_READ, CH_PERM_ALLOW));
	CH_CHECK_EQ_INT(ch_authz_ops(&z, ALICE, HOST, CH_RES_GROUP, "g"), (1 << 3) | (1 << 8));
	CH_CHECK_EQ_INT(ch_authz_ops(&z, BOB, HOST, CH_RES_GROUP, "g"), 0);
	ch_acl_store_close(s);
}

static void
t_super_users(void)
{
	ch_acl_store *s = fresh_store();
	add(s, acl(CH_RES_TOPIC, "t", CH_PAT_LITERAL, ALICE, "*", CH_ACL_ALL, CH_PERM_DENY));
	ch_authz z = {s, "User:admin; User:alice", false};
	CH_CHECK(may(&z, ALICE, CH_ACL_WRITE, CH_RES_TOPIC, "t"));
	CH_CHECK(may(&z, "User:admin", CH_ACL_DELETE, CH_RES_GROUP, "g"));
	CH_CHECK(!may(&z, "User:adm", CH_ACL_DELETE, CH_RES_GROUP, "g"));
	CH_CHECK(!may(&z, "User:admin;", CH_ACL_DELETE, CH_RES_GROUP, "g"));
	CH_CHECK(!may(&z, BOB, CH_ACL_DELETE, CH_RES_GROUP, "g"));
	ch_acl_store_close(s);
}

static void
t_by_resource_type(void)
{
	ch_acl_store *s = fresh_store();
	ch_authz z = {s, "User:admin", false};
	CH_CHECK(!ch_authz_allowed_any(&z, ALICE, HOST, CH_ACL_WRITE, CH_RES_TOPIC));
	CH_CHECK(ch_authz_allowed_any(&z, "User:admin", HOST, CH_ACL_WRITE, CH_RES_TOPIC));
	add(s, acl(CH_RES_TOPIC, "t-1", CH_PAT_LITERAL, ALICE, "*", CH_ACL_WRITE, CH_PERM_ALLOW));
	CH_CHECK(ch_authz_allowed_any(&z, ALICE, HOST, CH_ACL_WRITE, CH_RES_TOPIC));
	CH_CHECK(!ch_authz_allowed_any(&z, ALICE, HOST, CH_ACL_READ, CH_RES_TOPIC));
	CH_CHECK(!ch_authz_allowed_any(&z, BOB, HOST, CH_ACL_WRITE, CH_RES_TOPIC));
	/* A DENY on a prefix of the only ALLOW shadows it. */
	add(s, acl(CH_RES_TOPIC, "t-", CH_PAT_PREFIXED, ALICE, "*", CH_ACL_WRITE, CH_PERM_DENY));
	CH_CHECK(!ch_authz_allowed_any(&z, ALICE, HOST, CH_ACL_WRITE, CH_RES_TOPIC));
	add(s, acl(CH_RES_TOPIC, "u", CH_PAT_PREFIXED, ALICE, "*", CH_ACL_ALL, CH_PERM_ALLOW));
	CH_CHECK(ch_authz_allowed_any(&z, ALICE, HOST, CH_ACL_WRITE, CH_RES_TOPIC));
	add(s, acl(CH_RES_TOPIC, "*", CH_PAT_LITERAL, ALICE, "*", CH_ACL_WRITE, CH_PERM_DENY));
	CH_CHECK(!ch_authz_allowed_any(&z, ALICE, HOST, CH_ACL_WRITE, CH_RES_TOPIC));
	ch_acl_store_close(s);
}

static void
t_validation(void)
{
	char why[256];
	ch_acl a = acl(CH_RES_ANY, "t", CH_PAT_LITERAL, ALICE, "*", CH_ACL_READ, CH_PERM_ALLOW);
	CH_CHECK_EQ_STR(ch_acl_invalid(&a, why, sizeof(why)), "Invalid resourceType ANY");
	a.res_type = CH_RES_TOPIC;
	a.pattern = CH_PAT_MATCH;
	CH_CHECK_EQ_STR(ch_acl_invalid(&a, why, sizeof(why)), "Invalid patternType MATCH");
	a.pattern = CH_PAT_PREFIXED;
	a.op = CH_ACL_ANY;
	CH_CHECK_EQ_STR(ch_acl_invalid(&a, why, sizeof(why)), "Invalid operation ANY");
	a.op = CH_ACL_READ;
	a.perm = CH_PERM_ANY;
	CH_CHECK_EQ_STR(ch_acl_invalid(&a, why, sizeof(why)), "Invalid permissionType ANY");
	a.perm = CH_PERM_DENY;
	a.name = "";
	CH_CHECK(ch_acl_invalid(&a, why, sizeof(why)) != NULL);
	a.name = "t";
	a.principal = "alice";
	CH_CHECK(ch_acl_invalid(&a, why, sizeof(why)) != NULL);
	a.principal = ALICE;
	CH_CHECK(ch_acl_invalid(&a, why, sizeof(why)) == NULL);
	a.res_type = CH_RES_CLUSTER;
	CH_CHECK_EQ_STR(ch_acl_invalid(&a, why, sizeof(why)),
			"The only valid name for the CLUSTER resource is kafka-cluster");
	CH_CHECK_EQ_INT(ch_acl_op_code(99), CH_ACL_UNKNOWN);
	CH_CHECK_EQ_INT(ch_acl_op_parse("describe-configs"), CH_ACL_DESCRIBE_CONFIGS);
	CH_CHECK_EQ_INT(ch_acl_res_parse("Topic"), CH_RES_TOPIC);
	CH_CHECK_EQ_INT(ch_acl_res_parse("Topics"), -1);
}

static void
t_filters(void)
{
	ch_acl lit =
		acl(CH_RES_TOPIC, "orders", CH_PAT_LITERAL, ALICE, "*", CH_ACL_READ, CH_PERM_ALLOW);
	ch_acl star =
		acl(CH_RES_TOPIC, "*", CH_PAT_LITERAL, ALICE, "*", CH_ACL_READ, CH_PERM_ALLOW);
	ch_acl pre =
		acl(CH_RES_TOPIC, "ord", CH_PAT_PREFIXED, ALICE, "*", CH_ACL_READ, CH_PERM_ALLOW);
	ch_acl_filter any = {CH_RES_ANY, CH_PAT_ANY, CH_ACL_ANY, CH_PERM_ANY, NULL, NULL, NULL};
	CH_CHECK(ch_acl_filter_matches(&any, &lit) && ch_acl_filter_matches(&any, &pre));
	ch_acl_filter f = any;
	f.name = "orders";
	CH_CHECK(ch_acl_filter_matches(&f, &lit));
	CH_CHECK(!ch_acl_filter_matches(&f, &star) && !ch_acl_filter_matches(&f, &pre));
	f.pattern = CH_PAT_MATCH;
	CH_CHECK(ch_acl_filter_matches(&f, &lit) && ch_acl_filter_matches(&f, &star) &&
		 ch_acl_filter_matches(&f, &pre));
	f.pattern = CH_PAT_LITERAL;
	CH_CHECK(ch_acl_filter_matches(&f, &lit) && !ch_acl_filter_matches(&f, &pre));
	f.pattern = CH_PAT_PREFIXED;
	CH_CHECK(!ch_acl_filter_matches(&f, &pre)); /* PREFIXED compares names exactly */
	f = any;
	f.principal = BOB;
	CH_CHECK(!ch_acl_filter_matches(&f, &lit));
	f = any;
	f.op = CH_ACL_DESCRIBE; /* filters do not apply implications */
	CH_CHECK(!ch_acl_filter_matches(&f, &lit));
	f = any;
	f.res_type = CH_RES_UNKNOWN;
	CH_CHECK_EQ_STR(ch_acl_filter_invalid(&f), "Unknown patternFilter.");
	f = any;
	f.perm = CH_PERM_UNKNOWN;
	CH_CHECK_EQ_STR(ch_acl_filter_invalid(&f), "Unknown entryFilter.");
}

static void
count_removed(void *ud, size_t k, const ch_acl *a)
{
	int *n = ud;
	n[k]++;
	CH_CHECK(a->name != NULL);
}

static void
t_store_durable(void)
{
	ch_acl_store *s = fresh_store();
	ch_acl a =
		acl(CH_RES_GROUP, "g g\n", CH_PAT_LITERAL, ALICE, "*", CH_ACL_READ, CH_PERM_ALLOW);
	ch_acl b = acl(CH_RES_TOPIC, "t", CH_PAT_PREFIXED, "User:*", "10.1.2.3", CH_ACL_WRITE,
		       CH_PERM_DENY);
	ch_acl v[3] = {a, b, a};
	char err[256];
	CH_CHECK(ch_acl_store_add(s, v, 3, err, sizeof(err)) == 0);
	CH_CHECK_EQ_INT(ch_acl_store_count(s), 2); /* the same binding once */
	CH_CHECK(ch_acl_store_add(s, &b, 1, err, sizeof(err)) == 0);
	CH_CHECK_EQ_INT(ch_acl_store_count(s), 2);
	ch_acl_store_close(s);
	s = ch_acl_store_open(dir, err, sizeof(err));
	CH_CHECK(s && ch_acl_store_count(s) == 2);
	const ch_acl *r = s ? ch_acl_store_at(s, 0) : NULL;
	CH_CHECK(r && strcmp(r->name, "g g\n") == 0 && r->res_type == CH_RES_GROUP &&
		 r->op == CH_ACL_READ && r->perm == CH_PERM_ALLOW);
	r = s ? ch_acl_store_at(s, 1) : NULL;
	CH_CHECK(r && strcmp(r->host, "10.1.2.3") == 0 && r->pattern == CH_PAT_PREFIXED &&
		 strcmp(r->principal, "User:*") == 0 && r->perm == CH_PERM_DENY);
	/* Two filters, both matching the topic binding: reported under each. */
	ch_acl_filter fs[2] = {
		{CH_RES_TOPIC, CH_PAT_ANY, CH_ACL_ANY, CH_PERM_ANY, NULL, NULL, NULL},
		{CH_RES_ANY, CH_PAT_MATCH, CH_ACL_WRITE, CH_PERM_ANY, "tx", NULL, NULL},
	};
	int removed[2] = {0, 0};
	CH_CHECK(ch_acl_store_remove(s, fs, 2, count_removed, removed, err, sizeof(err)) == 0);
	CH_CHECK(removed[0] == 1 && removed[1] == 1);
	CH_CHECK_EQ_INT(ch_acl_store_count(s), 1);
	ch_acl_store_close(s);
	s = ch_acl_store_open(dir, err, sizeof(err));
	CH_CHECK(s && ch_acl_store_count(s) == 1);
	ch_acl_store_close(s);
	/* A line cohort did not write stops the open. */
	char *p = ch_path_join(dir, "acls");
	FILE *f = fopen(p, "a");
	fputs("TOPIC LITERAL dA== VXNlcjph Kg== READ MAYBE\n", f);
	fclose(f);
	free(p);
	err[0] = '\0';
	CH_CHECK(ch_acl_store_open(dir, err, sizeof(err)) == NULL);
	CH_CHECK(strstr(err, "acls:3: not an ACL line") != NULL);
}

CH_TEST_MAIN(CH_TEST(t_literal_and_default), CH_TEST(t_deny_wins), CH_TEST(t_prefixed),
	     CH_TEST(t_hosts_and_principals), CH_TEST(t_implications), CH_TEST(t_super_users),
	     CH_TEST(t_by_resource_type), CH_TEST(t_validation), CH_TEST(t_filters),
	     CH_TEST(t_store_durable))
