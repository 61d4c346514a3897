/*
 * proxy/proxy_scan.c: see proxy_scan.h.
 *
 * One Aho-Corasick automaton per set holds every pattern of every entry: the raw
 * needle, its base64 "middles" and its literal percent-encodings.  Streams carry
 * only an automaton state between calls, so nothing is missed at a read boundary.
 *
 * Base64 at any alignment.  Inside a base64 text, the needle N (n bytes) starts at
 * byte offset k = 0, 1 or 2 of a 3-byte group.  Number the text's bits from 0: N
 * occupies bits [8k, 8k + 8n), and character i encodes bits [6i, 6i + 6).  The
 * characters i with 6i >= 8k and 6i + 6 <= 8k + 8n depend on N alone: encode k zero
 * bytes followed by N and keep characters ceil(8k/6) .. floor((8k+8n)/6) - 1: that
 * "middle" is what we search for, once per alignment and alphabet (six patterns;
 * identical ones share a node).  The character before the middle (k != 0) carries
 * N's first 4 (k=1) or 2 (k=2) bits in its low bits, the one after it (when
 * 8(k+n) is not a multiple of 6) N's last 2 or 4 bits in its high bits.  Redaction
 * rewrites the middle and exactly those bits with a same-length filler's, so no bit
 * of N survives and the text still decodes with its alignment unchanged.  With
 * SCAN_NEEDLE_MIN = 8 the shortest middle is 10 characters (60 bits).
 *
 * Decoded views.  Besides the raw bytes, every stream is run, through the same
 * automaton, as two decoded views: percent-decoded (%XX) and JSON-unescaped (\X,
 * \uXXXX to UTF-8).  A decoder's state is the bytes of the escape it has begun (at
 * most 5); a broken escape passes literally.  While a view stands in the same
 * automaton state as the raw bytes and the byte is not part of an escape, its
 * next state is the raw one (no second walk): plain text costs one walk, not
 * three.  The redactor keeps, per view, a ring of the raw offsets where its last
 * decoded bytes began, so a match in a view maps back to the raw bytes it covers;
 * after any match all automata restart just past it.
 *
 * Redaction holds back the bytes that may still become a match: after each byte,
 * the automaton's depth (the longest suffix of the input that is a prefix of some
 * pattern) plus one (the character before a base64 middle), in raw bytes and in
 * each view's decoded bytes (mapped back to raw offsets), and any escape begun.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "hexdig.h"
#include "proxy_scan.h"

#define SCAN_NONE	UINT32_MAX
#define SCAN_ROOT	0

struct scan_entry {
	int		 se_id;
	uint8_t		*se_needle;
	size_t		 se_n;
	uint8_t		*se_repl;
	size_t		 se_rn;
};

struct scan_pat {
	size_t		 sp_entry;
	enum scan_enc	 sp_enc;
	size_t		 sp_len;	/* pattern length */
	uint8_t		*sp_repl;	/* redaction replacement */
	size_t		 sp_repl_len;
	int		 sp_lead_bits;	/* base64: low bits of the char before */
	uint8_t		 sp_lead_val;
	int		 sp_trail_bits;	/* base64: high bits of the char after */
	uint8_t		 sp_trail_val;
};

struct scan_node {
	uint32_t	 sn_fail;
	uint32_t	 sn_dict;	/* nearest node on the fail chain with an output */
	uint32_t	 sn_out;	/* pattern ending here, or SCAN_NONE */
	uint32_t	 sn_match;	/* sn_out, else the dictionary node's */
	uint32_t	 sn_depth;
	uint32_t	 sn_edge;	/* first edge, or SCAN_NONE */
	uint32_t	 sn_row;	/* depth 1: its row in ss_rows, else SCAN_NONE */
};

struct scan_edge {
	uint32_t	 se_to;
	uint32_t	 se_next;
	uint8_t		 se_byte;
};

struct scan_set {
	struct scan_entry *ss_ent;
	size_t		 ss_nent;
	size_t		 ss_capent;
	struct scan_pat	*ss_pat;
	size_t		 ss_npat;
	size_t		 ss_cappat;
	struct scan_node *ss_node;
	size_t		 ss_nnode;
	size_t		 ss_capnode;
	struct scan_edge *ss_edge;
	size_t		 ss_nedge;
	size_t		 ss_capedge;
	uint32_t	 ss_root[256];	/* root transitions, complete */
	uint32_t	*ss_rows;	/* complete transitions (256 each) of the
					   depth-1 states, see scan_rows() */
	size_t		 ss_nrows;
	uint8_t		 ss_stop[256];	/* bytes that leave the root or begin an
					   escape */
	uint8_t		 ss_esc[256];	/* the escape characters, '%' and '\\' */
	uint8_t		 ss_pair[65536 / 8];	/* bit c1 << 8 | c2: some pattern
					   begins with c1 c2 */
	uint32_t	 ss_first_out;	/* the states from here on are those with an
					   output (sn_match), see scan_renumber() */
	size_t		 ss_maxlen;
	int		 ss_built;
};

