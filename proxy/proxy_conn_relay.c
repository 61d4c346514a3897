/*
 * proxy/proxy_conn_relay.c: the splice mode (struct proxy_mode, proxy_path.h) and
 * the relay: bytes both ways, untouched.  The relay also carries an inspected
 * connection after a 101 (WebSocket: the TLS bufferevents of both sides), so its
 * limits apply to every relayed byte.
 *
 * Splice.  A spliced connection's first bytes are scanned for placeholders when
 * they are readable (raw TCP, plain HTTP to an address: placeholder_unprotected,
 * with an exfil record); spliced TLS cannot be looked into.  It dials with a plain
 * socket and relays once connected.
 *
 * One function family owns the relay so that it can be swapped for kernel
 * splice(2) later (issue 7).  Userspace copies through bufferevents: a side stops
 * reading while the other side's output holds PROXY_RELAY_HIGH bytes and starts
 * again below PROXY_RELAY_LOW (backpressure); an EOF from one side is passed on as
 * shutdown(SHUT_WR) of the other once its output has drained (half-close); the
 * connection ends when both directions have ended, on an error, or after
 * PROXY_IDLE_TIMEOUT without a byte either way.  bytes_per_second pauses reads
 * with a timer when the sandbox's bucket runs dry.
 *
 * Two shortcuts past the bufferevents keep the system calls and allocations per
 * relayed byte down (measured with bench/: 10 system calls per keep-alive request,
 * and 3 per 4 KiB of a download, before them):
 * - write-through: what was read goes straight to the other socket while that
 *   side's output buffer is empty, instead of being queued for an EV_WRITE one loop
 *   later (two epoll_ctl calls and a loop iteration per chunk); only what the
 *   socket does not take is queued, in order, and the bufferevent sends it;
 * - read-ahead: libevent 2.1 reads at most 4096 bytes per readable event (its
 *   EVBUFFER_MAX_READ), each after an ioctl(FIONREAD).  When that read came back
 *   full, the relay reads on itself, PROXY_RELAY_CHUNK at a time, into one buffer
 *   per worker thread, and writes each piece through; it stops at a short read
 *   (drained), when the other socket does not take everything (the rest is queued:
 *   backpressure as above), or after PROXY_RELAY_HIGH bytes (fairness).  A fixed
 *   buffer rather than evbuffer chains: allocating and freeing 64 KiB per read made
 *   glibc hand the memory back with madvise() and fault it in again, which cost
 *   more than the copies.
 * Both touch the sockets directly, so they apply only when both sides are plain
 * socket bufferevents: an inspected connection relayed raw after a 101 (WebSocket)
 * has TLS bufferevents and goes through libevent alone.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/util.h>

#include <openssl/crypto.h>

#include "audit.h"
#include "log.h"
#include "proxy_globals.h"
#include "proxy_registry.h"
#include "proxy_path.h"
#include "proxy_keys.h"
#include "proxy_scan.h"
#include "proxy_reason.h"

static void	proxy_conn_relay_read(struct bufferevent *, void *);
static void	proxy_conn_relay_write(struct bufferevent *, void *);
static void	proxy_conn_relay_event(struct bufferevent *, short, void *);

/* libevent 2.1's EVBUFFER_MAX_READ: a read this size may have left more behind. */
#define PROXY_RELAY_LIBEVENT_READ	4096
#define PROXY_RELAY_CHUNK		(64 * 1024)

/* The read-ahead buffer: per worker thread, holds bytes only within one call. */
static _Thread_local unsigned char proxy_relay_buf[PROXY_RELAY_CHUNK];

static struct bufferevent *
proxy_conn_relay_peer(struct proxy_conn *c, struct bufferevent *bev)
{
	return bev == c->pc_client ? c->pc_server : c->pc_client;
}

