/*
 * proxy/proxy_dns_answer.c: what policy DNS answers (see proxy_dns_codec.h).  A pure
 * function of the policy, the sandbox's mapping table and the query bytes, so it is
 * unit-tested and fuzzed without sockets or an event loop.
 *
 * Invalid names get NXDOMAIN, not FORMERR or REFUSED: the message itself was well
 * formed, and "this name does not exist" is the one answer that tells the VM nothing
 * about why (and that a stub resolver does not retry elsewhere).
 *
 * Negative answers carry no SOA record (RFC 2308 negative caching): resolvers then
 * do not cache them, which is what we want while a policy may change on reload.
 */
#include <stdio.h>
#include <string.h>

#include "proxy_map.h"
#include "proxy_dns_codec.h"
#include "proxy_reason.h"

const char *
proxy_dns_outcome_str(enum proxy_dns_outcome o)
{
	switch (o) {
	case PROXY_DNS_ANSWER:		return "answer";
	case PROXY_DNS_NODATA:		return "nodata";
	case PROXY_DNS_NXDOMAIN:	return "nxdomain";
	case PROXY_DNS_REFUSED:		return "refused";
	case PROXY_DNS_FORMERR:		return "formerr";
	case PROXY_DNS_NOTIMP:		return "notimp";
	case PROXY_DNS_BADVERS:		return "badvers";
	case PROXY_DNS_SERVFAIL:	return "servfail";
	case PROXY_DNS_DROP:		return "drop";
	}
	return "unknown";
}

/*
 * The first host rule matching name that decides DNS, or NULL: an allow rule
 * (ports and protocols do not matter), or a deny rule that refuses every connection
 * to the name (every port and protocol, no http; it comes before every allow rule).
 * Other deny rules leave the name to the allow rules.
 */
static const struct policy_rule *
dns_rule_find(const struct policy *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->p_nrules; i++) {
		const struct policy_rule *r = &p->p_rules[i];

		if (r->pr_is_cidr || !hostname_match(r->pr_host, name))
			continue;
		if (r->pr_action == POLICY_ACTION_ALLOW ||
		    (r->pr_nports == 0 && r->pr_proto == POLICY_PROTO_TCP &&
		    r->pr_nmethods == 0 && r->pr_npaths == 0))
			return r;
	}
	return NULL;
}

int
proxy_dns_answer(const struct policy *p, struct proxy_map *m, const uint8_t *qbuf,
    size_t qlen, int udp, uint8_t *resp, size_t resplen, size_t *outlen,
    struct proxy_dns_result *res)
{
	return proxy_dns_answer_ap(p, m, NULL, NULL, qbuf, qlen, udp, resp, resplen,
	    outlen, res);
}

int
proxy_dns_answer_ap(const struct policy *p, struct proxy_map *m,
    int (*approved)(void *, const char *), void *arg, const uint8_t *qbuf,
    size_t qlen, int udp, uint8_t *resp, size_t resplen, size_t *outlen,
    struct proxy_dns_result *res)
{
	const struct policy_rule *r;
	struct dns_query q;
	const struct in_addr *a = NULL;
	size_t maxlen;
	int rcode, len, pr;

	memset(res, 0, sizeof(*res));
	*outlen = 0;
	pr = dns_query_parse(qbuf, qlen, &q);
	if (pr == DNS_PARSE_DROP) {
		res->dr_outcome = PROXY_DNS_DROP;
		res->dr_reason = PR_STR(MALFORMED_QUERY);
		return 0;
	}
	res->dr_qtype = q.dq_qtype;
	if (q.dq_name_err == HOSTNAME_OK)
		snprintf(res->dr_qname, sizeof(res->dr_qname), "%s", q.dq_name);
	else
		snprintf(res->dr_qname, sizeof(res->dr_qname), "%s", q.dq_qtext);
	maxlen = udp ? dns_query_udp_max(&q) : 65535;

