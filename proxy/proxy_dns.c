/*
 * proxy/proxy_dns.c: policy DNS over UDP and TCP (see proxy_dns.h).  What to answer is decided by proxy_dns_answer(), a pure
 * function (proxy_dns_answer.c); this file does the sockets, the per-sandbox rate
 * limit and TCP client limit, and the aggregated `dns` audit records.  Nothing is
 * ever forwarded upstream.
 *
 * Threads.  The core runs one proxy_dns per worker thread, all on the same UDP and TCP
 * sockets (the kernel hands each datagram / connection to one reader).  The state that
 * must be per sandbox and not per thread -- token bucket, TCP client count, pending
 * audit aggregates -- is a struct proxy_dns_sb that the sandbox owns (ps_dns, made
 * and freed with its struct proxy_sandbox), under a lock of its own: a query finds
 * its sandbox by source address (proxy_sandbox_find()) and takes that sandbox's lock
 * only.  Sources that are no sandbox share one such state, dns_nosb.  Audit records
 * are copied out under the lock and written after it is released, so an fsync never
 * holds up another query.
 *
 * Audit aggregation.  The first query for a (sandbox, name, type, outcome) in a window
 * is written at once (a denial is fsynced per the audit configuration before the
 * answer goes out); repeats within the window are counted and written as one record
 * with "count":N when the window closes.  A sandbox may open at most DNS_SB_BUDGET new
 * keys per window: past that (a VM asking for endless random names), queries are
 * counted per outcome and written at the window's end as one record per outcome
 * without a name ("aggregate":"sandbox").  Rate-limited queries are dropped (a
 * REFUSED would cost as much as an answer) and counted the same way (reason
 * "rate_limited").  So a flood costs a sandbox at most about DNS_SB_BUDGET + 10
 * records per window.  One window runs for all: every instance ticks, the one that
 * moves dns_window_ms on walks the registry (proxy_sandbox_foreach()) and closes
 * each sandbox's window under that sandbox's lock.  A sandbox that leaves the
 * registry has what it counts written by the remover (proxy_dns_sb_flush()), and
 * what a query in flight added then when its last reference goes
 * (proxy_dns_sb_free()).
 *
 * Memory.  A sandbox's pending table holds at most DNS_SB_AGG_MAX names (when full
 * it is written out early), so one sandbox cannot grow the process: the whole is
 * bounded by the registry's size (PROXY_RECORDS_MAX sandboxes, plus removed ones
 * until their last reference goes; no query reaches those) times DNS_SB_AGG_MAX
 * entries of struct dns_agg, plus dns_nosb's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "log.h"
#include "proxy_dns.h"
#include "proxy_globals.h"
#include "proxy_registry.h"
#include "proxy_dns_codec.h"
#include "siphash.h"
#include "proxy_reason.h"

#define DNS_WINDOW_MS		10000	/* audit aggregation window */
#define DNS_TICK_MS		1000	/* each instance's timer; the window decides */
#define DNS_RATE_QPS		100	/* per sandbox */
#define DNS_RATE_BURST		200
#define DNS_SB_BUDGET		32	/* immediate records per sandbox per window */
#define DNS_SB_AGG_MAX		128	/* pending aggregates per sandbox */
#define DNS_SB_AGG_BUCKETS	64
#define DNS_UDP_BATCH		64	/* datagrams per readable event */
#define DNS_TCP_PER_SB		8	/* concurrent TCP clients per sandbox */
#define DNS_TCP_MAX		512	/* concurrent TCP clients in all */
#define DNS_TCP_IDLE_S		10
#define DNS_TCP_IN_MAX		8192	/* read high watermark */
#define DNS_TCP_OUT_MAX		8192	/* stop reading while more is unsent */
#define DNS_RULE_MAX		128	/* rule ids longer are cut in dns records */

