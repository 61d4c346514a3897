/*
 * tests/unit/scan_encodings.c: the encodings of issue 11 ("Encoded echoes"), both
 * ways (proxy/proxy_scan.c).
 *	- detection (what a VM sends): a placeholder in hex (both cases), with JSON
 *	  string escapes (\uXXXX in either case, \/, mixed with plain bytes), as
 *	  base64 whose '/' is written \/, as a form field ('+' for a space), inside a
 *	  body cut at every byte offset;
 *	- redaction (what an origin sends): a secret in the same encodings and with
 *	  mixed percent escapes, replaced by its placeholder (hex: in hex, same case;
 *	  JSON: plainly, escaped as JSON needs; mixed percent: RFC 3986 encoded), the
 *	  same output whole, cut at every byte offset, and byte by byte;
 *	- positive controls: look-alike text (hex and JSON near-misses, ordinary
 *	  escapes, broken escapes) is neither flagged nor changed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../proxy/proxy_scan.h"
#include "../tap.h"

/* Placeholders (detection). P2's base64 has '/' at every alignment. */
#define P1	"AIRLOCK_PH_0123456789abcdef"
#define P2	"ph?\?>>?\?>>?\?AIRLOCK"	/* "?\?": no trigraph */
#define P3	"AIRLOCK PH with spaces"
/* A secret with bytes JSON escapes (redaction), its placeholder; a form secret. */
static const char sec[] = "s3cr3t/K3y\"q\\<&\xc3\xa9-0123456789";
#define SEC_LEN		(sizeof(sec) - 1)
#define SPH		"AIRLOCK_PH_SECRET_01"
#define SEC2		"form secret value 42"
#define SPH2		"AIRLOCK_PH_FORM_02"
#define SEC3		"b64?\?>>?\?>>?\?secret"	/* '/' in its base64 */
#define SPH3		"AIRLOCK_PH_B64_03"

static struct scan_set *phs, *secs;

/* ---- encoders of the test (independent of proxy_scan.c) ---- */

static void
hex(struct http_buf *b, const char *s, size_t n, int upper)
{
	const char *d = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		http_buf_add(b, &d[(uint8_t)s[i] >> 4], 1);
		http_buf_add(b, &d[(uint8_t)s[i] & 15], 1);
	}
}

enum {
	J_SLASH = 1,	/* '/' as \/ (PHP) */
	J_HTML = 2,	/* < > & as \u003c ... (Go) */
	J_ASCII = 4,	/* non-ASCII as \uXXXX (Python, PHP) */
	J_ALL = 8,	/* every character as \uXXXX */
	J_UPPER = 16,	/* upper-case hex digits */
	J_ODD = 32,	/* every other character as \uXXXX (mixed) */
};

static void
json_u(struct http_buf *b, unsigned int cp, int f)
{
	char e[8];

	snprintf(e, sizeof(e), (f & J_UPPER) ? "\\u%04X" : "\\u%04x", cp);
	http_buf_add(b, e, 6);
}

/* A JSON string body (no quotes) for s[n], UTF-8, in style f. */
static void
json(struct http_buf *b, const char *s, size_t n, int f)
{
	const uint8_t *p = (const uint8_t *)s;
	unsigned int cp;
	size_t i, k, ch = 0;

	for (i = 0; i < n; i += k, ch++) {
		cp = p[i];
		k = 1;
		if (cp >= 0xc0 && cp < 0xe0 && i + 1 < n) {
			cp = (cp & 0x1f) << 6 | (p[i + 1] & 0x3f);
			k = 2;
		}
		if ((f & J_ALL) || ((f & J_ODD) && ch % 2 == 1) ||
		    ((f & J_ASCII) && cp >= 0x80) || cp < 0x20 ||
		    ((f & J_HTML) && (cp == '<' || cp == '>' || cp == '&')))
			json_u(b, cp, f);
		else if (cp == '"' || cp == '\\' || (cp == '/' && (f & J_SLASH))) {
			http_buf_add(b, "\\", 1);
			http_buf_add(b, p + i, 1);
		} else
			http_buf_add(b, p + i, k);
	}
}