static const char scan_b64_std[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char scan_b64_url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* ---- small helpers ---- */

static int
scan_grow(void **p, size_t *cap, size_t n, size_t size)
{
	size_t ncap;
	void *np;

	if (n < *cap)
		return 0;
	ncap = *cap != 0 ? *cap * 2 : 16;
	if (ncap > SIZE_MAX / size || ncap > UINT32_MAX - 1) {
		errno = ENOMEM;
		return -1;
	}
	if ((np = realloc(*p, ncap * size)) == NULL)
		return -1;
	*p = np;
	*cap = ncap;
	return 0;
}

static void
scan_wipe_free(uint8_t *p, size_t n)
{
	if (p != NULL) {
		OPENSSL_cleanse(p, n);
		free(p);
	}
}

/* Value (0..63) of c in the alphabet, or -1. */
static int
scan_b64_val(const char *alpha, uint8_t c)
{
	const char *p;

	if (c == '\0' || (p = strchr(alpha, c)) == NULL)
		return -1;
	return (int)(p - alpha);
}

/*
 * The sextets of in[n] followed by zero bits: ceil(8n/6) values into out.
 */
static void
scan_sextets(const uint8_t *in, size_t n, uint8_t *out)
{
	size_t bits = 8 * n, i, b, j;
	unsigned int v;

	for (i = 0; i * 6 < bits; i++) {
		v = 0;
		for (j = 0; j < 6; j++) {
			b = i * 6 + j;
			v <<= 1;
			if (b < bits)
				v |= (in[b / 8] >> (7 - b % 8)) & 1;
		}
		out[i] = (uint8_t)v;
	}
}

/* ---- sets ---- */

struct scan_set *
scan_set_new(void)
{
	return calloc(1, sizeof(struct scan_set));
}

void
scan_set_free(struct scan_set *set)
{
	size_t i;

	if (set == NULL)
		return;
	for (i = 0; i < set->ss_nent; i++) {
		scan_wipe_free(set->ss_ent[i].se_needle, set->ss_ent[i].se_n);
		scan_wipe_free(set->ss_ent[i].se_repl, set->ss_ent[i].se_rn);
	}
	for (i = 0; i < set->ss_npat; i++)
		scan_wipe_free(set->ss_pat[i].sp_repl, set->ss_pat[i].sp_repl_len);
	/* The trie spells the needles out: wipe it too. */
	if (set->ss_edge != NULL)
		OPENSSL_cleanse(set->ss_edge, set->ss_capedge *
		    sizeof(struct scan_edge));
	if (set->ss_rows != NULL)
		OPENSSL_cleanse(set->ss_rows, set->ss_nrows * 256 *
		    sizeof(*set->ss_rows));
	free(set->ss_rows);
	free(set->ss_ent);
	free(set->ss_pat);
	free(set->ss_node);
	free(set->ss_edge);
	OPENSSL_cleanse(set, sizeof(*set));
	free(set);
}

int
scan_set_add(struct scan_set *set, int id, const uint8_t *needle, size_t n,
    const uint8_t *repl, size_t rn)
{
	struct scan_entry *e;

	if (set->ss_built || n < SCAN_NEEDLE_MIN || n > SCAN_NEEDLE_MAX ||
	    rn > SCAN_NEEDLE_MAX || set->ss_nent >= SCAN_ENTRIES_MAX) {
		errno = EINVAL;
		return -1;
	}
	if (scan_grow((void **)&set->ss_ent, &set->ss_capent, set->ss_nent,
	    sizeof(*e)) == -1)
		return -1;
	e = &set->ss_ent[set->ss_nent];
	memset(e, 0, sizeof(*e));
	if ((e->se_needle = malloc(n)) == NULL ||
	    (e->se_repl = malloc(rn != 0 ? rn : 1)) == NULL) {
		free(e->se_needle);
		return -1;
	}
	memcpy(e->se_needle, needle, n);
	if (rn != 0)
		memcpy(e->se_repl, repl, rn);
	e->se_n = n;
	e->se_rn = rn;
	e->se_id = id;
	set->ss_nent++;
	return 0;
}

static uint32_t
scan_child(const struct scan_set *set, uint32_t s, uint8_t c)
{
	uint32_t e;

	for (e = set->ss_node[s].sn_edge; e != SCAN_NONE;
	    e = set->ss_edge[e].se_next)
		if (set->ss_edge[e].se_byte == c)
			return set->ss_edge[e].se_to;
	return SCAN_NONE;
}

static int
scan_node_new(struct scan_set *set, uint32_t depth, uint32_t *out)
{
	struct scan_node *nd;

	if (scan_grow((void **)&set->ss_node, &set->ss_capnode, set->ss_nnode,
	    sizeof(*nd)) == -1)
		return -1;
	nd = &set->ss_node[set->ss_nnode];
	nd->sn_fail = SCAN_ROOT;
	nd->sn_dict = SCAN_NONE;
	nd->sn_out = SCAN_NONE;
	nd->sn_match = SCAN_NONE;
	nd->sn_depth = depth;
	nd->sn_edge = SCAN_NONE;
	nd->sn_row = SCAN_NONE;
	*out = (uint32_t)set->ss_nnode++;
	return 0;
}

/* Inserts pattern p[n] for pattern record pi (the first insertion of a string wins). */
static int
scan_trie_add(struct scan_set *set, const uint8_t *p, size_t n, uint32_t pi)
{
	uint32_t s = SCAN_ROOT, t;
	size_t i;

	for (i = 0; i < n; i++) {
		if ((t = scan_child(set, s, p[i])) == SCAN_NONE) {
			if (scan_node_new(set, (uint32_t)(i + 1), &t) == -1)
				return -1;
			if (scan_grow((void **)&set->ss_edge, &set->ss_capedge,
			    set->ss_nedge, sizeof(struct scan_edge)) == -1)
				return -1;
			set->ss_edge[set->ss_nedge].se_to = t;
			set->ss_edge[set->ss_nedge].se_byte = p[i];
			set->ss_edge[set->ss_nedge].se_next =
			    set->ss_node[s].sn_edge;
			set->ss_node[s].sn_edge = (uint32_t)set->ss_nedge++;
		}
		s = t;
	}
	if (set->ss_node[s].sn_out == SCAN_NONE)
		set->ss_node[s].sn_out = set->ss_node[s].sn_match = pi;
	if (n > set->ss_maxlen)
		set->ss_maxlen = n;
	return 0;
}

static int
scan_pat_add(struct scan_set *set, size_t ent, enum scan_enc enc,
    const uint8_t *p, size_t n, const uint8_t *repl, size_t rn,
    struct scan_pat **out)
{
	struct scan_pat *sp;

	if (scan_grow((void **)&set->ss_pat, &set->ss_cappat, set->ss_npat,
	    sizeof(*sp)) == -1)
		return -1;
	sp = &set->ss_pat[set->ss_npat];
	memset(sp, 0, sizeof(*sp));
	if ((sp->sp_repl = malloc(rn != 0 ? rn : 1)) == NULL)
		return -1;
	if (rn != 0)
		memcpy(sp->sp_repl, repl, rn);
	sp->sp_repl_len = rn;
	sp->sp_entry = ent;
	sp->sp_enc = enc;
	sp->sp_len = n;
	set->ss_npat++;
	if (scan_trie_add(set, p, n, (uint32_t)(set->ss_npat - 1)) == -1)
		return -1;
	if (out != NULL)
		*out = sp;
	return 0;
}

/* A filler of n bytes: the replacement repeated (or 'x' if it is empty). */
static uint8_t *
scan_filler(const struct scan_entry *e)
{
	uint8_t *f;
	size_t i;

	if ((f = malloc(e->se_n)) == NULL)
		return NULL;
	for (i = 0; i < e->se_n; i++)
		f[i] = e->se_rn != 0 ? e->se_repl[i % e->se_rn] : 'x';
	return f;
}

/* The six base64 middles of entry ent (see the comment at the top). */
static int
scan_add_b64(struct scan_set *set, size_t ent)
{
	const struct scan_entry *e = &set->ss_ent[ent];
	uint8_t *buf = NULL, *sx = NULL, *fx = NULL, *fill = NULL;
	uint8_t *pat = NULL, *rep = NULL;
	size_t bl, nsx, i0, i1, i, k, a;
	struct scan_pat *sp;
	const char *alpha;
	int rc = -1;

	bl = e->se_n + 3;	/* k <= 2 zero bytes, N, one more zero byte */
	nsx = (8 * bl + 5) / 6;
	if ((buf = calloc(1, bl)) == NULL || (sx = malloc(nsx)) == NULL ||
	    (fx = malloc(nsx)) == NULL || (fill = scan_filler(e)) == NULL ||
	    (pat = malloc(nsx)) == NULL || (rep = malloc(nsx)) == NULL)
		goto out;
	for (k = 0; k < 3; k++) {
		memset(buf, 0, bl);
		memcpy(buf + k, e->se_needle, e->se_n);
		scan_sextets(buf, k + e->se_n, sx);
		memset(buf, 0, bl);
		memcpy(buf + k, fill, e->se_n);
		scan_sextets(buf, k + e->se_n + 1, fx);
		i0 = (8 * k + 5) / 6;
		i1 = (8 * (k + e->se_n)) / 6;
		for (a = 0; a < 2; a++) {
			alpha = a == 0 ? scan_b64_std : scan_b64_url;
			for (i = i0; i < i1; i++) {
				pat[i - i0] = (uint8_t)alpha[sx[i]];
				rep[i - i0] = (uint8_t)alpha[fx[i]];
			}
			if (scan_pat_add(set, ent, a == 0 ? SCAN_ENC_B64 :
			    SCAN_ENC_B64URL, pat, i1 - i0, rep, i1 - i0, &sp) == -1)
				goto out;
			sp->sp_lead_bits = (int)((6 - (8 * k) % 6) % 6);
			if (sp->sp_lead_bits != 0)
				sp->sp_lead_val = fx[i0 - 1] &
				    ((1u << sp->sp_lead_bits) - 1);
			sp->sp_trail_bits = (int)((8 * (k + e->se_n)) % 6);
			if (sp->sp_trail_bits != 0)
				sp->sp_trail_val = fx[i1] &
				    (uint8_t)(0x3f << (6 - sp->sp_trail_bits) & 0x3f);
		}
	}
	rc = 0;
 out:
	if (fill != NULL)
		scan_wipe_free(fill, e->se_n);
	scan_wipe_free(buf, bl);
	scan_wipe_free(sx, nsx);
	scan_wipe_free(fx, nsx);
	scan_wipe_free(pat, nsx);
	scan_wipe_free(rep, nsx);
	return rc;
}

/*
 * Percent-encodes in[n] into out (room for 3n): bytes in keep (and unreserved
 * ones when unres) stay, a space becomes '+' when plus (a form field), the rest
 * become %XX in upper or lower case.
 */
static size_t
scan_pct_encode(const uint8_t *in, size_t n, int unres, const char *keep,
    int plus, int lower, uint8_t *out)
{
	const char *hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
	size_t i, o = 0;
	uint8_t c;

	for (i = 0; i < n; i++) {
		c = in[i];
		if (plus && c == ' ')
			out[o++] = '+';
		else if ((unres && ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
		    c == '~')) || (c != '\0' && strchr(keep, c) != NULL))
			out[o++] = c;
		else {
			out[o++] = '%';
			out[o++] = (uint8_t)hex[c >> 4];
			out[o++] = (uint8_t)hex[c & 15];
		}
	}
	return o;
}

