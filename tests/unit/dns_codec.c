/*
 * tests/unit/dns_codec.c: the strict DNS codec (proxy/proxy_dns_codec.c): every
 * refusal, name conversion, and responses byte-exact against hand-made messages.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include "../../proxy/proxy_map.h"
#include "../../proxy/proxy_dns_codec.h"
#include "../tap.h"

struct msg {
	uint8_t	b[2048];
	size_t	n;
};

static void
m_put(struct msg *m, const void *p, size_t n)
{
	if (m->n + n > sizeof(m->b))
		bail("test message too long");
	memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void
m_put16(struct msg *m, uint16_t v)
{
	uint8_t b[2] = { v >> 8, v & 0xff };

	m_put(m, b, 2);
}

static void
m_hdr(struct msg *m, uint16_t id, uint16_t flags, uint16_t qd, uint16_t an,
    uint16_t ns, uint16_t ar)
{
	m->n = 0;
	m_put16(m, id);
	m_put16(m, flags);
	m_put16(m, qd);
	m_put16(m, an);
	m_put16(m, ns);
	m_put16(m, ar);
}

/* A dotted name as wire labels (no escapes; "" is the root). */
static void
m_name(struct msg *m, const char *name)
{
	const char *p = name, *dot;
	uint8_t l;

	while (*p != '\0') {
		dot = strchr(p, '.');
		l = dot ? (uint8_t)(dot - p) : (uint8_t)strlen(p);
		m_put(m, &l, 1);
		m_put(m, p, l);
		p += l;
		if (*p == '.')
			p++;
	}
	l = 0;
	m_put(m, &l, 1);
}

/* A standard query: RD set, one question, optionally an OPT (udp size, version). */
static void
m_query(struct msg *m, uint16_t id, const char *name, uint16_t type, int edns)
{
	m_hdr(m, id, 0x0100, 1, 0, 0, edns ? 1 : 0);
	m_name(m, name);
	m_put16(m, type);
	m_put16(m, DNS_CLASS_IN);
	if (edns) {
		static const uint8_t opt[] = { 0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0,
		    0, 0 };

		m_put(m, opt, sizeof(opt));
	}
}

static int
parse(const struct msg *m, struct dns_query *q)
{
	return dns_query_parse(m->b, m->n, q);
}

static void
test_parse_ok(void)
{
	struct dns_query q;
	struct msg m;
	static const uint8_t wire[] = "\x07" "Example" "\x03" "COM";

	m_query(&m, 0xbeef, "Example.COM", DNS_TYPE_A, 0);
	is_int(DNS_PARSE_OK, parse(&m, &q), "plain A query parses");
	is_int(0xbeef, q.dq_id, "id");
	is_int(1, q.dq_rd, "rd");
	is_int(DNS_TYPE_A, q.dq_qtype, "qtype");
	is_int(DNS_CLASS_IN, q.dq_qclass, "qclass");
	is_string("example.com", q.dq_name, "name normalised");
	is_string("Example.COM", q.dq_qtext, "text form keeps case");
	is_int(13, q.dq_qwirelen, "wire length");
	is_blob(wire, q.dq_qwire, 13, "wire bytes kept as sent");
	is_int(0, q.dq_edns, "no edns");

	m_query(&m, 1, "a.example", DNS_TYPE_A, 1);
	is_int(DNS_PARSE_OK, parse(&m, &q), "query with OPT parses");
	is_int(1, q.dq_edns, "edns seen");
	is_int(1232, q.dq_edns_udp, "edns udp size");
	is_int(1232, dns_query_udp_max(&q), "udp max follows edns");
	q.dq_edns_udp = 4096;
	is_int(1232, dns_query_udp_max(&q), "udp max capped at ours");
	q.dq_edns_udp = 100;
	is_int(512, dns_query_udp_max(&q), "udp max at least 512");

	/* OPT with one option (a cookie, 8 bytes) */
	m_hdr(&m, 2, 0, 1, 0, 0, 1);
	m_name(&m, "a.example");
	m_put16(&m, DNS_TYPE_A);
	m_put16(&m, DNS_CLASS_IN);
	m_put(&m, "\0\0\x29\x10\0\0\0\x80\0\0\x0c\0\x0a\0\x08" "abcdefgh", 23);
	is_int(DNS_PARSE_OK, parse(&m, &q), "OPT with a cookie option, DO set");
	is_int(0, q.dq_rd, "rd clear copied");

	/* 63-byte label is fine; 255 wire bytes is fine */
	{
		char n[300];

		memset(n, 'a', 63);
		strcpy(n + 63, ".test");
		m_query(&m, 3, n, DNS_TYPE_A, 0);
		is_int(DNS_PARSE_OK, parse(&m, &q), "63-byte label accepted");
		is_int(HOSTNAME_OK, q.dq_name_err, "63-byte label is a valid name");

		memset(n, 'b', 253);
		n[63] = n[127] = n[191] = '.';
		n[253] = '\0';
		m_query(&m, 4, n, DNS_TYPE_A, 0);
		is_int(DNS_PARSE_OK, parse(&m, &q), "255 wire bytes accepted");
		is_int(255, q.dq_qwirelen, "255 wire bytes");
		is_int(HOSTNAME_OK, q.dq_name_err, "253-char name valid");
		is_int(253, strlen(q.dq_name), "253-char name");
	}
}

