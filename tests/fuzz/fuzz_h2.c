/*
 * tests/fuzz/fuzz_h2.c: the HTTP/2 engine (proxy/proxy_h2.c: both nghttp2 sessions,
 * the per-stream checks, injection, redaction, refusals, flood counters) with both
 * ends in memory, through its test seam proxy_h2_attach_test(): the VM's decrypted
 * stream and the origin's are bufferevent pairs, as after both handshakes chose h2.
 *
 * Input:  RULE VM-FRAMES [ "\0ORIGIN\0" ORIGIN-FRAMES ]
 *	RULE % 2 picks the connection: 0 api.test (injects secret "tok" as
 *	Authorization: Bearer), 1 other.test (nothing injected: responses
 *	redacted).  RULE & 2: the origin speaks HTTP/1.1 (the engine translates
 *	each stream into one HTTP/1.1 exchange), ORIGIN-FRAMES are then the
 *	origin's HTTP/1.1 bytes (responses, one after another).  The harness sends
 *	the client preface and VM-FRAMES (HTTP/2 frames, HPACK blocks as a client
 *	encodes them), lets the engine run, then ORIGIN-FRAMES (the origin's:
 *	SETTINGS, answers on streams 1, 3, ...), then ends both sides.  The seeds
 *	(corpus/fuzz_h2/) are frames python3-h2 wrote (tests/tools/h2seeds.py);
 *	those with RULE & 2 add HTTP/1.1 answers.
 *
 * Checks, on what each end received (frames walked and HPACK blocks decoded here
 * with nghttp2's inflater: a secret Huffman-coded would not show in the bytes):
 *	origin: the client preface, then whole frames only; in no field name or
 *	    value and no DATA payload a placeholder; a secret's value only as the
 *	    value of authorization on api.test; an HTTP/1.1 origin: no preface, no
 *	    placeholder in any byte, a secret's value only on an
 *	    "Authorization: Bearer " line of api.test;
 *	VM: whole frames only; no secret's value in a field or a DATA payload
 *	    (but one the VM's frames hold a piece of: a refusal quotes the request);
 *	    the injected authorization never indexed (HPACK: NO_INDEX);
 *	and no leak (LeakSanitizer).  FUZZ_H2_DUMP=1 prints both streams' sizes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include <nghttp2/nghttp2.h>

#include "fz_world.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static const char fz_policy[] = "{\"policy\":\"fz\",\"rules\":["
    "{\"id\":\"inject\",\"host\":\"api.test\",\"tls\":\"inspect\",\"inject\":"
    "[{\"secret\":\"tok\",\"header\":\"Authorization\",\"value\":"
    "\"Bearer {secret}\"}]},"
    "{\"id\":\"redact\",\"host\":\"other.test\",\"tls\":\"inspect\"}]}";

static const struct fz_secret fz_secrets[2] = {
	{ "tok", "api.test", "AIRLOCK_PLACEHOLDER_TOK_0123456789abcdef",
	  "tok-7Hq2ZpW9xK4mR8vN" },
	{ "other", "elsewhere.test", "AIRLOCK_PLACEHOLDER_OTHER_fedcba9876543210",
	  "oth-Bn3Jc6Ty1Lf5Gd0S" },
};

static const char fz_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

static struct proxy_sandbox fz_sb;
static int fz_conn;		/* 0 api.test, 1 other.test */
static int fz_h1;		/* the origin speaks HTTP/1.1 */
static int fz_vm_knows[2];	/* the VM's frames hold a piece of value i */

static void
fz_fail(const char *why)
{
	fprintf(stderr, "fuzz_h2: %s\n", why);
	abort();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fz_world_init(&fz_sb, fz_policy, fz_secrets, 2);
	return 0;
}

static int
fz_has(const uint8_t *h, size_t hl, const char *n)
{
	size_t nl = strlen(n);

	return nl <= hl && memmem(h, hl, n, nl) != NULL;
}

/* Any 4-byte piece of s in h (a plain loop: no comparison hook teaches the fuzzer). */
static int
fz_has_piece(const uint8_t *h, size_t hl, const char *s)
{
	size_t i, j, k, n = strlen(s);

	for (i = 0; i + 4 <= hl; i++)
		for (j = 0; j + 4 <= n; j++) {
			for (k = 0; k < 4 && h[i + k] == (uint8_t)s[j + k]; k++)
				;
			if (k == 4)
				return 1;
		}
	return 0;
}

