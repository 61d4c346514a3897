/*
 * proxy/proxy_dns_codec.h: the strict DNS message codec of policy DNS (RFC 1035, EDNS0
 * of RFC 6891) and the answering logic, both pure functions over buffers (no I/O, no
 * libevent), unit-tested and fuzzed (tests/fuzz/fuzz_dns.c).
 *
 * Only what a stub resolver sends is accepted: one question, no answer or authority
 * records, at most one OPT record, no compression in the question.  Anything else is
 * FORMERR (or dropped when not even a response can be formed).
 */
#ifndef AIRLOCK_PROXY_DNS_CODEC_H
#define AIRLOCK_PROXY_DNS_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "hostname.h"
#include "netaddr.h"
#include "policy.h"

struct proxy_map;

#define DNS_HDR_LEN		12
#define DNS_NAME_WIRE_MAX	255	/* RFC 1035 2.3.4, with the root label */
#define DNS_UDP_MAX		512	/* a response without EDNS */
#define DNS_EDNS_UDP		1232	/* the UDP size we advertise */
#define DNS_QUERY_MAX		1232	/* longer queries are not ours to answer */
#define DNS_RESP_MAX		1024	/* our largest response is ~300 bytes */
#define DNS_TTL			60	/* seconds, A answers */

enum dns_type {
	DNS_TYPE_A = 1,
	DNS_TYPE_NS = 2,
	DNS_TYPE_CNAME = 5,
	DNS_TYPE_SOA = 6,
	DNS_TYPE_PTR = 12,
	DNS_TYPE_MX = 15,
	DNS_TYPE_TXT = 16,
	DNS_TYPE_AAAA = 28,
	DNS_TYPE_OPT = 41,
	DNS_TYPE_SVCB = 64,
	DNS_TYPE_HTTPS = 65,
	DNS_TYPE_ANY = 255,
};

#define DNS_CLASS_IN	1

enum dns_rcode {
	DNS_RCODE_NOERROR = 0,
	DNS_RCODE_FORMERR = 1,
	DNS_RCODE_SERVFAIL = 2,
	DNS_RCODE_NXDOMAIN = 3,
	DNS_RCODE_NOTIMP = 4,
	DNS_RCODE_REFUSED = 5,
	DNS_RCODE_BADVERS = 16,		/* extended: needs an OPT in the response */
};

/* dns_query_parse() results. */
enum dns_parse {
	DNS_PARSE_OK = 0,
	DNS_PARSE_DROP = -1,		/* shorter than a header, or a response (QR=1) */
	DNS_PARSE_FORMERR = -2,		/* answer FORMERR, header only */
	DNS_PARSE_NOTIMP = -3,		/* opcode other than QUERY: NOTIMP, header only */
	DNS_PARSE_BADVERS = -4,		/* EDNS version > 0: BADVERS with the question */
};

struct dns_query {
	uint16_t	 dq_id;
	uint16_t	 dq_opcode;
	int		 dq_rd;			/* recursion desired, copied back */
	int		 dq_has_question;	/* the question parsed (echo it) */
	uint16_t	 dq_qtype;
	uint16_t	 dq_qclass;
	uint8_t		 dq_qwire[DNS_NAME_WIRE_MAX];	/* the name as sent */
	size_t		 dq_qwirelen;
	/* the name as text for logs: LDH, '_' and '*' kept, other bytes as '?' */
	char		 dq_qtext[DNS_NAME_WIRE_MAX + 1];
	char		 dq_name[HOSTNAME_MAX + 1];	/* normalised if dq_name_err == 0 */
	int		 dq_name_err;		/* HOSTNAME_OK or an enum hostname_err */
	int		 dq_edns;		/* the query had an OPT record */
	uint16_t	 dq_edns_udp;		/* its UDP payload size */
};

/*
 * Parses one query message of len bytes.  Fills *q as far as it got (the header
 * fields whenever the result is not DNS_PARSE_DROP) and returns an enum dns_parse.
 * Names are converted to text and normalised with hostname_normalize(): a label
 * holding a '.' or any byte outside what hostname_normalize() accepts makes the name
 * invalid (dq_name_err < 0), which is not a parse error: it is answered NXDOMAIN.
 */
int	dns_query_parse(const uint8_t *buf, size_t len, struct dns_query *q);

/*
 * Builds the response to q into buf[buflen]: ID, opcode and RD copied, QR=1, AA=1,
 * RA=0, rcode as given (DNS_RCODE_BADVERS is carried in the OPT), the question echoed
 * when q->dq_has_question, one A record (TTL ttl) when a is not NULL, and an OPT of
 * ours (UDP size DNS_EDNS_UDP) when the query had one.  maxlen is what the transport
 * carries (DNS_UDP_MAX, or the query's EDNS size, for UDP; 65535 for TCP): a response
 * longer than that is sent without answers and with TC=1.  Returns the length, or -1
 * when buf is too small.
 */
