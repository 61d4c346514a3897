/*
 * tests/unit/scan_redact.c: streaming redaction (proxy/proxy_scan.c).  A canary
 * secret, raw, percent-encoded in every style and base64/base64url at every
 * alignment, inside response bodies cut at every byte boundary (and fed byte by
 * byte): the canary never appears in any output, in any of those encodings, and
 * the base64 around a redacted secret still decodes, to the filler.  Text without
 * the secret passes unchanged; the held-back tail stays bounded.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../proxy/proxy_scan.h"
#include "../tap.h"

/* A canary with bytes every encoding treats specially. */
static const char canary[] = "CANARY/s3cr3t+k3y=~!*'() &?\xff\xfe";
#define CANARY_LEN	(sizeof(canary) - 1)
static const char ph[] = "AIRLOCK_PLACEHOLDER_xyz";

static struct scan_set *set;

/* Every encoding of the canary that must never come out. */
static struct http_buf forms[64];
static size_t nforms;

static void
form_add_pct(int unres, const char *keep, int lower)
{
	const char *hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
	struct http_buf *b = &forms[nforms++];
	size_t i;
	uint8_t c, e[3];

	for (i = 0; i < CANARY_LEN; i++) {
		c = (uint8_t)canary[i];
		if ((unres && ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || strchr("-._~", c) != NULL)) ||
		    (c != 0 && strchr(keep, c) != NULL))
			http_buf_add(b, &c, 1);
		else {
			e[0] = '%';
			e[1] = (uint8_t)hex[c >> 4];
			e[2] = (uint8_t)hex[c & 15];
			http_buf_add(b, e, 3);
		}
	}
}

/* The base64 characters that depend on the canary alone, at alignment k. */
static void
form_add_b64(size_t k, int url)
{
	struct http_buf e = HTTP_BUF_INIT, *b = &forms[nforms++];
	uint8_t in[64] = { 0 };
	size_t i0 = (8 * k + 5) / 6, i1 = (8 * (k + CANARY_LEN)) / 6;

	memcpy(in + k, canary, CANARY_LEN);
	scan_b64_encode(in, k + CANARY_LEN + 3, url, &e);
	http_buf_add(b, e.hb_p + i0, i1 - i0);
	http_buf_free(&e);
}

static void
forms_init(void)
{
	size_t k;
	int url, lower;

	http_buf_add(&forms[nforms++], canary, CANARY_LEN);
	for (lower = 0; lower < 2; lower++) {
		form_add_pct(1, "", lower);
		form_add_pct(1, "/", lower);
		form_add_pct(1, "!'()*", lower);
		form_add_pct(0, "", lower);
	}
	for (url = 0; url < 2; url++)
		for (k = 0; k < 3; k++)
			form_add_b64(k, url);
	/* and any 12-byte piece of the raw canary */
	for (k = 0; k + 12 <= CANARY_LEN; k += 6)
		http_buf_add(&forms[nforms++], canary + k, 12);
}

static int
leaks(const uint8_t *p, size_t n)
{
	size_t f;

	for (f = 0; f < nforms; f++)
		if (forms[f].hb_len <= n && memmem(p, n, forms[f].hb_p,
		    forms[f].hb_len) != NULL)
			return 1;
	return 0;
}

static uint64_t matches_seen;

static void
on_match(void *arg, const struct scan_match *m)
{
	if (m->sm_id == 7)
		matches_seen++;
}

/* Redacts in[n] cut at cut (n: no cut); 1 byte at a time if cut == SIZE_MAX. */
static int
redact(const uint8_t *in, size_t n, size_t cut, struct http_buf *out)
{
	struct scan_redact *r;
	size_t i;

	if ((r = scan_redact_new(set, on_match, NULL)) == NULL)
		return -1;
	if (cut == SIZE_MAX) {
		for (i = 0; i < n; i++)
			if (scan_redact_feed(r, in + i, 1, out) == -1)
				goto fail;
	} else if (scan_redact_feed(r, in, cut, out) == -1 ||
	    scan_redact_feed(r, in + cut, n - cut, out) == -1)
		goto fail;
	if (scan_redact_finish(r, out) == -1)
		goto fail;
	scan_redact_free(r);
	return 0;
 fail:
	scan_redact_free(r);
	return -1;
}

