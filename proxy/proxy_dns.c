/*
 * proxy/proxy_dns.c: policy DNS over UDP and TCP (see proxy_dns.h).  What to answer
 * is decided by proxy_dns_answer(), a pure function (proxy_dns_answer.c); what a
 * query costs its sandbox -- rate limit, TCP client limit, aggregated `dns` audit
 * records -- is counted by proxy_dns_sb.c; this file does the sockets and closes
 * the audit windows.  Nothing is ever forwarded upstream.
 *
 * Threads.  The core runs one proxy_dns per worker thread, all on the same UDP and TCP
 * sockets (the kernel hands each datagram / connection to one reader).  The state that
 * must be per sandbox and not per thread is the sandbox's own (ps_dns, a struct
 * proxy_dns_sb under a lock of its own): a query finds its sandbox by source
 * address (proxy_sandbox_find()) and takes that sandbox's lock only, never a
 * process-wide one.  Sources that are no sandbox share one state
 * (proxy_dns_sb_nosb()).  A DNS TCP client holds a reference to its sandbox, so
 * its slot goes back to the same state.
 *
 * Windows.  One window of DNS_WINDOW_MS runs for all.  Every instance ticks; the
 * one whose compare-exchange moves dns_window_ms on walks the registry
 * (proxy_sandbox_foreach()) and closes each sandbox's window under that sandbox's
 * lock, then the no-sandbox one's; the records are written once the walk is over.  The
 * last instance to go writes everything pending.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "log.h"
#include "proxy_dns.h"
#include "proxy_dns_codec.h"
#include "proxy_dns_sb.h"
#include "proxy_registry.h"

#define DNS_WINDOW_MS		10000	/* audit aggregation window */
#define DNS_TICK_MS		1000	/* each instance's timer; the window decides */
#define DNS_UDP_BATCH		64	/* datagrams per readable event */
#define DNS_TCP_IDLE_S		10
#define DNS_TCP_IN_MAX		8192	/* read high watermark */
#define DNS_TCP_OUT_MAX		8192	/* stop reading while more is unsent */

/*
 * What is process-wide: dns_inst_lock guards the instance count (proxy_dns_new
 * and _free, never a query); the window's start is an atomic.
 */
static pthread_mutex_t dns_inst_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int dns_refs;		/* live proxy_dns instances */
static uint64_t dns_window_ms;		/* atomic: when the current window began */

struct dns_tcp {
	LIST_ENTRY(dns_tcp) t_entry;
	struct proxy_dns *t_d;
	struct bufferevent *t_bev;
	struct sockaddr_storage t_ss;
	socklen_t	 t_sslen;
	struct proxy_sandbox *t_ps;	/* referenced: whose slot we hold; NULL: nosb */
	int		 t_paused;	/* reading stopped for the output */
};

struct proxy_dns {
	struct event_base *d_base;
	int		 d_udp_fd;
	struct event	*d_udp_ev;
	struct evconnlistener *d_lev;
	struct event	*d_tick;
	LIST_HEAD(, dns_tcp) d_tcp;
};

/* The DNS state a query of ps (NULL: no sandbox) counts against. */
static struct proxy_dns_sb *
dns_sb_of(struct proxy_sandbox *ps)
{
	return ps != NULL ? ps->ps_dns : proxy_dns_sb_nosb();
}

/* The registry walk of dns_close_all(). */
struct dns_close {
	struct proxy_dns_out *c_out;
	int		 c_all;
};

static void
dns_close_one(struct proxy_sandbox *ps, void *arg)
{
	struct dns_close *c = arg;

	proxy_dns_sb_close(ps->ps_dns, c->c_out, c->c_all);
}

/*
 * Closes the window of every sandbox in the registry and of the no-sandbox state;
 * the records go to o (written by the caller, no lock held).  -1 if the registry
 * could not be walked (only the no-sandbox state's closed: the sandboxes' counts
 * wait).
 */
static int
dns_close_all(struct proxy_dns_out *o, int all)
{
	struct dns_close c = { o, all };
	int rv;

	rv = proxy_sandbox_foreach(dns_close_one, &c);
	proxy_dns_sb_close(proxy_dns_sb_nosb(), o, all);
	return rv;
}

/* An operator's grant for name in sandbox arg (proxy_dns_answer_ap()). */
static int
dns_approved(void *arg, const char *name)
{
	return proxy_approval_dns(arg, name);
}

/*
 * One query from ss: rate limit, answer, account.  The response (if any) goes to
 * resp and its length to *rlen.
 */
