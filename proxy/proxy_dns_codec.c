/*
 * proxy/proxy_dns_codec.c: strict DNS query parser and response builder (see
 * proxy_dns_codec.h).  Pure code: every read is bounds-checked against the message
 * length, nothing is allocated.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proxy_dns_codec.h"

#define DNS_FLAG_QR	0x8000
#define DNS_FLAG_AA	0x0400
#define DNS_FLAG_TC	0x0200
#define DNS_FLAG_RD	0x0100
#define DNS_OPCODE(f)	(((f) >> 11) & 0xf)

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = (v >> 16) & 0xff;
	p[2] = (v >> 8) & 0xff;
	p[3] = v & 0xff;
}

static int
dns_byte_is_ldh(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-';
}

/*
 * Parses the question name at buf[*off]: plain labels only (a compression pointer or
 * an extended label type is FORMERR, RFC 1035 allows pointers but no stub puts one
 * in a lone question), 1..63 bytes each, at most DNS_NAME_WIRE_MAX bytes in all.
 * Builds the text form and the log form.  Returns 0 or -1 (FORMERR).
 */
static int
dns_name_parse(const uint8_t *buf, size_t len, size_t *off, struct dns_query *q,
    char *text, size_t *textlen, int *dot_in_label)
{
	size_t o = *off, w = 0, t = 0, i;
	uint8_t l;

	for (;;) {
		if (o >= len)
			return -1;
		l = buf[o];
		if ((l & 0xc0) != 0)
			return -1;	/* pointer (0xc0) or extended label type */
		if (w + 1 + l > DNS_NAME_WIRE_MAX || o + 1 + (size_t)l > len)
			return -1;
		memcpy(q->dq_qwire + w, buf + o, 1 + (size_t)l);
		w += 1 + (size_t)l;
		o++;
		if (l == 0)
			break;
		if (t > 0) {
			text[t] = '.';
			q->dq_qtext[t] = '.';
			t++;
		}
		for (i = 0; i < l; i++) {
			uint8_t c = buf[o + i];

			if (c == '.')
				*dot_in_label = 1;
			text[t] = (char)c;
			q->dq_qtext[t] = (dns_byte_is_ldh(c) || c == '_' || c == '*') ?
			    (char)c : '?';
			t++;
		}
		o += l;
	}
	/* w <= 255 bounds t: labels plus dots take w - 1 bytes at most. */
	text[t] = '\0';
	q->dq_qtext[t] = '\0';
	q->dq_qwirelen = w;
	*textlen = t;
	*off = o;
	return 0;
}

/* The one OPT record (RFC 6891 6.1.2) at buf[*off].  Returns 0, -1 FORMERR. */
static int
dns_opt_parse(const uint8_t *buf, size_t len, size_t *off, struct dns_query *q,
    int *version)
{
	size_t o = *off, rdlen, end;

	/* Owner name: the root, one zero byte. */
	if (o + 11 > len || buf[o] != 0)
		return -1;
	if (get16(buf + o + 1) != DNS_TYPE_OPT)
		return -1;	/* TSIG, SIG(0) or anything else: not from a stub */
	q->dq_edns_udp = get16(buf + o + 3);
	/* TTL: extended rcode (must be 0 in a query), version, DO + Z. */
	if (buf[o + 5] != 0)
		return -1;
	*version = buf[o + 6];
	rdlen = get16(buf + o + 9);
	o += 11;
	if (rdlen > len - o)
		return -1;
	end = o + rdlen;
	/* Options: code, length, data; they must tile the RDATA exactly. */
	while (o < end) {
		size_t olen;

		if (end - o < 4)
			return -1;
		olen = get16(buf + o + 2);
		o += 4;
		if (olen > end - o)
			return -1;
		o += olen;
	}
	q->dq_edns = 1;
	*off = o;
	return 0;
}

int
dns_query_parse(const uint8_t *buf, size_t len, struct dns_query *q)
{
	char text[DNS_NAME_WIRE_MAX + 1];
	size_t off, textlen = 0;
	uint16_t flags, qd, an, ns, ar;
	int dot_in_label = 0, version = 0;

	memset(q, 0, sizeof(*q));
	q->dq_name_err = HOSTNAME_EMPTY;
	if (buf == NULL || len < DNS_HDR_LEN)
		return DNS_PARSE_DROP;
	flags = get16(buf + 2);
	if (flags & DNS_FLAG_QR)
		return DNS_PARSE_DROP;	/* never answer a response: no loops */
	q->dq_id = get16(buf);
	q->dq_opcode = DNS_OPCODE(flags);
	q->dq_rd = (flags & DNS_FLAG_RD) != 0;
	/* Other opcodes (IQUERY, STATUS, NOTIFY, UPDATE) have other section rules. */
	if (q->dq_opcode != 0)
		return DNS_PARSE_NOTIMP;
	qd = get16(buf + 4);
	an = get16(buf + 6);
	ns = get16(buf + 8);
	ar = get16(buf + 10);
	if (qd != 1 || an != 0 || ns != 0 || ar > 1)
		return DNS_PARSE_FORMERR;
	off = DNS_HDR_LEN;
	if (dns_name_parse(buf, len, &off, q, text, &textlen, &dot_in_label) == -1)
		return DNS_PARSE_FORMERR;
	if (len - off < 4)
		return DNS_PARSE_FORMERR;
	q->dq_qtype = get16(buf + off);
	q->dq_qclass = get16(buf + off + 2);
	off += 4;
	if (ar == 1 && dns_opt_parse(buf, len, &off, q, &version) == -1)
		return DNS_PARSE_FORMERR;
	if (off != len)
		return DNS_PARSE_FORMERR;	/* trailing bytes */
	if (q->dq_qtype == DNS_TYPE_OPT)
		return DNS_PARSE_FORMERR;	/* a meta type, never a question */
	q->dq_has_question = 1;
	/*
	 * A '.' inside a label would read as a separator in the text form and name
	 * another host: such a name is invalid, as is anything hostname_normalize()
	 * refuses (answered NXDOMAIN, never passed on).
	 */
	if (dot_in_label)
		q->dq_name_err = HOSTNAME_BAD_CHAR;
	else
		q->dq_name_err = hostname_normalize(text, textlen, q->dq_name);
	if (q->dq_name_err != HOSTNAME_OK)
		q->dq_name[0] = '\0';
	if (version != 0)
		return DNS_PARSE_BADVERS;
	return DNS_PARSE_OK;
}

