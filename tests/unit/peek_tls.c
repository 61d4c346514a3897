/*
 * tests/unit/peek_tls.c: the ClientHello parser (proxy/proxy_peek.c) on real
 * ClientHellos made at test time by OpenSSL (a client SSL over memory BIOs), split at
 * every byte and re-cut into records, and on hand-built ones for each refusal.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/ssl.h>

#include "../../proxy/proxy_peek.h"
#include "../tap.h"

/* The first flight of an OpenSSL client: its ClientHello record(s). */
static size_t
openssl_hello(const char *sni, int tls12, const unsigned char *alpn, size_t alpnlen,
    uint8_t *out, size_t outlen)
{
	SSL_CTX *ctx;
	SSL *ssl;
	BIO *rb, *wb;
	int n;

	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL)
		bail("SSL_CTX_new");
	if (tls12)
		SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
	if ((ssl = SSL_new(ctx)) == NULL)
		bail("SSL_new");
	rb = BIO_new(BIO_s_mem());
	wb = BIO_new(BIO_s_mem());
	if (rb == NULL || wb == NULL)
		bail("BIO_new");
	SSL_set_bio(ssl, rb, wb);
	if (sni != NULL && SSL_set_tlsext_host_name(ssl, sni) != 1)
		bail("SSL_set_tlsext_host_name");
	if (alpn != NULL && SSL_set_alpn_protos(ssl, alpn, (unsigned int)alpnlen) != 0)
		bail("SSL_set_alpn_protos");
	SSL_set_connect_state(ssl);
	(void)SSL_do_handshake(ssl);
	if ((n = BIO_read(wb, out, (int)outlen)) <= 0)
		bail("no ClientHello");
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	return (size_t)n;
}

/* Re-cuts the handshake bytes of one single-record hello into records of at most
 * step bytes (first record: first bytes).  Returns the new length. */
static size_t
recut(const uint8_t *in, size_t inlen, size_t first, size_t step, uint8_t *out)
{
	const uint8_t *hs = in + 5;
	size_t hslen = inlen - 5, off = 0, o = 0, n;

	while (off < hslen) {
		n = off == 0 ? first : step;
		if (n > hslen - off)
			n = hslen - off;
		out[o++] = 0x16;
		out[o++] = 0x03;
		out[o++] = 0x01;
		out[o++] = (uint8_t)(n >> 8);
		out[o++] = (uint8_t)n;
		memcpy(out + o, hs + off, n);
		o += n;
		off += n;
	}
	return o;
}

/* Hand-built ClientHello: one record around the given extensions block. */
static size_t
build(const uint8_t *ext, size_t extlen, int with_exts, uint8_t *out)
{
	size_t o = 0, body, i;

	o = 9;				/* record + handshake headers, filled below */
	out[o++] = 0x03;
	out[o++] = 0x03;
	for (i = 0; i < 32; i++)
		out[o++] = (uint8_t)i;
	out[o++] = 0;			/* session_id */
	out[o++] = 0;
	out[o++] = 2;
	out[o++] = 0x13;
	out[o++] = 0x01;		/* TLS_AES_128_GCM_SHA256 */
	out[o++] = 1;
	out[o++] = 0;			/* null compression */
	if (with_exts) {
		out[o++] = (uint8_t)(extlen >> 8);
		out[o++] = (uint8_t)extlen;
		if (extlen > 0)
			memcpy(out + o, ext, extlen);
		o += extlen;
	}
	body = o - 9;
	out[0] = 0x16;
	out[1] = 0x03;
	out[2] = 0x01;
	out[3] = (uint8_t)((body + 4) >> 8);
	out[4] = (uint8_t)(body + 4);
	out[5] = 0x01;
	out[6] = 0;
	out[7] = (uint8_t)(body >> 8);
	out[8] = (uint8_t)body;
	return o;
}

