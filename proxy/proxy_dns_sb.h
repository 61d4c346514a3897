/*
 * proxy/proxy_dns_sb.h: one sandbox's DNS accounting (proxy_dns_sb.c): its rate
 * limit, its DNS TCP clients and its aggregated `dns` audit records.  Below the
 * registry, which makes and frees one per sandbox (ps_dns); policy DNS
 * (proxy_dns.c) counts each query against it.
 */
#ifndef AIRLOCK_PROXY_DNS_SB_H
#define AIRLOCK_PROXY_DNS_SB_H

#include <stddef.h>
#include <stdint.h>

#include "audit.h"
#include "netaddr.h"
#include "proxy_dns_codec.h"
#include "sandbox.h"

#define PROXY_DNS_RULE_MAX	128	/* rule ids longer are cut in dns records */
/* rule_file: one byte past the audit writer's cut, so it marks a cut name */
#define PROXY_DNS_RULE_FILE_MAX	(AUDIT_STR_MAX + 2)

/* One audit-worthy outcome of a query, as written (or pending). */
struct proxy_dns_rec {
	char		 dr_sandbox[SANDBOX_NAME_MAX + 1];	/* "" for no sandbox */
	char		 dr_src[NETADDR_STRLEN];
	char		 dr_qname[DNS_NAME_WIRE_MAX + 1];	/* "" when aggregated */
	uint16_t	 dr_qtype;
	enum proxy_dns_outcome dr_outcome;
	const char	*dr_reason;	/* static string or NULL */
	char		 dr_rule[PROXY_DNS_RULE_MAX];
	char		 dr_rule_file[PROXY_DNS_RULE_FILE_MAX];
	int		 dr_would_deny;
	char		 dr_answer[NETADDR_STRLEN];
	uint64_t	 dr_count;	/* 0: the first, written at once */
	int		 dr_by_sandbox;	/* names omitted: per-sandbox aggregate */
};

/* A batch of records, gathered under locks and written once none is held. */
struct proxy_dns_out {
	struct proxy_dns_rec *v;
	size_t		 n, cap;
};
#define PROXY_DNS_OUT_INIT	{ NULL, 0, 0 }
/* Writes o's records to the audit log and empties it (no lock held). */
void	proxy_dns_out_flush(struct proxy_dns_out *o);

/* Milliseconds of CLOCK_MONOTONIC, the clock of buckets and windows. */
uint64_t proxy_dns_now_ms(void);
/* 1 if o is a denial (counted as such in stats and audited "deny"). */
int	proxy_dns_outcome_is_deny(enum proxy_dns_outcome o);

struct proxy_dns_sb;
/*
 * Makes the hash key of the pending tables, once (the tables outlive any caller);
 * later calls do nothing.  0, or -1.  Before the first query; not thread-safe.
 */
int	proxy_dns_sb_init(void);
/*
 * A sandbox's state (name: its records' "sandbox"), under a lock of its own; NULL
 * if out of memory.  proxy_dns_sb_flush() writes what it counts now (its sandbox
 * left the registry, no window walk sees it again; no lock held).
 * proxy_dns_sb_free(), at the sandbox's last reference, writes what is left and
 * frees it.
 */
struct proxy_dns_sb *proxy_dns_sb_new(const char *name);
void	proxy_dns_sb_flush(struct proxy_dns_sb *s);
void	proxy_dns_sb_free(struct proxy_dns_sb *s);
/* The one state that every source that is no sandbox shares (never freed). */
struct proxy_dns_sb *proxy_dns_sb_nosb(void);
/*
 * One query from src (text form): takes a token from s's bucket.  1 if it may be
 * answered; 0 if it is dropped (counted for the window's "rate_limited" record).
 */
int	proxy_dns_sb_admit(struct proxy_dns_sb *s, const char *src);
/*
 * Accounts the outcome r of an admitted query of s: written at once if it is the
 * first of its kind in the window, else counted.  Returns once whatever must be on
 * disk before the answer goes out is written.
 */
void	proxy_dns_sb_note(struct proxy_dns_sb *s, const struct proxy_dns_rec *r);
/*
 * Closes s's audit window: its pending counts and per-sandbox aggregates go to o,
 * its budget of immediate records starts again.  all: its pending table is emptied
 * too (the daemon's DNS goes).
 */
void	proxy_dns_sb_close(struct proxy_dns_sb *s, struct proxy_dns_out *o, int all);
/*
 * A DNS TCP client of s: proxy_dns_sb_tcp_take() is 1 if s and the process are
 * under their limits (the slot is then taken), else 0; proxy_dns_sb_tcp_give()
 * gives a taken slot back.
 */
int	proxy_dns_sb_tcp_take(struct proxy_dns_sb *s);
void	proxy_dns_sb_tcp_give(struct proxy_dns_sb *s);

#endif
