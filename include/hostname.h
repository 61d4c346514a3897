/*
 * include/hostname.h: the one host-name normaliser used everywhere (policy load, DNS
 * questions, SNI, Host headers, CLI), and wildcard matching on label boundaries.
 * Pure code.  Implemented in lib/hostname.c (libpsl for the public-suffix check).
 */
#ifndef AIRLOCK_HOSTNAME_H
#define AIRLOCK_HOSTNAME_H

#include <stddef.h>

#define HOSTNAME_MAX	253		/* without the trailing dot */
#define HOSTNAME_LABEL_MAX 63

enum hostname_err {
	HOSTNAME_OK = 0,
	HOSTNAME_EMPTY = -1,		/* "" or "." */
	HOSTNAME_TOO_LONG = -2,		/* name over 253 or a label over 63 */
	HOSTNAME_EMPTY_LABEL = -3,	/* "a..b", ".a", "a.." */
	HOSTNAME_BAD_CHAR = -4,		/* not [a-z0-9-] (after lower-casing) */
	HOSTNAME_NON_ASCII = -5,	/* a byte >= 0x80 (U-labels are refused) */
	HOSTNAME_CONTROL = -6,		/* NUL or another control byte */
	HOSTNAME_HYPHEN = -7,		/* a label starting or ending with '-' */
	HOSTNAME_BAD_ALABEL = -8,	/* "xn--" label that is not valid punycode,
					   or "??--" reserved hyphens */
	HOSTNAME_IP_LITERAL = -9,	/* all-numeric last label: looks like an IP */
	HOSTNAME_WILDCARD = -10,	/* '*' where a wildcard is not allowed */
	HOSTNAME_PUBLIC_SUFFIX = -11,	/* "*.com", "*.co.uk", bare "*" */
};

/*
 * Normalises the len bytes at in (not NUL-terminated necessarily; an embedded NUL is
 * an error): ASCII lower-case, one trailing dot removed, strict LDH labels, A-labels
 * only.  Writes the result, NUL-terminated, to out[HOSTNAME_MAX + 1].
 * Returns HOSTNAME_OK or a negative enum hostname_err (out is then "").
 * in and out may be the same buffer (normalising in place).  A name whose last label
 * is numeric (all digits, or "0x" and hex digits) is HOSTNAME_IP_LITERAL, so nothing
 * inet_aton() or a browser would read as an IPv4 address is ever a name.  An "xn--"
 * label must be canonical RFC 3492 punycode decoding to non-ASCII text (no controls,
 * surrogates or noncharacters); the IDNA2008 tables are not checked.
 */
int	hostname_normalize(const char *in, size_t len, char *out);

/*
 * A policy host pattern: an exact name, or "*.suffix" (any name strictly below
 * suffix).  Normalises into out; refuses a bare "*", a '*' anywhere but a whole first
 * label, and a wildcard whose suffix is a public suffix (libpsl, private entries
 * such as github.io included) or a single label ("*.internal").  Thread-safe.
 */
int	hostname_pattern_normalize(const char *in, size_t len, char *out);
/*
 * The registrable domain of a normalised name (the public suffix and one label more,
 * libpsl: "a.b.example.co.uk" -> "example.co.uk") into out[HOSTNAME_MAX + 1].  -1
 * (out "") when the name is a public suffix itself or no list could be loaded.
 */
int	hostname_registrable(const char *name, char *out);
/*
 * Loads the public suffix list now.  It is otherwise read from its file at the
 * first wildcard pattern: a process that may open no file later (airlockd's
 * confined worker) calls this first.  Thread-safe, once.
 */
void	hostname_preload(void);

/*
 * 1 if the normalised name matches the normalised pattern: equal, or for "*.s", name
 * ends in ".s" with at least one whole label before it.  "s" itself and "xs" never
 * match "*.s".
 */
int	hostname_match(const char *pattern, const char *name);

/* Short human text for an enum hostname_err ("empty label", ...). */
const char *hostname_strerror(int err);

#endif
