/*
 * proxy/proxy_peek.c: see proxy_peek.h.
 *
 * Every length read from the wire is checked against what is left of its enclosing
 * structure before it is used (a cursor that can only shrink), so a lying length is
 * a refusal, never an over-read.  No recursion; work is linear in the input, which
 * the caller caps (PEEK_TLS_MAX, PEEK_HTTP_MAX).
 */
#include <string.h>

#include "proxy_peek.h"

#define TLS_REC_HANDSHAKE	0x16
#define TLS_HS_CLIENT_HELLO	0x01
#define TLS_REC_MAX		16384	/* RFC 8446 5.1: a plaintext fragment */
#define TLS_EXT_SERVER_NAME	0x0000
#define TLS_EXT_ALPN		0x0010
#define TLS_EXT_SUPPORTED_VERS	0x002b
#define TLS_EXT_ECH		0xfe0d
#define TLS_EXT_ESNI		0xffce
#define TLS_SNI_HOST_NAME	0x00

/* A read-only window that only ever shrinks from the front. */
struct peek_cur {
	const uint8_t	*pc_p;
	size_t		 pc_n;
};

static int
peek_cur_u8(struct peek_cur *c, unsigned int *v)
{
	if (c->pc_n < 1)
		return -1;
	*v = c->pc_p[0];
	c->pc_p++;
	c->pc_n--;
	return 0;
}

static int
peek_cur_u16(struct peek_cur *c, unsigned int *v)
{
	if (c->pc_n < 2)
		return -1;
	*v = (unsigned int)c->pc_p[0] << 8 | c->pc_p[1];
	c->pc_p += 2;
	c->pc_n -= 2;
	return 0;
}

/* Splits the next n bytes off c into sub. */
static int
peek_cur_sub(struct peek_cur *c, size_t n, struct peek_cur *sub)
{
	if (c->pc_n < n)
		return -1;
	sub->pc_p = c->pc_p;
	sub->pc_n = n;
	c->pc_p += n;
	c->pc_n -= n;
	return 0;
}

/* A vector whose length is given by a 1- or 2-byte prefix, which must fit in c. */
static int
peek_cur_vec(struct peek_cur *c, int lenbytes, struct peek_cur *sub)
{
	unsigned int n;

	if ((lenbytes == 1 ? peek_cur_u8(c, &n) : peek_cur_u16(c, &n)) == -1)
		return -1;
	return peek_cur_sub(c, n, sub);
}

enum peek_proto
peek_classify(const uint8_t *buf, size_t len)
{
	size_t i;

	if (len == 0)
		return PEEK_PROTO_UNKNOWN;
	if (buf[0] == TLS_REC_HANDSHAKE) {
		if (len == 1)
			return PEEK_PROTO_UNKNOWN;
		return buf[1] == 0x03 ? PEEK_PROTO_TLS : PEEK_PROTO_TCP;
	}
	for (i = 0; i < len && i <= PEEK_METHOD_MAX; i++) {
		if (buf[i] == ' ')
			return i > 0 ? PEEK_PROTO_HTTP : PEEK_PROTO_TCP;
		if (buf[i] < 'A' || buf[i] > 'Z')
			return PEEK_PROTO_TCP;
	}
	return i > PEEK_METHOD_MAX ? PEEK_PROTO_TCP : PEEK_PROTO_UNKNOWN;
}

static enum peek_status
peek_tls_bad(struct peek_tls *out, const char *why)
{
	out->pt_why = why;
	return PEEK_BAD;
}

