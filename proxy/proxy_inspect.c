/*
 * proxy/proxy_inspect.c: an inspected TLS connection (issue 5).  Entered from
 * proxy_conn_decide() when the deciding rule says "tls": "inspect".
 *
 * Terminating the VM's TLS.  The ClientHello that the peek read is still in the
 * client bufferevent's input.  Choice: a bufferevent_openssl *filter* over that
 * bufferevent (not a new socket bufferevent on the fd): OpenSSL then reads the
 * ClientHello from the buffered bytes through the filter's BIO, with no custom BIO
 * and no second read of the socket, at the price of one evbuffer copy per direction.
 * The filter starts the handshake only when its underlying bufferevent reports
 * data, and the ClientHello already arrived, so the read callback is triggered once
 * by hand.  The leaf comes from the sandbox CA's cache (minted on a miss) for the
 * mapped name, which the peek already found equal to the SNI.
 *
 * Upstream.  The dial (proxy_conn_dial.c) resolves, checks and connects as for a
 * splice, but with a bufferevent_openssl socket in CONNECTING state
 * (proxy_inspect_server_bev()), so its "connected" event means TCP *and* a verified
 * TLS handshake (proxy_tls.c: chain, name, not airlock's own CA).  Both handshakes
 * run in parallel; no request is read before both are done, so not one request byte
 * can reach an unverified upstream.  An upstream that fails verification gets
 * nothing; the VM's first request is answered 502 with the reason, and audited as
 * a denial (upstream_cert_invalid).
 *
 * Requests (proxy_http.h does the parsing; nothing here parses HTTP by hand), one at
 * a time on a keep-alive connection (a pipelined request waits in the buffer):
 *	1. the head, strictly parsed: a refusal is answered with its status (400, 431,
 *	   414, 501, 505, 405, 417) and the connection closes;
 *	2. Host must be the connection's name and port (421 otherwise), TRACE and
 *	   TRACK are refused (405), then policy_decide() with method and path against the
 *	   sandbox's *current* policy (a reload applies to the next request): 403 with
 *	   a short text naming the sandbox, the policy, the rule and the reason;
 *	   WebSocket only where the rule allows it;
 *	3. placeholders, checked in the whole head before anything is rewritten
 *	   (pi_head_placeholders): one in the request line is blocked; in a header,
 *	   a placeholder may stand only in a field that the rule's inject entries
 *	   name for that same secret, and only where the vault binds the secret to
 *	   this host: there it is replaced in place (Basic credentials decoded and
 *	   re-encoded); a field the VM did not write so is set from the rule's
 *	   template.  Any other
 *	   placeholder anywhere in the head -- another secret's, the right secret in
 *	   another field (placeholder_in_header), an encoded form -- is blocked; in
 *	   the body any placeholder is blocked.  A block is a 403 and an "exfil"
 *	   audit record.  Nothing is substituted into a field no inject entry names;
 *	4. the head goes upstream rebuilt (hop-by-hop fields dropped before the
 *	   injected headers are added, proxy_http.h), then the body, re-framed as it came.
 *	   A method must be in the registry (http_method_classify()): the common
 *	   seven anywhere, a rarer registered one where the rule lists it, else
 *	   method_not_allowed.  The VM's identity fields never go upstream;
 *	   "http": {"forwarded": true} adds airlock's own Forwarded.
 * The key material (secrets, placeholders) is the current one at each request: a
 * vault change and reload reaches open keep-alive connections at their next
 * request, and the values replaced by it stay redacted (proxy_keys_set()).
 * Responses are parsed as strictly.  Bytes from the origin past a response's end,
 * or while no request is outstanding, never reach the VM (pi_upstream_extra()):
 * the exchange is audited upstream_http_malformed and both connections close once
 * the VM has its complete response (its client reconnects: a new upstream).
 * Whenever the key material holds any secret
 * value, every inspected response is scanned (one automaton pass, whatever the
 * rule): every secret value of the vault (raw, base64, percent-encoded;
 * proxy_scan.h) is replaced by its placeholder in header values and the body,
 * across reads and chunks; a reason phrase holding one is dropped; a field *name*
 * holding one refuses the response (502).  The body is then sent chunked (to an
 * HTTP/1.0 client: until close).  Compression: such a request also carries
 * "Accept-Encoding: identity" upstream, and a response that still comes with a
 * Content-Encoding other than identity is refused with a 502 (fail closed: a
 * compressed echo could not be scanned; decompressing would open a
 * decompression-bomb surface for little gain).  An "exfil" record names the secret
 * whose value was redacted.  One "request" record per request.
 *
 * Plain HTTP (a "protocol": "http" rule to a name) runs through the same request
 * engine without TLS on either side: Host, method and path per request, and any
 * placeholder blocks (pi_secret_allowed() is never true without TLS, and nothing
 * is injected there; responses are redacted as above).  limits.requests_per_second is charged per
 * request (429).
 *
 * After a 101 (WebSocket) the relay (proxy_conn_relay_start) takes both TLS
 * streams, with its limits (bytes_per_second, idle timeout); the frames are not
 * scanned (the rule's websocket flag is the operator's consent).  Not covered
 * here: upstream connections are not pooled across VM connections (one upstream
 * connection per VM connection, kept alive while the VM keeps its own; sessions
 * are resumed); limits.bytes_per_second applies to request and response bodies
 * only through the relay after a 101.
 *
 * This file is the inspect mode (struct proxy_mode, proxy_conn.h): its entry
 * points are proxy_mode_inspect's, at the end, followed by the fuzzer's test seam
 * (proxy_inspect_attach_test: the engine over in-memory streams, no TLS).
 */
#include <sys/time.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "audit.h"
#include "hostname.h"
#include "log.h"
#include "policy.h"
#include "proxy.h"
#include "proxy_conn.h"
#include "proxy_http.h"
#include "proxy_keys.h"
#include "proxy_scan.h"
#include "proxy_tls.h"
#include "proxy_reason.h"

#define PI_HANDSHAKE_TIMEOUT	10	/* seconds for the VM's handshake */
#define PI_CHUNK_MAX		(64 * 1024)	/* bytes taken from a buffer at once */
#define PI_IDS_MAX		16
#define PI_INJECT_MAX		16	/* inject entries of a rule (policy) */
#define PI_BODY_TEXT_MAX	512
#define PI_CLOSE_WAIT		5	/* seconds to flush before closing */
#define PI_READ_HIGH		(256 * 1024)	/* input buffered per side */

enum pi_req_state {
	PI_WAIT = 0,		/* handshakes under way */
	PI_REQ_HEAD,		/* reading a request head */
	PI_REQ_BODY,		/* forwarding its body */
	PI_REQ_DONE,		/* request sent; waiting for the response's end */
	PI_CLOSING,		/* flushing the last bytes to the VM, then close */
	PI_WEBSOCKET,		/* handed to the raw relay */
};

enum pi_res_state {
	PR_IDLE = 0,		/* no request outstanding */
	PR_HEAD,		/* reading a response head */
	PR_BODY,		/* relaying its body */
};

struct proxy_inspect {
	struct proxy_conn	*pi_conn;
	struct proxy_keys	*pi_keys;	/* referenced */
	struct proxy_tls_check	 pi_tc;
	struct event		*pi_timer;	/* handshake deadline, then idle */
	int			 pi_client_up;
	int			 pi_server_up;
	const char		*pi_fail;	/* upstream refused: reason code */
	char			 pi_fail_why[128];
	enum pi_req_state	 pi_rq;
	enum pi_res_state	 pi_rs;

	/* the request in progress */
	size_t			 pi_hfind;	/* http_head_find() state */
	uint8_t			*pi_head;	/* its head bytes (owned) */
	struct http_request	 pi_req;
	struct http_chunked	 pi_req_ch;
	uint64_t		 pi_req_left;
	struct scan_stream	 pi_req_scan;
	struct proxy_policy	*pi_pp;		/* policy that decided it */
	const struct policy_rule *pi_rule;
	int			 pi_would_deny;
	char			 pi_wd_reason[32];
	char			 pi_method[HTTP_METHOD_MAX + 1];
	char			*pi_path;	/* for the audit record */
	const char		*pi_inject[AUDIT_INJECT_MAX + 1];
	size_t			 pi_ninject;
	int			 pi_redact;	/* this rule carries secrets */
	int			 pi_websocket;
	struct timeval		 pi_t0;
	uint64_t		 pi_up;
	uint64_t		 pi_down;
	int			 pi_keepalive;	/* both sides may go on */

	/* the response in progress */
	size_t			 pi_rfind;
	uint8_t			*pi_rhead;
	struct http_response	 pi_res;
	struct http_chunked	 pi_res_ch;
	uint64_t		 pi_res_left;
	enum http_framing	 pi_out_framing;	/* towards the VM */
	int			 pi_status;
	struct scan_redact	*pi_redactor;	/* bodies */
	struct scan_redact	*pi_hredactor;	/* header values */
	uint64_t		 pi_redacted;
	int			 pi_redacted_id;	/* a secret that was redacted */
	int			 pi_server_eof;
	int			 pi_client_eof;
	struct http_buf		 pi_out;	/* scratch, wiped */
	struct timeval		 pi_closing_since;
};

static void	pi_run(struct proxy_conn *);
static void	pi_closing(struct proxy_conn *);
static void	pi_client_read(struct bufferevent *, void *);
static void	pi_client_write(struct bufferevent *, void *);
static void	pi_client_event(struct bufferevent *, short, void *);
static void	pi_server_read(struct bufferevent *, void *);
static void	pi_server_write(struct bufferevent *, void *);

/*
 * Small helpers.
 */

static long long
pi_ms(const struct timeval *t0)
{
	struct timeval now, d;

	evutil_gettimeofday(&now, NULL);
	evutil_timersub(&now, t0, &d);
	return (long long)d.tv_sec * 1000 + d.tv_usec / 1000;
}

