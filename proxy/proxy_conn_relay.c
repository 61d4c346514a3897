/*
 * proxy/proxy_conn_relay.c: the splice relay: bytes both ways, untouched.
 *
 * One function family owns the relay so that it can be swapped for kernel
 * splice(2) later (issue 7).  Userspace copies through bufferevents: a side stops
 * reading while the other side's output holds PROXY_RELAY_HIGH bytes and starts
 * again below PROXY_RELAY_LOW (backpressure); an EOF from one side is passed on as
 * shutdown(SHUT_WR) of the other once its output has drained (half-close); the
 * connection ends when both directions have ended, on an error, or after
 * PROXY_IDLE_TIMEOUT without a byte either way.  bytes_per_second pauses reads
 * with a timer when the sandbox's bucket runs dry.
 */
#include <sys/socket.h>

#include <stdlib.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>

#include "log.h"
#include "proxy.h"
#include "proxy_conn.h"

static void	proxy_conn_relay_read(struct bufferevent *, void *);
static void	proxy_conn_relay_write(struct bufferevent *, void *);
static void	proxy_conn_relay_event(struct bufferevent *, short, void *);

static struct bufferevent *
proxy_conn_relay_peer(struct proxy_conn *c, struct bufferevent *bev)
{
	return bev == c->pc_client ? c->pc_server : c->pc_client;
}

/* Both directions finished and flushed: the connection is over. */
static int
proxy_conn_relay_done(struct proxy_conn *c)
{
	return c->pc_client_eof && c->pc_server_eof &&
	    evbuffer_get_length(bufferevent_get_output(c->pc_client)) == 0 &&
	    evbuffer_get_length(bufferevent_get_output(c->pc_server)) == 0;
}

void
proxy_conn_relay_update(struct proxy_conn *c)
{
	size_t cout = evbuffer_get_length(bufferevent_get_output(c->pc_client));
	size_t sout = evbuffer_get_length(bufferevent_get_output(c->pc_server));

	/* The client is read into the server's output, and the other way round. */
	if (!c->pc_client_eof && !c->pc_paused && sout < PROXY_RELAY_HIGH)
		bufferevent_enable(c->pc_client, EV_READ);
	else
		bufferevent_disable(c->pc_client, EV_READ);
	if (!c->pc_server_eof && !c->pc_paused && cout < PROXY_RELAY_HIGH)
		bufferevent_enable(c->pc_server, EV_READ);
	else
		bufferevent_disable(c->pc_server, EV_READ);
}

/* from reached EOF: pass it on once to's output is empty. */
static void
proxy_conn_relay_shut(struct proxy_conn *c, struct bufferevent *to)
{
	int fd;

	if (evbuffer_get_length(bufferevent_get_output(to)) != 0)
		return;		/* proxy_conn_relay_write() comes back here */
	if ((fd = bufferevent_getfd(to)) != -1)
		(void)shutdown(fd, SHUT_WR);
}

static void
proxy_conn_relay_pause_done(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *c = arg;

	c->pc_paused = 0;
	proxy_conn_relay_update(c);
}

/* Moves what bev has read to its peer.  Returns -1 if c was closed. */
static int
proxy_conn_relay_move(struct proxy_conn *c, struct bufferevent *bev)
{
	struct bufferevent *peer = proxy_conn_relay_peer(c, bev);
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t n = evbuffer_get_length(in);
	long ms;

	if (n == 0)
		return 0;
	if (bev == c->pc_client) {
		c->pc_up += n;
		proxy_sandbox_count(c->pc_sandbox, PROXY_STAT_BYTES_UP, (int64_t)n);
	} else {
		c->pc_down += n;
		proxy_sandbox_count(c->pc_sandbox, PROXY_STAT_BYTES_DOWN, (int64_t)n);
	}
	event_base_gettimeofday_cached(c->pc_worker->pw_base, &c->pc_last);
	if (evbuffer_add_buffer(bufferevent_get_output(peer), in) == -1) {
		proxy_conn_close(c, NULL, 1);
		return -1;
	}
	if (c->pc_limits.pl_bytes_per_second != 0 && !c->pc_paused &&
	    (ms = proxy_limit_bytes_take(c->pc_sandbox->ps_rec.sb_name,
	    &c->pc_limits, n)) > 0) {
		struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

		c->pc_paused = 1;
		if (c->pc_pause == NULL)
			c->pc_pause = evtimer_new(c->pc_worker->pw_base,
			    proxy_conn_relay_pause_done, c);
		if (c->pc_pause == NULL || evtimer_add(c->pc_pause, &tv) == -1)
			c->pc_paused = 0;
	}
	return 0;
}

