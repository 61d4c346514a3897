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
 * here: limits.bytes_per_second applies to request and response bodies only
 * through the relay after a 101.
 *
 * Upstream connections are kept for later connections (proxy_pool.c, one pool per
 * worker thread).  When a connection ends cleanly (no denial, no reset), its
 * upstream goes to the pool only if it is clean (pi_poolable): never used, or its
 * last response read to its end by the framing rules (Content-Length done, the
 * last chunk seen; never one read until close) while its request had been sent
 * whole, the origin willing to go on (no Connection: close, HTTP/1.0 only with
 * keep-alive), no 101, no byte past the response's end, and no answer to HEAD (or
 * 204, 304) whose fields declare a body it did not send (the origin might still
 * send it).  Then nothing is buffered either way and the TLS session is not
 * shutting down (proxy_inspect_pool()).  A new connection of the same key
 * (sandbox entry, name, port, policy hash, TLS, h2 offered) takes the most recent
 * one instead of dialling (pi_pool_take()): no resolve, no connect, no handshake;
 * its requests are checked, injected, redacted and recorded as on any other, with
 * this connection's own state (nothing of the connection that used it before is
 * left but the socket).  A pooled connection that fails before any byte of an
 * answer (the origin closed it as it was taken, or drops the first request
 * unanswered: EOF, reset, write error) is replaced by a new dial (pi_upstream_lost,
 * at most once): before any request it simply is, and a request already sent on
 * it is sent again only when it is idempotent (GET, HEAD, OPTIONS, PUT, DELETE)
 * and has no body (its rebuilt head is kept until the first byte of the answer,
 * in wiped memory); any other request (POST, PATCH, a body) gets the usual 502
 * upstream_closed, sent once.
 *
 * This file is the inspect mode (struct proxy_mode, proxy_path.h): its entry
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
#include "proxy_audit.h"
#include "proxy_globals.h"
#include "proxy_registry.h"
#include "proxy_path.h"
#include "proxy_http.h"
#include "proxy_keys.h"
#include "proxy_pool.h"
#include "proxy_scan.h"
#include "proxy_tls.h"
#include "proxy_reason.h"
#include "proxy_request.h"

#define PI_HANDSHAKE_TIMEOUT	10	/* seconds for the VM's handshake */
#define PI_CHUNK_MAX		(64 * 1024)	/* bytes taken from a buffer at once */
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
	uint64_t		 pi_hs_t0;	/* the VM's handshake began */
	int			 pi_h2_wait;	/* the VM offered h2: its handshake
						   waits for the upstream's */
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
	struct proxy_req	 pi_r;		/* decision, record (proxy_request.h) */
	int			 pi_keepalive;	/* both sides may go on */

	/* the response in progress */
	size_t			 pi_rfind;
	uint8_t			*pi_rhead;
	struct http_response	 pi_res;
	struct http_chunked	 pi_res_ch;
	uint64_t		 pi_res_left;
	enum http_framing	 pi_out_framing;	/* towards the VM */
	struct scan_redact	*pi_redactor;	/* bodies */
	struct scan_redact	*pi_hredactor;	/* header values */
	int			 pi_server_eof;
	int			 pi_client_eof;
	struct http_buf		 pi_out;	/* scratch, wiped */
	struct timeval		 pi_closing_since;

	/* the upstream and the pool (proxy_pool.c) */
	int			 pi_poolable;	/* pc_server is clean and idle */
	int			 pi_up_ka;	/* ... and may be after this exchange */
	int			 pi_up_h2;	/* its ClientHello offered h2 */
	int			 pi_reused;	/* from the pool, no answer from it yet */
	struct http_buf		 pi_retry;	/* the head sent on it, to send again
						   (wiped) */
};

static void	pi_run(struct proxy_conn *);
static void	pi_closing(struct proxy_conn *);
static void	proxy_inspect_free(struct proxy_conn *);
static void	pi_client_read(struct bufferevent *, void *);
static void	pi_client_write(struct bufferevent *, void *);
static void	pi_client_event(struct bufferevent *, short, void *);
static void	pi_server_read(struct bufferevent *, void *);
static void	pi_server_write(struct bufferevent *, void *);

/*
 * Small helpers.
 */

static const char *
pi_sandbox(const struct proxy_conn *c)
{
	return proxy_req_sandbox(c);
}

