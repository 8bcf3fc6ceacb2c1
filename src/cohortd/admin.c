/*
 * admin: the routes of the admin HTTP listener (see admin.h).
 */
#include "cohortd/admin.h"

#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"

struct admin {
	ch_http *http;
	admin_sources src;
};

static const char TEXT[] = "text/plain; charset=utf-8";

/* GET /: the endpoints, one a line. */
static void
page_index(admin *a, ch_http_reply *out)
{
	(void)a;
	ch_buf_printf(&out->body, "cohortd admin API\n"
				  "  /          this index\n"
				  "  /metrics   Prometheus metrics (text format 0.0.4)\n");
}

/* ch_http's handler: path -> page; 404 for a path no page serves. */
static void
route(void *ud, const char *path, ch_http_reply *out)
{
	admin *a = ud;
	out->content_type = TEXT;
	if (strcmp(path, "/") == 0) {
		page_index(a, out);
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
	ch_http_free(a->http);
	free(a);
}
