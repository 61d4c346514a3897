/*
 * tests/fuzz/fuzz_inspect.c: the inspect engine (proxy/proxy_inspect.c: pi_run, the
 * request and response engines, keep-alive, 1xx, HEAD, chunked, redaction across
 * reads) with both ends in memory, through its test seam
 * proxy_inspect_attach_test(): the VM's decrypted stream and the origin's are
 * bufferevent pairs, the connection is as after both TLS handshakes.
 *
 * Input:  RULE VM-SCRIPT [ "\0ORIGIN\0" ORIGIN-SCRIPT [ "\0CUTS\0" CUTS ] ]
 *	RULE % 3 picks the connection: 0 api.test (inspected TLS, injects secret
 *	"tok" as Authorization: Bearer), 1 other.test (inspected TLS, nothing
 *	injected: responses redacted), 2 plain.test (plain HTTP); RULE / 3 odd: the
 *	origin's connection was taken from the upstream pool (proxy_pool.c), so
 *	its closing before any byte of an answer dials again (once; no resolver
 *	here: the connection then ends resolve_failed).  The worker has a pool: an
 *	upstream left clean at the end goes into it (plain HTTP only: a pair is no
 *	TLS connection) and is closed with it.  Each CUTS byte is
 *	one step: bit 7 the side (0 VM, 1 origin), bits 0-6 how many bytes of that
 *	side's script go next (0: that side ends, EOF).  After the cuts, what is left
 *	of the VM's script goes, then the origin's, then the origin ends, then the VM.
 *	The event loop runs until quiet after every step.
 *
 * Checks, on what each end received:
 *	origin: only request heads http_request_parse accepts, bodies framed as
 *	    their heads say; no placeholder anywhere (heads, decoded bodies); a
 *	    secret's value only as the injected Authorization of "tok" on api.test
 *	    (not checked for a secret the VM's script itself holds a piece of);
 *	VM: only responses http_response_parse accepts (HEAD answered without a
 *	    body), nothing after a response that ends the connection, no 101 (no
 *	    rule allows websocket), at most one response more than requests went
 *	    upstream (the refusal), no secret's value in a head or a decoded body
 *	    (but one the VM's script holds: a refusal's text quotes the request);
 *	and no leak (LeakSanitizer): everything is freed after each input.
 * The vault and policy are built once (LLVMFuzzerInitialize) in a state directory
 * under /tmp, removed again at once.  No audit log is open (proxy_audit() is
 * NULL: the engine's records are skipped).  FUZZ_INSPECT_DUMP=1 in the
 * environment prints both streams (triage).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "fz_world.h"
#include "../../proxy/proxy_http.h"
#include "../../proxy/proxy_pool.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FZ_REQS_MAX	64

static const char fz_policy[] = "{\"policy\":\"fz\",\"rules\":["
    "{\"id\":\"inject\",\"host\":\"api.test\",\"tls\":\"inspect\",\"inject\":"
    "[{\"secret\":\"tok\",\"header\":\"Authorization\",\"value\":"
    "\"Bearer {secret}\"}]},"
    "{\"id\":\"redact\",\"host\":\"other.test\",\"tls\":\"inspect\"},"
    "{\"id\":\"plain\",\"host\":\"plain.test\",\"protocol\":\"http\"}]}";

static const struct fz_secret fz_secrets[2] = {
	{ "tok", "api.test", "AIRLOCK_PLACEHOLDER_TOK_0123456789abcdef",
	  "tok-7Hq2ZpW9xK4mR8vN" },
	{ "other", "elsewhere.test", "AIRLOCK_PLACEHOLDER_OTHER_fedcba9876543210",
	  "oth-Bn3Jc6Ty1Lf5Gd0S" },
};

static const struct {
	const char	*host, *rule;
	uint16_t	 port;
	enum policy_proto proto;
} fz_conns[3] = {
	{ "api.test", "inject", 443, POLICY_PROTO_TLS },
	{ "other.test", "redact", 443, POLICY_PROTO_TLS },
	{ "plain.test", "plain", 80, POLICY_PROTO_HTTP },
};

static struct proxy_sandbox fz_sb;
static const struct proxy_pool_limits fz_pool_limits = { 30000, 4, 32, 128 };
static int fz_vm_knows[2];	/* the VM's script holds a piece of value i */
static int fz_vm_sent[2];	/* the VM's script holds all of value i */
static int fz_conn;		/* index into fz_conns of this input */

