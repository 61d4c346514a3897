/*
 * proxy/proxy_conn.c: the top of airlockd's connection path, per worker thread:
 * accept -> sandbox -> peek -> decide (the mode, once) -> dial (proxy_conn_dial.c)
 * -> the mode (splice: proxy_conn_relay.c; inspect: proxy_inspect.c) -> close and
 * audit (proxy_conn_close.c).  Also the worker, and its recheck after a reload.
 *
 * Denial reason codes written by this path (the "reason" of a "deny" audit record;
 * proxy_reason.h holds the one table of them all, README lists them),
 * besides policy_reason_str()'s (name_not_allowed, port_not_allowed,
 * protocol_not_allowed, address_not_allowed, ip_literal_name, invalid_name,
 * address_in_floor, private_address):
 *
 *   not_redirected       the connection reached the proxy port directly (its original
 *                        destination is the listener itself)
 *   unmapped_address     a destination inside mapped_pool that the sandbox's DNS never
 *                        handed out
 *   connection_limit     the policy's limits.connections live connections reached
 *   rate_limited         the policy's new-connections-per-second budget spent
 *   sni_missing          a ClientHello without server_name
 *   sni_mismatch         the SNI is not the mapped name
 *   sni_ip_literal       the SNI is an IP address
 *   sni_invalid          the SNI is not a valid host name
 *   ech_refused          the ClientHello offers ECH (or draft ESNI)
 *   tls_malformed        a malformed or oversized ClientHello
 *   host_mismatch        plain HTTP whose Host (name or port) is not the destination
 *   http_malformed       a malformed or oversized HTTP request head (duplicate Host,
 *                        bare LF, obs-fold, ...)
 *   peek_timeout         a partial ClientHello / request head after 10 s
 *   inspect_unavailable  the rule asks for TLS inspection and the sandbox has no
 *                        usable interception CA (or no leaf could be minted)
 *   client_tls_failed    the VM's TLS handshake with the proxy failed (it does not
 *                        trust the sandbox CA, offers no TLS 1.2+, ...)
 *   client_tls_timeout   no completed handshake from the VM within 10 s
 * and, per request in inspect mode (proxy_inspect.c; "request"/"exfil" records):
 *   host_mismatch, http_malformed, http_head_too_large, trace_refused,
 *   websocket_not_allowed, placeholder_in_url, placeholder_in_body,
 *   placeholder_unbound_host, placeholder_in_header, placeholder_encoded,
 *   secret_unavailable, secret_in_field_name, sandbox_removed,
 *   upstream_cert_invalid, upstream_tls_failed, upstream_http_malformed,
 *   upstream_compressed, upstream_closed, secret_redacted (exfil, not a denial),
 *   rate_limited (429: limits.requests_per_second),
 *   placeholder_unprotected (a placeholder in the first bytes of raw TCP or of
 *   plain HTTP relayed to an address: a connection denial with an exfil record),
 *   and policy_reason_str()'s method_not_allowed, path_not_allowed, invalid_path
 *   resolve_failed       the name has no IPv4 address on the host (or the lookup
 *                        failed or timed out)
 *   connect_failed       no TCP connection to the checked address within 10 s
 *   policy_reload        a reload's policy no longer allows a live connection
 *                        (one still in its peek, resolving or connecting too)
 *   sandbox_removed      the sandbox went away under a live connection
 *   unknown_sandbox      the source address is no sandbox's (a record without a
 *                        sandbox)
 *   audit_unavailable    the audit log cannot be written (full disk, I/O error)
 *
 * Every denial record is aggregated (audit_write(), ar_aggregate): per sandbox,
 * reason and destination (per sandbox and reason for the limits, unknown_sandbox
 * and audit_unavailable: proxy_audit_agg()), the first of a second is written, the
 * rest counted ("suppressed").
 *
 * Threads: every function here runs in its worker's thread; a worker's connection
 * list is touched by no other thread.  Shared state (the sandbox registry, the audit
 * log, the limit buckets) has its own locks.
 */
#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/netfilter_ipv4.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "audit.h"
#include "hostname.h"
#include "log.h"
#include "netaddr.h"
#include "policy.h"
#include "proxy_audit.h"
#include "proxy_path.h"
#include "proxy_globals.h"
#include "proxy_map.h"
#include "proxy_registry.h"
#include "proxy_path.h"
#include "proxy_http.h"
#include "proxy_peek.h"
#include "proxy_pool.h"
#include "proxy_tls.h"
#include "proxy_reason.h"

