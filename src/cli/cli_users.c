/*
 * cli_users.c: `cohort users list | set | delete`, the SCRAM users of the
 * cluster (KIP-554), on libcohort's admin calls. set salts and hashes the
 * password here, as Kafka's admin client does (the broker never sees it):
 * a random 32-byte salt, PBKDF2-HMAC with the mechanism's hash (libcrypto).
 * Text only (cli_json.json lists them under no_json): --json is ignored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "cli/cli.h"

static const char *
mech_name(int m)
{
	return m == COHORT_SCRAM_SHA_256   ? "SCRAM-SHA-256"
	       : m == COHORT_SCRAM_SHA_512 ? "SCRAM-SHA-512"
					   : "UNKNOWN";
}

/* --mechanism (default SCRAM-SHA-512) as Kafka's type; 0 if it names none. */
static int
mech_opt(const cli_args *a)
{
	const char *m = cli_opt_get(a, "mechanism");
	if (!m || strcmp(m, "SCRAM-SHA-512") == 0)
		return COHORT_SCRAM_SHA_512;
	return strcmp(m, "SCRAM-SHA-256") == 0 ? COHORT_SCRAM_SHA_256 : 0;
}

static const cli_opt list_opts[] = {{NULL, NULL, NULL, false}};

static int
run_list(cli_args *a)
{
	cohort_scram_users *u = NULL;
	cohort_err e = cohort_admin_describe_scram_users(a->admin, a->pos, (size_t)a->npos,
							 a->timeout_ms, &u);
	if (e)
		return cli_fail(cli_status(e), "users list: %s", cohort_err_str(e));
	int rc = CLI_OK;
	static const char *const hdr[] = {"USER", "MECHANISM", "ITERATIONS"};
	cli_table *t = cli_table_new(hdr, 3);
	for (size_t i = 0; i < u->users_n; i++) {
		const cohort_scram_user *x = &u->users[i];
		if (x->err) {
			rc = cli_fail(cli_status(x->err), "users list: user '%s': %s%s%s", x->name,
				      cohort_err_str(x->err), x->errmsg ? ": " : "",
				      x->errmsg ? x->errmsg : "");
			continue;
		}
		for (size_t k = 0; k < x->creds_n; k++) {
			char it[16];
			snprintf(it, sizeof(it), "%d", (int)x->creds[k].iterations);
			const char *row[] = {x->name, mech_name(x->creds[k].mechanism), it};
			cli_table_add(t, row);
		}
	}
	cli_table_print(t, stdout);
	cli_table_free(t);
	cohort_scram_users_free(u);
	return rc;
}

static const cli_opt set_opts[] = {
	{"password", "PASSWORD", "the user's password (required)", false},
	{"mechanism", "MECH", "SCRAM-SHA-512 (default) or SCRAM-SHA-256", false},
	{"iterations", "N", "PBKDF2 iterations, 4096 (default) to 16384", false},
	{NULL, NULL, NULL, false},
};

/* One alteration for the user; prints the outcome. */
static int
alter_one(cli_args *a, const char *cmd, cohort_scram_alteration *x)
{
	cohort_err e = cohort_admin_alter_scram_users(a->admin, x, 1, a->timeout_ms);
	if (e)
		return cli_fail(cli_status(e), "%s: user '%s': %s%s%s", cmd, x->user,
				cohort_err_str(e), x->errmsg[0] ? ": " : "", x->errmsg);
	printf("%s %s credential of user %s.\n", x->iterations ? "Set" : "Deleted",
	       mech_name(x->mechanism), x->user);
	return CLI_OK;
}

static int
run_set(cli_args *a)
{
	const char *pw = cli_opt_get(a, "password");
	int mech = mech_opt(a);
	int64_t it;
	if (!pw || !*pw)
		return cli_fail(CLI_EUSAGE, "users set: --password is required");
	if (!mech)
		return cli_fail(CLI_EUSAGE,
				"users set: --mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512");
	if (cli_opt_int(a, "iterations", 4096, 16384, 4096, &it) != 0)
		return CLI_EUSAGE;
	uint8_t salt[32], salted[64];
	const EVP_MD *md = mech == COHORT_SCRAM_SHA_256 ? EVP_sha256() : EVP_sha512();
	int kl = EVP_MD_get_size(md);
	if (RAND_bytes(salt, sizeof(salt)) != 1 ||
	    PKCS5_PBKDF2_HMAC(pw, (int)strlen(pw), salt, sizeof(salt), (int)it, md, kl, salted) !=
		    1)
		return cli_fail(CLI_EFAIL, "users set: could not hash the password (libcrypto)");
	cohort_scram_alteration x = {.user = a->pos[0],
				     .mechanism = mech,
				     .iterations = (int32_t)it,
				     .salt = salt,
				     .salt_len = sizeof(salt),
				     .salted_password = salted,
				     .salted_password_len = (size_t)kl};
	int rc = alter_one(a, "users set", &x);
	OPENSSL_cleanse(salted, sizeof(salted));
	return rc;
}

static const cli_opt delete_opts[] = {
	{"mechanism", "MECH", "SCRAM-SHA-512 (default) or SCRAM-SHA-256", false},
	{NULL, NULL, NULL, false},
};

static int
run_delete(cli_args *a)
{
	int mech = mech_opt(a);
	if (!mech)
		return cli_fail(CLI_EUSAGE,
				"users delete: --mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512");
	cohort_scram_alteration x = {.user = a->pos[0], .mechanism = mech, .iterations = 0};
	return alter_one(a, "users delete", &x);
}

const cli_command cli_users_list_cmd = {
	"users list", "[USER...]", "SCRAM users and their mechanisms (all, or those named)",
	list_opts,    0,           CLI_MAX_POS,
	run_list,     true};
const cli_command cli_users_set_cmd = {
	"users set", "USER", "add or change a user's SCRAM credential (salted and hashed here)",
	set_opts,    1,      1,
	run_set,     true};
const cli_command cli_users_delete_cmd = {
	"users delete", "USER", "remove a user's SCRAM credential for one mechanism",
	delete_opts,    1,      1,
	run_delete,     true};
