/*
 * proxy/proxy_dns_sb.c: one sandbox's DNS accounting (see proxy_dns_sb.h): the rate
 * limit, the TCP client limit and the aggregated `dns` audit records of one
 * sandbox, or of every source that is no sandbox (dns_nosb).  The registry makes
 * one per sandbox (ps_dns) and frees it with the sandbox's last reference; policy
 * DNS (proxy_dns.c) counts each query against it and closes every window.
 *
 * One lock per state, and nothing shared between states but the hash key (made
 * once) and the TCP client total (an atomic): a query of one sandbox never waits
 * for another's.  Records are gathered under the lock into a struct proxy_dns_out
 * and written once it is released, so an fsync never holds up another query.
 *
 * Audit aggregation.  The first query for a (name, type, outcome) of a sandbox in a
 * window is written at once (a denial is fsynced per the audit configuration
 * before the answer goes out); repeats within the window are counted and written
 * as one record with "count":N when the window closes.  A sandbox may open at most
 * DNS_SB_BUDGET new keys per window: past that (a VM asking for endless random
 * names), queries are counted per outcome and written at the window's end as one
 * record per outcome without a name ("aggregate":"sandbox").  Rate-limited queries
 * are dropped (a REFUSED would cost as much as an answer) and counted the same way
 * (reason "rate_limited").  So a flood costs a sandbox at most about
 * DNS_SB_BUDGET + 10 records per window.  What a state still counts when its
 * sandbox leaves the registry is written by the remover (proxy_dns_sb_flush()),
 * and what a query in flight added after, when the state is freed: every count is
 * taken under the lock and zeroed, so none is lost and none written twice.
 *
 * Memory.  A state's pending table holds at most DNS_SB_AGG_MAX names (when full it
 * is written out early), so one sandbox cannot grow the process: the whole is
 * bounded by the registry's size (PROXY_RECORDS_MAX sandboxes, plus removed ones
 * until their last reference goes, which no new query finds) times DNS_SB_AGG_MAX
 * entries of struct dns_agg, plus dns_nosb's, and by DNS_AGG_TOTAL_MAX in all
 * (dns_agg_total, an atomic): past it a first query is still written at once and
 * counted against the budget, only no entry is kept to count its repeats, so the
 * records a flood costs stay bounded by the budget either way.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "log.h"
#include "proxy_dns_sb.h"
#include "proxy_globals.h"
#include "proxy_reason.h"
#include "proxy_stats.h"
#include "siphash.h"

#define DNS_RATE_QPS		100	/* per sandbox */
#define DNS_RATE_BURST		200
#define DNS_SB_BUDGET		32	/* immediate records per sandbox per window */
#define DNS_SB_AGG_MAX		128	/* pending aggregates per sandbox */
#define DNS_AGG_TOTAL_MAX	16384	/* pending aggregates in all (~9 MiB) */
#define DNS_SB_AGG_BUCKETS	64
#define DNS_TCP_PER_SB		8	/* concurrent TCP clients per sandbox */
#define DNS_TCP_MAX		512	/* concurrent TCP clients in all */

static size_t dns_agg_total;	/* entries of every state's table (atomic) */

struct dns_agg {
	struct dns_agg	*da_next;	/* hash chain */
	struct proxy_dns_rec	 da_rec;	/* da_rec.dr_count: repeats pending */
	uint64_t	 da_hits;	/* queries this window, the first included */
};

/*
 * One sandbox's DNS state (ps_dns), or dns_nosb's.  A pointer in struct
 * proxy_sandbox rather than a member: proxy_registry.h then needs none of the
 * types here, and no file but this one can touch the state without its lock.
 * ds_lock guards every other field.
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

static uint8_t dns_key[16];		/* the pending tables' hash key */
static int dns_keyed;			/* made: it never changes after */
static unsigned int dns_tcp_total;	/* atomic: live TCP clients in all */

uint64_t
proxy_dns_now_ms(void)
{
	return proxy_stats_now_us() / 1000;	/* CLOCK_MONOTONIC */
}

int
proxy_dns_outcome_is_deny(enum proxy_dns_outcome o)
{
	return o != PROXY_DNS_ANSWER && o != PROXY_DNS_NODATA;
}

/* Writes one record to the audit log (no lock held). */
static void
dns_audit_write(const struct proxy_dns_rec *d)
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
	r.ar_decision = proxy_dns_outcome_is_deny(d->dr_outcome) ? "deny" : "allow";
	r.ar_rule = d->dr_rule[0] != '\0' ? d->dr_rule : NULL;
	r.ar_rule_file = d->dr_rule_file[0] != '\0' ? d->dr_rule_file : NULL;
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
		uint64_t now = proxy_dns_now_ms();

		/* Rate-limited: a full disk must not turn into a log flood too. */
		if (now - __atomic_load_n(&warned_ms, __ATOMIC_RELAXED) > 10000) {
			__atomic_store_n(&warned_ms, now, __ATOMIC_RELAXED);
			log_warn("dns: audit write");
		}
	}
}

