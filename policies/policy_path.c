/*
 * policies/policy_path.c: the request-path normaliser and the path globs of
 * "http.paths".  Pure functions over strings; no allocation.
 *
 * The normaliser produces one canonical spelling per path so that a glob written
 * against it cannot be side-stepped by another spelling the origin server would
 * treat as the same (or a parent) resource:
 *  - unreserved characters (ALPHA DIGIT - . _ ~) are percent-decoded, every other
 *    percent-encoded byte is kept with upper-case hex, and raw ASCII characters that
 *    are not allowed in a path (RFC 3986 pchar) are percent-encoded;
 *  - "." and ".." segments (also "%2e"-spelled ones) are resolved;
 *  - refused (the request is denied as invalid_path rather than guessed at): a path
 *    not starting with '/', an encoded '/' or '\' (servers disagree about them), an
 *    encoded or raw NUL or other control byte, a raw '\', a raw byte >= 0x80 (a
 *    client must percent-encode it), a malformed '%' sequence, a ".." that would
 *    climb above the root (an escape attempt, so not clamped), a ".." that would
 *    remove an empty segment ("/a//.." means "/a/" to one server and "/" to one
 *    that merges slashes), and a segment "." or ".." followed by ";parameters"
 *    (servlet containers strip those and then resolve the dots).
 * Empty segments ("//") are otherwise kept: nothing else is collapsed.
 */
#include <stddef.h>
#include <string.h>

#include "hexdig.h"
#include "policy.h"

static int
path_is_unreserved(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~';
}

/* sub-delims, ':' and '@': allowed raw in a segment, and kept as spelled. */
static int
path_is_subdelim(int c)
{
	return strchr("!$&'()*+,;=:@", c) != NULL && c != '\0';
}

/* Appends one byte as "%XX". */
static int
path_put_pct(char *out, size_t outlen, size_t *o, unsigned char c)
{
	static const char hex[] = "0123456789ABCDEF";

	if (*o + 3 >= outlen)
		return -1;
	out[(*o)++] = '%';
	out[(*o)++] = hex[c >> 4];
	out[(*o)++] = hex[c & 0xf];
	return 0;
}

/*
 * Finishes the segment out[segstart, *o).  Returns 1 if the segment was "." or ".."
 * and has been resolved (the caller must then not write the next '/'), 0 if it stays,
 * -1 if the path is refused.
 */
static int
path_end_segment(char *out, size_t *o, size_t segstart)
{
	const char *seg = out + segstart;
	size_t len = *o - segstart, dots, p;

	for (dots = 0; dots < len && seg[dots] == '.'; dots++)
		;
	if (dots >= 1 && dots <= 2 && dots < len && seg[dots] == ';')
		return -1;	/* "..;x": a servlet container's ".." */
	if (len == 1 && dots == 1) {
		*o = segstart;
		return 1;
	}
	if (len == 2 && dots == 2) {
		/* out[segstart - 1] is the '/' before this segment. */
		if (segstart <= 1)
			return -1;	/* above the root */
		p = segstart - 1;
		while (p > 0 && out[p - 1] != '/')
			p--;
		if (p == segstart - 1)
			return -1;	/* would remove an empty segment */
		*o = p;
		return 1;
	}
	return 0;
}

int
policy_path_normalize(const char *in, size_t len, char *out, size_t outlen)
{
	size_t i, o = 0, segstart;
	int r, hi, lo;
	unsigned char c;

	if (outlen < 2 || len == 0 || in[0] != '/')
		return -1;
	out[o++] = '/';
	segstart = o;
	for (i = 1; i < len; i++) {
		c = (unsigned char)in[i];
		if (c == '?' || c == '#')
			break;
		if (c == '/') {
			if ((r = path_end_segment(out, &o, segstart)) == -1)
				return -1;
			if (r == 0) {
				if (o + 1 >= outlen)
					return -1;
				out[o++] = '/';
			}
			segstart = o;
			continue;
		}
		if (c == '%') {
			if (i + 2 >= len || (hi = hexdig_val(in[i + 1])) == -1 ||
			    (lo = hexdig_val(in[i + 2])) == -1)
				return -1;
			i += 2;
			c = (unsigned char)(hi << 4 | lo);
			if (c == '/' || c == '\\' || c < 0x20 || c == 0x7f)
				return -1;
			if (path_is_unreserved(c)) {
				if (o + 1 >= outlen)
					return -1;
				out[o++] = (char)c;
			} else if (path_put_pct(out, outlen, &o, c) == -1)
				return -1;
			continue;
		}
		if (c < 0x20 || c == 0x7f || c >= 0x80 || c == '\\')
			return -1;
		if (path_is_unreserved(c) || path_is_subdelim(c)) {
			if (o + 1 >= outlen)
				return -1;
			out[o++] = (char)c;
		} else if (path_put_pct(out, outlen, &o, c) == -1)
			return -1;
	}
	if (path_end_segment(out, &o, segstart) == -1)
		return -1;
	if (o >= outlen)
		return -1;
	out[o] = '\0';
	return 0;
}

/* '*' matches any run of bytes within the segment [s, se). */
static int
path_seg_match(const char *g, const char *ge, const char *s, const char *se)
{
	const char *star_g = NULL, *star_s = NULL;

	/* The classic one-backtrack-point matcher: O(|g| * |s|) at worst. */
	while (s < se) {
		if (g < ge && *g == '*') {
			star_g = ++g;
			star_s = s;
		} else if (g < ge && *g == *s) {
			g++;
			s++;
		} else if (star_g != NULL) {
			g = star_g;
			s = ++star_s;
		} else
			return 0;
	}
	while (g < ge && *g == '*')
		g++;
	return g == ge;
}

static const char *
path_seg_end(const char *p)
{
	return p + strcspn(p, "/");
}

/* The segment after the one at p, or NULL after the last one. */
static const char *
path_seg_next(const char *p)
{
	const char *e = path_seg_end(p);

	return *e == '/' ? e + 1 : NULL;
}

static int
path_seg_is_globstar(const char *p)
{
	return p[0] == '*' && p[1] == '*' && (p[2] == '/' || p[2] == '\0');
}

int
policy_path_match(const char *glob, const char *path)
{
	const char *g, *s, *star_g = NULL, *star_s = NULL;

	if (glob == NULL || path == NULL || glob[0] != '/' || path[0] != '/')
		return 0;
	/*
	 * The same one-backtrack-point algorithm one level up: segments are the
	 * characters and "**" the star.  A later "**" makes backtracking to an
	 * earlier one useless, so the cost stays O(|glob segments| * |path
	 * segments|) segment comparisons, never exponential.
	 */
	g = glob + 1;
	s = path + 1;
	while (s != NULL) {
		if (g != NULL && path_seg_is_globstar(g)) {
			star_g = g = path_seg_next(g);
			star_s = s;
		} else if (g != NULL && path_seg_match(g, path_seg_end(g), s,
		    path_seg_end(s))) {
			g = path_seg_next(g);
			s = path_seg_next(s);
		} else if (star_s != NULL) {
			g = star_g;
			s = star_s = path_seg_next(star_s);
		} else
			return 0;
	}
	while (g != NULL && path_seg_is_globstar(g))
		g = path_seg_next(g);
	return g == NULL;
}