static void
dns_handle(const struct sockaddr *sa, const uint8_t *q, size_t qlen, int udp,
    uint8_t *resp, size_t resplen, size_t *rlen)
{
	struct proxy_sandbox *ps = NULL;
	struct proxy_policy *pp = NULL;
	struct proxy_dns_result res;
	struct proxy_dns_rec rec;
	struct proxy_dns_sb *s;
	struct netaddr src;
	char approval[APPROVAL_ID_LEN + 1];
	const char *name = "";
	char srcs[NETADDR_STRLEN];

	*rlen = 0;
	if (netaddr_from_sockaddr(sa, &src, NULL) == -1)
		return;
	netaddr_fmt(&src, srcs, sizeof(srcs));
	if ((ps = proxy_sandbox_find(&src)) != NULL) {
		name = ps->ps_rec.sb_name;
		proxy_sandbox_count(ps, PROXY_STAT_DNS_QUERIES, 1);
	}
	/* Ours for as long as we hold ps (or for good: no sandbox). */
	s = dns_sb_of(ps);

	if (!proxy_dns_sb_admit(s, srcs)) {
		if (ps != NULL) {
			proxy_sandbox_count(ps, PROXY_STAT_DNS_DENIED, 1);
			proxy_sb_stats_dns(&ps->ps_stats, PROXY_DNS_DROP);
			proxy_sb_stats_denial(&ps->ps_stats, PR_STR(RATE_LIMITED));
		}
		goto out;
	}

	if (ps != NULL)
		pp = proxy_sandbox_policy(ps);
	if (proxy_dns_answer_ap(pp != NULL ? pp->pp_policy : NULL,
	    ps != NULL ? ps->ps_map : NULL, dns_approved, ps, q, qlen, udp, resp,
	    resplen, rlen, &res) == -1)
		*rlen = 0;
	/* "unknown": "ask": a name no rule names is a pending approval. */
	if (res.dr_unknown && res.dr_outcome == PROXY_DNS_NXDOMAIN && pp != NULL)
		proxy_approval_ask(ps, pp->pp_policy, POLICY_REASON_NAME_NOT_ALLOWED,
		    res.dr_qname, 0, NULL, NULL, approval);
	if (res.dr_approved) {
		res.dr_rule = proxy_approval_rule.pr_id;
		res.dr_rule_file = proxy_approval_rule.pr_file;
	}

	memset(&rec, 0, sizeof(rec));
	snprintf(rec.dr_sandbox, sizeof(rec.dr_sandbox), "%s", name);
	snprintf(rec.dr_src, sizeof(rec.dr_src), "%s", srcs);
	snprintf(rec.dr_qname, sizeof(rec.dr_qname), "%s", res.dr_qname);
	rec.dr_qtype = res.dr_qtype;
	rec.dr_outcome = res.dr_outcome;
	rec.dr_reason = res.dr_reason;
	if (res.dr_rule != NULL)
		snprintf(rec.dr_rule, sizeof(rec.dr_rule), "%s", res.dr_rule);
	if (res.dr_rule_file != NULL)
		snprintf(rec.dr_rule_file, sizeof(rec.dr_rule_file), "%s",
		    res.dr_rule_file);
	rec.dr_would_deny = res.dr_would_deny;
	if (res.dr_outcome == PROXY_DNS_ANSWER)
		netaddr_fmt(&res.dr_addr, rec.dr_answer, sizeof(rec.dr_answer));
	if (ps != NULL && proxy_dns_outcome_is_deny(res.dr_outcome)) {
		proxy_sandbox_count(ps, PROXY_STAT_DNS_DENIED, 1);
		proxy_sb_stats_denial(&ps->ps_stats, res.dr_reason);
	}
	if (ps != NULL)
		proxy_sb_stats_dns(&ps->ps_stats, (unsigned int)res.dr_outcome);

	/* Returns once what must be on disk before the answer is. */
	proxy_dns_sb_note(s, &rec);
 out:
	if (pp != NULL)
		proxy_policy_put(pp);
	if (ps != NULL)
		proxy_sandbox_put(ps);
}

static void
dns_udp_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	uint8_t q[DNS_QUERY_MAX + 1], resp[DNS_RESP_MAX];
	size_t rlen;
	ssize_t n;
	int i;

	(void)what;
	(void)arg;
	for (i = 0; i < DNS_UDP_BATCH; i++) {
		sl = sizeof(ss);
		n = recvfrom(fd, q, sizeof(q), 0, (struct sockaddr *)&ss, &sl);
		if (n == -1) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				log_debug("dns: recvfrom: %s", strerror(errno));
			return;
		}
		if ((size_t)n > DNS_QUERY_MAX)
			continue;	/* not a stub's query: no answer */
		dns_handle((struct sockaddr *)&ss, q, (size_t)n, 1, resp,
		    sizeof(resp), &rlen);
		/* A lost answer is the client's to retry, as with any UDP. */
		if (rlen > 0 && sendto(fd, resp, rlen, 0, (struct sockaddr *)&ss,
		    sl) == -1)
			log_debug("dns: sendto: %s", strerror(errno));
	}
}