static enum peek_status
peek_tls_sni(struct peek_cur *ext, struct peek_tls *out)
{
	struct peek_cur list, name;
	unsigned int type;
	int n = 0;

	if (peek_cur_vec(ext, 2, &list) == -1 || ext->pc_n != 0 || list.pc_n == 0)
		return peek_tls_bad(out, "server_name: bad length");
	while (list.pc_n > 0) {
		if (peek_cur_u8(&list, &type) == -1 ||
		    peek_cur_vec(&list, 2, &name) == -1)
			return peek_tls_bad(out, "server_name: bad entry");
		if (type != TLS_SNI_HOST_NAME)
			return peek_tls_bad(out, "server_name: not a host_name");
		if (++n > 1)
			return peek_tls_bad(out, "server_name: two host_names");
		if (name.pc_n == 0 || name.pc_n > PEEK_SNI_MAX)
			return peek_tls_bad(out, "server_name: bad host_name length");
		memcpy(out->pt_sni, name.pc_p, name.pc_n);
		out->pt_sni[name.pc_n] = '\0';
		out->pt_sni_len = name.pc_n;
	}
	return PEEK_OK;
}

static enum peek_status
peek_tls_alpn(struct peek_cur *ext, struct peek_tls *out)
{
	struct peek_cur list, proto;

	if (peek_cur_vec(ext, 2, &list) == -1 || ext->pc_n != 0 || list.pc_n == 0)
		return peek_tls_bad(out, "alpn: bad length");
	while (list.pc_n > 0) {
		if (peek_cur_vec(&list, 1, &proto) == -1 || proto.pc_n == 0)
			return peek_tls_bad(out, "alpn: bad protocol");
		if (out->pt_nalpn == PEEK_ALPN_MAX || proto.pc_n >= PEEK_ALPN_LEN) {
			out->pt_alpn_truncated = 1;
			continue;
		}
		memcpy(out->pt_alpn[out->pt_nalpn], proto.pc_p, proto.pc_n);
		out->pt_alpn[out->pt_nalpn][proto.pc_n] = '\0';
		out->pt_nalpn++;
	}
	return PEEK_OK;
}

static enum peek_status
peek_tls_versions(struct peek_cur *ext, struct peek_tls *out)
{
	struct peek_cur list;
	unsigned int v, max = 0;

	if (peek_cur_vec(ext, 1, &list) == -1 || ext->pc_n != 0 ||
	    list.pc_n == 0 || list.pc_n % 2 != 0)
		return peek_tls_bad(out, "supported_versions: bad length");
	while (peek_cur_u16(&list, &v) == 0) {
		if ((v & 0x0f0f) == 0x0a0a)	/* GREASE (RFC 8701) */
			continue;
		if (v > max)
			max = v;
	}
	if (max != 0)
		out->pt_max_version = (uint16_t)max;
	return PEEK_OK;
}

/* Parses one complete ClientHello handshake message (header included). */
static enum peek_status
peek_tls_hello(const uint8_t *hs, size_t len, struct peek_tls *out)
{
	uint8_t seen[8192];	/* one bit per extension type: no duplicates */
	struct peek_cur c, v, exts, ext;
	unsigned int ver, type;
	enum peek_status st;
	int sni = 0;

	c.pc_p = hs + 4;
	c.pc_n = len - 4;
	if (peek_cur_u16(&c, &ver) == -1 || (ver >> 8) != 0x03)
		return peek_tls_bad(out, "bad legacy_version");
	out->pt_legacy_version = (uint16_t)ver;
	out->pt_max_version = (uint16_t)ver;
	if (peek_cur_sub(&c, 32, &v) == -1)
		return peek_tls_bad(out, "short random");
	if (peek_cur_vec(&c, 1, &v) == -1 || v.pc_n > 32)
		return peek_tls_bad(out, "bad session_id");
	if (peek_cur_vec(&c, 2, &v) == -1 || v.pc_n < 2 || v.pc_n % 2 != 0)
		return peek_tls_bad(out, "bad cipher_suites");
	if (peek_cur_vec(&c, 1, &v) == -1 || v.pc_n < 1)
		return peek_tls_bad(out, "bad compression_methods");
	if (c.pc_n == 0)
		return PEEK_NO_SNI;	/* TLS 1.2 without extensions */
	if (peek_cur_vec(&c, 2, &exts) == -1 || c.pc_n != 0)
		return peek_tls_bad(out, "bad extensions length");
	memset(seen, 0, sizeof(seen));
	while (exts.pc_n > 0) {
		if (peek_cur_u16(&exts, &type) == -1 ||
		    peek_cur_vec(&exts, 2, &ext) == -1)
			return peek_tls_bad(out, "bad extension");
		if (seen[type / 8] & (1U << (type % 8)))
			return peek_tls_bad(out, "duplicate extension");
		seen[type / 8] |= 1U << (type % 8);
		st = PEEK_OK;
		switch (type) {
		case TLS_EXT_SERVER_NAME:
			st = peek_tls_sni(&ext, out);
			sni = 1;
			break;
		case TLS_EXT_ALPN:
			st = peek_tls_alpn(&ext, out);
			break;
		case TLS_EXT_SUPPORTED_VERS:
			st = peek_tls_versions(&ext, out);
			break;
		case TLS_EXT_ECH:
			out->pt_ech = 1;
			break;
		case TLS_EXT_ESNI:
			out->pt_esni = 1;
			break;
		}
		if (st != PEEK_OK)
			return st;
	}
	return sni ? PEEK_OK : PEEK_NO_SNI;
}

