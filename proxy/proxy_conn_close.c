/*
 * proxy/proxy_conn_close.c: the bottom of the connection path, which every step
 * above it (accept and peek, the dial, the modes) calls down into: bringing a
 * connection under the policy in force before a decision (proxy_conn_current:
 * rechecks compare the policy a connection holds with the sandbox's current one),
 * and its end (proxy_conn_close: the one audit record of the connection, the
 * reset that waits for the disk, the frees).  Nothing here calls back up into a
 * file above it but through a mode's pm_recheck and pm_free.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#include "audit.h"
#include "log.h"
#include "netaddr.h"
#include "policy.h"
#include "proxy_audit.h"
#include "proxy_globals.h"
#include "proxy_registry.h"
#include "proxy_path.h"
#include "proxy_reason.h"

const char *
proxy_conn_addrport(const struct netaddr *a, uint16_t port, char *buf, size_t len)
{
	char ab[NETADDR_STRLEN];

	if (a->na_family != AF_INET && a->na_family != AF_INET6) {
		snprintf(buf, len, "-");
		return buf;
	}
	netaddr_fmt(a, ab, sizeof(ab));
	if (a->na_family == AF_INET6)
		snprintf(buf, len, "[%s]:%u", ab, port);
	else
		snprintf(buf, len, "%s:%u", ab, port);
	return buf;
}

static long long
proxy_conn_ms(const struct proxy_conn *c)
{
	struct timeval now, d;

	evutil_gettimeofday(&now, NULL);
	evutil_timersub(&now, &c->pc_start, &d);
	return (long long)d.tv_sec * 1000 + d.tv_usec / 1000;
}

char *
proxy_asked_dup(const void *p, size_t n)
{
	char *s;
	size_t i;

	if (n > PROXY_ASKED_MAX)
		n = PROXY_ASKED_MAX;
	if ((s = malloc(n + 1)) == NULL)
		return NULL;
	memcpy(s, p, n);
	for (i = 0; i < n; i++)
		if (s[i] == '\0')
			s[i] = '?';
	s[n] = '\0';
	return s;
}

/*
 * The one audit record of c.  Denials are written (and, per audit.fsync, synced)
 * before the reset goes out, so a reviewer never misses a refusal the VM saw.
 * Returns the seq to have on disk first (0: none; proxy_conn_close() waits).
 */
static long long
proxy_conn_audit(struct proxy_conn *c, const char *reason)
{
	long long seq = 0;
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_kv kv[8];	/* proto upstream via reused retried sni host */
	char src[NETADDR_STRLEN + 8], dst[HOSTNAME_MAX + 16], up[NETADDR_STRLEN + 8];
	size_t nkv = 0;

	r.ar_event = reason != NULL ? AUDIT_EV_DENY : AUDIT_EV_CONNECT;
	r.ar_sandbox = c->pc_sandbox != NULL ? c->pc_sandbox->ps_rec.sb_name : NULL;
	r.ar_src = proxy_conn_addrport(&c->pc_src, c->pc_sport, src, sizeof(src));
	if (c->pc_name[0] != '\0')
		snprintf(dst, sizeof(dst), "%s:%u", c->pc_name, c->pc_dport);
	else
		proxy_conn_addrport(&c->pc_dst, c->pc_dport, dst, sizeof(dst));
	r.ar_dst = dst;
	/*
	 * splice/inspect is the rule's word: only once a rule decided, and not for a
	 * refusal by a deny rule (it decides no mode).
	 */
	if (c->pc_rule[0] != '\0' && c->pc_proto == POLICY_PROTO_TLS &&
	    (reason == NULL || c->pc_prule == NULL ||
	    c->pc_prule->pr_action != POLICY_ACTION_DENY))
		r.ar_tls = policy_tls_str(c->pc_tls);
	r.ar_decision = reason != NULL ? "deny" : "allow";
	r.ar_rule = c->pc_rule[0] != '\0' ? c->pc_rule : NULL;
	r.ar_rule_file = r.ar_rule != NULL ? c->pc_rule_file : NULL;
	r.ar_reason = reason != NULL ? reason :
	    (c->pc_would_deny ? c->pc_wd_reason : NULL);
	r.ar_would_deny = reason == NULL && c->pc_would_deny;
	if (c->pc_state >= PC_DECIDED || reason == NULL) {
		kv[nkv].ak_key = "proto";
		kv[nkv].ak_str = policy_proto_str(c->pc_proto);
		nkv++;
	}
	if (c->pc_state >= PC_CONNECT) {
		kv[nkv].ak_key = "upstream";
		kv[nkv].ak_str = proxy_conn_addrport(&c->pc_upstream,
		    c->pc_via != NULL ? c->pc_via_port : c->pc_dport, up, sizeof(up));
		nkv++;
	}
	/* Through an upstream proxy: its HOST:PORT as configured (no credential). */
	if (c->pc_via != NULL)
		kv[nkv++] = (struct audit_kv){ .ak_key = "via", .ak_str = c->pc_via };
	/* Its upstream was an idle pooled connection (proxy_pool.c), not a dial. */
	if (c->pc_reused)
		kv[nkv++] = (struct audit_kv){ .ak_key = "upstream_reused",
		    .ak_num = 1 };
	if (c->pc_retried)
		kv[nkv++] = (struct audit_kv){ .ak_key = "upstream_retried",
		    .ak_num = 1 };
	/* A denial says what the VM sent, beside the name it reached for (dst). */
	if (reason != NULL && c->pc_asked_sni != NULL)
		kv[nkv++] = (struct audit_kv){ .ak_key = "sni",
		    .ak_str = c->pc_asked_sni };
	if (reason != NULL && c->pc_asked_host != NULL)
		kv[nkv++] = (struct audit_kv){ .ak_key = "host",
		    .ak_str = c->pc_asked_host };
	r.ar_extra = kv;
	r.ar_nextra = nkv;
	if (c->pc_state >= PC_RELAY) {
		r.ar_bytes_up = (long long)c->pc_up;
		r.ar_bytes_down = (long long)c->pc_down;
	}
	r.ar_ms = proxy_conn_ms(c);
	r.ar_aggregate = proxy_audit_agg(reason);	/* denials only */
	if (reason != NULL && c->pc_sandbox != NULL)
		proxy_sb_stats_denial(&c->pc_sandbox->ps_stats, reason);
	if (proxy_audit() != NULL && audit_write_nowait(proxy_audit(), &r,
	    &seq) == -1)
		log_warn("audit write (connection %llu)",
		    (unsigned long long)c->pc_id);
	return seq;
}