/* The base64 middle of s at alignment k (standard alphabet). */
static void
b64_middle(struct http_buf *b, const char *s, size_t n, size_t k)
{
	struct http_buf e = HTTP_BUF_INIT;
	uint8_t in[128] = { 0 };
	size_t i0 = (8 * k + 5) / 6, i1 = (8 * (k + n)) / 6;

	memcpy(in + k, s, n);
	scan_b64_encode(in, k + n + 3, 0, &e);
	http_buf_add(b, e.hb_p + i0, i1 - i0);
	http_buf_free(&e);
}

/* Percent-encoding: every other byte escaped (mixed), lower-case hex. */
static void
pct_mixed(struct http_buf *b, const char *s, size_t n)
{
	char e[4];
	size_t i;

	for (i = 0; i < n; i++) {
		if (i % 2 == 0 && s[i] != '%' && (uint8_t)s[i] > ' ' &&
		    (uint8_t)s[i] < 0x7f)
			http_buf_add(b, s + i, 1);
		else {
			snprintf(e, sizeof(e), "%%%02x", (uint8_t)s[i]);
			http_buf_add(b, e, 3);
		}
	}
}

static void
wrap(struct http_buf *b, const char *pre, const struct http_buf *in,
    const char *post)
{
	http_buf_add_str(b, pre);
	http_buf_add(b, in->hb_p, in->hb_len);
	http_buf_add_str(b, post);
}

/* ---- detection ---- */

/* Found whole, and by a stream cut at every offset (into three feeds). */
static int
detect_all(const struct http_buf *b, int id, enum scan_enc enc, const char *what)
{
	struct scan_stream st;
	struct scan_match m;
	size_t cut, bad = 0;
	int f;

	if (!scan_find(phs, b->hb_p, b->hb_len, &m) || m.sm_id != id ||
	    m.sm_enc != enc) {
		ok(0, "detect %s: whole (found id/enc)", what);
		return 0;
	}
	for (cut = 0; cut <= b->hb_len; cut++) {
		scan_stream_init(&st, phs);
		f = scan_stream_feed(&st, b->hb_p, cut, &m) ||
		    scan_stream_feed(&st, b->hb_p + cut, (b->hb_len - cut) / 2, &m) ||
		    scan_stream_feed(&st, b->hb_p + cut + (b->hb_len - cut) / 2,
		    b->hb_len - cut - (b->hb_len - cut) / 2, &m);
		if (!f || m.sm_id != id)
			bad++;
	}
	return ok(bad == 0, "detect %s: whole and cut at each of %zu offsets",
	    what, b->hb_len + 1);
}

static int
detect_none(const char *s, size_t n, const char *what)
{
	struct scan_stream st;
	struct scan_match m;
	size_t cut, bad = 0;

	if (scan_find(phs, (const uint8_t *)s, n, &m))
		bad++;
	for (cut = 0; cut <= n; cut++) {
		scan_stream_init(&st, phs);
		if (scan_stream_feed(&st, (const uint8_t *)s, cut, &m) ||
		    scan_stream_feed(&st, (const uint8_t *)s + cut, n - cut, &m))
			bad++;
	}
	return ok(bad == 0, "not flagged: %s", what);
}

static int
detect_str(const char *s, const char *what)
{
	return detect_none(s, strlen(s), what);
}

