/*
 * bench/scanbench.c: the scanner (proxy/proxy_scan.c) alone, at memory speed, side by
 * side with Hyperscan on the same data in the same run (make bench-scan;
 * bench/README.md, "Scanner microbenchmark").
 *
 * Data: 1 MiB of text made from a fixed seed: JSON API response bodies (\u00XX,
 * \/ and \n escapes) and HTML pages with inline JavaScript (URLs with %XX), with a
 * few planted needles: placeholders and secret values, raw and encoded (base64,
 * hex, percent, JSON-escaped).  Secrets are API-key-like (20-64 bytes), placeholders
 * as the vault makes them (AIRLOCK_PLACEHOLDER_<NAME>_<16 hex>).
 *
 * For 1, 16 and 256 secrets: airlock's detection (struct scan_stream over the
 * placeholder set, as proxy_request.c feeds request bodies) and redaction (struct
 * scan_redact over the secret set, as proxy_inspect.c feeds response bodies), fed
 * in 16 KiB pieces; Hyperscan (hs_scan in block mode over the whole MiB, and
 * hs_scan_stream in 16 KiB pieces) over the same literal patterns airlock's
 * automaton holds for those sets: for each needle the raw form, the six base64
 * middles, the percent-encoded literal styles and hex, built here the way
 * proxy_scan.c builds them, and checked against airlock (each pattern given to
 * Hyperscan, scanned alone by scan_find(), is found as the same needle and the
 * same kind of encoding).  Hyperscan is not given the decoded views (percent-
 * decoded and JSON-unescaped), which airlock also runs: its figure is a lower
 * bound on the work, the limit.
 *
 * Sanity check, which fails the run (exit 1): both engines must find the same raw
 * needles at the same end offsets, and at least one.
 *
 * Timing: CPU time of the process (CLOCK_PROCESS_CPUTIME_ID), median of
 * SCANBENCH_REPEATS (default 7) runs, each at least SCANBENCH_MIN_MS (default 100)
 * ms of repeated passes over the MiB.  Output: a markdown table on stdout.
 * SCANBENCH_PROFILE=detect:256 (or redact:N) runs only that engine for a while,
 * for perf record.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hs/hs.h>

#include "../proxy/proxy_scan.h"

#define DATA_LEN	(1024 * 1024)
#define CHUNK		(16 * 1024)
#define NSECRETS_MAX	256
#define MAX_PATS	(NSECRETS_MAX * 32)

/* ---- deterministic randomness ---- */

static uint64_t rng_state = 0x5eed2026c0ffee01ull;

static uint64_t
rng(void)
{
	uint64_t x = rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545f4914f6cdd1dull;
}

static size_t
rng_below(size_t n)
{
	return (size_t)(rng() % n);
}

/* ---- a growing text ---- */

struct text {
	uint8_t		*p;
	size_t		 len;
	size_t		 cap;
};

static void
t_add(struct text *t, const void *p, size_t n)
{
	if (t->len + n > t->cap) {
		while (t->len + n > t->cap)
			t->cap = t->cap != 0 ? t->cap * 2 : 4096;
		if ((t->p = realloc(t->p, t->cap)) == NULL) {
			perror("realloc");
			exit(2);
		}
	}
	memcpy(t->p + t->len, p, n);
	t->len += n;
}

static void
t_str(struct text *t, const char *s)
{
	t_add(t, s, strlen(s));
}