/* Builds the test bodies: each encoding of the canary in some text. */
static size_t
bodies_make(struct http_buf *b, size_t max)
{
	struct http_buf e = HTTP_BUF_INIT;
	uint8_t in[80];
	size_t nb = 0, k, f;
	int url;

	/* raw and percent forms, between text */
	for (f = 0; f < 9; f++) {
		http_buf_add_str(&b[nb], "{\"echo\":\"");
		http_buf_add(&b[nb], forms[f].hb_p, forms[f].hb_len);
		http_buf_add_str(&b[nb], "\",\"again\":\"");
		http_buf_add(&b[nb], forms[f].hb_p, forms[f].hb_len);
		http_buf_add_str(&b[nb++], "\"}");
	}
	/* whole base64 texts with the canary at each alignment, both ends */
	for (url = 0; url < 2; url++)
		for (k = 0; k < 3; k++) {
			memcpy(in, "user:pass", 9);
			memcpy(in + k, canary, CANARY_LEN);
			memcpy(in + k + CANARY_LEN, "\x01tail", 5);
			e.hb_len = 0;
			scan_b64_encode(in, k + CANARY_LEN + (k == 1 ? 1 : 5), url, &e);
			http_buf_add_str(&b[nb], "Authorization: Basic ");
			http_buf_add(&b[nb], e.hb_p, e.hb_len);
			http_buf_add_str(&b[nb++], "\r\n");
			/* the canary at the very start and very end of the body */
			http_buf_add(&b[nb++], e.hb_p, e.hb_len);
		}
	/* a canary right at the start and right at the end, back to back */
	http_buf_add(&b[nb], canary, CANARY_LEN);
	http_buf_add(&b[nb], canary, CANARY_LEN);
	http_buf_add(&b[nb], forms[1].hb_p, forms[1].hb_len);
	http_buf_add(&b[nb++], canary, CANARY_LEN);
	http_buf_free(&e);
	if (nb > max)
		bail("too many bodies");
	return nb;
}

static void
test_canary(void)
{
	struct http_buf bodies[32] = { HTTP_BUF_INIT };
	struct http_buf out = HTTP_BUF_INIT, ref = HTTP_BUF_INIT;
	size_t nb, b, cut;
	int clean, same;

	nb = bodies_make(bodies, 32);
	for (b = 0; b < nb; b++) {
		ok(leaks(bodies[b].hb_p, bodies[b].hb_len), "body %zu has the canary",
		    b);
		ref.hb_len = 0;
		matches_seen = 0;
		if (redact(bodies[b].hb_p, bodies[b].hb_len, bodies[b].hb_len,
		    &ref) == -1)
			bail("redact");
		ok(matches_seen > 0, "body %zu: match reported", b);
		clean = !leaks(ref.hb_p, ref.hb_len);
		same = 1;
		for (cut = 0; cut <= bodies[b].hb_len; cut++) {
			out.hb_len = 0;
			if (redact(bodies[b].hb_p, bodies[b].hb_len, cut, &out) == -1)
				bail("redact");
			if (leaks(out.hb_p, out.hb_len)) {
				diag("body %zu leaks at cut %zu", b, cut);
				clean = 0;
			}
			if (out.hb_len != ref.hb_len ||
			    memcmp(out.hb_p, ref.hb_p, out.hb_len) != 0)
				same = 0;
		}
		out.hb_len = 0;
		if (redact(bodies[b].hb_p, bodies[b].hb_len, SIZE_MAX, &out) == -1)
			bail("redact");
		if (leaks(out.hb_p, out.hb_len))
			clean = 0;
		if (out.hb_len != ref.hb_len || memcmp(out.hb_p, ref.hb_p,
		    out.hb_len) != 0)
			same = 0;
		ok(clean, "body %zu: no canary in any output", b);
		ok(same, "body %zu: same output at every cut and byte-wise", b);
	}
	for (b = 0; b < nb; b++)
		http_buf_free(&bodies[b]);
	http_buf_free(&out);
	http_buf_free(&ref);
}

