/*
 * cg_assign_bench.c: what one target assignment costs the coordinator's
 * thread (ch_coord_cg_update_target with its input building and result
 * copying, and the heartbeat around it), not the assignor alone
 * (bench/assign): the figures that set group.consumer.assignor.offload.min.partitions.
 *
 *   group_cg_assign_bench MEMBERS PARTITIONS
 *
 * MEMBERS join a group subscribed to a topic that does not exist yet (each
 * join's assignment is empty and cheap), then the topic appears with
 * PARTITIONS partitions: the next heartbeat computes the first assignment
 * ("fresh"); one member more joins ("join", sticky from the previous
 * target). Times are wall clock around one heartbeat each.
 */
#include <time.h>

#include "cg_shell.h"

static double
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int
main(int argc, char **argv)
{
	if (argc != 3 || atoi(argv[1]) < 1 || atoi(argv[2]) < 1) {
		fprintf(stderr, "usage: group_cg_assign_bench MEMBERS PARTITIONS\n");
		return 2;
	}
	int32_t nm = atoi(argv[1]), np = atoi(argv[2]);
	ch_coord_cg_config cfg;
	ch_coord_cg_config_defaults(&cfg);
	cfg.assignor_offload = false; /* always on this thread */
	cfg.assignment_interval_ms = 0;
	cg_shell sh;
	cg_shell_init(&sh, &cfg, 1);
	hb h;
	char id[32];
	for (int32_t i = 0; i < nm; i++) {
		snprintf(id, sizeof id, "member-%06d", i);
		cg_shell_heartbeat(&sh, 0, 1, &hb_join(&h, "g", id, "t")->r);
	}
	cg_shell_add_topic(&sh, "t", np);
	ch_coord_cg_metadata_changed(sh.cg);
	snprintf(id, sizeof id, "member-%06d", nm - 1);
	double t0 = now_ms();
	cg_shell_heartbeat(&sh, 1, 1, &hb_beat(&h, "g", id, sh.a.epoch, &sh, NULL)->r);
	double fresh = now_ms() - t0;
	if (sh.a.err) {
		fprintf(stderr, "heartbeat: error %d %s\n", sh.a.err, sh.a.msg);
		return 1;
	}
	snprintf(id, sizeof id, "member-%06d", nm);
	t0 = now_ms();
	cg_shell_heartbeat(&sh, 2, 1, &hb_join(&h, "g", id, "t")->r);
	double join = now_ms() - t0;
	printf("members %d partitions %d fresh_ms %.1f join_ms %.1f\n", nm, np, fresh, join);
	cg_shell_free(&sh);
	return 0;
}
