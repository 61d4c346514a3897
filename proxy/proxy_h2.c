/*
 * proxy/proxy_h2.c: HTTP/2 through inspection, the third mode (struct proxy_mode,
 * proxy_path.h).  libnghttp2 does the framing and HPACK; nothing here parses a
 * frame.
 *
 * How a connection gets here.  Inspect mode (proxy_inspect.c) terminates the VM's
 * TLS as for HTTP/1.1.  When the VM's ClientHello offers h2 (proxy_h2_offered),
 * its handshake waits for the upstream's, and the upstream offers h2 and http/1.1;
 * once the origin verified, the VM's handshake may choose h2 (proxy_tls.c), and
 * inspect hands the connection to this engine (proxy_h2_start).  An upstream that
 * failed means http/1.1 towards the VM (inspect answers it), and a VM that did
 * not offer h2 gets http/1.1 both ways.
 *
 * An HTTP/2 origin (it chose h2): streams map 1:1: each VM stream (the server
 * session, vm) that passes its checks becomes one stream of this connection's own
 * upstream (the client session, up).
 *
 * An HTTP/1.1 origin (it chose http/1.1, or no ALPN: h2_h1, no client session):
 * each stream that passes its checks is one HTTP/1.1 exchange on the upstream
 * connection, one at a time, in the order the heads came (no pipelining; the
 * others wait on h2_h1q, bounded by the stream limit and each one's window).  The
 * request is the head proxy_req_start() rebuilt, as it is (Content-Length when the
 * stream sent content-length, nothing when HEADERS ended it, else chunked; te
 * never, as a hop-by-hop field; request trailers scanned, then dropped).  Its
 * head waits for the body, or H2_H1_HOLD bytes of it, so that a placeholder in a
 * small body is refused before the origin sees a byte (bytes from the origin
 * meanwhile are unasked: upstream_http_malformed).  The response: the strict HTTP/1.1 response parser (its smuggling refusals), 1xx
 * skipped, the body by its framing (http_chunked_feed), then as for an HTTP/2
 * origin (h2_response_submit: checks, redaction, HEADERS and DATA without
 * connection-specific fields).  Malformed: 502, or RST_STREAM INTERNAL_ERROR once
 * the head went out, upstream_http_malformed.  Bytes past a response's end or
 * while no exchange is under way: upstream_http_malformed (the connection's
 * record), never passed on.  The upstream connection is closed, never reused (this
 * engine pools nothing), after those, Connection: close, a body until close, an
 * exchange cut short (a VM reset, a refusal mid-body, an early answer) or EOF;
 * the streams still waiting then get REFUSED_STREAM (unprocessed: a client may
 * retry them) and the VM a GOAWAY.  gRPC cannot work without trailers: refused
 * with grpc-status 14, grpc_needs_h2, nothing sent.  Records carry
 * "upstream_protocol" ("h2" or "http/1.1").
 *
 * Per stream, exactly what HTTP/1.1 gets per request (proxy_request.c runs the
 * same code): the stream's head is written out as the HTTP/1.1 head it stands for
 * (":method :path HTTP/1.1", Host from :authority, which must agree with host
 * when both are sent, cookie crumbs joined) and parsed by the strict HTTP/1.1
 * parser; proxy_req_start() then checks Host against the connection's name,
 * method and normalised path against the policy, placeholders, and rebuilds the
 * head with the injected fields, which is sent upstream as HTTP/2 fields again,
 * the injected ones never indexed (NGHTTP2_NV_FLAG_NO_INDEX: HPACK keeps no copy
 * of a secret in either side's dynamic table).  Request DATA is scanned for
 * placeholders (one stream per request, split across frames); request trailers
 * too.  Responses: the head through the same response checks and redaction of
 * header values (proxy_req_response_check), DATA through a redactor per stream,
 * trailers redacted as header values.  Content-Length never goes back to the VM
 * (a redacted body may change length).  Interim 1xx answers are not passed on.
 *
 * Refusals are per stream: the other streams go on.  A denied request gets a 403
 * with the text HTTP/1.1 gets, or, for content-type application/grpc, a gRPC
 * answer (HTTP 200, grpc-status 7 PERMISSION_DENIED, grpc-message with the same
 * text naming sandbox, policy, rule and reason).  One "request" record per
 * stream, with "protocol":"h2" and "stream".
 *
 * Malformed streams (RFC 9113 8): nghttp2's HTTP messaging checks stay on
 * (connection-specific fields, te other than trailers, upper-case names,
 * CR/LF/NUL in values, pseudo-header fields after regular ones, duplicated or
 * missing, content-length disagreeing with DATA); an invalid field name is never
 * ignored (pe_invalid_header), and a head the HTTP/1.1 parser refuses is malformed
 * too.  Such a stream is reset with PROTOCOL_ERROR and audited http_malformed
 * (http_head_too_large for a field list over 32 KiB or 100 fields).  CONNECT is
 * refused (405); extended CONNECT (RFC 8441) is never enabled
 * (SETTINGS_ENABLE_CONNECT_PROTOCOL is not sent), so :protocol is malformed and
 * a WebSocket client uses HTTP/1.1 instead.  Server push is off both ways.
 *
 * Floods (the defaults below; a policy's limits.h2_* may lower them): at most
 * H2_STREAMS concurrent streams (SETTINGS_MAX_CONCURRENT_STREAMS),
 * a field list of 32 KiB (SETTINGS_MAX_HEADER_LIST_SIZE, and counted here), at most
 * H2_CONTINUATIONS CONTINUATION frames per field block (CVE-2024-27316), stream
 * resets by the VM held to H2_RESETS_PER_SECOND (CVE-2023-44487: nghttp2's rate
 * limit, which answers GOAWAY ENHANCE_YOUR_CALM), and per second at most
 * H2_CONTROL_PER_SECOND SETTINGS, PING and empty DATA frames each (GOAWAY
 * ENHANCE_YOUR_CALM, audited rate_limited); nghttp2's bound on queued ACKs
 * stays.  The idle timeout counts only HEADERS and DATA, so a VM holding a zero
 * window open while it pings is closed after PROXY_IDLE_TIMEOUT.
 * limits.requests_per_second is charged per stream (proxy_req_start), and
 * limits.bytes_per_second for every byte either way (proxy_limit_bytes).
 *
 * Flow control: no automatic WINDOW_UPDATE on either session; DATA is
 * acknowledged (nghttp2_session_consume) only when the other side's session took
 * it, so a slow reader on one side stops the writer on the other and memory per
 * stream stays within a window.
 *
 * Not here (yet): one upstream connection per VM connection (no sharing across VM
 * connections, none pooled, for an HTTP/1.1 origin no second connection for
 * parallel streams); a reload's new h2_streams applies to new connections only.
 *
 * Test seam: proxy_h2_attach_test (tests/fuzz/fuzz_h2.c), both ends in memory,
 * the origin speaking HTTP/2 or HTTP/1.1.
 */
#include <sys/queue.h>
#include <sys/time.h>

#include <ctype.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#include <nghttp2/nghttp2.h>
#include <openssl/crypto.h>

#include "log.h"
#include "policy.h"
#include "proxy_globals.h"
#include "proxy_registry.h"
#include "proxy_path.h"
#include "proxy_http.h"
#include "proxy_keys.h"
#include "proxy_peek.h"
#include "proxy_reason.h"
#include "proxy_request.h"
#include "proxy_scan.h"
#include "proxy_tls.h"

#define H2_STREAMS		POLICY_H2_LIMIT_MAX	/* concurrent streams */
#define H2_HEADER_LIST_MAX	HTTP_HEAD_MAX	/* as an HTTP/1.1 head */
#define H2_FIELDS_MAX		(HTTP_FIELDS_MAX + 5)	/* and its pseudo fields */
#define H2_CONTINUATIONS	8	/* CONTINUATION frames per field block */
#define H2_RESETS_PER_SECOND	POLICY_H2_LIMIT_MAX	/* RST_STREAM from the VM */
#define H2_CONTROL_PER_SECOND	POLICY_H2_LIMIT_MAX	/* SETTINGS, PING, empty DATA */
#define H2_WINDOW		(256 * 1024)	/* stream window we give the VM */
/*
 * HTTP/1.1 origin: a request's head waits for its body, or this much of it, so
 * that a placeholder in a small body is refused (403, exfil) before the origin
 * sees a byte, as HTTP/1.1 from the VM gets it.  Well below the connection's
 * initial window (65535: RFC 9113 6.9.2), which held DATA does not give back:
 * the VM's DATA keeps coming while the head waits.
 */
#define H2_H1_HOLD		(16 * 1024)
#define H2_CLOSE_WAIT		5	/* seconds to flush a GOAWAY */

/* A field list as it arrives: offsets into one buffer (wiped: it may hold secrets). */
struct h2_fields {
	struct http_buf	 hf_buf;
	struct {
		uint32_t no, nl, vo, vl;
	}		 hf_f[H2_FIELDS_MAX];
	size_t		 hf_n;
	size_t		 hf_size;	/* RFC 9113 6.5.2: name + value + 32 each */
	const char	*hf_bad;	/* reason code once refused */
};

struct h2_stream {
	TAILQ_ENTRY(h2_stream) hs_entry;
	TAILQ_ENTRY(h2_stream) hs_qentry;	/* HTTP/1.1 origin: waiting */
	struct proxy_h2		*hs_h2;
	int32_t			 hs_id;		/* the VM's stream */
	int32_t			 hs_up;		/* the upstream's, 0: none */
	struct proxy_keys	*hs_keys;	/* referenced: the image at the head */
	struct proxy_req	 hs_r;
	struct h2_fields	 hs_req;	/* request head, then trailers */
	struct h2_fields	 hs_res;	/* response head, then trailers */
	int			 hs_grpc;	/* content-type application/grpc */
	int			 hs_te_trailers;	/* the VM sent te: trailers */
	int			 hs_decided;	/* its head was checked */
	int			 hs_audited;	/* its record was written */
	int			 hs_refused;	/* our own answer (or a reset) */
	int			 hs_req_trailers;	/* hs_req holds trailers */
	int			 hs_up_cancelled;	/* RST_STREAM sent upstream */
	struct scan_stream	 hs_scan;	/* request DATA: placeholders */
	struct evbuffer		*hs_reqbody;	/* DATA for the upstream */
	int			 hs_req_eof;
	size_t			 hs_req_raw;	/* VM bytes not yet consumed */
	struct scan_redact	*hs_red;	/* response DATA */
	struct scan_redact	*hs_hred;	/* response field values */
	struct evbuffer		*hs_resbody;	/* DATA for the VM */
	int			 hs_res_started;	/* response HEADERS to the VM */
	int			 hs_res_eof;
	int			 hs_res_trailers;	/* hs_res holds trailers */
	size_t			 hs_res_raw;	/* upstream bytes not yet consumed */
	struct http_buf		 hs_text;	/* our own answer's body */
	/* HTTP/1.1 origin (h2_h1): the request as one exchange of its connection */
	int			 hs_h1open;	/* checked: its DATA is taken */
	int			 hs_queued;	/* on h2_h1q, not sent yet */
	struct http_buf		 hs_h1head;	/* the rebuilt head (wiped) */
	enum http_framing	 hs_h1fr;	/* its body's framing upstream */
	int			 hs_h1body_done;	/* the whole request is out */
};
TAILQ_HEAD(h2_stream_list, h2_stream);

struct proxy_h2 {
	struct proxy_conn	*h2_conn;
	struct proxy_keys	*h2_keys;	/* referenced: tc's anchors */
	struct proxy_tls_check	 h2_tc;		/* the upstream SSL reports here */
	nghttp2_session		*h2_vm;		/* server, towards the VM */
	nghttp2_session		*h2_up;		/* client, towards the origin */
	struct h2_stream_list	 h2_streams;
	struct event		*h2_timer;	/* idle, then the closing flush */
	int			 h2_up_gone;	/* the upstream session ended */
	int			 h2_closing;	/* GOAWAY sent: flush, then close */
	struct timeval		 h2_closing_since;
	int			 h2_nconts;	/* CONTINUATIONs of this block */
	time_t			 h2_sec;	/* the second the counters count */
	unsigned int		 h2_nsettings, h2_npings, h2_nempty, h2_nresets;
	/*
	 * The origin chose http/1.1 (or no ALPN): no upstream session; each stream
	 * is one HTTP/1.1 exchange on the upstream connection, one at a time.
	 */
	int			 h2_h1;
	struct h2_stream_list	 h2_h1q;	/* checked, waiting their turn */
	struct h2_stream	*h2_h1cur;	/* the exchange in progress */
	int			 h2_h1head;	/* its response head is not in yet */
	size_t			 h2_h1find;	/* http_head_find()'s state */
	enum http_framing	 h2_h1fr;	/* its response body's framing */
	uint64_t		 h2_h1left;	/* HTTP_BODY_LENGTH: bytes to come */
	struct http_chunked	 h2_h1ch;	/* HTTP_BODY_CHUNKED */
	int			 h2_h1last;	/* the origin ends after it */
	int			 h2_h1eof;	/* the origin closed its side */
};