int	dns_response_build(const struct dns_query *q, int rcode,
	    const struct in_addr *a, uint32_t ttl, size_t maxlen, uint8_t *buf,
	    size_t buflen);

/* The most a UDP response to q may take (512, or the query's EDNS size up to ours). */
size_t	dns_query_udp_max(const struct dns_query *q);

/* "A", "AAAA", "TXT", ... or "TYPE<n>" (RFC 3597) written to buf. */
const char *dns_type_str(uint16_t type, char *buf, size_t len);
/* "NOERROR", "NXDOMAIN", ... */
const char *dns_rcode_str(int rcode);

/* proxy_dns_answer.c: the answering logic of policy DNS */

/* What was done with one query (the audit outcome). */
enum proxy_dns_outcome {
	PROXY_DNS_ANSWER = 0,		/* A record with a mapped address */
	PROXY_DNS_NODATA,		/* NOERROR, no records (AAAA, HTTPS, SVCB) */
	PROXY_DNS_NXDOMAIN,		/* name not allowed or not a valid name */
	PROXY_DNS_REFUSED,		/* type or class we do not serve, no sandbox */
	PROXY_DNS_FORMERR,		/* malformed query */
	PROXY_DNS_NOTIMP,		/* opcode other than QUERY */
	PROXY_DNS_BADVERS,		/* EDNS version other than 0 */
	PROXY_DNS_SERVFAIL,		/* the map could not allocate */
	PROXY_DNS_DROP,			/* no response (not a query, or rate limited) */
};

struct proxy_dns_result {
	enum proxy_dns_outcome dr_outcome;
	uint16_t	 dr_qtype;		/* 0 when there was no question */
	char		 dr_qname[DNS_NAME_WIRE_MAX + 1]; /* normalised, or dq_qtext */
	const char	*dr_reason;		/* stable code for denials, or NULL */
	const char	*dr_rule;		/* id of the rule that allowed (or, a
						   denied_by_rule, refused), or NULL */
	const char	*dr_rule_file;		/* that rule's file, or NULL */
	int		 dr_would_deny;		/* report mode: enforce would deny */
	int		 dr_unknown;		/* refused: no rule names it
						   (name_not_allowed) */
	int		 dr_approved;		/* answered for an approval only */
	struct netaddr	 dr_addr;		/* the mapped address (PROXY_DNS_ANSWER) */
};

/*
 * Answers one query message q[qlen] for a sandbox with policy p and mapping table m
 * (m NULL: the source is no sandbox, everything is REFUSED; p NULL: no policy,
 * everything NXDOMAIN).  Decision order: malformed -> FORMERR/NOTIMP/BADVERS; class
 * other than IN -> REFUSED; no policy -> NXDOMAIN; type other than A, AAAA, HTTPS,
 * SVCB -> REFUSED (whatever the name, so other types reveal nothing); an invalid name
 * or one no host allow rule matches -> NXDOMAIN (in report mode: answered,
 * would_deny); a host deny rule for every port and protocol, without http, that
 * matches the name before any allow rule does -> NXDOMAIN denied_by_rule (likewise);
 * A -> a mapped address from m; AAAA/HTTPS/SVCB -> NOERROR without data.  Port and
 * protocol of rules do not matter for DNS; cidr rules are not names.
 *
 * udp: the response is for UDP (size limit and TC).  The response goes to
 * resp[resplen] (DNS_RESP_MAX is enough) and its length to *outlen (0 for DROP).
 * Returns 0, or -1 if resplen was too small (nothing to send).  res is always filled.
 */
int	proxy_dns_answer(const struct policy *p, struct proxy_map *m,
	    const uint8_t *q, size_t qlen, int udp, uint8_t *resp, size_t resplen,
	    size_t *outlen, struct proxy_dns_result *res);
/*
 * The same, with approvals: a name no rule names (name_not_allowed, not a deny
 * rule's) for which approved(arg, name) says 1 (an operator's --once/--for
 * grant) is answered as an allowed one (dr_approved).  approved NULL: none.
 */
int	proxy_dns_answer_ap(const struct policy *p, struct proxy_map *m,
	    int (*approved)(void *, const char *), void *arg,
	    const uint8_t *q, size_t qlen, int udp, uint8_t *resp, size_t resplen,
	    size_t *outlen, struct proxy_dns_result *res);

/* "answer", "nodata", "nxdomain", ... */
const char *proxy_dns_outcome_str(enum proxy_dns_outcome o);

#endif