static char *
pi_strndup(const uint8_t *buf, const struct http_span *s)
{
	char *p;

	if ((p = malloc(s->len + 1)) == NULL)
		return NULL;
	memcpy(p, buf + s->off, s->len);
	p[s->len] = '\0';
	return p;
}

static const char *
pi_sandbox(const struct proxy_conn *c)
{
	return c->pc_sandbox != NULL ? c->pc_sandbox->ps_rec.sb_name : "-";
}

/* The request record: method, path, status, bytes, time, rule, injected names. */
static void
pi_audit_request(struct proxy_conn *c, const char *reason, int status)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct audit_record r = AUDIT_RECORD_INIT;
	char src[NETADDR_STRLEN + 8], dst[HOSTNAME_MAX + 16];

	r.ar_event = AUDIT_EV_REQUEST;
	r.ar_sandbox = pi_sandbox(c);
	r.ar_src = proxy_conn_addrport(&c->pc_src, c->pc_sport, src, sizeof(src));
	snprintf(dst, sizeof(dst), "%s:%u", c->pc_name, c->pc_dport);
	r.ar_dst = dst;
	r.ar_tls = c->pc_proto == POLICY_PROTO_TLS ? "inspect" : NULL;
	r.ar_method = pi->pi_method[0] != '\0' ? pi->pi_method : NULL;
	r.ar_path = pi->pi_path;
	r.ar_status = status;
	r.ar_decision = reason != NULL ? "deny" : "allow";
	r.ar_rule = pi->pi_rule != NULL ? pi->pi_rule->pr_id :
	    (c->pc_rule[0] != '\0' ? c->pc_rule : NULL);
	r.ar_reason = reason != NULL ? reason :
	    (pi->pi_would_deny ? pi->pi_wd_reason : NULL);
	r.ar_would_deny = reason == NULL && pi->pi_would_deny;
	pi->pi_inject[pi->pi_ninject] = NULL;
	r.ar_inject = pi->pi_ninject > 0 ? pi->pi_inject : NULL;
	r.ar_bytes_up = (long long)pi->pi_up;
	r.ar_bytes_down = (long long)pi->pi_down;
	r.ar_ms = pi_ms(&pi->pi_t0);
	r.ar_aggregate = proxy_audit_agg(reason);	/* denials only */
	if (proxy_audit() != NULL && audit_write(proxy_audit(), &r) == -1)
		log_warn("audit write (connection %llu)",
		    (unsigned long long)c->pc_id);
}

/* An exfil record: a placeholder blocked, or a secret's value redacted. */
static void
pi_audit_exfil(struct proxy_conn *c, const char *reason, int id, const char *where,
    long long count)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_kv kv[3];
	char src[NETADDR_STRLEN + 8], dst[HOSTNAME_MAX + 16];
	size_t n = 0;

	r.ar_event = AUDIT_EV_EXFIL;
	r.ar_sandbox = pi_sandbox(c);
	r.ar_src = proxy_conn_addrport(&c->pc_src, c->pc_sport, src, sizeof(src));
	snprintf(dst, sizeof(dst), "%s:%u", c->pc_name, c->pc_dport);
	r.ar_dst = dst;
	r.ar_tls = c->pc_proto == POLICY_PROTO_TLS ? "inspect" : NULL;
	r.ar_method = pi->pi_method[0] != '\0' ? pi->pi_method : NULL;
	r.ar_path = pi->pi_path;
	/* A redaction lets the (redacted) response through: no decision. */
	r.ar_decision = count > 0 ? NULL : "deny";
	r.ar_rule = pi->pi_rule != NULL ? pi->pi_rule->pr_id : NULL;
	r.ar_reason = reason;
	if (proxy_keys_secret_name(pi->pi_keys, id) != NULL)
		kv[n++] = (struct audit_kv){ .ak_key = "secret",
		    .ak_str = proxy_keys_secret_name(pi->pi_keys, id) };
	if (where != NULL)
		kv[n++] = (struct audit_kv){ .ak_key = "where", .ak_str = where };
	if (count > 0)
		kv[n++] = (struct audit_kv){ .ak_key = "count", .ak_num = count };
	r.ar_extra = kv;
	r.ar_nextra = n;
	if (proxy_audit() != NULL && audit_write(proxy_audit(), &r) == -1)
		log_warn("audit write (connection %llu)",
		    (unsigned long long)c->pc_id);
}

/* Forgets the request in progress (after its record was written). */
static void
pi_request_reset(struct proxy_inspect *pi)
{
	free(pi->pi_head);
	pi->pi_head = NULL;
	free(pi->pi_rhead);
	pi->pi_rhead = NULL;
	free(pi->pi_path);
	pi->pi_path = NULL;
	if (pi->pi_pp != NULL)
		proxy_policy_put(pi->pi_pp);
	pi->pi_pp = NULL;
	pi->pi_rule = NULL;
	pi->pi_would_deny = 0;
	pi->pi_method[0] = '\0';
	pi->pi_ninject = 0;
	pi->pi_redact = 0;
	pi->pi_websocket = 0;
	pi->pi_up = pi->pi_down = 0;
	pi->pi_hfind = pi->pi_rfind = 0;
	pi->pi_status = -1;
	pi->pi_redacted = 0;
	pi->pi_redacted_id = -1;
	pi->pi_rs = PR_IDLE;
	http_buf_free(&pi->pi_out);
}

/*
 * No more requests: stop reading, let what is queued for the VM go out (through
 * the filter *and* its socket bufferevent: freeing the filter earlier would drop
 * it), then close.  The timer polls the socket side, which the filter does not
 * report on; PI_CLOSE_WAIT bounds it.
 */
static void
pi_closing(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct timeval tv = { 0, 20 * 1000 };

	pi->pi_rq = PI_CLOSING;
	evutil_gettimeofday(&pi->pi_closing_since, NULL);
	bufferevent_disable(c->pc_client, EV_READ);
	if (c->pc_server != NULL)
		bufferevent_disable(c->pc_server, EV_READ);
	if (pi->pi_timer != NULL)
		evtimer_add(pi->pi_timer, &tv);
}

/* 1 once nothing is left to send to the VM. */
static int
pi_client_flushed(struct proxy_conn *c)
{
	struct bufferevent *u = bufferevent_get_underlying(c->pc_client);

	return evbuffer_get_length(bufferevent_get_output(c->pc_client)) == 0 &&
	    (u == NULL || evbuffer_get_length(bufferevent_get_output(u)) == 0);
}

/*
 * Ends the exchange with a response of our own (status, a short text) and closes
 * once it is flushed.  reason: the audit reason of the request record (NULL: none,
 * e.g. a 502 for an upstream that broke the response).  While a response's body is
 * on its way to the VM (a request body refused mid-way: bad chunk, placeholder),
 * ours cannot follow it: the connection is cut instead (pc_client freed).
 */
static void
pi_refuse(struct proxy_conn *c, int status, const char *phrase, const char *reason,
    const char *text)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct evbuffer *out = bufferevent_get_output(c->pc_client);
	char body[PI_BODY_TEXT_MAX];
	int n;

	if (pi->pi_rs == PR_BODY) {
		/* Part of the response is out: all we can do is cut it. */
		pi_audit_request(c, reason, pi->pi_status);
		proxy_conn_close(c, NULL, 1);
		return;
	}
	n = snprintf(body, sizeof(body), "airlock: %s\n", text);
	if (n < 0 || (size_t)n >= sizeof(body))
		n = (int)strlen(body);
	pi->pi_status = status;
	pi_audit_request(c, reason, status);
	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; "
	    "charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n"
	    "Cache-Control: no-store\r\n\r\n", status, phrase, n);
	/*
	 * An answer to HEAD has no body (RFC 9110 9.3.2): the client would read it
	 * as bytes after the response (pi_method is set once a head was parsed).
	 */
	if (strcmp(pi->pi_method, "HEAD") != 0)
		evbuffer_add(out, body, (size_t)n);
	pi_request_reset(pi);
	pi_closing(c);
}

/* A policy-style refusal: 403 with sandbox, policy, rule and reason in the text. */
static void
pi_deny(struct proxy_conn *c, const char *reason, const char *what)
{
	struct proxy_inspect *pi = c->pc_inspect;
	char text[PI_BODY_TEXT_MAX - 16];

	snprintf(text, sizeof(text), "%s denied by sandbox %s, policy %s, rule %s: "
	    "%s", what, pi_sandbox(c), pi->pi_pp != NULL ?
	    pi->pi_pp->pp_policy->p_name : "-", pi->pi_rule != NULL &&
	    pi->pi_rule->pr_id != NULL ? pi->pi_rule->pr_id : "(none)", reason);
	pi_refuse(c, 403, "Forbidden", reason, text);
}

static const char *
pi_reason_phrase(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 405: return "Method Not Allowed";
	case 414: return "URI Too Long";
	case 417: return "Expectation Failed";
	case 421: return "Misdirected Request";
	case 431: return "Request Header Fields Too Large";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 505: return "HTTP Version Not Supported";
	default: return "Error";
	}
}

/* Counts n bytes moved in one direction. */
static void
pi_count(struct proxy_conn *c, int up, size_t n)
{
	struct proxy_inspect *pi = c->pc_inspect;

	if (up) {
		pi->pi_up += n;
		c->pc_up += n;
		proxy_sandbox_count(c->pc_sandbox, PROXY_STAT_BYTES_UP, (int64_t)n);
	} else {
		pi->pi_down += n;
		c->pc_down += n;
		proxy_sandbox_count(c->pc_sandbox, PROXY_STAT_BYTES_DOWN, (int64_t)n);
	}
	event_base_gettimeofday_cached(c->pc_worker->pw_base, &c->pc_last);
}

/*
 * Request side.
 */

/*
 * The key material in force now, for the request about to start (no response is
 * in progress: the redactors, built on the old sets, are dropped).  The old image
 * is let go; its values stay redacted by the new one (proxy_keys_set()).
 */