/* One audit-worthy outcome, as written (or pending). */
struct dns_rec {
	char		 dr_sandbox[SANDBOX_NAME_MAX + 1];	/* "" for no sandbox */
	char		 dr_src[NETADDR_STRLEN];
	char		 dr_qname[DNS_NAME_WIRE_MAX + 1];	/* "" when aggregated */
	uint16_t	 dr_qtype;
	enum proxy_dns_outcome dr_outcome;
	const char	*dr_reason;	/* static string or NULL */
	char		 dr_rule[DNS_RULE_MAX];
	int		 dr_would_deny;
	char		 dr_answer[NETADDR_STRLEN];
	uint64_t	 dr_count;	/* 0: the first, written at once */
	int		 dr_by_sandbox;	/* names omitted: per-sandbox aggregate */
};

struct dns_agg {
	struct dns_agg	*da_next;	/* hash chain */
	struct dns_rec	 da_rec;	/* da_rec.dr_count: repeats pending */
	uint64_t	 da_hits;	/* queries this window, the first included */
};

/*
 * One sandbox's DNS state (ps_dns), or dns_nosb's.  A pointer in struct
 * proxy_sandbox rather than a member: proxy.h then needs none of the types above,
 * and no file but this one can touch the state without its lock.  ds_lock guards
 * every other field; nothing here is shared with another sandbox's state.
 */
struct proxy_dns_sb {
	pthread_mutex_t	 ds_lock;
	char		 ds_name[SANDBOX_NAME_MAX + 1];	/* "" for dns_nosb */
	char		 ds_src[NETADDR_STRLEN];	/* last source seen */
	double		 ds_tokens;
	uint64_t	 ds_refill_ms;
	unsigned int	 ds_tcp;		/* live TCP clients */
	unsigned int	 ds_budget;		/* immediate records this window */
	uint64_t	 ds_over[PROXY_DNS_DROP + 1];	/* names omitted, per outcome */
	uint64_t	 ds_rate_dropped;
	struct dns_agg	*ds_agg[DNS_SB_AGG_BUCKETS];	/* pending, by name */
	size_t		 ds_nagg;
};

/* Every source that is no sandbox: one state, one rate limit, as one sandbox. */
static struct proxy_dns_sb dns_nosb = {
	.ds_lock = PTHREAD_MUTEX_INITIALIZER,
	.ds_tokens = DNS_RATE_BURST,
};

/*
 * What is process-wide.  dns_inst_lock guards the instance count and the hash key's
 * making (proxy_dns_new/free, never a query).  The window's start and the TCP
 * client total are atomics.
 */
static pthread_mutex_t dns_inst_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int dns_refs;		/* live proxy_dns instances */
static int dns_keyed;			/* dns_key made: it never changes after */
static uint8_t dns_key[16];
static uint64_t dns_window_ms;		/* atomic: when the current window began */
static unsigned int dns_tcp_total;	/* atomic: live TCP clients in all */