static void	h2_run(struct proxy_conn *);
static void	h2_stream_free(struct h2_stream *);
static void	proxy_h2_free(struct proxy_conn *);

/*
 * Small helpers.
 */

static struct h2_stream *
h2_vm_stream(struct proxy_h2 *h2, int32_t id)
{
	return nghttp2_session_get_stream_user_data(h2->h2_vm, id);
}

static struct h2_stream *
h2_up_stream(struct proxy_h2 *h2, int32_t id)
{
	return nghttp2_session_get_stream_user_data(h2->h2_up, id);
}

static int
h2_fields_add(struct h2_fields *f, const uint8_t *name, size_t nl,
    const uint8_t *value, size_t vl)
{
	size_t at = f->hf_buf.hb_len;

	if (f->hf_bad != NULL)
		return 0;
	f->hf_size += nl + vl + 32;
	if (f->hf_n >= H2_FIELDS_MAX || f->hf_size > H2_HEADER_LIST_MAX) {
		f->hf_bad = PR_STR(HTTP_HEAD_TOO_LARGE);
		return 0;
	}
	if (http_buf_add(&f->hf_buf, name, nl) == -1 ||
	    http_buf_add(&f->hf_buf, value, vl) == -1)
		return -1;
	f->hf_f[f->hf_n].no = (uint32_t)at;
	f->hf_f[f->hf_n].nl = (uint32_t)nl;
	f->hf_f[f->hf_n].vo = (uint32_t)(at + nl);
	f->hf_f[f->hf_n].vl = (uint32_t)vl;
	f->hf_n++;
	return 0;
}

static void
h2_fields_clear(struct h2_fields *f)
{
	http_buf_free(&f->hf_buf);
	f->hf_n = 0;
	f->hf_size = 0;
	f->hf_bad = NULL;
}

#define HF_NAME(f, i)	((const char *)(f)->hf_buf.hb_p + (f)->hf_f[i].no)
#define HF_VALUE(f, i)	((const char *)(f)->hf_buf.hb_p + (f)->hf_f[i].vo)

/* Field i named name (lower case, as HTTP/2 has them)? */
static int
h2_is(const struct h2_fields *f, size_t i, const char *name)
{
	size_t n = strlen(name);

	return f->hf_f[i].nl == n && memcmp(HF_NAME(f, i), name, n) == 0;
}

/* The value of the first field named name, or NULL (*len set). */
static const char *
h2_get(const struct h2_fields *f, const char *name, size_t *len)
{
	size_t i;

	for (i = 0; i < f->hf_n; i++)
		if (h2_is(f, i, name)) {
			*len = f->hf_f[i].vl;
			return HF_VALUE(f, i);
		}
	*len = 0;
	return NULL;
}

/* h2's upstream protocol, for the records. */
static const char *
h2_up_proto(const struct proxy_h2 *h2)
{
	return h2->h2_h1 ? "http/1.1" : "h2";
}

/* Bytes moved in one direction: the connection's counters, the sandbox's limits. */
static void
h2_count(struct proxy_conn *c, int up, size_t n)
{
	if (up) {
		c->pc_up += n;
		proxy_sandbox_count(c->pc_sandbox, PROXY_STAT_BYTES_UP, (int64_t)n);
	} else {
		c->pc_down += n;
		proxy_sandbox_count(c->pc_sandbox, PROXY_STAT_BYTES_DOWN, (int64_t)n);
	}
	proxy_limit_bytes(c, n);	/* may pause reads (pc_paused) */
}

/* A stream made progress (HEADERS or DATA): the idle timer counts from here. */
static void
h2_touch(struct proxy_h2 *h2)
{
	struct proxy_conn *c = h2->h2_conn;

	event_base_gettimeofday_cached(c->pc_worker->pw_base, &c->pc_last);
}

/*
 * The connection misbehaves as a whole (a flood): GOAWAY with code, audited, then
 * closed once it is flushed.
 */
/* No more streams: the flush of what is queued is polled, then c closes. */
static void
h2_closing(struct proxy_h2 *h2)
{
	struct timeval tv = { 0, 20 * 1000 };

	h2->h2_closing = 1;
	evutil_gettimeofday(&h2->h2_closing_since, NULL);
	if (h2->h2_timer != NULL)
		evtimer_add(h2->h2_timer, &tv);
}

static void
h2_goaway(struct proxy_h2 *h2, uint32_t code, const char *reason)
{
	struct proxy_conn *c = h2->h2_conn;

	if (h2->h2_closing)
		return;
	if (reason != NULL) {
		struct proxy_req r;

		proxy_req_init(&r, c, h2->h2_keys, -1);
		evutil_gettimeofday(&r.rq_t0, NULL);
		r.rq_up_proto = h2_up_proto(h2);
		proxy_req_audit(&r, reason, -1);
		log_info("connection %llu: HTTP/2 %s", (unsigned long long)c->pc_id,
		    reason);
	}
	(void)nghttp2_submit_goaway(h2->h2_vm, NGHTTP2_FLAG_NONE,
	    nghttp2_session_get_last_proc_stream_id(h2->h2_vm), code, NULL, 0);
	h2_closing(h2);
}

/* A policy's HTTP/2 limit l (0: ours, def; it may only lower it). */
static uint32_t
h2_limit(uint32_t l, uint32_t def)
{
	return l == 0 || l > def ? def : l;
}

/*
 * Per-second counters of control frames and resets, against the limits of the
 * policy in force (pc_limits: copied at the decision and every recheck); over
 * one: GOAWAY.  0 or -1.
 */
static int
h2_flood(struct proxy_h2 *h2, unsigned int *counter)
{
	struct timeval now;

	event_base_gettimeofday_cached(h2->h2_conn->pc_worker->pw_base, &now);
	if (now.tv_sec != h2->h2_sec) {
		h2->h2_sec = now.tv_sec;
		h2->h2_nsettings = h2->h2_npings = h2->h2_nempty = 0;
		h2->h2_nresets = 0;
	}
	if (++*counter <= h2_limit(counter == &h2->h2_nresets ?
	    h2->h2_conn->pc_limits.pl_h2_resets_per_second :
	    h2->h2_conn->pc_limits.pl_h2_control_per_second, H2_CONTROL_PER_SECOND))
		return 0;
	h2_goaway(h2, NGHTTP2_ENHANCE_YOUR_CALM, PR_STR(RATE_LIMITED));
	return -1;
}

/*
 * Answers and records.
 */

/* The stream's request record, once. */
static void
h2_audit(struct h2_stream *hs, const char *reason, int status)
{
	if (hs->hs_audited)
		return;
	hs->hs_audited = 1;
	if (hs->hs_r.rq_redacted > 0)
		proxy_req_audit_exfil(&hs->hs_r, PR_STR(SECRET_REDACTED),
		    hs->hs_r.rq_redacted_id, "response",
		    (long long)hs->hs_r.rq_redacted);
	proxy_req_audit(&hs->hs_r, reason, status);
}

/*
 * HTTP/1.1 origin: its connection is done with (an exchange cut short, a
 * malformed or smuggling response, Connection: close, EOF).  It is never used
 * again (nor pooled: this engine pools nothing); h2_run answers the rest.
 */
static void
h2_h1_close(struct proxy_h2 *h2)
{
	h2->h2_up_gone = 1;
	h2->h2_h1cur = NULL;
	if (h2->h2_conn->pc_server != NULL)
		bufferevent_disable(h2->h2_conn->pc_server, EV_READ);
}

/* HTTP/1.1 origin: hs leaves the queue (never sent). */
static void
h2_h1_unqueue(struct h2_stream *hs)
{
	if (hs->hs_queued) {
		TAILQ_REMOVE(&hs->hs_h2->h2_h1q, hs, hs_qentry);
		hs->hs_queued = 0;
	}
	hs->hs_h1open = 0;
	http_buf_free(&hs->hs_h1head);
}

/* The upstream stream of hs is not wanted any more (once). */
static void
h2_cancel_up(struct h2_stream *hs)
{
	struct proxy_h2 *h2 = hs->hs_h2;

	if (h2->h2_h1) {
		/*
		 * Waiting, or its turn come with its head still held (nothing of it
		 * sent, h2_h1_send): dropped, the connection goes on.  Under way:
		 * HTTP/1.1 cannot cancel one.
		 */
		if (h2->h2_h1cur == hs && hs->hs_h1head.hb_len > 0)
			h2->h2_h1cur = NULL;
		h2_h1_unqueue(hs);
		if (h2->h2_h1cur == hs)
			h2_h1_close(h2);
		return;
	}
	if (hs->hs_up <= 0 || h2->h2_up_gone || hs->hs_up_cancelled)
		return;
	hs->hs_up_cancelled = 1;
	(void)nghttp2_submit_rst_stream(h2->h2_up, NGHTTP2_FLAG_NONE, hs->hs_up,
	    NGHTTP2_CANCEL);
}

/* Resets the VM's stream (and its upstream one): malformed, or cut mid-way. */
static void
h2_reset(struct h2_stream *hs, uint32_t code, const char *reason)
{
	struct proxy_h2 *h2 = hs->hs_h2;

	hs->hs_refused = 1;
	h2_audit(hs, reason, hs->hs_r.rq_status);
	(void)nghttp2_submit_rst_stream(h2->h2_vm, NGHTTP2_FLAG_NONE, hs->hs_id,
	    code);
	h2_cancel_up(hs);
}

/* DATA of our own answers (hs_text), then the end of the stream. */
static ssize_t
h2_text_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
    uint32_t *flags, nghttp2_data_source *src, void *arg)
{
	struct h2_stream *hs = h2_vm_stream(arg, id);
	size_t n;

	if (hs == NULL)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	n = hs->hs_text.hb_len < len ? hs->hs_text.hb_len : len;

	memcpy(buf, hs->hs_text.hb_p, n);
	http_buf_drain(&hs->hs_text, n);
	if (hs->hs_text.hb_len == 0)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

/* The gRPC status for one of our refusals (the status codes of gRPC's spec). */
static const char *
h2_grpc_status(int status)
{
	switch (status) {
	case 403: return "7";		/* PERMISSION_DENIED */
	case 429: return "8";		/* RESOURCE_EXHAUSTED */
	case 502: return "14";		/* UNAVAILABLE */
	default: return "13";		/* INTERNAL */
	}
}

/*
 * Answers the stream with a refusal of ours (audited with rf's reason): a 403,
 * 421, ... with the HTTP/1.1 text, or the gRPC form.  A response already under way
 * cannot be replaced: the stream is reset instead.
 */
static void
h2_refuse(struct h2_stream *hs, const struct proxy_refusal *rf)
{
	struct proxy_h2 *h2 = hs->hs_h2;
	nghttp2_data_provider prd;
	nghttp2_nv nv[5];
	char status[4], len[24], msg[PROXY_REQ_TEXT_MAX * 3 + 16];
	size_t n = 0, i, k = 0;

	if (hs->hs_refused)
		return;
	if (hs->hs_res_started) {
		hs->hs_r.rq_status = -1;
		h2_reset(hs, NGHTTP2_INTERNAL_ERROR, rf->rf_reason);
		return;
	}
	hs->hs_refused = 1;
	hs->hs_res_started = 1;
	hs->hs_r.rq_status = rf->rf_status;
	h2_audit(hs, rf->rf_reason, rf->rf_status);
	h2_cancel_up(hs);
#define H2_NV(nm, v, l) do {						\
	nv[n].name = (uint8_t *)(uintptr_t)(nm); nv[n].namelen = strlen(nm); \
	nv[n].value = (uint8_t *)(uintptr_t)(v); nv[n].valuelen = (l);	\
	nv[n].flags = NGHTTP2_NV_FLAG_NONE; n++;			\
} while (0)
	if (hs->hs_grpc) {
		/* gRPC: a trailers-only answer; the message percent-encoded (spec). */
		for (i = 0; rf->rf_text[i] != '\0' && k + 4 < sizeof(msg); i++) {
			unsigned char ch = (unsigned char)rf->rf_text[i];

			if (ch < 0x20 || ch > 0x7e || ch == '%')
				k += (size_t)snprintf(msg + k, sizeof(msg) - k, "%%%02X",
				    ch);
			else
				msg[k++] = (char)ch;
		}
		msg[k] = '\0';
		H2_NV(":status", "200", 3);
		H2_NV("content-type", "application/grpc", 16);
		H2_NV("grpc-status", h2_grpc_status(rf->rf_status),
		    strlen(h2_grpc_status(rf->rf_status)));
		H2_NV("grpc-message", msg, k);
		(void)nghttp2_submit_response(h2->h2_vm, hs->hs_id, nv, n, NULL);
		return;
	}
	http_buf_free(&hs->hs_text);
	if (strcmp(hs->hs_r.rq_method, "HEAD") != 0 &&
	    (http_buf_add_str(&hs->hs_text, "airlock: ") == -1 ||
	    http_buf_add_str(&hs->hs_text, rf->rf_text) == -1 ||
	    http_buf_add_str(&hs->hs_text, "\n") == -1))
		http_buf_free(&hs->hs_text);
	snprintf(status, sizeof(status), "%d", rf->rf_status);
	snprintf(len, sizeof(len), "%zu", hs->hs_text.hb_len);
	H2_NV(":status", status, strlen(status));
	H2_NV("content-type", "text/plain; charset=utf-8", 25);
	H2_NV("content-length", len, strlen(len));
	H2_NV("cache-control", "no-store", 8);
#undef H2_NV
	prd.source.ptr = hs;
	prd.read_callback = h2_text_read;
	(void)nghttp2_submit_response(h2->h2_vm, hs->hs_id, nv, n,
	    hs->hs_text.hb_len > 0 ? &prd : NULL);
}