static uint64_t proxy_conn_ids;	/* atomic */

static void	proxy_conn_peek_read(struct bufferevent *, void *);
static void	proxy_conn_peek_event(struct bufferevent *, short, void *);
static void	proxy_conn_peek_timer(evutil_socket_t, short, void *);

/* Sends a fatal TLS alert (description desc) without waiting: the socket is fresh. */
static void
proxy_conn_tls_alert(int fd, unsigned char desc)
{
	unsigned char alert[7] = { 0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0 };

	alert[6] = desc;
	(void)send(fd, alert, sizeof(alert), MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Refuses c before anything was relayed: audit, then a reset. */
static void
proxy_conn_deny(struct proxy_conn *c, const char *reason)
{
	proxy_conn_close(c, reason, 1);
}

/*
 * Consistency of what the VM presented with the destination: SNI / Host against the
 * mapped name.  Returns NULL or a reason code; *alert the TLS alert to send.
 */
static const char *
proxy_conn_check_peek(struct proxy_conn *c, enum peek_status st,
    const struct peek_tls *t, const struct peek_http *h, unsigned char *alert)
{
	char name[HOSTNAME_MAX + 1];
	struct netaddr a;
	unsigned int port;
	int rc;

	*alert = 0;
	if (c->pc_proto == POLICY_PROTO_TLS) {
		*alert = 49;	/* access_denied */
		if (t->pt_ech || t->pt_esni)
			return PR_STR(ECH_REFUSED);
		if (st == PEEK_NO_SNI) {
			if (c->pc_by_addr)
				return NULL;
			return PR_STR(SNI_MISSING);
		}
		rc = hostname_normalize(t->pt_sni, t->pt_sni_len, name);
		if (rc == HOSTNAME_IP_LITERAL || (t->pt_sni_len == strlen(t->pt_sni) &&
		    netaddr_parse(t->pt_sni, &a) == 0))
			return c->pc_by_addr ? NULL : PR_STR(SNI_IP_LITERAL);
		*alert = 112;	/* unrecognized_name */
		if (rc != HOSTNAME_OK)
			return PR_STR(SNI_INVALID);
		if (!c->pc_by_addr && strcmp(name, c->pc_name) != 0)
			return PR_STR(SNI_MISMATCH);
		*alert = 0;
		return NULL;
	}
	if (c->pc_proto == POLICY_PROTO_HTTP && !c->pc_by_addr) {
		if (hostname_normalize(h->ph_host, h->ph_host_len, name) != HOSTNAME_OK ||
		    strcmp(name, c->pc_name) != 0)
			return PR_STR(HOST_MISMATCH);
		port = h->ph_port != 0 ? h->ph_port : 80;
		if (port != c->pc_dport)
			return PR_STR(HOST_MISMATCH);
	}
	return NULL;
}

/* Rule-level and report-mode bookkeeping of an allowing verdict. */
static void
proxy_conn_take_verdict(struct proxy_conn *c, const struct policy_verdict *v)
{
	proxy_conn_rule(c, v->pv_rule);
	c->pc_tls = v->pv_tls;
	if (v->pv_would_deny && !c->pc_would_deny) {
		c->pc_would_deny = 1;
		snprintf(c->pc_wd_reason, sizeof(c->pc_wd_reason), "%s",
		    policy_reason_str(v->pv_reason));
	}
}

/*
 * The mode of an allowed connection.  TLS under an inspect rule: inspect (never a
 * splice, which would skip the rule's http checks and injection), but not for a
 * bare address (no name to verify upstream: NULL).  Plain HTTP to a name: every
 * request goes through the inspect engine (Host, method and path per request; any
 * placeholder blocks: no secret is ever sent without TLS).  The rest is spliced:
 * raw TCP and HTTP to a cidr address with their first bytes scanned for
 * placeholders, TLS untouched (a placeholder inside it is the origin's to see).
 */
static const struct proxy_mode *
proxy_conn_mode(const struct proxy_conn *c, const struct policy_verdict *v)
{
	if (v->pv_rule != NULL && c->pc_proto == POLICY_PROTO_TLS &&
	    v->pv_tls == POLICY_TLS_INSPECT)
		return c->pc_by_addr ? NULL : &proxy_mode_inspect;
	if (c->pc_proto == POLICY_PROTO_HTTP && !c->pc_by_addr)
		return &proxy_mode_inspect;
	return &proxy_mode_splice;
}

void
proxy_conn_query(const struct proxy_conn *c, enum policy_proto proto,
    struct policy_query *q)
{
	memset(q, 0, sizeof(*q));
	q->pq_host = c->pc_by_addr ? NULL : c->pc_name;
	q->pq_addr = &c->pc_dst;
	q->pq_port = c->pc_dport;
	q->pq_proto = proto;
}

/* Keeps what the VM sent for the denial's record (proxy_conn_audit()). */
static void
proxy_conn_asked(struct proxy_conn *c, enum peek_status st, const struct peek_tls *t,
    const struct peek_http *h)
{
	if (c->pc_proto == POLICY_PROTO_TLS && st != PEEK_NO_SNI && t->pt_sni_len > 0 &&
	    c->pc_asked_sni == NULL)
		c->pc_asked_sni = proxy_asked_dup(t->pt_sni, t->pt_sni_len);
	if (c->pc_proto == POLICY_PROTO_HTTP && h->ph_host_len > 0 &&
	    c->pc_asked_host == NULL)
		c->pc_asked_host = proxy_asked_dup(h->ph_host, h->ph_host_len);
}

/*
 * A refusal of a name no rule opens, under "unknown": "ask": recorded as a pending
 * approval.  Plain HTTP gets a 403 naming it (its method and path recorded too),
 * and c is closed: 1.  Otherwise 0: the caller refuses c as it would.
 */
static int
proxy_conn_ask(struct proxy_conn *c, const struct policy *p,
    const struct policy_verdict *v, const struct peek_http *h)
{
	struct evbuffer *in = bufferevent_get_input(c->pc_client);
	const char *method = NULL, *reason = policy_reason_str(v->pv_reason);
	char id[APPROVAL_ID_LEN + 1], body[768], *path = NULL;
	const uint8_t *buf;
	size_t end, i;
	int n;

	if (c->pc_proto == POLICY_PROTO_HTTP && h->ph_method[0] != '\0') {
		method = h->ph_method;
		end = h->ph_target_off + h->ph_target_len;
		if (h->ph_target_len > 0 && end <= evbuffer_get_length(in) &&
		    (buf = evbuffer_pullup(in, (ev_ssize_t)end)) != NULL) {
			for (i = 0; i < h->ph_target_len &&
			    buf[h->ph_target_off + i] != '?'; i++)
				;
			path = strndup((const char *)buf + h->ph_target_off, i);
		}
	}
	n = proxy_approval_ask(c->pc_sandbox, p, v->pv_reason, c->pc_name,
	    c->pc_dport, method, path, id);
	free(path);
	if (n == 0 || c->pc_proto != POLICY_PROTO_HTTP)
		return 0;
	c->pc_state = PC_DECIDED;
	snprintf(body, sizeof(body), "airlock: %s %s:%u denied by sandbox %s, "
	    "policy %s: %s; approval requested: id %s (an operator may run: "
	    "airlock approve allow %s %s --port %u)\n", method != NULL ? method :
	    "-", c->pc_name, (unsigned int)c->pc_dport,
	    c->pc_sandbox->ps_rec.sb_name, p->p_name, reason, id,
	    c->pc_sandbox->ps_rec.sb_name, c->pc_name, (unsigned int)c->pc_dport);
	n = asprintf(&c->pc_farewell, "HTTP/1.1 403 Forbidden\r\nContent-Type: "
	    "text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
	    strlen(body), body);
	if (n > 0)
		c->pc_farewell_len = (size_t)n;
	else
		c->pc_farewell = NULL;
	proxy_conn_close(c, reason, 0);
	return 1;
}

/*
 * The first bytes are in: check them, ask the policy, and hand c to its mode.
 * Returns after c was closed or taken over.
 */
static void
proxy_conn_decide(struct proxy_conn *c, enum peek_status st,
    const struct peek_tls *t, const struct peek_http *h)
{
	const struct policy *p;
	struct policy_query q;
	struct policy_verdict v;
	const char *why;
	unsigned char alert;
	int fd;

	/* The policy in force now, not the one at accept (a reload may lie between). */
	if (proxy_conn_current(c) == -1)
		return;
	p = c->pc_policy->pp_policy;
	why = proxy_conn_check_peek(c, st, t, h, &alert);
	if (why != NULL && p->p_mode == POLICY_MODE_REPORT && c->pc_name[0] != '\0') {
		/* Report mode: the dial still goes to the mapped name only. */
		c->pc_would_deny = 1;
		snprintf(c->pc_wd_reason, sizeof(c->pc_wd_reason), "%s", why);
		why = NULL;
	}
	if (why != NULL) {
		c->pc_state = PC_DECIDED;
		proxy_conn_asked(c, st, t, h);
		if (alert != 0 && (fd = bufferevent_getfd(c->pc_client)) != -1) {
			proxy_conn_tls_alert(fd, alert);
			proxy_conn_close(c, why, 0);
		} else
			proxy_conn_deny(c, why);
		return;
	}
	proxy_conn_query(c, c->pc_proto, &q);
	c->pc_state = PC_DECIDED;
	if (!policy_decide(p, &q, &v) && !c->pc_by_addr &&
	    c->pc_proto == POLICY_PROTO_TLS &&
	    proxy_approval_granted(c->pc_sandbox, v.pv_reason, c->pc_name,
	    c->pc_dport, 1)) {
		/* An operator's --once or --for: TLS, spliced. */
		memset(&v, 0, sizeof(v));
		v.pv_allow = 1;
		v.pv_rule = &proxy_approval_rule;
		v.pv_tls = POLICY_TLS_SPLICE;
		c->pc_approved = 1;
	}
	if (!v.pv_allow && !c->pc_by_addr &&
	    proxy_conn_ask(c, p, &v, h) == 1)
		return;
	if (!v.pv_allow) {
		/* Allowed when the VM connected, revoked since: say so. */
		proxy_conn_asked(c, st, t, h);
		/* A deny rule's refusal names it (rule, rule_file). */
		if (v.pv_rule != NULL && v.pv_rule->pr_action == POLICY_ACTION_DENY)
			proxy_conn_rule(c, v.pv_rule);
		proxy_conn_deny(c, c->pc_reloaded ? PR_STR(POLICY_RELOAD) :
		    policy_reason_str(v.pv_reason));
		return;
	}
	proxy_conn_take_verdict(c, &v);
	c->pc_limits = p->p_limits;
	if ((c->pc_mode = proxy_conn_mode(c, &v)) == NULL) {
		/* An inspect rule for a bare address: never a splice instead. */
		proxy_conn_asked(c, st, t, h);
		proxy_conn_deny(c, PR_STR(INSPECT_UNAVAILABLE));
		return;
	}
	if (c->pc_mode->pm_start(c) == 0)
		proxy_conn_dial(c);
}

/*
 * Plain HTTP whose head the peek refuses: a visible answer (400, or 505 for a
 * version airlock does not speak) before the close, never a silent reset or a wait
 * for the deadline.  The socket is fresh and the answer small: proxy_conn_close()
 * sends it in one send, after the denial is written.
 */
static void
proxy_conn_http_refuse(struct proxy_conn *c, int version, const char *why)
{
	char body[160];
	int n;

	snprintf(body, sizeof(body), "airlock: %s\n", version ?
	    "HTTP/1.1 (or HTTP/1.0 with Host) only" : why != NULL ? why :
	    "malformed request head");
	n = asprintf(&c->pc_farewell, "HTTP/1.1 %s\r\nContent-Type: text/plain\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", version ?
	    "505 HTTP Version Not Supported" : "400 Bad Request", strlen(body), body);
	/* Sent by proxy_conn_close() once the denial is written: audit first. */
	if (n > 0)
		c->pc_farewell_len = (size_t)n;
	else
		c->pc_farewell = NULL;	/* not answered: the close alone */
	proxy_conn_close(c, version ? PR_STR(HTTP_VERSION_NOT_SUPPORTED) :
	    PR_STR(HTTP_MALFORMED), 0);
}

/* Looks at what has arrived so far.  May close c. */
static void
proxy_conn_peek(struct proxy_conn *c, int eof)
{
	struct evbuffer *in = bufferevent_get_input(c->pc_client);
	struct peek_tls t;
	struct peek_http h;
	enum peek_status st = PEEK_NOT_MINE;
	enum http_res lr = HTTP_OK;
	enum peek_proto kind;
	size_t len = evbuffer_get_length(in);
	const uint8_t *buf;

	if (len > PEEK_TLS_MAX)
		len = PEEK_TLS_MAX;
	if ((buf = evbuffer_pullup(in, (ev_ssize_t)len)) == NULL && len > 0) {
		proxy_conn_deny(c, PR_STR(TLS_MALFORMED));
		return;
	}
	kind = peek_classify(buf, len);
	if (kind == PEEK_PROTO_UNKNOWN) {
		if (len == 0 && (eof || c->pc_quiet))
			kind = PEEK_PROTO_TCP;	/* server speaks first */
		else if (eof)
			kind = PEEK_PROTO_TCP;
		else
			return;
	}
	memset(&t, 0, sizeof(t));
	memset(&h, 0, sizeof(h));
	if (kind == PEEK_PROTO_TLS) {
		st = peek_tls_client_hello(buf, len, &t);
		if (st == PEEK_NEED_MORE && !eof)
			return;
		if (st == PEEK_BAD || st == PEEK_NEED_MORE) {
			log_debug("connection %llu: ClientHello: %s",
			    (unsigned long long)c->pc_id,
			    t.pt_why != NULL ? t.pt_why : "truncated");
			proxy_conn_deny(c, PR_STR(TLS_MALFORMED));
			return;
		}
		if (st == PEEK_NOT_MINE)
			kind = PEEK_PROTO_TCP;
	} else if (kind == PEEK_PROTO_HTTP) {
		st = peek_http_request(buf, len, &h);
		/* A request line we will refuse is refused now, not at the deadline. */
		if (st == PEEK_NEED_MORE && !eof &&
		    (lr = http_request_line_check(buf, len, &h.ph_why)) != HTTP_E_BAD &&
		    lr != HTTP_E_VERSION)
			return;
		if (st == PEEK_BAD || st == PEEK_NEED_MORE) {
			log_debug("connection %llu: request head: %s",
			    (unsigned long long)c->pc_id,
			    h.ph_why != NULL ? h.ph_why : "truncated");
			if (lr == HTTP_OK) {
				const char *lwhy;

				/* Which refusal: the request line says (505 or 400). */
				lr = http_request_line_check(buf, len, &lwhy);
			}
			proxy_conn_http_refuse(c, lr == HTTP_E_VERSION, h.ph_why);
			return;
		}
		if (st == PEEK_NOT_MINE)
			kind = PEEK_PROTO_TCP;
	}
	c->pc_proto = kind == PEEK_PROTO_TLS ? POLICY_PROTO_TLS :
	    kind == PEEK_PROTO_HTTP ? POLICY_PROTO_HTTP : POLICY_PROTO_TCP;
	/* Stop reading until the relay starts: the peeked bytes stay buffered. */
	bufferevent_disable(c->pc_client, EV_READ);
	bufferevent_setcb(c->pc_client, NULL, NULL, proxy_conn_peek_event, c);
	event_del(c->pc_timer);
	if (eof)
		c->pc_client_eof = 1;
	proxy_conn_decide(c, st, &t, &h);
}

static void
proxy_conn_peek_read(struct bufferevent *bev, void *arg)
{
	proxy_conn_peek(arg, 0);
}

static void
proxy_conn_peek_event(struct bufferevent *bev, short what, void *arg)
{
	struct proxy_conn *c = arg;

	if (c->pc_state == PC_PEEK && (what & BEV_EVENT_EOF) &&
	    evbuffer_get_length(bufferevent_get_input(bev)) > 0) {
		proxy_conn_peek(c, 1);
		return;
	}
	/*
	 * Gone before saying anything (or an error while waiting for the dial): nothing
	 * was decided or relayed, so there is nothing to audit as a connection.
	 */
	if (c->pc_state == PC_PEEK) {
		proxy_conn_close(c, NULL, 1);
		return;
	}
	/* EOF after the peek: remembered for the relay's half-close. */
	if (what & BEV_EVENT_EOF) {
		c->pc_client_eof = 1;
		return;
	}
	/* The VM gave up while we dialled: allowed, nothing relayed. */
	proxy_conn_close(c, NULL, 1);
}

static void
proxy_conn_peek_timer(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *c = arg;
	long ms = PROXY_PEEK_DEADLINE * 1000L - PROXY_PEEK_QUIET_MS;
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	if (!c->pc_quiet) {
		int pending = 0;

		c->pc_quiet = 1;
		/*
		 * Bytes may be waiting in the socket that the (busy) loop has not read
		 * yet: under a burst of connections a ClientHello can sit there past
		 * the quiet period.  Only a socket with nothing at all is "the server
		 * speaks first".
		 */
		if (evbuffer_get_length(bufferevent_get_input(c->pc_client)) == 0 &&
		    (ioctl(bufferevent_getfd(c->pc_client), FIONREAD, &pending) == -1 ||
		    pending == 0) && !c->pc_no_raw) {
			proxy_conn_peek(c, 0);	/* raw TCP: the server speaks first */
			return;
		}
		/*
		 * Some bytes came, or no raw TCP rule could allow this destination (so a
		 * silent client is no server-speaks-first protocol worth a decision now):
		 * the rest of the 10 s deadline for the whole head.
		 */
		if (evtimer_add(c->pc_timer, &tv) == -1)
			proxy_conn_deny(c, PR_STR(INTERNAL_ERROR));
		return;
	}
	/* Silent to the end: decided as raw TCP, as the quiet timer would have. */
	if (c->pc_no_raw && evbuffer_get_length(bufferevent_get_input(c->pc_client)) == 0) {
		c->pc_no_raw = 0;
		proxy_conn_peek(c, 0);
		return;
	}
	proxy_conn_deny(c, PR_STR(PEEK_TIMEOUT));
}

/*
 * Whether this destination could be let through as raw TCP (a server that speaks
 * first).  Only then is a client that stays silent for PROXY_PEEK_QUIET_MS decided
 * as raw TCP at once; otherwise a slow client (a ClientHello late under load) gets
 * the whole peek deadline, and a silent one is decided as raw TCP at its end.  The
 * decision itself is always made later, on the policy in force then.
 */
static int
proxy_conn_raw_possible(const struct proxy_conn *c, const struct policy *p)
{
	struct policy_query q;
	struct policy_verdict v;

	proxy_conn_query(c, POLICY_PROTO_TCP, &q);
	return policy_decide(p, &q, &v);
}

/* The original destination of a redirected (REDIRECT/DNAT) IPv4 connection. */
static int
proxy_conn_orig_dst(int fd, struct netaddr *dst, uint16_t *port)
{
	struct sockaddr_in sin, self;
	socklen_t len = sizeof(sin), slen = sizeof(self);

	if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &sin, &len) == -1)
		return -1;
	if (getsockname(fd, (struct sockaddr *)&self, &slen) == -1)
		return -1;
	if (sin.sin_family != AF_INET)
		return -1;
	if (netaddr_from_sockaddr((struct sockaddr *)&sin, dst, port) == -1)
		return -1;
	/*
	 * Not redirected: conntrack reports our own address as the destination.  dst
	 * is left filled for the audit record.
	 */
	if (sin.sin_addr.s_addr == self.sin_addr.s_addr &&
	    sin.sin_port == self.sin_port) {
		errno = EADDRNOTAVAIL;
		return -1;
	}
	return 0;
}

