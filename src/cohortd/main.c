/*
 * cohortd: the broker process. The shell around the pure layers: reads the
 * configuration, opens the data directory, wires the network server to the
 * api layer, runs the event loop, and shuts down cleanly on SIGTERM/SIGINT.
 *
 *   cohortd [-c FILE] [--set key=value ...]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/ch_api.h"
#include "auth/ch_plain.h"
#include "auth/ch_authz.h"
#include "auth/ch_scram_store.h"
#include "broker/ch_broker.h"
#include "cohortd/admin.h"
#include "cohortd/coord_shell.h"
#include "group/ch_coord_cg.h"
#include "common/ch_common.h"
#include "common/ch_log.h"
#include "config/ch_config.h"
#include "meta/ch_topics.h"
#include "event/ch_loop.h"
#include "net/ch_server.h"
#include "quota/ch_quota_store.h"
#include "net/ch_tls.h"

#define COHORT_VERSION "0.1.0"

typedef struct cohortd {
	ch_loop *loop;
	ch_server *server;
	ch_tls_ctx **tls; /* per listener, NULL for plaintext ones */
	ch_broker bk;
	int signals;
} cohortd;

/* The command line's help text. */
static void
usage(FILE *f)
{
	fprintf(f, "usage: cohortd [-c FILE] [--set key=value ...]\n"
		   "  -c, --config FILE     read a server.properties-style file\n"
		   "  --set key=value       override one setting (after the file)\n"
		   "  --add-scram SPEC      add or replace a SCRAM user before serving, as\n"
		   "                        kafka-storage format does it:\n"
		   "                        'SCRAM-SHA-512=[name=alice,password=alice-secret]'\n"
		   "  --version             print the version\n"
		   "  -h, --help            this text\n"
		   "Settings use Apache Kafka's names (listeners, log.dirs, num.partitions, ...);\n"
		   "see README.md for the table. Defaults: listeners=PLAINTEXT://127.0.0.1:9092,\n"
		   "log.dirs=./data.\n");
}

/* ---- the shell's side of the api layer ------------------------------------ */

/* ch_broker.reply: a finished response buffer's bytes (or NULL, no
 * response) go to the connection's order queue; a small one is copied
 * (resp keeps its memory for the next answer). */
static void
shell_reply(void *shell, void *conn, uint64_t seq, ch_buf *resp)
{
	(void)shell;
	ch_conn_respond(conn, seq, resp ? ch_resp_from_small_buf(resp) : NULL);
}

static void
shell_reply_resp(void *shell, void *conn, uint64_t seq, ch_resp *resp)
{
	(void)shell;
	ch_conn_respond(conn, seq, resp);
}

/* ch_broker.close: tears the connection down, then settles request seq with no response, which
 * drops the request's reference on conn (it may be freed then). */
static void
shell_close(void *shell, void *conn, uint64_t seq)
{
	(void)shell;
	ch_conn_close(conn);
	ch_conn_respond(conn, seq, NULL);
}

static int64_t
shell_now(void *shell)
{
	return ch_loop_now(((cohortd *)shell)->loop);
}

static int64_t
shell_wall(void *shell)
{
	(void)shell;
	return ch_now_wall_ms();
}

static void
on_request(void *ud, ch_conn *c, uint64_t seq, const uint8_t *frame, size_t len)
{
	cohortd *d = ud;
	ch_api_on_frame(&d->bk, c, seq, ch_conn_peer(c), frame, len, ch_loop_now(d->loop));
}

/* ch_server_opts.limits: the connection limits from the configuration as it
 * is now (max.connections and the per-IP ones change dynamically). */
static void
conn_limits(void *ud, int tag, const char *ip, ch_conn_limits *out)
{
	const struct ch_config *cfg = ((cohortd *)ud)->bk.cfg;
	if (!cfg)
		return; /* not open yet: no connection is served before */
	out->max_connections = cfg->max_connections;
	out->max_listener_connections = cfg->listener_sec[tag].max_connections;
	out->max_creation_rate = cfg->max_connection_creation_rate;
	if (ip)
		out->max_per_ip = ch_config_max_connections_per_ip(cfg, ip);
}