/* The request record (proxy_request.c). */
static void
pi_audit_request(struct proxy_conn *c, const char *reason, int status)
{
	proxy_req_audit(&c->pc_inspect->pi_r, reason, status);
}

/* An exfil record: a placeholder blocked, or a secret's value redacted. */
static void
pi_audit_exfil(struct proxy_conn *c, const char *reason, int id, const char *where,
    long long count)
{
	proxy_req_audit_exfil(&c->pc_inspect->pi_r, reason, id, where, count);
}

/* Forgets the request in progress (after its record was written). */
static void
pi_request_reset(struct proxy_inspect *pi)
{
	free(pi->pi_head);
	pi->pi_head = NULL;
	free(pi->pi_rhead);
	pi->pi_rhead = NULL;
	proxy_req_reset(&pi->pi_r);
	pi->pi_hfind = pi->pi_rfind = 0;
	pi->pi_rs = PR_IDLE;
	http_buf_free(&pi->pi_out);
	http_buf_free(&pi->pi_retry);
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
		pi_audit_request(c, reason, pi->pi_r.rq_status);
		proxy_conn_close(c, NULL, 1);
		return;
	}
	n = snprintf(body, sizeof(body), "airlock: %s\n", text);
	if (n < 0 || (size_t)n >= sizeof(body))
		n = (int)strlen(body);
	pi->pi_r.rq_status = status;
	pi_audit_request(c, reason, status);
	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; "
	    "charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n"
	    "Cache-Control: no-store\r\n\r\n", status, phrase, n);
	/*
	 * An answer to HEAD has no body (RFC 9110 9.3.2): the client would read it
	 * as bytes after the response (pi_method is set once a head was parsed).
	 */
	if (strcmp(pi->pi_r.rq_method, "HEAD") != 0)
		evbuffer_add(out, body, (size_t)n);
	pi_request_reset(pi);
	pi_closing(c);
}

/* A refusal that proxy_request.c decided. */
static void
pi_refusal(struct proxy_conn *c, const struct proxy_refusal *rf)
{
	pi_refuse(c, rf->rf_status, rf->rf_phrase, rf->rf_reason, rf->rf_text);
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
		pi->pi_r.rq_up += n;
		c->pc_up += n;
		proxy_sandbox_count(c->pc_sandbox, PROXY_STAT_BYTES_UP, (int64_t)n);
	} else {
		pi->pi_r.rq_down += n;
		c->pc_down += n;
		proxy_sandbox_count(c->pc_sandbox, PROXY_STAT_BYTES_DOWN, (int64_t)n);
	}
	event_base_gettimeofday_cached(c->pc_worker->pw_base, &c->pc_last);
	proxy_limit_bytes(c, n);	/* may pause reads: pi_run's backpressure */
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
	pi->pi_r.rq_keys = k;
	pi->pi_tc.tc_keys = k;
}

/*
 * May the request rq, sent on a pooled connection that then failed before any
 * byte of an answer, be sent again on a new one?  Only an idempotent method (RFC
 * 9110 9.2.2; TRACE never goes upstream) with no body: its head is all there is to
 * send, and a body already streamed is not kept.  Never an upgrade.
 */
static int
pi_may_resend(const struct proxy_inspect *pi, const struct http_request *rq)
{
	switch (rq->hq_meth) {
	case HTTP_M_GET:
	case HTTP_M_HEAD:
	case HTTP_M_OPTIONS:
	case HTTP_M_PUT:
	case HTTP_M_DELETE:
		break;
	default:
		return 0;
	}
	return !pi->pi_r.rq_websocket && (rq->hq_framing == HTTP_BODY_NONE ||
	    (rq->hq_framing == HTTP_BODY_LENGTH && rq->hq_length == 0));
}

/*
 * A complete request head is in pi_head: check it, decide, rewrite
 * (proxy_req_start) and send it upstream.  Returns 0 if the request goes on, -1
 * if it was refused (the connection is closing).
 */