/* Plain sockets on both sides (no TLS, no filter): the shortcuts may be used. */
static int
proxy_conn_relay_raw(struct proxy_conn *c)
{
	return bufferevent_get_underlying(c->pc_client) == NULL &&
	    bufferevent_get_underlying(c->pc_server) == NULL &&
	    bufferevent_openssl_get_ssl(c->pc_client) == NULL &&
	    bufferevent_openssl_get_ssl(c->pc_server) == NULL;
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

/*
 * Charges n bytes read from bev's side: the audit totals, the sandbox's counters,
 * the idle clock, and bytes_per_second (which may pause reading).
 */
static void
proxy_conn_relay_count(struct proxy_conn *c, struct bufferevent *bev, size_t n)
{

	if (bev == c->pc_client) {
		c->pc_up += n;
		proxy_sandbox_count(c->pc_sandbox, PROXY_STAT_BYTES_UP, (int64_t)n);
	} else {
		c->pc_down += n;
		proxy_sandbox_count(c->pc_sandbox, PROXY_STAT_BYTES_DOWN, (int64_t)n);
	}
	event_base_gettimeofday_cached(c->pc_worker->pw_base, &c->pc_last);
	proxy_limit_bytes(c, n);
}

/*
 * Write-through: while peer's output buffer is empty nothing is waiting to go
 * before the bytes in in, so they are written to its socket at once.  What the
 * socket does not take stays in in.  Returns 0, or -1 on a write error other than
 * "would block" (errno set).
 */
static int
proxy_conn_relay_write_through(struct bufferevent *peer, struct evbuffer *in)
{
	evutil_socket_t fd;

	if (evbuffer_get_length(bufferevent_get_output(peer)) != 0 ||
	    (fd = bufferevent_getfd(peer)) == -1)
		return 0;
	if (evbuffer_write(in, fd) == -1 && errno != EAGAIN &&
	    errno != EWOULDBLOCK && errno != EINTR)
		return -1;
	return 0;
}

/* Moves what bev has read to its peer.  Returns -1 if c was closed. */
static int
proxy_conn_relay_move(struct proxy_conn *c, struct bufferevent *bev)
{
	struct bufferevent *peer = proxy_conn_relay_peer(c, bev);
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t n = evbuffer_get_length(in);

	if (n == 0)
		return 0;
	proxy_conn_relay_count(c, bev, n);
	if ((proxy_conn_relay_raw(c) &&
	    proxy_conn_relay_write_through(peer, in) == -1) ||
	    (evbuffer_get_length(in) != 0 &&
	    evbuffer_add_buffer(bufferevent_get_output(peer), in) == -1)) {
		proxy_conn_close(c, NULL, 1);	/* a reset or an error: pass it on */
		return -1;
	}
	return 0;
}

/*
 * The read-ahead (see the top): reads on from bev's socket and writes through to
 * the peer's while the peer's output is empty.  Returns 0 when done for now, -1
 * when c was closed or handed to the EOF path (the caller must not touch c).
 */
static int
proxy_conn_relay_readahead(struct proxy_conn *c, struct bufferevent *bev)
{
	struct bufferevent *peer = proxy_conn_relay_peer(c, bev);
	struct evbuffer *out = bufferevent_get_output(peer);
	evutil_socket_t fd = bufferevent_getfd(bev);
	evutil_socket_t pfd = bufferevent_getfd(peer);
	size_t budget = PROXY_RELAY_HIGH;
	ssize_t r, w;

	if (fd == -1 || pfd == -1)
		return 0;
	while (budget > 0 && !c->pc_paused && evbuffer_get_length(out) == 0) {
		do
			r = read(fd, proxy_relay_buf, sizeof(proxy_relay_buf));
		while (r == -1 && errno == EINTR);
		if (r == 0) {
			proxy_conn_relay_event(bev, BEV_EVENT_READING | BEV_EVENT_EOF,
			    c);
			return -1;
		}
		if (r == -1) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			proxy_conn_close(c, NULL, 1);
			return -1;
		}
		proxy_conn_relay_count(c, bev, (size_t)r);
		do
			w = send(pfd, proxy_relay_buf, (size_t)r, MSG_NOSIGNAL);
		while (w == -1 && errno == EINTR);
		if (w == -1) {
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				proxy_conn_close(c, NULL, 1);
				return -1;
			}
			w = 0;
		}
		if (w < r) {
			/* The peer is full: queue the rest, the bufferevent sends it. */
			if (evbuffer_add(out, proxy_relay_buf + w, (size_t)(r - w)) == -1) {
				proxy_conn_close(c, NULL, 1);
				return -1;
			}
			return 0;
		}
		budget -= (size_t)r < budget ? (size_t)r : budget;
		if ((size_t)r < sizeof(proxy_relay_buf))
			return 0;		/* short read: drained for now */
	}
	return 0;
}

