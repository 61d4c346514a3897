/*
 * proxy/proxy_request.h: one inspected request, as both request engines see it:
 * HTTP/1.1 (proxy_inspect.c) and HTTP/2 (proxy_h2.c, one per stream).  The checks
 * of a request head (Host, method, path, policy, placeholders), the head rebuilt
 * for the origin (injection, hop-by-hop and identity fields dropped, framing), the
 * checks of a response head (compression, a secret as a field name or in the
 * reason phrase, header values redacted), the 403 text and the audit records
 * ("request", "exfil").  The engines differ in framing only: an HTTP/2 stream's
 * head is given here as the HTTP/1.1 head it stands for (proxy_h2.c builds it and
 * parses it with the same strict parser), so no request gets fewer checks over
 * HTTP/2 than over HTTP/1.1.  Below both engines in the connection path
 * (proxy_path.h); calls only down.
 */
#ifndef AIRLOCK_PROXY_REQUEST_H
#define AIRLOCK_PROXY_REQUEST_H

#include <sys/time.h>

#include <stdint.h>

#include "audit.h"
#include "proxy_http.h"
#include "proxy_scan.h"

struct proxy_conn;
struct proxy_keys;
struct proxy_policy;
struct policy_rule;
struct scan_redact;

#define PROXY_REQ_TEXT_MAX	496	/* a refusal's text */

/* One request (HTTP/1.1) or stream (HTTP/2) from its head to its record. */
struct proxy_req {
	struct proxy_conn	*rq_conn;
	struct proxy_keys	*rq_keys;	/* the engine's, in force at the head */
	int32_t			 rq_stream;	/* HTTP/2 stream id; 0: HTTP/1.1,
						   -1: HTTP/2, the connection */
	struct proxy_policy	*rq_pp;		/* policy that decided it (held) */
	const struct policy_rule *rq_rule;
	int			 rq_would_deny;
	char			 rq_wd_reason[32];
	char			 rq_method[HTTP_METHOD_MAX + 1];
	char			*rq_path;	/* for the audit record (owned) */
	/* what the VM asked for, kept for a denial's record only (owned) */
	char			*rq_asked_host;		/* Host / :authority as sent */
	char			*rq_asked_target;	/* an absolute-form target */
	const char		*rq_inject[AUDIT_INJECT_MAX + 1];
	size_t			 rq_ninject;
	int			 rq_redact;	/* responses are scanned */
	int			 rq_websocket;
	struct timeval		 rq_t0;
	uint64_t		 rq_up;
	uint64_t		 rq_down;
	int			 rq_status;
	uint64_t		 rq_redacted;
	int			 rq_redacted_id;	/* a secret that was redacted */
	struct scan_redact	*rq_hred;	/* header values (the engine's) */
	const char		*rq_up_proto;	/* HTTP/2: "h2" or "http/1.1" towards
						   the origin (static); NULL: none */
};

/*
 * Keeps what the VM sent for the record of a refused request: the Host value (or
 * :authority) and, when not NULL, an absolute-form request-target, its query cut
 * unless audit.log_query (as the path's is).
 */
void	proxy_req_asked(struct proxy_req *r, const void *host, size_t hostlen,
	    const void *target, size_t targetlen);

/* What to answer a refused request with. */
struct proxy_refusal {
	int		 rf_status;
	const char	*rf_phrase;
	const char	*rf_reason;	/* the audit reason code */
	char		 rf_text[PROXY_REQ_TEXT_MAX];
};

/* Milliseconds, microseconds since t0. */
long long proxy_req_ms(const struct timeval *t0);
long long proxy_req_us(const struct timeval *t0);
/* c's sandbox name, "-" for none. */
const char *proxy_req_sandbox(const struct proxy_conn *c);

/* r as before any head (keys: the engine's image, not held). */
void	proxy_req_init(struct proxy_req *r, struct proxy_conn *c,
	    struct proxy_keys *keys, int32_t stream);
/* Forgets r's request (after its record): the policy reference, the path. */
void	proxy_req_reset(struct proxy_req *r);

/* The "request" record: reason NULL for an allowed one. */
void	proxy_req_audit(struct proxy_req *r, const char *reason, int status);
/* An "exfil" record: a placeholder blocked (count 0), or count values redacted. */
void	proxy_req_audit_exfil(struct proxy_req *r, const char *reason, int id,
	    const char *where, long long count);
/* A policy-style 403 into rf: sandbox, policy, rule and reason in the text. */
void	proxy_req_deny(struct proxy_req *r, const char *reason, const char *what,
	    struct proxy_refusal *rf);
/* rf as a plain refusal. */
void	proxy_req_refusal(struct proxy_refusal *rf, int status, const char *phrase,
	    const char *reason, const char *text);

/*
 * The request head h (hq: its parse) is in: every check, then the head for the
 * origin into *head.  fail/fail_why: the upstream was refused (verification), the
 * answer is a 502 with them.  0: send *head; -1: refused, *rf says how (records
 * written: exfil; the request record is the caller's, with rf_reason).
 */
int	proxy_req_start(struct proxy_req *r, const uint8_t *h,
	    const struct http_request *hq, const char *fail, const char *fail_why,
	    struct http_buf *head, struct proxy_refusal *rf);

/*
 * Body bytes p[n] of the request through its placeholder stream: 0, or -1 with the
 * refusal in *rf (exfil record written).
 */
int	proxy_req_body_scan(struct proxy_req *r, struct scan_stream *s,
	    const uint8_t *p, size_t n, struct proxy_refusal *rf);

/*
 * A response head rh (rs: its parse) to a request of r: what cannot go on (a
 * compressed body that must be scanned, an unasked-for 101, a secret's value as a
 * field name: -1, 502 in *rf) and what is dropped (a reason phrase holding a
 * secret).  Then, when r redacts, rw's value hook is set to redact header values
 * through r->rq_hred (which the caller made).  0 or -1.
 */
int	proxy_req_response_check(struct proxy_req *r, const uint8_t *rh,
	    struct http_response *rs, struct http_rewrite *rw,
	    struct proxy_refusal *rf);
/* The redactors' match callback (arg: the struct proxy_req): counts for the record. */
void	proxy_req_redact_cb(void *arg, const struct scan_match *m);

#endif