/*
 * A connection from a source that is no sandbox (not attached, or not yet known to
 * this daemon): a "deny" record without a sandbox, reason unknown_sandbox (the code
 * policy DNS uses for the same case), aggregated per destination and second like
 * every denial, so that a flood cannot flood the log.  fd is still the raw
 * accepted socket.
 */
static void
proxy_conn_unknown(struct proxy_conn *c, int fd)
{
	struct audit_record r = AUDIT_RECORD_INIT;
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss);
	char src[NETADDR_STRLEN + 8], dst[NETADDR_STRLEN + 8];

	log_debug("connection from an unknown source: reset");
	r.ar_event = AUDIT_EV_DENY;
	r.ar_src = proxy_conn_addrport(&c->pc_src, c->pc_sport, src, sizeof(src));
	/* Not redirected (no conntrack entry): the listener's own address. */
	if (proxy_conn_orig_dst(fd, &c->pc_dst, &c->pc_dport) == -1 &&
	    c->pc_dst.na_family == 0 && getsockname(fd, (struct sockaddr *)&ss,
	    &sslen) == 0)
		(void)netaddr_from_sockaddr((struct sockaddr *)&ss, &c->pc_dst,
		    &c->pc_dport);
	r.ar_dst = proxy_conn_addrport(&c->pc_dst, c->pc_dport, dst, sizeof(dst));
	r.ar_decision = "deny";
	r.ar_reason = PR_STR(UNKNOWN_SANDBOX);
	r.ar_aggregate = AUDIT_AGG_SANDBOX;
	if (proxy_audit() != NULL && audit_write(proxy_audit(), &r) == -1)
		log_warn("audit write (unknown source)");
}

