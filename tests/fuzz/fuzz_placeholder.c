/*
 * tests/fuzz/fuzz_placeholder.c: placeholder detection, substitution and streaming
 * redaction (proxy/proxy_scan.c) over arbitrary bytes.  Checks:
 *	- substitution leaves no raw placeholder, and a found raw placeholder is
 *	  always substituted;
 *	- detection over a stream cut at a point chosen from the input agrees with
 *	  detection over the whole;
 *	- redaction gives the same output whole, cut, and byte by byte, and never
 *	  emits the canary, raw or in hex (its alphabet is disjoint from the
 *	  placeholder's, so no replacement can complete it).  Whole, cut and byte by
 *	  byte agreeing is what checks the decoded views' lookahead.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../proxy/proxy_scan.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);
int	LLVMFuzzerInitialize(int *, char ***);

#define PH1	"PH.GITHUB.TOKEN.AIRLOCK!"
#define SEC1	"\x01secret-one\x01"
#define PH2	"sk-AIRLOCK.PLACEHOLDER.2"
#define SEC2	"\x01secret-two-longer\x01"
/* lower case, '/', and bytes no placeholder or base64 text has */
static const char canary[] = "zq\xff" "canary/secret\x01";
static const char canary_ph[] = "PH.CANARY.REDACTED";
static const char canary_hex[] = "7a71ff63616e6172792f73656372657401";

static struct scan_set *phs, *secs;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if ((phs = scan_set_new()) == NULL ||
	    scan_set_add(phs, 1, (const uint8_t *)PH1, strlen(PH1),
	    (const uint8_t *)SEC1, strlen(SEC1)) == -1 ||
	    scan_set_add(phs, 2, (const uint8_t *)PH2, strlen(PH2),
	    (const uint8_t *)SEC2, strlen(SEC2)) == -1 ||
	    scan_set_build(phs) == -1)
		abort();
	if ((secs = scan_set_new()) == NULL ||
	    scan_set_add(secs, 1, (const uint8_t *)canary, sizeof(canary) - 1,
	    (const uint8_t *)canary_ph, strlen(canary_ph)) == -1 ||
	    scan_set_build(secs) == -1)
		abort();
	return 0;
}

static int
has(const uint8_t *p, size_t n, const char *s)
{
	return n >= strlen(s) && memmem(p, n, s, strlen(s)) != NULL;
}

static void
redact(const uint8_t *d, size_t n, size_t cut, int bytewise, struct http_buf *out)
{
	struct scan_redact *r;
	size_t i;

	if ((r = scan_redact_new(secs, NULL, NULL)) == NULL)
		abort();
	if (bytewise) {
		for (i = 0; i < n; i++)
			if (scan_redact_feed(r, d + i, 1, out) == -1)
				abort();
	} else if (scan_redact_feed(r, d, cut, out) == -1 ||
	    scan_redact_feed(r, d + cut, n - cut, out) == -1)
		abort();
	if (scan_redact_finish(r, out) == -1)
		abort();
	scan_redact_free(r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_buf out = HTTP_BUF_INIT, o2 = HTTP_BUF_INIT, o3 = HTTP_BUF_INIT;
	struct scan_stream st;
	struct scan_match m, m2;
	size_t cut;
	int n, found, found2;

	cut = size > 0 ? data[0] % (size + 1) : 0;

	/* substitution */
	n = scan_subst_value(phs, data, size, &out, NULL, 0);
	if (n < 0)
		abort();
	if (has(out.hb_p, out.hb_len, PH1) || has(out.hb_p, out.hb_len, PH2))
		abort();
	if ((has(data, size, PH1) || has(data, size, PH2)) && n == 0)
		abort();
	if (n == 0 && (out.hb_len != size ||
	    (size > 0 && memcmp(out.hb_p, data, size) != 0)))
		abort();

	/* detection: whole vs cut */
	found = scan_find(phs, data, size, &m);
	scan_stream_init(&st, phs);
	found2 = scan_stream_feed(&st, data, cut, &m2) ||
	    scan_stream_feed(&st, data + cut, size - cut, &m2);
	if (found2 && !found)
		abort();
	if ((has(data, size, PH1) || has(data, size, PH2)) && !found2)
		abort();

	/* redaction */
	out.hb_len = 0;
	redact(data, size, size, 0, &out);
	redact(data, size, cut, 0, &o2);
	redact(data, size, 0, 1, &o3);
	if (o2.hb_len != out.hb_len || o3.hb_len != out.hb_len ||
	    (out.hb_len > 0 && (memcmp(o2.hb_p, out.hb_p, out.hb_len) != 0 ||
	    memcmp(o3.hb_p, out.hb_p, out.hb_len) != 0)))
		abort();
	if (has(out.hb_p, out.hb_len, canary) ||
	    has(out.hb_p, out.hb_len, canary_hex))
		abort();
	http_buf_free(&out);
	http_buf_free(&o2);
	http_buf_free(&o3);
	return 0;
}