static void
pi_keys_refresh(struct proxy_inspect *pi)
{
	struct proxy_keys *k = proxy_keys_get();

	/* pi holds its image: the pointer cannot be reused while compared. */
	if (k == NULL || k == pi->pi_keys) {
		proxy_keys_put(k);
		return;
	}
	scan_redact_free(pi->pi_redactor);
	scan_redact_free(pi->pi_hredactor);
	pi->pi_redactor = pi->pi_hredactor = NULL;
	proxy_keys_put(pi->pi_keys);
	pi->pi_keys = k;
	pi->pi_tc.tc_keys = k;
}

/* Does the rule inject secret index id (and does the vault bind it to this host)? */
static int
pi_secret_allowed(struct proxy_conn *c, int id)
{
	struct proxy_inspect *pi = c->pc_inspect;
	const struct proxy_secret *s;
	size_t i;

	if (id < 0 || (size_t)id >= pi->pi_keys->pk_nsecrets || pi->pi_rule == NULL ||
	    c->pc_proto != POLICY_PROTO_TLS)
		return 0;
	s = &pi->pi_keys->pk_secrets[id];
	for (i = 0; i < pi->pi_rule->pr_ninject; i++)
		if (strcmp(pi->pi_rule->pr_inject[i].pi_secret, s->ps_name) == 0)
			return proxy_secret_allows_host(s, c->pc_name);
	return 0;
}

/*
 * The inject entry of the rule that puts secret id (any secret: id -1) into the
 * field called name[namelen], or -1.
 */
static int
pi_inject_entry(struct proxy_conn *c, int id, const uint8_t *name, size_t namelen)
{
	struct proxy_inspect *pi = c->pc_inspect;
	const struct policy_rule *r = pi->pi_rule;
	const char *h;
	size_t i;

	for (i = 0; r != NULL && i < r->pr_ninject && i < PI_INJECT_MAX; i++) {
		h = r->pr_inject[i].pi_header;
		if ((id < 0 || strcmp(r->pr_inject[i].pi_secret,
		    pi->pi_keys->pk_secrets[id].ps_name) == 0) &&
		    strlen(h) == namelen && strncasecmp(h, (const char *)name,
		    namelen) == 0)
			return (int)i;
	}
	return -1;
}

/*
 * The header-value hook of http_request_rewrite(): in a field that an inject entry
 * names (and the VM wrote with the placeholder: the others are replaced by the
 * template), placeholders become values.  pi_head_placeholders() has refused
 * every placeholder that may not be replaced; any other field is kept as it is.
 */
static int
pi_subst_value(void *arg, const uint8_t *name, size_t namelen,
    const uint8_t *value, size_t valuelen, struct http_buf *out)
{
	struct proxy_conn *c = arg;
	struct proxy_inspect *pi = c->pc_inspect;

	if (pi_inject_entry(c, -1, name, namelen) == -1)
		return 0;
	return scan_subst_value(pi->pi_keys->pk_ph_set, value, valuelen, out, NULL,
	    0) == -1 ? -1 : 1;
}

/*
 * Every placeholder in the request's header fields, before the head is rewritten:
 * the only place one may stand is a field that the rule injects that same secret
 * into, with the vault binding the secret to this host; there it is replaced in
 * place (Basic credentials decoded and re-encoded), and the rule's template is not
 * used for that field.  Anywhere else -- a field name, another field, another
 * secret, an encoded form -- it is refused: 0 with *supplied the inject entries
 * (bits) whose field the VM wrote with its placeholder, or -1 with *why and *id
 * (the secret, or -1 when unknown).
 */
static int
pi_head_placeholders(struct proxy_conn *c, const uint8_t *h,
    const struct http_request *rq, const char **why, int *id, uint32_t *supplied)
{
	struct proxy_inspect *pi = c->pc_inspect;
	const struct scan_set *set = pi->pi_keys->pk_ph_set;
	struct http_buf scratch = HTTP_BUF_INIT;
	struct scan_match m;
	const struct http_field *f;
	int ids[PI_IDS_MAX], n, rc = 0, e;
	size_t i, k;

	*why = NULL;
	*id = -1;
	*supplied = 0;
	if (pi->pi_keys->pk_nsecrets == 0)
		return 0;	/* no secret, so no placeholder to look for */
	for (i = 0; i < rq->hq_nfields && rc == 0; i++) {
		f = &rq->hq_fields[i];
		if (scan_find(set, h + f->hf_name.off, f->hf_name.len, &m)) {
			*id = m.sm_id;
			rc = -1;
			break;
		}
		for (k = 0; k < PI_IDS_MAX; k++)
			ids[k] = -1;
		scratch.hb_len = 0;
		if ((n = scan_subst_value(set, h + f->hf_value.off, f->hf_value.len,
		    &scratch, ids, PI_IDS_MAX)) == -1) {
			rc = -1;	/* fail closed: unchecked is refused */
			break;
		}
		for (k = 0; k < PI_IDS_MAX && ids[k] != -1 && rc == 0; k++) {
			if (!pi_secret_allowed(c, ids[k]) || (e = pi_inject_entry(c,
			    ids[k], h + f->hf_name.off, f->hf_name.len)) == -1) {
				*id = ids[k];
				rc = -1;
			} else
				*supplied |= 1u << e;
		}
		if (rc == 0 && n > 0 && k == PI_IDS_MAX)
			rc = -1;	/* more secrets than can be checked */
		/* What is left must hold no placeholder in any form. */
		if (rc == 0 && scan_find(set, scratch.hb_p, scratch.hb_len, &m)) {
			*id = m.sm_id;
			if (m.sm_enc != SCAN_ENC_RAW && m.sm_enc != SCAN_ENC_BASIC)
				*why = PR_STR(PLACEHOLDER_ENCODED);
			rc = -1;
		}
	}
	http_buf_free(&scratch);
	if (rc == 0)
		return 0;
	if (*why == NULL)
		*why = *id >= 0 && pi_secret_allowed(c, *id) ?
		    PR_STR(PLACEHOLDER_IN_HEADER) : PR_STR(PLACEHOLDER_UNBOUND_HOST);
	return -1;
}

/* "name[:port]" of the Host field equals the connection's name and port? */
static int
pi_host_ok(struct proxy_conn *c, const uint8_t *v, size_t len)
{
	char name[HOSTNAME_MAX + 1];
	size_t i, nlen = len;
	unsigned long port = c->pc_proto == POLICY_PROTO_TLS ? 443 : 80;

	for (i = len; i > 0; i--) {
		if (v[i - 1] == ':') {
			nlen = i - 1;
			if (i == len || len - i > 5)
				return 0;
			port = 0;
			for (; i < len; i++) {
				if (!isdigit(v[i]))
					return 0;
				port = port * 10 + (unsigned long)(v[i] - '0');
			}
			break;
		}
		if (!isdigit(v[i - 1]))
			break;
	}
	if (nlen == 0 || hostname_normalize((const char *)v, nlen, name) !=
	    HOSTNAME_OK)
		return 0;
	return strcmp(name, c->pc_name) == 0 && port == c->pc_dport;
}

/* The rule's injected headers into set[], values built into vals[] (wiped later). */
static int
pi_inject_build(struct proxy_conn *c, struct http_hdr_set *set,
    struct http_buf *vals, size_t *nset, uint32_t supplied, const char **why)
{
	struct proxy_inspect *pi = c->pc_inspect;
	const struct policy_rule *r = pi->pi_rule;
	const struct proxy_secret *s;
	const char *t, *at;
	size_t i;

	*nset = 0;
	for (i = 0; r != NULL && i < r->pr_ninject && i < PI_INJECT_MAX; i++) {
		s = proxy_keys_secret(pi->pi_keys, r->pr_inject[i].pi_secret);
		if (s == NULL || !proxy_secret_allows_host(s, c->pc_name)) {
			/* The vault changed under a policy that was checked: refuse. */
			*why = PR_STR(SECRET_UNAVAILABLE);
			return -1;
		}
		if (pi->pi_ninject < AUDIT_INJECT_MAX)
			pi->pi_inject[pi->pi_ninject++] = s->ps_name;
		/* The VM wrote this field with the placeholder: replaced in place. */
		if (supplied & (1u << i))
			continue;
		t = r->pr_inject[i].pi_value != NULL ? r->pr_inject[i].pi_value :
		    "{secret}";
		if ((at = strstr(t, "{secret}")) == NULL) {
			*why = PR_STR(SECRET_UNAVAILABLE);
			return -1;
		}
		if (http_buf_add(&vals[i], t, (size_t)(at - t)) == -1 ||
		    http_buf_add(&vals[i], s->ps_value, s->ps_vlen) == -1 ||
		    http_buf_add_str(&vals[i], at + 8) == -1) {
			*why = PR_STR(INTERNAL_ERROR);
			return -1;
		}
		set[*nset].hx_name = r->pr_inject[i].pi_header;
		set[*nset].hx_value = vals[i].hb_p;
		set[*nset].hx_value_len = vals[i].hb_len;
		(*nset)++;
	}
	return 0;
}

/* Request fields never sent upstream on a rule that redacts (lower case). */
static const char *const pi_range_fields[] = { "range", "if-range" };

/*
 * A complete request head is in pi_head: check it, decide, rewrite and send it
 * upstream.  Returns 0 if the request goes on, -1 if it was refused (the
 * connection is closing).
 */