static void
test_detect(void)
{
	struct http_buf f = HTTP_BUF_INIT, b = HTTP_BUF_INIT;
	static const int styles[] = { J_ALL, J_ALL | J_UPPER, J_ODD,
	    J_ODD | J_UPPER };
	size_t i, k, nslash = 0;
	char what[64];

	for (i = 0; i < 2; i++) {
		f.hb_len = b.hb_len = 0;
		hex(&f, P1, strlen(P1), (int)i);
		wrap(&b, "{\"token\":\"", &f, "\"}\r\n");
		detect_all(&b, 1, SCAN_ENC_HEX, i ? "hex, upper case" :
		    "hex, lower case");
	}
	for (i = 0; i < sizeof(styles) / sizeof(styles[0]); i++) {
		f.hb_len = b.hb_len = 0;
		json(&f, P1, strlen(P1), styles[i]);
		wrap(&b, "{\"data\": \"", &f, "\"}");
		snprintf(what, sizeof(what), "JSON \\u escapes, style %d",
		    styles[i]);
		detect_all(&b, 1, SCAN_ENC_JSON, what);
	}
	/* \/ for the '/' of a base64 text (PHP's json_encode) */
	for (k = 0; k < 3; k++) {
		f.hb_len = b.hb_len = 0;
		b64_middle(&f, P2, strlen(P2), k);
		if (memchr(f.hb_p, '/', f.hb_len) == NULL)
			continue;
		nslash++;
		http_buf_add_str(&b, "{\"b\":\"QUJD");
		json(&b, (const char *)f.hb_p, f.hb_len, J_SLASH);
		http_buf_add_str(&b, "QUJD\"}");
		snprintf(what, sizeof(what), "base64 at alignment %zu with \\/", k);
		detect_all(&b, 2, SCAN_ENC_B64, what);
	}
	ok(nslash > 0, "P2's base64 has a '/' to escape (%zu alignments)", nslash);
	/* a placeholder with '/' as \/, and hex inside a JSON escape view */
	f.hb_len = b.hb_len = 0;
	http_buf_add_str(&f, P2);
	json(&b, P2, strlen(P2), J_SLASH | J_ODD);
	detect_all(&b, 2, SCAN_ENC_JSON, "JSON, mixed \\u and plain");
	/* a form field: space as '+' */
	b.hb_len = 0;
	http_buf_add_str(&b, "a=1&q=AIRLOCK+PH+with+spaces&z=2");
	detect_all(&b, 3, SCAN_ENC_PCT, "form field, '+' for space");

	/* positive controls */
	f.hb_len = 0;
	hex(&f, P1, strlen(P1) - 1, 0);
	http_buf_add_str(&f, "6700");	/* 'g': one byte off */
	detect_none((const char *)f.hb_p, f.hb_len, "hex of a near-miss");
	f.hb_len = 0;
	hex(&f, P1, strlen(P1), 0);
	f.hb_p[3] = 'X';
	detect_none((const char *)f.hb_p, f.hb_len, "broken hex");
	f.hb_len = 0;
	json(&f, "AIRLOCK_PH_0123456789abcdeF", 27, J_ALL);
	detect_none((const char *)f.hb_p, f.hb_len, "JSON \\u of a near-miss");
	f.hb_len = 0;
	json(&f, P1, strlen(P1), J_ALL);
	f.hb_p[8] = 'x';		/* \u00x1: a broken escape */
	detect_none((const char *)f.hb_p, f.hb_len, "a broken \\u escape");
	detect_str("{\"a\":\"line\\nnext \\u00e9 \\/path \\\\ \\\"q\\\"\"}",
	    "ordinary JSON escapes");
	detect_str("AIRLOCK_PH_0123456789abcde\\f",
	    "\\f after a prefix is a form feed, not 'f'");
	detect_str("AIRLOCK+PH%20with+spaces", "'+' mixed with %20 (not covered)");
	detect_str("deadbeef0123456789ABCDEF00ff", "ordinary hex");
	http_buf_free(&f);
	http_buf_free(&b);
}

/* ---- redaction ---- */

static void
redact(const uint8_t *p, size_t n, size_t cut, int bytewise, struct http_buf *out)
{
	struct scan_redact *r;
	size_t i;

	if ((r = scan_redact_new(secs, NULL, NULL)) == NULL)
		bail("redact_new: %s", strerror(errno));
	if (bytewise) {
		for (i = 0; i < n; i++)
			if (scan_redact_feed(r, p + i, 1, out) == -1)
				bail("feed");
	} else if (scan_redact_feed(r, p, cut, out) == -1 ||
	    scan_redact_feed(r, p + cut, n - cut, out) == -1)
		bail("feed");
	if (scan_redact_finish(r, out) == -1)
		bail("finish");
	scan_redact_free(r);
}

/*
 * Redacts in whole, cut at every offset and byte by byte: every output must be
 * want (NULL: in itself, unchanged).
 */