size_t
dns_query_udp_max(const struct dns_query *q)
{
	if (!q->dq_edns || q->dq_edns_udp <= DNS_UDP_MAX)
		return DNS_UDP_MAX;
	if (q->dq_edns_udp > DNS_EDNS_UDP)
		return DNS_EDNS_UDP;
	return q->dq_edns_udp;
}

int
dns_response_build(const struct dns_query *q, int rcode, const struct in_addr *a,
    uint32_t ttl, size_t maxlen, uint8_t *buf, size_t buflen)
{
	size_t off, need, opt;
	uint16_t flags;
	int an = a != NULL, tc = 0;

	opt = q->dq_edns ? 11 : 0;
	need = DNS_HDR_LEN + opt;
	if (q->dq_has_question)
		need += q->dq_qwirelen + 4;
	else
		an = 0;
	if (an && need + 16 > maxlen) {
		an = 0;
		tc = 1;
	}
	if (an)
		need += 16;
	if (need > buflen)
		return -1;
	flags = DNS_FLAG_QR | DNS_FLAG_AA | (q->dq_opcode & 0xf) << 11 |
	    (rcode & 0xf);
	if (q->dq_rd)
		flags |= DNS_FLAG_RD;
	if (tc)
		flags |= DNS_FLAG_TC;
	put16(buf, q->dq_id);
	put16(buf + 2, flags);
	put16(buf + 4, q->dq_has_question ? 1 : 0);
	put16(buf + 6, an ? 1 : 0);
	put16(buf + 8, 0);
	put16(buf + 10, q->dq_edns ? 1 : 0);
	off = DNS_HDR_LEN;
	if (q->dq_has_question) {
		/* Echoed as sent: a stub checking 0x20 case randomisation sees its own. */
		memcpy(buf + off, q->dq_qwire, q->dq_qwirelen);
		off += q->dq_qwirelen;
		put16(buf + off, q->dq_qtype);
		put16(buf + off + 2, q->dq_qclass);
		off += 4;
	}
	if (an) {
		put16(buf + off, 0xc000 | DNS_HDR_LEN);	/* the question's name */
		put16(buf + off + 2, DNS_TYPE_A);
		put16(buf + off + 4, DNS_CLASS_IN);
		put32(buf + off + 6, ttl);
		put16(buf + off + 10, 4);
		memcpy(buf + off + 12, &a->s_addr, 4);	/* network order already */
		off += 16;
	}
	if (q->dq_edns) {
		buf[off] = 0;				/* root */
		put16(buf + off + 1, DNS_TYPE_OPT);
		put16(buf + off + 3, DNS_EDNS_UDP);
		buf[off + 5] = (rcode >> 4) & 0xff;	/* extended rcode */
		buf[off + 6] = 0;			/* version */
		put16(buf + off + 7, 0);		/* DO=0: we never sign */
		put16(buf + off + 9, 0);		/* no options */
		off += 11;
	}
	return (int)off;
}

const char *
dns_type_str(uint16_t type, char *buf, size_t len)
{
	const char *s;

	switch (type) {
	case DNS_TYPE_A:	s = "A"; break;
	case DNS_TYPE_NS:	s = "NS"; break;
	case DNS_TYPE_CNAME:	s = "CNAME"; break;
	case DNS_TYPE_SOA:	s = "SOA"; break;
	case DNS_TYPE_PTR:	s = "PTR"; break;
	case DNS_TYPE_MX:	s = "MX"; break;
	case DNS_TYPE_TXT:	s = "TXT"; break;
	case DNS_TYPE_AAAA:	s = "AAAA"; break;
	case DNS_TYPE_OPT:	s = "OPT"; break;
	case DNS_TYPE_SVCB:	s = "SVCB"; break;
	case DNS_TYPE_HTTPS:	s = "HTTPS"; break;
	case DNS_TYPE_ANY:	s = "ANY"; break;
	default:
		snprintf(buf, len, "TYPE%u", type);
		return buf;
	}
	snprintf(buf, len, "%s", s);
	return buf;
}

const char *
dns_rcode_str(int rcode)
{
	switch (rcode) {
	case DNS_RCODE_NOERROR:		return "NOERROR";
	case DNS_RCODE_FORMERR:		return "FORMERR";
	case DNS_RCODE_SERVFAIL:	return "SERVFAIL";
	case DNS_RCODE_NXDOMAIN:	return "NXDOMAIN";
	case DNS_RCODE_NOTIMP:		return "NOTIMP";
	case DNS_RCODE_REFUSED:		return "REFUSED";
	case DNS_RCODE_BADVERS:		return "BADVERS";
	default:			return "RCODE?";
	}
}