static void
proxy_conn_relay_read(struct bufferevent *bev, void *arg)
{
	struct proxy_conn *c = arg;
	size_t have = evbuffer_get_length(bufferevent_get_input(bev));

	if (proxy_conn_relay_move(c, bev) == -1)
		return;
	/* libevent's read came back full: there is probably more (see the top). */
	if (have >= PROXY_RELAY_LIBEVENT_READ && proxy_conn_relay_raw(c) &&
	    proxy_conn_relay_readahead(c, bev) == -1)
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
	struct timeval tv = { PROXY_IDLE_TIMEOUT, 0 };

	c->pc_state = PC_RELAY;
	event_base_gettimeofday_cached(c->pc_worker->pw_base, &c->pc_last);
	bufferevent_setwatermark(c->pc_client, EV_READ, 0, 0);
	bufferevent_setwatermark(c->pc_server, EV_READ, 0, 0);
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
	/*
	 * What is already buffered goes first: the peeked bytes (counted as upstream
	 * bytes), and after a 101 whatever either side sent behind the handshake.
	 */
	if (evbuffer_get_length(bufferevent_get_input(c->pc_client)) > 0 &&
	    proxy_conn_relay_move(c, c->pc_client) == -1)
		return;
	if (evbuffer_get_length(bufferevent_get_input(c->pc_server)) > 0 &&
	    proxy_conn_relay_move(c, c->pc_server) == -1)
		return;
	if (c->pc_client_eof)
		proxy_conn_relay_shut(c, c->pc_server);
	if (c->pc_server_eof)
		proxy_conn_relay_shut(c, c->pc_client);
	if (proxy_conn_relay_done(c)) {
		proxy_conn_close(c, NULL, 0);
		return;
	}
	proxy_conn_relay_update(c);
}

/*
 * Splice mode.
 */

/*
 * A connection relayed as it is with readable first bytes (raw TCP, plain HTTP to
 * an address): -1 if they hold a placeholder (an exfil record is written), else 0.
 */
static int
proxy_splice_scan(struct proxy_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->pc_client);
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_kv kv[2];
	struct proxy_keys *k;
	struct scan_match m;
	char src[NETADDR_STRLEN + 8], dst[HOSTNAME_MAX + 16];
	const uint8_t *buf;
	size_t len = evbuffer_get_length(in);
	int found = 0;

	if (len == 0 || (k = proxy_keys_get()) == NULL)
		return 0;
	if ((buf = evbuffer_pullup(in, (ev_ssize_t)len)) != NULL &&
	    k->pk_nsecrets > 0 && scan_find(k->pk_ph_set, buf, len, &m)) {
		found = 1;
		proxy_sb_stats_exfil(&c->pc_sandbox->ps_stats);
		r.ar_event = AUDIT_EV_EXFIL;
		r.ar_sandbox = c->pc_sandbox->ps_rec.sb_name;
		r.ar_src = proxy_conn_addrport(&c->pc_src, c->pc_sport, src,
		    sizeof(src));
		if (c->pc_name[0] != '\0')
			snprintf(dst, sizeof(dst), "%s:%u", c->pc_name, c->pc_dport);
		else
			proxy_conn_addrport(&c->pc_dst, c->pc_dport, dst, sizeof(dst));
		r.ar_dst = dst;
		r.ar_decision = "deny";
		r.ar_rule = c->pc_rule[0] != '\0' ? c->pc_rule : NULL;
		r.ar_rule_file = r.ar_rule != NULL ? c->pc_rule_file : NULL;
		r.ar_reason = PR_STR(PLACEHOLDER_UNPROTECTED);
		kv[0] = (struct audit_kv){ .ak_key = "secret",
		    .ak_str = proxy_keys_secret_name(k, m.sm_id) != NULL ?
		    proxy_keys_secret_name(k, m.sm_id) : "?" };
		kv[1] = (struct audit_kv){ .ak_key = "proto",
		    .ak_str = policy_proto_str(c->pc_proto) };
		r.ar_extra = kv;
		r.ar_nextra = 2;
		if (proxy_audit() != NULL && audit_write(proxy_audit(), &r) == -1)
			log_warn("audit write (connection %llu)",
			    (unsigned long long)c->pc_id);
	}
	proxy_keys_put(k);
	return found ? -1 : 0;
}