static void
proxy_conn_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct proxy_worker *w = arg;
	struct proxy_conn *c = NULL;
	struct proxy_sandbox *ps;
	struct linger lg = { 1, 0 };
	struct timeval tv = { 0, PROXY_PEEK_QUIET_MS * 1000 };
	const struct airlock_config *cfg = proxy_config();
	const struct policy *p;
	const char *why = NULL;
	int one = 1;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		log_warn("connection");
		goto reset;
	}
	c->pc_worker = w;
	c->pc_id = __atomic_add_fetch(&proxy_conn_ids, 1, __ATOMIC_RELAXED);
	evutil_gettimeofday(&c->pc_start, NULL);
	c->pc_last = c->pc_start;
	TAILQ_INSERT_TAIL(&w->pw_conns, c, pc_entry);
	if (netaddr_from_sockaddr(sa, &c->pc_src, &c->pc_sport) == -1)
		goto reset;
	if ((ps = proxy_sandbox_find(&c->pc_src)) == NULL) {
		proxy_conn_unknown(c, fd);
		goto reset;
	}
	c->pc_sandbox = ps;
	proxy_sandbox_count(ps, PROXY_STAT_CONNS_LIVE, 1);
	c->pc_counted = 1;
	if ((c->pc_policy = proxy_sandbox_policy(ps)) == NULL) {
		log_warnx("connection %llu: registry lock", (unsigned long long)c->pc_id);
		goto reset;
	}
	p = c->pc_policy->pp_policy;
	c->pc_limits = p->p_limits;
	c->pc_client = bufferevent_socket_new(w->pw_base, fd,
	    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (c->pc_client == NULL) {
		log_warnx("bufferevent_socket_new failed");
		goto reset;
	}
	fd = -1;	/* owned by pc_client */

	if (proxy_conn_orig_dst(bufferevent_getfd(c->pc_client), &c->pc_dst,
	    &c->pc_dport) == -1) {
		why = PR_STR(NOT_REDIRECTED);
		goto deny;
	}
	/* Fail closed: nothing is let in that the log could not record. */
	if (!proxy_audit_is_writable()) {
		why = PR_STR(AUDIT_UNAVAILABLE);
		goto deny;
	}
	if (p->p_limits.pl_connections != 0 && proxy_sandbox_counter(
	    &ps->ps_conns_live) > p->p_limits.pl_connections) {
		why = PR_STR(CONNECTION_LIMIT);
		goto deny;
	}
	if (proxy_limit_conn_take(ps, &p->p_limits) == -1) {
		why = PR_STR(RATE_LIMITED);
		goto deny;
	}
	if (netaddr_cidr_contains(&cfg->mapped_pool, &c->pc_dst)) {
		if (proxy_map_addr_to_name(ps->ps_map, &c->pc_dst, c->pc_name,
		    sizeof(c->pc_name)) == -1) {
			why = PR_STR(UNMAPPED_ADDRESS);
			goto deny;
		}
	} else
		c->pc_by_addr = 1;
	if ((why = proxy_conn_precheck(c, p)) != NULL)
		goto deny;
	c->pc_no_raw = !proxy_conn_raw_possible(c, p);

	(void)setsockopt(bufferevent_getfd(c->pc_client), IPPROTO_TCP, TCP_NODELAY,
	    &one, sizeof(one));
	if ((c->pc_timer = evtimer_new(w->pw_base, proxy_conn_peek_timer, c)) == NULL) {
		why = PR_STR(INTERNAL_ERROR);
		goto deny;
	}
	/* Read no more than a ClientHello can take while peeking. */
	bufferevent_setwatermark(c->pc_client, EV_READ, 0, PEEK_TLS_MAX);
	bufferevent_setcb(c->pc_client, proxy_conn_peek_read, NULL,
	    proxy_conn_peek_event, c);
	if (bufferevent_enable(c->pc_client, EV_READ) == -1 ||
	    evtimer_add(c->pc_timer, &tv) == -1) {
		why = PR_STR(INTERNAL_ERROR);
		goto deny;
	}
	c->pc_state = PC_PEEK;
	return;
 deny:
	proxy_conn_deny(c, why);
	return;
 reset:
	if (fd != -1) {
		(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(fd);
	}
	if (c != NULL)
		proxy_conn_close(c, NULL, 1);
}

static void
proxy_conn_accept_error(struct evconnlistener *l, void *arg)
{
	int err = EVUTIL_SOCKET_ERROR();

	/* EMFILE and friends: keep the listener; the next accept may succeed. */
	log_warnx("accept: %s", evutil_socket_error_to_string(err));
}

struct proxy_worker *
proxy_worker_new(struct event_base *base, int listen_fd, struct evdns_base *evdns)
{
	const struct airlock_config *cfg = proxy_config();
	struct proxy_pool_limits pl = { cfg->pool_idle_ms, cfg->pool_per_host,
	    cfg->pool_per_sandbox, cfg->pool_max };
	struct proxy_worker *w;
	char err[512];

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	w->pw_base = base;
	w->pw_dns = evdns;
	TAILQ_INIT(&w->pw_conns);
	TAILQ_INIT(&w->pw_lingers);
	if (proxy_conn_host_addrs(w) == -1)
		log_warn("SIOCGIFCONF: the host's own addresses are unknown");
	/* Inspect mode's contexts: a broken trust store stops the start. */
	if ((w->pw_tls_in = proxy_tls_server_ctx()) == NULL ||
	    (w->pw_tls_out = proxy_tls_client_ctx(proxy_config()->upstream_ca_file,
	    err, sizeof(err))) == NULL) {
		log_warnx("%s", w->pw_tls_in == NULL ? "TLS: server context failed" :
		    err);
		SSL_CTX_free(w->pw_tls_in);
		free(w);
		return NULL;
	}
	/* This thread's own idle upstream connections (NULL: none are kept). */
	w->pw_pool = proxy_pool_new(base, &pl, NULL);
	if (w->pw_pool == NULL && pl.pl_idle_ms != 0 && pl.pl_per_key != 0 &&
	    pl.pl_per_sandbox != 0 && pl.pl_max != 0)
		log_warnx("upstream connection pool: out of memory: none kept");
	/* The fd stays the core's: several workers may accept on it. */
	w->pw_listener = evconnlistener_new(base, proxy_conn_accept, w,
	    LEV_OPT_REUSEABLE, -1, listen_fd);
	if (w->pw_listener == NULL) {
		proxy_pool_free(w->pw_pool);
		SSL_CTX_free(w->pw_tls_in);
		SSL_CTX_free(w->pw_tls_out);
		free(w);
		return NULL;
	}
	evconnlistener_set_error_cb(w->pw_listener, proxy_conn_accept_error);
	return w;
}

void
proxy_worker_free(struct proxy_worker *w)
{
	struct proxy_conn *c;

	if (w == NULL)
		return;
	if (w->pw_listener != NULL)
		evconnlistener_free(w->pw_listener);
	while ((c = TAILQ_FIRST(&w->pw_conns)) != NULL)
		proxy_conn_close(c, c->pc_state >= PC_RELAY ? NULL : PR_STR(SHUTDOWN), 1);
	proxy_pool_free(w->pw_pool);	/* after the connections: none comes back */
	proxy_audit_park_free(w->pw_base);
	proxy_conn_linger_free(w);
	SSL_CTX_free(w->pw_tls_in);
	SSL_CTX_free(w->pw_tls_out);
	free(w);
}

/*
 * May an idle pooled connection stay after a reload?  Only while its sandbox's
 * policy in force is the one it was made under (the same hash) and its address
 * still passes the dial's check against the host's addresses as they are now (a
 * name rule never opens a private address: no rule is needed for that).
 */
static int
proxy_worker_pool_keep(const struct proxy_pool_key *k, const struct netaddr *a,
    void *arg)
{
	struct proxy_worker *w = arg;
	struct proxy_policy *pp;
	const char *why;
	int keep;

	if ((pp = proxy_sandbox_policy(k->pk_sandbox)) == NULL)
		return 0;
	keep = strcmp(pp->pp_policy->p_hash, k->pk_policy) == 0 &&
	    proxy_conn_addr_check(w, NULL, a, &why) == 0;
	proxy_policy_put(pp);
	return keep;
}

void
proxy_worker_recheck(struct proxy_worker *w)
{
	struct proxy_conn *c, *next;

	if (proxy_conn_host_addrs(w) == -1)
		log_warn("SIOCGIFCONF");
	proxy_pool_purge(w->pw_pool, proxy_worker_pool_keep, w);
	/* Every state, the peek included: none may go on under an older policy. */
	for (c = TAILQ_FIRST(&w->pw_conns); c != NULL; c = next) {
		next = TAILQ_NEXT(c, pc_entry);
		if (c->pc_sandbox != NULL)
			(void)proxy_conn_current(c);
	}
}