static void
test_shapes(void)
{
	struct http_buf out = HTTP_BUF_INIT, e = HTTP_BUF_INIT;
	uint8_t in[80], dec[120], filler[CANARY_LEN];
	size_t k, n, i;
	int url;

	/* raw -> placeholder */
	redact((const uint8_t *)"a " "CANARY/s3cr3t+k3y=~!*'() &?\xff\xfe" " b",
	    CANARY_LEN + 4, SIZE_MAX, &out);
	ok(out.hb_len == strlen(ph) + 4 && memcmp(out.hb_p, "a ", 2) == 0 &&
	    memcmp(out.hb_p + 2, ph, strlen(ph)) == 0, "raw becomes the placeholder");
	/* percent -> the placeholder percent-encoded (nothing to escape in it) */
	out.hb_len = 0;
	redact(forms[1].hb_p, forms[1].hb_len, forms[1].hb_len, &out);
	ok(out.hb_len == strlen(ph) && memcmp(out.hb_p, ph, out.hb_len) == 0,
	    "percent form becomes the placeholder");
	/* base64: same length, decodes, the canary's bytes became the filler */
	for (i = 0; i < CANARY_LEN; i++)
		filler[i] = (uint8_t)ph[i % strlen(ph)];
	for (url = 0; url < 2; url++)
		for (k = 0; k < 3; k++) {
			memcpy(in, "\x10\x20", 2);
			memcpy(in + k, canary, CANARY_LEN);
			memcpy(in + k + CANARY_LEN, "\xaa\xbb\xcc", 3);
			e.hb_len = 0;
			scan_b64_encode(in, k + CANARY_LEN + 3, url, &e);
			out.hb_len = 0;
			redact(e.hb_p, e.hb_len, e.hb_len, &out);
			if (!is_int((long long)e.hb_len, (long long)out.hb_len,
			    "b64%s k=%zu: same length", url ? "url" : "", k))
				continue;
			if (url)	/* decode with the standard alphabet */
				for (i = 0; i < out.hb_len; i++)
					out.hb_p[i] = out.hb_p[i] == '-' ? '+' :
					    out.hb_p[i] == '_' ? '/' : out.hb_p[i];
			ok(scan_b64_decode(out.hb_p, out.hb_len, dec, &n) == 0 &&
			    n == k + CANARY_LEN + 3 &&
			    memcmp(dec, in, k) == 0 &&
			    memcmp(dec + k, filler, CANARY_LEN) == 0 &&
			    memcmp(dec + k + CANARY_LEN, "\xaa\xbb\xcc", 3) == 0,
			    "b64%s k=%zu: decodes to prefix, filler, suffix",
			    url ? "url" : "", k);
		}
	http_buf_free(&out);
	http_buf_free(&e);
}

/*
 * Each decoded view's hold is measured against the raw window, not against the
 * view before it.  After "\/%" the JSON view is back in step with the raw bytes,
 * but for one byte only, while the raw automaton stands on the '%' (a percent form
 * may start there) and the percent view, inside its escape, needs 1 byte: the JSON
 * view still needs the '\' its '/' came from.  The hold once compared the JSON
 * view's time in step with the percent view's window, let the view go and emitted
 * that '\'; from then on the view's ring pointed before the hold, its bytes counted
 * as already out, and nothing more was held for it.  Fed byte by byte, the canary
 * written as \u00XX escapes after "\/%" then came out, escaped, all but its last
 * two bytes, though the same body fed at once was redacted whole.
 */
