/*
 * cohort_producer: a libcohort producer driven over stdin/stdout by the
 * integration tests (test_client_libcohort_producer.py).
 *
 *   cohort_producer BOOTSTRAP [key=value ...]     (producer configuration)
 *
 * Commands, one per line on stdin (tokens separated by spaces; "-" is a
 * null key or value, "~" an empty one):
 *   P TOPIC PARTITION KEY VALUE [HKEY=HVAL ...]   produce one record
 *   G TOPIC PARTITION N SIZE KEYPREFIX            produce N records, key
 *        KEYPREFIX<i> ("-": null keys), value "<i>:" padded to SIZE bytes
 *   F TIMEOUT_MS                                  flush
 *   T TIMESTAMP                                   timestamp for the next P
 *   Q                                             poll(0)
 * Every record gets a sequence number (from 0, in produce order). Output:
 *   E SEQ ERRNAME              cohort_produce refused it (no report comes)
 *   D SEQ PARTITION OFFSET ERRNAME TIMESTAMP    its delivery report
 *   FLUSHED ERRNAME
 *   CLOSED ERRNAME             at end of input, after cohort_producer_close
 */
#include <cohort/cohort.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
on_delivery(cohort_producer *p, const cohort_delivery *d, void *opaque)
{
	(void)p;
	(void)opaque;
	printf("D %lld %d %lld %s %lld\n", (long long)(intptr_t)d->opaque, d->partition,
	       (long long)d->offset, cohort_err_name(d->err), (long long)d->timestamp);
}

/* A "-" token is NULL, "~" is "", anything else itself. */
static const char *
tok_value(const char *t)
{
	if (strcmp(t, "-") == 0)
		return NULL;
	if (strcmp(t, "~") == 0)
		return "";
	return t;
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: cohort_producer BOOTSTRAP [key=value ...]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	char err[512];
	cohort_conf *conf = cohort_conf_new();
	if (cohort_conf_set(conf, "bootstrap.servers", argv[1], err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (!eq) {
			fprintf(stderr, "bad setting %s\n", argv[i]);
			return 2;
		}
		*eq = 0;
		if (cohort_conf_set(conf, argv[i], eq + 1, err, sizeof(err))) {
			printf("CONF %s\n", err);
			return 3;
		}
	}
	cohort_conf_set_delivery_cb(conf, on_delivery, NULL);
	cohort_producer *p = cohort_producer_new(conf, err, sizeof(err));
	cohort_conf_free(conf);
	if (!p) {
		printf("NEW %s\n", err);
		return 3;
	}
	printf("READY\n");
	char line[65536];
	long long seq = 0;
	int64_t ts = COHORT_TIMESTAMP_NOW;
	char *value = NULL;
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		char *save = NULL;
		char *cmd = strtok_r(line, " ", &save);
		if (!cmd)
			continue;
		if (strcmp(cmd, "P") == 0) {
			char *topic = strtok_r(NULL, " ", &save);
			char *part = strtok_r(NULL, " ", &save);
			char *key = strtok_r(NULL, " ", &save);
			char *val = strtok_r(NULL, " ", &save);
			if (!topic || !part || !key || !val) {
				fprintf(stderr, "bad P line\n");
				return 2;
			}
			cohort_header h[16];
			size_t nh = 0;
			char *ht;
			while (nh < 16 && (ht = strtok_r(NULL, " ", &save))) {
				char *eq = strchr(ht, '=');
				if (eq)
					*eq = 0;
				h[nh].key = ht;
				h[nh].value = eq ? tok_value(eq + 1) : NULL;
				h[nh].value_len = h[nh].value ? (int32_t)strlen(h[nh].value) : 0;
				nh++;
			}
			const char *k = tok_value(key), *v = tok_value(val);
			cohort_err e = cohort_produce(p, topic, atoi(part), k, k ? strlen(k) : 0, v,
						      v ? strlen(v) : 0, nh ? h : NULL, nh, ts,
						      (void *)(intptr_t)seq);
			if (e)
				printf("E %lld %s\n", seq, cohort_err_name(e));
			seq++;
			ts = COHORT_TIMESTAMP_NOW;
		} else if (strcmp(cmd, "G") == 0) {
			char *topic = strtok_r(NULL, " ", &save);
			char *part = strtok_r(NULL, " ", &save);
			char *n = strtok_r(NULL, " ", &save);
			char *size = strtok_r(NULL, " ", &save);
			char *prefix = strtok_r(NULL, " ", &save);
			if (!topic || !part || !n || !size || !prefix) {
				fprintf(stderr, "bad G line\n");
				return 2;
			}
			size_t sz = (size_t)atol(size);
			value = realloc(value, sz + 32);
			for (long i = 0, cnt = atol(n); i < cnt; i++) {
				char key[256];
				int kl = snprintf(key, sizeof(key), "%s%ld", prefix, i);
				int vl = snprintf(value, sz + 32, "%ld:", i);
				if ((size_t)vl < sz) {
					memset(value + vl, 'a' + (int)(i % 26), sz - (size_t)vl);
					vl = (int)sz;
				}
				bool nokey = strcmp(prefix, "-") == 0;
				cohort_err e = cohort_produce(
					p, topic, atoi(part), nokey ? NULL : key,
					nokey ? 0 : (size_t)kl, value, (size_t)vl, NULL, 0,
					COHORT_TIMESTAMP_NOW, (void *)(intptr_t)seq);
				if (e)
					printf("E %lld %s\n", seq, cohort_err_name(e));
				seq++;
				cohort_producer_poll(p, 0);
			}
		} else if (strcmp(cmd, "F") == 0) {
			char *t = strtok_r(NULL, " ", &save);
			printf("FLUSHED %s\n", cohort_err_name(cohort_flush(p, t ? atoi(t) : -1)));
		} else if (strcmp(cmd, "T") == 0) {
			char *t = strtok_r(NULL, " ", &save);
			ts = t ? atoll(t) : COHORT_TIMESTAMP_NOW;
		} else if (strcmp(cmd, "Q") == 0) {
			cohort_producer_poll(p, 0);
		}
	}
	free(value);
	printf("CLOSED %s\n", cohort_err_name(cohort_producer_close(p, 60000)));
	cohort_producer_free(p);
	return 0;
}