static int
proxy_splice_start(struct proxy_conn *c)
{
	if (c->pc_proto != POLICY_PROTO_TLS && proxy_splice_scan(c) == -1) {
		proxy_conn_close(c, PR_STR(PLACEHOLDER_UNPROTECTED), 1);
		return -1;
	}
	if (c->pc_by_addr)
		c->pc_upstream = c->pc_dst;
	return 0;
}

static void
proxy_splice_server_event(struct proxy_conn *c, short what)
{
	if (what & BEV_EVENT_CONNECTED) {
		event_del(c->pc_timer);
		if (proxy_conn_current(c) == -1)
			return;
		proxy_conn_relay_start(c);
		return;
	}
	log_debug("connection %llu: upstream connect failed: %s",
	    (unsigned long long)c->pc_id, c->pc_dial_why != NULL ?
	    c->pc_dial_why : evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	proxy_conn_close(c, c->pc_dial_why != NULL ? c->pc_dial_why :
	    PR_STR(CONNECT_FAILED), 1);
}

/* A spliced connection may go on unless its name is now inspected. */
static int
proxy_splice_recheck(struct proxy_conn *c, const struct policy_verdict *v)
{
	return v->pv_rule != NULL && c->pc_proto == POLICY_PROTO_TLS &&
	    v->pv_tls == POLICY_TLS_INSPECT ? -1 : 0;
}

static void
proxy_splice_free(struct proxy_conn *c)
{
}

const struct proxy_mode proxy_mode_splice = {
	.pm_name = "splice",
	.pm_start = proxy_splice_start,
	.pm_server_bev = NULL,
	.pm_server_event = proxy_splice_server_event,
	.pm_recheck = proxy_splice_recheck,
	.pm_free = proxy_splice_free,
	.pm_resume = proxy_conn_relay_update,
};

static void
proxy_secret_chain_free(const void *data, size_t len, void *arg)
{
	OPENSSL_cleanse((void *)(uintptr_t)data, len);
	free((void *)(uintptr_t)data);
}

/*
 * Adding to an SSL bufferevent's output writes at once (libevent's output
 * callback calls SSL_write()), and the TLS layer's frames below this one may
 * leave plaintext on the thread's stack.  Those frames are gone when the add
 * returns: the stack below is wiped (as OpenSSH and libgcrypt burn theirs).
 */
#define PROXY_STACK_BURN	(32 * 1024)

void __attribute__((noinline))
proxy_stack_burn(void)
{
	uint8_t pad[PROXY_STACK_BURN];

	OPENSSL_cleanse(pad, sizeof(pad));
	__asm__ __volatile__("" : : "r"(pad) : "memory");
}

int
proxy_evbuffer_add_wiped(struct evbuffer *o, const void *p, size_t n)
{
	void *copy;

	if (n == 0)
		return 0;
	if ((copy = malloc(n)) == NULL)
		return -1;
	memcpy(copy, p, n);
	/* On failure libevent calls no cleanup: ours. */
	if (evbuffer_add_reference(o, copy, n, proxy_secret_chain_free, NULL) == -1) {
		OPENSSL_cleanse(copy, n);
		free(copy);
		return -1;
	}
	return 0;
}

int
proxy_evbuffer_add_secret(struct evbuffer *o, const void *p, size_t n)
{
	if (proxy_evbuffer_add_wiped(o, p, n) == -1)
		return -1;
	proxy_stack_burn();
	return 0;
}