static void
fz_fail(const char *why, const uint8_t *p, size_t n)
{
	fprintf(stderr, "fuzz_inspect: %s\n", why);
	if (p != NULL)
		fprintf(stderr, "--- %.*s\n---\n", (int)(n > 2000 ? 2000 : n),
		    (const char *)p);
	abort();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fz_world_init(&fz_sb, fz_policy, fz_secrets, 2);
	return 0;
}

/*
 * Script handling.
 */

struct fz_side {
	const uint8_t	*fs_p;
	size_t		 fs_len;
	size_t		 fs_off;
	struct bufferevent *fs_bev;	/* the harness's end of the pair */
	int		 fs_eof;
};

static const uint8_t *
fz_find(const uint8_t *h, size_t hl, const void *n, size_t nl)
{
	return nl <= hl ? memmem(h, hl, n, nl) : NULL;
}

/*
 * Any piece of s of w bytes (w 0: all of s) in h (a plain loop: no comparison hook
 * teaches the fuzzer).
 */
static int
fz_has_piece(const uint8_t *h, size_t hl, const char *s, size_t w)
{
	size_t i, j, k, n = strlen(s);

	if (w == 0)
		w = n;
	for (i = 0; i + w <= hl; i++)
		for (j = 0; j + w <= n; j++) {
			for (k = 0; k < w && h[i + k] == (uint8_t)s[j + k]; k++)
				;
			if (k == w)
				return 1;
		}
	return 0;
}

static void
fz_send(struct fz_side *s, size_t n)
{
	if (s->fs_eof)
		return;
	if (n == 0) {
		s->fs_eof = 1;
		bufferevent_flush(s->fs_bev, EV_WRITE, BEV_FINISHED);
		return;
	}
	if (n > s->fs_len - s->fs_off)
		n = s->fs_len - s->fs_off;
	if (n > 0)
		bufferevent_write(s->fs_bev, s->fs_p + s->fs_off, n);
	s->fs_off += n;
}

/*
 * The checks.
 */

/* No placeholder, and no value but the injected one, in p[n] (a head or a body). */
static void
fz_origin_clean(const uint8_t *p, size_t n, const struct http_request *rq)
{
	const uint8_t *q;
	size_t i, j, off;

	if (n == 0)
		return;
	for (i = 0; i < 2; i++) {
		if (fz_find(p, n, fz_secrets[i].ph, strlen(fz_secrets[i].ph)) != NULL)
			fz_fail("a placeholder reached the origin", p, n);
		if (fz_vm_knows[i])
			continue;
		for (off = 0; (q = fz_find(p + off, n - off, fz_secrets[i].value,
		    strlen(fz_secrets[i].value))) != NULL; off = (size_t)(q - p) + 1) {
			size_t at = (size_t)(q - p);
			int ok = 0;

			if (rq != NULL && i == 0 && fz_conn == 0)
				for (j = 0; j < rq->hq_nfields; j++) {
					const struct http_field *f = &rq->hq_fields[j];

					if (f->hf_name.len == 13 && strncasecmp(
					    (const char *)p + f->hf_name.off,
					    "Authorization", 13) == 0 &&
					    at >= f->hf_value.off && at +
					    strlen(fz_secrets[i].value) <=
					    f->hf_value.off + f->hf_value.len)
						ok = 1;
				}
			if (!ok)
				fz_fail("a secret's value reached the origin outside "
				    "the injected field", p, n);
		}
	}
}

static void
fz_vm_clean(const uint8_t *p, size_t n)
{
	size_t i;

	/* A refusal's text may quote the VM's own request line. */
	for (i = 0; i < 2 && n > 0; i++)
		if (!fz_vm_sent[i] && fz_find(p, n, fz_secrets[i].value, strlen(fz_secrets[i].value)))
			fz_fail("a secret's value reached the VM", p, n);
}

/*
 * A body of framing f at p[n]: its decoded bytes into *body, the bytes it took
 * into *used.  1 complete, 0 cut short by the end of the stream.
 */
