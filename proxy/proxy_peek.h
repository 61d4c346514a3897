/*
 * proxy/proxy_peek.h: pure parsers for the first bytes of a redirected connection:
 * the classifier, the TLS ClientHello (SNI, ECH, ALPN, versions) and the HTTP/1.x
 * request head (Host).  Functions over a buffer: no I/O, no allocation, no state
 * kept between calls (the caller re-parses the whole buffer as more bytes arrive;
 * the caps below keep that cheap).  Fuzzed by tests/fuzz/fuzz_tls_sni.c and
 * tests/fuzz/fuzz_http_host.c.
 */
#ifndef AIRLOCK_PROXY_PEEK_H
#define AIRLOCK_PROXY_PEEK_H

#include <stddef.h>
#include <stdint.h>

#include "hostname.h"

/*
 * A ClientHello handshake message longer than this is refused: real ones are a few
 * hundred bytes (a post-quantum key share makes ~1.8 KiB).  The records carrying it
 * may add their headers: PEEK_TLS_MAX bounds the bytes the caller ever buffers.
 */
#define PEEK_TLS_HS_MAX		16384
#define PEEK_TLS_MAX		(PEEK_TLS_HS_MAX + 4 + 5 * 64)
/* The whole HTTP request head (request line and header fields) must fit in this. */
#define PEEK_HTTP_MAX		8192

#define PEEK_SNI_MAX		255	/* raw SNI bytes kept; HOSTNAME_MAX + a dot */
#define PEEK_ALPN_MAX		8	/* protocols kept */
#define PEEK_ALPN_LEN		32	/* longest protocol name kept, with its NUL */
#define PEEK_METHOD_MAX		16

enum peek_status {
	PEEK_OK = 0,
	PEEK_NEED_MORE,		/* a prefix of something valid: read more */
	PEEK_NOT_MINE,		/* not TLS (resp. not HTTP) at all */
	PEEK_BAD,		/* malformed, duplicated, or over the cap: refuse */
	PEEK_NO_SNI,		/* a well-formed ClientHello without server_name */
};

enum peek_proto {
	PEEK_PROTO_TLS = 0,
	PEEK_PROTO_HTTP,
	PEEK_PROTO_TCP,
	PEEK_PROTO_UNKNOWN,	/* too few bytes to tell yet */
};

struct peek_tls {
	char		 pt_sni[PEEK_SNI_MAX + 1];	/* raw, NUL-terminated */
	size_t		 pt_sni_len;			/* may contain a NUL */
	int		 pt_ech;		/* encrypted_client_hello (0xfe0d) */
	int		 pt_esni;		/* draft ESNI (0xffce) */
	uint16_t	 pt_legacy_version;
	uint16_t	 pt_max_version;	/* highest supported_versions entry,
						   else the legacy version */
	char		 pt_alpn[PEEK_ALPN_MAX][PEEK_ALPN_LEN];
	size_t		 pt_nalpn;		/* entries kept in pt_alpn */
	int		 pt_alpn_truncated;	/* more or longer ones were offered */
	size_t		 pt_consumed;		/* bytes of records up to the hello's end */
	const char	*pt_why;		/* static reason for PEEK_BAD */
};

struct peek_http {
	char		 ph_method[PEEK_METHOD_MAX + 1];
	size_t		 ph_target_off;		/* request-target within the buffer */
	size_t		 ph_target_len;
	int		 ph_minor;		/* HTTP/1.<minor>: 0 or 1 */
	char		 ph_host[HOSTNAME_MAX + 2];	/* Host without the port, raw */
	size_t		 ph_host_len;
	uint16_t	 ph_port;		/* 0: the Host header gave none */
	size_t		 ph_head_len;		/* up to and including the empty line */
	const char	*ph_why;		/* static reason for PEEK_BAD */
};

/*
 * What the first len bytes look like: 0x16 0x03 is TLS; an upper-case token of 1..16
 * letters followed by a space is HTTP; anything else raw TCP.  PEEK_PROTO_UNKNOWN
 * while a prefix could still become either (len 0 included).
 */
enum peek_proto peek_classify(const uint8_t *buf, size_t len);

/*
 * Parses the TLS records in buf[len] as far as the end of the ClientHello (which may
 * be split across records).  Fills *out on PEEK_OK and PEEK_NO_SNI; pt_why on
 * PEEK_BAD.  Bytes after the ClientHello's last record are left alone.
 */
enum peek_status peek_tls_client_hello(const uint8_t *buf, size_t len,
	    struct peek_tls *out);

/*
 * Parses an HTTP/1.0 or 1.1 request head in buf[len]: request line, header fields,
 * the empty line.  Exactly one Host; an absolute-form target's authority must equal
 * it.  Refuses bare LF, obs-fold, NUL and control bytes, whitespace before a colon,
 * CONNECT, and a head over PEEK_HTTP_MAX.  Fills *out on PEEK_OK.
 */
enum peek_status peek_http_request(const uint8_t *buf, size_t len,
	    struct peek_http *out);

const char *peek_status_str(enum peek_status s);

#endif