/* Hex of in[n] into out (room for 2n). */
static void
scan_hex_encode(const uint8_t *in, size_t n, int lower, uint8_t *out)
{
	const char *hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = (uint8_t)hex[in[i] >> 4];
		out[2 * i + 1] = (uint8_t)hex[in[i] & 15];
	}
}

/*
 * Literal encodings of entry ent: percent-encodings in the usual styles (see
 * proxy_scan.h), and hex in lower and upper case (the replacement in the same
 * style or case).
 */
static int
scan_add_literal(struct scan_set *set, size_t ent)
{
	static const struct {
		int		 unres;
		const char	*keep;
		int		 plus;
	} styles[] = {
		{ 1, "", 0 },		/* RFC 3986 unreserved */
		{ 1, "/", 0 },		/* Python quote() */
		{ 1, "!'()*", 0 },	/* JavaScript encodeURIComponent() */
		{ 0, "", 0 },		/* everything escaped */
		{ 1, "*", 1 },		/* HTML forms (WHATWG urlencoded) */
	};
	const struct scan_entry *e = &set->ss_ent[ent];
	uint8_t *pat = NULL, *rep = NULL;
	size_t s, pl, rl, cap;
	int lower, rc = -1;

	cap = 3 * (e->se_n > e->se_rn ? e->se_n : e->se_rn) + 1;
	if ((pat = malloc(cap)) == NULL || (rep = malloc(cap)) == NULL)
		goto out;
	for (s = 0; s < sizeof(styles) / sizeof(styles[0]); s++)
		for (lower = 0; lower < 2; lower++) {
			if (styles[s].plus && memchr(e->se_needle, ' ',
			    e->se_n) == NULL)
				continue;	/* the same as RFC 3986 */
			pl = scan_pct_encode(e->se_needle, e->se_n, styles[s].unres,
			    styles[s].keep, styles[s].plus, lower, pat);
			if (pl == e->se_n && memcmp(pat, e->se_needle, pl) == 0)
				continue;	/* nothing escaped: the raw form */
			rl = scan_pct_encode(e->se_repl, e->se_rn, styles[s].unres,
			    styles[s].keep, styles[s].plus, lower, rep);
			if (scan_pat_add(set, ent, SCAN_ENC_PCT, pat, pl, rep, rl,
			    NULL) == -1)
				goto out;
		}
	for (lower = 1; lower >= 0; lower--) {
		scan_hex_encode(e->se_needle, e->se_n, lower, pat);
		scan_hex_encode(e->se_repl, e->se_rn, lower, rep);
		/* Digits only: both cases spell the same pattern, one node. */
		if (scan_pat_add(set, ent, SCAN_ENC_HEX, pat, 2 * e->se_n, rep,
		    2 * e->se_rn, NULL) == -1)
			goto out;
	}
	rc = 0;
 out:
	scan_wipe_free(pat, cap);
	scan_wipe_free(rep, cap);
	return rc;
}

/*
 * Numbers the states anew, those where a pattern ends (sn_match set) last, from
 * ss_first_out: whether a byte completed a match is then a comparison of the
 * state number, not a load from the node (the test made after every byte).  The
 * root stays 0 (no pattern is empty).
 */
static int
scan_renumber(struct scan_set *set)
{
	struct scan_node *nn, *nd = set->ss_node;
	uint32_t *map, n = (uint32_t)set->ss_nnode, lo = 0, hi, s;
	size_t e;
	int c;

	if ((map = calloc(n, sizeof(*map))) == NULL ||
	    (nn = calloc(n, sizeof(*nn))) == NULL) {
		free(map);
		return -1;
	}
	for (hi = n, s = 0; s < n; s++)
		if (nd[s].sn_match != SCAN_NONE)
			hi--;
	set->ss_first_out = hi;
	for (s = 0; s < n; s++)
		map[s] = nd[s].sn_match == SCAN_NONE ? lo++ : hi++;
	for (s = 0; s < n; s++) {
		nn[map[s]] = nd[s];
		nn[map[s]].sn_fail = map[nd[s].sn_fail];
		if (nd[s].sn_dict != SCAN_NONE)
			nn[map[s]].sn_dict = map[nd[s].sn_dict];
	}
	for (e = 0; e < set->ss_nedge; e++)
		set->ss_edge[e].se_to = map[set->ss_edge[e].se_to];
	for (c = 0; c < 256; c++)
		set->ss_root[c] = map[set->ss_root[c]];
	free(nd);
	set->ss_node = nn;
	set->ss_capnode = n;
	free(map);
	return 0;
}

/*
 * Complete transition rows for the states of depth 1 (the root's children, at
 * most 256 of them): from such a state a byte goes to its child or, the fail
 * link being the root, where the root sends it, so scan_step() makes one load
 * instead of walking the edge list (most bytes of text leave the root when the
 * set has many patterns).  And what lets scan_plain_run() skip bytes at the
 * root: the bytes that stay there and begin no escape, the escape characters,
 * and the pairs of bytes that begin a pattern (the depth-2 states).  After
 * scan_renumber().
 */
static int
scan_rows(struct scan_set *set)
{
	uint32_t s, t, e, nr = 0;
	unsigned int x;
	int c;

	for (c = 0; c < 256; c++) {
		set->ss_esc[c] = c == '%' || c == '\\';
		set->ss_stop[c] = set->ss_root[c] != SCAN_ROOT || set->ss_esc[c];
		if (set->ss_root[c] != SCAN_ROOT &&
		    set->ss_node[set->ss_root[c]].sn_row == SCAN_NONE)
			set->ss_node[set->ss_root[c]].sn_row = nr++;
	}
	if (nr == 0)
		return 0;
	if ((set->ss_rows = calloc((size_t)nr * 256, sizeof(uint32_t))) == NULL)
		return -1;
	set->ss_nrows = nr;
	for (c = 0; c < 256; c++) {
		if ((s = set->ss_root[c]) == SCAN_ROOT)
			continue;
		memcpy(&set->ss_rows[(size_t)set->ss_node[s].sn_row * 256],
		    set->ss_root, sizeof(set->ss_root));
		for (e = set->ss_node[s].sn_edge; e != SCAN_NONE;
		    e = set->ss_edge[e].se_next) {
			t = set->ss_edge[e].se_to;
			set->ss_rows[(size_t)set->ss_node[s].sn_row * 256 +
			    set->ss_edge[e].se_byte] = t;
			x = (unsigned int)c << 8 | set->ss_edge[e].se_byte;
			set->ss_pair[x / 8] |= (uint8_t)(1u << x % 8);
		}
	}
	return 0;
}

