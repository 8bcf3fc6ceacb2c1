/*
 * admin: the routes of the admin HTTP listener (see admin.h).
 */
#include "cohortd/admin.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"

/* How often the event stream's summary is rendered, and the longest gap
 * between two events (a proxy, or the HTTP listener's idle timeout, must
 * not close a quiet stream). */
#define EVENTS_EVERY_MS 500
#define EVENTS_KEEPALIVE_MS 10000

struct admin {
	ch_http *http;
	admin_sources src;
	ch_timer events; /* renders the summary, publishes it when it changed */
	ch_buf last;     /* the summary published last */
	int64_t last_at; /* when (loop ms) */
};

static const char TEXT[] = "text/plain; charset=utf-8";

/* GET /: the endpoints, one a line. */
static void
page_index(admin *a, ch_http_reply *out)
{
	(void)a;
	ch_buf_printf(&out->body,
		      "cohortd admin API\n"
		      "  /          this index\n"
		      "  /ui        the live page: groups, owners, lag, rebalance timeline\n"
		      "  /v1/events server-sent events: the groups' summary when it changes\n"
		      "  /metrics   Prometheus metrics (text format 0.0.4)\n"
		      "  /v1/groups                 groups (JSON)\n"
		      "  /v1/groups/G               one group and its last rebalance\n"
		      "  /v1/groups/G/rebalances    its rebalance history\n"
		      "  /v1/groups/G/simulate      what each assignor would give it "
		      "(?strategy=S&add_member=N&remove_member=ID)\n"
		      "  /v1/groups/G/partitions    its partitions: owner, offsets, lag\n");
}

bool
admin_pct_decode(const char *s, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];
		if (c == '%') {
			if (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) ||
			    !isxdigit((unsigned char)s[i + 2]))
				return false;
			char hex[3] = {s[i + 1], s[i + 2], 0};
			c = (int)strtol(hex, NULL, 16);
			if (c == 0)
				return false;
			i += 2;
		}
		if (o + 1 >= cap)
			return false;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return true;
}

/* /v1/groups/G[/rebalances|/simulate]: the group pages, G percent-decoded. */
static void
route_group(admin *a, const char *rest, const char *query, ch_http_reply *out)
{
	const char *slash = strchr(rest, '/');
	size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
	bool rebalances = slash && strcmp(slash, "/rebalances") == 0;
	bool simulate = slash && strcmp(slash, "/simulate") == 0;
	bool partitions = slash && strcmp(slash, "/partitions") == 0;
	char id[1024];
	if (slash && !rebalances && !simulate && !partitions) {
		out->status = 404;
		ch_buf_printf(&out->body, "not found: /v1/groups/%s\n", rest);
		return;
	}
	if (n == 0 || !admin_pct_decode(rest, n, id, sizeof(id))) {
		out->status = 400;
		ch_buf_printf(&out->body, "bad group id in the path: %.*s\n", (int)n, rest);
		return;
	}
	if (simulate)
		admin_page_simulate(&a->src, id, query, out);
	else if (partitions)
		admin_page_partitions(&a->src, id, out);
	else
		admin_page_group(&a->src, id, rebalances, out);
}

/* ch_http's handler: path -> page; 404 for a path no page serves. */
static void
route(void *ud, const char *path, const char *query, ch_http_reply *out)
{
	admin *a = ud;
	out->content_type = TEXT;
	if (strcmp(path, "/") == 0) {
		page_index(a, out);
		return;
	}
	if (strcmp(path, "/ui") == 0 || strcmp(path, "/ui/") == 0) {
		admin_page_ui(out);
		return;
	}
	if (strcmp(path, "/v1/events") == 0) {
		out->stream = true; /* ch_http_publish's events (admin_events) */
		return;
	}
	if (strcmp(path, "/v1/groups") == 0) {
		admin_page_groups(&a->src, out);
		return;
	}
	if (strncmp(path, "/v1/groups/", 11) == 0) {
		route_group(a, path + 11, query, out);
		return;
	}
	if (strcmp(path, "/metrics") == 0) {
		out->content_type = "text/plain; version=0.0.4; charset=utf-8";
		admin_render_metrics(&a->src, &out->body);
		return;
	}
	out->status = 404;
	ch_buf_printf(&out->body, "not found: %s\n", path);
}

/* Timer: the summary, published when it changed or the stream was quiet. */
static void
admin_events(ch_loop *loop, ch_timer *t, void *ud)
{
	(void)t;
	admin *a = ud;
	int64_t now = ch_loop_now(loop);
	ch_buf b;
	ch_buf_init(&b);
	admin_render_summary(&a->src, &b);
	bool changed = b.len != a->last.len || memcmp(b.data, a->last.data, b.len) != 0;
	if (ch_buf_ok(&b) && (changed || now - a->last_at >= EVENTS_KEEPALIVE_MS)) {
		ch_http_publish(a->http, (const char *)b.data, b.len);
		ch_buf_free(&a->last);
		a->last = b;
		a->last_at = now;
	} else {
		ch_buf_free(&b);
	}
	ch_timer_arm(loop, &a->events, now + EVENTS_EVERY_MS);
}

admin *
admin_start(const ch_listener *l, const admin_sources *src, char *err, size_t errlen)
{
	admin *a = ch_xmalloc(sizeof(*a));
	memset(a, 0, sizeof(*a));
	a->src = *src;
	a->http = ch_http_new(src->loop, l->host, l->port, route, a, err, errlen);
	if (!a->http) {
		free(a);
		return NULL;
	}
	ch_buf_init(&a->last);
	ch_timer_init(&a->events, admin_events, a);
	ch_timer_arm(src->loop, &a->events, ch_loop_now(src->loop) + EVENTS_EVERY_MS);
	return a;
}

int
admin_port(const admin *a)
{
	return ch_http_port(a->http);
}

void
admin_stop(admin *a)
{
	if (!a)
		return;
	ch_timer_cancel(a->src.loop, &a->events);
	ch_http_free(a->http);
	ch_buf_free(&a->last);
	free(a);
}
