/*
 * proxy/proxy_request.c: the per-request checks and records that both request
 * engines share (proxy_request.h): HTTP/1.1 (proxy_inspect.c) and HTTP/2
 * (proxy_h2.c).  Moved here from proxy_inspect.c unchanged in what they check;
 * the order of the checks, and why each is where it is, is described at the top
 * of proxy_inspect.c.
 */
#include <sys/time.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/util.h>

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
#include "proxy_scan.h"
#include "proxy_reason.h"
#include "proxy_request.h"

#define RQ_IDS_MAX	16
#define RQ_INJECT_MAX	16	/* inject entries of a rule (policy) */

long long
proxy_req_ms(const struct timeval *t0)
{
	return proxy_req_us(t0) / 1000;
}

long long
proxy_req_us(const struct timeval *t0)
{
	struct timeval now, d;

	evutil_gettimeofday(&now, NULL);
	evutil_timersub(&now, t0, &d);
	return (long long)d.tv_sec * 1000000 + d.tv_usec;
}

const char *
proxy_req_sandbox(const struct proxy_conn *c)
{
	return c->pc_sandbox != NULL ? c->pc_sandbox->ps_rec.sb_name : "-";
}

void
proxy_req_init(struct proxy_req *r, struct proxy_conn *c, struct proxy_keys *keys,
    int32_t stream)
{
	memset(r, 0, sizeof(*r));
	r->rq_conn = c;
	r->rq_keys = keys;
	r->rq_stream = stream;
	r->rq_status = -1;
	r->rq_redacted_id = -1;
}

void
proxy_req_reset(struct proxy_req *r)
{
	free(r->rq_path);
	r->rq_path = NULL;
	free(r->rq_asked_host);
	free(r->rq_asked_target);
	r->rq_asked_host = r->rq_asked_target = NULL;
	if (r->rq_pp != NULL)
		proxy_policy_put(r->rq_pp);
	r->rq_pp = NULL;
	r->rq_rule = NULL;
	r->rq_would_deny = 0;
	r->rq_method[0] = '\0';
	r->rq_ninject = 0;
	r->rq_redact = 0;
	r->rq_websocket = 0;
	r->rq_up = r->rq_down = 0;
	r->rq_status = -1;
	r->rq_redacted = 0;
	r->rq_redacted_id = -1;
}

/* The fields every record of r shares: who, where, what; HTTP/2 adds its stream. */
static size_t
rq_record(struct proxy_req *r, struct audit_record *ar, char *src, size_t srclen,
    char *dst, size_t dstlen, struct audit_kv *kv)
{
	struct proxy_conn *c = r->rq_conn;
	size_t n = 0;

	ar->ar_sandbox = proxy_req_sandbox(c);
	ar->ar_src = proxy_conn_addrport(&c->pc_src, c->pc_sport, src, srclen);
	snprintf(dst, dstlen, "%s:%u", c->pc_name, c->pc_dport);
	ar->ar_dst = dst;
	ar->ar_tls = c->pc_proto == POLICY_PROTO_TLS ? "inspect" : NULL;
	ar->ar_method = r->rq_method[0] != '\0' ? r->rq_method : NULL;
	ar->ar_path = r->rq_path;
	if (r->rq_stream != 0)
		kv[n++] = (struct audit_kv){ .ak_key = "protocol", .ak_str = "h2" };
	if (r->rq_stream > 0)
		kv[n++] = (struct audit_kv){ .ak_key = "stream",
		    .ak_num = r->rq_stream };
	if (r->rq_stream != 0 && r->rq_up_proto != NULL)
		kv[n++] = (struct audit_kv){ .ak_key = "upstream_protocol",
		    .ak_str = r->rq_up_proto };
	return n;
}

void
proxy_req_asked(struct proxy_req *r, const void *host, size_t hostlen,
    const void *target, size_t targetlen)
{
	const char *q;

	if (host != NULL && hostlen > 0 && r->rq_asked_host == NULL)
		r->rq_asked_host = proxy_asked_dup(host, hostlen);
	if (target != NULL && targetlen > 0 && r->rq_asked_target == NULL) {
		if (!proxy_config()->audit_log_query &&
		    (q = memchr(target, '?', targetlen)) != NULL)
			targetlen = (size_t)(q - (const char *)target);
		r->rq_asked_target = proxy_asked_dup(target, targetlen);
	}
}