enum peek_status
peek_tls_client_hello(const uint8_t *buf, size_t len, struct peek_tls *out)
{
	uint8_t hs[PEEK_TLS_HS_MAX + 4];
	size_t off = 0, hlen = 0, need = 0, rlen, take, i, n;
	const uint8_t *frag;

	memset(out, 0, sizeof(*out));
	for (;;) {
		/* A record header, possibly partial. */
		if (len - off < 5) {
			if (len - off >= 1 && buf[off] != TLS_REC_HANDSHAKE)
				goto notmine;
			if (len - off >= 2 && buf[off + 1] != 0x03)
				goto notmine;
			return PEEK_NEED_MORE;
		}
		if (buf[off] != TLS_REC_HANDSHAKE || buf[off + 1] != 0x03 ||
		    buf[off + 2] > 0x04)
			goto notmine;
		rlen = (size_t)buf[off + 3] << 8 | buf[off + 4];
		if (rlen == 0 || rlen > TLS_REC_MAX)
			return peek_tls_bad(out, "bad record length");
		if (off + 5 + rlen > PEEK_TLS_MAX)
			return peek_tls_bad(out, "ClientHello too large");
		frag = buf + off + 5;
		take = len - off - 5 < rlen ? len - off - 5 : rlen;
		for (i = 0; i < take && (need == 0 || hlen < need); ) {
			if (need == 0) {
				hs[hlen++] = frag[i++];
				if (hlen == 1 && hs[0] != TLS_HS_CLIENT_HELLO)
					return peek_tls_bad(out,
					    "not a ClientHello");
				if (hlen == 4) {
					need = (size_t)hs[1] << 16 |
					    (size_t)hs[2] << 8 | hs[3];
					if (need > PEEK_TLS_HS_MAX)
						return peek_tls_bad(out,
						    "ClientHello too large");
					need += 4;
				}
				continue;
			}
			n = take - i < need - hlen ? take - i : need - hlen;
			memcpy(hs + hlen, frag + i, n);
			hlen += n;
			i += n;
		}
		if (need != 0 && hlen == need) {
			/*
			 * Nothing may follow the ClientHello inside its record: no
			 * client sends a second handshake message before the
			 * server's flight.
			 */
			if (i != rlen)
				return peek_tls_bad(out,
				    "data after ClientHello in its record");
			out->pt_consumed = off + 5 + rlen;
			return peek_tls_hello(hs, hlen, out);
		}
		if (take < rlen)
			return PEEK_NEED_MORE;
		off += 5 + rlen;
	}
 notmine:
	/* Once a ClientHello has begun, anything else is malformed, not "not TLS". */
	if (off == 0)
		return PEEK_NOT_MINE;
	return peek_tls_bad(out, "unexpected record before ClientHello end");
}