/* ch_server_opts.ip_throttle: an ip entity's connection_creation_rate. */
static int64_t
conn_ip_throttle(void *ud, const char *ip)
{
	cohortd *d = ud;
	return ch_quotas_connection(d->bk.quotas, ip, ch_loop_now(d->loop));
}

/* ---- per-connection sessions (listener, principal, SASL) ------------------- */

static void
on_open(void *ud, ch_conn *c)
{
	cohortd *d = ud;
	int l = ch_conn_listener(c);
	ch_conn_set_ud(c, ch_api_session_new(&d->bk, l));
	ch_security_protocol p = d->bk.cfg->listener_sec[l].protocol;
	if (p == CH_SEC_SASL_PLAINTEXT || p == CH_SEC_SASL_SSL)
		ch_conn_set_max_request(c, d->bk.cfg->listener_sec[l].sasl_server_max_receive_size);
}

static void
on_close(void *ud, ch_conn *c)
{
	(void)ud;
	ch_api_session_free(ch_conn_get_ud(c));
	ch_conn_set_ud(c, NULL);
}

/* ch_broker.session: the connection's, with the TLS principal brought up to
 * date (the handshake finishes after the connection opened). */
static struct ch_api_session *
shell_session(void *shell, void *conn)
{
	(void)shell;
	ch_api_session *s = ch_conn_get_ud(conn);
	if (s)
		ch_api_session_set_principal(s, ch_conn_principal(conn));
	return s;
}

static void
shell_authenticated(void *shell, void *conn, const char *principal)
{
	(void)shell;
	ch_conn_set_principal(conn, principal);
	ch_conn_set_max_request(conn, 0);
}

static void
shell_close_later(void *shell, void *conn, int64_t delay_ms)
{
	(void)shell;
	ch_conn_close_later(conn, delay_ms);
}

static void
shell_throttle(void *shell, void *conn, int32_t ms)
{
	(void)shell;
	ch_conn_throttle(conn, ms);
}

/* Each SASL listener's PLAIN users from its plain.sasl.jaas.config (a SASL
 * listener with PLAIN enabled must have one, as Kafka's broker must). CH_ERR:
 * a message on stderr naming the key. */
static int
plain_users_load(const struct ch_config *cfg, ch_plain_users *out)
{
	for (size_t i = 0; i < cfg->nlisteners; i++) {
		const ch_listener_sec *ls = &cfg->listener_sec[i];
		bool sasl =
			ls->protocol == CH_SEC_SASL_PLAINTEXT || ls->protocol == CH_SEC_SASL_SSL;
		if (!sasl || !(ls->sasl_mechanisms & CH_SASL_PLAIN))
			continue;
		char key[128], why[256];
		snprintf(key, sizeof(key), "listener.name.%s.plain.sasl.jaas.config",
			 cfg->listeners[i].name);
		for (char *p = key; *p; p++)
			*p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
		if (!ls->plain_jaas) {
			fprintf(stderr,
				"cohortd: configuration error: listener %s enables PLAIN but %s is "
				"not set\n",
				cfg->listeners[i].name, key);
			return CH_ERR;
		}
		if (ch_plain_users_parse(ls->plain_jaas, &out[i], why, sizeof(why)) != 0) {
			fprintf(stderr, "cohortd: configuration error: invalid value for %s: %s\n",
				key, why);
			return CH_ERR;
		}
	}
	return CH_OK;
}

/* --add-scram: each SPEC parsed and stored (durably) before serving. CH_ERR:
 * a message on stderr. */