/*
 * Lingering close (as HTTP servers do after an error answer): closing a socket
 * with unread bytes sends a reset, and a VM still sending the rest of its request
 * would then lose the answer unread.  So the write side is shut and what the VM
 * sends is read away until it closes too, for PROXY_LINGER_MS at most; a dup of
 * the socket keeps it open meanwhile.
 */
#define PROXY_LINGER_MS		1000

static void
proxy_linger_end(struct proxy_linger *l)
{
	TAILQ_REMOVE(&l->pl_worker->pw_lingers, l, pl_entry);
	event_free(l->pl_ev);
	close(l->pl_fd);
	free(l);
}

static void
proxy_linger_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_linger *l = arg;
	struct timeval now;
	char sink[4096];
	ssize_t n;

	if (what & EV_READ) {
		while ((n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
			;
		event_base_gettimeofday_cached(l->pl_worker->pw_base, &now);
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK ||
		    errno == EINTR) && evutil_timercmp(&now, &l->pl_until, <))
			return;		/* more may come: go on reading */
	}
	proxy_linger_end(l);		/* EOF, an error, or the time is up */
}

static void
proxy_conn_linger(struct proxy_worker *w, int fd)
{
	struct timeval tv = { PROXY_LINGER_MS / 1000, (PROXY_LINGER_MS % 1000) * 1000 };
	struct proxy_linger *l;

	(void)shutdown(fd, SHUT_WR);
	if ((l = calloc(1, sizeof(*l))) == NULL)
		return;
	l->pl_worker = w;
	if ((l->pl_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) == -1) {
		free(l);
		return;
	}
	event_base_gettimeofday_cached(w->pw_base, &l->pl_until);
	evutil_timeradd(&l->pl_until, &tv, &l->pl_until);
	if ((l->pl_ev = event_new(w->pw_base, l->pl_fd, EV_READ | EV_PERSIST,
	    proxy_linger_cb, l)) == NULL || event_add(l->pl_ev, &tv) == -1) {
		if (l->pl_ev != NULL)
			event_free(l->pl_ev);
		close(l->pl_fd);
		free(l);
		return;
	}
	TAILQ_INSERT_TAIL(&w->pw_lingers, l, pl_entry);
}

void
proxy_conn_linger_free(struct proxy_worker *w)
{
	while (!TAILQ_EMPTY(&w->pw_lingers))
		proxy_linger_end(TAILQ_FIRST(&w->pw_lingers));
}