/* One decoded field (origin: to_origin 1) or DATA payload (name NULL). */
static void
fz_check(int to_origin, const uint8_t *name, size_t nl, const uint8_t *v,
    size_t vl, uint8_t nvflags)
{
	size_t i;

	for (i = 0; i < 2; i++) {
		if (to_origin) {
			if ((name != NULL && fz_has(name, nl, fz_secrets[i].ph)) ||
			    fz_has(v, vl, fz_secrets[i].ph))
				fz_fail("a placeholder reached the origin");
			if (name != NULL && fz_has(name, nl, fz_secrets[i].value))
				fz_fail("a secret's value as a field name upstream");
			if (fz_vm_knows[i] || !fz_has(v, vl, fz_secrets[i].value))
				continue;
			if (i != 0 || fz_conn != 0 || name == NULL || nl != 13 ||
			    memcmp(name, "authorization", 13) != 0)
				fz_fail("a secret's value reached the origin outside "
				    "the injected field");
			if (!(nvflags & NGHTTP2_NV_FLAG_NO_INDEX))
				fz_fail("the injected field was not sent never-indexed");
		} else if (!fz_vm_knows[i] && ((name != NULL &&
		    fz_has(name, nl, fz_secrets[i].value)) ||
		    fz_has(v, vl, fz_secrets[i].value)))
			fz_fail("a secret's value reached the VM");
	}
}

/* Decodes one field block (HPACK state kept in inf across blocks). */
static void
fz_block(nghttp2_hd_inflater *inf, int to_origin, const uint8_t *p, size_t n)
{
	nghttp2_nv nv;
	int flags;
	ssize_t r;

	for (;;) {
		flags = 0;
		if ((r = nghttp2_hd_inflate_hd2(inf, &nv, &flags, p, n, 1)) < 0)
			fz_fail("an HPACK block nghttp2 cannot decode");
		p += r;
		n -= (size_t)r;
		if (flags & NGHTTP2_HD_INFLATE_EMIT)
			fz_check(to_origin, nv.name, nv.namelen, nv.value, nv.valuelen,
			    nv.flags);
		if (flags & NGHTTP2_HD_INFLATE_FINAL) {
			nghttp2_hd_inflate_end_headers(inf);
			return;
		}
		if (r == 0 && n == 0)
			fz_fail("an HPACK block cut short");
	}
}

/* What an HTTP/1.1 origin received: the requests' bytes, checked line by line. */
static void
fz_walk_h1(const uint8_t *p, size_t n)
{
	/*
	 * The injected field, whatever its value: the rule's template, or the VM's own
	 * text with its placeholder replaced in place (a supplied field), as the HTTP/2
	 * check (fz_check) takes any value of authorization.
	 */
	static const char auth[] = "Authorization:";
	const uint8_t *e;
	size_t i, ll, al = sizeof(auth) - 1;

	for (i = 0; i < 2; i++)
		if (fz_has(p, n, fz_secrets[i].ph))
			fz_fail("a placeholder reached the origin");
	while (n > 0) {
		e = memmem(p, n, "\r\n", 2);
		ll = e != NULL ? (size_t)(e - p) : n;
		for (i = 0; i < 2; i++) {
			if (fz_vm_knows[i] || !fz_has(p, ll, fz_secrets[i].value))
				continue;
			/* the name as the VM sent it (a supplied placeholder) */
			if (i != 0 || fz_conn != 0 || ll < al ||
			    strncasecmp((const char *)p, auth, al) != 0)
				fz_fail("a secret's value reached the origin outside "
				    "the injected field");
		}
		ll = e != NULL ? ll + 2 : ll;
		p += ll;
		n -= ll;
	}
}

