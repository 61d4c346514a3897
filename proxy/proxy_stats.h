/*
 * proxy/proxy_stats.h: the counters and histograms behind airlockd's metrics
 * (proxy_stats.c; proxy_metrics.c writes them out).  Lock-free: every worker thread
 * adds with relaxed atomics, the metrics reader reads each value on its own (a
 * scrape may see one counter a request ahead of another, never a torn value).
 */
#ifndef AIRLOCK_PROXY_STATS_H
#define AIRLOCK_PROXY_STATS_H

#include <stdint.h>

#include "proxy_reason.h"

/* What DNS told a VM: enum proxy_dns_outcome's values (proxy_dns_codec.h). */
#define PROXY_STATS_DNS_N	16

/* One sandbox's counters (in its struct proxy_sandbox). */
struct proxy_sb_stats {
	uint64_t	ss_reasons[PR__COUNT];	/* denials by reason code */
	uint64_t	ss_requests_allowed;	/* inspected requests (streams) */
	uint64_t	ss_requests_denied;
	uint64_t	ss_exfil;		/* exfil records */
	uint64_t	ss_dns[PROXY_STATS_DNS_N];	/* DNS answers by outcome */
	uint64_t	ss_pool[3];		/* enum proxy_pool_use */
};

/* An inspected connection's upstream and the pool (proxy_pool.c). */
enum proxy_pool_use {
	PPU_HIT = 0,		/* an idle pooled connection served it */
	PPU_MISS,		/* none was there: dialled */
	PPU_RETRY,		/* the pooled one failed before answering: dialled */
};
/* Why an idle pooled connection was closed. */
enum proxy_pool_close {
	PPC_EXPIRED = 0,	/* idle past upstream_pool_idle_ms */
	PPC_ORIGIN,		/* the origin closed it or sent bytes while idle */
	PPC_EVICTED,		/* a limit made room for a newer one */
	PPC_PURGED,		/* a reload: sandbox gone, policy changed */
	PPC_SHUTDOWN,		/* the worker stopped */
	PPC__COUNT
};
extern const char *const proxy_pool_close_names[PPC__COUNT];

/* A denial for reason code (a PR_STR() or policy_reason_str() string). */
void	proxy_sb_stats_denial(struct proxy_sb_stats *ss, const char *reason);
void	proxy_sb_stats_request(struct proxy_sb_stats *ss, int allowed);
void	proxy_sb_stats_exfil(struct proxy_sb_stats *ss);
/* outcome: an enum proxy_dns_outcome (one past the table is not counted). */
void	proxy_sb_stats_dns(struct proxy_sb_stats *ss, unsigned int outcome);
void	proxy_sb_stats_pool(struct proxy_sb_stats *ss, enum proxy_pool_use u);
/* Reads one counter. */
uint64_t proxy_stats_get(const uint64_t *c);
/* Idle pooled connections (all workers): delta +1 or -1; the count now. */
void	proxy_stats_pool_idle(int delta);
uint64_t proxy_stats_pool_idle_now(void);
void	proxy_stats_pool_closed(enum proxy_pool_close why);
uint64_t proxy_stats_pool_closes(enum proxy_pool_close why);

/* Latency histograms, one per kind, over every sandbox. */
enum proxy_hist {
	PH_DIAL,		/* upstream connect (TCP, and TLS when inspecting) */
	PH_HANDSHAKE,		/* the VM's TLS handshake with airlock (inspect) */
	PH_REQUEST,		/* an inspected request: head to its record */
	PH__COUNT
};
#define PROXY_HIST_BUCKETS	12	/* upper bounds in proxy_hist_bounds_us */
extern const long long proxy_hist_bounds_us[PROXY_HIST_BUCKETS];
extern const char *const proxy_hist_names[PH__COUNT];
/* us microseconds, observed once. */
void	proxy_hist_observe(enum proxy_hist h, long long us);
/* Microseconds on CLOCK_MONOTONIC: a start to observe the time since. */
uint64_t proxy_stats_now_us(void);
/* The time since t0 (proxy_stats_now_us()) into h. */
void	proxy_hist_since(enum proxy_hist h, uint64_t t0);
/* The histogram h: cumulative counts per bound (le), the count and the sum. */
struct proxy_hist_snap {
	uint64_t	hs_le[PROXY_HIST_BUCKETS];
	uint64_t	hs_count;
	uint64_t	hs_sum_us;
};
void	proxy_hist_read(enum proxy_hist h, struct proxy_hist_snap *out);

/* Reloads: their number and how many a sandbox's policy failed in. */
void	proxy_stats_reload(int failed);
uint64_t proxy_stats_reloads(int failed);

#endif