static void
test_parse_refusals(void)
{
	struct dns_query q;
	struct msg m;
	char n[300];

	m_query(&m, 1, "a.test", DNS_TYPE_A, 0);
	is_int(DNS_PARSE_DROP, dns_query_parse(m.b, 11, &q), "11 bytes: dropped");
	is_int(DNS_PARSE_DROP, dns_query_parse(m.b, 0, &q), "0 bytes: dropped");
	is_int(DNS_PARSE_DROP, dns_query_parse(NULL, 0, &q), "NULL: dropped");
	m.b[2] |= 0x80;
	is_int(DNS_PARSE_DROP, parse(&m, &q), "QR=1: dropped");

	m_query(&m, 1, "a.test", DNS_TYPE_A, 0);
	m.b[2] = (m.b[2] & 0x87) | (4 << 3);
	is_int(DNS_PARSE_NOTIMP, parse(&m, &q), "opcode 4 (NOTIFY): NOTIMP");
	is_int(4, q.dq_opcode, "opcode kept for the response");
	m.b[2] = (m.b[2] & 0x87) | (5 << 3);
	is_int(DNS_PARSE_NOTIMP, parse(&m, &q), "opcode 5 (UPDATE): NOTIMP");
	m.b[2] = (m.b[2] & 0x87) | (1 << 3);
	is_int(DNS_PARSE_NOTIMP, parse(&m, &q), "opcode 1 (IQUERY): NOTIMP");

	m_query(&m, 1, "a.test", DNS_TYPE_A, 0);
	m.b[5] = 2;
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "QDCOUNT 2: FORMERR");
	m.b[5] = 0;
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "QDCOUNT 0: FORMERR");
	m.b[5] = 1;
	m.b[7] = 1;
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "ANCOUNT 1: FORMERR");
	m.b[7] = 0;
	m.b[9] = 1;
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "NSCOUNT 1: FORMERR");
	m.b[9] = 0;
	m.b[11] = 2;
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "ARCOUNT 2: FORMERR");
	m.b[11] = 1;
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "ARCOUNT 1 without a record: FORMERR");
	m.b[11] = 0;
	is_int(DNS_PARSE_OK, parse(&m, &q), "restored: OK (the edits were the cause)");

	/* compression pointer in the question */
	m_hdr(&m, 1, 0, 1, 0, 0, 0);
	m_put(&m, "\x01" "a" "\xc0\x0c", 4);
	m_put16(&m, DNS_TYPE_A);
	m_put16(&m, DNS_CLASS_IN);
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "compression pointer: FORMERR");
	m_hdr(&m, 1, 0, 1, 0, 0, 0);
	m_put(&m, "\xc0\x0c", 2);
	m_put16(&m, DNS_TYPE_A);
	m_put16(&m, DNS_CLASS_IN);
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "pointer as the whole name: FORMERR");
	m_hdr(&m, 1, 0, 1, 0, 0, 0);
	m_put(&m, "\x41" "a", 2);
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "extended label type 0x40: FORMERR");

	/* label 64 */
	memset(n, 'a', 64);
	strcpy(n + 64, ".test");
	m_query(&m, 1, n, DNS_TYPE_A, 0);
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "64-byte label: FORMERR");

	/* 256 wire bytes */
	memset(n, 'b', 254);
	n[63] = n[127] = n[191] = '.';
	n[254] = '\0';
	m_query(&m, 1, n, DNS_TYPE_A, 0);
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "name of 256 wire bytes: FORMERR");

	/* truncations */
	m_query(&m, 1, "a.test", DNS_TYPE_A, 0);
	is_int(DNS_PARSE_FORMERR, dns_query_parse(m.b, m.n - 1, &q),
	    "question missing a byte of qclass: FORMERR");
	is_int(DNS_PARSE_FORMERR, dns_query_parse(m.b, 12 + 3, &q),
	    "label cut short: FORMERR");
	is_int(DNS_PARSE_FORMERR, dns_query_parse(m.b, 12, &q),
	    "header only with QDCOUNT 1: FORMERR");
	m_put(&m, "\0", 1);
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "one trailing byte: FORMERR");
	m_query(&m, 1, "a.test", DNS_TYPE_A, 1);
	m_put(&m, "junk", 4);
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "trailing bytes after OPT: FORMERR");

	/* bad OPT records */
	m_query(&m, 1, "a.test", DNS_TYPE_A, 1);
	m.b[m.n - 11] = 1;	/* owner name not the root */
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "OPT owner not root: FORMERR");
	m_query(&m, 1, "a.test", DNS_TYPE_A, 1);
	m.b[m.n - 9] = 250;	/* TSIG instead of OPT */
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "TSIG additional record: FORMERR");
	m_query(&m, 1, "a.test", DNS_TYPE_A, 1);
	m.b[m.n - 1] = 4;	/* rdlen 4, no rdata */
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "OPT rdlen past the end: FORMERR");
	m_query(&m, 1, "a.test", DNS_TYPE_A, 1);
	m.b[m.n - 1] = 3;
	m_put(&m, "\0\x0a\0", 3);	/* option header cut */
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "OPT option header cut: FORMERR");
	m_query(&m, 1, "a.test", DNS_TYPE_A, 1);
	m.b[m.n - 1] = 6;
	m_put(&m, "\0\x0a\0\x08" "ab", 6);	/* option length past rdata */
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "OPT option past rdata: FORMERR");
	m_query(&m, 1, "a.test", DNS_TYPE_A, 1);
	m.b[m.n - 6] = 1;	/* extended rcode set in a query */
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "OPT extended rcode set: FORMERR");
	m_query(&m, 1, "a.test", DNS_TYPE_A, 1);
	m.b[m.n - 5] = 1;	/* version 1 */
	is_int(DNS_PARSE_BADVERS, parse(&m, &q), "EDNS version 1: BADVERS");
	ok(q.dq_has_question && q.dq_edns, "BADVERS keeps question and OPT");
	m_query(&m, 1, "a.test", DNS_TYPE_OPT, 0);
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "qtype OPT: FORMERR");
	ok(!q.dq_has_question, "qtype OPT: question not echoed");
}