static int
pi_request_start(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct http_request *rq = &pi->pi_req;
	const uint8_t *h = pi->pi_head;
	struct http_hdr_set set[18];
	struct http_buf vals[18];
	struct http_buf head = HTTP_BUF_INIT;
	struct http_rewrite rw;
	struct policy_query q;
	struct policy_verdict v;
	struct scan_match m;
	struct http_span path;
	char *rawpath = NULL, what[HTTP_METHOD_MAX + HOSTNAME_MAX + 200];
	char fwd[SANDBOX_NAME_MAX + 48];
	const char *why = NULL;
	size_t nset = 0, i, plen;
	int ret = -1, inject, id;
	uint32_t supplied = 0;

	memset(vals, 0, sizeof(vals));
	evutil_gettimeofday(&pi->pi_t0, NULL);
	plen = rq->hq_method.len < HTTP_METHOD_MAX ? rq->hq_method.len :
	    HTTP_METHOD_MAX;
	memcpy(pi->pi_method, h + rq->hq_method.off, plen);
	pi->pi_method[plen] = '\0';
	/* The path for the record (and the policy): "/" for an empty one. */
	path = rq->hq_path;
	if (path.len == 0)
		rawpath = strdup("/");
	else
		rawpath = pi_strndup(h, &path);
	if (rawpath == NULL)
		goto internal;
	if (proxy_config()->audit_log_query && rq->hq_has_query) {
		size_t n = strlen(rawpath) + 1 + rq->hq_query.len + 1;

		if ((pi->pi_path = malloc(n)) == NULL)
			goto internal;
		snprintf(pi->pi_path, n, "%s?%.*s", rawpath, (int)rq->hq_query.len,
		    (const char *)h + rq->hq_query.off);
	} else if ((pi->pi_path = strdup(rawpath)) == NULL)
		goto internal;
	if ((pi->pi_pp = proxy_sandbox_policy(c->pc_sandbox)) == NULL)
		goto internal;
	pi_keys_refresh(pi);

	if (proxy_sandbox_is_dead(c->pc_sandbox)) {
		pi_refuse(c, 403, "Forbidden", PR_STR(SANDBOX_REMOVED),
		    "the sandbox was removed");
		goto out;
	}
	if (pi->pi_fail != NULL) {
		snprintf(what, sizeof(what), "upstream %s refused: %s", c->pc_name,
		    pi->pi_fail_why);
		pi_refuse(c, 502, "Bad Gateway", pi->pi_fail, what);
		goto out;
	}
	if (rq->hq_host.len == 0 || !pi_host_ok(c, h + rq->hq_host.off,
	    rq->hq_host.len)) {
		snprintf(what, sizeof(what), "this connection is for %s:%u only",
		    c->pc_name, c->pc_dport);
		pi_refuse(c, 421, "Misdirected Request", PR_STR(HOST_MISMATCH), what);
		goto out;
	}
	if (proxy_limit_request_take(c->pc_sandbox,
	    &pi->pi_pp->pp_policy->p_limits) == -1) {
		pi_refuse(c, 429, "Too Many Requests", PR_STR(RATE_LIMITED),
		    "the sandbox's requests_per_second limit is spent");
		goto out;
	}
	if (http_method_classify(h + rq->hq_method.off, rq->hq_method.len) ==
	    HTTP_MC_ECHO) {
		pi_refuse(c, 405, "Method Not Allowed", PR_STR(TRACE_REFUSED),
		    "TRACE and TRACK are never forwarded");
		goto out;
	}
	if (rq->hq_absolute && c->pc_proto == POLICY_PROTO_TLS) {
		/* Only a client that thinks it talks to a plain-HTTP proxy sends it. */
		pi_refuse(c, 400, "Bad Request", PR_STR(INVALID_PATH),
		    "absolute-form request-target inside TLS");
		goto out;
	}
	memset(&q, 0, sizeof(q));
	q.pq_host = c->pc_name;
	q.pq_addr = &c->pc_dst;
	q.pq_port = c->pc_dport;
	q.pq_proto = c->pc_proto;
	q.pq_method = pi->pi_method;
	q.pq_path = rawpath;
	snprintf(what, sizeof(what), "%s %s", pi->pi_method, c->pc_name);
	if (!policy_decide(pi->pi_pp->pp_policy, &q, &v)) {
		pi->pi_rule = v.pv_rule;
		pi_deny(c, policy_reason_str(v.pv_reason), what);
		goto out;
	}
	pi->pi_rule = v.pv_rule;
	if (v.pv_would_deny) {
		pi->pi_would_deny = 1;
		snprintf(pi->pi_wd_reason, sizeof(pi->pi_wd_reason), "%s",
		    policy_reason_str(v.pv_reason));
	}
	if (c->pc_proto == POLICY_PROTO_TLS && (v.pv_rule == NULL ||
	    v.pv_tls != POLICY_TLS_INSPECT)) {
		/* A reload turned this name to splice: this connection cannot follow. */
		pi_deny(c, PR_STR(POLICY_RELOAD), what);
		goto out;
	}
	/*
	 * Frames after the 101 are neither scanned nor redacted, so the policy
	 * loader refuses a rule that both injects a secret and allows websocket
	 * (an upstream echoing the handshake's headers in a frame would hand the VM
	 * the injected value).
	 */
	if (rq->hq_websocket) {
		if (v.pv_rule == NULL || !v.pv_rule->pr_websocket) {
			pi_deny(c, PR_STR(WEBSOCKET_NOT_ALLOWED), what);
			goto out;
		}
		pi->pi_websocket = 1;
	}
	/*
	 * A placeholder in the request line (the target, path or query, and the
	 * method, which a rule without "methods" lets through as any token) is
	 * never sent.
	 */
	if (scan_find(pi->pi_keys->pk_ph_set, h + rq->hq_method.off,
	    rq->hq_target.off + rq->hq_target.len - rq->hq_method.off, &m)) {
		pi_audit_exfil(c, PR_STR(PLACEHOLDER_IN_URL), m.sm_id, "url", 0);
		pi_deny(c, PR_STR(PLACEHOLDER_IN_URL), what);
		goto out;
	}
	/* Registered methods only; the rarer ones where the rule lists them. */
	switch (http_method_classify(h + rq->hq_method.off, rq->hq_method.len)) {
	case HTTP_MC_COMMON:
		break;
	case HTTP_MC_REGISTERED:
		if (v.pv_rule != NULL && v.pv_rule->pr_nmethods > 0)
			break;
		/* FALLTHROUGH */
	default:
		pi_deny(c, PR_STR(METHOD_NOT_ALLOWED), what);
		goto out;
	}
	if (pi_head_placeholders(c, h, rq, &why, &id, &supplied) == -1) {
		pi_audit_exfil(c, why, id, "header", 0);
		pi_deny(c, why, what);
		goto out;
	}
	inject = c->pc_proto == POLICY_PROTO_TLS && v.pv_rule != NULL &&
	    v.pv_rule->pr_ninject > 0;
	/* Every response is scanned while any secret value is loaded. */
	pi->pi_redact = inject || pi->pi_keys->pk_nvals > 0;
	if (inject && pi_inject_build(c, set, vals, &nset, supplied, &why) == -1) {
		pi_deny(c, why, what);
		goto out;
	}
	if (pi->pi_redact) {
		/* Responses must come uncompressed to be scanned (see the top). */
		set[nset].hx_name = "Accept-Encoding";
		set[nset].hx_value = (const uint8_t *)"identity";
		set[nset].hx_value_len = 8;
		nset++;
	}
	if (v.pv_rule != NULL && v.pv_rule->pr_forwarded) {
		/* Our own, naming the sandbox; the VM's were dropped (proxy_http.h). */
		if (http_forwarded_value(pi_sandbox(c), c->pc_proto ==
		    POLICY_PROTO_TLS, fwd, sizeof(fwd)) == -1)
			goto internal;
		set[nset].hx_name = "Forwarded";
		set[nset].hx_value = (const uint8_t *)fwd;
		set[nset].hx_value_len = strlen(fwd);
		nset++;
	}
	memset(&rw, 0, sizeof(rw));
	rw.rw_set = set;
	rw.rw_nset = nset;
	rw.rw_framing = rq->hq_framing;
	rw.rw_length = rq->hq_length;
	rw.rw_close = 0;
	rw.rw_upgrade = pi->pi_websocket;
	rw.rw_host = c->pc_name;
	if (pi->pi_redact) {
		/*
		 * No partial responses where secrets are redacted: a Range request
		 * would let the VM read an echoed secret a few bytes at a time,
		 * each slice too short to be recognised (proxy_scan.h, limits).
		 */
		rw.rw_drop = pi_range_fields;
		rw.rw_ndrop = sizeof(pi_range_fields) / sizeof(pi_range_fields[0]);
	}
	if (supplied != 0) {
		rw.rw_value_fn = pi_subst_value;
		rw.rw_value_arg = c;
	}
	if (http_request_rewrite(h, rq, &rw, &head) == -1) {
		if (errno == EMSGSIZE)
			pi_refuse(c, 431, "Request Header Fields Too Large",
			    PR_STR(HTTP_HEAD_TOO_LARGE), "the request head would be too "
			    "large with the fields airlock adds");
		else
			pi_refuse(c, 400, "Bad Request", PR_STR(HTTP_MALFORMED),
			    "the request head could not be rebuilt");
		goto out;
	}
	pi->pi_keepalive = rq->hq_keepalive;
	pi_count(c, 1, head.hb_len);
	if (bufferevent_write(c->pc_server, head.hb_p, head.hb_len) == -1)
		goto internal;
	pi->pi_req_left = rq->hq_framing == HTTP_BODY_LENGTH ? rq->hq_length : 0;
	http_chunked_init(&pi->pi_req_ch);
	scan_stream_init(&pi->pi_req_scan, pi->pi_keys->pk_ph_set);
	pi->pi_rq = rq->hq_framing == HTTP_BODY_NONE || (rq->hq_framing ==
	    HTTP_BODY_LENGTH && rq->hq_length == 0) ? PI_REQ_DONE : PI_REQ_BODY;
	pi->pi_rs = PR_HEAD;
	ret = 0;
	goto out;
 internal:
	pi_refuse(c, 500, "Internal Server Error", PR_STR(INTERNAL_ERROR),
	    "internal error");
 out:
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		http_buf_free(&vals[i]);
	http_buf_free(&head);
	free(rawpath);
	return ret;
}