/* The request record: method, path, status, bytes, time, rule, injected names. */
void
proxy_req_audit(struct proxy_req *r, const char *reason, int status)
{
	struct proxy_conn *c = r->rq_conn;
	struct audit_record ar = AUDIT_RECORD_INIT;
	struct audit_kv kv[5];
	char src[NETADDR_STRLEN + 8], dst[HOSTNAME_MAX + 16];
	long long us;

	ar.ar_event = AUDIT_EV_REQUEST;
	ar.ar_nextra = rq_record(r, &ar, src, sizeof(src), dst, sizeof(dst), kv);
	/* A denial says what the VM sent, beside the name it reached for (dst). */
	if (reason != NULL && r->rq_asked_host != NULL)
		kv[ar.ar_nextra++] = (struct audit_kv){ .ak_key = "host",
		    .ak_str = r->rq_asked_host };
	if (reason != NULL && r->rq_asked_target != NULL)
		kv[ar.ar_nextra++] = (struct audit_kv){ .ak_key = "target",
		    .ak_str = r->rq_asked_target };
	ar.ar_extra = ar.ar_nextra > 0 ? kv : NULL;
	ar.ar_status = status;
	ar.ar_decision = reason != NULL ? "deny" : "allow";
	ar.ar_rule = r->rq_rule != NULL ? r->rq_rule->pr_id :
	    (c->pc_rule[0] != '\0' ? c->pc_rule : NULL);
	ar.ar_rule_file = r->rq_rule != NULL ? r->rq_rule->pr_file :
	    (ar.ar_rule != NULL ? c->pc_rule_file : NULL);
	ar.ar_reason = reason != NULL ? reason :
	    (r->rq_would_deny ? r->rq_wd_reason : NULL);
	ar.ar_would_deny = reason == NULL && r->rq_would_deny;
	r->rq_inject[r->rq_ninject] = NULL;
	ar.ar_inject = r->rq_ninject > 0 ? r->rq_inject : NULL;
	ar.ar_bytes_up = (long long)r->rq_up;
	ar.ar_bytes_down = (long long)r->rq_down;
	us = proxy_req_us(&r->rq_t0);
	ar.ar_ms = us / 1000;
	ar.ar_aggregate = proxy_audit_agg(reason);	/* denials only */
	if (c->pc_sandbox != NULL) {
		proxy_sb_stats_request(&c->pc_sandbox->ps_stats, reason == NULL);
		proxy_sb_stats_denial(&c->pc_sandbox->ps_stats, reason);
	}
	proxy_hist_observe(PH_REQUEST, us);
	if (proxy_audit() != NULL && audit_write(proxy_audit(), &ar) == -1)
		log_warn("audit write (connection %llu)",
		    (unsigned long long)c->pc_id);
}

/* An exfil record: a placeholder blocked, or a secret's value redacted. */
void
proxy_req_audit_exfil(struct proxy_req *r, const char *reason, int id,
    const char *where, long long count)
{
	struct proxy_conn *c = r->rq_conn;
	struct audit_record ar = AUDIT_RECORD_INIT;
	struct audit_kv kv[6];
	char src[NETADDR_STRLEN + 8], dst[HOSTNAME_MAX + 16];
	size_t n;

	ar.ar_event = AUDIT_EV_EXFIL;
	n = rq_record(r, &ar, src, sizeof(src), dst, sizeof(dst), kv);
	/* A redaction lets the (redacted) response through: no decision. */
	ar.ar_decision = count > 0 ? NULL : "deny";
	ar.ar_rule = r->rq_rule != NULL ? r->rq_rule->pr_id : NULL;
	ar.ar_rule_file = r->rq_rule != NULL ? r->rq_rule->pr_file : NULL;
	ar.ar_reason = reason;
	if (proxy_keys_secret_name(r->rq_keys, id) != NULL)
		kv[n++] = (struct audit_kv){ .ak_key = "secret",
		    .ak_str = proxy_keys_secret_name(r->rq_keys, id) };
	if (where != NULL)
		kv[n++] = (struct audit_kv){ .ak_key = "where", .ak_str = where };
	if (count > 0)
		kv[n++] = (struct audit_kv){ .ak_key = "count", .ak_num = count };
	ar.ar_extra = kv;
	ar.ar_nextra = n;
	if (c->pc_sandbox != NULL)
		proxy_sb_stats_exfil(&c->pc_sandbox->ps_stats);
	if (proxy_audit() != NULL && audit_write(proxy_audit(), &ar) == -1)
		log_warn("audit write (connection %llu)",
		    (unsigned long long)c->pc_id);
}