static void
test_names(void)
{
	struct dns_query q;
	struct msg m;

	m_hdr(&m, 1, 0, 1, 0, 0, 0);
	m_put(&m, "\x03" "a.b" "\x04" "test" "\0", 10);
	m_put16(&m, DNS_TYPE_A);
	m_put16(&m, DNS_CLASS_IN);
	is_int(DNS_PARSE_OK, parse(&m, &q), "dot inside a label: parses");
	ok(q.dq_name_err != HOSTNAME_OK, "dot inside a label: invalid name");
	is_string("", q.dq_name, "dot inside a label: no normalised name");
	is_string("a?b.test", q.dq_qtext, "dot inside a label: shown as ?");

	m_hdr(&m, 1, 0, 1, 0, 0, 0);
	m_put(&m, "\x03" "a\0b" "\x04" "test" "\0", 10);
	m_put16(&m, DNS_TYPE_A);
	m_put16(&m, DNS_CLASS_IN);
	is_int(DNS_PARSE_OK, parse(&m, &q), "NUL inside a label: parses");
	is_int(HOSTNAME_CONTROL, q.dq_name_err, "NUL inside a label: invalid");

	m_query(&m, 1, "", DNS_TYPE_A, 0);
	is_int(DNS_PARSE_OK, parse(&m, &q), "root name parses");
	is_int(HOSTNAME_EMPTY, q.dq_name_err, "root name: invalid (empty)");
	m_query(&m, 1, "_dmarc.example.com", DNS_TYPE_A, 0);
	is_int(DNS_PARSE_OK, parse(&m, &q), "underscore name parses");
	ok(q.dq_name_err != HOSTNAME_OK, "underscore: invalid name");
	m_query(&m, 1, "10.0.0.1", DNS_TYPE_A, 0);
	is_int(DNS_PARSE_OK, parse(&m, &q), "IP literal name parses");
	is_int(HOSTNAME_IP_LITERAL, q.dq_name_err, "IP literal name: refused");
	m_query(&m, 1, "caf\xc3\xa9.test", DNS_TYPE_A, 0);
	is_int(DNS_PARSE_OK, parse(&m, &q), "UTF-8 name parses");
	is_int(HOSTNAME_NON_ASCII, q.dq_name_err, "UTF-8 name: invalid");
	is_string("caf??.test", q.dq_qtext, "UTF-8 bytes shown as ?");
}