/* Reads a request head from the VM.  1: progress, 0: need more, -1: closing. */
static int
pi_request_head(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct evbuffer *in = bufferevent_get_input(c->pc_client);
	size_t len = evbuffer_get_length(in), hl = 0;
	const uint8_t *buf;
	enum http_res r;
	int st;

	if (len == 0)
		return 0;
	if (len > HTTP_HEAD_MAX + 4)
		len = HTTP_HEAD_MAX + 4;
	if ((buf = evbuffer_pullup(in, (ev_ssize_t)len)) == NULL)
		return 0;
	r = http_head_find(buf, len, &pi->pi_hfind, &hl);
	/* A request line we will refuse is refused now, not at the read timeout. */
	if (r == HTTP_NEED_MORE && ((r = http_request_line_check(buf, len,
	    &pi->pi_req.hq_why)) == HTTP_NEED_MORE || r == HTTP_OK))
		return 0;
	if (r == HTTP_OK)
		r = http_request_parse(buf, hl, &pi->pi_req);
	if (r != HTTP_OK) {
		if (r == HTTP_NEED_MORE)
			r = HTTP_E_BAD;
		st = http_res_status(r);
		log_debug("connection %llu: request refused: %s",
		    (unsigned long long)c->pc_id, pi->pi_req.hq_why != NULL ?
		    pi->pi_req.hq_why : http_res_str(r));
		evutil_gettimeofday(&pi->pi_t0, NULL);
		pi_refuse(c, st, pi_reason_phrase(st), http_res_reason(r),
		    http_res_str(r));
		return -1;
	}
	if ((pi->pi_head = malloc(hl)) == NULL) {
		pi_refuse(c, 500, "Internal Server Error", PR_STR(INTERNAL_ERROR),
		    "internal error");
		return -1;
	}
	memcpy(pi->pi_head, buf, hl);
	evbuffer_drain(in, hl);
	return pi_request_start(c) == 0 ? 1 : -1;
}

/* Scans body bytes for placeholders.  0, or -1 (refused: the connection closes). */
static int
pi_body_scan(struct proxy_conn *c, const uint8_t *p, size_t n)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct scan_match m;
	char what[HTTP_METHOD_MAX + HOSTNAME_MAX + 4];

	if (!scan_stream_feed(&pi->pi_req_scan, p, n, &m))
		return 0;
	snprintf(what, sizeof(what), "%s %s", pi->pi_method, c->pc_name);
	/* The head (and some body) went upstream: the upstream request is cut. */
	if (c->pc_server != NULL)
		bufferevent_disable(c->pc_server, EV_READ | EV_WRITE);
	pi_audit_exfil(c, PR_STR(PLACEHOLDER_IN_BODY), m.sm_id, "body", 0);
	pi_deny(c, PR_STR(PLACEHOLDER_IN_BODY), what);
	return -1;
}

/* Forwards request body bytes.  1: progress, 0: need more, -1: closing. */
static int
pi_request_body(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct evbuffer *in = bufferevent_get_input(c->pc_client);
	struct evbuffer *out = bufferevent_get_output(c->pc_server);
	size_t len = evbuffer_get_length(in), used = 0, consumed;
	struct http_span d;
	const uint8_t *buf;
	enum http_res r;

	if (len == 0)
		return 0;
	if (evbuffer_get_length(out) >= PROXY_RELAY_HIGH)
		return 0;	/* pi_server_write comes back */
	if (len > PI_CHUNK_MAX)
		len = PI_CHUNK_MAX;
	if (pi->pi_req.hq_framing == HTTP_BODY_LENGTH && len > pi->pi_req_left)
		len = (size_t)pi->pi_req_left;
	if ((buf = evbuffer_pullup(in, (ev_ssize_t)len)) == NULL)
		return 0;
	if (pi->pi_req.hq_framing == HTTP_BODY_LENGTH) {
		if (pi_body_scan(c, buf, len) == -1)
			return -1;
		pi_count(c, 1, len);
		evbuffer_remove_buffer(in, out, len);
		pi->pi_req_left -= len;
		if (pi->pi_req_left == 0)
			pi->pi_rq = PI_REQ_DONE;
		return 1;
	}
	/* Chunked: decode, scan, encode again (extensions and trailers dropped). */
	http_buf_free(&pi->pi_out);
	r = HTTP_NEED_MORE;
	while (used < len) {
		r = http_chunked_feed(&pi->pi_req_ch, buf + used, len - used,
		    &consumed, &d);
		if (r == HTTP_E_BAD)
			break;
		if (d.len > 0) {
			if (pi_body_scan(c, buf + used + d.off, d.len) == -1)
				return -1;
			if (http_buf_add_chunk(&pi->pi_out, buf + used + d.off,
			    d.len) == -1) {
				r = HTTP_E_BAD;
				break;
			}
		}
		used += consumed;
		if (r == HTTP_OK)
			break;
	}
	if (r == HTTP_E_BAD) {
		if (c->pc_server != NULL)
			bufferevent_disable(c->pc_server, EV_READ | EV_WRITE);
		pi_refuse(c, 400, "Bad Request", PR_STR(HTTP_MALFORMED),
		    pi->pi_req_ch.hc_why != NULL ? pi->pi_req_ch.hc_why :
		    "bad chunked body");
		return -1;
	}
	if (r == HTTP_OK && http_buf_add_last_chunk(&pi->pi_out) == -1)
		return -1;
	evbuffer_drain(in, used);
	pi_count(c, 1, pi->pi_out.hb_len);
	evbuffer_add(out, pi->pi_out.hb_p, pi->pi_out.hb_len);
	http_buf_free(&pi->pi_out);
	if (r == HTTP_OK)
		pi->pi_rq = PI_REQ_DONE;
	return 1;
}

/*
 * Response side.
 */

static void
pi_redact_cb(void *arg, const struct scan_match *m)
{
	struct proxy_inspect *pi = arg;

	pi->pi_redacted++;
	pi->pi_redacted_id = m->sm_id;
}

/* The response-head hook: secret values in header values become placeholders. */
static int
pi_redact_value(void *arg, const uint8_t *name, size_t namelen,
    const uint8_t *value, size_t valuelen, struct http_buf *out)
{
	struct proxy_inspect *pi = arg;

	if (scan_redact_feed(pi->pi_hredactor, value, valuelen, out) == -1 ||
	    scan_redact_finish(pi->pi_hredactor, out) == -1)
		return -1;
	return 1;
}

/* Appends body bytes for the VM to pi_out, redacted and framed as decided. */
static int
pi_response_emit(struct proxy_conn *c, const uint8_t *p, size_t n, int last)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct http_buf tmp = HTTP_BUF_INIT;
	const uint8_t *q = p;
	size_t qn = n;
	int rc = 0;

	if (pi->pi_redact) {
		if ((n > 0 && scan_redact_feed(pi->pi_redactor, p, n, &tmp) == -1) ||
		    (last && scan_redact_finish(pi->pi_redactor, &tmp) == -1)) {
			http_buf_free(&tmp);
			return -1;
		}
		q = tmp.hb_p;
		qn = tmp.hb_len;
	}
	if (pi->pi_out_framing == HTTP_BODY_CHUNKED) {
		if ((qn > 0 && http_buf_add_chunk(&pi->pi_out, q, qn) == -1) ||
		    (last && http_buf_add_last_chunk(&pi->pi_out) == -1))
			rc = -1;
	} else if (qn > 0 && http_buf_add(&pi->pi_out, q, qn) == -1)
		rc = -1;
	http_buf_free(&tmp);
	return rc;
}

/*
 * Bytes from the origin that no outstanding request asked for: past the declared
 * end of a response, or while none is outstanding.  They never reach the VM (it
 * would read them as the answer to its next request: response smuggling); the
 * origin connection is done.  1 if there were any (dropped), else 0.
 */
static int
pi_upstream_extra(struct proxy_conn *c)
{
	struct evbuffer *in;

	if (c->pc_server == NULL || !c->pc_inspect->pi_server_up)
		return 0;
	in = bufferevent_get_input(c->pc_server);
	if (evbuffer_get_length(in) == 0)
		return 0;
	log_debug("connection %llu: %zu bytes from the upstream beyond the "
	    "response's end", (unsigned long long)c->pc_id,
	    evbuffer_get_length(in));
	evbuffer_drain(in, evbuffer_get_length(in));
	bufferevent_disable(c->pc_server, EV_READ);
	return 1;
}

/*
 * The response ended: record, then the next request or the close.  Bytes after
 * its end (pi_upstream_extra) end the origin connection and, once the VM has the
 * complete response, the VM's connection: a clean close after a complete
 * response, which an HTTP client treats as a keep-alive connection the server
 * closed (it retries on a new connection, RFC 9112 9.3.1), and the new
 * connection gets a new upstream connection.
 */
static void
pi_response_done(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;
	int extra = pi_upstream_extra(c);

	if (pi->pi_redacted > 0)
		pi_audit_exfil(c, PR_STR(SECRET_REDACTED), pi->pi_redacted_id, "response",
		    (long long)pi->pi_redacted);
	pi_audit_request(c, extra ? PR_STR(UPSTREAM_HTTP_MALFORMED) : NULL,
	    pi->pi_status);
	if (!pi->pi_keepalive || pi->pi_rq != PI_REQ_DONE || extra) {
		pi_request_reset(pi);
		pi_closing(c);
		return;
	}
	pi_request_reset(pi);
	pi->pi_rq = PI_REQ_HEAD;
}

/* 502 to the VM for a response we cannot pass on. */
static void
pi_bad_gateway(struct proxy_conn *c, const char *reason, const char *text)
{
	if (c->pc_server != NULL)
		bufferevent_disable(c->pc_server, EV_READ);
	pi_refuse(c, 502, "Bad Gateway", reason, text);
}

/*
 * What of a response head the redactor does not rewrite: a reason phrase holding a
 * secret value is dropped (an empty phrase is valid), a field name holding one
 * refuses the response.  0, or -1 (closed).
 */
