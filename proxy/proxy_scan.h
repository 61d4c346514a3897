/*
 * proxy/proxy_scan.h: finding placeholders and secret values in byte streams, for
 * injection (requests) and redaction (responses).  Pure code, no I/O.  Fuzzed by
 * tests/fuzz/fuzz_placeholder.c.
 *
 * A struct scan_set holds entries (needle -> replacement), each with an int id the
 * caller chooses (e.g. an index into its list of secrets):
 *	- a placeholder set: needle = placeholder, replacement = the secret value;
 *	  used to detect placeholders (scan_find, struct scan_stream) and to substitute
 *	  them in header values (scan_subst_value);
 *	- a secret set: needle = the secret value, replacement = its placeholder; used
 *	  to redact responses (struct scan_redact).
 * Needles and replacements are copied; the copies are wiped (OPENSSL_cleanse) by
 * scan_set_free().  A built set is immutable and may be shared between threads.
 *
 * Encodings looked for, for each needle N (see proxy_scan.c for the details, and
 * README.md, "What the scanner covers", for the table):
 *	raw	N itself;
 *	base64	standard and URL-safe alphabets, N starting at each of the 3 byte
 *		alignments of a base64 group, padded or not.  For alignment k the
 *		characters that depend on N's bits only (not on the bytes around
 *		it) are a fixed string, the "middle"; that is the pattern.  A needle
 *		must be long enough for the middle to be distinctive
 *		(SCAN_NEEDLE_MIN);
 *	hex	N's bytes as two hex digits each, all lower or all upper case;
 *	percent	literal patterns for the usual escaping styles (RFC 3986
 *		unreserved kept; also keeping '/', keeping JavaScript's !'()*,
 *		everything escaped; a needle with a space also as a form field,
 *		space as '+'), upper- and lower-case hex; and a percent-decoded
 *		view of every stream (any subset of bytes escaped, either case);
 *	JSON	a JSON-unescaped view of every stream: \" \\ \/ \b \f \n \r \t and
 *		\uXXXX (either case; decoded to UTF-8) for any subset of the bytes.
 * Every pattern (raw, base64, hex, percent literals) is also looked for in both
 * decoded views, so e.g. base64 whose '/' a JSON encoder wrote as \/ is found.
 * Not covered (documented limits): a second layer of encoding beyond those
 * (percent inside JSON, hex of base64, ...), mixed-case hex, base64 broken by
 * line breaks, \u surrogate pairs (characters beyond U+FFFF), compression,
 * ciphers, reversal, a needle split across separate messages, and partial
 * echoes (an origin returning only part of a secret, e.g. through a Range
 * request).  Where one needle contains another, the match that ends first wins.
 * Secret values shorter than SCAN_NEEDLE_MIN cannot be added (a short value would
 * be redacted all over ordinary text and its base64 middles would be too short to
 * mean anything): the caller must refuse to inject such a secret rather than
 * inject it unguarded.
 *
 * Typical use: header values - scan_subst_value() where the rule allows it, then
 * scan_find() over the result (what is left in another encoding is exfiltration);
 * request bodies and URLs - struct scan_stream / scan_find(); response header
 * values - one scan_redact_feed() + scan_redact_finish() per value; response bodies -
 * one redactor per body, scan_redact_finish() at the body's end.
 */
#ifndef AIRLOCK_PROXY_SCAN_H
#define AIRLOCK_PROXY_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "proxy_http.h"

#define SCAN_NEEDLE_MIN		8	/* shorter needles are refused (EINVAL) */
#define SCAN_NEEDLE_MAX		(64 * 1024)	/* VAULT_VALUE_MAX */
#define SCAN_ENTRIES_MAX	4096

/* Which form of a needle matched. */
enum scan_enc {
	SCAN_ENC_RAW = 0,
	SCAN_ENC_PCT,		/* found in the percent-decoded stream, or a
				   literal percent-encoded form (redaction) */
	SCAN_ENC_B64,		/* standard alphabet */
	SCAN_ENC_B64URL,	/* URL-safe alphabet */
	SCAN_ENC_BASIC,		/* inside a decoded Authorization: Basic value */
	SCAN_ENC_HEX,		/* hex digits, lower or upper case */
	SCAN_ENC_JSON,		/* found in the JSON-unescaped view */
};