int
scan_set_build(struct scan_set *set)
{
	uint32_t *queue = NULL, s, t, f, e, r;
	size_t i, qh = 0, qt = 0;
	int c, rc = -1;

	if (set->ss_built) {
		errno = EINVAL;
		return -1;
	}
	if (scan_node_new(set, 0, &r) == -1)
		goto out;
	for (i = 0; i < set->ss_nent; i++) {
		if (scan_pat_add(set, i, SCAN_ENC_RAW, set->ss_ent[i].se_needle,
		    set->ss_ent[i].se_n, set->ss_ent[i].se_repl,
		    set->ss_ent[i].se_rn, NULL) == -1 ||
		    scan_add_b64(set, i) == -1 || scan_add_literal(set, i) == -1)
			goto out;
	}
	/* Breadth-first: fail and dictionary links, complete root transitions. */
	if ((queue = calloc(set->ss_nnode, sizeof(*queue))) == NULL)
		goto out;
	for (c = 0; c < 256; c++) {
		t = scan_child(set, SCAN_ROOT, (uint8_t)c);
		set->ss_root[c] = t == SCAN_NONE ? SCAN_ROOT : t;
		if (t != SCAN_NONE) {
			set->ss_node[t].sn_fail = SCAN_ROOT;
			queue[qt++] = t;
		}
	}
	while (qh < qt) {
		s = queue[qh++];
		for (e = set->ss_node[s].sn_edge; e != SCAN_NONE;
		    e = set->ss_edge[e].se_next) {
			t = set->ss_edge[e].se_to;
			f = set->ss_node[s].sn_fail;
			while (f != SCAN_ROOT && scan_child(set, f,
			    set->ss_edge[e].se_byte) == SCAN_NONE)
				f = set->ss_node[f].sn_fail;
			f = f == SCAN_ROOT ? set->ss_root[set->ss_edge[e].se_byte] :
			    scan_child(set, f, set->ss_edge[e].se_byte);
			if (f == t)
				f = SCAN_ROOT;
			set->ss_node[t].sn_fail = f;
			set->ss_node[t].sn_dict = set->ss_node[f].sn_out !=
			    SCAN_NONE ? f : set->ss_node[f].sn_dict;
			if (set->ss_node[t].sn_out == SCAN_NONE &&
			    set->ss_node[t].sn_dict != SCAN_NONE)
				set->ss_node[t].sn_match = set->ss_node[
				    set->ss_node[t].sn_dict].sn_out;
			queue[qt++] = t;
		}
	}
	if (scan_renumber(set) == -1 || scan_rows(set) == -1)
		goto out;
	set->ss_built = 1;
	rc = 0;
 out:
	free(queue);
	return rc;
}

/*
 * One automaton step.  The arrays are in locals, and a node or an edge is copied
 * whole into one: a sanitizer build checks that access once, not every field
 * read (an optimising build reads only the fields used).
 */
static uint32_t
scan_step(const struct scan_set *set, uint32_t s, uint8_t c)
{
	const struct scan_node *nd = set->ss_node;
	const struct scan_edge *ed = set->ss_edge;
	struct scan_node n;
	struct scan_edge x;
	uint32_t e;

	while (s != SCAN_ROOT) {
		n = nd[s];
		if (n.sn_row != SCAN_NONE)	/* depth 1: complete, scan_rows() */
			return set->ss_rows[(size_t)n.sn_row * 256 + c];
		for (e = n.sn_edge; e != SCAN_NONE; e = x.se_next) {
			x = ed[e];
			if (x.se_byte == c)
				return x.se_to;
		}
		s = n.sn_fail;
	}
	return set->ss_root[c];
}

/* The pattern completed at state s (the longest), or SCAN_NONE. */
static uint32_t
scan_output(const struct scan_set *set, uint32_t s)
{
	return s < set->ss_first_out ? SCAN_NONE : set->ss_node[s].sn_match;
}

/* ---- decoded views ---- */

enum scan_view {
	SCAN_VIEW_PCT = 0,
	SCAN_VIEW_JSON,
};
#define SCAN_NVIEWS	2

/*
 * One decoded byte and where it came from: it starts vo_back raw bytes before the
 * byte just fed, and spans vo_len raw bytes (all the bytes of a UTF-8 sequence
 * decoded from one \uXXXX share the escape's span).
 */
struct scan_vout {
	uint8_t		 vo_byte;
	uint8_t		 vo_back;
	uint8_t		 vo_len;
};
#define SCAN_VOUT_MAX	7

static void
scan_vout_put(struct scan_vout *o, size_t *n, uint8_t c, size_t back, size_t len)
{
	o[*n].vo_byte = c;
	o[*n].vo_back = (uint8_t)back;
	o[*n].vo_len = (uint8_t)len;
	(*n)++;
}

/* A broken escape: its bytes pass as themselves. */
static void
scan_vdec_flush(struct scan_vdec *d, struct scan_vout *o, size_t *n)
{
	size_t j;

	for (j = 0; j < d->vd_n; j++)
		scan_vout_put(o, n, d->vd_buf[j], d->vd_n - j, 1);
	d->vd_n = 0;
}

/* After a broken escape (passed literally), c starts an escape or is itself. */
static size_t
scan_vdec_restart(struct scan_vdec *d, uint8_t c, uint8_t esc,
    struct scan_vout *o, size_t n)
{
	scan_vdec_flush(d, o, &n);
	if (c == esc)
		d->vd_buf[d->vd_n++] = c;
	else
		scan_vout_put(o, &n, c, 0, 1);
	return n;
}

/*
 * Feeds raw byte c to the decoder of view v; fills o with the decoded bytes that
 * are now complete and returns how many (0 .. SCAN_VOUT_MAX).  A broken escape
 * passes literally; an escape is never longer than 6 bytes, so the state is the
 * bytes of the escape seen so far.
 */
static size_t
scan_vdec_byte(struct scan_vdec *d, enum scan_view v, uint8_t c,
    struct scan_vout *o)
{
	unsigned int cp;
	size_t n = 0;
	int h;

	if (v == SCAN_VIEW_PCT) {
		if (d->vd_n > 0 && (h = hexdig_val(c)) != -1) {
			if (d->vd_n == 1) {
				d->vd_buf[d->vd_n++] = c;
				return 0;
			}
			d->vd_n = 0;
			scan_vout_put(o, &n, (uint8_t)(hexdig_val(d->vd_buf[1]) <<
			    4 | h), 2, 3);
			return n;
		}
		return scan_vdec_restart(d, c, '%', o, n);
	}
	if (d->vd_n == 1) {
		switch (c) {
		case 'u':
			d->vd_buf[d->vd_n++] = c;
			return 0;
		case '"':
		case '\\':
		case '/':
			break;
		case 'b':
			c = '\b';
			break;
		case 'f':
			c = '\f';
			break;
		case 'n':
			c = '\n';
			break;
		case 'r':
			c = '\r';
			break;
		case 't':
			c = '\t';
			break;
		default:
			return scan_vdec_restart(d, c, '\\', o, n);
		}
		d->vd_n = 0;
		scan_vout_put(o, &n, c, 1, 2);
		return n;
	} else if (d->vd_n >= 2 && hexdig_val(c) != -1) {
		if (d->vd_n < 5) {
			d->vd_buf[d->vd_n++] = c;
			return 0;
		}
		cp = (unsigned int)(hexdig_val(d->vd_buf[2]) << 12 |
		    hexdig_val(d->vd_buf[3]) << 8 | hexdig_val(d->vd_buf[4]) << 4 |
		    hexdig_val(c));
		d->vd_n = 0;
		if (cp < 0x80)
			scan_vout_put(o, &n, (uint8_t)cp, 5, 6);
		else if (cp < 0x800) {
			scan_vout_put(o, &n, (uint8_t)(0xc0 | cp >> 6), 5, 6);
			scan_vout_put(o, &n, (uint8_t)(0x80 | (cp & 0x3f)), 5, 6);
		} else {
			scan_vout_put(o, &n, (uint8_t)(0xe0 | cp >> 12), 5, 6);
			scan_vout_put(o, &n, (uint8_t)(0x80 | (cp >> 6 & 0x3f)), 5,
			    6);
			scan_vout_put(o, &n, (uint8_t)(0x80 | (cp & 0x3f)), 5, 6);
		}
		return n;
	}
	return scan_vdec_restart(d, c, '\\', o, n);
}