static int
pi_response_names(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct http_response *rs = &pi->pi_res;
	const struct scan_set *set = pi->pi_keys->pk_val_set;
	struct scan_match m;
	size_t i;

	if (scan_find(set, pi->pi_rhead + rs->hs_reason.off, rs->hs_reason.len, &m)) {
		rs->hs_reason.len = 0;
		pi->pi_redacted++;
		pi->pi_redacted_id = m.sm_id;
	}
	for (i = 0; i < rs->hs_nfields; i++) {
		if (scan_find(set, pi->pi_rhead + rs->hs_fields[i].hf_name.off,
		    rs->hs_fields[i].hf_name.len, &m)) {
			pi_audit_exfil(c, PR_STR(SECRET_IN_FIELD_NAME), m.sm_id,
			    "response", 0);
			pi_bad_gateway(c, PR_STR(SECRET_IN_FIELD_NAME), "the upstream "
			    "sent a secret's value as a header field name");
			return -1;
		}
	}
	return 0;
}

/* A response head is in: check it and send it on.  1 progress, 0 more, -1 closed. */
static int
pi_response_head(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct http_response *rs = &pi->pi_res;
	struct evbuffer *in = bufferevent_get_input(c->pc_server);
	struct http_buf head = HTTP_BUF_INIT;
	struct http_rewrite rw;
	size_t len = evbuffer_get_length(in), hl = 0;
	const uint8_t *buf;
	enum http_res r;
	int i;

	if (len == 0) {
		if (pi->pi_server_eof) {
			pi_bad_gateway(c, PR_STR(UPSTREAM_CLOSED),
			    "the upstream closed without a response");
			return -1;
		}
		return 0;
	}
	if (len > HTTP_HEAD_MAX + 4)
		len = HTTP_HEAD_MAX + 4;
	if ((buf = evbuffer_pullup(in, (ev_ssize_t)len)) == NULL)
		return 0;
	r = http_head_find(buf, len, &pi->pi_rfind, &hl);
	if (r == HTTP_NEED_MORE && !pi->pi_server_eof)
		return 0;
	if (r == HTTP_OK)
		r = http_response_parse(buf, hl, pi->pi_req.hq_meth, rs);
	if (r != HTTP_OK) {
		log_debug("connection %llu: response refused: %s",
		    (unsigned long long)c->pc_id, rs->hs_why != NULL ? rs->hs_why :
		    http_res_str(r));
		pi_bad_gateway(c, PR_STR(UPSTREAM_HTTP_MALFORMED),
		    "the upstream's response was malformed");
		return -1;
	}
	free(pi->pi_rhead);
	if ((pi->pi_rhead = malloc(hl)) == NULL)
		return -1;
	memcpy(pi->pi_rhead, buf, hl);
	evbuffer_drain(in, hl);
	pi->pi_rfind = 0;
	pi->pi_status = rs->hs_status;
	/*
	 * A body we must scan cannot be compressed (see the top of this file).
	 * Every Content-Encoding field counts: "identity" then "gzip" is gzip.
	 */
	for (i = -1; pi->pi_redact && rs->hs_framing != HTTP_BODY_NONE &&
	    (i = http_field_find(pi->pi_rhead, rs->hs_fields, rs->hs_nfields,
	    "Content-Encoding", (size_t)(i + 1))) != -1; ) {
		if (rs->hs_fields[i].hf_value.len == 8 && strncasecmp((const char *)
		    pi->pi_rhead + rs->hs_fields[i].hf_value.off, "identity", 8) == 0)
			continue;
		pi_bad_gateway(c, PR_STR(UPSTREAM_COMPRESSED), "the upstream compressed "
		    "a response that must be scanned for secrets");
		return -1;
	}
	if (rs->hs_switching && !pi->pi_websocket) {
		pi_bad_gateway(c, PR_STR(UPSTREAM_HTTP_MALFORMED),
		    "the upstream switched protocols unasked");
		return -1;
	}
	if (pi->pi_redact && pi_response_names(c) == -1)
		return -1;
	memset(&rw, 0, sizeof(rw));
	if (pi->pi_redact) {
		if (pi->pi_hredactor == NULL && (pi->pi_hredactor = scan_redact_new(
		    pi->pi_keys->pk_val_set, pi_redact_cb, pi)) == NULL)
			return -1;
		rw.rw_value_fn = pi_redact_value;
		rw.rw_value_arg = pi;
	}
	pi->pi_res_left = rs->hs_framing == HTTP_BODY_LENGTH ? rs->hs_length : 0;
	http_chunked_init(&pi->pi_res_ch);
	if (rs->hs_interim || rs->hs_switching)
		pi->pi_out_framing = HTTP_BODY_NONE;
	else if (rs->hs_framing == HTTP_BODY_NONE || (rs->hs_framing ==
	    HTTP_BODY_LENGTH && rs->hs_length == 0))
		pi->pi_out_framing = rs->hs_framing;
	else if (pi->pi_redact || rs->hs_framing == HTTP_BODY_CHUNKED)
		/* A body that may change length: chunked to 1.1, until close to 1.0. */
		pi->pi_out_framing = pi->pi_req.hq_minor >= 1 ? HTTP_BODY_CHUNKED :
		    HTTP_BODY_CLOSE;
	else
		pi->pi_out_framing = rs->hs_framing;
	if (pi->pi_out_framing == HTTP_BODY_CLOSE || !rs->hs_keepalive)
		pi->pi_keepalive = 0;
	rw.rw_framing = pi->pi_out_framing;
	rw.rw_length = rs->hs_length;
	rw.rw_close = !pi->pi_keepalive && !rs->hs_interim && !rs->hs_switching;
	rw.rw_upgrade = rs->hs_switching;
	if (http_response_rewrite(pi->pi_rhead, rs, &rw, &head) == -1) {
		http_buf_free(&head);
		pi_bad_gateway(c, PR_STR(UPSTREAM_HTTP_MALFORMED),
		    "the upstream's response head could not be rebuilt");
		return -1;
	}
	pi_count(c, 0, head.hb_len);
	bufferevent_write(c->pc_client, head.hb_p, head.hb_len);
	http_buf_free(&head);
	if (rs->hs_interim) {
		pi->pi_rs = PR_HEAD;		/* the final head follows */
		return 1;
	}
	if (rs->hs_switching) {
		/*
		 * 101: from here the bytes are the application's.  The one relay
		 * takes both streams (TLS bufferevents here), with its limits
		 * (bytes_per_second, idle timeout); this engine is done.
		 */
		pi_audit_request(c, NULL, rs->hs_status);
		pi_request_reset(pi);
		pi->pi_rq = PI_WEBSOCKET;
		if (pi->pi_timer != NULL)
			event_del(pi->pi_timer);
		c->pc_client_eof = pi->pi_client_eof;
		c->pc_server_eof = pi->pi_server_eof;
		proxy_conn_relay_start(c);
		return -1;	/* not ours any more: the driver stops */
	}
	if (pi->pi_out_framing == HTTP_BODY_NONE || (rs->hs_framing ==
	    HTTP_BODY_LENGTH && rs->hs_length == 0)) {
		pi_response_done(c);
		return 1;
	}
	if (pi->pi_redact && pi->pi_redactor == NULL &&
	    (pi->pi_redactor = scan_redact_new(pi->pi_keys->pk_val_set,
	    pi_redact_cb, pi)) == NULL)
		return -1;
	pi->pi_rs = PR_BODY;
	return 1;
}

/* Relays response body bytes.  1 progress, 0 more, -1 closed. */
static int
pi_response_body(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct evbuffer *in = bufferevent_get_input(c->pc_server);
	struct evbuffer *out = bufferevent_get_output(c->pc_client);
	size_t len = evbuffer_get_length(in), used = 0, consumed;
	enum http_framing f = pi->pi_res.hs_framing;
	struct http_span d;
	const uint8_t *buf;
	enum http_res r = HTTP_NEED_MORE;
	int last = 0;

	if (evbuffer_get_length(out) >= PROXY_RELAY_HIGH)
		return 0;
	if (len == 0 && !(pi->pi_server_eof && f == HTTP_BODY_CLOSE)) {
		if (pi->pi_server_eof) {
			pi_bad_gateway(c, PR_STR(UPSTREAM_CLOSED),
			    "the upstream cut the response short");
			return -1;
		}
		return 0;
	}
	if (len > PI_CHUNK_MAX)
		len = PI_CHUNK_MAX;
	if (f == HTTP_BODY_LENGTH && len > pi->pi_res_left)
		len = (size_t)pi->pi_res_left;
	buf = len > 0 ? evbuffer_pullup(in, (ev_ssize_t)len) : NULL;
	if (len > 0 && buf == NULL)
		return 0;
	http_buf_free(&pi->pi_out);
	if (f == HTTP_BODY_LENGTH || f == HTTP_BODY_CLOSE) {
		if (f == HTTP_BODY_LENGTH) {
			pi->pi_res_left -= len;
			last = pi->pi_res_left == 0;
		} else
			last = pi->pi_server_eof && len == evbuffer_get_length(in);
		used = len;
		if (!pi->pi_redact && pi->pi_out_framing == f) {
			/* Nothing to change: move the bytes. */
			pi_count(c, 0, len);
			evbuffer_remove_buffer(in, out, len);
			goto moved;
		}
		if (pi_response_emit(c, buf, len, last) == -1)
			goto error;
	} else {
		while (used < len) {
			r = http_chunked_feed(&pi->pi_res_ch, buf + used, len - used,
			    &consumed, &d);
			if (r == HTTP_E_BAD)
				break;
			if (d.len > 0 && pi_response_emit(c, buf + used + d.off,
			    d.len, 0) == -1)
				goto error;
			used += consumed;
			if (r == HTTP_OK)
				break;
		}
		if (r == HTTP_E_BAD) {
			pi_bad_gateway(c, PR_STR(UPSTREAM_HTTP_MALFORMED),
			    "bad chunked response body");
			return -1;
		}
		if (r == HTTP_OK) {
			last = 1;
			if (pi_response_emit(c, NULL, 0, 1) == -1)
				goto error;
		} else if (pi->pi_server_eof && used == evbuffer_get_length(in)) {
			pi_bad_gateway(c, PR_STR(UPSTREAM_CLOSED),
			    "the upstream cut the response short");
			return -1;
		}
	}
	evbuffer_drain(in, used);
	pi_count(c, 0, pi->pi_out.hb_len);
	evbuffer_add(out, pi->pi_out.hb_p, pi->pi_out.hb_len);
	http_buf_free(&pi->pi_out);
 moved:
	if (last)
		pi_response_done(c);
	return 1;
 error:
	pi_bad_gateway(c, PR_STR(INTERNAL_ERROR), "internal error");
	return -1;
}