/* RFC 9110 tchar */
static int
peek_is_tchar(uint8_t ch)
{
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9'))
		return 1;
	return ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static int
peek_ieq(const uint8_t *a, size_t alen, const char *b)
{
	size_t i;

	if (alen != strlen(b))
		return 0;
	for (i = 0; i < alen; i++) {
		uint8_t x = a[i], y = (uint8_t)b[i];

		if (x >= 'A' && x <= 'Z')
			x += 'a' - 'A';
		if (x != y)
			return 0;
	}
	return 1;
}

static int
peek_ieq2(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	size_t i;

	if (alen != blen)
		return 0;
	for (i = 0; i < alen; i++) {
		uint8_t x = a[i], y = b[i];

		if (x >= 'A' && x <= 'Z')
			x += 'a' - 'A';
		if (y >= 'A' && y <= 'Z')
			y += 'a' - 'A';
		if (x != y)
			return 0;
	}
	return 1;
}

static enum peek_status
peek_http_bad(struct peek_http *out, const char *why)
{
	out->ph_why = why;
	return PEEK_BAD;
}

/*
 * Finds the end of the line starting at off: *eol is the index of its CR.  -1 with
 * *why for a bare CR or LF, 0 when the line is not complete yet, 1 when it is.
 */
static int
peek_http_line(const uint8_t *buf, size_t len, size_t off, size_t *eol,
    const char **why)
{
	size_t i;

	for (i = off; i < len; i++) {
		if (buf[i] == '\n') {
			*why = "bare LF";
			return -1;
		}
		if (buf[i] != '\r')
			continue;
		if (i + 1 == len)
			return 0;
		if (buf[i + 1] != '\n') {
			*why = "bare CR";
			return -1;
		}
		*eol = i;
		return 1;
	}
	return 0;
}

/* Host = uri-host [ ":" port ], with the host copied raw (brackets kept). */
static enum peek_status
peek_http_host(const uint8_t *v, size_t n, struct peek_http *out)
{
	size_t hl, i;
	unsigned long port = 0;

	if (n == 0)
		return peek_http_bad(out, "empty Host");
	if (v[0] == '[') {
		const uint8_t *rb = memchr(v, ']', n);

		if (rb == NULL)
			return peek_http_bad(out, "bad Host");
		hl = (size_t)(rb - v) + 1;
	} else {
		for (hl = 0; hl < n && v[hl] != ':'; hl++)
			;
	}
	if (hl == 0 || hl > HOSTNAME_MAX + 1)
		return peek_http_bad(out, "bad Host length");
	for (i = 0; i < hl; i++)
		if (v[i] <= 0x20 || v[i] >= 0x7f || v[i] == '@' || v[i] == '/')
			return peek_http_bad(out, "bad Host character");
	if (hl < n) {
		if (v[hl] != ':' || n - hl - 1 == 0 || n - hl - 1 > 5)
			return peek_http_bad(out, "bad Host port");
		for (i = hl + 1; i < n; i++) {
			if (v[i] < '0' || v[i] > '9')
				return peek_http_bad(out, "bad Host port");
			port = port * 10 + (v[i] - '0');
		}
		if (port == 0 || port > 65535)
			return peek_http_bad(out, "bad Host port");
	}
	memcpy(out->ph_host, v, hl);
	out->ph_host[hl] = '\0';
	out->ph_host_len = hl;
	out->ph_port = (uint16_t)port;
	return PEEK_OK;
}

enum peek_status
peek_http_request(const uint8_t *buf, size_t len, struct peek_http *out)
{
	const uint8_t *auth = NULL, *hostv = NULL;
	size_t off, eol = 0, i, j, authlen = 0, hostlen = 0, tgt, tlen;
	const char *why = NULL;
	int r, nhost = 0;

	memset(out, 0, sizeof(*out));
	if (peek_classify(buf, len) == PEEK_PROTO_UNKNOWN)
		return PEEK_NEED_MORE;
	if (peek_classify(buf, len) != PEEK_PROTO_HTTP)
		return PEEK_NOT_MINE;
	if (len > PEEK_HTTP_MAX)
		len = PEEK_HTTP_MAX;	/* the head must end within the cap */

	/* request-line = method SP request-target SP HTTP-version CRLF */
	if ((r = peek_http_line(buf, len, 0, &eol, &why)) == -1)
		return peek_http_bad(out, why);
	if (r == 0)
		goto more;
	for (i = 0; buf[i] != ' '; i++)
		;
	memcpy(out->ph_method, buf, i);
	out->ph_method[i] = '\0';
	if (strcmp(out->ph_method, "CONNECT") == 0)
		return peek_http_bad(out, "CONNECT");
	tgt = ++i;
	for (; i < eol && buf[i] > 0x20 && buf[i] < 0x7f; i++)
		;
	tlen = i - tgt;
	if (tlen == 0 || i == eol || buf[i] != ' ')
		return peek_http_bad(out, "bad request-target");
	if (eol - i - 1 != 8 || memcmp(buf + i + 1, "HTTP/1.", 7) != 0 ||
	    (buf[i + 8] != '0' && buf[i + 8] != '1'))
		return peek_http_bad(out, "bad HTTP version");
	out->ph_minor = buf[i + 8] - '0';
	out->ph_target_off = tgt;
	out->ph_target_len = tlen;
	if (buf[tgt] == '/') {
		/* origin-form */
	} else if (tlen == 1 && buf[tgt] == '*') {
		if (strcmp(out->ph_method, "OPTIONS") != 0)
			return peek_http_bad(out, "bad asterisk-form");
	} else if (tlen > 7 && peek_ieq(buf + tgt, 7, "http://")) {
		auth = buf + tgt + 7;
		for (authlen = 0; 7 + authlen < tlen && auth[authlen] != '/' &&
		    auth[authlen] != '?' && auth[authlen] != '#'; authlen++)
			if (auth[authlen] == '@')
				return peek_http_bad(out, "userinfo in target");
	} else
		return peek_http_bad(out, "bad request-target form");

	/* header fields up to the empty line */
	for (off = eol + 2;; off = eol + 2) {
		if ((r = peek_http_line(buf, len, off, &eol, &why)) == -1)
			return peek_http_bad(out, why);
		if (r == 0)
			goto more;
		if (eol == off)
			break;
		if (buf[off] == ' ' || buf[off] == '\t')
			return peek_http_bad(out, "obs-fold");
		for (i = off; i < eol && peek_is_tchar(buf[i]); i++)
			;
		if (i == off || i == eol || buf[i] != ':')
			return peek_http_bad(out, buf[i] == ' ' || buf[i] == '\t' ?
			    "whitespace before colon" : "bad field name");
		for (j = i + 1; j < eol; j++)
			if ((buf[j] < 0x20 && buf[j] != '\t') || buf[j] == 0x7f)
				return peek_http_bad(out,
				    "control byte in field value");
		if (peek_ieq(buf + off, i - off, "host")) {
			if (++nhost > 1)
				return peek_http_bad(out, "duplicate Host");
			for (j = i + 1; j < eol && (buf[j] == ' ' ||
			    buf[j] == '\t'); j++)
				;
			hostv = buf + j;
			for (hostlen = eol - j; hostlen > 0 &&
			    (hostv[hostlen - 1] == ' ' || hostv[hostlen - 1] == '\t');
			    hostlen--)
				;
		}
	}
	out->ph_head_len = eol + 2;
	if (nhost == 0)
		return peek_http_bad(out, "no Host");
	if (peek_http_host(hostv, hostlen, out) != PEEK_OK)
		return PEEK_BAD;
	if (auth != NULL && !peek_ieq2(auth, authlen, hostv, hostlen))
		return peek_http_bad(out, "target authority differs from Host");
	return PEEK_OK;
 more:
	if (len == PEEK_HTTP_MAX)
		return peek_http_bad(out, "request head too large");
	return PEEK_NEED_MORE;
}

const char *
peek_status_str(enum peek_status s)
{
	switch (s) {
	case PEEK_OK:
		return "ok";
	case PEEK_NEED_MORE:
		return "need_more";
	case PEEK_NOT_MINE:
		return "not_mine";
	case PEEK_BAD:
		return "bad";
	case PEEK_NO_SNI:
		return "no_sni";
	}
	return "?";
}