static int
add_scram_users(ch_scram_store *st, const char **specs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char user[CH_SCRAM_NAME_MAX], why[256];
		ch_scram_cred cred;
		if (ch_scram_parse_add(specs[i], user, sizeof(user), &cred, why, sizeof(why)) !=
		    0) {
			fprintf(stderr, "cohortd: --add-scram: %s\n", why);
			return CH_ERR;
		}
		if (ch_scram_store_set(st, user, &cred, why, sizeof(why)) != 0) {
			fprintf(stderr, "cohortd: --add-scram: %s\n", why);
			return CH_ERR;
		}
		CH_LOGI("cohortd", "SCRAM credential for %s (%s, %d iterations) stored", user,
			ch_scram_mech_name(cred.mech), (int)cred.iterations);
	}
	return CH_OK;
}

/* Binds every listener after the first (the server's own), tag = index in
 * cfg->listeners. CH_ERR: a message on stderr. */
static int
listen_rest(cohortd *d, const struct ch_config *cfg)
{
	for (size_t i = 1; i < cfg->nlisteners; i++) {
		char why[256] = "unknown error";
		const ch_listener *l = &cfg->listeners[i];
		if (ch_server_listen(d->server, l->host, l->port, (int)i, d->tls[i], why,
				     sizeof(why)) != CH_OK) {
			fprintf(stderr, "cohortd: cannot listen on %s://%s:%d: %s\n", l->name,
				l->host, l->port, why);
			return CH_ERR;
		}
	}
	return CH_OK;
}

/* SIGTERM or SIGINT: logs the first one received and asks the loop to stop (main shuts down
 * once ch_loop_run returns). */
static void
on_signal(ch_loop *loop, int signo, void *ud)
{
	cohortd *d = ud;
	if (d->signals++ == 0)
		CH_LOGI("cohortd", "received %s, shutting down", strsignal(signo));
	ch_loop_stop(loop);
}

/* Every exit after the arguments are read leaves through `out`, which frees
 * what was built so far in the reverse order (each free takes NULL or a
 * zeroed object): an error exit leaks nothing under LeakSanitizer. Exit
 * codes: 0 after a clean stop, 2 for bad arguments or configuration (and
 * state on disk that does not load), 1 when the system refuses (memory, a
 * listen that fails, the data directory). */