	switch (pr) {
	case DNS_PARSE_FORMERR:
	case DNS_PARSE_NOTIMP:
		/* Header only: what followed it is not trusted enough to echo. */
		q.dq_has_question = 0;
		q.dq_edns = 0;
		res->dr_outcome = pr == DNS_PARSE_NOTIMP ? PROXY_DNS_NOTIMP :
		    PROXY_DNS_FORMERR;
		res->dr_reason = pr == DNS_PARSE_NOTIMP ? PR_STR(OPCODE_NOT_IMPLEMENTED) :
		    PR_STR(MALFORMED_QUERY);
		res->dr_qname[0] = '\0';
		res->dr_qtype = 0;
		rcode = pr == DNS_PARSE_NOTIMP ? DNS_RCODE_NOTIMP : DNS_RCODE_FORMERR;
		goto build;
	case DNS_PARSE_BADVERS:
		res->dr_outcome = PROXY_DNS_BADVERS;
		res->dr_reason = PR_STR(EDNS_VERSION);
		rcode = DNS_RCODE_BADVERS;
		goto build;
	default:
		break;
	}

	if (m == NULL) {
		res->dr_outcome = PROXY_DNS_REFUSED;
		res->dr_reason = PR_STR(UNKNOWN_SANDBOX);
		rcode = DNS_RCODE_REFUSED;
		goto build;
	}
	if (q.dq_qclass != DNS_CLASS_IN) {
		res->dr_outcome = PROXY_DNS_REFUSED;
		res->dr_reason = PR_STR(QCLASS_REFUSED);
		rcode = DNS_RCODE_REFUSED;
		goto build;
	}
	if (p == NULL) {
		res->dr_outcome = PROXY_DNS_NXDOMAIN;
		res->dr_reason = PR_STR(NO_POLICY);
		rcode = DNS_RCODE_NXDOMAIN;
		goto build;
	}
	switch (q.dq_qtype) {
	case DNS_TYPE_A:
	case DNS_TYPE_AAAA:
	case DNS_TYPE_SVCB:
	case DNS_TYPE_HTTPS:
		break;
	default:
		res->dr_outcome = PROXY_DNS_REFUSED;
		res->dr_reason = PR_STR(QTYPE_REFUSED);
		rcode = DNS_RCODE_REFUSED;
		goto build;
	}
	if (q.dq_name_err != HOSTNAME_OK) {
		res->dr_outcome = PROXY_DNS_NXDOMAIN;
		res->dr_reason = q.dq_name_err == HOSTNAME_IP_LITERAL ?
		    PR_STR(IP_LITERAL_NAME) : PR_STR(INVALID_NAME);
		rcode = DNS_RCODE_NXDOMAIN;
		goto build;
	}
	if ((r = dns_rule_find(p, q.dq_name)) != NULL) {
		res->dr_rule = r->pr_id;
		res->dr_rule_file = r->pr_file;
	}
	if (r == NULL && approved != NULL && approved(arg, q.dq_name))
		res->dr_approved = 1;
	else if (r == NULL || r->pr_action == POLICY_ACTION_DENY) {
		res->dr_unknown = r == NULL;
		res->dr_reason = r == NULL ? PR_STR(NAME_NOT_ALLOWED) :
		    PR_STR(DENIED_BY_RULE);
		if (p->p_mode == POLICY_MODE_REPORT)
			res->dr_would_deny = 1;
		else {
			res->dr_outcome = PROXY_DNS_NXDOMAIN;
			rcode = DNS_RCODE_NXDOMAIN;
			goto build;
		}
	}
	if (q.dq_qtype != DNS_TYPE_A) {
		/* No AAAA (the VM speaks IPv4 to us), no HTTPS/SVCB: no ECH keys. */
		res->dr_outcome = PROXY_DNS_NODATA;
		rcode = DNS_RCODE_NOERROR;
		goto build;
	}
	if (proxy_map_name_to_addr(m, q.dq_name, &res->dr_addr) == -1) {
		res->dr_outcome = PROXY_DNS_SERVFAIL;
		res->dr_reason = PR_STR(MAP_FAILED);
		rcode = DNS_RCODE_SERVFAIL;
		goto build;
	}
	res->dr_outcome = PROXY_DNS_ANSWER;
	a = &res->dr_addr.na_u.v4;
	rcode = DNS_RCODE_NOERROR;
 build:
	if ((len = dns_response_build(&q, rcode, a, DNS_TTL, maxlen, resp,
	    resplen)) == -1)
		return -1;
	*outlen = (size_t)len;
	return 0;
}