/*
 * Request side: the VM's session.
 */

static struct h2_stream *
h2_stream_new(struct proxy_h2 *h2, int32_t id)
{
	struct h2_stream *hs;

	if ((hs = calloc(1, sizeof(*hs))) == NULL)
		return NULL;
	hs->hs_h2 = h2;
	hs->hs_id = id;
	if ((hs->hs_keys = proxy_keys_get()) == NULL ||
	    (hs->hs_reqbody = evbuffer_new()) == NULL ||
	    (hs->hs_resbody = evbuffer_new()) == NULL) {
		proxy_keys_put(hs->hs_keys);
		if (hs->hs_reqbody != NULL)
			evbuffer_free(hs->hs_reqbody);
		free(hs);
		return NULL;
	}
	proxy_req_init(&hs->hs_r, h2->h2_conn, hs->hs_keys, id);
	hs->hs_r.rq_up_proto = h2_up_proto(h2);
	evutil_gettimeofday(&hs->hs_r.rq_t0, NULL);
	TAILQ_INSERT_TAIL(&h2->h2_streams, hs, hs_entry);
	return hs;
}

static void
h2_stream_free(struct h2_stream *hs)
{
	struct proxy_h2 *h2 = hs->hs_h2;

	TAILQ_REMOVE(&h2->h2_streams, hs, hs_entry);
	if (h2->h2_h1) {
		h2_h1_unqueue(hs);
		if (h2->h2_h1cur == hs)
			h2_h1_close(h2);	/* its exchange is not over */
	}
	if (hs->hs_up > 0 && !h2->h2_up_gone)
		(void)nghttp2_session_set_stream_user_data(h2->h2_up, hs->hs_up,
		    NULL);
	/* Response bytes never passed on: the connection's window gets them back. */
	if (hs->hs_res_raw > 0 && !h2->h2_up_gone && h2->h2_up != NULL)
		(void)nghttp2_session_consume_connection(h2->h2_up, hs->hs_res_raw);
	proxy_req_reset(&hs->hs_r);
	h2_fields_clear(&hs->hs_req);
	h2_fields_clear(&hs->hs_res);
	http_buf_free(&hs->hs_text);
	evbuffer_free(hs->hs_reqbody);
	evbuffer_free(hs->hs_resbody);
	scan_redact_free(hs->hs_red);
	scan_redact_free(hs->hs_hred);
	proxy_keys_put(hs->hs_keys);
	free(hs);
}

/* Appends a field line "Name: value\r\n" to b. */
static int
h2_line(struct http_buf *b, const char *name, size_t nl, const char *value,
    size_t vl)
{
	return http_buf_add(b, name, nl) == -1 || http_buf_add(b, ": ", 2) == -1 ||
	    http_buf_add(b, value, vl) == -1 || http_buf_add(b, "\r\n", 2) == -1 ?
	    -1 : 0;
}

/*
 * The HTTP/1.1 head the stream's fields stand for, into out: what the checks of
 * proxy_request.c and the strict parser read.  NULL, or the reason code (*why
 * static) of a head that is no request: no :method, :scheme other than https,
 * :authority and host disagreeing (host_mismatch).
 */
static const char *
h2_request_head(struct h2_stream *hs, int end_stream, struct http_buf *out)
{
	const struct h2_fields *f = &hs->hs_req;
	const char *method, *path, *auth, *host, *scheme;
	size_t ml, pl, al, hl, sl, i;
	int cookies = 0;

	method = h2_get(f, ":method", &ml);
	path = h2_get(f, ":path", &pl);
	auth = h2_get(f, ":authority", &al);
	host = h2_get(f, "host", &hl);
	scheme = h2_get(f, ":scheme", &sl);
	if (method == NULL)
		return PR_STR(HTTP_MALFORMED);
	if (ml == 7 && memcmp(method, "CONNECT", 7) == 0)
		return PR_STR(METHOD_NOT_ALLOWED);
	if (path == NULL || scheme == NULL || sl != 5 ||
	    memcmp(scheme, "https", 5) != 0)
		return PR_STR(HTTP_MALFORMED);
	if (auth == NULL) {
		auth = host;
		al = hl;
	}
	/* Every host field (one may be repeated) agrees with :authority. */
	for (i = 0; i < f->hf_n; i++)
		if (h2_is(f, i, "host") && (f->hf_f[i].vl != al ||
		    strncasecmp(HF_VALUE(f, i), auth, al) != 0)) {
			/* the record names the host that disagrees */
			proxy_req_asked(&hs->hs_r, HF_VALUE(f, i), f->hf_f[i].vl,
			    NULL, 0);
			return PR_STR(HOST_MISMATCH);
		}
	if (http_buf_add(out, method, ml) == -1 || http_buf_add(out, " ", 1) == -1 ||
	    http_buf_add(out, path, pl) == -1 ||
	    http_buf_add_str(out, " HTTP/1.1\r\n") == -1)
		return PR_STR(INTERNAL_ERROR);
	/* No Host at all is a head the parser refuses: host_mismatch below. */
	if (auth != NULL && h2_line(out, "Host", 4, auth, al) == -1)
		return PR_STR(INTERNAL_ERROR);
	for (i = 0; i < f->hf_n; i++) {
		if (HF_NAME(f, i)[0] == ':' || h2_is(f, i, "host"))
			continue;
		if (h2_is(f, i, "te")) {
			/* nghttp2 let only "trailers" through; hop-by-hop in 1.1. */
			hs->hs_te_trailers = 1;
			continue;
		}
		if (h2_is(f, i, "cookie")) {
			cookies = 1;
			continue;
		}
		if (h2_is(f, i, "content-type") && f->hf_f[i].vl >= 16 &&
		    strncasecmp(HF_VALUE(f, i), "application/grpc", 16) == 0)
			hs->hs_grpc = 1;
		if (h2_line(out, HF_NAME(f, i), f->hf_f[i].nl, HF_VALUE(f, i),
		    f->hf_f[i].vl) == -1)
			return PR_STR(INTERNAL_ERROR);
	}
	if (cookies) {
		/* RFC 9113 8.2.3: the crumbs are one field again, "; " between. */
		int first = 1;

		if (http_buf_add_str(out, "Cookie: ") == -1)
			return PR_STR(INTERNAL_ERROR);
		for (i = 0; i < f->hf_n; i++) {
			if (!h2_is(f, i, "cookie"))
				continue;
			if ((!first && http_buf_add(out, "; ", 2) == -1) ||
			    http_buf_add(out, HF_VALUE(f, i), f->hf_f[i].vl) == -1)
				return PR_STR(INTERNAL_ERROR);
			first = 0;
		}
		if (http_buf_add(out, "\r\n", 2) == -1)
			return PR_STR(INTERNAL_ERROR);
	}
	/* A body without content-length: chunked, for the parser's framing. */
	if (!end_stream && h2_get(f, "content-length", &sl) == NULL &&
	    http_buf_add_str(out, "Transfer-Encoding: chunked\r\n") == -1)
		return PR_STR(INTERNAL_ERROR);
	if (http_buf_add(out, "\r\n", 2) == -1)
		return PR_STR(INTERNAL_ERROR);
	return NULL;
}