static void
test_build(void)
{
	struct dns_query q;
	struct msg m;
	struct in_addr a;
	uint8_t out[DNS_RESP_MAX];
	int n;
	static const uint8_t want_a[] = {
	    0x12, 0x34, 0x85, 0x00, 0, 1, 0, 1, 0, 0, 0, 0,
	    1, 'a', 1, 'B', 0, 0, 1, 0, 1,
	    0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 198, 18, 0, 1 };
	static const uint8_t want_nx[] = {
	    0x12, 0x34, 0x85, 0x03, 0, 1, 0, 0, 0, 0, 0, 0,
	    1, 'a', 1, 'B', 0, 0, 1, 0, 1 };
	static const uint8_t want_edns[] = {
	    0x12, 0x34, 0x85, 0x05, 0, 1, 0, 0, 0, 0, 0, 1,
	    1, 'a', 1, 'B', 0, 0, 16, 0, 1,
	    0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t want_edns_a[] = {
	    0x12, 0x34, 0x85, 0x00, 0, 1, 0, 1, 0, 0, 0, 1,
	    1, 'a', 1, 'B', 0, 0, 1, 0, 1,
	    0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 198, 18, 0, 1,
	    0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t want_badvers[] = {
	    0x12, 0x34, 0x85, 0x00, 0, 1, 0, 0, 0, 0, 0, 1,
	    1, 'a', 1, 'B', 0, 0, 1, 0, 1,
	    0, 0, 41, 0x04, 0xd0, 1, 0, 0, 0, 0, 0 };
	static const uint8_t want_formerr[] = {
	    0x12, 0x34, 0x84, 0x01, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t want_notimp[] = {
	    0x12, 0x34, 0xa4, 0x04, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t want_tc[] = {
	    0x12, 0x34, 0x87, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
	    1, 'a', 1, 'B', 0, 0, 1, 0, 1 };

	inet_pton(AF_INET, "198.18.0.1", &a);
	m_query(&m, 0x1234, "a.B", DNS_TYPE_A, 0);
	is_int(DNS_PARSE_OK, parse(&m, &q), "build: query parses");
	n = dns_response_build(&q, DNS_RCODE_NOERROR, &a, 60, 512, out, sizeof(out));
	is_int(sizeof(want_a), n, "A answer: length");
	is_blob(want_a, out, sizeof(want_a), "A answer: bytes");
	n = dns_response_build(&q, DNS_RCODE_NXDOMAIN, NULL, 60, 512, out,
	    sizeof(out));
	is_int(sizeof(want_nx), n, "NXDOMAIN: length");
	is_blob(want_nx, out, sizeof(want_nx), "NXDOMAIN: bytes");
	n = dns_response_build(&q, DNS_RCODE_NOERROR, &a, 60, 36, out, sizeof(out));
	is_int(sizeof(want_tc), n, "answer over maxlen: truncated");
	is_blob(want_tc, out, sizeof(want_tc), "TC set, no answer");
	n = dns_response_build(&q, DNS_RCODE_NOERROR, &a, 60, 37, out, sizeof(out));
	is_int(sizeof(want_a), n, "answer exactly maxlen: not truncated");
	is_int(-1, dns_response_build(&q, DNS_RCODE_NOERROR, &a, 60, 512, out, 36),
	    "buffer one byte short: -1");

	m_query(&m, 0x1234, "a.B", DNS_TYPE_TXT, 1);
	is_int(DNS_PARSE_OK, parse(&m, &q), "build: TXT query with OPT parses");
	n = dns_response_build(&q, DNS_RCODE_REFUSED, NULL, 60, 512, out,
	    sizeof(out));
	is_int(sizeof(want_edns), n, "REFUSED with OPT: length");
	is_blob(want_edns, out, sizeof(want_edns), "REFUSED with OPT: bytes");

	m_query(&m, 0x1234, "a.B", DNS_TYPE_A, 1);
	is_int(DNS_PARSE_OK, parse(&m, &q), "build: A query with OPT parses");
	n = dns_response_build(&q, DNS_RCODE_NOERROR, &a, 60, 512, out, sizeof(out));
	is_int(sizeof(want_edns_a), n, "A with OPT: length");
	is_blob(want_edns_a, out, sizeof(want_edns_a), "A with OPT: bytes");

	m_query(&m, 0x1234, "a.B", DNS_TYPE_A, 1);
	m.b[m.n - 5] = 1;
	is_int(DNS_PARSE_BADVERS, parse(&m, &q), "build: version 1 query");
	n = dns_response_build(&q, DNS_RCODE_BADVERS, NULL, 60, 512, out,
	    sizeof(out));
	is_int(sizeof(want_badvers), n, "BADVERS: length");
	is_blob(want_badvers, out, sizeof(want_badvers),
	    "BADVERS: rcode 0 in header, 1 in OPT");

	m_query(&m, 0x1234, "a.B", DNS_TYPE_A, 0);
	m.b[2] = 0;	/* RD clear */
	m.b[5] = 2;
	is_int(DNS_PARSE_FORMERR, parse(&m, &q), "build: QDCOUNT 2 query");
	q.dq_has_question = 0;
	n = dns_response_build(&q, DNS_RCODE_FORMERR, NULL, 60, 512, out,
	    sizeof(out));
	is_int(sizeof(want_formerr), n, "FORMERR: header only");
	is_blob(want_formerr, out, sizeof(want_formerr), "FORMERR: bytes");

	m_query(&m, 0x1234, "a.B", DNS_TYPE_A, 0);
	m.b[2] = 4 << 3;
	is_int(DNS_PARSE_NOTIMP, parse(&m, &q), "build: opcode 4 query");
	n = dns_response_build(&q, DNS_RCODE_NOTIMP, NULL, 60, 512, out,
	    sizeof(out));
	is_int(sizeof(want_notimp), n, "NOTIMP: header only");
	is_blob(want_notimp, out, sizeof(want_notimp), "NOTIMP: opcode echoed");
}

static void
test_strings(void)
{
	char b[16];

	is_string("A", dns_type_str(1, b, sizeof(b)), "type A");
	is_string("HTTPS", dns_type_str(65, b, sizeof(b)), "type HTTPS");
	is_string("TYPE99", dns_type_str(99, b, sizeof(b)), "unknown type");
	is_string("NXDOMAIN", dns_rcode_str(3), "rcode NXDOMAIN");
}

int
main(void)
{
	plan_lazy();
	test_parse_ok();
	test_parse_refusals();
	test_names();
	test_build();
	test_strings();
	return 0;
}
