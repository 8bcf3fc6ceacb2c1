/*
 * lag_monitor: a consumer group's lag per partition: its committed offset,
 * the partition's end offset (the next offset to be written) and the
 * difference, as kafka-consumer-groups --describe prints them. It joins no
 * group: a consumer with the group's group.id that never subscribes only
 * reads the group's commits (OffsetFetch) and the end offsets (ListOffsets).
 *
 *   lag_monitor [-i SECONDS] BOOTSTRAP GROUP TOPIC [TOPIC...]
 *
 * One line per partition: "TOPIC PARTITION committed=C end=E lag=L", C and
 * L "-" when the group committed nothing there (Kafka's tool prints "-"
 * too). The committed offsets are read before the end offsets, which only
 * grow, so the lag is never negative; a commit past the end (possible with
 * an explicit offset) shows lag 0. -i repeats every SECONDS until SIGINT.
 */
#include <cohort/cohort.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* One report; 0 on success. */
static int
report(cohort_consumer *c, char **topics, int ntopics)
{
	for (int t = 0; t < ntopics; t++) {
		int32_t parts;
		cohort_err e = cohort_partitions_for(c, topics[t], &parts);
		if (e) {
			fprintf(stderr, "%s: %s\n", topics[t], cohort_err_str(e));
			return 1;
		}
		cohort_tp_offset *committed = calloc((size_t)parts + 1, sizeof(*committed));
		cohort_tp_offset *end = calloc((size_t)parts + 1, sizeof(*end));
		if (!committed || !end) {
			free(committed);
			free(end);
			return 1;
		}
		for (int32_t p = 0; p < parts; p++) {
			committed[p] = (cohort_tp_offset){topics[t], p, -1, 0};
			end[p] = committed[p];
		}
		/* committed first: the end offsets read after can only be larger */
		e = cohort_committed(c, committed, (size_t)parts);
		if (!e)
			e = cohort_end_offsets(c, end, (size_t)parts);
		for (int32_t p = 0; !e && p < parts; p++) {
			if (end[p].err) {
				printf("%s %d end=? (%s)\n", topics[t], p,
				       cohort_err_name(end[p].err));
				continue;
			}
			if (committed[p].offset < 0) {
				printf("%s %d committed=- end=%lld lag=-\n", topics[t], p,
				       (long long)end[p].offset);
				continue;
			}
			int64_t lag = end[p].offset - committed[p].offset;
			printf("%s %d committed=%lld end=%lld lag=%lld\n", topics[t], p,
			       (long long)committed[p].offset, (long long)end[p].offset,
			       (long long)(lag > 0 ? lag : 0));
		}
		free(committed);
		free(end);
		if (e) {
			fprintf(stderr, "%s: %s\n", topics[t], cohort_err_str(e));
			return 1;
		}
	}
	fflush(stdout);
	return 0;
}

int
main(int argc, char **argv)
{
	int interval = 0, opt;
	while ((opt = getopt(argc, argv, "i:")) != -1) {
		if (opt != 'i') {
			fprintf(stderr, "usage: %s [-i SECONDS] BOOTSTRAP GROUP TOPIC...\n",
				argv[0]);
			return 2;
		}
		interval = atoi(optarg);
	}
	if (argc - optind < 3) {
		fprintf(stderr, "usage: %s [-i SECONDS] BOOTSTRAP GROUP TOPIC...\n", argv[0]);
		return 2;
	}
	char err[512];
	cohort_conf *conf = cohort_conf_new();
	if (!conf)
		return 1;
	if (cohort_conf_set(conf, "bootstrap.servers", argv[optind], err, sizeof(err)) ||
	    cohort_conf_set(conf, "group.id", argv[optind + 1], err, sizeof(err)) ||
	    cohort_conf_set(conf, "allow.auto.create.topics", "false", err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	cohort_consumer *c = cohort_consumer_new(conf, err, sizeof(err));
	cohort_conf_free(conf);
	if (!c) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	int rc;
	do {
		rc = report(c, argv + optind + 2, argc - optind - 2);
		for (int s = 0; interval && s < interval * 10 && !stop; s++)
			usleep(100 * 1000);
	} while (interval && !stop && rc == 0);
	cohort_consumer_close(c);
	cohort_consumer_free(c);
	return rc;
}