static int
redact_all(const struct http_buf *in, const struct http_buf *want, const char *what)
{
	struct http_buf out = HTTP_BUF_INIT;
	const struct http_buf *w = want != NULL ? want : in;
	size_t cut, bad = 0;

	for (cut = 0; cut <= in->hb_len + 1; cut++) {
		out.hb_len = 0;
		if (cut <= in->hb_len)
			redact(in->hb_p, in->hb_len, cut, 0, &out);
		else
			redact(in->hb_p, in->hb_len, 0, 1, &out);
		if (out.hb_len != w->hb_len || memcmp(out.hb_p, w->hb_p,
		    w->hb_len) != 0) {
			if (bad++ == 0)
				diag("cut %zu: got \"%.*s\"", cut, (int)out.hb_len,
				    (const char *)out.hb_p);
		}
	}
	http_buf_free(&out);
	return ok(bad == 0, "%s %s: whole, cut at each of %zu offsets, byte by byte",
	    want != NULL ? "redact" : "unchanged", what, in->hb_len + 1);
}

static void
test_redact(void)
{
	struct http_buf f = HTTP_BUF_INIT, in = HTTP_BUF_INIT, want = HTTP_BUF_INIT;
	static const struct {
		int		 f;
		const char	*what;
	} js[] = {
		{ 0, "JSON, minimal escaping (JavaScript)" },
		{ J_SLASH | J_ASCII, "JSON, \\/ and \\u00e9 (PHP)" },
		{ J_HTML, "JSON, \\u003c \\u0026 (Go)" },
		{ J_ASCII, "JSON, ensure_ascii (Python)" },
		{ J_ALL, "JSON, every character \\u" },
		{ J_ALL | J_UPPER, "JSON, every character \\u, upper-case hex" },
		{ J_ODD | J_SLASH, "JSON, every other character \\u" },
	};
	size_t i, k;
	char what[64];

	for (i = 0; i < 2; i++) {
		f.hb_len = in.hb_len = want.hb_len = 0;
		hex(&f, sec, SEC_LEN, (int)i);
		wrap(&in, "echo: ", &f, "\n");
		f.hb_len = 0;
		hex(&f, SPH, strlen(SPH), (int)i);
		wrap(&want, "echo: ", &f, "\n");
		redact_all(&in, &want, i ? "hex, upper case (to hex)" :
		    "hex, lower case (to hex)");
	}
	for (i = 0; i < sizeof(js) / sizeof(js[0]); i++) {
		f.hb_len = in.hb_len = want.hb_len = 0;
		json(&f, sec, SEC_LEN, js[i].f);
		wrap(&in, "{\"echo\":\"", &f, "\",\"n\":1}");
		http_buf_add_str(&want, "{\"echo\":\"" SPH "\",\"n\":1}");
		redact_all(&in, &want, js[i].what);
	}
	/* mixed percent escapes: the placeholder, RFC 3986-encoded */
	f.hb_len = in.hb_len = want.hb_len = 0;
	pct_mixed(&f, sec, SEC_LEN);
	wrap(&in, "next=", &f, "&x=1");
	http_buf_add_str(&want, "next=" SPH "&x=1");
	redact_all(&in, &want, "percent, every other byte escaped");
	/* a form field */
	in.hb_len = want.hb_len = 0;
	http_buf_add_str(&in, "q=form+secret+value+42&x=1");
	http_buf_add_str(&want, "q=" SPH2 "&x=1");
	redact_all(&in, &want, "form field, '+' for space");
	/* base64 with \/ inside JSON: no middle of the secret survives */
	for (k = 0; k < 3; k++) {
		struct http_buf out = HTTP_BUF_INIT, m = HTTP_BUF_INIT;

		f.hb_len = in.hb_len = m.hb_len = 0;
		b64_middle(&f, SEC3, strlen(SEC3), k);
		if (memchr(f.hb_p, '/', f.hb_len) == NULL)
			bail("SEC3 has no '/' in its base64");
		http_buf_add_str(&in, "{\"b\":\"QUJD");
		json(&in, (const char *)f.hb_p, f.hb_len, J_SLASH);
		http_buf_add_str(&in, "QUJD\"}");
		json(&m, (const char *)f.hb_p, f.hb_len, J_SLASH);
		redact(in.hb_p, in.hb_len, in.hb_len, 0, &out);
		snprintf(what, sizeof(what), "base64 at alignment %zu, with \\/", k);
		ok(memmem(out.hb_p, out.hb_len, m.hb_p, m.hb_len) == NULL &&
		    memmem(out.hb_p, out.hb_len, f.hb_p, f.hb_len) == NULL &&
		    out.hb_len >= in.hb_len - f.hb_len && memcmp(out.hb_p,
		    "{\"b\":\"QUJ", 8) == 0 && memcmp(out.hb_p + out.hb_len - 5,
		    "UJD\"}", 5) == 0,
		    "redact %s", what);
		redact_all(&in, &out, what);
		http_buf_free(&out);
		http_buf_free(&m);
	}

	/* positive controls */
	in.hb_len = 0;
	hex(&in, sec, SEC_LEN - 1, 0);
	http_buf_add_str(&in, "3a");
	redact_all(&in, NULL, "hex of a near-miss");
	in.hb_len = 0;
	json(&in, sec, SEC_LEN - 1, J_ALL);
	http_buf_add_str(&in, "\\u0038");
	redact_all(&in, NULL, "JSON \\u of a near-miss");
	in.hb_len = 0;
	http_buf_add_str(&in, "{\"a\":\"line\\nnext \\u00e9 \\/path\\\\ %41%4 %zz "
	    "\\u12 \\q \\\"q\\\"\"}");
	redact_all(&in, NULL, "ordinary and broken escapes");
	in.hb_len = 0;
	hex(&in, "\x01\x02 binary \xff data, not secret",
	    strlen("\x01\x02 binary \xff data, not secret"), 1);
	redact_all(&in, NULL, "ordinary hex");
	http_buf_free(&f);
	http_buf_free(&in);
	http_buf_free(&want);
}