static void
dns_tcp_free(struct dns_tcp *t)
{
	proxy_dns_sb_tcp_give(dns_sb_of(t->t_ps));
	LIST_REMOVE(t, t_entry);
	bufferevent_free(t->t_bev);	/* closes the fd */
	/* Maybe the last reference: its pending counts are written then. */
	proxy_sandbox_put(t->t_ps);
	free(t);
}

/* Answers every complete query in t's input, until the output is too full. */
static void
dns_tcp_process(struct dns_tcp *t)
{
	struct evbuffer *in = bufferevent_get_input(t->t_bev);
	struct evbuffer *out = bufferevent_get_output(t->t_bev);
	uint8_t hdr[2], q[DNS_QUERY_MAX], resp[2 + DNS_RESP_MAX];
	size_t mlen, rlen;

	while (evbuffer_get_length(in) >= 2) {
		if (evbuffer_get_length(out) > DNS_TCP_OUT_MAX) {
			/* The client is not reading: stop until it does. */
			bufferevent_disable(t->t_bev, EV_READ);
			t->t_paused = 1;
			return;
		}
		if (evbuffer_copyout(in, hdr, 2) != 2)
			goto close;
		mlen = (size_t)hdr[0] << 8 | hdr[1];
		if (mlen == 0 || mlen > DNS_QUERY_MAX)
			goto close;	/* no stub sends that: not ours to parse */
		if (evbuffer_get_length(in) < 2 + mlen)
			return;
		if (evbuffer_drain(in, 2) == -1 ||
		    evbuffer_remove(in, q, mlen) != (int)mlen)
			goto close;
		dns_handle((struct sockaddr *)&t->t_ss, q, mlen, 0, resp + 2,
		    sizeof(resp) - 2, &rlen);
		if (rlen == 0)
			continue;	/* dropped (rate limit, response-as-query) */
		resp[0] = rlen >> 8;
		resp[1] = rlen & 0xff;
		if (bufferevent_write(t->t_bev, resp, rlen + 2) == -1)
			goto close;
	}
	return;
 close:
	dns_tcp_free(t);
}

static void
dns_tcp_read_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	dns_tcp_process(arg);
}

static void
dns_tcp_write_cb(struct bufferevent *bev, void *arg)
{
	struct dns_tcp *t = arg;

	/* Called when the output drained (low watermark 0): resume reading. */
	if (t->t_paused) {
		t->t_paused = 0;
		bufferevent_enable(bev, EV_READ);
		dns_tcp_process(t);
	}
}

static void
dns_tcp_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	/* EOF, error or the idle timeout: the connection ends. */
	dns_tcp_free(arg);
}