struct scan_match {
	int		 sm_id;		/* the entry's id */
	enum scan_enc	 sm_enc;
	uint64_t	 sm_end;	/* offset just past the match in the input
					   stream (in the decoded view when found
					   in one: PCT, JSON) */
};

struct scan_set;

/* An empty set: returned on success, NULL with errno on failure; release with scan_set_free(). */
struct scan_set *scan_set_new(void);

/*
 * Adds an entry.  needle: SCAN_NEEDLE_MIN..SCAN_NEEDLE_MAX bytes, replacement up to
 * SCAN_NEEDLE_MAX (may be empty only for a set never used to substitute or redact).
 * Returns 0, or -1 with errno EINVAL (sizes, set already built, too many entries)
 * or ENOMEM.  Two entries with the same needle are allowed (the first one added
 * wins a match).
 */
int	scan_set_add(struct scan_set *set, int id, const uint8_t *needle, size_t n,
	    const uint8_t *repl, size_t rn);

/* Builds the matcher; no scan_set_add() afterwards.  0, or -1 with errno. */
int	scan_set_build(struct scan_set *set);

/* Wipes every needle and replacement and frees the set.  NULL-safe. */
void	scan_set_free(struct scan_set *set);

/*
 * A decoder of one view (percent or JSON escapes) of a stream: the raw bytes of an
 * escape not yet complete.  Internal to proxy_scan.c; here because it is embedded.
 */
struct scan_vdec {
	uint8_t		 vd_n;		/* bytes in vd_buf */
	uint8_t		 vd_buf[6];	/* "%X", or "\", "\u", "\uX" .. "\uXXX" */
};

/*
 * Streaming detection (request bodies, or any sequence of buffers): state carried
 * between calls is three automaton positions and, per decoded view, at most 5
 * bytes of a partial escape, so a placeholder split across reads, chunks or TLS
 * records is found, even inside an escape.  The set must outlive the stream.
 * Plain struct: embed it, no free needed.
 */
struct scan_stream {
	const struct scan_set *ss_set;
	uint32_t	 ss_raw;	/* automaton state over the raw bytes */
	uint32_t	 ss_dec;	/* ... over the percent-decoded bytes */
	uint32_t	 ss_json;	/* ... over the JSON-unescaped bytes */
	struct scan_vdec ss_pdec;	/* partial %XX */
	struct scan_vdec ss_jdec;	/* partial JSON escape */
	uint64_t	 ss_off;	/* raw bytes fed so far */
	uint64_t	 ss_dec_off;	/* percent-decoded bytes so far */
	uint64_t	 ss_json_off;	/* JSON-unescaped bytes so far */
};

void	scan_stream_init(struct scan_stream *s, const struct scan_set *set);

/*
 * Feeds buf[len].  Returns 1 and fills *m at the first match (the rest of buf is not
 * scanned; the stream may be fed again to find more), 0 if none.
 */
int	scan_stream_feed(struct scan_stream *s, const uint8_t *buf, size_t len,
	    struct scan_match *m);

/*
 * One-shot detection in one value (a header value, a URL): scan_stream over buf,
 * and additionally, for a value "Basic <base64>" (case-insensitive scheme), over its
 * decoded credentials (SCAN_ENC_BASIC).  1 with *m if found, 0 if not.  When the
 * credentials cannot be decoded for want of memory, 1 with sm_id -1 (fail closed).
 */
int	scan_find(const struct scan_set *set, const uint8_t *buf, size_t len,
	    struct scan_match *m);

/*
 * Substitution in a header value (set: placeholder -> secret).  Appends to out the
 * value with every raw occurrence of a placeholder replaced by its secret; a value
 * "Basic <base64>" is decoded, substituted inside, and re-encoded (standard
 * alphabet, padded).  Returns the number of substitutions (0: out has the value
 * unchanged), or -1 with errno (ENOMEM, EMSGSIZE).  ids[nids] receives the ids of
 * the entries substituted, each once, as far as it goes (ids may be NULL).  Errors
 * never carry any part of a value.
 */