static int
pi_request_start(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct http_request *rq = &pi->pi_req;
	struct http_buf head = HTTP_BUF_INIT;
	struct proxy_refusal rf;

	pi_keys_refresh(pi);
	if (proxy_req_start(&pi->pi_r, pi->pi_head, rq, pi->pi_fail, pi->pi_fail_why,
	    &head, &rf) == -1) {
		http_buf_free(&head);
		pi_refusal(c, &rf);
		return -1;
	}
	pi->pi_keepalive = rq->hq_keepalive;
	pi_count(c, 1, head.hb_len);
	/* From its first byte on, the upstream is not idle until the answer ends. */
	pi->pi_poolable = 0;
	pi->pi_up_ka = !pi->pi_r.rq_websocket;
	if (proxy_evbuffer_add_secret(bufferevent_get_output(c->pc_server), head.hb_p,
	    head.hb_len) == -1) {
		http_buf_free(&head);
		pi_refuse(c, 500, "Internal Server Error", PR_STR(INTERNAL_ERROR),
		    "internal error");
		return -1;
	}
	/* Sent on a pooled connection: kept to send once more if it was dead. */
	if (pi->pi_reused && pi_may_resend(pi, rq)) {
		pi->pi_retry = head;
		head = (struct http_buf)HTTP_BUF_INIT;
	}
	http_buf_free(&head);
	pi->pi_req_left = rq->hq_framing == HTTP_BODY_LENGTH ? rq->hq_length : 0;
	http_chunked_init(&pi->pi_req_ch);
	scan_stream_init(&pi->pi_req_scan, pi->pi_keys->pk_ph_set);
	pi->pi_rq = rq->hq_framing == HTTP_BODY_NONE || (rq->hq_framing ==
	    HTTP_BODY_LENGTH && rq->hq_length == 0) ? PI_REQ_DONE : PI_REQ_BODY;
	pi->pi_rs = PR_HEAD;
	return 0;
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
		evutil_gettimeofday(&pi->pi_r.rq_t0, NULL);
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
	struct proxy_refusal rf;

	if (proxy_req_body_scan(&pi->pi_r, &pi->pi_req_scan, p, n, &rf) == 0)
		return 0;
	/* The head (and some body) went upstream: the upstream request is cut. */
	if (c->pc_server != NULL)
		bufferevent_disable(c->pc_server, EV_READ | EV_WRITE);
	pi_refusal(c, &rf);
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

/* Appends body bytes for the VM to pi_out, redacted and framed as decided. */
static int
pi_response_emit(struct proxy_conn *c, const uint8_t *p, size_t n, int last)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct http_buf tmp = HTTP_BUF_INIT;
	const uint8_t *q = p;
	size_t qn = n;
	int rc = 0;

	if (pi->pi_r.rq_redact) {
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
	c->pc_inspect->pi_poolable = c->pc_inspect->pi_up_ka = 0;
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

	if (pi->pi_r.rq_redacted > 0)
		pi_audit_exfil(c, PR_STR(SECRET_REDACTED), pi->pi_r.rq_redacted_id, "response",
		    (long long)pi->pi_r.rq_redacted);
	pi_audit_request(c, extra ? PR_STR(UPSTREAM_HTTP_MALFORMED) : NULL,
	    pi->pi_r.rq_status);
	/* Read to its end, the request sent whole, the origin willing: reusable. */
	pi->pi_poolable = !extra && pi->pi_up_ka && pi->pi_rq == PI_REQ_DONE;
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
 * A response without a body by its status or the request's method (HEAD, 204,
 * 304) whose fields declare one anyway: an origin that sends it regardless would
 * have it read as the next answer, so its connection is not kept for another.
 */
static int
pi_res_body_unsure(const uint8_t *rh, const struct http_response *rs)
{
	const struct http_span *v;
	int i;

	if (rs->hs_framing != HTTP_BODY_NONE || rs->hs_interim || rs->hs_switching)
		return 0;
	if (http_field_find(rh, rs->hs_fields, rs->hs_nfields, "transfer-encoding",
	    0) != -1)
		return 1;
	if ((i = http_field_find(rh, rs->hs_fields, rs->hs_nfields,
	    "content-length", 0)) == -1)
		return 0;
	v = &rs->hs_fields[i].hf_value;
	return !(v->len == 1 && rh[v->off] == '0');
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
	struct proxy_refusal rf;
	size_t len = evbuffer_get_length(in), hl = 0;
	const uint8_t *buf;
	enum http_res r;

	if (len == 0) {
		if (pi->pi_server_eof) {
			pi_bad_gateway(c, PR_STR(UPSTREAM_CLOSED),
			    "the upstream closed without a response");
			return -1;
		}
		return 0;
	}
	if (pi->pi_reused) {
		/* A pooled connection that answers is alive: no resend after this. */
		pi->pi_reused = 0;
		http_buf_free(&pi->pi_retry);
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
	pi->pi_r.rq_status = rs->hs_status;
	if (pi->pi_r.rq_redact && pi->pi_hredactor == NULL &&
	    (pi->pi_hredactor = scan_redact_new(pi->pi_keys->pk_val_set,
	    proxy_req_redact_cb, &pi->pi_r)) == NULL)
		return -1;
	pi->pi_r.rq_hred = pi->pi_hredactor;
	memset(&rw, 0, sizeof(rw));
	if (proxy_req_response_check(&pi->pi_r, pi->pi_rhead, rs, &rw, &rf) == -1) {
		pi_bad_gateway(c, rf.rf_reason, rf.rf_text);
		return -1;
	}
	pi->pi_res_left = rs->hs_framing == HTTP_BODY_LENGTH ? rs->hs_length : 0;
	http_chunked_init(&pi->pi_res_ch);
	if (rs->hs_interim || rs->hs_switching)
		pi->pi_out_framing = HTTP_BODY_NONE;
	else if (rs->hs_framing == HTTP_BODY_NONE || (rs->hs_framing ==
	    HTTP_BODY_LENGTH && rs->hs_length == 0))
		pi->pi_out_framing = rs->hs_framing;
	else if (pi->pi_r.rq_redact || rs->hs_framing == HTTP_BODY_CHUNKED)
		/* A body that may change length: chunked to 1.1, until close to 1.0. */
		pi->pi_out_framing = pi->pi_req.hq_minor >= 1 ? HTTP_BODY_CHUNKED :
		    HTTP_BODY_CLOSE;
	else
		pi->pi_out_framing = rs->hs_framing;
	if (pi->pi_out_framing == HTTP_BODY_CLOSE || !rs->hs_keepalive)
		pi->pi_keepalive = 0;
	if (!rs->hs_keepalive || pi_res_body_unsure(pi->pi_rhead, rs))
		pi->pi_up_ka = 0;	/* the upstream connection ends with it */
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
	if (pi->pi_r.rq_redact && pi->pi_redactor == NULL &&
	    (pi->pi_redactor = scan_redact_new(pi->pi_keys->pk_val_set,
	    proxy_req_redact_cb, &pi->pi_r)) == NULL)
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
		if (!pi->pi_r.rq_redact && pi->pi_out_framing == f) {
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
 * HTTP/2 (proxy_h2.c).  A VM that offered h2 starts its handshake only once the
 * upstream's is done: h2 may be chosen towards it only when the origin verified
 * (the HTTP/2 engine then speaks HTTP/2 to an h2 origin, HTTP/1.1 to any other);
 * a failed upstream means HTTP/1.1 towards the VM, through this engine.
 */
static void
pi_h2_release(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;

	if (!pi->pi_h2_wait)
		return;
	pi->pi_h2_wait = 0;
	/*
	 * h2 towards the VM once the origin verified, whatever it chose: h2 (both
	 * ways HTTP/2), or http/1.1 or no ALPN (proxy_h2.c translates each stream
	 * into an HTTP/1.1 exchange).  An upstream that failed (pi_fail) is answered
	 * over HTTP/1.1 by this engine.  Only a TLS upstream (its SSL) counts.
	 */
	proxy_tls_server_allow_h2(bufferevent_openssl_get_ssl(c->pc_client),
	    c->pc_proto == POLICY_PROTO_TLS && c->pc_server != NULL &&
	    pi->pi_fail == NULL &&
	    bufferevent_openssl_get_ssl(c->pc_server) != NULL);
	/* Both were left disabled: enabled, they would read the hello at once. */
	bufferevent_enable(bufferevent_get_underlying(c->pc_client),
	    EV_READ | EV_WRITE);
	bufferevent_enable(c->pc_client, EV_READ | EV_WRITE);
	bufferevent_trigger(bufferevent_get_underlying(c->pc_client), EV_READ,
	    BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
}

/* The VM chose h2: the HTTP/2 engine takes c, this one lets go. */
static void
pi_h2_takeover(struct proxy_conn *c)
{
	if (proxy_h2_start(c, &c->pc_inspect->pi_tc) == -1) {
		proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
		return;
	}
	proxy_inspect_free(c);
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
			if (pi->pi_server_up && c->pc_proto == POLICY_PROTO_TLS &&
			    proxy_tls_alpn_is_h2(bufferevent_openssl_get_ssl(
			    c->pc_client))) {
				pi_h2_takeover(c);
				return;
			}
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
			if (!pi->pi_server_up)
				break;	/* a new upstream is on its way */
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
	/*
	 * Backpressure: read a side only while its peer's output has room, and
	 * neither while bytes_per_second holds the connection (pc_paused).
	 */
	if (c->pc_server != NULL && pi->pi_server_up) {
		if (evbuffer_get_length(bufferevent_get_output(c->pc_client)) <
		    PROXY_RELAY_HIGH && !pi->pi_server_eof && !c->pc_paused)
			bufferevent_enable(c->pc_server, EV_READ);
		else
			bufferevent_disable(c->pc_server, EV_READ);
	}
	if (evbuffer_get_length(bufferevent_get_output(c->pc_server != NULL ?
	    c->pc_server : c->pc_client)) < PROXY_RELAY_HIGH && !pi->pi_client_eof &&
	    !c->pc_paused)
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
		proxy_hist_since(PH_HANDSHAKE, pi->pi_hs_t0);
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

/*
 * c's upstream came from the pool and ended (EOF, reset, a write error) before
 * any byte of an answer: the origin had closed it as it was taken, or dropped
 * the request it got on it.  A new connection is dialled in its place (its dial
 * as any connection's: resolve, check, connect, verify), once: before any request
 * went on it, or when the one outstanding may be sent again (pi_may_resend: its
 * head in pi_retry goes on the new one, proxy_inspect_server_event()).  1: done
 * (c may be closed), 0: not for this (the usual error follows).
 */
static int
pi_upstream_lost(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;

	if (!pi->pi_reused || pi->pi_rq == PI_CLOSING ||
	    evbuffer_get_length(bufferevent_get_input(c->pc_server)) != 0)
		return 0;
	if (pi->pi_rs != PR_IDLE && (pi->pi_rs != PR_HEAD ||
	    pi->pi_rq != PI_REQ_DONE || pi->pi_retry.hb_len == 0))
		return 0;
	log_debug("connection %llu: pooled upstream %s:%u closed before answering: "
	    "%s", (unsigned long long)c->pc_id, c->pc_name, c->pc_dport,
	    pi->pi_rs == PR_IDLE ? "dialling another" :
	    "dialling another for the request");
	proxy_sb_stats_pool(&c->pc_sandbox->ps_stats, PPU_RETRY);
	c->pc_retried = 1;
	pi->pi_reused = 0;
	pi->pi_server_up = pi->pi_server_eof = pi->pi_poolable = 0;
	bufferevent_free(c->pc_server);
	c->pc_server = NULL;
	if (pi->pi_rq == PI_REQ_HEAD)
		pi->pi_rq = PI_WAIT;	/* no request on it yet: wait for the new one */
	proxy_conn_dial(c);
	return 1;
}

static void
pi_server_event(struct bufferevent *bev, short what, void *arg)
{
	struct proxy_conn *c = arg;
	struct proxy_inspect *pi = c->pc_inspect;

	if (pi_upstream_lost(c))
		return;
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
		    proxy_req_ms(&pi->pi_closing_since) > PI_CLOSE_WAIT * 1000) {
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
	/*
	 * Secrets: the vault as it is now, again at every request (a removal or a
	 * rotation is never held back).  The CA: the one the sandbox's policy went in
	 * with (a refused reload keeps both; pp_keys and pp_ca of struct proxy_policy).
	 */
	pi->pi_keys = proxy_keys_get();
	pi->pi_tc.tc_keys = pi->pi_keys;
	proxy_req_init(&pi->pi_r, c, pi->pi_keys, 0);
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

/* The session cache's key for c's upstream (proxy_tls.c): too long a one resumes nothing. */
static void
pi_tc_peer(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;

	if ((size_t)snprintf(pi->pi_tc.tc_peer, sizeof(pi->pi_tc.tc_peer),
	    "%s %s:%u", pi_sandbox(c), c->pc_name, c->pc_dport) >=
	    sizeof(pi->pi_tc.tc_peer))
		pi->pi_tc.tc_peer[0] = '\0';
}

/* c's upstream's key in the pool; h2: its ClientHello offered h2. */
static void
pi_pool_key(const struct proxy_conn *c, int h2, struct proxy_pool_key *k)
{
	memset(k, 0, sizeof(*k));
	k->pk_sandbox = c->pc_sandbox;
	k->pk_name = c->pc_name;
	k->pk_port = c->pc_dport;
	k->pk_policy = c->pc_policy->pp_policy->p_hash;
	k->pk_tls = c->pc_proto == POLICY_PROTO_TLS;
	k->pk_h2 = h2;
	k->pk_route = "";	/* direct: a connection through an upstream proxy is
				   never pooled (pi_pool_take, proxy_inspect_pool) */
}

/* c's upstream is up and verified (dialled, or from the pool): the engine runs. */
static void
pi_upstream_up(struct proxy_conn *c)
{
	c->pc_state = PC_INSPECT;
	pi_server_attach(c);
	pi_h2_release(c);
	pi_run(c);
}

/*
 * An idle connection from this thread's pool for c's key, in place of a dial.
 * 1: c has its upstream (and may have been closed since), 0: none (dial).
 */
static int
pi_pool_take(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct proxy_pool_key k;
	struct bufferevent *bev;
	struct netaddr a;

	/* Only direct upstreams are pooled: a tunnel's way out is not shared. */
	if (c->pc_worker->pw_pool == NULL ||
	    proxy_upstream_route(c->pc_policy->pp_policy) != NULL)
		return 0;
	/* An upstream for a VM offering h2 is one whose origin declined it. */
	pi_pool_key(c, c->pc_proto == POLICY_PROTO_TLS && pi->pi_h2_wait, &k);
	if (k.pk_tls)
		pi_tc_peer(c);
	bev = proxy_pool_take(c->pc_worker->pw_pool, &k, &pi->pi_tc, &a);
	proxy_sb_stats_pool(&c->pc_sandbox->ps_stats, bev != NULL ? PPU_HIT :
	    PPU_MISS);
	if (bev == NULL)
		return 0;
	c->pc_server = bev;
	c->pc_upstream = a;
	c->pc_reused = 1;
	pi->pi_reused = 1;
	pi->pi_up_h2 = k.pk_h2;
	pi->pi_poolable = 1;
	pi_upstream_up(c);
	return 1;
}

/*
 * Entry points (proxy_path.h).
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
	X509 *leaf = NULL;
	SSL *ssl = NULL;
	char err[256];
	int fd;

	if ((pi = pi_new(c)) == NULL) {
		proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
		return -1;
	}
	pi->pi_hs_t0 = proxy_stats_now_us();
	c->pc_state = PC_INSPECT;
	if (c->pc_proto == POLICY_PROTO_HTTP && pi->pi_keys != NULL) {
		/* Plain HTTP: the same request checks, no TLS on either side. */
		pi->pi_client_up = 1;
		if (pi_client_attach(c, c->pc_client, EV_WRITE) == -1) {
			proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
			return -1;
		}
		return pi_pool_take(c);	/* else the core dials */
	}
	/* The CA the policy went in with (pp_ca, alive while pc_policy is held). */
	ca = c->pc_policy->pp_ca;
	if (pi->pi_keys == NULL || w->pw_tls_in == NULL || w->pw_tls_out == NULL ||
	    ca == NULL || ca->pc_ca == NULL) {
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
		log_warnx("sandbox %s: no leaf for %s: %s", pi_sandbox(c), c->pc_name,
		    err);
		proxy_conn_close(c, PR_STR(INSPECT_UNAVAILABLE), 1);
		return -1;
	}
	if ((ssl = SSL_new(w->pw_tls_in)) == NULL ||
	    proxy_tls_server_set_leaf(ssl, leaf, proxy_keys_leaf_key()) == -1) {
		X509_free(leaf);
		SSL_free(ssl);
		proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
		return -1;
	}
	X509_free(leaf);
	/*
	 * Session tickets bound to (sandbox, name, policy hash, CA).  This code runs
	 * only once the policy in force (pc_policy) decided to inspect pc_name, so a
	 * ticket resumes only while a policy with that hash still inspects the name:
	 * any reload that changes the policy changes the hash.  Failing: no tickets.
	 */
	(void)proxy_tls_server_bind(ssl, pi_sandbox(c), c->pc_name,
	    c->pc_policy->pp_policy->p_hash, ca_cert(ca->pc_ca));
	pi->pi_h2_wait = proxy_h2_offered(c);
	f = bufferevent_openssl_filter_new(w->pw_base, c->pc_client, ssl,
	    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE |
	    BEV_OPT_DEFER_CALLBACKS);
	if (f == NULL) {
		SSL_free(ssl);
		proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
		return -1;
	}
	/*
	 * The filter owns the socket bufferevent (and ssl) from here.  Waiting for
	 * the upstream (h2 offered), the socket side stays off: its first write
	 * event would start the handshake (libevent's handshake callback).
	 */
	if (pi->pi_h2_wait)
		bufferevent_disable(c->pc_client, EV_READ | EV_WRITE);
	if (pi_client_attach(c, f, pi->pi_h2_wait ? 0 : EV_READ | EV_WRITE) == -1) {
		proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
		return -1;
	}
	/*
	 * The ClientHello is already buffered: start the handshake on it now, or,
	 * when it offers h2, once the upstream's is done (pi_h2_release).
	 */
	if (!pi->pi_h2_wait)
		bufferevent_trigger(bufferevent_get_underlying(f), EV_READ,
		    BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
	/*
	 * And the upstream in parallel: an idle one from the pool, else the core
	 * dials (proxy_inspect_server_bev()).
	 */
	return pi_pool_take(c);
}

/*
 * The new dial for a request resent (pi_upstream_lost) failed, or its origin did
 * not verify: that request's answer is the 502 with the reason.  1 if so (c is
 * closing), 0 when no request waits for it.
 */
static int
pi_redial_failed(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;

	if (pi->pi_rs == PR_IDLE)
		return 0;
	c->pc_state = PC_INSPECT;
	http_buf_free(&pi->pi_retry);
	pi_bad_gateway(c, pi->pi_fail, pi->pi_fail_why);
	return 1;
}

/* The request head kept in pi_retry goes on the new upstream.  0, or -1 (closing). */
static int
pi_resend(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;
	int rc;

	pi->pi_poolable = 0;
	pi_count(c, 1, pi->pi_retry.hb_len);
	rc = proxy_evbuffer_add_secret(bufferevent_get_output(c->pc_server),
	    pi->pi_retry.hb_p, pi->pi_retry.hb_len);
	http_buf_free(&pi->pi_retry);
	if (rc == -1) {
		c->pc_state = PC_INSPECT;
		pi_bad_gateway(c, PR_STR(INTERNAL_ERROR), "internal error");
		return -1;
	}
	return 0;
}

/*
 * The upstream: a TLS client socket the dial connects, or, through an upstream
 * proxy's tunnel (under), a TLS client filter over it.  A filter made with no
 * socket starts its handshake only when its underlying bufferevent calls back,
 * so the write callback is triggered once by hand.  Either way TLS reports
 * BEV_EVENT_CONNECTED once the handshake is done and the origin verified.
 */
static struct bufferevent *
proxy_inspect_server_bev(struct proxy_conn *c, struct bufferevent *under)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct bufferevent *bev;
	SSL *ssl;

	pi->pi_up_h2 = 0;
	if (c->pc_proto != POLICY_PROTO_TLS)
		return under != NULL ? under : bufferevent_socket_new(
		    c->pc_worker->pw_base, -1, BEV_OPT_CLOSE_ON_FREE |
		    BEV_OPT_DEFER_CALLBACKS);
	pi_tc_peer(c);
	if ((ssl = proxy_tls_client_new(c->pc_worker->pw_tls_out, c->pc_name,
	    &pi->pi_tc)) == NULL)
		return NULL;
	if (pi->pi_h2_wait && proxy_tls_client_offer_h2(ssl) == -1) {
		SSL_free(ssl);
		return NULL;
	}
	pi->pi_up_h2 = pi->pi_h2_wait;
	if (under != NULL)
		bev = bufferevent_openssl_filter_new(c->pc_worker->pw_base, under,
		    ssl, BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE |
		    BEV_OPT_DEFER_CALLBACKS);
	else
		bev = bufferevent_openssl_socket_new(c->pc_worker->pw_base, -1, ssl,
		    BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE |
		    BEV_OPT_DEFER_CALLBACKS);
	if (bev == NULL) {
		SSL_free(ssl);
		return NULL;
	}
	if (under != NULL)
		bufferevent_trigger(under, EV_WRITE, BEV_TRIG_IGNORE_WATERMARKS |
		    BEV_TRIG_DEFER_CALLBACKS);
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
			if (pi_redial_failed(c))
				return;
		} else {
			c->pc_state = PC_INSPECT;
			pi_server_attach(c);
			/* Fresh and verified: clean until a request goes on it. */
			pi->pi_poolable = 1;
			if (pi->pi_retry.hb_len > 0 && pi_resend(c) == -1)
				return;
		}
		pi_h2_release(c);
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
	if (c->pc_dial_why != NULL) {
		/* The upstream proxy's refusal (proxy_conn_tunnel.c). */
		pi->pi_fail = c->pc_dial_why;
		snprintf(pi->pi_fail_why, sizeof(pi->pi_fail_why), "no tunnel "
		    "through the upstream proxy (%s)", c->pc_dial_why);
	} else if (pi->pi_tc.tc_verify_err != 0 || pi->pi_tc.tc_own_ca) {
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
	if (pi_redial_failed(c))
		return;
	pi_h2_release(c);
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

/* The bytes_per_second pause ended: the engine, or the relay after a 101, reads on. */
static void
proxy_inspect_resume(struct proxy_conn *c)
{
	if (c->pc_state == PC_RELAY)
		proxy_conn_relay_update(c);
	else
		pi_run(c);
}

/*
 * c ends cleanly: its upstream goes to this thread's pool if it is clean (see the
 * top: pi_poolable, set only once an answer was read to its end, or for one never
 * used), idle, and its TLS session healthy; then it is the pool's.
 */
static void
proxy_inspect_pool(struct proxy_conn *c)
{
	struct proxy_inspect *pi = c->pc_inspect;
	struct proxy_pool_key k;
	SSL *ssl;

	if (pi == NULL || c->pc_worker->pw_pool == NULL || c->pc_state != PC_INSPECT ||
	    c->pc_sandbox == NULL || c->pc_policy == NULL || !pi->pi_server_up ||
	    !pi->pi_poolable || pi->pi_server_eof || pi->pi_fail != NULL ||
	    pi->pi_rs != PR_IDLE || c->pc_via != NULL)
		return;
	if (c->pc_proto == POLICY_PROTO_TLS) {
		ssl = bufferevent_openssl_get_ssl(c->pc_server);
		if (ssl == NULL || !SSL_is_init_finished(ssl) ||
		    SSL_get_shutdown(ssl) != 0 || SSL_pending(ssl) != 0 ||
		    proxy_tls_alpn_is_h2(ssl))
			return;
	}
	pi_pool_key(c, pi->pi_up_h2, &k);
	/* The pool owns it either way (it closes what it does not keep). */
	(void)proxy_pool_put(c->pc_worker->pw_pool, &k, c->pc_server,
	    &c->pc_upstream);
	c->pc_server = NULL;
}

const struct proxy_mode proxy_mode_inspect = {
	.pm_name = "inspect",
	.pm_start = proxy_inspect_start,
	.pm_server_bev = proxy_inspect_server_bev,
	.pm_server_event = proxy_inspect_server_event,
	.pm_recheck = proxy_inspect_recheck,
	.pm_pool = proxy_inspect_pool,
	.pm_free = proxy_inspect_free,
	.pm_resume = proxy_inspect_resume,
};

/*
 * Test seam, for tests/fuzz/fuzz_inspect.c only (the daemon never calls it): runs
 * the engine of c over two in-memory bufferevents, vm for the VM's decrypted
 * stream and origin for the upstream's, as right after both TLS handshakes (the
 * VM's done, the upstream's verified: proxy_inspect_start() and
 * proxy_inspect_server_event() without TLS).  c is as proxy_conn_decide() leaves
 * it (pc_worker, pc_sandbox, pc_policy, pc_name, pc_dport, pc_proto: TLS for the
 * injecting path, HTTP for plain, pc_timer, on pw_conns; pc_reused: origin stands
 * for a connection taken from the pool); c owns vm and origin from here.  0, or
 * -1 (c was closed).
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
	c->pc_inspect->pi_poolable = 1;		/* fresh, or idle in the pool */
	c->pc_inspect->pi_reused = c->pc_reused;
	pi_run(c);
	return 0;
}
