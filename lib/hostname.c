/*
 * lib/hostname.c: see include/hostname.h.
 *
 * One normaliser for every name airlock compares (policy hosts, DNS questions, SNI,
 * Host headers, CLI arguments), so that two spellings of one name can never be
 * judged differently.  The grammar is deliberately narrower than DNS: LDH labels,
 * A-labels only, and nothing that any IPv4 parser (inet_aton, browsers' WHATWG URL
 * parser) could read as an address.
 *
 * IDNA: an "xn--" label must decode as RFC 3492 punycode, decode to at least one
 * non-ASCII code point (no surrogates, nothing above U+10FFFF), and re-encode to the
 * same text (so every name has exactly one spelling).  The IDNA2008 tables (NFC,
 * contextual and bidi rules) are not checked: a name that passes here is compared
 * byte for byte, which is all the policy engine needs.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <libpsl.h>

#include "hostname.h"

#define PUNY_BASE	36
#define PUNY_TMIN	1
#define PUNY_TMAX	26
#define PUNY_SKEW	38
#define PUNY_DAMP	700
#define PUNY_BIAS	72
#define PUNY_N		0x80
#define PUNY_MAXCP	HOSTNAME_LABEL_MAX	/* a decoded label is never longer */

static pthread_once_t	 hostname_psl_once = PTHREAD_ONCE_INIT;
static const psl_ctx_t	*hostname_psl;		/* never freed: lives for the process */

static uint32_t
puny_adapt(uint32_t delta, uint32_t numpoints, int firsttime)
{
	uint32_t k = 0;

	delta = firsttime ? delta / PUNY_DAMP : delta / 2;
	delta += delta / numpoints;
	while (delta > ((PUNY_BASE - PUNY_TMIN) * PUNY_TMAX) / 2) {
		delta /= PUNY_BASE - PUNY_TMIN;
		k += PUNY_BASE;
	}
	return k + (PUNY_BASE - PUNY_TMIN + 1) * delta / (delta + PUNY_SKEW);
}

static uint32_t
puny_threshold(uint32_t k, uint32_t bias)
{
	if (k <= bias)
		return PUNY_TMIN;
	if (k >= bias + PUNY_TMAX)
		return PUNY_TMAX;
	return k - bias;
}

/* Digit value of a lower-case punycode character, or PUNY_BASE if it is none. */
static uint32_t
puny_digit(char c)
{
	if (c >= 'a' && c <= 'z')
		return (uint32_t)(c - 'a');
	if (c >= '0' && c <= '9')
		return (uint32_t)(c - '0') + 26;
	return PUNY_BASE;
}

static char
puny_char(uint32_t d)
{
	return d < 26 ? (char)('a' + d) : (char)('0' + d - 26);
}

/*
 * RFC 3492 6.2, with the overflow checks of its sample code.  Decodes len bytes at
 * in into at most PUNY_MAXCP code points at cp.  Returns the count, or -1.
 */
static int
puny_decode(const char *in, size_t len, uint32_t *cp)
{
	uint32_t n = PUNY_N, i = 0, bias = PUNY_BIAS, out = 0;
	uint32_t oldi, w, k, digit, t;
	size_t b = 0, j, pos;

	for (j = 0; j < len; j++)
		if (in[j] == '-')
			b = j;
	for (j = 0; j < b; j++) {
		if ((unsigned char)in[j] >= 0x80 || out >= PUNY_MAXCP)
			return -1;
		cp[out++] = (unsigned char)in[j];
	}
	for (pos = b > 0 ? b + 1 : 0; pos < len; out++) {
		oldi = i;
		w = 1;
		for (k = PUNY_BASE;; k += PUNY_BASE) {
			if (pos >= len)
				return -1;
			if ((digit = puny_digit(in[pos++])) >= PUNY_BASE)
				return -1;
			if (digit > (UINT32_MAX - i) / w)
				return -1;
			i += digit * w;
			t = puny_threshold(k, bias);
			if (digit < t)
				break;
			if (w > UINT32_MAX / (PUNY_BASE - t))
				return -1;
			w *= PUNY_BASE - t;
		}
		bias = puny_adapt(i - oldi, out + 1, oldi == 0);
		if (i / (out + 1) > UINT32_MAX - n)
			return -1;
		n += i / (out + 1);
		i %= out + 1;
		/*
		 * Beyond RFC 3492: no surrogates, nothing past U+10FFFF, and none of
		 * the code points IDNA disallows outright whatever the script: C1
		 * controls and U+00A0, noncharacters.
		 */
		if (n <= 0xa0 || n > 0x10ffff || (n >= 0xd800 && n <= 0xdfff) ||
		    (n >= 0xfdd0 && n <= 0xfdef) || (n & 0xfffe) == 0xfffe)
			return -1;
		if (out >= PUNY_MAXCP)
			return -1;
		memmove(cp + i + 1, cp + i, (out - i) * sizeof(*cp));
		cp[i++] = n;
	}
	return (int)out;
}