/*
 * The driver: makes what progress the buffered bytes allow.
 */
static void
pi_run(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;
	int r, progress;

	do {
		progress = 0;
		switch (pi->pi_rq) {
		case PI_WAIT:
			if (!pi->pi_client_up || (!pi->pi_server_up &&
			    pi->pi_fail == NULL))
				return;
			pi->pi_rq = PI_REQ_HEAD;
			progress = 1;
			break;
		case PI_REQ_HEAD:
			if (pi->pi_rs != PR_IDLE)
				break;
			if (pi_upstream_extra(c)) {
				/* No request outstanding: nothing asked for it. */
				pi_audit_request(c, PR_STR(UPSTREAM_HTTP_MALFORMED), -1);
				pi_request_reset(pi);
				pi_closing(c);
				return;
			}
			if ((r = pi_request_head(c)) == -1)
				return;
			progress = r;
			if (r == 0 && pi->pi_client_eof) {
				proxy_conn_close(c, NULL, 0);
				return;
			}
			break;
		case PI_REQ_BODY:
			if ((r = pi_request_body(c)) == -1)
				return;
			progress = r;
			if (r == 0 && pi->pi_client_eof &&
			    evbuffer_get_length(bufferevent_get_input(
			    c->pc_client)) == 0) {
				proxy_conn_close(c, NULL, 1);
				return;
			}
			break;
		case PI_WEBSOCKET:
			return;		/* the relay's (proxy_conn_relay_start) */
		case PI_CLOSING:
			return;
		case PI_REQ_DONE:
			break;
		}
		if (pi->pi_rq == PI_CLOSING || pi->pi_rq == PI_WEBSOCKET)
			return;
		switch (pi->pi_rs) {
		case PR_HEAD:
			if ((r = pi_response_head(c)) == -1)
				return;
			progress |= r;
			break;
		case PR_BODY:
			if ((r = pi_response_body(c)) == -1)
				return;
			progress |= r;
			break;
		case PR_IDLE:
			if (pi->pi_server_eof && pi->pi_rq == PI_REQ_HEAD &&
			    evbuffer_get_length(bufferevent_get_input(
			    c->pc_client)) == 0) {
				/* The upstream ended its keep-alive: so do we. */
				proxy_conn_close(c, NULL, 0);
				return;
			}
			break;
		}
	} while (progress);
	/* Backpressure: read a side only while its peer's output has room. */
	if (c->pc_server != NULL && pi->pi_server_up) {
		if (evbuffer_get_length(bufferevent_get_output(c->pc_client)) <
		    PROXY_RELAY_HIGH && !pi->pi_server_eof)
			bufferevent_enable(c->pc_server, EV_READ);
		else
			bufferevent_disable(c->pc_server, EV_READ);
	}
	if (evbuffer_get_length(bufferevent_get_output(c->pc_server != NULL ?
	    c->pc_server : c->pc_client)) < PROXY_RELAY_HIGH && !pi->pi_client_eof)
		bufferevent_enable(c->pc_client, EV_READ);
	else
		bufferevent_disable(c->pc_client, EV_READ);
}

/*
 * Callbacks.
 */

static void
pi_client_read(struct bufferevent *bev, void *arg)
{
	pi_run(arg);
}

static void
pi_client_write(struct bufferevent *bev, void *arg)
{
	struct proxy_conn *c = arg;
	struct proxy_inspect *pi = c->pc_inspect;

	if (pi->pi_rq == PI_CLOSING) {
		if (pi_client_flushed(c))
			proxy_conn_close(c, NULL, 0);
		return;
	}
	pi_run(c);
}

static void
pi_client_event(struct bufferevent *bev, short what, void *arg)
{
	struct proxy_conn *c = arg;
	struct proxy_inspect *pi = c->pc_inspect;
	struct bufferevent *u;
	struct evbuffer_iovec iov;
	unsigned long e;

	if (what & BEV_EVENT_CONNECTED) {
		pi->pi_client_up = 1;
		pi_run(c);
		return;
	}
	if (!pi->pi_client_up) {
		e = bufferevent_get_openssl_error(bev);
		log_debug("connection %llu: VM TLS handshake failed: %s",
		    (unsigned long long)c->pc_id, e != 0 ?
		    ERR_reason_error_string(e) : "closed");
		while (bufferevent_get_openssl_error(bev) != 0)
			;
		/*
		 * The alert OpenSSL wrote (handshake_failure, no_application_protocol)
		 * goes out before the close (peeked: the buffer's start is frozen).
		 */
		if ((u = bufferevent_get_underlying(bev)) != NULL &&
		    bufferevent_getfd(u) != -1 &&
		    evbuffer_peek(bufferevent_get_output(u), -1, NULL, &iov, 1) > 0)
			(void)send(bufferevent_getfd(u), iov.iov_base, iov.iov_len,
			    MSG_NOSIGNAL | MSG_DONTWAIT);
		proxy_conn_close(c, PR_STR(CLIENT_TLS_FAILED), 0);
		return;
	}
	if ((what & BEV_EVENT_EOF) && pi->pi_rq != PI_CLOSING) {
		pi->pi_client_eof = 1;
		pi_run(c);
		return;
	}
	proxy_conn_close(c, NULL, 1);
}

static void
pi_server_read(struct bufferevent *bev, void *arg)
{
	pi_run(arg);
}

static void
pi_server_write(struct bufferevent *bev, void *arg)
{
	pi_run(arg);
}

static void
pi_server_event(struct bufferevent *bev, short what, void *arg)
{
	struct proxy_conn *c = arg;
	struct proxy_inspect *pi = c->pc_inspect;

	if (what & BEV_EVENT_EOF) {
		pi->pi_server_eof = 1;
		bufferevent_disable(bev, EV_READ);
		pi_run(c);
		return;
	}
	/* An error or reset mid-exchange. */
	pi->pi_server_eof = 1;
	if (pi->pi_rs != PR_IDLE) {
		pi_bad_gateway(c, PR_STR(UPSTREAM_CLOSED), "the upstream connection broke");
		return;
	}
	proxy_conn_close(c, NULL, 1);
}

static void
pi_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *c = arg;
	struct proxy_inspect *pi = c->pc_inspect;
	struct timeval now, d, tv;

	if (pi->pi_rq == PI_CLOSING) {
		tv.tv_sec = 0;
		tv.tv_usec = 20 * 1000;
		if (pi_client_flushed(c) ||
		    pi_ms(&pi->pi_closing_since) > PI_CLOSE_WAIT * 1000) {
			proxy_conn_close(c, NULL, 0);
			return;
		}
		evtimer_add(pi->pi_timer, &tv);
		return;
	}
	if (!pi->pi_client_up) {
		proxy_conn_close(c, PR_STR(CLIENT_TLS_TIMEOUT), 1);
		return;
	}
	event_base_gettimeofday_cached(c->pc_worker->pw_base, &now);
	evutil_timersub(&now, &c->pc_last, &d);
	if (d.tv_sec >= PROXY_IDLE_TIMEOUT) {
		proxy_conn_close(c, NULL, 1);
		return;
	}
	tv.tv_sec = PROXY_IDLE_TIMEOUT - d.tv_sec;
	tv.tv_usec = 0;
	evtimer_add(pi->pi_timer, &tv);
}

/* c's inspect state (pc_inspect), with the key material in force.  NULL: no memory. */
static struct proxy_inspect *
pi_new(struct proxy_conn *c)
{
	struct proxy_inspect *pi;

	if ((pi = calloc(1, sizeof(*pi))) == NULL)
		return NULL;
	c->pc_inspect = pi;
	pi->pi_conn = c;
	pi->pi_status = -1;
	pi->pi_redacted_id = -1;
	/*
	 * Secrets: the vault as it is now, again at every request (a removal or a
	 * rotation is never held back).  The CA: the one the sandbox's policy went in
	 * with (a refused reload keeps both; proxy_policy_keys()).
	 */
	pi->pi_keys = proxy_keys_get();
	pi->pi_tc.tc_keys = pi->pi_keys;
	return pi;
}

/*
 * The engine takes bev as the VM's side (pc_client: the TLS filter, or the socket
 * for plain HTTP) and enables events on it; the handshake deadline starts (then
 * the idle timer).  0, or -1 (out of memory).
 */
static int
pi_client_attach(struct proxy_conn *c, struct bufferevent *bev, short events)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct timeval tv = { PI_HANDSHAKE_TIMEOUT, 0 };

	pi->pi_client_eof = c->pc_client_eof;
	c->pc_client = bev;
	bufferevent_setcb(bev, pi_client_read, pi_client_write, pi_client_event, c);
	bufferevent_setwatermark(bev, EV_WRITE, PROXY_RELAY_LOW, 0);
	bufferevent_setwatermark(bev, EV_READ, 0, PI_READ_HIGH);
	bufferevent_enable(bev, events);
	if ((pi->pi_timer = evtimer_new(c->pc_worker->pw_base, pi_timer_cb,
	    c)) == NULL || evtimer_add(pi->pi_timer, &tv) == -1)
		return -1;
	return 0;
}

/* c's verified upstream (pc_server) is up: the engine reads and writes it. */
static void
pi_server_attach(struct proxy_conn *c)
{
	c->pc_inspect->pi_server_up = 1;
	bufferevent_setcb(c->pc_server, pi_server_read, pi_server_write,
	    pi_server_event, c);
	bufferevent_setwatermark(c->pc_server, EV_WRITE, PROXY_RELAY_LOW, 0);
	bufferevent_setwatermark(c->pc_server, EV_READ, 0, PI_READ_HIGH);
	bufferevent_enable(c->pc_server, EV_READ | EV_WRITE);
}