static void
dns_tcp_accept_cb(struct evconnlistener *lev, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct proxy_dns *d = arg;
	struct proxy_sandbox *ps = NULL;
	struct dns_tcp *t = NULL;
	struct proxy_dns_sb *s;
	struct netaddr src;
	struct timeval tv = { DNS_TCP_IDLE_S, 0 };

	(void)lev;
	if (salen <= 0 || (size_t)salen > sizeof(t->t_ss) ||
	    netaddr_from_sockaddr(sa, &src, NULL) == -1) {
		close(fd);
		return;
	}
	ps = proxy_sandbox_find(&src);
	s = dns_sb_of(ps);
	if (!proxy_dns_sb_tcp_take(s)) {
		/* Over the limit: a visible close, not a hang. */
		close(fd);
		goto out;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL)
		goto fail;
	t->t_d = d;
	memcpy(&t->t_ss, sa, (size_t)salen);
	t->t_sslen = (socklen_t)salen;
	if ((t->t_bev = bufferevent_socket_new(d->d_base, fd,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		/* XXX libevent leaves the fd ours when the constructor fails. */
		close(fd);
		goto fail;
	}
	/* The client keeps our reference: its slot goes back with no lookup. */
	t->t_ps = ps;
	ps = NULL;
	LIST_INSERT_HEAD(&d->d_tcp, t, t_entry);
	bufferevent_setcb(t->t_bev, dns_tcp_read_cb, dns_tcp_write_cb,
	    dns_tcp_event_cb, t);
	bufferevent_setwatermark(t->t_bev, EV_READ, 0, DNS_TCP_IN_MAX);
	bufferevent_set_timeouts(t->t_bev, &tv, &tv);
	if (bufferevent_enable(t->t_bev, EV_READ | EV_WRITE) == -1)
		dns_tcp_free(t);
	goto out;
 fail:
	free(t);
	proxy_dns_sb_tcp_give(s);
 out:
	proxy_sandbox_put(ps);
}

static void
dns_tcp_accept_error_cb(struct evconnlistener *lev, void *arg)
{
	static uint64_t warned_ms;
	uint64_t now = proxy_dns_now_ms();

	(void)lev;
	(void)arg;
	/* EMFILE and friends: keep serving; say so at most every 10 s. */
	if (now - __atomic_load_n(&warned_ms, __ATOMIC_RELAXED) > 10000) {
		__atomic_store_n(&warned_ms, now, __ATOMIC_RELAXED);
		log_warn("dns: accept");
	}
}

static void
dns_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_dns_out out = PROXY_DNS_OUT_INIT;
	uint64_t start, now;

	(void)fd;
	(void)what;
	(void)arg;
	start = __atomic_load_n(&dns_window_ms, __ATOMIC_RELAXED);
	now = proxy_dns_now_ms();
	if (now < start || now - start < DNS_WINDOW_MS)
		return;
	/*
	 * Every instance ticks; the one that moves the window's start on closes the
	 * window, once, and the others find it moved.
	 */
	if (!__atomic_compare_exchange_n(&dns_window_ms, &start, now, 0,
	    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	if (dns_close_all(&out, 0) == -1)
		/* The registry could not be walked: the next tick tries again. */
		__atomic_store_n(&dns_window_ms, start, __ATOMIC_RELAXED);
	proxy_dns_out_flush(&out);
}

struct proxy_dns *
proxy_dns_new(struct event_base *base, int udp_fd, int tcp_fd)
{
	struct proxy_dns *d;
	struct timeval tv = { DNS_TICK_MS / 1000, (DNS_TICK_MS % 1000) * 1000 };

	if ((d = calloc(1, sizeof(*d))) == NULL)
		return NULL;
	d->d_base = base;
	d->d_udp_fd = udp_fd;
	LIST_INIT(&d->d_tcp);
	pthread_mutex_lock(&dns_inst_lock);
	/* Before the first instance's thread starts, so before any query. */
	if (proxy_dns_sb_init() == -1) {
		pthread_mutex_unlock(&dns_inst_lock);
		free(d);
		return NULL;
	}
	if (dns_refs++ == 0)
		__atomic_store_n(&dns_window_ms, proxy_dns_now_ms(), __ATOMIC_RELAXED);
	pthread_mutex_unlock(&dns_inst_lock);

	if (udp_fd != -1) {
		if (evutil_make_socket_nonblocking(udp_fd) == -1 ||
		    (d->d_udp_ev = event_new(base, udp_fd, EV_READ | EV_PERSIST,
		    dns_udp_cb, d)) == NULL || event_add(d->d_udp_ev, NULL) == -1)
			goto error;
	}
	if (tcp_fd != -1) {
		/* The fd stays the core's: no LEV_OPT_CLOSE_ON_FREE. */
		if ((d->d_lev = evconnlistener_new(base, dns_tcp_accept_cb, d,
		    LEV_OPT_CLOSE_ON_EXEC, -1, tcp_fd)) == NULL)
			goto error;
		evconnlistener_set_error_cb(d->d_lev, dns_tcp_accept_error_cb);
	}
	if ((d->d_tick = event_new(base, -1, EV_PERSIST, dns_tick_cb, d)) == NULL ||
	    event_add(d->d_tick, &tv) == -1)
		goto error;
	return d;
 error:
	proxy_dns_free(d);
	return NULL;
}

void
proxy_dns_free(struct proxy_dns *d)
{
	struct proxy_dns_out out = PROXY_DNS_OUT_INIT;
	int last;

	if (d == NULL)
		return;
	while (!LIST_EMPTY(&d->d_tcp))
		dns_tcp_free(LIST_FIRST(&d->d_tcp));
	if (d->d_lev != NULL)
		evconnlistener_free(d->d_lev);
	if (d->d_udp_ev != NULL)
		event_free(d->d_udp_ev);
	if (d->d_tick != NULL)
		event_free(d->d_tick);
	pthread_mutex_lock(&dns_inst_lock);
	last = --dns_refs == 0;
	pthread_mutex_unlock(&dns_inst_lock);
	/*
	 * The last one out writes what is pending.  The sandboxes keep their state
	 * until the registry lets them go; should the walk fail, each writes its own
	 * then (proxy_dns_sb_free()).
	 */
	if (last)
		(void)dns_close_all(&out, 1);
	proxy_dns_out_flush(&out);
	free(d);
}
