/*
 * hb_echo.c: the loopback peer of loadgen's heartbeat row. An epoll server
 * that answers every request frame with a Heartbeat v3 response (the
 * request's correlation id, throttle 0, error 0), reading and writing
 * nothing else: what any Kafka server must at least do per heartbeat
 * (read a frame, write a frame), with no group, no decoding, no logging.
 *
 *   hb_echo PORT     (127.0.0.1 only; runs until killed)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct {
	int fd;
	unsigned char buf[4096];
	size_t len;
} conn;

/* Answers every whole frame in c's buffer; -1 when the peer is gone. */
static int
serve(conn *c)
{
	for (;;) {
		ssize_t k = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
		if (k == 0)
			return -1;
		if (k < 0)
			return errno == EAGAIN ? 0 : errno == EINTR ? serve(c) : -1;
		c->len += (size_t)k;
		unsigned char out[4096];
		size_t off = 0, o = 0;
		while (c->len - off >= 12) { /* size, key, version, correlation id */
			uint32_t n = ((uint32_t)c->buf[off] << 24) |
				     ((uint32_t)c->buf[off + 1] << 16) |
				     ((uint32_t)c->buf[off + 2] << 8) | c->buf[off + 3];
			if (n > sizeof(c->buf) - 4)
				return -1;
			if (c->len - off - 4 < n)
				break;
			static const unsigned char head[4] = {0, 0, 0, 10};
			memcpy(out + o, head, 4);
			memcpy(out + o + 4, c->buf + off + 8, 4); /* correlation id */
			memset(out + o + 8, 0, 6);                /* throttle, error */
			o += 14;
			off += 4 + n;
			if (o + 14 > sizeof(out))
				break;
		}
		memmove(c->buf, c->buf + off, c->len - off);
		c->len -= off;
		if (o && write(c->fd, out, o) != (ssize_t)o) /* one in flight: fits */
			return -1;
	}
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: hb_echo PORT\n");
		return 2;
	}
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 4096) < 0) {
		perror("hb_echo");
		return 1;
	}
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
	struct epoll_event evs[256];
	for (;;) {
		int n = epoll_wait(ep, evs, 256, -1);
		for (int i = 0; i < n; i++) {
			conn *c = evs[i].data.ptr;
			if (!c) {
				int fd;
				while ((fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
					conn *nc = calloc(1, sizeof(*nc));
					nc->fd = fd;
					struct epoll_event e = {.events = EPOLLIN, .data.ptr = nc};
					epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
				}
				continue;
			}
			if (serve(c) < 0) {
				close(c->fd);
				free(c);
			}
		}
	}
}
