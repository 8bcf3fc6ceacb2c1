/*
 * ch_broker.c: the broker's constructor and destructor (ch_broker.h).
 */
#include "broker/ch_broker.h"

#include <stdlib.h>

#include <string.h>

#include "broker/ch_log_manager.h"
#include "common/ch_common.h"
#include "common/ch_log.h"
#include "common/ch_workers.h"

/* ch_topics_exec: registry writes (two fsyncs each) on the log manager's
 * workers, off the loop thread. */
static void
registry_run(void *ud, void (*work)(void *), void (*done)(void *), void *arg)
{
	ch_workers_run(ud, work, done, arg);
}

int
ch_broker_open(ch_broker *bk, ch_config *cfg, struct ch_loop *loop, const ch_broker_shell *shell,
	       char *err, size_t errlen)
{
	memset(bk, 0, sizeof(*bk));
	if (ch_topics_open(&bk->topics, cfg, err, errlen) != CH_OK)
		return CH_ERR;
	bk->cfg = cfg;
	bk->loop = loop;
	bk->node_id = cfg->node_id;
	bk->cluster_id = ch_topics_cluster_id(bk->topics);
	bk->adv_host = cfg->advertised.host[0] ? cfg->advertised.host : "127.0.0.1";
	bk->adv_port = cfg->advertised.port;
	for (size_t i = 0; i < cfg->nlisteners; i++) {
		bk->adv_hosts[i] =
			cfg->advertised_of[i].host[0] ? cfg->advertised_of[i].host : "127.0.0.1";
		bk->adv_ports[i] = cfg->advertised_of[i].port;
	}
	bk->shell = shell->shell;
	bk->reply = shell->reply;
	bk->close = shell->close;
	bk->now_ms = shell->now_ms;
	bk->wall_ms = shell->wall_ms;
	bk->reply_resp = shell->reply_resp;
	bk->session = shell->session;
	bk->authenticated = shell->authenticated;
	bk->close_later = shell->close_later;
	bk->throttle = shell->throttle;
	bk->logs = ch_log_manager_new(loop, cfg, bk->topics);
	ch_topics_set_exec(bk->topics,
			   &(ch_topics_exec){registry_run, ch_log_manager_workers(bk->logs)});
	int failed = ch_log_manager_open_all(bk->logs);
	if (failed)
		CH_LOGE("broker", "%d partition log(s) could not be opened", failed);
	return CH_OK;
}

void
ch_broker_close(ch_broker *bk)
{
	ch_log_manager_free(bk->logs); /* finishes registry writes still running */
	bk->logs = NULL;
	ch_topics_set_exec(bk->topics, NULL);
	ch_topics_close(bk->topics);
	bk->topics = NULL;
	free(bk->api_stats);
	bk->api_stats = NULL;
}