static int
fz_body(const uint8_t *p, size_t n, enum http_framing f, uint64_t length,
    struct http_buf *body, size_t *used, const char *who)
{
	struct http_chunked ch;
	struct http_span d;
	enum http_res r = HTTP_NEED_MORE;
	size_t u = 0, consumed;

	body->hb_len = 0;
	switch (f) {
	case HTTP_BODY_NONE:
		*used = 0;
		return 1;
	case HTTP_BODY_LENGTH:
		*used = length < n ? (size_t)length : n;
		if (http_buf_add(body, p, *used) == -1)
			abort();
		return *used == length;
	case HTTP_BODY_CLOSE:
		*used = n;
		if (http_buf_add(body, p, n) == -1)
			abort();
		return 1;
	case HTTP_BODY_CHUNKED:
		break;
	}
	http_chunked_init(&ch);
	while (u < n) {
		r = http_chunked_feed(&ch, p + u, n - u, &consumed, &d);
		if (r == HTTP_E_BAD)
			fz_fail(who, p, n);
		if (d.len > 0 && http_buf_add(body, p + u + d.off, d.len) == -1)
			abort();
		u += consumed;
		if (r == HTTP_OK)
			break;
	}
	*used = u;
	return r == HTTP_OK;
}

/*
 * The requests in p[n], their methods into meth[] (their count returned).  check:
 * p is what the origin got (every head must parse, no placeholder, no value but the
 * injected one); else p is the VM's script (read up to its first bad head).
 */
static size_t
fz_requests(const uint8_t *p, size_t n, enum http_method *meth, int check)
{
	static struct http_request rq;
	struct http_buf body = HTTP_BUF_INIT;
	size_t off = 0, nreq = 0, st, hl, used;

	while (off < n) {
		st = hl = 0;
		if (http_head_find(p + off, n - off, &st, &hl) != HTTP_OK ||
		    http_request_parse(p + off, hl, &rq) != HTTP_OK) {
			if (!check)
				break;
			fz_fail("the origin got a request head the parser refuses",
			    p + off, n - off);
		}
		if (check)
			fz_origin_clean(p + off, hl, &rq);
		if (nreq < FZ_REQS_MAX)
			meth[nreq] = rq.hq_meth;
		nreq++;
		off += hl;
		if (!check && rq.hq_framing == HTTP_BODY_CHUNKED)
			break;	/* the VM's may be bad: what follows is unknown */
		if (!fz_body(p + off, n - off, rq.hq_framing, rq.hq_length, &body,
		    &used, "the origin got a bad chunked body")) {
			if (check)
				fz_origin_clean(body.hb_p, body.hb_len, NULL);
			break;		/* cut short (a refused body) */
		}
		if (check)
			fz_origin_clean(body.hb_p, body.hb_len, NULL);
		off += used;
	}
	http_buf_free(&body);
	return nreq;
}