/* Walks the frames of one direction, decoding blocks and checking payloads. */
static void
fz_walk(const uint8_t *p, size_t n, int to_origin)
{
	nghttp2_hd_inflater *inf;
	uint8_t *blk = NULL;
	size_t blen = 0, len, off, pad;
	uint8_t type, flags;

	if (to_origin) {
		if (n < sizeof(fz_preface) - 1 || memcmp(p, fz_preface,
		    sizeof(fz_preface) - 1) != 0) {
			if (n == 0)
				return;
			fz_fail("the origin got no client preface");
		}
		p += sizeof(fz_preface) - 1;
		n -= sizeof(fz_preface) - 1;
	}
	if (nghttp2_hd_inflate_new(&inf) != 0)
		abort();
	while (n > 0) {
		if (n < 9)
			fz_fail("a frame header cut short");
		len = (size_t)p[0] << 16 | (size_t)p[1] << 8 | p[2];
		type = p[3];
		flags = p[4];
		if (n < 9 + len)
			fz_fail("a frame cut short");
		off = 9;
		pad = 0;
		if ((type == NGHTTP2_DATA || type == NGHTTP2_HEADERS) &&
		    (flags & NGHTTP2_FLAG_PADDED) && len > 0) {
			pad = p[off];
			off++;
		}
		if (type == NGHTTP2_HEADERS && (flags & NGHTTP2_FLAG_PRIORITY))
			off += 5;
		if (off - 9 + pad > len)
			fz_fail("padding past the frame");
		if (type == NGHTTP2_DATA)
			fz_check(to_origin, NULL, 0, p + off, len - (off - 9) - pad, 0);
		if (type == NGHTTP2_HEADERS || type == NGHTTP2_CONTINUATION) {
			if (type == NGHTTP2_HEADERS)
				blen = 0;
			if ((blk = realloc(blk, blen + len + 1)) == NULL)
				abort();
			memcpy(blk + blen, p + off, len - (off - 9) - pad);
			blen += len - (off - 9) - pad;
			if (flags & NGHTTP2_FLAG_END_HEADERS)
				fz_block(inf, to_origin, blk, blen);
		}
		p += 9 + len;
		n -= 9 + len;
	}
	free(blk);
	nghttp2_hd_inflate_del(inf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t sep[] = "\0ORIGIN\0";
	struct bufferevent *vmp[2], *orp[2];
	struct proxy_worker w;
	struct proxy_conn *c;
	const uint8_t *vmf, *of = NULL, *q;
	size_t vml, ol = 0, i;

	if (size < 1)
		return 0;
	fz_conn = data[0] % 2;
	fz_h1 = (data[0] & 2) != 0;
	vmf = data + 1;
	vml = size - 1;
	if ((q = memmem(vmf, vml, sep, sizeof(sep) - 1)) != NULL) {
		of = q + sizeof(sep) - 1;
		ol = (size_t)(data + size - of);
		vml = (size_t)(q - vmf);
	}
	for (i = 0; i < 2; i++)
		fz_vm_knows[i] = fz_has_piece(vmf, vml, fz_secrets[i].value);

	fz_worker_init(&w, vmp, orp);
	c = fz_conn_new(&w, &fz_sb, fz_conn == 0 ? "api.test" : "other.test",
	    fz_conn == 0 ? "inject" : "redact", 443, POLICY_PROTO_TLS);
	if (proxy_h2_attach_test(c, vmp[0], orp[0], fz_h1) == 0) {
		bufferevent_write(vmp[1], fz_preface, sizeof(fz_preface) - 1);
		bufferevent_write(vmp[1], vmf, vml);
		fz_settle(w.pw_base);
		if (ol > 0 && !TAILQ_EMPTY(&w.pw_conns))
			bufferevent_write(orp[1], of, ol);
		fz_settle(w.pw_base);
		fz_finish(&w, orp[1], vmp[1]);
	}
	{
		struct evbuffer *o = bufferevent_get_input(orp[1]);
		struct evbuffer *v = bufferevent_get_input(vmp[1]);
		size_t on = evbuffer_get_length(o), vn = evbuffer_get_length(v);

		if (getenv("FUZZ_H2_DUMP") != NULL)
			fprintf(stderr, "fuzz_h2: origin got %zu bytes, VM %zu\n", on, vn);
		if (getenv("FUZZ_H2_DUMP") != NULL && fz_h1 && on > 0)
			fprintf(stderr, "%.*s\n", (int)on, evbuffer_pullup(o, -1));
		if (fz_h1)
			fz_walk_h1(on ? evbuffer_pullup(o, -1) : NULL, on);
		else
			fz_walk(on ? evbuffer_pullup(o, -1) : NULL, on, 1);
		fz_walk(vn ? evbuffer_pullup(v, -1) : NULL, vn, 0);
	}
	bufferevent_free(vmp[1]);
	bufferevent_free(orp[1]);
	event_base_free(w.pw_base);
	return 0;
}