void
proxy_conn_close(struct proxy_conn *c, const char *reason, int rst)
{
	struct linger lg = { 1, 0 };
	long long seq = 0;
	int fd;

	/* A VM that left before saying anything had nothing decided: no record. */
	if (reason != NULL || c->pc_state >= PC_DECIDED) {
		seq = proxy_conn_audit(c, reason);
		if (c->pc_sandbox != NULL)
			proxy_sandbox_count(c->pc_sandbox, reason != NULL ?
			    PROXY_STAT_DENIED : PROXY_STAT_ALLOWED, 1);
	}
	proxy_conn_dial_cancel(c);
	if (c->pc_client != NULL) {
		fd = bufferevent_getfd(c->pc_client);
		/* SO_LINGER 0: close() sends a RST, so the VM sees the refusal at once. */
		if (rst && fd != -1 &&
		    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == -1)
			log_debug("SO_LINGER: %s", strerror(errno));
		/* The reset waits for the disk; the worker does not (if it can). */
		if (seq > 0 && rst && fd != -1 &&
		    proxy_audit_park(c->pc_worker->pw_base, fd, seq) == 0)
			seq = 0;
	}
	if (seq > 0 && audit_sync_wait(proxy_audit(), seq) == -1)
		log_warn("audit sync (connection %llu)", (unsigned long long)c->pc_id);
	/* Last words (a plain-HTTP refusal), once the record is written. */
	if (c->pc_client != NULL && c->pc_farewell != NULL &&
	    (fd = bufferevent_getfd(c->pc_client)) != -1) {
		(void)send(fd, c->pc_farewell, c->pc_farewell_len,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		proxy_conn_linger(c->pc_worker, fd);
	}
	free(c->pc_farewell);
	free(c->pc_via);
	free(c->pc_asked_sni);
	free(c->pc_asked_host);
	free(c->pc_rule_file);
	/* A clean end: the mode may keep the upstream for a later connection. */
	if (reason == NULL && !rst && c->pc_server != NULL && c->pc_mode != NULL &&
	    c->pc_mode->pm_pool != NULL)
		c->pc_mode->pm_pool(c);
	if (c->pc_client != NULL)
		bufferevent_free(c->pc_client);
	if (c->pc_server != NULL) {
		fd = bufferevent_getfd(c->pc_server);
		if (rst && fd != -1)
			(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		bufferevent_free(c->pc_server);
	}
	if (c->pc_mode != NULL)
		c->pc_mode->pm_free(c);
	if (c->pc_timer != NULL)
		event_free(c->pc_timer);
	if (c->pc_pause != NULL)
		event_free(c->pc_pause);
	if (c->pc_policy != NULL)
		proxy_policy_put(c->pc_policy);
	if (c->pc_sandbox != NULL) {
		if (c->pc_counted)
			proxy_sandbox_count(c->pc_sandbox, PROXY_STAT_CONNS_LIVE, -1);
		proxy_sandbox_put(c->pc_sandbox);
	}
	TAILQ_REMOVE(&c->pc_worker->pw_conns, c, pc_entry);
	free(c);
}

/*
 * Would any protocol be allowed to this destination?  Lets a name, port or address
 * that no rule opens be refused at once, before waiting for bytes.
 */
const char *
proxy_conn_precheck(struct proxy_conn *c, const struct policy *p)
{
	static const enum policy_proto protos[] = {
		POLICY_PROTO_TLS, POLICY_PROTO_HTTP, POLICY_PROTO_TCP
	};
	struct policy_query q;
	struct policy_verdict v;
	size_t i;

	proxy_conn_query(c, protos[0], &q);
	for (i = 0; i < sizeof(protos) / sizeof(protos[0]); i++) {
		q.pq_proto = protos[i];
		if (policy_decide(p, &q, &v) && !v.pv_would_deny)
			return NULL;
		if (v.pv_would_deny)
			return NULL;	/* report mode: decided after the peek */
	}
	/*
	 * A name no rule opens on this port: decided after the peek when an
	 * operator's grant may let its TLS through (a --once used up there), or
	 * when "unknown": "ask" records it (with a plain HTTP request's method and
	 * path, and a 403 that names the approval).
	 */
	if (!c->pc_by_addr && policy_reason_is_unknown(v.pv_reason) &&
	    (p->p_unknown == POLICY_UNKNOWN_ASK ||
	    proxy_approval_granted(c->pc_sandbox, v.pv_reason, c->pc_name,
	    c->pc_dport, 0)))
		return NULL;
	/* A deny rule that refuses every protocol: the record names it. */
	if (v.pv_rule != NULL && v.pv_rule->pr_action == POLICY_ACTION_DENY)
		proxy_conn_rule(c, v.pv_rule);
	return policy_reason_str(v.pv_reason);
}

void
proxy_conn_rule(struct proxy_conn *c, const struct policy_rule *r)
{
	c->pc_prule = r;
	if (r == NULL || r->pr_id == NULL)
		return;
	snprintf(c->pc_rule, sizeof(c->pc_rule), "%s", r->pr_id);
	if (c->pc_rule_file != NULL && r->pr_file != NULL &&
	    strcmp(c->pc_rule_file, r->pr_file) == 0)
		return;
	free(c->pc_rule_file);
	/* Out of memory: the records go without it. */
	c->pc_rule_file = r->pr_file != NULL ? strdup(r->pr_file) : NULL;
}

/* Does route (NULL: direct) say what c's dial chose? */
static int
proxy_conn_same_route(const struct proxy_conn *c, const struct upstream_proxy *route)
{
	char via[HOSTNAME_MAX + 8];

	if (route == NULL || c->pc_via == NULL)
		return route == NULL && c->pc_via == NULL;
	snprintf(via, sizeof(via), "%s:%u", route->up_host, route->up_port);
	return strcmp(via, c->pc_via) == 0;
}

/* Would c's destination, as decided, still be allowed by policy p? */
static const char *
proxy_conn_recheck_one(struct proxy_conn *c, const struct policy *p)
{
	struct policy_query q;
	struct policy_verdict v;

	proxy_conn_query(c, c->pc_proto, &q);
	/*
	 * An operator let it through: it stays while no rule refuses it (an
	 * unknown name still), whether or not its grant is still live.
	 */
	if (!policy_decide(p, &q, &v) && c->pc_approved &&
	    policy_reason_is_unknown(v.pv_reason)) {
		c->pc_limits = p->p_limits;
		return NULL;
	}
	if (!v.pv_allow)
		return PR_STR(POLICY_RELOAD);
	/* A connection cannot change mode: the mode says whether it may go on. */
	if (c->pc_mode != NULL && c->pc_mode->pm_recheck(c, &v) == -1)
		return PR_STR(POLICY_RELOAD);
	/*
	 * A cidr destination must still pass the address check with the new rule
	 * (the destination's: with an upstream proxy pc_upstream is the proxy's).
	 */
	if (c->pc_state >= PC_CONNECT && c->pc_by_addr &&
	    netaddr_classify(&c->pc_dst, NULL) == NETADDR_PRIVATE &&
	    !policy_rule_allows_private(v.pv_rule, &c->pc_dst))
		return PR_STR(POLICY_RELOAD);
	/* Nor may the way out change under a connection that took it. */
	if (c->pc_routed && !proxy_conn_same_route(c, proxy_upstream_route(p)))
		return PR_STR(POLICY_RELOAD);
	proxy_conn_rule(c, v.pv_rule);	/* within the policy c now holds */
	c->pc_limits = p->p_limits;
	return NULL;
}

int
proxy_conn_current(struct proxy_conn *c)
{
	struct proxy_policy *pp;
	const char *why;

	if (proxy_sandbox_is_dead(c->pc_sandbox)) {
		proxy_conn_close(c, PR_STR(SANDBOX_REMOVED), 1);
		return -1;
	}
	if ((pp = proxy_sandbox_policy(c->pc_sandbox)) == NULL) {
		proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
		return -1;
	}
	if (pp == c->pc_policy) {
		/* c holds a reference to pc_policy: the pointer cannot be reused. */
		proxy_policy_put(pp);
		return 0;
	}
	if (c->pc_policy != NULL)
		proxy_policy_put(c->pc_policy);
	c->pc_policy = pp;
	c->pc_prule = NULL;	/* it was in the old policy; recheck sets it */
	c->pc_reloaded = 1;
	if (c->pc_state == PC_PEEK) {
		/* Nothing decided yet: may any protocol still reach the destination? */
		why = proxy_conn_precheck(c, pp->pp_policy) != NULL ?
		    PR_STR(POLICY_RELOAD) : NULL;
	} else
		why = proxy_conn_recheck_one(c, pp->pp_policy);
	if (why != NULL && pp->pp_policy->p_mode == POLICY_MODE_REPORT)
		why = NULL;
	if (why != NULL) {
		proxy_conn_close(c, why, 1);
		return -1;
	}
	return 0;
}

void
proxy_conn_dial_cancel(struct proxy_conn *c)
{
	struct proxy_dns_ticket *t = c->pc_dns;

	if (t == NULL)
		return;
	c->pc_dns = NULL;
	t->pt_conn = NULL;
	if (t->pt_req != NULL)
		evdns_getaddrinfo_cancel(t->pt_req);	/* the callback frees t */
}