struct dns_tcp {
	LIST_ENTRY(dns_tcp) t_entry;
	struct proxy_dns *t_d;
	struct bufferevent *t_bev;
	struct sockaddr_storage t_ss;
	socklen_t	 t_sslen;
	struct proxy_sandbox *t_ps;	/* referenced, whose ds_tcp we hold; NULL: nosb */
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

/* A batch of records to write once a lock is released. */
struct dns_out {
	struct dns_rec	*v;
	size_t		 n, cap;
};

static uint64_t
dns_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int
dns_outcome_is_deny(enum proxy_dns_outcome o)
{
	return o != PROXY_DNS_ANSWER && o != PROXY_DNS_NODATA;
}

/* Writes one record to the audit log (no lock held). */
static void
dns_audit_write(const struct dns_rec *d)
{
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_kv kv[6];
	struct audit_log *log;
	char type[16];
	size_t n = 0;
	static uint64_t warned_ms;

	if ((log = proxy_audit()) == NULL)
		return;
	r.ar_event = AUDIT_EV_DNS;
	r.ar_sandbox = d->dr_sandbox[0] != '\0' ? d->dr_sandbox : NULL;
	r.ar_src = d->dr_src[0] != '\0' ? d->dr_src : NULL;
	r.ar_decision = dns_outcome_is_deny(d->dr_outcome) ? "deny" : "allow";
	r.ar_rule = d->dr_rule[0] != '\0' ? d->dr_rule : NULL;
	r.ar_reason = d->dr_reason;
	r.ar_would_deny = d->dr_would_deny;
	if (d->dr_qname[0] != '\0')
		kv[n++] = (struct audit_kv){ .ak_key = "qname",
		    .ak_str = d->dr_qname };
	if (d->dr_qtype != 0)
		kv[n++] = (struct audit_kv){ .ak_key = "qtype",
		    .ak_str = dns_type_str(d->dr_qtype, type, sizeof(type)) };
	kv[n++] = (struct audit_kv){ .ak_key = "outcome",
	    .ak_str = proxy_dns_outcome_str(d->dr_outcome) };
	if (d->dr_answer[0] != '\0')
		kv[n++] = (struct audit_kv){ .ak_key = "answer",
		    .ak_str = d->dr_answer };
	if (d->dr_count > 0)
		kv[n++] = (struct audit_kv){ .ak_key = "count",
		    .ak_num = (long long)d->dr_count };
	if (d->dr_by_sandbox)
		kv[n++] = (struct audit_kv){ .ak_key = "aggregate",
		    .ak_str = "sandbox" };
	r.ar_extra = kv;
	r.ar_nextra = n;
	if (audit_write(log, &r) == -1) {
		uint64_t now = dns_now_ms();

		/* Rate-limited: a full disk must not turn into a log flood too. */
		if (now - __atomic_load_n(&warned_ms, __ATOMIC_RELAXED) > 10000) {
			__atomic_store_n(&warned_ms, now, __ATOMIC_RELAXED);
			log_warn("dns: audit write");
		}
	}
}

static int
dns_out_add(struct dns_out *o, const struct dns_rec *r)
{
	struct dns_rec *n;
	size_t cap;

	if (o->n == o->cap) {
		cap = o->cap ? o->cap * 2 : 16;
		if ((n = reallocarray(o->v, cap, sizeof(*n))) == NULL)
			return -1;
		o->v = n;
		o->cap = cap;
	}
	o->v[o->n++] = *r;
	return 0;
}

/* Writes and releases a batch (no lock held). */
static void
dns_out_flush(struct dns_out *o)
{
	size_t i;

	for (i = 0; i < o->n; i++)
		dns_audit_write(&o->v[i]);
	free(o->v);
	memset(o, 0, sizeof(*o));
}

/* The DNS state a query of ps (NULL: no sandbox) counts against. */
static struct proxy_dns_sb *
dns_sb_of(struct proxy_sandbox *ps)
{
	return ps != NULL ? ps->ps_dns : &dns_nosb;
}

struct proxy_dns_sb *
proxy_dns_sb_new(const char *name)
{
	struct proxy_dns_sb *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	if (pthread_mutex_init(&s->ds_lock, NULL) != 0) {
		free(s);
		return NULL;
	}
	snprintf(s->ds_name, sizeof(s->ds_name), "%s", name);
	s->ds_tokens = DNS_RATE_BURST;
	s->ds_refill_ms = dns_now_ms();
	return s;
}

/* Takes one token from s's bucket.  1 if the query may be answered.  Locked. */
static int
dns_rate_take(struct proxy_dns_sb *s, uint64_t now)
{
	if (now > s->ds_refill_ms) {
		s->ds_tokens += (double)(now - s->ds_refill_ms) * DNS_RATE_QPS / 1000.0;
		if (s->ds_tokens > DNS_RATE_BURST)
			s->ds_tokens = DNS_RATE_BURST;
		s->ds_refill_ms = now;
	}
	if (s->ds_tokens < 1.0)
		return 0;
	s->ds_tokens -= 1.0;
	return 1;
}

/* The bucket of r in its sandbox's table: the sandbox is the table's, not the key's. */
static uint32_t
dns_agg_hash(const struct dns_rec *r)
{
	uint8_t buf[DNS_NAME_WIRE_MAX + 1 + 4];
	size_t b = strlen(r->dr_qname);

	memcpy(buf, r->dr_qname, b + 1);
	buf[b + 1] = r->dr_qtype >> 8;
	buf[b + 2] = r->dr_qtype & 0xff;
	buf[b + 3] = (uint8_t)r->dr_outcome;
	buf[b + 4] = (uint8_t)r->dr_would_deny;
	return (uint32_t)siphash24(dns_key, buf, b + 5) % DNS_SB_AGG_BUCKETS;
}

static int
dns_agg_same(const struct dns_rec *a, const struct dns_rec *b)
{
	return a->dr_qtype == b->dr_qtype && a->dr_outcome == b->dr_outcome &&
	    a->dr_would_deny == b->dr_would_deny &&
	    strcmp(a->dr_qname, b->dr_qname) == 0;
}

/* Adds r to o; a record that finds no room is said lost. */
static void
dns_out_keep(struct dns_out *o, const struct dns_rec *r)
{
	if (dns_out_add(o, r) == -1)
		log_warnx("dns: out of memory, %llu dns records lost",
		    (unsigned long long)r->dr_count);
}

/*
 * Moves every pending count of s to o; with all != 0 empties s's table, otherwise
 * drops only the entries that saw no query in the window that ends.  Locked.
 */
static void
dns_agg_drain(struct proxy_dns_sb *s, struct dns_out *o, int all)
{
	struct dns_agg **pp, *a;
	size_t i;

	for (i = 0; i < DNS_SB_AGG_BUCKETS && s->ds_nagg > 0; i++) {
		pp = &s->ds_agg[i];
		while ((a = *pp) != NULL) {
			if (a->da_rec.dr_count > 0) {
				dns_out_keep(o, &a->da_rec);
				a->da_rec.dr_count = 0;
			}
			if (all || a->da_hits == 0) {
				*pp = a->da_next;
				free(a);
				s->ds_nagg--;
				continue;
			}
			a->da_hits = 0;
			pp = &a->da_next;
		}
	}
}

/* Adds to o one record without a name: count queries of s with this outcome. */
static void
dns_sb_summary(const struct proxy_dns_sb *s, struct dns_out *o,
    enum proxy_dns_outcome outcome, const char *reason, uint64_t count)
{
	struct dns_rec r;