/*
 * Entry points (proxy_conn.h).
 */

static void
proxy_inspect_free(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;

	if (pi == NULL)
		return;
	pi_request_reset(pi);
	if (pi->pi_timer != NULL)
		event_free(pi->pi_timer);
	scan_redact_free(pi->pi_redactor);
	scan_redact_free(pi->pi_hredactor);
	proxy_keys_put(pi->pi_keys);
	free(pi);
	c->pc_inspect = NULL;
}

static int
proxy_inspect_start(struct proxy_conn *c)
{
	struct proxy_worker *w = c->pc_worker;
	struct proxy_inspect *pi;
	struct proxy_sbca *ca;
	struct bufferevent *f;
	struct proxy_keys *ck;
	X509 *leaf = NULL;
	SSL *ssl = NULL;
	char err[256];
	int fd;

	if ((pi = pi_new(c)) == NULL) {
		proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
		return -1;
	}
	c->pc_state = PC_INSPECT;
	if (c->pc_proto == POLICY_PROTO_HTTP && pi->pi_keys != NULL) {
		/* Plain HTTP: the same request checks, no TLS on either side. */
		pi->pi_client_up = 1;
		if (pi_client_attach(c, c->pc_client, EV_WRITE) == -1) {
			proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
			return -1;
		}
		return 0;	/* the core dials */
	}
	ck = proxy_policy_keys(c->pc_policy);
	if (pi->pi_keys == NULL || ck == NULL || w->pw_tls_in == NULL ||
	    w->pw_tls_out == NULL ||
	    (ca = proxy_keys_ca(ck, c->pc_sandbox->ps_rec.sb_name)) == NULL ||
	    ca->pc_ca == NULL) {
		proxy_keys_put(ck);
		/* No CA for this sandbox: refuse with an alert, never splice. */
		if ((fd = bufferevent_getfd(c->pc_client)) != -1) {
			static const unsigned char alert[7] =
			    { 0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 80 };

			(void)send(fd, alert, sizeof(alert), MSG_NOSIGNAL |
			    MSG_DONTWAIT);
		}
		proxy_conn_close(c, PR_STR(INSPECT_UNAVAILABLE), 0);
		return -1;
	}
	/* A cache miss asks keyd and waits (2 s at most): refused, never spliced. */
	if (proxy_keys_leaf(ca, c->pc_name, &leaf, err, sizeof(err)) != CA_OK) {
		proxy_keys_put(ck);
		log_warnx("sandbox %s: no leaf for %s: %s", pi_sandbox(c), c->pc_name,
		    err);
		proxy_conn_close(c, PR_STR(INSPECT_UNAVAILABLE), 1);
		return -1;
	}
	proxy_keys_put(ck);	/* the leaf is referenced on its own */
	if ((ssl = SSL_new(w->pw_tls_in)) == NULL ||
	    proxy_tls_server_set_leaf(ssl, leaf, proxy_keys_leaf_key()) == -1) {
		X509_free(leaf);
		SSL_free(ssl);
		proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
		return -1;
	}
	X509_free(leaf);
	f = bufferevent_openssl_filter_new(w->pw_base, c->pc_client, ssl,
	    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE |
	    BEV_OPT_DEFER_CALLBACKS);
	if (f == NULL) {
		SSL_free(ssl);
		proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
		return -1;
	}
	/* The filter owns the socket bufferevent (and ssl) from here. */
	if (pi_client_attach(c, f, EV_READ | EV_WRITE) == -1) {
		proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
		return -1;
	}
	/* The ClientHello is already buffered: start the handshake on it now. */
	bufferevent_trigger(bufferevent_get_underlying(f), EV_READ,
	    BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
	/* And the upstream in parallel: the core dials (proxy_inspect_server_bev()). */
	return 0;
}

static struct bufferevent *
proxy_inspect_server_bev(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct bufferevent *bev;
	SSL *ssl;

	if (c->pc_proto != POLICY_PROTO_TLS)
		return bufferevent_socket_new(c->pc_worker->pw_base, -1,
		    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	/* The session cache's key (proxy_tls.c): too long a one resumes nothing. */
	if ((size_t)snprintf(pi->pi_tc.tc_peer, sizeof(pi->pi_tc.tc_peer),
	    "%s %s:%u", pi_sandbox(c), c->pc_name, c->pc_dport) >=
	    sizeof(pi->pi_tc.tc_peer))
		pi->pi_tc.tc_peer[0] = '\0';
	if ((ssl = proxy_tls_client_new(c->pc_worker->pw_tls_out, c->pc_name,
	    &pi->pi_tc)) == NULL)
		return NULL;
	bev = bufferevent_openssl_socket_new(c->pc_worker->pw_base, -1, ssl,
	    BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE |
	    BEV_OPT_DEFER_CALLBACKS);
	if (bev == NULL)
		SSL_free(ssl);
	return bev;
}

static void
proxy_inspect_server_event(struct proxy_conn *c, short what)
{
	struct proxy_inspect *pi = c->pc_inspect;
	unsigned long e;

	if (what & BEV_EVENT_CONNECTED) {
		/* TCP up and the TLS handshake verified (SSL_VERIFY_PEER). */
		event_del(c->pc_timer);
		if (c->pc_proto == POLICY_PROTO_TLS && (SSL_get_verify_result(
		    bufferevent_openssl_get_ssl(c->pc_server)) != X509_V_OK ||
		    pi->pi_tc.tc_own_ca)) {
			pi->pi_fail = PR_STR(UPSTREAM_CERT_INVALID);
			snprintf(pi->pi_fail_why, sizeof(pi->pi_fail_why), "%s",
			    proxy_tls_verify_str(&pi->pi_tc));
			proxy_tls_client_forget(c->pc_worker->pw_tls_out,
			    &pi->pi_tc);
			bufferevent_free(c->pc_server);
			c->pc_server = NULL;
		} else {
			c->pc_state = PC_INSPECT;
			pi_server_attach(c);
		}
		pi_run(c);
		return;
	}
	/* The TCP connect or the handshake failed: which? */
	event_del(c->pc_timer);
	if (c->pc_proto == POLICY_PROTO_TLS)
		proxy_tls_client_forget(c->pc_worker->pw_tls_out, &pi->pi_tc);
	e = c->pc_proto == POLICY_PROTO_TLS ?
	    bufferevent_get_openssl_error(c->pc_server) : 0;
	while (c->pc_proto == POLICY_PROTO_TLS &&
	    bufferevent_get_openssl_error(c->pc_server) != 0)
		;
	if (pi->pi_tc.tc_verify_err != 0 || pi->pi_tc.tc_own_ca) {
		pi->pi_fail = PR_STR(UPSTREAM_CERT_INVALID);
		snprintf(pi->pi_fail_why, sizeof(pi->pi_fail_why), "%s",
		    proxy_tls_verify_str(&pi->pi_tc));
	} else if (e != 0) {
		pi->pi_fail = PR_STR(UPSTREAM_TLS_FAILED);
		snprintf(pi->pi_fail_why, sizeof(pi->pi_fail_why), "TLS: %s",
		    ERR_reason_error_string(e) != NULL ?
		    ERR_reason_error_string(e) : "handshake failed");
	} else {
		pi->pi_fail = PR_STR(CONNECT_FAILED);
		snprintf(pi->pi_fail_why, sizeof(pi->pi_fail_why),
		    "no connection to the upstream");
	}
	log_info("connection %llu: upstream %s refused: %s",
	    (unsigned long long)c->pc_id, c->pc_name, pi->pi_fail_why);
	bufferevent_free(c->pc_server);
	c->pc_server = NULL;
	c->pc_state = PC_INSPECT;
	pi_run(c);
}

static int
proxy_inspect_recheck(struct proxy_conn *c, const struct policy_verdict *v)
{
	/* An inspected connection checks every request itself: it may go on while
	 * the rule still inspects (plain HTTP: while a rule still allows it). */
	if (c->pc_proto != POLICY_PROTO_TLS)
		return v->pv_rule != NULL ? 0 : -1;
	return v->pv_rule != NULL && v->pv_tls == POLICY_TLS_INSPECT ? 0 : -1;
}

const struct proxy_mode proxy_mode_inspect = {
	.pm_name = "inspect",
	.pm_start = proxy_inspect_start,
	.pm_server_bev = proxy_inspect_server_bev,
	.pm_server_event = proxy_inspect_server_event,
	.pm_recheck = proxy_inspect_recheck,
	.pm_free = proxy_inspect_free,
};

/*
 * Test seam, for tests/fuzz/fuzz_inspect.c only (the daemon never calls it): runs
 * the engine of c over two in-memory bufferevents, vm for the VM's decrypted
 * stream and origin for the upstream's, as right after both TLS handshakes (the
 * VM's done, the upstream's verified: proxy_inspect_start() and
 * proxy_inspect_server_event() without TLS).  c is as proxy_conn_decide() leaves
 * it (pc_worker, pc_sandbox, pc_policy, pc_name, pc_dport, pc_proto: TLS for the
 * injecting path, HTTP for plain, pc_timer, on pw_conns); c owns vm and origin from
 * here.  0, or -1 (c was closed).
 */
int
proxy_inspect_attach_test(struct proxy_conn *c, struct bufferevent *vm,
    struct bufferevent *origin)
{
	c->pc_mode = &proxy_mode_inspect;
	c->pc_client = vm;
	c->pc_server = origin;
	if (pi_new(c) == NULL || c->pc_inspect->pi_keys == NULL ||
	    pi_client_attach(c, vm, EV_READ | EV_WRITE) == -1) {
		proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
		return -1;
	}
	c->pc_state = PC_INSPECT;
	c->pc_inspect->pi_client_up = 1;	/* BEV_EVENT_CONNECTED from the VM */
	pi_server_attach(c);			/* and from a verified upstream */
	pi_run(c);
	return 0;
}