/*
 * One step of a view's automaton over decoded byte vo.  A view is "in step" with
 * the raw automaton when both stand in the same state (prev) and the decoded byte
 * is the raw byte itself: it then reaches the raw automaton's new state (next)
 * without a walk, which is the common case (text with no escapes) and costs
 * nothing.
 */
static uint32_t
scan_view_step(const struct scan_set *set, uint32_t vs, const struct scan_vout *vo,
    uint32_t prev, uint32_t next)
{
	if (vs == prev && vo->vo_back == 0)
		return next;
	return scan_step(set, vs, vo->vo_byte);
}

/* ---- detection ---- */

void
scan_stream_init(struct scan_stream *s, const struct scan_set *set)
{
	memset(s, 0, sizeof(*s));
	s->ss_set = set;
	s->ss_raw = SCAN_ROOT;
	s->ss_dec = SCAN_ROOT;
	s->ss_json = SCAN_ROOT;
}

static int
scan_match_fill(const struct scan_set *set, uint32_t pi, enum scan_enc enc,
    uint64_t end, struct scan_match *m)
{
	const struct scan_pat *p = &set->ss_pat[pi];

	m->sm_id = set->ss_ent[p->sp_entry].se_id;
	/* A raw pattern found in a decoded view was encoded that way. */
	m->sm_enc = enc != SCAN_ENC_RAW && p->sp_enc == SCAN_ENC_RAW ? enc :
	    p->sp_enc;
	m->sm_end = end;
	return 1;
}

/* Feeds raw byte c (raw automaton at prev -> next) to one decoded view. */
static int
scan_stream_view(struct scan_stream *s, enum scan_view v, uint8_t c,
    uint32_t prev, uint32_t next, struct scan_match *m)
{
	const struct scan_set *set = s->ss_set;
	struct scan_vout o[SCAN_VOUT_MAX];
	struct scan_vdec *d = v == SCAN_VIEW_PCT ? &s->ss_pdec : &s->ss_jdec;
	uint32_t *st = v == SCAN_VIEW_PCT ? &s->ss_dec : &s->ss_json;
	uint64_t *off = v == SCAN_VIEW_PCT ? &s->ss_dec_off : &s->ss_json_off;
	size_t n, j;
	uint32_t pi;

	n = scan_vdec_byte(d, v, c, o);
	for (j = 0; j < n; j++) {
		*st = scan_view_step(set, *st, &o[j], prev, next);
		(*off)++;
		if ((pi = scan_output(set, *st)) != SCAN_NONE) {
			*st = SCAN_ROOT;
			return scan_match_fill(set, pi, v == SCAN_VIEW_PCT ?
			    SCAN_ENC_PCT : SCAN_ENC_JSON, *off, m);
		}
	}
	return 0;
}

/*
 * The common case, both views in step with the raw bytes: runs the raw automaton
 * alone (state *st) over p[i..n) up to the first byte that completes a match or
 * is an escape character, which it leaves unfed.  Returns its index (n: none).
 * Locals only in the loop: no loads through the set per byte.
 *
 * At the root it skips: 8 bytes at a time that all keep it there (ss_stop); and
 * a byte c1 followed by c2 when no pattern begins with c1 c2 and neither is an
 * escape character: from c1's state (depth 1 at most, its fail link the root)
 * c2 then goes where it goes from the root, so the state after c2 is the same as
 * without the skip (no pattern is shorter than 2), and a view that leaves its step
 * at the next escape takes the state the raw automaton really has there.
 */
/* Not 0 unless byte q[j] may be skipped at the root (its follower q[j + 1] read). */
#define SCAN_SKIP(q, j)	(esc[(q)[j]] | esc[(q)[(j) + 1]] | \
	(pair[(q)[j] << 5 | (q)[(j) + 1] >> 3] >> ((q)[(j) + 1] & 7) & 1))

static size_t
scan_plain_run(const struct scan_set *set, const uint8_t *p, size_t i, size_t n,
    uint32_t *st)
{
	const uint32_t *root = set->ss_root;
	const uint8_t *stop = set->ss_stop, *esc = set->ss_esc;
	const uint8_t *pair = set->ss_pair;
	uint32_t s = *st, t, first = set->ss_first_out;
	uint8_t c;

	for (; i < n; i++) {
		while (s == SCAN_ROOT) {
			if (n - i >= 8 && (stop[p[i]] | stop[p[i + 1]] |
			    stop[p[i + 2]] | stop[p[i + 3]] | stop[p[i + 4]] |
			    stop[p[i + 5]] | stop[p[i + 6]] | stop[p[i + 7]]) == 0)
				i += 8;
			else if (n - i >= 2 && SCAN_SKIP(p + i, 0) == 0)
				i++;
			else
				break;
		}
		if (i == n)
			break;
		c = p[i];
		if (c == '%' || c == '\\')
			break;
		/* From the root (most bytes of most text): one load, no call. */
		t = s == SCAN_ROOT ? root[c] : scan_step(set, s, c);
		if (t >= first)
			break;
		s = t;
	}
	*st = s;
	return i;
}

int
scan_stream_feed(struct scan_stream *s, const uint8_t *buf, size_t len,
    struct scan_match *m)
{
	const struct scan_set *set = s->ss_set;
	uint32_t pi, prev;
	size_t i, from;
	uint8_t c;

	if (set == NULL || !set->ss_built)
		return 0;
	for (i = 0; i < len; i++) {
		if (s->ss_pdec.vd_n == 0 && s->ss_jdec.vd_n == 0 &&
		    s->ss_dec == s->ss_raw && s->ss_json == s->ss_raw) {
			from = i;
			i = scan_plain_run(set, buf, i, len, &s->ss_raw);
			s->ss_dec = s->ss_json = s->ss_raw;
			s->ss_off += i - from;
			s->ss_dec_off += i - from;
			s->ss_json_off += i - from;
			if (i == len)
				break;
		}
		c = buf[i];

		s->ss_off++;
		prev = s->ss_raw;
		s->ss_raw = scan_step(set, prev, c);
		if ((pi = scan_output(set, s->ss_raw)) != SCAN_NONE) {
			s->ss_raw = SCAN_ROOT;
			return scan_match_fill(set, pi, SCAN_ENC_RAW, s->ss_off, m);
		}
		/* A view in step with the raw bytes stays so on a plain byte. */
		if (s->ss_pdec.vd_n == 0 && s->ss_dec == prev && c != '%') {
			s->ss_dec = s->ss_raw;
			s->ss_dec_off++;
		} else if (scan_stream_view(s, SCAN_VIEW_PCT, c, prev, s->ss_raw,
		    m))
			return 1;
		if (s->ss_jdec.vd_n == 0 && s->ss_json == prev && c != '\\') {
			s->ss_json = s->ss_raw;
			s->ss_json_off++;
		} else if (scan_stream_view(s, SCAN_VIEW_JSON, c, prev, s->ss_raw,
		    m))
			return 1;
	}
	return 0;
}

/* "Basic" 1*SP token68: the offset of the token, or 0 if value is not that. */
static size_t
scan_basic_token(const uint8_t *v, size_t n)
{
	static const char basic[] = "basic";
	size_t i;

	if (n < 7)
		return 0;
	for (i = 0; i < 5; i++)
		if ((v[i] | 0x20) != basic[i])
			return 0;
	if (v[5] != ' ')
		return 0;
	for (i = 5; i < n && v[i] == ' '; i++)
		;
	return i < n ? i : 0;
}

int
scan_find(const struct scan_set *set, const uint8_t *buf, size_t len,
    struct scan_match *m)
{
	struct scan_stream s;
	uint8_t *dec = NULL;
	size_t tok, dl = 0, cap = 0;
	int rc = 0;