void
proxy_req_refusal(struct proxy_refusal *rf, int status, const char *phrase,
    const char *reason, const char *text)
{
	rf->rf_status = status;
	rf->rf_phrase = phrase;
	rf->rf_reason = reason;
	snprintf(rf->rf_text, sizeof(rf->rf_text), "%s", text);
}

void
proxy_req_deny(struct proxy_req *r, const char *reason, const char *what,
    struct proxy_refusal *rf)
{
	rf->rf_status = 403;
	rf->rf_phrase = "Forbidden";
	rf->rf_reason = reason;
	snprintf(rf->rf_text, sizeof(rf->rf_text), "%s denied by sandbox %s, policy "
	    "%s, rule %s: %s", what, proxy_req_sandbox(r->rq_conn), r->rq_pp != NULL ?
	    r->rq_pp->pp_policy->p_name : "-", r->rq_rule != NULL &&
	    r->rq_rule->pr_id != NULL ? r->rq_rule->pr_id : "(none)", reason);
}

/*
 * Request side.
 */

/* Does the rule inject secret index id (and does the vault bind it to this host)? */
static int
rq_secret_allowed(struct proxy_req *r, int id)
{
	struct proxy_conn *c = r->rq_conn;
	const struct proxy_secret *s;
	size_t i;

	if (id < 0 || (size_t)id >= r->rq_keys->pk_nsecrets || r->rq_rule == NULL ||
	    c->pc_proto != POLICY_PROTO_TLS)
		return 0;
	s = &r->rq_keys->pk_secrets[id];
	for (i = 0; i < r->rq_rule->pr_ninject; i++)
		if (strcmp(r->rq_rule->pr_inject[i].pi_secret, s->ps_name) == 0)
			return proxy_secret_allows_host(s, c->pc_name);
	return 0;
}

/*
 * The inject entry of the rule that puts secret id (any secret: id -1) into the
 * field called name[namelen], or -1.
 */
static int
rq_inject_entry(struct proxy_req *r, int id, const uint8_t *name, size_t namelen)
{
	const struct policy_rule *pr = r->rq_rule;
	const char *h;
	size_t i;

	for (i = 0; pr != NULL && i < pr->pr_ninject && i < RQ_INJECT_MAX; i++) {
		h = pr->pr_inject[i].pi_header;
		if ((id < 0 || strcmp(pr->pr_inject[i].pi_secret,
		    r->rq_keys->pk_secrets[id].ps_name) == 0) &&
		    strlen(h) == namelen && strncasecmp(h, (const char *)name,
		    namelen) == 0)
			return (int)i;
	}
	return -1;
}

/*
 * The header-value hook of http_request_rewrite(): in a field that an inject entry
 * names (and the VM wrote with the placeholder: the others are replaced by the
 * template), placeholders become values.  rq_head_placeholders() has refused
 * every placeholder that may not be replaced; any other field is kept as it is.
 */
