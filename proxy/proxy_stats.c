/*
 * proxy/proxy_stats.c: the counters and histograms behind airlockd's metrics
 * (proxy_stats.h).
 */
#include <string.h>
#include <time.h>

#include "proxy_stats.h"

/* Prometheus' default buckets but 2.5 ms, in microseconds. */
const long long proxy_hist_bounds_us[PROXY_HIST_BUCKETS] = {
	1000, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000,
	2500000, 5000000, 10000000
};

const char *const proxy_hist_names[PH__COUNT] = {
	[PH_DIAL] = "dial",
	[PH_HANDSHAKE] = "handshake",
	[PH_REQUEST] = "request",
};

/* Per kind: the count of each bucket (not cumulative), the total, the sum. */
static struct {
	uint64_t	ph_bucket[PROXY_HIST_BUCKETS + 1];	/* + the +Inf one */
	uint64_t	ph_count;
	uint64_t	ph_sum_us;
} proxy_hists[PH__COUNT];

static uint64_t proxy_reloads[2];	/* [0] all, [1] with a failed policy */
static uint64_t proxy_pool_idle;	/* idle pooled connections, all workers */
static uint64_t proxy_pool_closes[PPC__COUNT];

const char *const proxy_pool_close_names[PPC__COUNT] = {
	[PPC_EXPIRED] = "expired",
	[PPC_ORIGIN] = "origin",
	[PPC_EVICTED] = "evicted",
	[PPC_PURGED] = "reload",
	[PPC_SHUTDOWN] = "shutdown",
};

static void
stats_add(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

uint64_t
proxy_stats_get(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

void
proxy_sb_stats_denial(struct proxy_sb_stats *ss, const char *reason)
{
	size_t i;

	if (reason == NULL)
		return;
	/* Most call sites pass the table's own pointer (PR_STR()). */
	for (i = 0; i < PR__COUNT; i++)
		if (proxy_reasons[i].ri_code == reason) {
			stats_add(&ss->ss_reasons[i], 1);
			return;
		}
	for (i = 0; i < PR__COUNT; i++)
		if (strcmp(proxy_reasons[i].ri_code, reason) == 0) {
			stats_add(&ss->ss_reasons[i], 1);
			return;
		}
}

void
proxy_sb_stats_request(struct proxy_sb_stats *ss, int allowed)
{
	stats_add(allowed ? &ss->ss_requests_allowed : &ss->ss_requests_denied, 1);
}

void
proxy_sb_stats_exfil(struct proxy_sb_stats *ss)
{
	stats_add(&ss->ss_exfil, 1);
}

void
proxy_sb_stats_dns(struct proxy_sb_stats *ss, unsigned int outcome)
{
	if (outcome < PROXY_STATS_DNS_N)
		stats_add(&ss->ss_dns[outcome], 1);
}

void
proxy_sb_stats_pool(struct proxy_sb_stats *ss, enum proxy_pool_use u)
{
	if ((unsigned int)u < sizeof(ss->ss_pool) / sizeof(ss->ss_pool[0]))
		stats_add(&ss->ss_pool[u], 1);
}

void
proxy_stats_pool_idle(int delta)
{
	/* Unsigned wrap-around makes -1 a subtraction. */
	stats_add(&proxy_pool_idle, (uint64_t)(int64_t)delta);
}

uint64_t
proxy_stats_pool_idle_now(void)
{
	return proxy_stats_get(&proxy_pool_idle);
}

void
proxy_stats_pool_closed(enum proxy_pool_close why)
{
	if ((unsigned int)why < PPC__COUNT)
		stats_add(&proxy_pool_closes[why], 1);
}

uint64_t
proxy_stats_pool_closes(enum proxy_pool_close why)
{
	return (unsigned int)why < PPC__COUNT ?
	    proxy_stats_get(&proxy_pool_closes[why]) : 0;
}

void
proxy_hist_observe(enum proxy_hist h, long long us)
{
	size_t b;

	if ((unsigned int)h >= PH__COUNT)
		return;
	if (us < 0)
		us = 0;
	for (b = 0; b < PROXY_HIST_BUCKETS && us > proxy_hist_bounds_us[b]; b++)
		;
	stats_add(&proxy_hists[h].ph_bucket[b], 1);
	stats_add(&proxy_hists[h].ph_sum_us, (uint64_t)us);
	stats_add(&proxy_hists[h].ph_count, 1);
}

uint64_t
proxy_stats_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void
proxy_hist_since(enum proxy_hist h, uint64_t t0)
{
	uint64_t now = proxy_stats_now_us();

	proxy_hist_observe(h, now > t0 ? (long long)(now - t0) : 0);
}

void
proxy_hist_read(enum proxy_hist h, struct proxy_hist_snap *out)
{
	uint64_t run = 0;
	size_t b;

	memset(out, 0, sizeof(*out));
	if ((unsigned int)h >= PH__COUNT)
		return;
	for (b = 0; b < PROXY_HIST_BUCKETS; b++) {
		run += proxy_stats_get(&proxy_hists[h].ph_bucket[b]);
		out->hs_le[b] = run;
	}
	run += proxy_stats_get(&proxy_hists[h].ph_bucket[PROXY_HIST_BUCKETS]);
	/* +Inf is the count: read together, so the two agree in the exposition. */
	out->hs_count = run;
	out->hs_sum_us = proxy_stats_get(&proxy_hists[h].ph_sum_us);
}

void
proxy_stats_reload(int failed)
{
	stats_add(&proxy_reloads[0], 1);
	if (failed)
		stats_add(&proxy_reloads[1], 1);
}

uint64_t
proxy_stats_reloads(int failed)
{
	return proxy_stats_get(&proxy_reloads[failed ? 1 : 0]);
}