/* Fields never passed between HTTP/2 sessions (connection-specific, RFC 9113 8.2.2). */
static int
h2_hop(const uint8_t *name, size_t n)
{
	static const char *const hop[] = { "connection", "keep-alive",
	    "proxy-connection", "transfer-encoding", "upgrade", "te", "host",
	    "content-length" };
	size_t i;

	for (i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (strlen(hop[i]) == n && strncasecmp(hop[i], (const char *)name,
		    n) == 0)
			return 1;
	return 0;
}

/* Does the rule inject into the field name[n]?  Such a field is never indexed. */
static int
h2_injected(const struct proxy_req *r, const uint8_t *name, size_t n)
{
	size_t i;

	for (i = 0; r->rq_rule != NULL && i < r->rq_rule->pr_ninject; i++)
		if (strlen(r->rq_rule->pr_inject[i].pi_header) == n &&
		    strncasecmp(r->rq_rule->pr_inject[i].pi_header,
		    (const char *)name, n) == 0)
			return 1;
	return 0;
}

/*
 * HTTP/2 fields from a rebuilt HTTP/1.1 head's fields[n] (in buf), names in
 * lower case (copied into low, which holds every name: at most the head's size),
 * connection-specific ones left out; the injected ones flagged never-indexed.
 */
static size_t
h2_nv_fields(const struct proxy_req *r, const uint8_t *buf,
    const struct http_field *fields, size_t n, nghttp2_nv *nv, size_t at,
    uint8_t *low)
{
	const struct http_field *f;
	size_t i, k, o = 0;

	for (i = 0; i < n; i++) {
		f = &fields[i];
		if (h2_hop(buf + f->hf_name.off, f->hf_name.len))
			continue;
		for (k = 0; k < f->hf_name.len; k++)
			low[o + k] = (uint8_t)tolower(buf[f->hf_name.off + k]);
		nv[at].name = low + o;
		nv[at].namelen = f->hf_name.len;
		nv[at].value = (uint8_t *)(uintptr_t)(buf + f->hf_value.off);
		nv[at].valuelen = f->hf_value.len;
		nv[at].flags = r != NULL && h2_injected(r, buf + f->hf_name.off,
		    f->hf_name.len) ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE;
		o += f->hf_name.len;
		at++;
	}
	return at;
}

/* Trailers (hs_req once the body is in) onto the stream id of session s. */
static int
h2_trailers(nghttp2_session *s, int32_t id, const struct h2_fields *f)
{
	nghttp2_nv nv[H2_FIELDS_MAX];
	size_t i, n = 0;

	for (i = 0; i < f->hf_n; i++) {
		if (HF_NAME(f, i)[0] == ':' || h2_hop((const uint8_t *)HF_NAME(f, i),
		    f->hf_f[i].nl))
			continue;
		nv[n].name = (uint8_t *)(uintptr_t)HF_NAME(f, i);
		nv[n].namelen = f->hf_f[i].nl;
		nv[n].value = (uint8_t *)(uintptr_t)HF_VALUE(f, i);
		nv[n].valuelen = f->hf_f[i].vl;
		nv[n].flags = NGHTTP2_NV_FLAG_NONE;
		n++;
	}
	return nghttp2_submit_trailer(s, id, nv, n) == 0 ? 0 : -1;
}

/*
 * What a body's data provider answers after taking n bytes out of b: more to
 * come (n, or deferred while nothing is queued), or the end (eof), with the
 * trailers when there are any (submitted here, as nghttp2 allows).
 */
static ssize_t
h2_body_more(nghttp2_session *s, int32_t id, struct evbuffer *b, int eof,
    const struct h2_fields *trailers, uint32_t *flags, int n)
{
	if (evbuffer_get_length(b) > 0)
		return n;
	if (!eof)
		return n > 0 ? n : NGHTTP2_ERR_DEFERRED;
	*flags |= NGHTTP2_DATA_FLAG_EOF;
	if (trailers != NULL) {
		*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
		if (h2_trailers(s, id, trailers) == -1)
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	return n;
}

/*
 * DATA for the upstream: the request body as the VM sent it (scanned).  The
 * stream is found by id (a stream freed since has no user data: reset).
 */
static ssize_t
h2_req_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
    uint32_t *flags, nghttp2_data_source *src, void *arg)
{
	struct proxy_h2 *h2 = arg;
	struct h2_stream *hs = h2_up_stream(h2, id);
	size_t k;
	int n;

	if (hs == NULL || (n = evbuffer_remove(hs->hs_reqbody, buf, len)) < 0)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	if (n > 0) {
		/* Taken by the upstream: the VM may send as much again. */
		k = (size_t)n < hs->hs_req_raw ? (size_t)n : hs->hs_req_raw;
		hs->hs_req_raw -= k;
		(void)nghttp2_session_consume(h2->h2_vm, hs->hs_id, k);
		hs->hs_r.rq_up += (uint64_t)n;
	}
	return h2_body_more(s, id, hs->hs_reqbody, hs->hs_req_eof,
	    hs->hs_req_trailers ? &hs->hs_req : NULL, flags, n);
}

/* A request head is complete: check it and open its upstream stream. */
static void
h2_request_start(struct h2_stream *hs, int end_stream)
{
	struct proxy_h2 *h2 = hs->hs_h2;
	struct proxy_conn *c = h2->h2_conn;
	struct http_buf h1 = HTTP_BUF_INIT, head = HTTP_BUF_INIT;
	struct http_request *hq = NULL, *rq = NULL;
	struct proxy_refusal rf;
	nghttp2_data_provider prd;
	nghttp2_nv nv[HTTP_FIELDS_MAX + 8];
	uint8_t *low = NULL;
	const char *why;
	char auth[HOSTNAME_MAX + 8];
	enum http_res r;
	size_t n = 0;
	int32_t up;

	hs->hs_decided = 1;
	h2_touch(h2);
	if (hs->hs_req.hf_bad != NULL) {
		h2_reset(hs, NGHTTP2_PROTOCOL_ERROR, hs->hs_req.hf_bad);
		return;
	}
	if ((hq = malloc(sizeof(*hq))) == NULL || (rq = malloc(sizeof(*rq))) == NULL)
		goto internal;
	if ((why = h2_request_head(hs, end_stream, &h1)) != NULL) {
		if (why == PR_STR(HTTP_MALFORMED)) {
			h2_reset(hs, NGHTTP2_PROTOCOL_ERROR, why);
			goto out;
		}
		if (why == PR_STR(METHOD_NOT_ALLOWED))
			proxy_req_refusal(&rf, 405, "Method Not Allowed", why,
			    "no tunnels through inspection (CONNECT)");
		else if (why == PR_STR(HOST_MISMATCH))
			proxy_req_refusal(&rf, 421, "Misdirected Request", why,
			    ":authority and host disagree");
		else
			goto internal;
		h2_refuse(hs, &rf);
		goto out;
	}
	if ((r = http_request_parse(h1.hb_p, h1.hb_len, hq)) != HTTP_OK) {
		log_debug("connection %llu: stream %d refused: %s",
		    (unsigned long long)c->pc_id, hs->hs_id, hq->hq_why != NULL ?
		    hq->hq_why : http_res_str(r));
		if (r == HTTP_E_BAD || r == HTTP_NEED_MORE) {
			h2_reset(hs, NGHTTP2_PROTOCOL_ERROR, PR_STR(HTTP_MALFORMED));
			goto out;
		}
		proxy_req_refusal(&rf, http_res_status(r), "Refused",
		    http_res_reason(r), http_res_str(r));
		h2_refuse(hs, &rf);
		goto out;
	}
	if (proxy_req_start(&hs->hs_r, h1.hb_p, hq, NULL, NULL, &head, &rf) == -1) {
		h2_refuse(hs, &rf);
		goto out;
	}
	if (h2->h2_up_gone) {
		proxy_req_refusal(&rf, 502, "Bad Gateway", PR_STR(UPSTREAM_CLOSED),
		    "the upstream connection ended");
		h2_refuse(hs, &rf);
		goto out;
	}
	/* The rebuilt head parses (airlock never emits one it would refuse). */
	if (http_request_parse(head.hb_p, head.hb_len, rq) != HTTP_OK)
		goto internal;
	if (h2->h2_h1) {
		if (hs->hs_grpc) {
			/* Its status comes in trailers, which HTTP/1.1 drops. */
			proxy_req_refusal(&rf, 502, "Bad Gateway",
			    PR_STR(GRPC_NEEDS_H2), "the origin speaks HTTP/1.1 only: "
			    "gRPC needs HTTP/2 to the origin");
			h2_refuse(hs, &rf);
			goto out;
		}
		/* Sent as it is, when its turn comes (h2_h1_pump). */
		hs->hs_h1fr = rq->hq_framing;
		hs->hs_h1head = head;
		head = (struct http_buf)HTTP_BUF_INIT;
		scan_stream_init(&hs->hs_scan, hs->hs_keys->pk_ph_set);
		hs->hs_req_eof = end_stream;
		hs->hs_h1open = 1;
		hs->hs_queued = 1;
		TAILQ_INSERT_TAIL(&h2->h2_h1q, hs, hs_qentry);
		goto out;
	}
	if ((low = malloc(head.hb_len)) == NULL)
		goto internal;
	snprintf(auth, sizeof(auth), c->pc_dport == 443 ? "%s" : "%s:%u",
	    c->pc_name, c->pc_dport);
	nv[n++] = (nghttp2_nv){ (uint8_t *)":method", (uint8_t *)(uintptr_t)
	    (head.hb_p + rq->hq_method.off), 7, rq->hq_method.len, 0 };
	nv[n++] = (nghttp2_nv){ (uint8_t *)":scheme", (uint8_t *)"https", 7, 5, 0 };
	nv[n++] = (nghttp2_nv){ (uint8_t *)":authority", (uint8_t *)auth, 10,
	    strlen(auth), 0 };
	nv[n++] = (nghttp2_nv){ (uint8_t *)":path", (uint8_t *)(uintptr_t)
	    (head.hb_p + rq->hq_target.off), 5, rq->hq_target.len, 0 };
	n = h2_nv_fields(&hs->hs_r, head.hb_p, rq->hq_fields, rq->hq_nfields, nv, n,
	    low);
	if (hs->hs_te_trailers)
		nv[n++] = (nghttp2_nv){ (uint8_t *)"te", (uint8_t *)"trailers", 2, 8,
		    0 };
	scan_stream_init(&hs->hs_scan, hs->hs_keys->pk_ph_set);
	hs->hs_req_eof = end_stream;
	prd.source.ptr = hs;
	prd.read_callback = h2_req_read;
	up = nghttp2_submit_request(h2->h2_up, NULL, nv, n, end_stream ? NULL : &prd,
	    hs);
	if (up < 0)
		goto internal;
	hs->hs_up = up;
	goto out;
 internal:
	proxy_req_refusal(&rf, 500, "Internal Server Error", PR_STR(INTERNAL_ERROR),
	    "internal error");
	h2_refuse(hs, &rf);
 out:
	http_buf_free(&h1);
	http_buf_free(&head);
	free(low);
	free(hq);
	free(rq);
}

/*
 * Callbacks of the VM's session (server).
 */

static int
vm_begin_headers(nghttp2_session *s, const nghttp2_frame *fr, void *arg)
{
	struct proxy_h2 *h2 = arg;
	struct h2_stream *hs;

	h2->h2_nconts = 0;
	if (fr->hd.type != NGHTTP2_HEADERS)
		return 0;
	if ((hs = h2_vm_stream(h2, fr->hd.stream_id)) != NULL) {
		/* Trailers: the field list starts anew. */
		h2_fields_clear(&hs->hs_req);
		hs->hs_req_trailers = 1;
		return 0;
	}
	if (fr->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	if (h2->h2_closing)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	if ((hs = h2_stream_new(h2, fr->hd.stream_id)) == NULL ||
	    nghttp2_session_set_stream_user_data(s, fr->hd.stream_id, hs) != 0) {
		if (hs != NULL)
			h2_stream_free(hs);
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	return 0;
}

/*
 * CONTINUATION frames of one field block are counted (CVE-2024-27316: a block
 * without end, each frame tiny or empty); nghttp2's own limit applies too.
 */
static int
vm_begin_frame(nghttp2_session *s, const nghttp2_frame_hd *hd, void *arg)
{
	struct proxy_h2 *h2 = arg;

	if (hd->type == NGHTTP2_CONTINUATION && ++h2->h2_nconts > H2_CONTINUATIONS) {
		h2_goaway(h2, NGHTTP2_ENHANCE_YOUR_CALM, PR_STR(HTTP_HEAD_TOO_LARGE));
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	}
	return 0;
}

/* A field of either session: the request's (VM) or the response's (upstream). */
static int
h2_on_header(nghttp2_session *s, const nghttp2_frame *fr, const uint8_t *name,
    size_t nl, const uint8_t *value, size_t vl, uint8_t flags, void *arg)
{
	struct proxy_h2 *h2 = arg;
	struct h2_stream *hs = nghttp2_session_get_stream_user_data(s,
	    fr->hd.stream_id);

	if (hs == NULL)
		return 0;
	return h2_fields_add(s == h2->h2_vm ? &hs->hs_req : &hs->hs_res, name, nl,
	    value, vl) == -1 ? NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE : 0;
}

/* A field nghttp2 finds invalid is never dropped quietly: the stream is reset. */
static int
vm_invalid_header(nghttp2_session *s, const nghttp2_frame *fr,
    const uint8_t *name, size_t nl, const uint8_t *value, size_t vl,
    uint8_t flags, void *arg)
{
	return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

/* Request trailers: no placeholder in any form, names or values; then upstream. */
static void
h2_request_trailers(struct h2_stream *hs)
{
	struct proxy_refusal rf;
	struct scan_match m;
	const struct h2_fields *f = &hs->hs_req;
	char what[HTTP_METHOD_MAX + HOSTNAME_MAX + 4];
	size_t i;

	if (hs->hs_refused)
		return;
	if (f->hf_bad != NULL) {
		h2_reset(hs, NGHTTP2_PROTOCOL_ERROR, f->hf_bad);
		return;
	}
	for (i = 0; i < f->hf_n; i++) {
		if (!scan_find(hs->hs_keys->pk_ph_set, (const uint8_t *)HF_NAME(f, i),
		    f->hf_f[i].nl, &m) && !scan_find(hs->hs_keys->pk_ph_set,
		    (const uint8_t *)HF_VALUE(f, i), f->hf_f[i].vl, &m))
			continue;
		snprintf(what, sizeof(what), "%s %s", hs->hs_r.rq_method,
		    hs->hs_h2->h2_conn->pc_name);
		proxy_req_audit_exfil(&hs->hs_r, PR_STR(PLACEHOLDER_IN_HEADER), m.sm_id,
		    "trailer", 0);
		proxy_req_deny(&hs->hs_r, PR_STR(PLACEHOLDER_IN_HEADER), what, &rf);
		h2_refuse(hs, &rf);
		return;
	}
	hs->hs_req_eof = 1;
	if (hs->hs_up > 0)
		(void)nghttp2_session_resume_data(hs->hs_h2->h2_up, hs->hs_up);
}

static int
vm_frame_recv(nghttp2_session *s, const nghttp2_frame *fr, void *arg)
{
	struct proxy_h2 *h2 = arg;
	struct h2_stream *hs = h2_vm_stream(h2, fr->hd.stream_id);
	int end = (fr->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;

	switch (fr->hd.type) {
	case NGHTTP2_HEADERS:
		if (hs == NULL)
			break;
		if (!hs->hs_decided)
			h2_request_start(hs, end);
		else
			h2_request_trailers(hs);
		break;
	case NGHTTP2_DATA:
		if (fr->hd.length == 0 && !end &&
		    h2_flood(h2, &h2->h2_nempty) == -1)
			return 0;
		if (hs != NULL && end && !hs->hs_refused) {
			hs->hs_req_eof = 1;
			if (hs->hs_up > 0)
				(void)nghttp2_session_resume_data(h2->h2_up, hs->hs_up);
		}
		break;
	case NGHTTP2_SETTINGS:
		if (!(fr->hd.flags & NGHTTP2_FLAG_ACK))
			(void)h2_flood(h2, &h2->h2_nsettings);
		break;
	case NGHTTP2_PING:
		if (!(fr->hd.flags & NGHTTP2_FLAG_ACK))
			(void)h2_flood(h2, &h2->h2_npings);
		break;
	case NGHTTP2_RST_STREAM:
		/* Rapid reset (CVE-2023-44487): each one cost us an upstream stream. */
		(void)h2_flood(h2, &h2->h2_nresets);
		break;
	}
	return 0;
}

/* Request DATA: scanned, then queued for the upstream stream (flow-controlled). */
static int
vm_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *p,
    size_t n, void *arg)
{
	struct proxy_h2 *h2 = arg;
	struct h2_stream *hs = h2_vm_stream(h2, id);
	struct proxy_refusal rf;

	h2_touch(h2);
	if (hs == NULL || hs->hs_refused || (hs->hs_up <= 0 && !hs->hs_h1open)) {
		/* Nobody takes it: acknowledged at once. */
		(void)nghttp2_session_consume(s, id, n);
		return 0;
	}
	if (proxy_req_body_scan(&hs->hs_r, &hs->hs_scan, p, n, &rf) == -1) {
		(void)nghttp2_session_consume(s, id, n);
		h2_refuse(hs, &rf);
		return 0;
	}
	if (evbuffer_add(hs->hs_reqbody, p, n) == -1)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	hs->hs_req_raw += n;
	if (hs->hs_up > 0)
		(void)nghttp2_session_resume_data(h2->h2_up, hs->hs_up);
	return 0;
}

/*
 * What nghttp2 refuses on its own is audited here: a stream it resets (malformed,
 * RFC 9113 8.1.1: http_malformed), a GOAWAY ENHANCE_YOUR_CALM (its rapid-reset
 * limit: rate_limited).
 */
static int
vm_frame_send(nghttp2_session *s, const nghttp2_frame *fr, void *arg)
{
	struct proxy_h2 *h2 = arg;
	struct h2_stream *hs;
	struct proxy_req r;

	if (fr->hd.type == NGHTTP2_GOAWAY && !h2->h2_closing) {
		if (fr->goaway.error_code == NGHTTP2_ENHANCE_YOUR_CALM) {
			proxy_req_init(&r, h2->h2_conn, h2->h2_keys, -1);
			evutil_gettimeofday(&r.rq_t0, NULL);
			r.rq_up_proto = h2_up_proto(h2);
			proxy_req_audit(&r, PR_STR(RATE_LIMITED), -1);
		}
		h2_closing(h2);		/* nghttp2's own GOAWAY: not a second one */
		return 0;
	}
	if (fr->hd.type != NGHTTP2_RST_STREAM ||
	    (hs = h2_vm_stream(h2, fr->hd.stream_id)) == NULL)
		return 0;
	hs->hs_refused = 1;
	h2_audit(hs, fr->rst_stream.error_code == NGHTTP2_PROTOCOL_ERROR ||
	    !hs->hs_decided ? PR_STR(HTTP_MALFORMED) : NULL, hs->hs_r.rq_status);
	h2_cancel_up(hs);
	return 0;
}

static int
vm_stream_close(nghttp2_session *s, int32_t id, uint32_t code, void *arg)
{
	struct proxy_h2 *h2 = arg;
	struct h2_stream *hs = h2_vm_stream(h2, id);

	if (hs == NULL)
		return 0;
	if (hs->hs_decided && !hs->hs_audited)
		/* Ended by the VM (a reset) or complete: the record of what it got. */
		h2_audit(hs, NULL, hs->hs_r.rq_status);
	if (!hs->hs_res_eof)
		h2_cancel_up(hs);
	(void)nghttp2_session_set_stream_user_data(s, id, NULL);
	h2_stream_free(hs);
	return 0;
}

/*
 * Response side: the upstream's session (client).
 */

/* DATA for the VM: the response body, redacted; then the trailers, if any. */
static ssize_t
h2_res_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
    uint32_t *flags, nghttp2_data_source *src, void *arg)
{
	struct proxy_h2 *h2 = arg;
	struct h2_stream *hs = h2_vm_stream(h2, id);
	size_t k;
	int n;

	if (hs == NULL || (n = evbuffer_remove(hs->hs_resbody, buf, len)) < 0)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	hs->hs_r.rq_down += (uint64_t)n;
	if (evbuffer_get_length(hs->hs_resbody) == 0 && hs->hs_res_raw > 0) {
		/*
		 * All the origin sent is out (but what the redactor holds back):
		 * it may send a window's worth more.
		 */
		k = hs->hs_res_raw;
		hs->hs_res_raw = 0;
		/*
		 * A stream the origin has ended (hs_up 0) still holds the
		 * connection's window: without this, every response queued at
		 * its END_STREAM leaked its size, and the session stalled once
		 * 64 KiB had leaked (655 responses of 100 bytes: make bench h2).
		 */
		if (!h2->h2_up_gone && h2->h2_up != NULL) {
			if (hs->hs_up > 0)
				(void)nghttp2_session_consume(h2->h2_up, hs->hs_up, k);
			else
				(void)nghttp2_session_consume_connection(h2->h2_up, k);
		}
	}
	return h2_body_more(s, id, hs->hs_resbody, hs->hs_res_eof,
	    hs->hs_res_trailers ? &hs->hs_res : NULL, flags, n);
}

static int
up_begin_headers(nghttp2_session *s, const nghttp2_frame *fr, void *arg)
{
	struct h2_stream *hs = h2_up_stream(arg, fr->hd.stream_id);

	if (hs != NULL && fr->hd.type == NGHTTP2_HEADERS) {
		h2_fields_clear(&hs->hs_res);
		hs->hs_res_trailers = hs->hs_res_started;
	}
	return 0;
}

/* The upstream broke a response: 502 if none is out yet, else the stream is cut. */
static void
h2_bad_gateway(struct h2_stream *hs, const char *reason, const char *text)
{
	struct proxy_refusal rf;

	proxy_req_refusal(&rf, 502, "Bad Gateway", reason, text);
	h2_refuse(hs, &rf);
}

/*
 * Response trailers: values redacted as header values are, a secret's value as a
 * name cuts the stream (secret_in_field_name).  0 or -1.
 */
static int
h2_response_trailers(struct h2_stream *hs)
{
	struct h2_fields *f = &hs->hs_res, out;
	struct http_buf v = HTTP_BUF_INIT;
	struct scan_match m;
	size_t i;
	int rc = 0;

	if (f->hf_bad != NULL) {
		/* Trailers over the limits are never cut short quietly. */
		h2_reset(hs, NGHTTP2_INTERNAL_ERROR, PR_STR(UPSTREAM_HTTP_MALFORMED));
		return -1;
	}
	memset(&out, 0, sizeof(out));
	for (i = 0; i < f->hf_n && rc == 0; i++) {
		if (hs->hs_r.rq_redact && scan_find(hs->hs_keys->pk_val_set,
		    (const uint8_t *)HF_NAME(f, i), f->hf_f[i].nl, &m)) {
			proxy_req_audit_exfil(&hs->hs_r, PR_STR(SECRET_IN_FIELD_NAME),
			    m.sm_id, "trailer", 0);
			h2_reset(hs, NGHTTP2_INTERNAL_ERROR,
			    PR_STR(SECRET_IN_FIELD_NAME));
			rc = -1;
			break;
		}
		v.hb_len = 0;
		if (hs->hs_r.rq_redact) {
			if (scan_redact_feed(hs->hs_hred, (const uint8_t *)HF_VALUE(f, i),
			    f->hf_f[i].vl, &v) == -1 ||
			    scan_redact_finish(hs->hs_hred, &v) == -1)
				rc = -1;
		} else if (http_buf_add(&v, HF_VALUE(f, i), f->hf_f[i].vl) == -1)
			rc = -1;
		if (rc == 0 && h2_fields_add(&out, (const uint8_t *)HF_NAME(f, i),
		    f->hf_f[i].nl, v.hb_p, v.hb_len) == -1)
			rc = -1;
	}
	http_buf_free(&v);
	h2_fields_clear(f);
	*f = out;
	if (rc == -1 && !hs->hs_refused)
		h2_reset(hs, NGHTTP2_INTERNAL_ERROR, PR_STR(INTERNAL_ERROR));
	return rc;
}

/*
 * A final response head h1 (rs: its parse by the strict HTTP/1.1 parser), the
 * origin's own (HTTP/1.1 origin) or the one its HTTP/2 fields stand for: through
 * the checks and redaction of proxy_request.c, and out as HTTP/2 fields to the VM
 * (connection-specific ones and the framing never).  end_stream: no body follows.
 * 0, or -1 (the stream was answered or reset instead).
 */
static int
h2_response_submit(struct h2_stream *hs, const uint8_t *h1,
    struct http_response *rs, int end_stream)
{
	struct proxy_h2 *h2 = hs->hs_h2;
	struct http_buf head = HTTP_BUF_INIT;
	struct http_response *out = NULL;
	struct http_rewrite rw;
	struct proxy_refusal rf;
	nghttp2_data_provider prd;
	nghttp2_nv nv[HTTP_FIELDS_MAX + 2];
	char status[8];
	uint8_t *low = NULL;
	size_t n = 0;
	int rc = -1;

	hs->hs_r.rq_status = rs->hs_status;
	snprintf(status, sizeof(status), "%03d", rs->hs_status);
	if ((out = malloc(sizeof(*out))) == NULL)
		goto internal;
	if (hs->hs_r.rq_redact && hs->hs_hred == NULL && (hs->hs_hred =
	    scan_redact_new(hs->hs_keys->pk_val_set, proxy_req_redact_cb,
	    &hs->hs_r)) == NULL)
		goto internal;
	hs->hs_r.rq_hred = hs->hs_hred;
	memset(&rw, 0, sizeof(rw));
	if (proxy_req_response_check(&hs->hs_r, h1, rs, &rw, &rf) == -1) {
		h2_refuse(hs, &rf);
		goto out;
	}
	rw.rw_framing = HTTP_BODY_CLOSE;	/* no framing fields: HTTP/2 frames */
	if (http_response_rewrite(h1, rs, &rw, &head) == -1 ||
	    http_response_parse(head.hb_p, head.hb_len, HTTP_M_HEAD, out) != HTTP_OK ||
	    (low = malloc(head.hb_len)) == NULL) {
		h2_bad_gateway(hs, PR_STR(UPSTREAM_HTTP_MALFORMED),
		    "the upstream's response head could not be rebuilt");
		goto out;
	}
	nv[n++] = (nghttp2_nv){ (uint8_t *)":status", (uint8_t *)status, 7, 3, 0 };
	n = h2_nv_fields(NULL, head.hb_p, out->hs_fields, out->hs_nfields, nv, n, low);
	if (hs->hs_r.rq_redact && !end_stream && (hs->hs_red = scan_redact_new(
	    hs->hs_keys->pk_val_set, proxy_req_redact_cb, &hs->hs_r)) == NULL)
		goto internal;
	hs->hs_res_started = 1;
	hs->hs_res_eof = end_stream;
	prd.source.ptr = hs;
	prd.read_callback = h2_res_read;
	if (nghttp2_submit_response(h2->h2_vm, hs->hs_id, nv, n,
	    end_stream ? NULL : &prd) != 0)
		goto internal;
	rc = 0;
	goto out;
 internal:
	h2_bad_gateway(hs, PR_STR(INTERNAL_ERROR), "internal error");
 out:
	http_buf_free(&head);
	free(low);
	free(out);
	return rc;
}

/* The method of hs's request, as the response parser wants it (HEAD: no body). */
static enum http_method
h2_res_method(const struct h2_stream *hs)
{
	return strcmp(hs->hs_r.rq_method, "HEAD") == 0 ? HTTP_M_HEAD : HTTP_M_GET;
}

/*
 * A final response head from an HTTP/2 origin: written as the HTTP/1.1 head it
 * stands for, through the strict parser, then as any response (h2_response_submit).
 */
static void
h2_response_start(struct h2_stream *hs, int end_stream)
{
	struct h2_fields *f = &hs->hs_res;
	struct http_buf h1 = HTTP_BUF_INIT;
	struct http_response *rs = NULL;
	const char *status;
	size_t sl, i;

	h2_touch(hs->hs_h2);
	status = h2_get(f, ":status", &sl);
	if (f->hf_bad != NULL || status == NULL) {
		h2_bad_gateway(hs, PR_STR(UPSTREAM_HTTP_MALFORMED),
		    "the upstream's response was malformed");
		return;
	}
	if (sl == 3 && status[0] == '1') {
		/* Interim (100, 103): not passed on; the final head follows. */
		h2_fields_clear(f);
		return;
	}
	if ((rs = malloc(sizeof(*rs))) == NULL)
		goto internal;
	if (http_buf_add_str(&h1, "HTTP/1.1 ") == -1 ||
	    http_buf_add(&h1, status, sl) == -1 || http_buf_add_str(&h1, " \r\n") == -1)
		goto internal;
	for (i = 0; i < f->hf_n; i++)
		if (HF_NAME(f, i)[0] != ':' && h2_line(&h1, HF_NAME(f, i),
		    f->hf_f[i].nl, HF_VALUE(f, i), f->hf_f[i].vl) == -1)
			goto internal;
	if (http_buf_add(&h1, "\r\n", 2) == -1)
		goto internal;
	if (http_response_parse(h1.hb_p, h1.hb_len, h2_res_method(hs), rs) !=
	    HTTP_OK) {
		h2_bad_gateway(hs, PR_STR(UPSTREAM_HTTP_MALFORMED),
		    "the upstream's response was malformed");
		goto out;
	}
	(void)h2_response_submit(hs, h1.hb_p, rs, end_stream);
	goto out;
 internal:
	h2_bad_gateway(hs, PR_STR(INTERNAL_ERROR), "internal error");
 out:
	http_buf_free(&h1);
	free(rs);
}

/* The response body ended (END_STREAM from the origin): flush the redactor. */
static void
h2_response_end(struct h2_stream *hs)
{
	struct http_buf tail = HTTP_BUF_INIT;

	if (hs->hs_refused || !hs->hs_res_started)
		return;
	if (hs->hs_red != NULL) {
		if (scan_redact_finish(hs->hs_red, &tail) == -1 ||
		    evbuffer_add(hs->hs_resbody, tail.hb_p, tail.hb_len) == -1) {
			http_buf_free(&tail);
			h2_reset(hs, NGHTTP2_INTERNAL_ERROR, PR_STR(INTERNAL_ERROR));
			return;
		}
		http_buf_free(&tail);
	}
	hs->hs_res_eof = 1;
	(void)nghttp2_session_resume_data(hs->hs_h2->h2_vm, hs->hs_id);
}

static int
up_frame_recv(nghttp2_session *s, const nghttp2_frame *fr, void *arg)
{
	struct h2_stream *hs = h2_up_stream(arg, fr->hd.stream_id);
	int end = (fr->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;

	if (hs == NULL || hs->hs_refused)
		return 0;
	switch (fr->hd.type) {
	case NGHTTP2_HEADERS:
		if (!hs->hs_res_started) {
			h2_response_start(hs, end);
			break;
		}
		if (h2_response_trailers(hs) == 0 && end)
			h2_response_end(hs);
		break;
	case NGHTTP2_DATA:
		if (end)
			h2_response_end(hs);
		break;
	}
	return 0;
}

/*
 * Response body bytes p[n] of hs, redacted (when its rule redacts) into the VM's
 * queue.  0 or -1.
 */
static int
h2_res_queue(struct h2_stream *hs, const uint8_t *p, size_t n)
{
	struct http_buf out = HTTP_BUF_INIT;
	int rc;

	if (hs->hs_red == NULL)
		return evbuffer_add(hs->hs_resbody, p, n);
	rc = scan_redact_feed(hs->hs_red, p, n, &out) == -1 ? -1 :
	    evbuffer_add(hs->hs_resbody, out.hb_p, out.hb_len);
	http_buf_free(&out);
	return rc;
}

/* Response DATA: redacted into the VM's queue. */
static int
up_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *p,
    size_t n, void *arg)
{
	struct proxy_h2 *h2 = arg;
	struct h2_stream *hs = h2_up_stream(h2, id);

	h2_touch(h2);
	if (hs == NULL || hs->hs_refused || !hs->hs_res_started) {
		(void)nghttp2_session_consume(s, id, n);
		return 0;
	}
	if (h2_res_queue(hs, p, n) == -1) {
		(void)nghttp2_session_consume(s, id, n);
		h2_reset(hs, NGHTTP2_INTERNAL_ERROR, PR_STR(INTERNAL_ERROR));
		return 0;
	}
	hs->hs_res_raw += n;
	(void)nghttp2_session_resume_data(h2->h2_vm, hs->hs_id);
	return 0;
}

static int
up_stream_close(nghttp2_session *s, int32_t id, uint32_t code, void *arg)
{
	struct h2_stream *hs = h2_up_stream(arg, id);

	if (hs == NULL)
		return 0;
	if (!hs->hs_refused && !hs->hs_res_eof) {
		/* Reset or ended by the origin before the response was complete. */
		hs->hs_up = 0;
		h2_bad_gateway(hs, PR_STR(UPSTREAM_CLOSED),
		    "the upstream reset the stream");
	}
	hs->hs_up = 0;
	return 0;
}

/*
 * HTTP/1.1 origin (h2_h1): the streams' exchanges, one at a time, on the upstream
 * connection.
 */

/* The origin sent what no request asked for: a record of the connection's. */
static void
h2_h1_stray(struct proxy_h2 *h2)
{
	struct proxy_req r;

	proxy_req_init(&r, h2->h2_conn, h2->h2_keys, -1);
	evutil_gettimeofday(&r.rq_t0, NULL);
	r.rq_up_proto = h2_up_proto(h2);
	proxy_req_audit(&r, PR_STR(UPSTREAM_HTTP_MALFORMED), -1);
	log_info("connection %llu: the origin sent bytes no request asked for",
	    (unsigned long long)h2->h2_conn->pc_id);
	h2_h1_close(h2);
}

/* The exchange's response cannot be passed on: 502 or a reset, and no reuse. */
static void
h2_h1_malformed(struct proxy_h2 *h2, const char *why)
{
	struct h2_stream *hs = h2->h2_h1cur;

	log_info("connection %llu: stream %d: the origin's response refused: %s",
	    (unsigned long long)h2->h2_conn->pc_id, hs != NULL ? hs->hs_id : 0,
	    why != NULL ? why : "malformed");
	h2_h1_close(h2);
	if (hs != NULL)
		h2_bad_gateway(hs, PR_STR(UPSTREAM_HTTP_MALFORMED),
		    "the upstream's response was malformed");
}

/*
 * The request of hs onto the upstream: its head (once), then its body as the VM's
 * DATA comes, framed as the head says (Content-Length: as it is; else chunked;
 * request trailers were scanned and are dropped), while the output has room.
 * 0, or -1 (hs was reset, the connection closed).
 */
static int
h2_h1_send(struct proxy_h2 *h2, struct h2_stream *hs)
{
	struct proxy_conn *c = h2->h2_conn;
	struct evbuffer *o = bufferevent_get_output(c->pc_server);
	struct http_buf ch = HTTP_BUF_INIT;
	uint8_t buf[16384];
	size_t k;
	int n;

	if (hs->hs_h1head.hb_len > 0) {
		/* Held while its body comes and is scanned (H2_H1_HOLD). */
		if (!hs->hs_req_eof && evbuffer_get_length(hs->hs_reqbody) <
		    H2_H1_HOLD)
			return 0;
		if (proxy_evbuffer_add_secret(o, hs->hs_h1head.hb_p,
		    hs->hs_h1head.hb_len) == -1)
			goto internal;
		h2_count(c, 1, hs->hs_h1head.hb_len);
		http_buf_free(&hs->hs_h1head);
	}
	while (!hs->hs_h1body_done && evbuffer_get_length(o) < PROXY_RELAY_HIGH) {
		if (evbuffer_get_length(hs->hs_reqbody) == 0) {
			if (!hs->hs_req_eof)
				break;
			if (hs->hs_h1fr == HTTP_BODY_CHUNKED) {
				if (http_buf_add_last_chunk(&ch) == -1 ||
				    evbuffer_add(o, ch.hb_p, ch.hb_len) == -1)
					goto internal;
				h2_count(c, 1, ch.hb_len);
				http_buf_free(&ch);
			}
			hs->hs_h1body_done = 1;
			break;
		}
		/*
		 * Never more than the head announced (nghttp2 holds DATA to
		 * content-length; a head without a body frames nothing).
		 */
		if (hs->hs_h1fr != HTTP_BODY_CHUNKED && hs->hs_h1fr !=
		    HTTP_BODY_LENGTH) {
			h2_reset(hs, NGHTTP2_PROTOCOL_ERROR, PR_STR(HTTP_MALFORMED));
			return -1;
		}
		if ((n = evbuffer_remove(hs->hs_reqbody, buf, sizeof(buf))) <= 0)
			goto internal;
		k = (size_t)n < hs->hs_req_raw ? (size_t)n : hs->hs_req_raw;
		hs->hs_req_raw -= k;
		(void)nghttp2_session_consume(h2->h2_vm, hs->hs_id, k);
		hs->hs_r.rq_up += (uint64_t)n;
		if (hs->hs_h1fr == HTTP_BODY_CHUNKED) {
			if (http_buf_add_chunk(&ch, buf, (size_t)n) == -1 ||
			    evbuffer_add(o, ch.hb_p, ch.hb_len) == -1)
				goto internal;
			h2_count(c, 1, ch.hb_len);
			http_buf_free(&ch);
		} else {
			if (evbuffer_add(o, buf, (size_t)n) == -1)
				goto internal;
			h2_count(c, 1, (size_t)n);
		}
	}
	return 0;
 internal:
	http_buf_free(&ch);
	h2_reset(hs, NGHTTP2_INTERNAL_ERROR, PR_STR(INTERNAL_ERROR));
	return -1;
}

/* Response body bytes p[n] for hs: redacted into the VM's queue.  0 or -1. */
static int
h2_h1_feed(struct h2_stream *hs, const uint8_t *p, size_t n)
{
	if (n == 0)
		return 0;
	h2_touch(hs->hs_h2);
	if (h2_res_queue(hs, p, n) == -1) {
		h2_reset(hs, NGHTTP2_INTERNAL_ERROR, PR_STR(INTERNAL_ERROR));
		return -1;
	}
	(void)nghttp2_session_resume_data(hs->hs_h2->h2_vm, hs->hs_id);
	return 0;
}

/* The exchange's response is complete: the next may go, if the origin is clean. */
static void
h2_h1_done(struct proxy_h2 *h2, struct h2_stream *hs)
{
	struct evbuffer *in = bufferevent_get_input(h2->h2_conn->pc_server);

	h2->h2_h1cur = NULL;
	h2_response_end(hs);
	if (!hs->hs_h1body_done) {
		/* Answered before the request was whole: the rest is dropped. */
		hs->hs_h1open = 0;
		evbuffer_drain(hs->hs_reqbody, evbuffer_get_length(hs->hs_reqbody));
		(void)nghttp2_session_consume(h2->h2_vm, hs->hs_id, hs->hs_req_raw);
		hs->hs_req_raw = 0;
	}
	if (!hs->hs_h1body_done || h2->h2_h1last || h2->h2_h1eof)
		h2_h1_close(h2);	/* answered early, or the origin ends */
	else if (evbuffer_get_length(in) > 0)
		h2_h1_stray(h2);	/* bytes past the response's end */
}

/*
 * The origin's bytes for the exchange in progress: the response head through the
 * strict parser (interim 1xx heads skipped), then the body by its framing, while
 * the VM's queue for the stream has room.
 */
static void
h2_h1_read(struct proxy_h2 *h2)
{
	struct evbuffer *in = bufferevent_get_input(h2->h2_conn->pc_server);
	struct evbuffer_iovec v;
	struct http_response *rs;
	struct http_span data;
	struct h2_stream *hs;
	const uint8_t *p;
	size_t len, hl, take;
	enum http_res r;
	int rc;

	while ((hs = h2->h2_h1cur) != NULL && !h2->h2_up_gone) {
		len = evbuffer_get_length(in);
		if (hs->hs_refused) {
			h2_h1_close(h2);	/* nobody reads the rest */
			return;
		}
		if (h2->h2_h1head) {
			if (len == 0) {
				if (h2->h2_h1eof)
					h2_h1_close(h2);	/* upstream_closed */
				return;
			}
			if (len > HTTP_HEAD_MAX + 4)
				len = HTTP_HEAD_MAX + 4;
			if ((p = evbuffer_pullup(in, (ev_ssize_t)len)) == NULL) {
				h2_h1_malformed(h2, "out of memory");
				return;
			}
			r = http_head_find(p, len, &h2->h2_h1find, &hl);
			if (r == HTTP_NEED_MORE) {
				if (h2->h2_h1eof)
					h2_h1_malformed(h2, "a head cut short");
				return;
			}
			if (r != HTTP_OK) {
				h2_h1_malformed(h2, http_res_str(r));
				return;
			}
			if ((rs = malloc(sizeof(*rs))) == NULL) {
				h2_h1_malformed(h2, "out of memory");
				return;
			}
			if ((r = http_response_parse(p, hl, h2_res_method(hs), rs)) !=
			    HTTP_OK) {
				h2_h1_malformed(h2, rs->hs_why != NULL ? rs->hs_why :
				    http_res_str(r));
				free(rs);
				return;
			}
			h2->h2_h1find = 0;
			if (rs->hs_interim) {
				/* 100, 103: not passed on; the final head follows. */
				evbuffer_drain(in, hl);
				free(rs);
				continue;
			}
			h2->h2_h1head = 0;
			h2->h2_h1fr = rs->hs_framing;
			h2->h2_h1left = rs->hs_length;
			http_chunked_init(&h2->h2_h1ch);
			h2->h2_h1last = !rs->hs_keepalive ||
			    rs->hs_framing == HTTP_BODY_CLOSE;
			rc = h2_response_submit(hs, p, rs, rs->hs_framing ==
			    HTTP_BODY_NONE || (rs->hs_framing == HTTP_BODY_LENGTH &&
			    rs->hs_length == 0));
			free(rs);
			if (h2->h2_up_gone)
				return;
			evbuffer_drain(in, hl);
			if (rc == -1) {
				h2_h1_close(h2);
				return;
			}
			continue;
		}
		/* The body: held while the VM has a window's worth queued. */
		if (evbuffer_get_length(hs->hs_resbody) >= H2_WINDOW)
			return;
		switch (h2->h2_h1fr) {
		case HTTP_BODY_NONE:
			h2_h1_done(h2, hs);
			continue;
		case HTTP_BODY_LENGTH:
		case HTTP_BODY_CLOSE:
			if (h2->h2_h1fr == HTTP_BODY_LENGTH && h2->h2_h1left == 0) {
				h2_h1_done(h2, hs);
				continue;
			}
			if (len == 0) {
				if (h2->h2_h1eof && h2->h2_h1fr == HTTP_BODY_CLOSE)
					h2_h1_done(h2, hs);
				else if (h2->h2_h1eof)
					h2_h1_close(h2);	/* upstream_closed */
				return;
			}
			if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
				return;
			take = v.iov_len;
			if (h2->h2_h1fr == HTTP_BODY_LENGTH && take > h2->h2_h1left)
				take = (size_t)h2->h2_h1left;
			if (h2_h1_feed(hs, v.iov_base, take) == -1)
				return;
			evbuffer_drain(in, take);
			if (h2->h2_h1fr == HTTP_BODY_LENGTH)
				h2->h2_h1left -= take;
			continue;
		case HTTP_BODY_CHUNKED:
			if (len == 0) {
				if (h2->h2_h1eof)
					h2_h1_close(h2);	/* upstream_closed */
				return;
			}
			if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
				return;
			r = http_chunked_feed(&h2->h2_h1ch, v.iov_base, v.iov_len,
			    &take, &data);
			if (r == HTTP_E_BAD) {
				h2_h1_malformed(h2, h2->h2_h1ch.hc_why);
				return;
			}
			if (h2_h1_feed(hs, (const uint8_t *)v.iov_base + data.off,
			    data.len) == -1)
				return;
			evbuffer_drain(in, take);
			if (r == HTTP_OK)
				h2_h1_done(h2, hs);
			continue;
		}
	}
}

/* Streams waiting for an origin that is gone: refused unprocessed (retry safe). */
static void
h2_h1_refuse_queued(struct proxy_h2 *h2)
{
	struct h2_stream *hs;

	while ((hs = TAILQ_FIRST(&h2->h2_h1q)) != NULL) {
		h2_h1_unqueue(hs);
		hs->hs_refused = 1;
		h2_audit(hs, PR_STR(UPSTREAM_CLOSED), -1);
		/* RFC 9113 8.7: REFUSED_STREAM, nothing of it was processed. */
		(void)nghttp2_submit_rst_stream(h2->h2_vm, NGHTTP2_FLAG_NONE,
		    hs->hs_id, NGHTTP2_REFUSED_STREAM);
	}
}

/* What the exchanges can do now: send, read, the next one when one is done. */
static void
h2_h1_pump(struct proxy_h2 *h2)
{
	struct evbuffer *in = bufferevent_get_input(h2->h2_conn->pc_server);
	struct h2_stream *hs;

	while (!h2->h2_up_gone) {
		if (h2->h2_h1cur == NULL) {
			if (evbuffer_get_length(in) > 0) {
				h2_h1_stray(h2);	/* no request outstanding */
				return;
			}
			if (h2->h2_h1eof) {
				h2_h1_close(h2);
				return;
			}
			if ((hs = TAILQ_FIRST(&h2->h2_h1q)) == NULL)
				return;
			TAILQ_REMOVE(&h2->h2_h1q, hs, hs_qentry);
			hs->hs_queued = 0;
			h2->h2_h1cur = hs;
			h2->h2_h1head = 1;
			h2->h2_h1find = 0;
		}
		hs = h2->h2_h1cur;
		if (h2_h1_send(h2, hs) == -1)
			return;
		if (h2->h2_h1cur != hs)
			continue;	/* refused while its head was held */
		if (hs->hs_h1head.hb_len > 0) {
			/* Its head is held: whatever the origin says is unasked. */
			if (evbuffer_get_length(in) > 0)
				h2_h1_stray(h2);
			return;
		}
		h2_h1_read(h2);
		if (h2->h2_h1cur != NULL)
			return;		/* under way: more bytes will come */
	}
}

/* The reads of the origin stop while the exchange's queue to the VM is full. */
static int
h2_h1_full(const struct proxy_h2 *h2)
{
	return h2->h2_h1cur != NULL && !h2->h2_h1head &&
	    evbuffer_get_length(h2->h2_h1cur->hs_resbody) >= H2_WINDOW;
}

/*
 * I/O: the sessions' bytes through the two bufferevents.
 */

/*
 * The origin side's session holds injected values (its copy of a request's fields,
 * the HPACK-encoded frame before it is sent): every block it frees is wiped first.
 */
static void *
h2_wipe_malloc(size_t n, void *arg)
{
	return malloc(n);
}

static void
h2_wipe_free(void *p, void *arg)
{
	if (p != NULL) {
		OPENSSL_cleanse(p, malloc_usable_size(p));
		free(p);
	}
}

static void *
h2_wipe_calloc(size_t nmemb, size_t n, void *arg)
{
	return calloc(nmemb, n);
}

static void *
h2_wipe_realloc(void *p, size_t n, void *arg)
{
	size_t old;
	void *q;

	if (p == NULL)
		return malloc(n);
	if (n == 0) {
		h2_wipe_free(p, arg);
		return NULL;
	}
	/* Never realloc(): it may move the block and leave the old one unwiped. */
	if ((q = malloc(n)) == NULL)
		return NULL;
	old = malloc_usable_size(p);
	memcpy(q, p, old < n ? old : n);
	h2_wipe_free(p, arg);
	return q;
}

static nghttp2_mem h2_wipe_mem = { NULL, h2_wipe_malloc, h2_wipe_free,
    h2_wipe_calloc, h2_wipe_realloc };

/* What session s has to send, onto bev, while bev's output has room. */
static int
h2_send(struct proxy_h2 *h2, nghttp2_session *s, struct bufferevent *bev, int up)
{
	struct evbuffer *o = bufferevent_get_output(bev);
	const uint8_t *p;
	ssize_t n;
	int rc = 0, added = 0;

	while (evbuffer_get_length(o) < PROXY_RELAY_HIGH &&
	    (n = nghttp2_session_mem_send(s, &p)) != 0) {
		if (n < 0) {
			rc = -1;
			break;
		}
		/* Towards the origin a HEADERS frame may carry an injected value. */
		if ((up ? proxy_evbuffer_add_wiped(o, p, (size_t)n) :
		    evbuffer_add(o, p, (size_t)n)) == -1) {
			rc = -1;
			break;
		}
		added |= up;
		h2_count(h2->h2_conn, up, (size_t)n);
	}
	/* One wipe of the stack for the whole batch (proxy_evbuffer_add_secret). */
	if (added)
		proxy_stack_burn();
	return rc;
}

/* Feeds what bev's input holds into session s.  0, or nghttp2's error. */
static int
h2_recv(nghttp2_session *s, struct bufferevent *bev)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_iovec v[4];
	ssize_t r;
	int i, n;

	while (evbuffer_get_length(in) > 0) {
		n = evbuffer_peek(in, -1, NULL, v, 4);
		for (i = 0; i < n && i < 4; i++) {
			r = nghttp2_session_mem_recv(s, v[i].iov_base, v[i].iov_len);
			if (r < 0)
				return (int)r;
			evbuffer_drain(in, (size_t)r);
		}
	}
	return 0;
}

/* 1 once nothing is left to send to the VM (the TLS filter and its socket). */
static int
h2_flushed(struct proxy_conn *c)
{
	struct bufferevent *u = bufferevent_get_underlying(c->pc_client);

	return evbuffer_get_length(bufferevent_get_output(c->pc_client)) == 0 &&
	    (u == NULL || evbuffer_get_length(bufferevent_get_output(u)) == 0);
}

/* The driver: both sessions read and write what they can; the end when done. */
static void
h2_run(struct proxy_conn *c)
{
	struct proxy_h2 *h2 = c->pc_h2;
	struct h2_stream *hs;
	int r;

	if (!c->pc_paused && !h2->h2_closing &&
	    (r = h2_recv(h2->h2_vm, c->pc_client)) != 0) {
		/* A connection error (nghttp2 queued its GOAWAY), or a flood. */
		h2_goaway(h2, r == NGHTTP2_ERR_FLOODED ? NGHTTP2_ENHANCE_YOUR_CALM :
		    NGHTTP2_PROTOCOL_ERROR, r == NGHTTP2_ERR_FLOODED ?
		    PR_STR(RATE_LIMITED) : PR_STR(HTTP_MALFORMED));
		evbuffer_drain(bufferevent_get_input(c->pc_client), (size_t)-1);
	}
	if (h2->h2_h1)
		h2_h1_pump(h2);
	else {
		if (!h2->h2_up_gone && !c->pc_paused &&
		    h2_recv(h2->h2_up, c->pc_server) != 0)
			h2->h2_up_gone = 1;
		if (!h2->h2_up_gone && h2_send(h2, h2->h2_up, c->pc_server, 1) == -1)
			h2->h2_up_gone = 1;
		if (!h2->h2_up_gone && !nghttp2_session_want_read(h2->h2_up) &&
		    !nghttp2_session_want_write(h2->h2_up))
			h2->h2_up_gone = 1;
	}
	if (h2->h2_up_gone) {
		/* No origin any more: what is in flight gets its answer, then GOAWAY. */
		if (h2->h2_h1)
			h2_h1_refuse_queued(h2);
		TAILQ_FOREACH(hs, &h2->h2_streams, hs_entry)
			if (!hs->hs_refused && hs->hs_decided && !hs->hs_res_eof) {
				hs->hs_up = 0;
				h2_bad_gateway(hs, PR_STR(UPSTREAM_CLOSED),
				    "the upstream connection ended");
			}
		if (!h2->h2_closing)
			h2_goaway(h2, NGHTTP2_NO_ERROR, NULL);
	}
	if (h2_send(h2, h2->h2_vm, c->pc_client, 0) == -1) {
		proxy_conn_close(c, NULL, 1);
		return;
	}
	if (h2->h2_h1 && !h2->h2_up_gone && h2->h2_h1cur != NULL &&
	    evbuffer_get_length(bufferevent_get_input(c->pc_server)) > 0) {
		/* The VM took what was queued: the origin's buffered bytes go on. */
		h2_h1_pump(h2);
		if (h2_send(h2, h2->h2_vm, c->pc_client, 0) == -1) {
			proxy_conn_close(c, NULL, 1);
			return;
		}
	}
	if (!nghttp2_session_want_read(h2->h2_vm) &&
	    !nghttp2_session_want_write(h2->h2_vm)) {
		/* Done both ways: close once the last bytes are out. */
		if (h2_flushed(c)) {
			proxy_conn_close(c, NULL, 0);
			return;
		}
		if (!h2->h2_closing)
			h2_goaway(h2, NGHTTP2_NO_ERROR, NULL);
	}
	if (c->pc_paused || h2->h2_closing)
		bufferevent_disable(c->pc_client, EV_READ);
	else
		bufferevent_enable(c->pc_client, EV_READ);
	if (c->pc_paused || h2->h2_up_gone || (h2->h2_h1 && h2_h1_full(h2)))
		bufferevent_disable(c->pc_server, EV_READ);
	else
		bufferevent_enable(c->pc_server, EV_READ);
}

static void
h2_read_cb(struct bufferevent *bev, void *arg)
{
	h2_run(arg);
}

static void
h2_write_cb(struct bufferevent *bev, void *arg)
{
	struct proxy_conn *c = arg;

	if (c->pc_h2->h2_closing && bev == c->pc_client && h2_flushed(c) &&
	    !nghttp2_session_want_write(c->pc_h2->h2_vm)) {
		proxy_conn_close(c, NULL, 0);
		return;
	}
	h2_run(c);
}

static void
h2_vm_event(struct bufferevent *bev, short what, void *arg)
{
	/* The VM went away (EOF or error): its streams end with it. */
	proxy_conn_close(arg, NULL, (what & BEV_EVENT_EOF) == 0);
}

static void
h2_up_event(struct bufferevent *bev, short what, void *arg)
{
	struct proxy_conn *c = arg;

	bufferevent_disable(bev, EV_READ);
	if (c->pc_h2->h2_h1 && (what & BEV_EVENT_EOF) &&
	    !(what & BEV_EVENT_ERROR)) {
		/* What it sent before is read first (a body until close ends here). */
		c->pc_h2->h2_h1eof = 1;
		h2_run(c);
		return;
	}
	c->pc_h2->h2_up_gone = 1;
	h2_run(c);
}

static void
h2_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *c = arg;
	struct proxy_h2 *h2 = c->pc_h2;
	struct timeval now, d, tv;

	if (h2->h2_closing) {
		/* The GOAWAY's flush: polled, as the TLS filter's socket side. */
		tv.tv_sec = 0;
		tv.tv_usec = 20 * 1000;
		if (proxy_req_ms(&h2->h2_closing_since) > H2_CLOSE_WAIT * 1000) {
			proxy_conn_close(c, NULL, 1);
			return;
		}
		if (h2_flushed(c) && !nghttp2_session_want_write(h2->h2_vm)) {
			proxy_conn_close(c, NULL, 0);
			return;
		}
		evtimer_add(h2->h2_timer, &tv);
		h2_run(c);	/* may close c: nothing after it */
		return;
	}
	event_base_gettimeofday_cached(c->pc_worker->pw_base, &now);
	evutil_timersub(&now, &c->pc_last, &d);
	if (d.tv_sec >= PROXY_IDLE_TIMEOUT) {
		/* Idle (a zero window held open counts as idle: no DATA moves). */
		h2_goaway(h2, NGHTTP2_NO_ERROR, NULL);
		h2_run(c);
		return;
	}
	tv.tv_sec = PROXY_IDLE_TIMEOUT - d.tv_sec;
	tv.tv_usec = 0;
	evtimer_add(h2->h2_timer, &tv);
}

/*
 * Sessions.
 */

static int
h2_sessions(struct proxy_h2 *h2)
{
	nghttp2_session_callbacks *cb = NULL;
	nghttp2_option *opt = NULL;
	nghttp2_settings_entry vm_set[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, h2_limit(
		    h2->h2_conn->pc_limits.pl_h2_streams, H2_STREAMS) },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, H2_HEADER_LIST_MAX },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_WINDOW },
		{ NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
	};
	nghttp2_settings_entry up_set[] = {
		{ NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_WINDOW },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, H2_HEADER_LIST_MAX },
	};
	int rc = -1;

	if (nghttp2_option_new(&opt) != 0 || nghttp2_session_callbacks_new(&cb) != 0)
		goto out;
	nghttp2_option_set_no_auto_window_update(opt, 1);
	/* Backstops: the counters here answer first, with ENHANCE_YOUR_CALM. */
	nghttp2_option_set_max_continuations(opt, 2 * H2_CONTINUATIONS);
	nghttp2_option_set_stream_reset_rate_limit(opt, 4 * H2_RESETS_PER_SECOND,
	    4 * H2_RESETS_PER_SECOND);
	nghttp2_option_set_max_outbound_ack(opt, H2_CONTROL_PER_SECOND);
	nghttp2_option_set_max_settings(opt, 16);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, vm_begin_headers);
	nghttp2_session_callbacks_set_on_begin_frame_callback(cb, vm_begin_frame);
	nghttp2_session_callbacks_set_on_header_callback(cb, h2_on_header);
	nghttp2_session_callbacks_set_on_invalid_header_callback(cb,
	    vm_invalid_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, vm_frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, vm_data_chunk);
	nghttp2_session_callbacks_set_on_frame_send_callback(cb, vm_frame_send);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, vm_stream_close);
	if (nghttp2_session_server_new2(&h2->h2_vm, cb, h2, opt) != 0)
		goto out;
	nghttp2_session_callbacks_del(cb);
	cb = NULL;
	if (h2->h2_h1) {
		/* An HTTP/1.1 origin: no session towards it (h2_h1_pump). */
		if (nghttp2_submit_settings(h2->h2_vm, NGHTTP2_FLAG_NONE, vm_set,
		    sizeof(vm_set) / sizeof(vm_set[0])) != 0)
			goto out;
		rc = 0;
		goto out;
	}
	if (nghttp2_session_callbacks_new(&cb) != 0)
		goto out;
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, up_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, h2_on_header);
	nghttp2_session_callbacks_set_on_invalid_header_callback(cb,
	    vm_invalid_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, up_frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, up_data_chunk);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, up_stream_close);
	if (nghttp2_session_client_new3(&h2->h2_up, cb, h2, opt, &h2_wipe_mem) != 0)
		goto out;
	if (nghttp2_submit_settings(h2->h2_vm, NGHTTP2_FLAG_NONE, vm_set,
	    sizeof(vm_set) / sizeof(vm_set[0])) != 0 ||
	    nghttp2_submit_settings(h2->h2_up, NGHTTP2_FLAG_NONE, up_set,
	    sizeof(up_set) / sizeof(up_set[0])) != 0)
		goto out;
	rc = 0;
 out:
	nghttp2_session_callbacks_del(cb);
	nghttp2_option_del(opt);
	return rc;
}