int
main(int argc, char **argv)
{
	int rc = 0;
	const char *config_path = NULL;
	const char **sets = calloc((size_t)argc, sizeof(*sets));
	const char **scrams = calloc((size_t)argc, sizeof(*scrams));
	size_t nsets = 0, nscrams = 0;
	char err[512];
	char listen_err[256] = "unknown error";
	static struct ch_config cfg;
	static ch_plain_users plain[CH_LISTENERS_MAX];
	static ch_tls_ctx *tls[CH_LISTENERS_MAX];
	static cohortd d;
	admin *adm = NULL;
	coord_shell *coord = NULL;
	bool broker_open = false;
	if (!sets || !scrams) {
		rc = 1;
		goto out;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-c") || !strcmp(a, "--config")) {
			if (++i >= argc) {
				fprintf(stderr, "cohortd: %s needs a file name\n", a);
				rc = 2;
				goto out;
			}
			config_path = argv[i];
		} else if (!strncmp(a, "--config=", 9)) {
			config_path = a + 9;
		} else if (!strcmp(a, "--set")) {
			if (++i >= argc) {
				fprintf(stderr, "cohortd: --set needs key=value\n");
				rc = 2;
				goto out;
			}
			sets[nsets++] = argv[i];
		} else if (!strncmp(a, "--set=", 6)) {
			sets[nsets++] = a + 6;
		} else if (!strcmp(a, "--add-scram") || !strcmp(a, "-S")) {
			if (++i >= argc) {
				fprintf(stderr, "cohortd: %s needs a SCRAM specification\n", a);
				rc = 2;
				goto out;
			}
			scrams[nscrams++] = argv[i];
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			goto out;
		} else if (!strcmp(a, "--version")) {
			printf("cohortd %s\n", COHORT_VERSION);
			goto out;
		} else {
			fprintf(stderr, "cohortd: unknown argument '%s'\n", a);
			usage(stderr);
			rc = 2;
			goto out;
		}
	}

	if (ch_config_load(&cfg, config_path, sets, nsets, err, sizeof(err)) != CH_OK) {
		fprintf(stderr, "cohortd: configuration error: %s\n", err);
		rc = 2;
		goto out;
	}
	if (plain_users_load(&cfg, plain) != CH_OK) {
		rc = 2;
		goto out;
	}
	/* TLS contexts: a key store that does not load stops startup naming the key. */
	for (size_t i = 0; i < cfg.nlisteners; i++) {
		ch_security_protocol p = cfg.listener_sec[i].protocol;
		if (p != CH_SEC_SSL && p != CH_SEC_SASL_SSL)
			continue;
		tls[i] = ch_tls_ctx_new(&cfg.listener_sec[i], cfg.listeners[i].name, err,
					sizeof(err));
		if (!tls[i]) {
			fprintf(stderr, "cohortd: configuration error: %s\n", err);
			rc = 2;
			goto out;
		}
	}
	ch_coord_cg_config cgc;
	if (coord_shell_consumer_config(&cfg, &cgc, err, sizeof(err)) != 0) {
		fprintf(stderr, "cohortd: configuration error: %s\n", err);
		rc = 2;
		goto out;
	}
	ch_log_threshold = cfg.log_level;
	signal(SIGPIPE, SIG_IGN);

	d.tls = tls;
	d.loop = ch_loop_new();
	if (!d.loop) {
		rc = 1;
		goto out;
	}

	ch_server_opts o;
	ch_server_opts_init(&o);
	o.host = cfg.listener.host;
	o.port = cfg.listener.port;
	o.tls = tls[0];
	o.max_request_bytes = cfg.socket_request_max_bytes;
	o.idle_ms = cfg.connections_max_idle_ms;
	o.max_request_memory = cfg.queued_max_request_bytes;
	o.request_receive_timeout_ms = cfg.socket_request_receive_timeout_ms;
	o.limits = conn_limits;
	o.ip_throttle = conn_ip_throttle;
	o.on_request = on_request;
	o.on_open = on_open;
	o.on_close = on_close;
	o.ud = &d;
	o.err = listen_err;
	o.errlen = sizeof(listen_err);
	d.server = ch_server_new(d.loop, &o);
	if (!d.server) {
		fprintf(stderr, "cohortd: cannot listen on %s:%d: %s\n", cfg.listener.host,
			cfg.listener.port, listen_err);
		rc = 1;
		goto out;
	}
	if (listen_rest(&d, &cfg) != CH_OK) {
		rc = 1;
		goto out;
	}
	ch_loop_on_signal(d.loop, SIGTERM, on_signal, &d);
	ch_loop_on_signal(d.loop, SIGINT, on_signal, &d);
	/* The admin HTTP listener (admin.listeners), bound now like the Kafka
	 * one (a bind failure stops startup), after the signal setup: it starts
	 * libmicrohttpd's thread. Its pages run once the loop does. */
	if (cfg.admin_enabled) {
		admin_sources src = {&d.bk, d.server, d.loop};
		adm = admin_start(&cfg.admin_listener, &src, listen_err, sizeof(listen_err));
		if (!adm) {
			fprintf(stderr,
				"cohortd: cannot listen on admin.listeners http://%s:%d: %s\n",
				cfg.admin_listener.host, cfg.admin_listener.port, listen_err);
			rc = 1;
			goto out;
		}
	}

	/* The registry and the partition logs (after the signal setup: the
	 * log manager starts threads). */
	ch_broker_shell sh = {&d,
			      shell_reply,
			      shell_close,
			      shell_now,
			      shell_wall,
			      shell_reply_resp,
			      shell_session,
			      shell_authenticated,
			      shell_close_later,
			      shell_throttle};
	if (ch_broker_open(&d.bk, &cfg, d.loop, &sh, err, sizeof(err)) != CH_OK) {
		fprintf(stderr, "cohortd: cannot open data directory: %s\n", err);
		rc = 1;
		goto out;
	}
	broker_open = true;
	/* SCRAM credentials (the data directory is there now), the users of
	 * --add-scram and the client quotas, before anyone can connect. */
	d.bk.scram = ch_scram_store_open(cfg.log_dir, err, sizeof(err));
	if (!d.bk.scram) {
		fprintf(stderr, "cohortd: cannot read SCRAM credentials: %s\n", err);
		rc = 2;
		goto out;
	}
	if (add_scram_users(d.bk.scram, scrams, nscrams) != CH_OK) {
		rc = 2;
		goto out;
	}
	d.bk.quotas = ch_quotas_new();
	if (ch_quotas_load(d.bk.quotas, cfg.log_dir, err, sizeof(err)) != 0) {
		fprintf(stderr, "cohortd: cannot read client quotas: %s\n", err);
		rc = 2;
		goto out;
	}
	/* The ACLs, when the authorizer is on (auth/ch_authz.h). */
	if (cfg.authorizer_enabled &&
	    !(d.bk.acls = ch_acl_store_open(cfg.log_dir, err, sizeof(err)))) {
		fprintf(stderr, "cohortd: cannot read ACLs: %s\n", err);
		rc = 2;
		goto out;
	}
	for (size_t i = 0; i < cfg.nlisteners; i++)
		d.bk.plain_users[i] = &plain[i];
	/* Port 0 (ephemeral) advertises the bound port. */
	if (!d.bk.adv_port)
		d.bk.adv_port = ch_server_port(d.server);
	for (size_t i = 0; i < cfg.nlisteners; i++)
		if (!d.bk.adv_ports[i])
			d.bk.adv_ports[i] = ch_server_listener_port(d.server, (int)i);
	CH_LOGI("cohortd",
		"cohortd %s listening on %s:%d (node.id %d, cluster.id %s, log.dirs %s, "
		"%zu topics)",
		COHORT_VERSION, cfg.listener.host, ch_server_port(d.server), cfg.node_id,
		d.bk.cluster_id, cfg.log_dir, ch_topics_count(d.bk.topics));
	/* The group coordinator: replays __consumer_offsets before serving. */
	coord = coord_shell_start(d.loop, &d.bk, d.bk.logs);
	if (adm)
		CH_LOGI("cohortd", "admin API on http://%s:%d", cfg.admin_listener.host,
			admin_port(adm));
	ch_loop_run(d.loop);

	/* Shutdown order: stop accepting; answer parked group requests and
	 * stop the coordinator's timers; let the log manager finish or
	 * fail pending appends (their callbacks still reach the coordinator);
	 * then free the rest. */
	ch_server_stop(d.server);
	admin_stop(adm);
	adm = NULL;
	ch_coord_shutdown(d.bk.coord);
	coord_shell_quiesce(coord);
	ch_broker_close(&d.bk);
	broker_open = false;
	coord_shell_stop(coord);
	CH_LOGI("cohortd", "stopped after %llu requests (%llu rejected)",
		(unsigned long long)d.bk.n_requests, (unsigned long long)d.bk.n_rejected);
out:
	admin_stop(adm);
	if (broker_open)
		ch_broker_close(&d.bk);
	ch_scram_store_close(d.bk.scram);
	ch_quotas_free(d.bk.quotas);
	ch_acl_store_close(d.bk.acls);
	ch_server_free(d.server);
	ch_loop_free(d.loop);
	for (size_t i = 0; i < CH_LISTENERS_MAX; i++) {
		ch_plain_users_free(&plain[i]);
		ch_tls_ctx_free(tls[i]);
	}
	ch_config_free(&cfg);
	free(sets);
	free(scrams);
	return rc;
}