static void
proxy_conn_relay_read(struct bufferevent *bev, void *arg)
{
	struct proxy_conn *c = arg;

	if (proxy_conn_relay_move(c, bev) == -1)
		return;
	proxy_conn_relay_update(c);
}

/* Output drained below the low watermark: reading may resume, EOF may go on. */
static void
proxy_conn_relay_write(struct bufferevent *bev, void *arg)
{
	struct proxy_conn *c = arg;

	if (bev == c->pc_server && c->pc_client_eof)
		proxy_conn_relay_shut(c, bev);
	if (bev == c->pc_client && c->pc_server_eof)
		proxy_conn_relay_shut(c, bev);
	if (proxy_conn_relay_done(c)) {
		proxy_conn_close(c, NULL, 0);
		return;
	}
	proxy_conn_relay_update(c);
}

static void
proxy_conn_relay_event(struct bufferevent *bev, short what, void *arg)
{
	struct proxy_conn *c = arg;
	struct bufferevent *peer = proxy_conn_relay_peer(c, bev);

	if (what & BEV_EVENT_EOF) {
		/* Whatever was still buffered in bev's input goes on first. */
		if (proxy_conn_relay_move(c, bev) == -1)
			return;
		if (bev == c->pc_client)
			c->pc_client_eof = 1;
		else
			c->pc_server_eof = 1;
		proxy_conn_relay_shut(c, peer);
		if (proxy_conn_relay_done(c)) {
			proxy_conn_close(c, NULL, 0);
			return;
		}
		proxy_conn_relay_update(c);
		return;
	}
	/* An error or a reset on either side ends both: pass the reset on. */
	proxy_conn_close(c, NULL, 1);
}

static void
proxy_conn_relay_idle(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *c = arg;
	struct timeval now, d, tv;

	event_base_gettimeofday_cached(c->pc_worker->pw_base, &now);
	evutil_timersub(&now, &c->pc_last, &d);
	if (d.tv_sec >= PROXY_IDLE_TIMEOUT) {
		log_debug("connection %llu: idle", (unsigned long long)c->pc_id);
		proxy_conn_close(c, NULL, 1);
		return;
	}
	tv.tv_sec = PROXY_IDLE_TIMEOUT - d.tv_sec;
	tv.tv_usec = 0;
	evtimer_add(c->pc_timer, &tv);
}

void
proxy_conn_relay_start(struct proxy_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->pc_client);
	struct timeval tv = { PROXY_IDLE_TIMEOUT, 0 };

	c->pc_state = PC_RELAY;
	if (c->pc_policy != NULL) {
		proxy_policy_put(c->pc_policy);	/* decided and dialled: done with it */
		c->pc_policy = NULL;
	}
	event_base_gettimeofday_cached(c->pc_worker->pw_base, &c->pc_last);
	bufferevent_setwatermark(c->pc_client, EV_READ, 0, 0);
	bufferevent_setwatermark(c->pc_client, EV_WRITE, PROXY_RELAY_LOW, 0);
	bufferevent_setwatermark(c->pc_server, EV_WRITE, PROXY_RELAY_LOW, 0);
	bufferevent_setcb(c->pc_client, proxy_conn_relay_read,
	    proxy_conn_relay_write, proxy_conn_relay_event, c);
	bufferevent_setcb(c->pc_server, proxy_conn_relay_read,
	    proxy_conn_relay_write, proxy_conn_relay_event, c);
	event_assign(c->pc_timer, c->pc_worker->pw_base, -1, 0,
	    proxy_conn_relay_idle, c);
	if (evtimer_add(c->pc_timer, &tv) == -1) {
		proxy_conn_close(c, NULL, 1);
		return;
	}
	bufferevent_enable(c->pc_server, EV_WRITE);
	bufferevent_enable(c->pc_client, EV_WRITE);
	/* Replay the peeked bytes first (counted as upstream bytes). */
	if (evbuffer_get_length(in) > 0 &&
	    proxy_conn_relay_move(c, c->pc_client) == -1)
		return;
	if (c->pc_client_eof)
		proxy_conn_relay_shut(c, c->pc_server);
	proxy_conn_relay_update(c);
}