/* c's engine over its two bufferevents (TLS, or in memory for the test seam). */
static int
h2_attach(struct proxy_conn *c, const struct proxy_tls_check *tc, int h1)
{
	struct proxy_h2 *h2;
	struct timeval tv = { PROXY_IDLE_TIMEOUT, 0 };

	if ((h2 = calloc(1, sizeof(*h2))) == NULL)
		return -1;
	h2->h2_conn = c;
	h2->h2_h1 = h1;
	TAILQ_INIT(&h2->h2_streams);
	TAILQ_INIT(&h2->h2_h1q);
	c->pc_h2 = h2;
	if ((h2->h2_keys = proxy_keys_get()) == NULL || h2_sessions(h2) == -1 ||
	    (h2->h2_timer = evtimer_new(c->pc_worker->pw_base, h2_timer_cb,
	    c)) == NULL || evtimer_add(h2->h2_timer, &tv) == -1) {
		proxy_h2_free(c);
		return -1;
	}
	if (tc != NULL) {
		/* The upstream SSL reports to our copy from now on (proxy_tls.c). */
		h2->h2_tc = *tc;
		h2->h2_tc.tc_keys = h2->h2_keys;
		if (proxy_tls_client_rebind(bufferevent_openssl_get_ssl(c->pc_server),
		    &h2->h2_tc) == -1) {
			proxy_h2_free(c);
			return -1;
		}
	}
	c->pc_mode = &proxy_mode_h2;
	h2_touch(h2);
	bufferevent_setcb(c->pc_client, h2_read_cb, h2_write_cb, h2_vm_event, c);
	bufferevent_setcb(c->pc_server, h2_read_cb, h2_write_cb, h2_up_event, c);
	bufferevent_setwatermark(c->pc_client, EV_WRITE, PROXY_RELAY_LOW, 0);
	bufferevent_setwatermark(c->pc_server, EV_WRITE, PROXY_RELAY_LOW, 0);
	bufferevent_enable(c->pc_client, EV_READ | EV_WRITE);
	bufferevent_enable(c->pc_server, EV_READ | EV_WRITE);
	return 0;
}

