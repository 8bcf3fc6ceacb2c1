/*
 * producer: a libcohort producer that sends each line of stdin as a record
 * ("key<TAB>value" gives the record a key, so equal keys land on one
 * partition, where Java's producer would put them) and prints each
 * delivery report.
 *
 *   producer BOOTSTRAP TOPIC [key=value ...]     (producer settings)
 *
 * e.g. `seq 10 | producer 127.0.0.1:9092 demo compression.type=zstd`.
 * Idempotence is on by default (acks=all): retries after a lost
 * connection neither duplicate nor reorder records. End of input flushes
 * and closes.
 */
#include <cohort/cohort.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
delivered(cohort_producer *p, const cohort_delivery *d, void *opaque)
{
	(void)p;
	(void)opaque;
	if (d->err)
		fprintf(stderr, "line %ld: %s\n", (long)(intptr_t)d->opaque,
			cohort_err_str(d->err));
	else
		printf("line %ld -> %s [%d] @ %lld\n", (long)(intptr_t)d->opaque, d->topic,
		       d->partition, (long long)d->offset);
}

int
main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: producer BOOTSTRAP TOPIC [key=value ...]\n");
		return 2;
	}
	char err[512];
	cohort_conf *conf = cohort_conf_new();
	if (cohort_conf_set(conf, "bootstrap.servers", argv[1], err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	for (int i = 3; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (eq)
			*eq = 0;
		if (!eq || cohort_conf_set(conf, argv[i], eq + 1, err, sizeof(err))) {
			fprintf(stderr, "%s\n", eq ? err : "settings are key=value");
			return 2;
		}
	}
	cohort_conf_set_delivery_cb(conf, delivered, NULL);
	cohort_producer *p = cohort_producer_new(conf, err, sizeof(err));
	cohort_conf_free(conf);
	if (!p) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	char line[65536];
	long n = 0;
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		char *tab = strchr(line, '\t');
		const char *key = tab ? line : NULL;
		const char *value = tab ? tab + 1 : line;
		if (tab)
			*tab = 0;
		cohort_err e = cohort_produce(p, argv[2], COHORT_PARTITION_ANY, key,
					      key ? strlen(key) : 0, value, strlen(value), NULL, 0,
					      COHORT_TIMESTAMP_NOW, (void *)(intptr_t)++n);
		if (e)
			fprintf(stderr, "line %ld: %s\n", n, cohort_err_str(e));
		cohort_producer_poll(p, 0); /* reports that are due */
	}
	cohort_err e = cohort_producer_close(p, -1); /* flushes, runs the last reports */
	cohort_producer_free(p);
	return e ? 1 : 0;
}