	if (count == 0)
		return;
	memset(&r, 0, sizeof(r));
	snprintf(r.dr_sandbox, sizeof(r.dr_sandbox), "%s", s->ds_name);
	snprintf(r.dr_src, sizeof(r.dr_src), "%s", s->ds_src);
	r.dr_outcome = outcome;
	r.dr_reason = reason;
	r.dr_count = count;
	r.dr_by_sandbox = 1;
	dns_out_keep(o, &r);
}

/*
 * Closes s's window: pending counts and per-sandbox aggregates go to o, the budget
 * starts again.  all: the table is emptied too (s goes, or DNS does).  Locked, or s
 * is no one else's.
 */
static void
dns_sb_close(struct proxy_dns_sb *s, struct dns_out *o, int all)
{
	int k;

	dns_agg_drain(s, o, all);
	for (k = 0; k <= PROXY_DNS_DROP; k++) {
		dns_sb_summary(s, o, (enum proxy_dns_outcome)k, NULL, s->ds_over[k]);
		s->ds_over[k] = 0;
	}
	dns_sb_summary(s, o, PROXY_DNS_DROP, PR_STR(RATE_LIMITED),
	    s->ds_rate_dropped);
	s->ds_rate_dropped = 0;
	s->ds_budget = 0;
}

void
proxy_dns_sb_flush(struct proxy_dns_sb *s)
{
	struct dns_out out = { NULL, 0, 0 };

	if (s == NULL)
		return;
	/*
	 * Out of the registry, no window walk sees s again: what it counts is written
	 * now, and what a query still in flight adds, when it is freed.  Each count
	 * is taken under the lock and zeroed, so nothing is written twice.
	 */
	pthread_mutex_lock(&s->ds_lock);
	dns_sb_close(s, &out, 1);
	pthread_mutex_unlock(&s->ds_lock);
	dns_out_flush(&out);
}

void
proxy_dns_sb_free(struct proxy_dns_sb *s)
{
	if (s == NULL)
		return;
	/* The last reference: no query, TCP client or window walk holds s. */
	proxy_dns_sb_flush(s);
	pthread_mutex_destroy(&s->ds_lock);
	free(s);
}

/* The registry walk of dns_close_all(). */
struct dns_close {
	struct dns_out	*c_out;
	int		 c_all;
};

static void
dns_close_one(struct proxy_sandbox *ps, void *arg)
{
	struct dns_close *c = arg;

	pthread_mutex_lock(&ps->ps_dns->ds_lock);
	dns_sb_close(ps->ps_dns, c->c_out, c->c_all);
	pthread_mutex_unlock(&ps->ps_dns->ds_lock);
}

/*
 * Closes the window of every sandbox in the registry and of dns_nosb, records to o
 * (written by the caller, no lock held).  -1 if the registry could not be walked
 * (only dns_nosb's closed: the sandboxes' counts wait).
 */
static int
dns_close_all(struct dns_out *o, int all)
{
	struct dns_close c = { o, all };
	int rv;

	rv = proxy_sandbox_foreach(dns_close_one, &c);
	pthread_mutex_lock(&dns_nosb.ds_lock);
	dns_sb_close(&dns_nosb, o, all);
	pthread_mutex_unlock(&dns_nosb.ds_lock);
	return rv;
}

/*
 * Accounts one outcome r of s.  Returns 1 when r must be written at once, 0 when it
 * was counted; records drained early go to o.  Locked.
 */
static int
dns_agg_note(struct proxy_dns_sb *s, const struct dns_rec *r, struct dns_out *o)
{
	struct dns_agg *a;
	uint32_t h = dns_agg_hash(r);

	for (a = s->ds_agg[h]; a != NULL; a = a->da_next) {
		if (dns_agg_same(&a->da_rec, r)) {
			a->da_rec.dr_count++;
			a->da_hits++;
			return 0;
		}
	}
	if (s->ds_budget >= DNS_SB_BUDGET) {
		s->ds_over[r->dr_outcome]++;
		return 0;
	}
	if (s->ds_nagg >= DNS_SB_AGG_MAX)
		dns_agg_drain(s, o, 1);	/* full: write its counts out early */
	s->ds_budget++;
	if ((a = calloc(1, sizeof(*a))) != NULL) {
		a->da_rec = *r;
		a->da_rec.dr_count = 0;
		a->da_hits = 1;
		a->da_next = s->ds_agg[h];
		s->ds_agg[h] = a;
		s->ds_nagg++;
	}
	return 1;
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
	struct dns_out out = { NULL, 0, 0 };
	struct dns_rec rec;
	struct proxy_dns_sb *s;
	struct netaddr src;
	const char *name = "";
	char srcs[NETADDR_STRLEN];
	uint64_t now = dns_now_ms();
	int allowed, now_write = 0;

	*rlen = 0;
	if (netaddr_from_sockaddr(sa, &src, NULL) == -1)
		return;
	netaddr_fmt(&src, srcs, sizeof(srcs));
	if ((ps = proxy_sandbox_find(&src)) != NULL) {
		name = ps->ps_rec.sb_name;
		proxy_sandbox_count(ps, PROXY_STAT_DNS_QUERIES, 1);
	}
	/* Ours for as long as we hold ps (or for good: dns_nosb). */
	s = dns_sb_of(ps);

	pthread_mutex_lock(&s->ds_lock);
	snprintf(s->ds_src, sizeof(s->ds_src), "%s", srcs);
	if (!(allowed = dns_rate_take(s, now)))
		s->ds_rate_dropped++;
	pthread_mutex_unlock(&s->ds_lock);
	if (!allowed) {
		if (ps != NULL)
			proxy_sandbox_count(ps, PROXY_STAT_DNS_DENIED, 1);
		goto out;
	}

	if (ps != NULL)
		pp = proxy_sandbox_policy(ps);
	if (proxy_dns_answer(pp != NULL ? pp->pp_policy : NULL,
	    ps != NULL ? ps->ps_map : NULL, q, qlen, udp, resp, resplen, rlen,
	    &res) == -1)
		*rlen = 0;

	memset(&rec, 0, sizeof(rec));
	snprintf(rec.dr_sandbox, sizeof(rec.dr_sandbox), "%s", name);
	snprintf(rec.dr_src, sizeof(rec.dr_src), "%s", srcs);
	snprintf(rec.dr_qname, sizeof(rec.dr_qname), "%s", res.dr_qname);
	rec.dr_qtype = res.dr_qtype;
	rec.dr_outcome = res.dr_outcome;
	rec.dr_reason = res.dr_reason;
	if (res.dr_rule != NULL)
		snprintf(rec.dr_rule, sizeof(rec.dr_rule), "%s", res.dr_rule);
	rec.dr_would_deny = res.dr_would_deny;
	if (res.dr_outcome == PROXY_DNS_ANSWER)
		netaddr_fmt(&res.dr_addr, rec.dr_answer, sizeof(rec.dr_answer));
	if (ps != NULL && dns_outcome_is_deny(res.dr_outcome))
		proxy_sandbox_count(ps, PROXY_STAT_DNS_DENIED, 1);

	pthread_mutex_lock(&s->ds_lock);
	now_write = dns_agg_note(s, &rec, &out);
	pthread_mutex_unlock(&s->ds_lock);
	/* Written before the answer is sent: a denial is on disk first. */
	dns_out_flush(&out);
	if (now_write)
		dns_audit_write(&rec);
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

/*
 * Takes a TCP client slot of s and one of all.  1 if admitted.  The total is counted
 * first and given back on refusal: at the limit, a refused client may for a moment
 * turn away another one too, never let one more in.
 */
static int
dns_tcp_take(struct proxy_dns_sb *s)
{
	int admit = 0;

	if (__atomic_add_fetch(&dns_tcp_total, 1, __ATOMIC_RELAXED) <=
	    DNS_TCP_MAX) {
		pthread_mutex_lock(&s->ds_lock);
		if (s->ds_tcp < DNS_TCP_PER_SB) {
			s->ds_tcp++;
			admit = 1;
		}
		pthread_mutex_unlock(&s->ds_lock);
	}
	if (!admit)
		__atomic_sub_fetch(&dns_tcp_total, 1, __ATOMIC_RELAXED);
	return admit;
}

/* Gives back what dns_tcp_take() took. */
static void
dns_tcp_give(struct proxy_dns_sb *s)
{
	pthread_mutex_lock(&s->ds_lock);
	if (s->ds_tcp > 0)
		s->ds_tcp--;
	pthread_mutex_unlock(&s->ds_lock);
	__atomic_sub_fetch(&dns_tcp_total, 1, __ATOMIC_RELAXED);
}

static void
dns_tcp_free(struct dns_tcp *t)
{
	dns_tcp_give(dns_sb_of(t->t_ps));
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
	if (!dns_tcp_take(s)) {
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
	dns_tcp_give(s);
 out:
	proxy_sandbox_put(ps);
}

static void
dns_tcp_accept_error_cb(struct evconnlistener *lev, void *arg)
{
	static uint64_t warned_ms;
	uint64_t now = dns_now_ms();

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
	struct dns_out out = { NULL, 0, 0 };
	uint64_t start, now;

	(void)fd;
	(void)what;
	(void)arg;
	start = __atomic_load_n(&dns_window_ms, __ATOMIC_RELAXED);
	now = dns_now_ms();
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
	dns_out_flush(&out);
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
	/*
	 * Made once, before the first instance and so before any query: the
	 * sandboxes' tables, which outlive instances, keep their buckets, and the
	 * workers read it unlocked (their threads start after this).
	 */
	if (!dns_keyed) {
		if (getrandom(dns_key, sizeof(dns_key), 0) != sizeof(dns_key)) {
			pthread_mutex_unlock(&dns_inst_lock);
			free(d);
			return NULL;
		}
		dns_keyed = 1;
	}
	if (dns_refs++ == 0)
		__atomic_store_n(&dns_window_ms, dns_now_ms(), __ATOMIC_RELAXED);
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
	struct dns_out out = { NULL, 0, 0 };
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
	dns_out_flush(&out);
	free(d);
}