/*
 * RFC 3492 6.3: encodes ncp code points into out[outlen].  Returns the length, or -1
 * on overflow or when out is too small.
 */
static int
puny_encode(const uint32_t *cp, size_t ncp, char *out, size_t outlen)
{
	uint32_t n = PUNY_N, delta = 0, bias = PUNY_BIAS, h, b, m, q, k, t;
	size_t j, o = 0;

	for (j = 0; j < ncp; j++) {
		if (cp[j] < 0x80) {
			if (o >= outlen)
				return -1;
			out[o++] = (char)cp[j];
		}
	}
	h = b = (uint32_t)o;
	if (b > 0) {
		if (o >= outlen)
			return -1;
		out[o++] = '-';
	}
	while (h < ncp) {
		m = UINT32_MAX;
		for (j = 0; j < ncp; j++)
			if (cp[j] >= n && cp[j] < m)
				m = cp[j];
		if (m - n > (UINT32_MAX - delta) / (h + 1))
			return -1;
		delta += (m - n) * (h + 1);
		n = m;
		for (j = 0; j < ncp; j++) {
			if (cp[j] < n && ++delta == 0)
				return -1;
			if (cp[j] != n)
				continue;
			for (q = delta, k = PUNY_BASE;; k += PUNY_BASE) {
				t = puny_threshold(k, bias);
				if (q < t)
					break;
				if (o >= outlen)
					return -1;
				out[o++] = puny_char(t + (q - t) % (PUNY_BASE - t));
				q = (q - t) / (PUNY_BASE - t);
			}
			if (o >= outlen)
				return -1;
			out[o++] = puny_char(q);
			bias = puny_adapt(delta, h + 1, h == b);
			delta = 0;
			h++;
		}
		delta++;
		n++;
	}
	return (int)o;
}

/* Checks the part of an "xn--" label after the prefix (lower case, LDH). */
static int
hostname_alabel_is_valid(const char *s, size_t len)
{
	uint32_t cp[PUNY_MAXCP];
	char re[HOSTNAME_LABEL_MAX + 1];
	int ncp, nre, i, wide = 0;

	if ((ncp = puny_decode(s, len, cp)) <= 0)
		return 0;
	for (i = 0; i < ncp; i++)
		if (cp[i] >= 0x80)
			wide = 1;
	if (!wide)
		return 0;
	if ((nre = puny_encode(cp, (size_t)ncp, re, sizeof(re))) == -1)
		return 0;
	return (size_t)nre == len && memcmp(re, s, len) == 0;
}

/*
 * 1 if the label could be read as a number by inet_aton() or by the WHATWG URL
 * parser's IPv4 step (which looks at the last label only): all decimal digits, or
 * "0x" followed by hex digits.  Octal ("0177") is all digits, so it is covered.
 */
static int
hostname_label_is_numeric(const char *s, size_t len)
{
	size_t i = 0;

	if (len >= 2 && s[0] == '0' && s[1] == 'x') {
		for (i = 2; i < len; i++)
			if (!((s[i] >= '0' && s[i] <= '9') ||
			    (s[i] >= 'a' && s[i] <= 'f')))
				return 0;
		return 1;
	}
	for (i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return len > 0;
}

/* Checks one lower-cased label of len bytes (1..63, no dot inside). */
static int
hostname_label_check(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (s[i] == '*')
			return HOSTNAME_WILDCARD;
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '-'))
			return HOSTNAME_BAD_CHAR;
	}
	if (s[0] == '-' || s[len - 1] == '-')
		return HOSTNAME_HYPHEN;
	if (len >= 4 && s[2] == '-' && s[3] == '-') {
		if (s[0] != 'x' || s[1] != 'n')
			return HOSTNAME_BAD_ALABEL;
		if (!hostname_alabel_is_valid(s + 4, len - 4))
			return HOSTNAME_BAD_ALABEL;
	}
	return HOSTNAME_OK;
}