static void
test_view_hold(void)
{
	static const char pre[] = "{\"u\":\"\\/%", post[] = "\"}";
	struct http_buf in = HTTP_BUF_INIT, want = HTTP_BUF_INIT;
	struct http_buf ref = HTTP_BUF_INIT, out = HTTP_BUF_INIT;
	char e[8];
	size_t i;

	http_buf_add_str(&in, pre);
	for (i = 0; i < CANARY_LEN; i++) {
		/* \u00XX of a byte over 0x7f would decode to two (UTF-8) */
		if ((uint8_t)canary[i] >= 0x80)
			http_buf_add(&in, canary + i, 1);
		else {
			snprintf(e, sizeof(e), "\\u%04x", (unsigned int)canary[i]);
			http_buf_add_str(&in, e);
		}
	}
	http_buf_add_str(&in, post);
	/* The whole escaped canary becomes the placeholder: no byte of it is left. */
	http_buf_add_str(&want, pre);
	http_buf_add_str(&want, ph);
	http_buf_add_str(&want, post);
	matches_seen = 0;
	if (redact(in.hb_p, in.hb_len, in.hb_len, &ref) == -1 ||
	    redact(in.hb_p, in.hb_len, SIZE_MAX, &out) == -1)
		bail("redact");
	ok(ref.hb_len == want.hb_len && memcmp(ref.hb_p, want.hb_p,
	    want.hb_len) == 0, "JSON-escaped canary after \\/%%: redacted whole");
	if (!ok(out.hb_len == want.hb_len && memcmp(out.hb_p, want.hb_p,
	    want.hb_len) == 0, "... and the same fed byte by byte"))
		diag("%zu bytes out, %zu wanted", out.hb_len, want.hb_len);
	is_int(2, (long long)matches_seen, "... one match each time");
	http_buf_free(&in);
	http_buf_free(&want);
	http_buf_free(&ref);
	http_buf_free(&out);
}

static void
test_passthrough(void)
{
	struct http_buf out = HTTP_BUF_INIT;
	struct scan_redact *r;
	uint8_t *in;
	size_t n = 100000, i, maxheld = 0;
	uint32_t x = 12345;

	if ((in = malloc(n)) == NULL || (r = scan_redact_new(set, NULL, NULL)) ==
	    NULL)
		bail("alloc");
	for (i = 0; i < n; i++) {
		x = x * 1103515245 + 12345;
		in[i] = (uint8_t)(x >> 16);
	}
	/* many prefixes of the canary, never the whole */
	for (i = 0; i + CANARY_LEN < n; i += 997)
		memcpy(in + i, canary, CANARY_LEN - 1);
	for (i = 0; i < n; i += 1000) {
		if (scan_redact_feed(r, in + i, 1000, &out) < 0)
			bail("feed");
		if (i + 1000 - out.hb_len > maxheld)
			maxheld = i + 1000 - out.hb_len;
	}
	ok(maxheld <= 3 * CANARY_LEN + 1, "held back at most the longest pattern "
	    "(%zu bytes)", maxheld);
	scan_redact_finish(r, &out);
	ok(out.hb_len == n && memcmp(out.hb_p, in, n) == 0,
	    "text without the secret is unchanged");
	is_int(0, (long long)scan_redact_count(r), "no match counted");
	/* reusable after finish */
	out.hb_len = 0;
	scan_redact_feed(r, (const uint8_t *)canary, CANARY_LEN, &out);
	scan_redact_finish(r, &out);
	ok(!leaks(out.hb_p, out.hb_len), "reused after finish");
	is_int(1, (long long)scan_redact_count(r), "one match counted");
	scan_redact_free(r);
	scan_redact_free(NULL);
	free(in);
	/* a bounded output: EMSGSIZE */
	{
		struct http_buf small = HTTP_BUF_INIT;

		small.hb_max = 4;
		if ((r = scan_redact_new(set, NULL, NULL)) == NULL)
			bail("alloc");
		errno = 0;
		is_int(-1, scan_redact_feed(r, (const uint8_t *)canary, CANARY_LEN,
		    &small) == -1 ? -1 : scan_redact_finish(r, &small),
		    "output over hb_max");
		is_int(EMSGSIZE, errno, "EMSGSIZE");
		scan_redact_free(r);
		http_buf_free(&small);
	}
	http_buf_free(&out);
}

int
main(void)
{
	size_t f;

	plan_lazy();
	if ((set = scan_set_new()) == NULL ||
	    scan_set_add(set, 7, (const uint8_t *)canary, CANARY_LEN,
	    (const uint8_t *)ph, strlen(ph)) == -1 || scan_set_build(set) == -1)
		bail("set: %s", strerror(errno));
	forms_init();
	test_canary();
	test_shapes();
	test_view_hold();
	test_passthrough();
	scan_set_free(set);
	for (f = 0; f < nforms; f++)
		http_buf_free(&forms[f]);
	return tap_failures() != 0;
}