	scan_stream_init(&s, set);
	if (scan_stream_feed(&s, buf, len, m))
		return 1;
	if ((tok = scan_basic_token(buf, len)) == 0)
		return 0;
	cap = (len - tok) / 4 * 3 + 3;
	if ((dec = malloc(cap)) == NULL) {
		/* Fail closed: credentials that could not be looked into count as found. */
		m->sm_id = -1;
		m->sm_enc = SCAN_ENC_BASIC;
		m->sm_end = len;
		return 1;
	}
	if (scan_b64_decode(buf + tok, len - tok, dec, &dl) == 0) {
		scan_stream_init(&s, set);
		if (scan_stream_feed(&s, dec, dl, m)) {
			m->sm_enc = SCAN_ENC_BASIC;
			rc = 1;
		}
	}
	scan_wipe_free(dec, cap);
	return rc;
}

/* ---- substitution ---- */

static void
scan_note_id(int id, int *ids, size_t nids, size_t *nseen)
{
	size_t i;

	if (ids == NULL)
		return;
	for (i = 0; i < *nseen && i < nids; i++)
		if (ids[i] == id)
			return;
	if (*nseen < nids)
		ids[(*nseen)++] = id;
}

/* Raw substitution of in[n] into out; returns the count or -1. */
static int
scan_subst_raw(const struct scan_set *set, const uint8_t *in, size_t n,
    struct http_buf *out, int *ids, size_t nids, size_t *nseen)
{
	const uint32_t *root = set->ss_root;
	const struct scan_pat *p;
	const struct scan_entry *e;
	uint32_t s = SCAN_ROOT, first = set->ss_first_out;
	size_t i, from = 0;
	int count = 0;

	for (i = 0; i < n; i++) {
		s = s == SCAN_ROOT ? root[in[i]] : scan_step(set, s, in[i]);
		if (s < first)
			continue;
		p = &set->ss_pat[set->ss_node[s].sn_match];
		if (p->sp_enc != SCAN_ENC_RAW)
			continue;	/* left for scan_find() to refuse */
		e = &set->ss_ent[p->sp_entry];
		if (http_buf_add(out, in + from, i + 1 - p->sp_len - from) == -1 ||
		    http_buf_add(out, e->se_repl, e->se_rn) == -1)
			return -1;
		from = i + 1;
		s = SCAN_ROOT;
		count++;
		scan_note_id(e->se_id, ids, nids, nseen);
	}
	if (http_buf_add(out, in + from, n - from) == -1)
		return -1;
	return count;
}

int
scan_subst_value(const struct scan_set *set, const uint8_t *value, size_t len,
    struct http_buf *out, int *ids, size_t nids)
{
	struct http_buf dec2 = HTTP_BUF_INIT;
	uint8_t *dec = NULL;
	size_t tok, dl = 0, cap = 0, nseen = 0, mark = out->hb_len;
	int rc = -1, n;

	if (!set->ss_built) {
		errno = EINVAL;
		return -1;
	}
	if ((tok = scan_basic_token(value, len)) != 0) {
		cap = (len - tok) / 4 * 3 + 3;
		if ((dec = malloc(cap)) == NULL)
			goto out;
		if (scan_b64_decode(value + tok, len - tok, dec, &dl) == 0) {
			if ((n = scan_subst_raw(set, dec, dl, &dec2, ids, nids,
			    &nseen)) == -1)
				goto out;
			if (n > 0) {
				if (http_buf_add(out, value, tok) == -1 ||
				    scan_b64_encode(dec2.hb_p, dec2.hb_len, 0,
				    out) == -1)
					goto out;
				rc = n;
				goto out;
			}
		}
	}
	rc = scan_subst_raw(set, value, len, out, ids, nids, &nseen);
 out:
	if (rc == -1 && out->hb_len > mark)
		out->hb_len = mark;	/* no partial value left behind */
	scan_wipe_free(dec, cap);
	http_buf_free(&dec2);
	return rc;
}

/* ---- redaction ---- */

/*
 * A decoded view of the redactor's input: its decoder, its automaton state, and a
 * ring of the raw start offsets (low 32 bits of the offset in the stream) of its
 * last rv_cap decoded bytes (a power of two: the index is a mask), so a match
 * found in the view maps back to the raw bytes it covers.  Most of the time a view is "in step": no escape begun, the
 * same automaton state as the raw bytes, and each decoded byte since rv_k0 is the
 * raw byte at rv_raw0 + (k - rv_k0); nothing is then done or stored per byte
 * until the view's escape character comes (scan_rview_leave()).
 */
struct scan_rview {
	struct scan_vdec rv_dec;
	uint32_t	 rv_state;	/* when not in step */
	int		 rv_sync;	/* in step */
	uint64_t	 rv_k0;
	uint64_t	 rv_raw0;
	uint32_t	*rv_ring;
	size_t		 rv_cap;
	uint64_t	 rv_ndec;	/* decoded bytes since the last reset (when
					   not in step) */
};

static const uint8_t scan_view_esc[SCAN_NVIEWS] = { '%', '\\' };

struct scan_redact {
	const struct scan_set *sr_set;
	void		(*sr_fn)(void *, const struct scan_match *);
	void		*sr_arg;
	struct http_buf	 sr_hold;	/* sr_dead bytes, then the hold (wiped) */
	size_t		 sr_dead;	/* emitted in an earlier call, left until in
					   the way of new input */
	size_t		 sr_scanned;	/* bytes of the hold run through */
	size_t		 sr_emit;	/* bytes of the hold already emitted */
	uint32_t	 sr_state;
	int		 sr_trail_bits;	/* pending patch of the next char */
	uint8_t		 sr_trail_val;
	const char	*sr_trail_alpha;
	uint64_t	 sr_base;	/* stream offset of the hold's first byte */
	uint64_t	 sr_count;
	struct scan_rview sr_view[SCAN_NVIEWS];
};

/* Every automaton back to the root; raw stream offset at: the next byte. */
static void
scan_rview_reset(struct scan_redact *r, uint64_t at)
{
	size_t v;

	r->sr_state = SCAN_ROOT;
	for (v = 0; v < SCAN_NVIEWS; v++) {
		r->sr_view[v].rv_dec.vd_n = 0;
		r->sr_view[v].rv_state = SCAN_ROOT;
		r->sr_view[v].rv_ndec = 0;
		r->sr_view[v].rv_sync = 1;
		r->sr_view[v].rv_k0 = 0;
		r->sr_view[v].rv_raw0 = at;
	}
}