int
hostname_normalize(const char *in, size_t len, char *out)
{
	char buf[HOSTNAME_MAX + 1];
	size_t i, start, last;
	unsigned char c;
	int rc = HOSTNAME_OK;

	/*
	 * in is only read and out only written at the end, so in == out (normalising
	 * in place) is allowed.  Bytes first: a NUL or a non-ASCII byte says more
	 * than any later rule.
	 */
	for (i = 0; i < len; i++) {
		c = (unsigned char)in[i];
		if (c < 0x20 || c == 0x7f) {
			rc = HOSTNAME_CONTROL;
			goto out;
		}
		if (c >= 0x80) {
			rc = HOSTNAME_NON_ASCII;
			goto out;
		}
	}
	if (len > 0 && in[len - 1] == '.')
		len--;
	if (len == 0) {
		rc = HOSTNAME_EMPTY;
		goto out;
	}
	if (in[len - 1] == '.' || in[0] == '.') {
		rc = HOSTNAME_EMPTY_LABEL;
		goto out;
	}
	if (len > HOSTNAME_MAX) {
		rc = HOSTNAME_TOO_LONG;
		goto out;
	}
	for (i = 0; i < len; i++) {
		c = (unsigned char)in[i];
		buf[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : (char)c;
	}
	buf[len] = '\0';
	for (start = last = 0, i = 0; i <= len; i++) {
		if (i < len && buf[i] != '.')
			continue;
		if (i == start)
			rc = HOSTNAME_EMPTY_LABEL;
		else if (i - start > HOSTNAME_LABEL_MAX)
			rc = HOSTNAME_TOO_LONG;
		else
			rc = hostname_label_check(buf + start, i - start);
		if (rc != HOSTNAME_OK)
			goto out;
		last = start;
		start = i + 1;
	}
	if (hostname_label_is_numeric(buf + last, len - last))
		rc = HOSTNAME_IP_LITERAL;
 out:
	if (rc == HOSTNAME_OK)
		memcpy(out, buf, len + 1);
	else
		out[0] = '\0';
	return rc;
}

static void
hostname_psl_init(void)
{
	/* The distribution's list if installed, else the one compiled into libpsl. */
	if ((hostname_psl = psl_latest(NULL)) == NULL)
		hostname_psl = psl_builtin();
}

void
hostname_preload(void)
{
	(void)pthread_once(&hostname_psl_once, hostname_psl_init);
}

int
hostname_registrable(const char *name, char *out)
{
	const char *r;

	out[0] = '\0';
	if (pthread_once(&hostname_psl_once, hostname_psl_init) != 0 ||
	    hostname_psl == NULL)
		return -1;
	if ((r = psl_registrable_domain(hostname_psl, name)) == NULL ||
	    strlen(r) > HOSTNAME_MAX)
		return -1;
	memcpy(out, r, strlen(r) + 1);
	return 0;
}

int
hostname_pattern_normalize(const char *in, size_t len, char *out)
{
	char suffix[HOSTNAME_MAX + 1];
	size_t slen = 0;
	int rc;

	if (len == 0 || in[0] != '*')
		return hostname_normalize(in, len, out);
	/* Bare "*" and "*." would match every name. */
	if (len == 1 || (len == 2 && in[1] == '.')) {
		rc = HOSTNAME_PUBLIC_SUFFIX;
		goto out;
	}
	if (in[1] != '.') {
		rc = HOSTNAME_WILDCARD;
		goto out;
	}
	if ((rc = hostname_normalize(in + 2, len - 2, suffix)) != HOSTNAME_OK)
		goto out;
	slen = strlen(suffix);
	if (slen + 2 > HOSTNAME_MAX)
		rc = HOSTNAME_TOO_LONG;
	/* "*.internal": a single label is a TLD of its own, public or not. */
	else if (strchr(suffix, '.') == NULL)
		rc = HOSTNAME_PUBLIC_SUFFIX;
	else if (pthread_once(&hostname_psl_once, hostname_psl_init) != 0 ||
	    hostname_psl == NULL)
		rc = HOSTNAME_PUBLIC_SUFFIX;	/* no list: fail closed */
	else if (psl_is_public_suffix2(hostname_psl, suffix, PSL_TYPE_ANY))
		rc = HOSTNAME_PUBLIC_SUFFIX;
 out:
	if (rc == HOSTNAME_OK) {
		out[0] = '*';
		out[1] = '.';
		memcpy(out + 2, suffix, slen + 1);
	} else
		out[0] = '\0';
	return rc;
}

int
hostname_match(const char *pattern, const char *name)
{
	size_t plen, nlen;

	/* Defensive about input that is not normalised: "", "*", "*." match nothing. */
	if (pattern[0] != '*')
		return pattern[0] != '\0' && strcmp(pattern, name) == 0;
	if (pattern[1] != '.' || pattern[2] == '\0')
		return 0;
	/* Compare ".suffix" so that only a whole label boundary can match. */
	pattern++;
	plen = strlen(pattern);
	nlen = strlen(name);
	return nlen > plen && strcmp(name + nlen - plen, pattern) == 0;
}

const char *
hostname_strerror(int err)
{
	switch (err) {
	case HOSTNAME_OK:
		return "ok";
	case HOSTNAME_EMPTY:
		return "empty name";
	case HOSTNAME_TOO_LONG:
		return "name over 253 bytes or label over 63";
	case HOSTNAME_EMPTY_LABEL:
		return "empty label";
	case HOSTNAME_BAD_CHAR:
		return "character not allowed in a host name";
	case HOSTNAME_NON_ASCII:
		return "non-ASCII byte (use the xn-- A-label form)";
	case HOSTNAME_CONTROL:
		return "NUL or control character";
	case HOSTNAME_HYPHEN:
		return "label starts or ends with a hyphen";
	case HOSTNAME_BAD_ALABEL:
		return "invalid A-label (bad punycode or reserved \"--\")";
	case HOSTNAME_IP_LITERAL:
		return "numeric last label: looks like an IP address";
	case HOSTNAME_WILDCARD:
		return "wildcard not allowed here";
	case HOSTNAME_PUBLIC_SUFFIX:
		return "wildcard over a public suffix";
	}
	return "unknown host name error";
}