static void
t_fmt(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
t_fmt(struct text *t, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		t_add(t, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* ---- secrets and placeholders ---- */

struct secret {
	char		 value[160];
	size_t		 vlen;
	char		 ph[128];
	size_t		 plen;
};

static struct secret secrets[NSECRETS_MAX];

static const char alnum[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
static const char b64chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void
rand_from(char *out, size_t n, const char *alpha)
{
	size_t i, an = strlen(alpha);

	for (i = 0; i < n; i++)
		out[i] = alpha[rng_below(an)];
	out[n] = '\0';
}

/* API-key-like values of the usual shapes, 20..64 bytes. */
static void
make_secrets(void)
{
	static const char *names[] = { "OPENAI", "GITHUB", "AWS_ID", "AWS_SECRET",
	    "SLACK", "STRIPE", "ANTHROPIC", "GENERIC" };
	char body[80];
	size_t i, k;

	for (i = 0; i < NSECRETS_MAX; i++) {
		struct secret *s = &secrets[i];

		k = i % 8;
		switch (k) {
		case 0:
			rand_from(body, 48, alnum);
			snprintf(s->value, sizeof(s->value), "sk-proj-%s", body);
			break;
		case 1:
			rand_from(body, 36, alnum);
			snprintf(s->value, sizeof(s->value), "ghp_%s", body);
			break;
		case 2:
			rand_from(body, 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567");
			snprintf(s->value, sizeof(s->value), "AKIA%s", body);
			break;
		case 3:	/* 40 bytes of the base64 alphabet: '/' and '+' */
			rand_from(body, 40, b64chars);
			snprintf(s->value, sizeof(s->value), "%s", body);
			break;
		case 4:
			{
				unsigned long long a = rng() % 9000000000000ull +
				    1000000000000ull;
				unsigned long long b = rng() % 9000000000000ull +
				    1000000000000ull;

				rand_from(body, 24, alnum);
				snprintf(s->value, sizeof(s->value), "xoxb-%llu-%llu-%s",
				    a, b, body);
			}
			break;
		case 5:
			rand_from(body, 24, alnum);
			snprintf(s->value, sizeof(s->value), "sk_live_%s", body);
			break;
		case 6:
			rand_from(body, 56, alnum);
			snprintf(s->value, sizeof(s->value), "sk-ant-api03-%s", body);
			s->value[64] = '\0';
			break;
		default:
			rand_from(body, 20 + rng_below(45), alnum);
			snprintf(s->value, sizeof(s->value), "%s", body);
			break;
		}
		s->vlen = strlen(s->value);
		snprintf(s->ph, sizeof(s->ph), "AIRLOCK_PLACEHOLDER_%s_%zu_%016llx",
		    names[k], i, (unsigned long long)rng());
		s->plen = strlen(s->ph);
	}
}

/* ---- encodings (as proxy_scan.c builds its patterns) ---- */

static const char b64_std[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static size_t
b64_encode(const uint8_t *in, size_t n, const char *alpha, int pad, char *out)
{
	size_t i, o = 0;
	unsigned int v;

	for (i = 0; i < n; i += 3) {
		v = (unsigned int)in[i] << 16;
		if (i + 1 < n)
			v |= (unsigned int)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		out[o++] = alpha[v >> 18 & 63];
		out[o++] = alpha[v >> 12 & 63];
		if (i + 1 < n)
			out[o++] = alpha[v >> 6 & 63];
		else if (pad)
			out[o++] = '=';
		if (i + 2 < n)
			out[o++] = alpha[v & 63];
		else if (pad)
			out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

static int
is_unres(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
}

static size_t
pct_encode(const uint8_t *in, size_t n, int unres, const char *keep, int plus,
    int lower, char *out)
{
	const char *hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		if (plus && in[i] == ' ')
			out[o++] = '+';
		else if ((unres && is_unres(in[i])) ||
		    (in[i] != '\0' && strchr(keep, in[i]) != NULL))
			out[o++] = (char)in[i];
		else {
			out[o++] = '%';
			out[o++] = hex[in[i] >> 4];
			out[o++] = hex[in[i] & 15];
		}
	}
	out[o] = '\0';
	return o;
}

static size_t
hex_encode(const uint8_t *in, size_t n, int lower, char *out)
{
	const char *hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hex[in[i] >> 4];
		out[2 * i + 1] = hex[in[i] & 15];
	}
	out[2 * n] = '\0';
	return 2 * n;
}

/* ---- the pattern list given to Hyperscan ---- */

enum pkind { PK_RAW, PK_B64, PK_PCT, PK_HEX };
static const char *pkind_name[] = { "raw", "base64", "percent", "hex" };

struct patlist {
	char		*pat[MAX_PATS];
	size_t		 len[MAX_PATS];
	unsigned int	 ent[MAX_PATS];
	enum pkind	 kind[MAX_PATS];
	size_t		 n;
	size_t		 bykind[4];
};

static void
pl_add(struct patlist *pl, unsigned int ent, enum pkind k, const char *p, size_t n)
{
	size_t i;

	/* One needle's identical forms are one pattern (as in airlock's trie). */
	for (i = pl->n; i > 0 && pl->ent[i - 1] == ent; i--)
		if (pl->len[i - 1] == n && memcmp(pl->pat[i - 1], p, n) == 0)
			return;
	if (pl->n >= MAX_PATS) {
		fprintf(stderr, "scanbench: too many patterns\n");
		exit(2);
	}
	if ((pl->pat[pl->n] = malloc(n + 1)) == NULL)
		exit(2);
	memcpy(pl->pat[pl->n], p, n);
	pl->pat[pl->n][n] = '\0';
	pl->len[pl->n] = n;
	pl->ent[pl->n] = ent;
	pl->kind[pl->n] = k;
	pl->bykind[k]++;
	pl->n++;
}

/*
 * The literal patterns of needle N (ent): raw; base64 "middles": for alignment
 * k = 0..2 the characters of base64(k zero bytes, N) from ceil(8k/6) to
 * floor(8(k+n)/6) - 1, both alphabets; percent: RFC 3986 unreserved kept, also
 * '/' kept, also !'()* kept, everything escaped, form style ('+' for space, only
 * for a needle with a space), each in upper and lower case, unless it equals the
 * raw form; hex lower and upper.
 */
static void
pl_needle(struct patlist *pl, unsigned int ent, const uint8_t *nd, size_t n)
{
	static const struct {
		int		 unres;
		const char	*keep;
		int		 plus;
	} styles[] = {
		{ 1, "", 0 }, { 1, "/", 0 }, { 1, "!'()*", 0 }, { 0, "", 0 },
		{ 1, "*", 1 },
	};
	uint8_t buf[200];
	char enc[600];
	size_t k, a, i0, i1, s, pl_len;
	int lower;

	pl_add(pl, ent, PK_RAW, (const char *)nd, n);
	for (k = 0; k < 3; k++) {
		memset(buf, 0, sizeof(buf));
		memcpy(buf + k, nd, n);
		i0 = (8 * k + 5) / 6;
		i1 = (8 * (k + n)) / 6;
		for (a = 0; a < 2; a++) {
			b64_encode(buf, k + n, a == 0 ? b64_std : b64_url, 0, enc);
			pl_add(pl, ent, PK_B64, enc + i0, i1 - i0);
		}
	}
	for (s = 0; s < sizeof(styles) / sizeof(styles[0]); s++)
		for (lower = 0; lower < 2; lower++) {
			if (styles[s].plus && memchr(nd, ' ', n) == NULL)
				continue;
			pl_len = pct_encode(nd, n, styles[s].unres, styles[s].keep,
			    styles[s].plus, lower, enc);
			if (pl_len == n && memcmp(enc, nd, n) == 0)
				continue;
			pl_add(pl, ent, PK_PCT, enc, pl_len);
		}
	for (lower = 1; lower >= 0; lower--) {
		hex_encode(nd, n, lower, enc);
		pl_add(pl, ent, PK_HEX, enc, 2 * n);
	}
}

/*
 * Each pattern alone must be found by airlock as its needle, in the same kind of
 * encoding: the list is the one airlock looks for (it may hold more: that is not
 * checked, the pattern counts are).
 */
static int
pl_check(const struct patlist *pl, const struct scan_set *set)
{
	struct scan_match m;
	size_t i;
	int ok;

	for (i = 0; i < pl->n; i++) {
		ok = scan_find(set, (const uint8_t *)pl->pat[i], pl->len[i], &m) &&
		    m.sm_id == (int)pl->ent[i] && m.sm_end == pl->len[i];
		if (ok)
			switch (pl->kind[i]) {
			case PK_RAW:
				ok = m.sm_enc == SCAN_ENC_RAW;
				break;
			case PK_B64:
				ok = m.sm_enc == SCAN_ENC_B64 ||
				    m.sm_enc == SCAN_ENC_B64URL;
				break;
			case PK_PCT:
				ok = m.sm_enc == SCAN_ENC_PCT;
				break;
			case PK_HEX:
				ok = m.sm_enc == SCAN_ENC_HEX;
				break;
			}
		if (!ok) {
			fprintf(stderr, "scanbench: pattern %zu (%s of entry %u) not "
			    "found as such by airlock\n", i, pkind_name[pl->kind[i]],
			    pl->ent[i]);
			return -1;
		}
	}
	return 0;
}

/* ---- the text ---- */

static const char *words[] = {
	"the", "of", "and", "to", "in", "is", "for", "that", "with", "on", "as",
	"are", "this", "be", "by", "from", "at", "or", "an", "it", "not", "which",
	"have", "you", "can", "all", "will", "more", "one", "new", "data", "user",
	"request", "response", "server", "client", "value", "model", "token",
	"result", "update", "create", "delete", "account", "project", "service",
	"configuration", "deployment", "repository", "function", "message",
	"content", "status", "error", "timeout", "network", "storage", "policy",
	"version", "release", "branch", "commit", "review", "build", "test",
	"library", "package", "module", "import", "export", "string", "number",
	"array", "object", "field", "index", "query", "filter", "search", "page",
	"description", "information", "performance", "security", "available",
	"default", "example", "following", "specific", "different", "important",
};
#define NWORDS	(sizeof(words) / sizeof(words[0]))

/* Words, with in JSON strings about one escape per 60 bytes (\u00e9 \n \" \/). */
static void
gen_sentence(struct text *t, int json, size_t nw)
{
	size_t i, r;

	for (i = 0; i < nw; i++) {
		if (i > 0)
			t_str(t, " ");
		r = rng_below(100);
		if (json && r < 3)
			t_str(t, "caf\\u00e9");
		else if (json && r < 4)
			t_str(t, "\\\"quoted\\\"");
		else if (json && r < 5)
			t_str(t, "\\n");
		else if (json && r < 6)
			t_str(t, "\\u2014");
		else if (!json && r < 2)
			t_str(t, "&amp;");
		else
			t_str(t, words[rng_below(NWORDS)]);
	}
	t_str(t, ".");
}

static void
gen_json(struct text *t)
{
	size_t i, n = 5 + rng_below(10);

	t_fmt(t, "{\"object\":\"list\",\"has_more\":%s,\"data\":[",
	    rng_below(2) ? "true" : "false");
	for (i = 0; i < n; i++) {
		if (i > 0)
			t_str(t, ",");
		t_fmt(t, "{\"id\":\"item_%08llx\",\"created\":%llu,\"name\":\"",
		    (unsigned long long)(rng() & 0xffffffffu),
		    (unsigned long long)(1700000000 + rng_below(50000000)));
		gen_sentence(t, 1, 2 + rng_below(3));
		t_fmt(t, "\",\"url\":\"https:\\/\\/api.example.com\\/v1\\/items\\/%zu\","
		    "\"html_url\":\"https:\\/\\/example.com\\/%s\\/%s?ref=%s\","
		    "\"description\":\"", rng_below(100000), words[rng_below(NWORDS)],
		    words[rng_below(NWORDS)], words[rng_below(NWORDS)]);
		gen_sentence(t, 1, 10 + rng_below(30));
		t_fmt(t, "\",\"score\":%zu.%02zu,\"tags\":[\"%s\",\"%s\"],"
		    "\"owner\":{\"login\":\"%s%zu\",\"type\":\"User\"}}",
		    rng_below(100), rng_below(100), words[rng_below(NWORDS)],
		    words[rng_below(NWORDS)], words[rng_below(NWORDS)],
		    rng_below(1000));
	}
	t_str(t, "]}\n");
}

static void
gen_html(struct text *t)
{
	size_t i, n = 3 + rng_below(6);

	t_str(t, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	    "<title>");
	gen_sentence(t, 0, 4);
	t_str(t, "</title>\n<link rel=\"stylesheet\" href=\"/static/css/main.css?v=3\">\n"
	    "</head>\n<body>\n<div class=\"container\">\n");
	for (i = 0; i < n; i++) {
		t_fmt(t, "<p class=\"text-%s\">", words[rng_below(NWORDS)]);
		gen_sentence(t, 0, 15 + rng_below(40));
		t_fmt(t, " <a href=\"https://example.com/search?q=%s%%20%s&amp;"
		    "lang=en&amp;next=%%2Fdocs%%2F%s%%3Fpage%%3D%zu\">%s</a></p>\n",
		    words[rng_below(NWORDS)], words[rng_below(NWORDS)],
		    words[rng_below(NWORDS)], rng_below(50), words[rng_below(NWORDS)]);
	}
	t_fmt(t, "<script>\n(function () {\n  var cfg = {api: \"https://api.example.com/v2\", "
	    "page: %zu, label: \"%s\\u00a0%s\"};\n"
	    "  fetch(cfg.api + \"/items?filter=\" + encodeURIComponent(\"%s %s\"))\n"
	    "    .then(function (r) { return r.json(); })\n"
	    "    .then(function (d) { document.getElementById(\"out\").textContent = "
	    "d.data.length + \" items\"; });\n})();\n</script>\n</div></body></html>\n",
	    rng_below(100), words[rng_below(NWORDS)], words[rng_below(NWORDS)],
	    words[rng_below(NWORDS)], words[rng_below(NWORDS)]);
}

/* A needle in one of its forms, inside a JSON field. */
static void
plant(struct text *t, const char *field, const char *v, size_t n, int form)
{
	char enc[600];

	t_fmt(t, "{\"%s\":\"", field);
	switch (form) {
	case 0:
		t_add(t, v, n);
		break;
	case 1:	/* base64 of "user:needle", as in a Basic credential */
		{
			uint8_t cred[128];

			memcpy(cred, "user:", 5);
			memcpy(cred + 5, v, n);
			b64_encode(cred, n + 5, b64_std, 1, enc);
			t_str(t, enc);
		}
		break;
	case 2:
		hex_encode((const uint8_t *)v, n, 1, enc);
		t_str(t, enc);
		break;
	case 3:
		pct_encode((const uint8_t *)v, n, 0, "", 0, 0, enc);
		t_str(t, enc);
		break;
	case 4:	/* JSON-escaped: the third byte as \u00XX (the decoded view only) */
		t_add(t, v, 2);
		t_fmt(t, "\\u%04x", (unsigned int)(uint8_t)v[2]);
		t_add(t, v + 3, n - 3);
		break;
	}
	t_str(t, "\"}\n");
}

struct planted {
	int		 is_ph;
	unsigned int	 idx;
	int		 form;
};

/*
 * Planted, spread over the MiB: secret and placeholder 0 in every form; secrets
 * and placeholders 5, 13 (16 and more loaded) and 200 (256) raw.
 */
static const struct planted plants[] = {
	{ 0, 0, 0 }, { 1, 0, 0 }, { 0, 0, 1 }, { 1, 0, 1 }, { 0, 0, 2 }, { 1, 0, 2 },
	{ 0, 0, 3 }, { 1, 0, 3 }, { 0, 0, 4 }, { 1, 0, 4 }, { 0, 5, 0 }, { 1, 13, 0 },
	{ 0, 13, 0 }, { 1, 5, 0 }, { 0, 200, 0 }, { 1, 200, 0 },
};
#define NPLANTS	(sizeof(plants) / sizeof(plants[0]))

static uint8_t *
gen_data(void)
{
	struct text t = { NULL, 0, 0 };
	size_t next = 0, every = DATA_LEN / (NPLANTS + 1);
	const struct secret *s;

	while (t.len < DATA_LEN) {
		if (rng_below(3) == 0)
			gen_html(&t);
		else
			gen_json(&t);
		if (next < NPLANTS && t.len >= (next + 1) * every) {
			s = &secrets[plants[next].idx];
			if (plants[next].is_ph)
				plant(&t, "token", s->ph, s->plen, plants[next].form);
			else
				plant(&t, "api_key", s->value, s->vlen,
				    plants[next].form);
			next++;
		}
	}
	return t.p;	/* at least DATA_LEN bytes; the first DATA_LEN are used */
}

/* ---- matches, for the sanity check ---- */

struct hit {
	unsigned int	 ent;
	uint64_t	 end;
};

struct hits {
	struct hit	 h[1024];
	size_t		 n;
	size_t		 all;	/* every match, of any form */
};

static void
hits_add(struct hits *hs, unsigned int ent, uint64_t end)
{
	if (hs->n < sizeof(hs->h) / sizeof(hs->h[0])) {
		hs->h[hs->n].ent = ent;
		hs->h[hs->n].end = end;
		hs->n++;
	}
}

static int
hit_cmp(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;

	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return x->ent < y->ent ? -1 : x->ent > y->ent;
}

/* ---- the engines ---- */

struct hsdb {
	hs_database_t	*block;
	hs_database_t	*stream;
	hs_scratch_t	*scratch;
	const struct patlist *pl;
};

static void
hs_die(const char *what, hs_compile_error_t *ce)
{
	fprintf(stderr, "scanbench: %s: %s\n", what, ce != NULL ? ce->message : "");
	exit(2);
}

static void
hsdb_build(struct hsdb *db, const struct patlist *pl)
{
	static const char *p[MAX_PATS];
	static unsigned int ids[MAX_PATS], flags[MAX_PATS];
	hs_compile_error_t *ce = NULL;
	size_t i;

	for (i = 0; i < pl->n; i++) {
		p[i] = pl->pat[i];
		ids[i] = (unsigned int)i;
		flags[i] = 0;
	}
	db->pl = pl;
	db->scratch = NULL;
	if (hs_compile_lit_multi(p, flags, ids, pl->len, (unsigned int)pl->n,
	    HS_MODE_BLOCK, NULL, &db->block, &ce) != HS_SUCCESS)
		hs_die("hs_compile_lit_multi (block)", ce);
	if (hs_compile_lit_multi(p, flags, ids, pl->len, (unsigned int)pl->n,
	    HS_MODE_STREAM, NULL, &db->stream, &ce) != HS_SUCCESS)
		hs_die("hs_compile_lit_multi (stream)", ce);
	if (hs_alloc_scratch(db->block, &db->scratch) != HS_SUCCESS ||
	    hs_alloc_scratch(db->stream, &db->scratch) != HS_SUCCESS)
		hs_die("hs_alloc_scratch", NULL);
}

static void
hsdb_free(struct hsdb *db)
{
	hs_free_scratch(db->scratch);
	hs_free_database(db->block);
	hs_free_database(db->stream);
}

struct hsctx {
	const struct patlist *pl;
	struct hits	*hits;	/* NULL: count only */
	size_t		 count;
};

static int
hs_on_match(unsigned int id, unsigned long long from, unsigned long long to,
    unsigned int fl, void *arg)
{
	struct hsctx *c = arg;

	c->count++;
	if (c->hits != NULL) {
		c->hits->all++;
		if (c->pl->kind[id] == PK_RAW)
			hits_add(c->hits, c->pl->ent[id], to);
	}
	return 0;
}

static size_t
run_hs_block(struct hsdb *db, const uint8_t *d, struct hits *hits)
{
	struct hsctx c = { db->pl, hits, 0 };

	if (hs_scan(db->block, (const char *)d, DATA_LEN, 0, db->scratch,
	    hs_on_match, &c) != HS_SUCCESS)
		hs_die("hs_scan", NULL);
	return c.count;
}

static size_t
run_hs_stream(struct hsdb *db, const uint8_t *d, struct hits *hits)
{
	struct hsctx c = { db->pl, hits, 0 };
	hs_stream_t *st;
	size_t off, n;

	if (hs_open_stream(db->stream, 0, &st) != HS_SUCCESS)
		hs_die("hs_open_stream", NULL);
	for (off = 0; off < DATA_LEN; off += n) {
		n = DATA_LEN - off < CHUNK ? DATA_LEN - off : CHUNK;
		if (hs_scan_stream(st, (const char *)d + off, (unsigned int)n, 0,
		    db->scratch, hs_on_match, &c) != HS_SUCCESS)
			hs_die("hs_scan_stream", NULL);
	}
	if (hs_close_stream(st, db->scratch, hs_on_match, &c) != HS_SUCCESS)
		hs_die("hs_close_stream", NULL);
	return c.count;
}

/* airlock detection: a stream over the MiB in 16 KiB pieces, on past each match. */
static size_t
run_detect(const struct scan_set *set, const uint8_t *d, struct hits *hits)
{
	struct scan_stream s;
	struct scan_match m;
	size_t off, n, count = 0;
	uint64_t base;

	scan_stream_init(&s, set);
	for (off = 0; off < DATA_LEN; off += n) {
		n = DATA_LEN - off < CHUNK ? DATA_LEN - off : CHUNK;
		base = s.ss_off;
		while (scan_stream_feed(&s, d + off + (s.ss_off - base),
		    n - (size_t)(s.ss_off - base), &m)) {
			count++;
			if (hits != NULL) {
				hits->all++;
				if (m.sm_enc == SCAN_ENC_RAW)
					hits_add(hits, (unsigned int)m.sm_id,
					    m.sm_end);
			}
		}
	}
	return count;
}

static void
redact_cb(void *arg, const struct scan_match *m)
{
	struct hits *hits = arg;

	if (hits == NULL)
		return;
	hits->all++;
	if (m->sm_enc == SCAN_ENC_RAW)
		hits_add(hits, (unsigned int)m->sm_id, m->sm_end);
}

/* airlock redaction: one redactor over the MiB in 16 KiB pieces, output drained. */
static size_t
run_redact(const struct scan_set *set, const uint8_t *d, struct hits *hits)
{
	struct http_buf out = HTTP_BUF_INIT;
	struct scan_redact *r;
	size_t off, n, total = 0;
	uint64_t count;

	if ((r = scan_redact_new(set, redact_cb, hits)) == NULL) {
		perror("scan_redact_new");
		exit(2);
	}
	for (off = 0; off < DATA_LEN; off += n) {
		n = DATA_LEN - off < CHUNK ? DATA_LEN - off : CHUNK;
		if (scan_redact_feed(r, d + off, n, &out) == -1) {
			perror("scan_redact_feed");
			exit(2);
		}
		total += out.hb_len;
		http_buf_drain(&out, out.hb_len);
	}
	if (scan_redact_finish(r, &out) == -1)
		exit(2);
	total += out.hb_len;
	count = scan_redact_count(r);
	http_buf_free(&out);
	scan_redact_free(r);
	if (total < DATA_LEN / 2) {
		fprintf(stderr, "scanbench: redaction lost its output\n");
		exit(2);
	}
	return (size_t)count;
}

/* ---- timing ---- */

static int repeats = 7;
static double min_ms = 100;

static double
cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

enum engine { E_DETECT, E_REDACT, E_HS_BLOCK, E_HS_STREAM };

struct job {
	enum engine	 e;
	const struct scan_set *set;
	struct hsdb	*db;
	const uint8_t	*d;
};

static size_t
job_run(const struct job *j, struct hits *hits)
{
	switch (j->e) {
	case E_DETECT:
		return run_detect(j->set, j->d, hits);
	case E_REDACT:
		return run_redact(j->set, j->d, hits);
	case E_HS_BLOCK:
		return run_hs_block(j->db, j->d, hits);
	case E_HS_STREAM:
		return run_hs_stream(j->db, j->d, hits);
	}
	return 0;
}

/* Median MiB/s of CPU time over the repeats. */
static double
measure(const struct job *j)
{
	double r[64], t0, t;
	volatile size_t sink = 0;
	int k, iters;

	job_run(j, NULL);	/* warm */
	for (k = 0; k < repeats && k < 64; k++) {
		iters = 0;
		t0 = cpu_now();
		do {
			sink += job_run(j, NULL);
			iters++;
			t = cpu_now() - t0;
		} while (t * 1000 < min_ms);
		r[k] = (double)iters / t;	/* MiB per CPU second */
	}
	(void)sink;
	qsort(r, (size_t)k, sizeof(r[0]), dbl_cmp);
	return r[k / 2];
}

/* ---- main ---- */

static int
hits_same(const char *what, struct hits *a, struct hits *b, size_t nsec)
{
	size_t i;

	qsort(a->h, a->n, sizeof(a->h[0]), hit_cmp);
	qsort(b->h, b->n, sizeof(b->h[0]), hit_cmp);
	if (a->n == 0 || a->n != b->n)
		goto bad;
	for (i = 0; i < a->n; i++)
		if (a->h[i].ent != b->h[i].ent || a->h[i].end != b->h[i].end)
			goto bad;
	return 0;
 bad:
	fprintf(stderr, "scanbench: %zu secrets, %s: airlock found %zu raw needles, "
	    "Hyperscan %zu, not the same (or none)\n", nsec, what, a->n, b->n);
	for (i = 0; i < a->n; i++)
		fprintf(stderr, "  airlock   %u @%llu\n", a->h[i].ent,
		    (unsigned long long)a->h[i].end);
	for (i = 0; i < b->n; i++)
		fprintf(stderr, "  hyperscan %u @%llu\n", b->h[i].ent,
		    (unsigned long long)b->h[i].end);
	return -1;
}

static struct scan_set *
set_make(size_t nsec, int ph)
{
	struct scan_set *set;
	const struct secret *s;
	size_t i;

	if ((set = scan_set_new()) == NULL)
		exit(2);
	for (i = 0; i < nsec; i++) {
		s = &secrets[i];
		if ((ph ? scan_set_add(set, (int)i, (const uint8_t *)s->ph, s->plen,
		    (const uint8_t *)s->value, s->vlen) :
		    scan_set_add(set, (int)i, (const uint8_t *)s->value, s->vlen,
		    (const uint8_t *)s->ph, s->plen)) == -1) {
			perror("scan_set_add");
			exit(2);
		}
	}
	if (scan_set_build(set) == -1) {
		perror("scan_set_build");
		exit(2);
	}
	return set;
}

int
main(int argc, char **argv)
{
	static const size_t counts[] = { 1, 16, 256 };
	static struct patlist plph[3], plval[3];
	struct hits ha, hh;
	struct hsdb dbph, dbval;
	struct scan_set *ph, *val;
	struct job j;
	const char *e, *only;
	size_t only_n = 0;
	uint8_t *d;
	size_t c, i, nsec, rawn[2];
	double det, red, hbp, hsp, hbv, hsv;
	int fail = 0;

	/* SCANBENCH_PROFILE=detect|redact[:N]: runs only that (for perf record). */
	if ((only = getenv("SCANBENCH_PROFILE")) != NULL) {
		if ((e = strchr(only, ':')) != NULL)
			only_n = (size_t)atoi(e + 1);
	}
	if ((e = getenv("SCANBENCH_REPEATS")) != NULL && atoi(e) > 0)
		repeats = atoi(e);
	if ((e = getenv("SCANBENCH_MIN_MS")) != NULL && atof(e) > 0)
		min_ms = atof(e);
	make_secrets();
	d = gen_data();

	printf("| secrets | patterns (raw/base64/percent/hex) | airlock detect | HS block | "
	    "HS stream | detect / HS stream | airlock redact | HS block | HS stream | "
	    "redact / HS stream | matches (airlock / HS) |\n");
	printf("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
	for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		nsec = counts[c];
		if (only_n != 0 && nsec != only_n)
			continue;
		ph = set_make(nsec, 1);
		val = set_make(nsec, 0);
		for (i = 0; i < nsec; i++) {
			pl_needle(&plph[c], (unsigned int)i,
			    (const uint8_t *)secrets[i].ph, secrets[i].plen);
			pl_needle(&plval[c], (unsigned int)i,
			    (const uint8_t *)secrets[i].value, secrets[i].vlen);
		}
		if (pl_check(&plph[c], ph) == -1 || pl_check(&plval[c], val) == -1)
			return 1;
		hsdb_build(&dbph, &plph[c]);
		hsdb_build(&dbval, &plval[c]);

		/* Sanity: the same raw needles at the same offsets. */
		j.d = d;
		memset(&ha, 0, sizeof(ha));
		memset(&hh, 0, sizeof(hh));
		j.e = E_DETECT, j.set = ph;
		job_run(&j, &ha);
		j.e = E_HS_STREAM, j.db = &dbph;
		job_run(&j, &hh);
		rawn[0] = ha.n;
		if (hits_same("detection", &ha, &hh, nsec) == -1)
			fail = 1;
		memset(&hh, 0, sizeof(hh));
		j.e = E_HS_BLOCK;
		job_run(&j, &hh);
		if (hits_same("detection (block)", &ha, &hh, nsec) == -1)
			fail = 1;
		size_t det_all = ha.all, hsp_all = hh.all;

		memset(&ha, 0, sizeof(ha));
		memset(&hh, 0, sizeof(hh));
		j.e = E_REDACT, j.set = val;
		job_run(&j, &ha);
		j.e = E_HS_STREAM, j.db = &dbval;
		job_run(&j, &hh);
		rawn[1] = ha.n;
		if (hits_same("redaction", &ha, &hh, nsec) == -1)
			fail = 1;
		size_t red_all = ha.all, hsv_all = hh.all;
		if (fail)
			return 1;

		if (only != NULL) {	/* profiling: one engine, one set, for a while */
			j.e = strncmp(only, "redact", 6) == 0 ? E_REDACT : E_DETECT;
			j.set = j.e == E_REDACT ? val : ph;
			for (i = 0; i < 2000 / (nsec > 16 ? 1 : 4); i++)
				job_run(&j, NULL);
			goto next;
		}
		j.e = E_DETECT, j.set = ph;
		det = measure(&j);
		j.e = E_HS_BLOCK, j.db = &dbph;
		hbp = measure(&j);
		j.e = E_HS_STREAM;
		hsp = measure(&j);
		j.e = E_REDACT, j.set = val;
		red = measure(&j);
		j.e = E_HS_BLOCK, j.db = &dbval;
		hbv = measure(&j);
		j.e = E_HS_STREAM;
		hsv = measure(&j);
		printf("| %zu | %zu (%zu/%zu/%zu/%zu) placeholders, %zu (%zu/%zu/%zu/%zu) "
		    "values | %.0f | %.0f | %.0f | %.1fx | %.0f | %.0f | %.0f | %.1fx | "
		    "detect %zu / %zu (raw %zu), redact %zu / %zu (raw %zu) |\n",
		    nsec, plph[c].n, plph[c].bykind[0], plph[c].bykind[1],
		    plph[c].bykind[2], plph[c].bykind[3], plval[c].n,
		    plval[c].bykind[0], plval[c].bykind[1], plval[c].bykind[2],
		    plval[c].bykind[3], det, hbp, hsp, hsp / det, red, hbv, hsv,
		    hsv / red, det_all, hsp_all, rawn[0], red_all, hsv_all, rawn[1]);
		fflush(stdout);
 next:
		hsdb_free(&dbph);
		hsdb_free(&dbval);
		scan_set_free(ph);
		scan_set_free(val);
	}
	(void)argc;
	(void)argv;
	free(d);
	return 0;
}