/*
 * Entry points (proxy_path.h).
 */

int
proxy_h2_offered(struct proxy_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->pc_client);
	struct peek_tls t;
	size_t len = evbuffer_get_length(in), i;
	const uint8_t *p;

	if (len > PEEK_TLS_MAX)
		len = PEEK_TLS_MAX;
	if ((p = evbuffer_pullup(in, (ev_ssize_t)len)) == NULL ||
	    peek_tls_client_hello(p, len, &t) != PEEK_OK)
		return 0;
	for (i = 0; i < t.pt_nalpn; i++)
		if (strcmp(t.pt_alpn[i], "h2") == 0)
			return 1;
	return 0;
}

int
proxy_h2_start(struct proxy_conn *c, const struct proxy_tls_check *tc)
{
	/*
	 * The origin verified (inspect allows h2 towards the VM only then); which
	 * protocol it chose, its SSL says: h2, else HTTP/1.1 (http/1.1, no ALPN).
	 * Never a connection without TLS: plain HTTP never gets here.
	 */
	if (c->pc_proto != POLICY_PROTO_TLS || c->pc_server == NULL ||
	    bufferevent_openssl_get_ssl(c->pc_server) == NULL)
		return -1;
	if (h2_attach(c, tc, !proxy_tls_alpn_is_h2(bufferevent_openssl_get_ssl(
	    c->pc_server))) == -1)
		return -1;
	c->pc_state = PC_INSPECT;
	/*
	 * The first run is deferred: the caller still lets go of its own state, and
	 * a run may close c.  The VM's preface may be buffered already.
	 */
	bufferevent_trigger(c->pc_client, EV_READ, BEV_TRIG_IGNORE_WATERMARKS |
	    BEV_TRIG_DEFER_CALLBACKS);
	return 0;
}