/* An extension: type, then data. */
static size_t
ext_add(uint8_t *e, size_t o, unsigned int type, const uint8_t *data, size_t len)
{
	e[o++] = (uint8_t)(type >> 8);
	e[o++] = (uint8_t)type;
	e[o++] = (uint8_t)(len >> 8);
	e[o++] = (uint8_t)len;
	memcpy(e + o, data, len);
	return o + len;
}

/* server_name data with the given names (all host_name unless type_override). */
static size_t
sni_data(uint8_t *d, const char **names, size_t n, int type)
{
	size_t o = 2, i, l;

	for (i = 0; i < n; i++) {
		l = strlen(names[i]);
		d[o++] = (uint8_t)type;
		d[o++] = (uint8_t)(l >> 8);
		d[o++] = (uint8_t)l;
		memcpy(d + o, names[i], l);
		o += l;
	}
	d[0] = (uint8_t)((o - 2) >> 8);
	d[1] = (uint8_t)(o - 2);
	return o;
}

static enum peek_status
parse(const uint8_t *b, size_t n, struct peek_tls *t)
{
	return peek_tls_client_hello(b, n, t);
}

int
main(void)
{
	static uint8_t hello[4096], cut[8192], buf[40000], ext[20000], d[20000];
	static const unsigned char alpn[] = "\x02h2\x08http/1.1";
	struct peek_tls t;
	size_t n, m, i, bad, el, dl;
	const char *one[] = { "example.com" };
	const char *two[] = { "example.com", "other.com" };
	const char *ip[] = { "192.0.2.1" };

	plan_lazy();

	/* A real TLS 1.3 ClientHello with SNI and ALPN. */
	n = openssl_hello("api.github.com", 0, alpn, sizeof(alpn) - 1, hello,
	    sizeof(hello));
	is_int(PEEK_OK, parse(hello, n, &t), "openssl hello parses");
	is_string("api.github.com", t.pt_sni, "SNI");
	is_int(14, (long long)t.pt_sni_len, "SNI length");
	is_int(0x0304, t.pt_max_version, "supported_versions has TLS 1.3");
	is_int(2, (long long)t.pt_nalpn, "two ALPN protocols");
	is_string("h2", t.pt_alpn[0], "ALPN h2");
	is_string("http/1.1", t.pt_alpn[1], "ALPN http/1.1");
	ok(!t.pt_ech && !t.pt_esni, "no ECH");
	is_int((long long)n, (long long)t.pt_consumed, "consumed the record");
	is_int(PEEK_PROTO_TLS, peek_classify(hello, n), "classified as TLS");
	is_int(PEEK_PROTO_UNKNOWN, peek_classify(hello, 1), "one byte: unknown");

	/* Every proper prefix needs more. */
	bad = 0;
	for (i = 0; i < n; i++)
		if (parse(hello, i, &t) != PEEK_NEED_MORE)
			bad++;
	is_int(0, (long long)bad, "every prefix of %zu bytes: need more", n);

	/* Split into two records at every handshake offset, each fed whole and as
	 * every prefix of the two-record stream. */
	bad = 0;
	for (i = 1; i < n - 5; i++) {
		m = recut(hello, n, i, n, cut);
		if (parse(cut, m, &t) != PEEK_OK ||
		    strcmp(t.pt_sni, "api.github.com") != 0 || t.pt_consumed != m)
			bad++;
		if (parse(cut, m - 1, &t) != PEEK_NEED_MORE)
			bad++;
	}
	is_int(0, (long long)bad, "two records, split at every offset");
	m = recut(hello, n, 1, 1, cut);
	bad = 0;
	for (i = 0; i < m; i++)
		if (parse(cut, i, &t) != PEEK_NEED_MORE)
			bad++;
	is_int(0, (long long)bad, "one-byte records: every prefix needs more");
	is_int(PEEK_OK, parse(cut, m, &t), "one-byte records: parses");
	is_string("api.github.com", t.pt_sni, "one-byte records: SNI");

	/* Records after the ClientHello (early data, CCS) are left to the caller. */
	memcpy(buf, hello, n);
	memcpy(buf + n, "\x14\x03\x03\x00\x01\x01", 6);
	is_int(PEEK_OK, parse(buf, n + 6, &t), "CCS after the hello");
	is_int((long long)n, (long long)t.pt_consumed, "consumed excludes the CCS");

	/* A record of another type inside the hello is malformed. */
	m = recut(hello, n, 40, n, cut);
	memmove(cut + 45 + 6, cut + 45, m - 45);
	memcpy(cut + 45, "\x17\x03\x03\x00\x01\x00", 6);
	is_int(PEEK_BAD, parse(cut, m + 6, &t), "application data mid-hello refused");

	/* No SNI; TLS 1.2 only. */
	n = openssl_hello(NULL, 0, NULL, 0, hello, sizeof(hello));
	is_int(PEEK_NO_SNI, parse(hello, n, &t), "openssl hello without SNI");
	n = openssl_hello("example.com", 1, NULL, 0, hello, sizeof(hello));
	is_int(PEEK_OK, parse(hello, n, &t), "TLS 1.2 hello");
	is_int(0x0303, t.pt_max_version, "TLS 1.2 max version");
	is_string("example.com", t.pt_sni, "TLS 1.2 SNI");

	/* Hand-built ones. */
	dl = sni_data(d, one, 1, 0);
	el = ext_add(ext, 0, 0, d, dl);
	n = build(ext, el, 1, buf);
	is_int(PEEK_OK, parse(buf, n, &t), "built: one SNI");
	is_string("example.com", t.pt_sni, "built: SNI");

	dl = sni_data(d, two, 2, 0);
	el = ext_add(ext, 0, 0, d, dl);
	n = build(ext, el, 1, buf);
	is_int(PEEK_BAD, parse(buf, n, &t), "two host_names refused");

	dl = sni_data(d, one, 1, 1);
	el = ext_add(ext, 0, 0, d, dl);
	n = build(ext, el, 1, buf);
	is_int(PEEK_BAD, parse(buf, n, &t), "non-host_name entry refused");

	dl = sni_data(d, one, 1, 0);
	el = ext_add(ext, 0, 0, d, dl);
	el = ext_add(ext, el, 0, d, dl);
	n = build(ext, el, 1, buf);
	is_int(PEEK_BAD, parse(buf, n, &t), "two server_name extensions refused");

	el = ext_add(ext, 0, 0x0010, (const uint8_t *)"\x00\x03\x02h2", 5);
	el = ext_add(ext, el, 0x0010, (const uint8_t *)"\x00\x03\x02h2", 5);
	n = build(ext, el, 1, buf);
	is_int(PEEK_BAD, parse(buf, n, &t), "any duplicate extension refused");

	dl = sni_data(d, one, 1, 0);
	el = ext_add(ext, 0, 0, d, dl);
	el = ext_add(ext, el, 0xfe0d, (const uint8_t *)"\x00\x01", 2);
	n = build(ext, el, 1, buf);
	is_int(PEEK_OK, parse(buf, n, &t), "ECH hello parses");
	ok(t.pt_ech, "ECH flagged");
	el = ext_add(ext, 0, 0, d, dl);
	el = ext_add(ext, el, 0xffce, (const uint8_t *)"\x00", 1);
	n = build(ext, el, 1, buf);
	is_int(PEEK_OK, parse(buf, n, &t), "ESNI hello parses");
	ok(t.pt_esni, "ESNI flagged");

	dl = sni_data(d, ip, 1, 0);
	el = ext_add(ext, 0, 0, d, dl);
	n = build(ext, el, 1, buf);
	is_int(PEEK_OK, parse(buf, n, &t), "IP-literal SNI parses (refused later)");
	is_string("192.0.2.1", t.pt_sni, "IP-literal SNI reported raw");

	n = build(NULL, 0, 0, buf);
	is_int(PEEK_NO_SNI, parse(buf, n, &t), "no extensions at all: no SNI");
	n = build(NULL, 0, 1, buf);
	is_int(PEEK_NO_SNI, parse(buf, n, &t), "empty extensions: no SNI");

	/* Length lies. */
	dl = sni_data(d, one, 1, 0);
	el = ext_add(ext, 0, 0, d, dl);
	n = build(ext, el, 1, buf);
	buf[9 + 2 + 32 + 1 + 4 + 2 + 1] ^= 0x01;	/* extensions length low byte */
	is_int(PEEK_BAD, parse(buf, n, &t), "extensions length off by one refused");
	n = build(ext, el, 1, buf);
	buf[9 + 2 + 32 + 1 + 4 + 2 + 2 + 2 + 1] = 0xff;	/* the extension's length */
	is_int(PEEK_BAD, parse(buf, n, &t), "extension length past the end refused");
	n = build(ext, el, 1, buf);
	buf[9 + 2 + 32 + 1 + 4 + 2 + 2 + 4] = 0x7f;	/* server_name list length */
	is_int(PEEK_BAD, parse(buf, n, &t), "server_name list length refused");
	n = build(ext, el, 1, buf);
	buf[9 + 2 + 32] = 33;				/* session_id length */
	is_int(PEEK_BAD, parse(buf, n, &t), "session_id over 32 refused");
	n = build(ext, el, 1, buf);
	buf[9 + 2 + 32 + 1 + 1] = 3;			/* odd cipher_suites */
	is_int(PEEK_BAD, parse(buf, n, &t), "odd cipher_suites length refused");
	n = build(ext, el, 1, buf);
	buf[3] = 0;
	buf[4] = 0;
	is_int(PEEK_BAD, parse(buf, n, &t), "zero-length record refused");
	n = build(ext, el, 1, buf);
	buf[3] = 0x40;
	buf[4] = 0x01;
	is_int(PEEK_BAD, parse(buf, n, &t), "record over 2^14 refused");
	n = build(ext, el, 1, buf);
	buf[5] = 0x02;
	is_int(PEEK_BAD, parse(buf, n, &t), "ServerHello refused");
	n = build(ext, el, 1, buf);
	buf[4] += 1;
	buf[n] = 0x01;
	is_int(PEEK_BAD, parse(buf, n + 1, &t), "trailing byte in the record refused");

	/* A hello over 16 KiB: the handshake length alone is enough to refuse. */
	memcpy(buf, "\x16\x03\x01\x40\x00\x01\x00\x40\x01", 9);
	is_int(PEEK_BAD, parse(buf, 9, &t), "16385-byte ClientHello refused early");
	/* A 16 KiB padded hello spread over two records still parses. */
	dl = sni_data(d, one, 1, 0);
	el = ext_add(ext, 0, 0, d, dl);
	memset(d, 0, sizeof(d));
	n = build(ext, el, 1, buf);
	m = PEEK_TLS_HS_MAX - (n - 5);	/* padding so the body is 16 KiB */
	el = ext_add(ext, el, 0x0015, d, m);
	n = build(ext, el, 1, buf);
	is_int(PEEK_TLS_HS_MAX + 4, (long long)(n - 5), "built a 16 KiB hello");
	{
		static uint8_t two_rec[PEEK_TLS_MAX + 64];

		m = recut(buf, n, 9000, 9000, two_rec);
		is_int(PEEK_OK, parse(two_rec, m, &t), "16 KiB hello in two records");
		is_string("example.com", t.pt_sni, "16 KiB hello SNI");
	}
	/* Too many tiny records: over the byte cap. */
	{
		static uint8_t many[PEEK_TLS_MAX * 6];

		m = recut(buf, n, 1, 1, many);
		is_int(PEEK_BAD, parse(many, m, &t), "hello in 16K one-byte records refused");
	}

	/* Not TLS at all. */
	is_int(PEEK_NOT_MINE, parse((const uint8_t *)"GET / HTTP/1.1\r\n", 16, &t),
	    "HTTP is not TLS");
	is_int(PEEK_NOT_MINE, parse((const uint8_t *)"\x16\x02", 2, &t),
	    "0x16 0x02 is not TLS");
	is_int(PEEK_NEED_MORE, parse((const uint8_t *)"", 0, &t), "empty: need more");
	return 0;
}