static int
rq_subst_value(void *arg, const uint8_t *name, size_t namelen,
    const uint8_t *value, size_t valuelen, struct http_buf *out)
{
	struct proxy_req *r = arg;

	if (rq_inject_entry(r, -1, name, namelen) == -1)
		return 0;
	return scan_subst_value(r->rq_keys->pk_ph_set, value, valuelen, out, NULL,
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
rq_head_placeholders(struct proxy_req *r, const uint8_t *h,
    const struct http_request *rq, const char **why, int *id, uint32_t *supplied)
{
	const struct scan_set *set = r->rq_keys->pk_ph_set;
	struct http_buf scratch = HTTP_BUF_INIT;
	struct scan_match m;
	const struct http_field *f;
	int ids[RQ_IDS_MAX], n, rc = 0, e;
	size_t i, k;

	*why = NULL;
	*id = -1;
	*supplied = 0;
	if (r->rq_keys->pk_nsecrets == 0)
		return 0;	/* no secret, so no placeholder to look for */
	for (i = 0; i < rq->hq_nfields && rc == 0; i++) {
		f = &rq->hq_fields[i];
		if (scan_find(set, h + f->hf_name.off, f->hf_name.len, &m)) {
			*id = m.sm_id;
			rc = -1;
			break;
		}
		for (k = 0; k < RQ_IDS_MAX; k++)
			ids[k] = -1;
		scratch.hb_len = 0;
		if ((n = scan_subst_value(set, h + f->hf_value.off, f->hf_value.len,
		    &scratch, ids, RQ_IDS_MAX)) == -1) {
			rc = -1;	/* fail closed: unchecked is refused */
			break;
		}
		for (k = 0; k < RQ_IDS_MAX && ids[k] != -1 && rc == 0; k++) {
			if (!rq_secret_allowed(r, ids[k]) || (e = rq_inject_entry(r,
			    ids[k], h + f->hf_name.off, f->hf_name.len)) == -1) {
				*id = ids[k];
				rc = -1;
			} else
				*supplied |= 1u << e;
		}
		if (rc == 0 && n > 0 && k == RQ_IDS_MAX)
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
		*why = *id >= 0 && rq_secret_allowed(r, *id) ?
		    PR_STR(PLACEHOLDER_IN_HEADER) : PR_STR(PLACEHOLDER_UNBOUND_HOST);
	return -1;
}

/* "name[:port]" of the Host field equals the connection's name and port? */
static int
rq_host_ok(struct proxy_conn *c, const uint8_t *v, size_t len)
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
rq_inject_build(struct proxy_req *r, struct http_hdr_set *set,
    struct http_buf *vals, size_t *nset, uint32_t supplied, const char **why)
{
	struct proxy_conn *c = r->rq_conn;
	const struct policy_rule *pr = r->rq_rule;
	const struct proxy_secret *s;
	const char *t, *at;
	size_t i;

	*nset = 0;
	for (i = 0; pr != NULL && i < pr->pr_ninject && i < RQ_INJECT_MAX; i++) {
		s = proxy_keys_secret(r->rq_keys, pr->pr_inject[i].pi_secret);
		if (s == NULL || !proxy_secret_allows_host(s, c->pc_name)) {
			/* The vault changed under a policy that was checked: refuse. */
			*why = PR_STR(SECRET_UNAVAILABLE);
			return -1;
		}
		if (r->rq_ninject < AUDIT_INJECT_MAX)
			r->rq_inject[r->rq_ninject++] = s->ps_name;
		/* The VM wrote this field with the placeholder: replaced in place. */
		if (supplied & (1u << i))
			continue;
		t = pr->pr_inject[i].pi_value != NULL ? pr->pr_inject[i].pi_value :
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
		set[*nset].hx_name = pr->pr_inject[i].pi_header;
		set[*nset].hx_value = vals[i].hb_p;
		set[*nset].hx_value_len = vals[i].hb_len;
		(*nset)++;
	}
	return 0;
}

static char *
rq_strndup(const uint8_t *buf, const struct http_span *s)
{
	char *p;

	if ((p = malloc(s->len + 1)) == NULL)
		return NULL;
	memcpy(p, buf + s->off, s->len);
	p[s->len] = '\0';
	return p;
}

/* Request fields never sent upstream on a rule that redacts (lower case). */
static const char *const rq_range_fields[] = { "range", "if-range" };

int
proxy_req_start(struct proxy_req *r, const uint8_t *h, const struct http_request *rq,
    const char *fail, const char *fail_why, struct http_buf *head,
    struct proxy_refusal *rf)
{
	struct proxy_conn *c = r->rq_conn;
	struct http_hdr_set set[18];
	struct http_buf vals[18];
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
	evutil_gettimeofday(&r->rq_t0, NULL);
	plen = rq->hq_method.len < HTTP_METHOD_MAX ? rq->hq_method.len :
	    HTTP_METHOD_MAX;
	memcpy(r->rq_method, h + rq->hq_method.off, plen);
	r->rq_method[plen] = '\0';
	/* The path for the record (and the policy): "/" for an empty one. */
	path = rq->hq_path;
	if (path.len == 0)
		rawpath = strdup("/");
	else
		rawpath = rq_strndup(h, &path);
	if (rawpath == NULL)
		goto internal;
	if (proxy_config()->audit_log_query && rq->hq_has_query) {
		size_t n = strlen(rawpath) + 1 + rq->hq_query.len + 1;

		if ((r->rq_path = malloc(n)) == NULL)
			goto internal;
		snprintf(r->rq_path, n, "%s?%.*s", rawpath, (int)rq->hq_query.len,
		    (const char *)h + rq->hq_query.off);
	} else if ((r->rq_path = strdup(rawpath)) == NULL)
		goto internal;
	if ((r->rq_pp = proxy_sandbox_policy(c->pc_sandbox)) == NULL)
		goto internal;

	if (proxy_sandbox_is_dead(c->pc_sandbox)) {
		proxy_req_refusal(rf, 403, "Forbidden", PR_STR(SANDBOX_REMOVED),
		    "the sandbox was removed");
		goto out;
	}
	if (fail != NULL) {
		snprintf(what, sizeof(what), "upstream %s refused: %s", c->pc_name,
		    fail_why);
		proxy_req_refusal(rf, 502, "Bad Gateway", fail, what);
		goto out;
	}
	if (rq->hq_host.len == 0 || !rq_host_ok(c, h + rq->hq_host.off,
	    rq->hq_host.len)) {
		snprintf(what, sizeof(what), "this connection is for %s:%u only",
		    c->pc_name, c->pc_dport);
		proxy_req_refusal(rf, 421, "Misdirected Request", PR_STR(HOST_MISMATCH),
		    what);
		goto out;
	}
	if (proxy_limit_request_take(c->pc_sandbox,
	    &r->rq_pp->pp_policy->p_limits) == -1) {
		proxy_req_refusal(rf, 429, "Too Many Requests", PR_STR(RATE_LIMITED),
		    "the sandbox's requests_per_second limit is spent");
		goto out;
	}
	if (http_method_classify(h + rq->hq_method.off, rq->hq_method.len) ==
	    HTTP_MC_ECHO) {
		proxy_req_refusal(rf, 405, "Method Not Allowed", PR_STR(TRACE_REFUSED),
		    "TRACE and TRACK are never forwarded");
		goto out;
	}
	if (rq->hq_absolute && c->pc_proto == POLICY_PROTO_TLS) {
		/* Only a client that thinks it talks to a plain-HTTP proxy sends it. */
		proxy_req_refusal(rf, 400, "Bad Request", PR_STR(INVALID_PATH),
		    "absolute-form request-target inside TLS");
		goto out;
	}
	memset(&q, 0, sizeof(q));
	q.pq_host = c->pc_name;
	q.pq_addr = &c->pc_dst;
	q.pq_port = c->pc_dport;
	q.pq_proto = c->pc_proto;
	q.pq_method = r->rq_method;
	q.pq_path = rawpath;
	snprintf(what, sizeof(what), "%s %s", r->rq_method, c->pc_name);
	if (!policy_decide(r->rq_pp->pp_policy, &q, &v)) {
		char apid[APPROVAL_ID_LEN + 1];
		size_t tl;

		r->rq_rule = v.pv_rule;
		proxy_req_deny(r, policy_reason_str(v.pv_reason), what, rf);
		/* "unknown": "ask": the VM reads that it was asked, and the id. */
		if (proxy_approval_ask(c->pc_sandbox, r->rq_pp->pp_policy,
		    v.pv_reason, c->pc_name, c->pc_dport, r->rq_method, rawpath,
		    apid) && (tl = strlen(rf->rf_text)) < sizeof(rf->rf_text))
			snprintf(rf->rf_text + tl, sizeof(rf->rf_text) - tl,
			    "; approval requested: id %s (an operator may run: "
			    "airlock approve allow %s %s --port %u)", apid,
			    proxy_req_sandbox(c), c->pc_name,
			    (unsigned int)c->pc_dport);
		goto out;
	}
	r->rq_rule = v.pv_rule;
	if (v.pv_would_deny) {
		r->rq_would_deny = 1;
		snprintf(r->rq_wd_reason, sizeof(r->rq_wd_reason), "%s",
		    policy_reason_str(v.pv_reason));
	}
	if (c->pc_proto == POLICY_PROTO_TLS && (v.pv_rule == NULL ||
	    v.pv_tls != POLICY_TLS_INSPECT)) {
		/* A reload turned this name to splice: this connection cannot follow. */
		proxy_req_deny(r, PR_STR(POLICY_RELOAD), what, rf);
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
			proxy_req_deny(r, PR_STR(WEBSOCKET_NOT_ALLOWED), what, rf);
			goto out;
		}
		r->rq_websocket = 1;
	}
	/*
	 * A placeholder in the request line (the target, path or query, and the
	 * method, which a rule without "methods" lets through as any token) is
	 * never sent.
	 */
	if (scan_find(r->rq_keys->pk_ph_set, h + rq->hq_method.off,
	    rq->hq_target.off + rq->hq_target.len - rq->hq_method.off, &m)) {
		proxy_req_audit_exfil(r, PR_STR(PLACEHOLDER_IN_URL), m.sm_id, "url", 0);
		proxy_req_deny(r, PR_STR(PLACEHOLDER_IN_URL), what, rf);
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
		proxy_req_deny(r, PR_STR(METHOD_NOT_ALLOWED), what, rf);
		goto out;
	}
	if (rq_head_placeholders(r, h, rq, &why, &id, &supplied) == -1) {
		proxy_req_audit_exfil(r, why, id, "header", 0);
		proxy_req_deny(r, why, what, rf);
		goto out;
	}
	inject = c->pc_proto == POLICY_PROTO_TLS && v.pv_rule != NULL &&
	    v.pv_rule->pr_ninject > 0;
	/* Every response is scanned while any secret value is loaded. */
	r->rq_redact = inject || r->rq_keys->pk_nvals > 0;
	if (inject && rq_inject_build(r, set, vals, &nset, supplied, &why) == -1) {
		proxy_req_deny(r, why, what, rf);
		goto out;
	}
	if (r->rq_redact) {
		/* Responses must come uncompressed to be scanned (proxy_inspect.c). */
		set[nset].hx_name = "Accept-Encoding";
		set[nset].hx_value = (const uint8_t *)"identity";
		set[nset].hx_value_len = 8;
		nset++;
	}
	if (v.pv_rule != NULL && v.pv_rule->pr_forwarded) {
		/* Our own, naming the sandbox; the VM's were dropped (proxy_http.h). */
		if (http_forwarded_value(proxy_req_sandbox(c), c->pc_proto ==
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
	rw.rw_upgrade = r->rq_websocket;
	rw.rw_host = c->pc_name;
	if (r->rq_redact) {
		/*
		 * No partial responses where secrets are redacted: a Range request
		 * would let the VM read an echoed secret a few bytes at a time,
		 * each slice too short to be recognised (proxy_scan.h, limits).
		 */
		rw.rw_drop = rq_range_fields;
		rw.rw_ndrop = sizeof(rq_range_fields) / sizeof(rq_range_fields[0]);
	}
	if (supplied != 0) {
		rw.rw_value_fn = rq_subst_value;
		rw.rw_value_arg = r;
	}
	if (http_request_rewrite(h, rq, &rw, head) == -1) {
		if (errno == EMSGSIZE)
			proxy_req_refusal(rf, 431, "Request Header Fields Too Large",
			    PR_STR(HTTP_HEAD_TOO_LARGE), "the request head would be "
			    "too large with the fields airlock adds");
		else
			proxy_req_refusal(rf, 400, "Bad Request", PR_STR(HTTP_MALFORMED),
			    "the request head could not be rebuilt");
		goto out;
	}
	ret = 0;
	goto out;
 internal:
	proxy_req_refusal(rf, 500, "Internal Server Error", PR_STR(INTERNAL_ERROR),
	    "internal error");
 out:
	if (ret == -1)	/* refused: the record says what was asked for */
		proxy_req_asked(r, h + rq->hq_host.off, rq->hq_host.len,
		    rq->hq_absolute ? h + rq->hq_target.off : NULL,
		    rq->hq_target.len);
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		http_buf_free(&vals[i]);
	free(rawpath);
	return ret;
}

int
proxy_req_body_scan(struct proxy_req *r, struct scan_stream *s, const uint8_t *p,
    size_t n, struct proxy_refusal *rf)
{
	struct scan_match m;
	char what[HTTP_METHOD_MAX + HOSTNAME_MAX + 4];

	if (!scan_stream_feed(s, p, n, &m))
		return 0;
	snprintf(what, sizeof(what), "%s %s", r->rq_method, r->rq_conn->pc_name);
	proxy_req_audit_exfil(r, PR_STR(PLACEHOLDER_IN_BODY), m.sm_id, "body", 0);
	proxy_req_deny(r, PR_STR(PLACEHOLDER_IN_BODY), what, rf);
	return -1;
}

/*
 * Response side.
 */

void
proxy_req_redact_cb(void *arg, const struct scan_match *m)
{
	struct proxy_req *r = arg;

	r->rq_redacted++;
	r->rq_redacted_id = m->sm_id;
}

/* The response-head hook: secret values in header values become placeholders. */
static int
rq_redact_value(void *arg, const uint8_t *name, size_t namelen,
    const uint8_t *value, size_t valuelen, struct http_buf *out)
{
	struct proxy_req *r = arg;

	if (scan_redact_feed(r->rq_hred, value, valuelen, out) == -1 ||
	    scan_redact_finish(r->rq_hred, out) == -1)
		return -1;
	return 1;
}

/*
 * What of a response head the redactor does not rewrite: a reason phrase holding a
 * secret value is dropped (an empty phrase is valid), a field name holding one
 * refuses the response.  0, or -1 with *rf.
 */
static int
rq_response_names(struct proxy_req *r, const uint8_t *rh, struct http_response *rs,
    struct proxy_refusal *rf)
{
	const struct scan_set *set = r->rq_keys->pk_val_set;
	struct scan_match m;
	size_t i;

	if (scan_find(set, rh + rs->hs_reason.off, rs->hs_reason.len, &m)) {
		rs->hs_reason.len = 0;
		r->rq_redacted++;
		r->rq_redacted_id = m.sm_id;
	}
	for (i = 0; i < rs->hs_nfields; i++) {
		if (scan_find(set, rh + rs->hs_fields[i].hf_name.off,
		    rs->hs_fields[i].hf_name.len, &m)) {
			proxy_req_audit_exfil(r, PR_STR(SECRET_IN_FIELD_NAME), m.sm_id,
			    "response", 0);
			proxy_req_refusal(rf, 502, "Bad Gateway",
			    PR_STR(SECRET_IN_FIELD_NAME), "the upstream sent a "
			    "secret's value as a header field name");
			return -1;
		}
	}
	return 0;
}

int
proxy_req_response_check(struct proxy_req *r, const uint8_t *rh,
    struct http_response *rs, struct http_rewrite *rw, struct proxy_refusal *rf)
{
	int i;

	/*
	 * A body we must scan cannot be compressed (see proxy_inspect.c).  Every
	 * Content-Encoding field counts: "identity" then "gzip" is gzip.
	 */
	for (i = -1; r->rq_redact && rs->hs_framing != HTTP_BODY_NONE &&
	    (i = http_field_find(rh, rs->hs_fields, rs->hs_nfields,
	    "Content-Encoding", (size_t)(i + 1))) != -1; ) {
		if (rs->hs_fields[i].hf_value.len == 8 && strncasecmp((const char *)
		    rh + rs->hs_fields[i].hf_value.off, "identity", 8) == 0)
			continue;
		proxy_req_refusal(rf, 502, "Bad Gateway", PR_STR(UPSTREAM_COMPRESSED),
		    "the upstream compressed a response that must be scanned for "
		    "secrets");
		return -1;
	}
	if (rs->hs_switching && !r->rq_websocket) {
		proxy_req_refusal(rf, 502, "Bad Gateway",
		    PR_STR(UPSTREAM_HTTP_MALFORMED),
		    "the upstream switched protocols unasked");
		return -1;
	}
	if (r->rq_redact && rq_response_names(r, rh, rs, rf) == -1)
		return -1;
	if (r->rq_redact) {
		rw->rw_value_fn = rq_redact_value;
		rw->rw_value_arg = r;
	}
	return 0;
}