static void
proxy_h2_free(struct proxy_conn *c)
{
	struct proxy_h2 *h2 = c->pc_h2;
	struct h2_stream *hs;

	if (h2 == NULL)
		return;
	/* c's bufferevents are gone already: nothing of the origin's is touched. */
	h2->h2_h1cur = NULL;
	h2->h2_up_gone = 1;
	/* Streams still open: each gets its record (what it got so far). */
	while ((hs = TAILQ_FIRST(&h2->h2_streams)) != NULL) {
		if (hs->hs_decided)
			h2_audit(hs, NULL, hs->hs_r.rq_status);
		h2_stream_free(hs);
	}
	nghttp2_session_del(h2->h2_vm);
	nghttp2_session_del(h2->h2_up);
	if (h2->h2_timer != NULL)
		event_free(h2->h2_timer);
	proxy_keys_put(h2->h2_keys);
	free(h2);
	c->pc_h2 = NULL;
}

static int
proxy_h2_recheck(struct proxy_conn *c, const struct policy_verdict *v)
{
	/* As inspect: every stream is checked itself, while the rule inspects. */
	return v->pv_rule != NULL && v->pv_tls == POLICY_TLS_INSPECT ? 0 : -1;
}

static void
proxy_h2_resume(struct proxy_conn *c)
{
	h2_run(c);
}