static int
dns_out_add(struct proxy_dns_out *o, const struct proxy_dns_rec *r)
{
	struct proxy_dns_rec *n;
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

void
proxy_dns_out_flush(struct proxy_dns_out *o)
{
	size_t i;

	for (i = 0; i < o->n; i++)
		dns_audit_write(&o->v[i]);
	free(o->v);
	memset(o, 0, sizeof(*o));
}

int
proxy_dns_sb_init(void)
{
	/*
	 * Once: the sandboxes' tables, which outlive every proxy_dns, keep their
	 * buckets.  Read unlocked by the workers, whose threads start after it.
	 */
	if (dns_keyed)
		return 0;
	if (getrandom(dns_key, sizeof(dns_key), 0) != sizeof(dns_key))
		return -1;
	dns_keyed = 1;
	return 0;
}

struct proxy_dns_sb *
proxy_dns_sb_nosb(void)
{
	return &dns_nosb;
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
	s->ds_refill_ms = proxy_dns_now_ms();
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
dns_agg_hash(const struct proxy_dns_rec *r)
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
dns_agg_same(const struct proxy_dns_rec *a, const struct proxy_dns_rec *b)
{
	return a->dr_qtype == b->dr_qtype && a->dr_outcome == b->dr_outcome &&
	    a->dr_would_deny == b->dr_would_deny &&
	    strcmp(a->dr_qname, b->dr_qname) == 0;
}

/* Adds r to o; a record that finds no room is said lost. */
static void
dns_out_keep(struct proxy_dns_out *o, const struct proxy_dns_rec *r)
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
dns_agg_drain(struct proxy_dns_sb *s, struct proxy_dns_out *o, int all)
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
				__atomic_sub_fetch(&dns_agg_total, 1,
				    __ATOMIC_RELAXED);
				continue;
			}
			a->da_hits = 0;
			pp = &a->da_next;
		}
	}
}

/* Adds to o one record without a name: count queries of s with this outcome. */
static void
dns_sb_summary(const struct proxy_dns_sb *s, struct proxy_dns_out *o,
    enum proxy_dns_outcome outcome, const char *reason, uint64_t count)
{
	struct proxy_dns_rec r;

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
dns_sb_close(struct proxy_dns_sb *s, struct proxy_dns_out *o, int all)
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
proxy_dns_sb_close(struct proxy_dns_sb *s, struct proxy_dns_out *o, int all)
{
	pthread_mutex_lock(&s->ds_lock);
	dns_sb_close(s, o, all);
	pthread_mutex_unlock(&s->ds_lock);
}

void
proxy_dns_sb_flush(struct proxy_dns_sb *s)
{
	struct proxy_dns_out out = PROXY_DNS_OUT_INIT;

	if (s == NULL)
		return;
	/*
	 * Out of the registry, no window walk sees s again: what it counts is written
	 * now, and what a query still in flight adds, when it is freed.  Each count
	 * is taken under the lock and zeroed, so nothing is written twice.
	 */
	proxy_dns_sb_close(s, &out, 1);
	proxy_dns_out_flush(&out);
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

/*
 * Accounts one outcome r of s.  Returns 1 when r must be written at once, 0 when it
 * was counted; records drained early go to o.  Locked.
 */
static int
dns_agg_note(struct proxy_dns_sb *s, const struct proxy_dns_rec *r,
    struct proxy_dns_out *o)
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
	if (__atomic_load_n(&dns_agg_total, __ATOMIC_RELAXED) < DNS_AGG_TOTAL_MAX &&
	    (a = calloc(1, sizeof(*a))) != NULL) {
		a->da_rec = *r;
		a->da_rec.dr_count = 0;
		a->da_hits = 1;
		a->da_next = s->ds_agg[h];
		s->ds_agg[h] = a;
		s->ds_nagg++;
		__atomic_add_fetch(&dns_agg_total, 1, __ATOMIC_RELAXED);
	}
	return 1;
}

int
proxy_dns_sb_admit(struct proxy_dns_sb *s, const char *src)
{
	uint64_t now = proxy_dns_now_ms();
	int allowed;

	pthread_mutex_lock(&s->ds_lock);
	snprintf(s->ds_src, sizeof(s->ds_src), "%s", src);
	if (!(allowed = dns_rate_take(s, now)))
		s->ds_rate_dropped++;
	pthread_mutex_unlock(&s->ds_lock);
	return allowed;
}

void
proxy_dns_sb_note(struct proxy_dns_sb *s, const struct proxy_dns_rec *r)
{
	struct proxy_dns_out out = PROXY_DNS_OUT_INIT;
	int now_write;

	pthread_mutex_lock(&s->ds_lock);
	now_write = dns_agg_note(s, r, &out);
	pthread_mutex_unlock(&s->ds_lock);
	/* Written before the answer is sent: a denial is on disk first. */
	proxy_dns_out_flush(&out);
	if (now_write)
		dns_audit_write(r);
}

int
proxy_dns_sb_tcp_take(struct proxy_dns_sb *s)
{
	int admit = 0;

	/*
	 * The total is counted first and given back on refusal: at the limit, a
	 * refused client may for a moment turn away another one too, never let one
	 * more in.
	 */
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

void
proxy_dns_sb_tcp_give(struct proxy_dns_sb *s)
{
	pthread_mutex_lock(&s->ds_lock);
	if (s->ds_tcp > 0)
		s->ds_tcp--;
	pthread_mutex_unlock(&s->ds_lock);
	__atomic_sub_fetch(&dns_tcp_total, 1, __ATOMIC_RELAXED);
}