static void
fz_check_vm(const uint8_t *p, size_t n, const enum http_method *meth, size_t nmeth,
    size_t nreq)
{
	static struct http_response rs;
	struct http_buf body = HTTP_BUF_INIT;
	size_t off = 0, nres = 0, st, hl, used;
	enum http_method m;
	enum http_res r;

	while (off < n) {
		st = hl = 0;
		r = http_head_find(p + off, n - off, &st, &hl);
		if (r == HTTP_NEED_MORE)
			break;		/* cut short */
		m = nres < nmeth && nres < FZ_REQS_MAX ? meth[nres] : HTTP_M_GET;
		if (r != HTTP_OK ||
		    http_response_parse(p + off, hl, m, &rs) != HTTP_OK)
			fz_fail("the VM got a response head the parser refuses",
			    p + off, n - off);
		fz_vm_clean(p + off, hl);
		if (rs.hs_switching)
			fz_fail("the VM got a 101 (no rule allows websocket)", p, n);
		off += hl;
		if (rs.hs_interim)
			continue;
		if (++nres > nreq + 1)
			fz_fail("the VM got more responses than requests went "
			    "upstream (and one refusal)", p, n);
		if (!fz_body(p + off, n - off, rs.hs_framing, rs.hs_length, &body,
		    &used, "the VM got a bad chunked body")) {
			fz_vm_clean(body.hb_p, body.hb_len);
			break;
		}
		fz_vm_clean(body.hb_p, body.hb_len);
		off += used;
		if (!rs.hs_keepalive && off < n)
			fz_fail("the VM got bytes after a response that ends the "
			    "connection", p, n);
	}
	http_buf_free(&body);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t sep_origin[] = "\0ORIGIN\0", sep_cuts[] = "\0CUTS\0";
	struct bufferevent *vmp[2], *orp[2];
	struct proxy_worker w;
	struct fz_side vm, og;
	struct proxy_conn *c;
	const uint8_t *q, *cuts = NULL, *end = data + size;
	enum http_method meth[FZ_REQS_MAX];
	size_t i, ncuts = 0, nreq, nvm;

	if (size < 1)
		return 0;
	fz_conn = data[0] % 3;
	memset(&vm, 0, sizeof(vm));
	memset(&og, 0, sizeof(og));
	vm.fs_p = data + 1;
	vm.fs_len = size - 1;
	if ((q = fz_find(vm.fs_p, vm.fs_len, sep_origin, sizeof(sep_origin) - 1))) {
		vm.fs_len = (size_t)(q - vm.fs_p);
		og.fs_p = q + sizeof(sep_origin) - 1;
		og.fs_len = (size_t)(end - og.fs_p);
		if ((q = fz_find(og.fs_p, og.fs_len, sep_cuts,
		    sizeof(sep_cuts) - 1))) {
			og.fs_len = (size_t)(q - og.fs_p);
			cuts = q + sizeof(sep_cuts) - 1;
			ncuts = (size_t)(end - cuts);
		}
	}
	for (i = 0; i < 2; i++)
	{
		fz_vm_knows[i] = fz_has_piece(vm.fs_p, vm.fs_len,
		    fz_secrets[i].value, 4);
		fz_vm_sent[i] = fz_has_piece(vm.fs_p, vm.fs_len,
		    fz_secrets[i].value, 0);
	}

	fz_worker_init(&w, vmp, orp);
	vm.fs_bev = vmp[1];
	og.fs_bev = orp[1];
	if ((w.pw_pool = proxy_pool_new(w.pw_base, &fz_pool_limits, NULL)) == NULL)
		abort();

	/* The connection as proxy_conn_decide() leaves an inspected one. */
	c = fz_conn_new(&w, &fz_sb, fz_conns[fz_conn].host, fz_conns[fz_conn].rule,
	    fz_conns[fz_conn].port, fz_conns[fz_conn].proto);
	c->pc_reused = (data[0] / 3) % 2;	/* the origin's came from the pool */

	if (proxy_inspect_attach_test(c, vmp[0], orp[0]) == 0) {
		for (i = 0; i < ncuts && !TAILQ_EMPTY(&w.pw_conns); i++) {
			fz_send(cuts[i] & 0x80 ? &og : &vm, cuts[i] & 0x7f);
			fz_settle(w.pw_base);
		}
		fz_send(&vm, vm.fs_len - vm.fs_off);
		fz_settle(w.pw_base);
		fz_send(&og, og.fs_len - og.fs_off);
		fz_settle(w.pw_base);
		fz_finish(&w, og.fs_bev, vm.fs_bev);
	}

	{
		struct evbuffer *o = bufferevent_get_input(orp[1]);
		struct evbuffer *v = bufferevent_get_input(vmp[1]);
		size_t on = evbuffer_get_length(o), vn = evbuffer_get_length(v);

		if (getenv("FUZZ_INSPECT_DUMP") != NULL) {	/* triage */
			fputs("=== origin got:\n", stderr);
			fwrite(evbuffer_pullup(o, -1), 1, on, stderr);
			fputs("\n=== VM got:\n", stderr);
			fwrite(evbuffer_pullup(v, -1), 1, vn, stderr);
			fputs("\n=== end\n", stderr);
		}
		nreq = fz_requests(on ? evbuffer_pullup(o, -1) : NULL, on, meth, 1);
		/* Answers are to the VM's requests, also those never sent on. */
		nvm = fz_requests(vm.fs_p, vm.fs_len, meth, 0);
		fz_check_vm(vn ? evbuffer_pullup(v, -1) : NULL, vn, meth,
		    nvm > nreq ? nvm : nreq, nreq);
	}
	proxy_pool_free(w.pw_pool);
	bufferevent_free(vmp[1]);
	bufferevent_free(orp[1]);
	event_base_free(w.pw_base);
	return 0;
}