static void
proxy_h2_server_event(struct proxy_conn *c, short what)
{
	/* Never: the upstream was connected before the engine took over. */
}

const struct proxy_mode proxy_mode_h2 = {
	.pm_name = "h2",
	.pm_start = NULL,		/* entered from inspect (proxy_h2_start) */
	.pm_server_bev = NULL,
	.pm_server_event = proxy_h2_server_event,
	.pm_recheck = proxy_h2_recheck,
	.pm_free = proxy_h2_free,
	.pm_resume = proxy_h2_resume,
};

/*
 * Test seam, for tests/fuzz/fuzz_h2.c only (the daemon never calls it): the engine
 * over two in-memory bufferevents, vm (the VM's decrypted stream) and origin (the
 * origin's), as after both handshakes chose h2.  c is as proxy_conn_decide() leaves
 * an inspected connection; c owns vm and origin from here.  0, or -1 (c closed).
 */
int
proxy_h2_attach_test(struct proxy_conn *c, struct bufferevent *vm,
    struct bufferevent *origin, int h1)
{
	c->pc_client = vm;
	c->pc_server = origin;
	c->pc_mode = &proxy_mode_h2;
	if (h2_attach(c, NULL, h1) == -1) {
		proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
		return -1;
	}
	c->pc_state = PC_INSPECT;
	h2_run(c);
	return 0;
}