struct scan_redact *
scan_redact_new(const struct scan_set *set,
    void (*fn)(void *, const struct scan_match *), void *arg)
{
	struct scan_redact *r;
	size_t v;

	if (!set->ss_built) {
		errno = EINVAL;
		return NULL;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->sr_set = set;
	r->sr_fn = fn;
	r->sr_arg = arg;
	/* A match and the character before it; the rings come with the first escape. */
	for (v = 0; v < SCAN_NVIEWS; v++)
		for (r->sr_view[v].rv_cap = 1; r->sr_view[v].rv_cap <
		    set->ss_maxlen + 2; r->sr_view[v].rv_cap *= 2)
			;
	scan_rview_reset(r, 0);
	return r;
}

void
scan_redact_free(struct scan_redact *r)
{
	if (r == NULL)
		return;
	http_buf_free(&r->sr_hold);
	free(r->sr_view[0].rv_ring);	/* both rings; offsets, no content */
	OPENSSL_cleanse(r, sizeof(*r));
	free(r);
}

uint64_t
scan_redact_count(const struct scan_redact *r)
{
	return r->sr_count;
}

/* Replaces bits of the base64 char *c: mask selects them, val gives them. */
static void
scan_b64_patch(uint8_t *c, const char *alpha, uint8_t mask, uint8_t val)
{
	int v;

	if ((v = scan_b64_val(alpha, *c)) == -1)
		return;		/* not base64 here: no bits of ours to hide */
	*c = (uint8_t)alpha[((unsigned int)v & ~mask & 0x3f) | (val & mask)];
}

/*
 * Appends replacement p[n] as it must stand in view v: JSON (minimal escaping:
 * '"', '\' and control bytes), percent (RFC 3986 unreserved kept), or as is.
 */
static int
scan_repl_add(struct http_buf *out, int v, const uint8_t *p, size_t n)
{
	uint8_t e[6];
	size_t i;
	int el;

	if (v == -1)
		return http_buf_add(out, p, n);
	for (i = 0; i < n; i++) {
		el = 0;
		if (v == SCAN_VIEW_JSON && (p[i] == '"' || p[i] == '\\')) {
			e[0] = '\\';
			e[1] = p[i];
			el = 2;
		} else if (v == SCAN_VIEW_JSON && p[i] < 0x20) {
			memcpy(e, "\\u00", 4);
			e[4] = (uint8_t)"0123456789abcdef"[p[i] >> 4];
			e[5] = (uint8_t)"0123456789abcdef"[p[i] & 15];
			el = 6;
		} else if (v == SCAN_VIEW_PCT)
			el = (int)scan_pct_encode(p + i, 1, 1, "", 0, 0, e);
		if ((el == 0 ? http_buf_add(out, p + i, 1) :
		    http_buf_add(out, e, (size_t)el)) == -1)
			return -1;
	}
	return 0;
}

/*
 * Replaces hold bytes [start, end) by pattern pi's replacement, seen in view v (-1:
 * raw); lead: hold index of the character before the match whose low bits carry
 * the secret's (base64), or SIZE_MAX.  The caller resets the automata.
 */
static int
scan_redact_hit(struct scan_redact *r, uint32_t pi, int v, size_t start,
    size_t end, size_t lead, struct http_buf *out)
{
	const struct scan_set *set = r->sr_set;
	const struct scan_pat *p = &set->ss_pat[pi];
	uint8_t *h = r->sr_hold.hb_p + r->sr_dead;
	struct scan_match m;
	const char *alpha;

	alpha = p->sp_enc == SCAN_ENC_B64URL ? scan_b64_url : scan_b64_std;
	if (p->sp_lead_bits != 0 && lead != SIZE_MAX && lead >= r->sr_emit)
		scan_b64_patch(&h[lead], alpha,
		    (uint8_t)((1u << p->sp_lead_bits) - 1), p->sp_lead_val);
	if (start < r->sr_emit || start > end)
		start = r->sr_emit;	/* defensive: the hold keeps it all */
	if (http_buf_add(out, h + r->sr_emit, start - r->sr_emit) == -1 ||
	    scan_repl_add(out, v, p->sp_repl, p->sp_repl_len) == -1)
		return -1;
	r->sr_emit = end;
	if (p->sp_trail_bits != 0) {
		r->sr_trail_bits = p->sp_trail_bits;
		r->sr_trail_val = p->sp_trail_val;
		r->sr_trail_alpha = alpha;
	}
	r->sr_count++;
	if (r->sr_fn != NULL) {
		m.sm_id = set->ss_ent[p->sp_entry].se_id;
		m.sm_enc = p->sp_enc;
		if (v != -1 && p->sp_enc == SCAN_ENC_RAW)
			m.sm_enc = v == SCAN_VIEW_PCT ? SCAN_ENC_PCT : SCAN_ENC_JSON;
		m.sm_end = r->sr_base + end;
		r->sr_fn(r->sr_arg, &m);
	}
	return 0;
}

/* Hold index of the stream offset whose low 32 bits are lo (within the hold). */
static size_t
scan_hold_index(const struct scan_redact *r, uint32_t lo)
{
	return (size_t)(uint32_t)(lo - (uint32_t)r->sr_base);
}

/*
 * Hold index where decoded byte k of view rv began (a huge value if that byte has
 * already left the hold).
 */
static size_t
scan_rview_index(const struct scan_redact *r, const struct scan_rview *rv,
    uint64_t k)
{
	if (rv->rv_sync && k >= rv->rv_k0)
		return (size_t)(rv->rv_raw0 + (k - rv->rv_k0) - r->sr_base);
	return scan_hold_index(r, rv->rv_ring[k & (rv->rv_cap - 1)]);
}

/*
 * View rv leaves its step with the raw bytes before hold byte i (raw automaton
 * state prev): its state, count and the ring entries a match may still reach (the
 * automaton's depth, and one more) are written out.
 */
static int
scan_rview_leave(struct scan_redact *r, struct scan_rview *rv, size_t i,
    uint32_t prev)
{
	uint64_t k, ndec;
	uint32_t *ring;
	size_t v;

	if (rv->rv_ring == NULL) {
		if ((ring = calloc(SCAN_NVIEWS * rv->rv_cap, sizeof(*ring))) ==
		    NULL)
			return -1;
		for (v = 0; v < SCAN_NVIEWS; v++)
			r->sr_view[v].rv_ring = ring + v * rv->rv_cap;
	}
	ndec = rv->rv_k0 + (r->sr_base + i - rv->rv_raw0);
	k = (uint64_t)r->sr_set->ss_node[prev].sn_depth + 1;
	k = k < ndec - rv->rv_k0 ? ndec - k : rv->rv_k0;
	for (; k < ndec; k++)
		rv->rv_ring[k & (rv->rv_cap - 1)] = (uint32_t)(rv->rv_raw0 +
		    (k - rv->rv_k0));
	rv->rv_ndec = ndec;
	rv->rv_state = prev;
	rv->rv_sync = 0;
	return 0;
}

/*
 * Feeds hold byte i to view v (raw automaton prev -> next).  Returns 1 after a
 * match (*resume: the hold index to go on from), 0 if none, -1 on error.
 */
static int
scan_redact_view(struct scan_redact *r, int v, size_t i, uint32_t prev,
    uint32_t next, struct http_buf *out, size_t *resume)
{
	const struct scan_set *set = r->sr_set;
	struct scan_rview *rv = &r->sr_view[v];
	struct scan_vout o[SCAN_VOUT_MAX];
	size_t n, j, at, start, end, lead;
	uint64_t first;
	uint32_t pi;

	n = scan_vdec_byte(&rv->rv_dec, (enum scan_view)v,
	    r->sr_hold.hb_p[r->sr_dead + i], o);
	for (j = 0; j < n; j++) {
		at = i - o[j].vo_back;
		rv->rv_ring[rv->rv_ndec & (rv->rv_cap - 1)] = (uint32_t)(r->sr_base + at);
		rv->rv_ndec++;
		rv->rv_state = scan_view_step(set, rv->rv_state, &o[j], prev, next);
		if ((pi = scan_output(set, rv->rv_state)) == SCAN_NONE)
			continue;
		/* The match's first decoded byte, and the one before it. */
		first = rv->rv_ndec - set->ss_pat[pi].sp_len;
		start = scan_rview_index(r, rv, first);
		end = at + o[j].vo_len;
		lead = SIZE_MAX;
		if (first >= 1 && scan_rview_index(r, rv, first - 1) + 1 == start)
			lead = start - 1;	/* a plain character */
		if (scan_redact_hit(r, pi, v, start, end, lead, out) == -1)
			return -1;
		*resume = end;
		return 1;
	}
	if (rv->rv_dec.vd_n == 0 && rv->rv_state == next) {
		rv->rv_sync = 1;	/* back in step */
		rv->rv_k0 = rv->rv_ndec;
		rv->rv_raw0 = r->sr_base + i + 1;
	}
	return 0;
}

/* The first hold index that may still be part of a match (or its lead char). */
static size_t
scan_redact_keep(const struct scan_redact *r)
{
	const struct scan_node *nd = r->sr_set->ss_node;
	struct scan_rview rv;	/* a copy: one sanitizer check per view */
	size_t len = r->sr_hold.hb_len - r->sr_dead, from, k, kraw, x, v;
	uint64_t ndec, base = r->sr_base;
	uint32_t st, raw = r->sr_state;

	kraw = (size_t)nd[raw].sn_depth + 1;
	from = len > kraw ? len - kraw : 0;
	for (v = 0; v < SCAN_NVIEWS; v++) {
		rv = r->sr_view[v];
		/*
		 * In step for at least as long as the raw window: the same.  (The raw
		 * window's length, not the previous view's: that one may be shorter, and
		 * a view let go too early would emit bytes it still needs.)
		 */
		if (rv.rv_sync && base + len - rv.rv_raw0 >= kraw)
			continue;
		if (rv.rv_dec.vd_n > 0 && len - rv.rv_dec.vd_n < from)
			from = len - rv.rv_dec.vd_n;
		if (rv.rv_sync) {
			st = raw;
			ndec = rv.rv_k0 + (base + len - rv.rv_raw0);
		} else {
			st = rv.rv_state;
			ndec = rv.rv_ndec;
		}
		/* As for the raw bytes: the match so far and one byte more. */
		k = (size_t)nd[st].sn_depth + 1;
		if (k > ndec)
			k = (size_t)ndec;
		if (k == 0)
			continue;
		x = scan_rview_index(r, &r->sr_view[v], ndec - k);
		if (x > len)
			continue;	/* defensive: already out */
		if (x < from)
			from = x;
	}
	return from;
}

/*
 * Appends in[len] to the hold.  The bytes earlier calls emitted (sr_dead) stay in
 * front of it until new input needs their room and they are at least as many as
 * the bytes held; they are then dropped (and wiped), so the held bytes move about
 * once in all, not at every call of a stream fed in small pieces.  While there is
 * room the input is copied in place (http_buf_add() wipes what it moves on
 * growing).
 */
static int
scan_hold_add(struct scan_redact *r, const uint8_t *in, size_t len)
{
	struct http_buf *hb = &r->sr_hold;

	if (len == 0)
		return 0;
	if (len <= hb->hb_cap - hb->hb_len) {
		memcpy(hb->hb_p + hb->hb_len, in, len);
		hb->hb_len += len;
		return 0;
	}
	if (r->sr_dead > 0 && r->sr_dead >= hb->hb_len - r->sr_dead) {
		http_buf_drain(hb, r->sr_dead);
		r->sr_dead = 0;
	}
	return http_buf_add(hb, in, len);
}

int
scan_redact_feed(struct scan_redact *r, const uint8_t *in, size_t len,
    struct http_buf *out)
{
	const struct scan_set *set = r->sr_set;
	struct http_buf *hb = &r->sr_hold;
	const struct scan_pat *p;
	uint32_t pi, prev;
	size_t i, n, keep, resume, lead;
	uint64_t before = r->sr_count;
	uint8_t *h;
	int v, rc;

	if (scan_hold_add(r, in, len) == -1)
		return -1;
	if ((n = hb->hb_len - r->sr_dead) == 0)
		return 0;
	h = hb->hb_p + r->sr_dead;
	for (i = r->sr_scanned; i < n; i++) {
		if (r->sr_trail_bits == 0 && r->sr_view[SCAN_VIEW_PCT].rv_sync &&
		    r->sr_view[SCAN_VIEW_JSON].rv_sync) {
			i = scan_plain_run(set, h, i, n, &r->sr_state);
			if (i == n)
				break;
		}
		if (r->sr_trail_bits != 0) {
			scan_b64_patch(&h[i], r->sr_trail_alpha,
			    (uint8_t)(0x3f << (6 - r->sr_trail_bits) & 0x3f),
			    r->sr_trail_val);
			r->sr_trail_bits = 0;
		}
		prev = r->sr_state;
		r->sr_state = scan_step(set, prev, h[i]);
		if ((pi = scan_output(set, r->sr_state)) != SCAN_NONE) {
			p = &set->ss_pat[pi];
			/* The hold keeps depth + 1 bytes, so the match is all in it. */
			lead = i + 1 > p->sp_len ? i - p->sp_len : SIZE_MAX;
			if (scan_redact_hit(r, pi, -1, i + 1 >= p->sp_len ?
			    i + 1 - p->sp_len : 0, i + 1, lead, out) == -1)
				return -1;
			scan_rview_reset(r, r->sr_base + i + 1);
			continue;
		}
		for (v = 0; v < SCAN_NVIEWS; v++) {
			if (r->sr_view[v].rv_sync) {
				if (h[i] != scan_view_esc[v])
					continue;	/* stays in step */
				if (scan_rview_leave(r, &r->sr_view[v], i, prev) ==
				    -1)
					return -1;
			}
			if ((rc = scan_redact_view(r, v, i, prev, r->sr_state, out,
			    &resume)) == -1)
				return -1;
			if (rc == 1) {
				scan_rview_reset(r, r->sr_base + resume);
				i = resume - 1;		/* on from the match's end */
				break;
			}
		}
	}
	r->sr_scanned = n;
	/* Emit all but what may still become a match (and the char before it). */
	keep = scan_redact_keep(r);
	if (keep > r->sr_emit) {
		if (http_buf_add(out, h + r->sr_emit, keep - r->sr_emit) == -1)
			return -1;
		r->sr_emit = keep;
	}
	r->sr_dead += r->sr_emit;
	r->sr_base += r->sr_emit;
	r->sr_scanned -= r->sr_emit;
	r->sr_emit = 0;
	return (int)(r->sr_count - before);
}

int
scan_redact_finish(struct scan_redact *r, struct http_buf *out)
{
	struct http_buf *hb = &r->sr_hold;
	size_t n = hb->hb_len - r->sr_dead;

	if (n > r->sr_emit && http_buf_add(out, hb->hb_p + r->sr_dead +
	    r->sr_emit, n - r->sr_emit) == -1)
		return -1;
	http_buf_drain(hb, hb->hb_len);
	r->sr_dead = 0;
	r->sr_scanned = 0;
	r->sr_emit = 0;
	r->sr_trail_bits = 0;
	r->sr_base = 0;
	scan_rview_reset(r, 0);
	return 0;
}

/* ---- base64 ---- */

int
scan_b64_encode(const uint8_t *in, size_t n, int url, struct http_buf *out)
{
	const char *alpha = url ? scan_b64_url : scan_b64_std;
	uint8_t q[4];
	unsigned int v;
	size_t i;

	for (i = 0; i < n; i += 3) {
		v = (unsigned int)in[i] << 16;
		if (i + 1 < n)
			v |= (unsigned int)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		q[0] = (uint8_t)alpha[v >> 18 & 63];
		q[1] = (uint8_t)alpha[v >> 12 & 63];
		q[2] = i + 1 < n ? (uint8_t)alpha[v >> 6 & 63] : '=';
		q[3] = i + 2 < n ? (uint8_t)alpha[v & 63] : '=';
		if (http_buf_add(out, q, 4) == -1)
			return -1;
	}
	return 0;
}

int
scan_b64_decode(const uint8_t *in, size_t n, uint8_t *out, size_t *outlen)
{
	size_t i, o = 0, pad = 0;
	unsigned int v;
	int j, d;

	if (n == 0 || n % 4 != 0)
		return -1;
	if (in[n - 1] == '=')
		pad = in[n - 2] == '=' ? 2 : 1;
	for (i = 0; i < n; i += 4) {
		v = 0;
		for (j = 0; j < 4; j++) {
			if (i + 4 == n && j >= 4 - (int)pad) {
				if (in[i + j] != '=')
					return -1;
				d = 0;
			} else if ((d = scan_b64_val(scan_b64_std, in[i + j])) == -1)
				return -1;
			v = v << 6 | (unsigned int)d;
		}
		out[o++] = (uint8_t)(v >> 16);
		if (i + 4 < n || pad < 2)
			out[o++] = (uint8_t)(v >> 8);
		if (i + 4 < n || pad < 1)
			out[o++] = (uint8_t)v;
	}
	*outlen = o;
	return 0;
}