int	scan_subst_value(const struct scan_set *set, const uint8_t *value,
	    size_t len, struct http_buf *out, int *ids, size_t nids);

/*
 * Streaming redaction (set: secret -> placeholder).  Output is appended to a
 * struct http_buf the caller drains; bytes that could still be the start of a secret
 * (in any form) are held back until they cannot, so a secret split across reads or
 * chunks is replaced and never emitted in part.  Lookahead: at most the raw bytes
 * of (longest pattern + 1) decoded bytes are held, i.e. 6 * (L + 1) + 5 bytes for
 * the longest pattern L (3 * the longest secret: its all-escaped percent form),
 * when every byte is written \u00XX; (L + 1) bytes for text without escapes.  Each
 * of the two decoded views also keeps a ring of L + 2 raw offsets (4 bytes each,
 * rounded up to a power of two), allocated at the first escape: a redactor costs
 * at most about 16 * L + 6 * L bytes.  The holding buffer is wiped on free; the
 * bytes already emitted stay in it until new input needs their room.
 * Replacement:
 *	raw	-> the placeholder;
 *	hex	-> the placeholder in hex, same case;
 *	percent	-> a literal style: the placeholder, percent-encoded in the same
 *		   style; found in the percent-decoded view (mixed escaping): the
 *		   bytes from the first to the last of the match become the
 *		   placeholder, RFC 3986 unreserved kept, the rest %XX;
 *	JSON	-> (found in the JSON-unescaped view) the bytes from the first to the
 *		   last of the match become the placeholder (or, for base64 or hex,
 *		   the replacement below), '"', '\\' and control bytes escaped;
 *	base64	-> the same number of characters: the secret's bits are overwritten
 *		   with those of a filler of the secret's length (the placeholder
 *		   repeated), including the bits the secret shares with the character
 *		   before and after the match.  The base64 text keeps its length and
 *		   alignment, decodes cleanly, and holds no bit of the secret
 *		   (except, in a decoded view, the 2 or 4 bits in a neighbouring
 *		   character that is itself escaped, e.g. a \/ after the middle).
 * The output length differs from the input's, so the caller re-frames the body
 * (chunked towards a 1.1 client, or until-close for 1.0) and drops Content-Length.
 */
struct scan_redact;

/*
 * A redactor over set (which must outlive it).  fn, if not NULL, is called for every
 * match (for the exfil audit record: the id says which secret, never the value).
 * Returned on success, NULL with errno; release with scan_redact_free().
 */
struct scan_redact *scan_redact_new(const struct scan_set *set,
	    void (*fn)(void *arg, const struct scan_match *m), void *arg);

/*
 * Feeds in[len]; appends what is safe to out.  Returns the number of matches
 * replaced in this call, or -1 with errno (ENOMEM, EMSGSIZE: out's hb_max); after
 * an error the redactor must not be used further (free it, fail the response).
 */
int	scan_redact_feed(struct scan_redact *r, const uint8_t *in, size_t len,
	    struct http_buf *out);

/*
 * End of the stream: appends the held bytes (no match can complete any more).
 * Returns 0 or -1 with errno.  The redactor is then reset for another stream.
 */
int	scan_redact_finish(struct scan_redact *r, struct http_buf *out);

/* Total matches replaced since scan_redact_new(). */
uint64_t scan_redact_count(const struct scan_redact *r);

/* Wipes the held bytes and frees r.  NULL-safe. */
void	scan_redact_free(struct scan_redact *r);

/*
 * Base64 helpers (RFC 4648), used for Basic credentials.  b64_encode appends the
 * padded encoding of in[n] to out (url: URL-safe alphabet); 0 or -1 with errno.
 * b64_decode decodes a padded standard-alphabet string into out (which needs room
 * for n / 4 * 3 bytes); -1 on any invalid character, bad padding or length.
 */
int	scan_b64_encode(const uint8_t *in, size_t n, int url, struct http_buf *out);
int	scan_b64_decode(const uint8_t *in, size_t n, uint8_t *out, size_t *outlen);

#endif