/* The lookahead stays bounded by the documented amount, even in escapes. */
static void
test_bounded(void)
{
	struct http_buf in = HTTP_BUF_INIT, out = HTTP_BUF_INIT;
	struct scan_redact *r;
	size_t i, maxheld = 0, bound;

	/* Prefixes of the secret, each written \u00XX, never the whole. */
	for (i = 0; i < 200; i++)
		json(&in, sec, SEC_LEN - 1, J_ALL);
	if ((r = scan_redact_new(secs, NULL, NULL)) == NULL)
		bail("alloc");
	for (i = 0; i < in.hb_len; i += 7) {
		if (scan_redact_feed(r, in.hb_p + i, in.hb_len - i < 7 ?
		    in.hb_len - i : 7, &out) == -1)
			bail("feed");
		if (i + 7 - out.hb_len > maxheld)
			maxheld = i + 7 - out.hb_len;
	}
	scan_redact_finish(r, &out);
	bound = 6 * (3 * SEC_LEN + 1) + 5 + 7;
	ok(maxheld <= bound, "held back at most %zu bytes (%zu)", bound, maxheld);
	ok(out.hb_len == in.hb_len && memcmp(out.hb_p, in.hb_p, in.hb_len) == 0,
	    "prefixes only: unchanged");
	scan_redact_free(r);
	http_buf_free(&in);
	http_buf_free(&out);
}

int
main(void)
{
	plan_lazy();
	if ((phs = scan_set_new()) == NULL ||
	    scan_set_add(phs, 1, (const uint8_t *)P1, strlen(P1),
	    (const uint8_t *)"secret-one!", 11) == -1 ||
	    scan_set_add(phs, 2, (const uint8_t *)P2, strlen(P2),
	    (const uint8_t *)"secret-two!", 11) == -1 ||
	    scan_set_add(phs, 3, (const uint8_t *)P3, strlen(P3),
	    (const uint8_t *)"secret-three!", 13) == -1 ||
	    scan_set_build(phs) == -1)
		bail("placeholder set: %s", strerror(errno));
	if ((secs = scan_set_new()) == NULL ||
	    scan_set_add(secs, 1, (const uint8_t *)sec, SEC_LEN,
	    (const uint8_t *)SPH, strlen(SPH)) == -1 ||
	    scan_set_add(secs, 2, (const uint8_t *)SEC2, strlen(SEC2),
	    (const uint8_t *)SPH2, strlen(SPH2)) == -1 ||
	    scan_set_add(secs, 3, (const uint8_t *)SEC3, strlen(SEC3),
	    (const uint8_t *)SPH3, strlen(SPH3)) == -1 ||
	    scan_set_build(secs) == -1)
		bail("secret set: %s", strerror(errno));
	test_detect();
	test_redact();
	test_bounded();
	scan_set_free(phs);
	scan_set_free(secs);
	return tap_failures() != 0;
}
