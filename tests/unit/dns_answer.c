/*
 * tests/unit/dns_answer.c: what policy DNS answers (proxy_dns_answer(), pure): allowed
 * names get stable mapped addresses, other names NXDOMAIN, AAAA/HTTPS/SVCB no data,
 * other types and classes REFUSED, report mode, unknown sandbox, malformed queries;
 * deny rules (of a base): NXDOMAIN for a name one refuses on every port and
 * protocol, the name left to the allow rules by any other.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include "../../proxy/proxy_map.h"
#include "../../proxy/proxy_dns_codec.h"
#include "../tap.h"

static uint16_t ports443[] = { 443 };
static struct policy_rule rules[3];
static struct policy pol;
static struct proxy_map *map;

static void
setup(void)
{
	struct netaddr_cidr pool;

	memset(rules, 0, sizeof(rules));
	rules[0].pr_id = "gh";
	snprintf(rules[0].pr_host, sizeof(rules[0].pr_host), "github.com");
	rules[0].pr_ports = ports443;
	rules[0].pr_nports = 1;
	rules[1].pr_id = "wild";
	snprintf(rules[1].pr_host, sizeof(rules[1].pr_host), "*.example.org");
	rules[1].pr_ports = ports443;
	rules[1].pr_nports = 1;
	rules[2].pr_id = "net";
	rules[2].pr_is_cidr = 1;
	rules[2].pr_cidr.nc_addr.na_family = AF_INET;
	inet_pton(AF_INET, "10.0.0.0", &rules[2].pr_cidr.nc_addr.na_u.v4);
	rules[2].pr_cidr.nc_prefix = 8;
	memset(&pol, 0, sizeof(pol));
	pol.p_name = "test";
	pol.p_mode = POLICY_MODE_ENFORCE;
	pol.p_rules = rules;
	pol.p_nrules = 3;

	memset(&pool, 0, sizeof(pool));
	pool.nc_addr.na_family = AF_INET;
	inet_pton(AF_INET, "198.18.0.0", &pool.nc_addr.na_u.v4);
	pool.nc_prefix = 15;
	if ((map = proxy_map_new(&pool, 4096)) == NULL)
		bail("proxy_map_new");
}

/* Builds a query (RD, optional OPT) for name/type/class into b; returns its length. */
static size_t
query(uint8_t *b, uint16_t id, const char *name, uint16_t type, uint16_t class,
    int edns)
{
	size_t n = 12;
	const char *p = name;

	memset(b, 0, 12);
	b[0] = id >> 8;
	b[1] = id & 0xff;
	b[2] = 0x01;
	b[5] = 1;
	b[11] = edns ? 1 : 0;
	while (*p != '\0') {
		size_t l = strcspn(p, ".");

		b[n++] = (uint8_t)l;
		memcpy(b + n, p, l);
		n += l;
		p += l;
		if (*p == '.')
			p++;
	}
	b[n++] = 0;
	b[n++] = type >> 8;
	b[n++] = type & 0xff;
	b[n++] = class >> 8;
	b[n++] = class & 0xff;
	if (edns) {
		memcpy(b + n, "\0\0\x29\x04\xd0\0\0\0\0\0\0", 11);
		n += 11;
	}
	return n;
}

struct ans {
	int		 rv;
	size_t		 len;
	uint8_t		 resp[DNS_RESP_MAX];
	struct proxy_dns_result res;
	char		 addr[INET_ADDRSTRLEN];
};

static int
ask(const struct policy *p, struct proxy_map *m, const char *name, uint16_t type,
    uint16_t class, struct ans *a)
{
	uint8_t q[512];
	size_t qlen = query(q, 0x4242, name, type, class, 0);

	memset(a, 0, sizeof(*a));
	a->rv = proxy_dns_answer(p, m, q, qlen, 1, a->resp, sizeof(a->resp), &a->len,
	    &a->res);
	if (a->res.dr_outcome == PROXY_DNS_ANSWER)
		inet_ntop(AF_INET, &a->res.dr_addr.na_u.v4, a->addr, sizeof(a->addr));
	return a->len >= 12 ? a->resp[3] & 0xf : -1;
}

static int
ancount(const struct ans *a)
{
	return a->len >= 12 ? (a->resp[6] << 8 | a->resp[7]) : -1;
}

static void
test_allowed(void)
{
	struct ans a;
	char first[INET_ADDRSTRLEN];

	is_int(DNS_RCODE_NOERROR, ask(&pol, map, "github.com", DNS_TYPE_A,
	    DNS_CLASS_IN, &a), "A github.com: NOERROR");
	is_int(PROXY_DNS_ANSWER, a.res.dr_outcome, "A github.com: answered");
	is_int(1, ancount(&a), "one answer record");
	is_string("198.18.0.1", a.addr, "mapped address from the pool");
	ok(a.len >= 4 && memcmp(a.resp + a.len - 4, "\xc6\x12\x00\x01", 4) == 0,
	    "address in the response bytes");
	is_string("gh", a.res.dr_rule, "rule id reported");
	ok(a.res.dr_reason == NULL, "no reason for an answer");
	is_string("github.com", a.res.dr_qname, "qname normalised");
	snprintf(first, sizeof(first), "%s", a.addr);

	ask(&pol, map, "GitHub.COM.", DNS_TYPE_A, DNS_CLASS_IN, &a);
	is_string(first, a.addr, "same name other case, trailing dot: same address");
	ok(memcmp(a.resp + 12, "\x06GitHub\x03" "COM", 11) == 0,
	    "question echoed with the VM's case");
	ask(&pol, map, "api.example.org", DNS_TYPE_A, DNS_CLASS_IN, &a);
	is_int(PROXY_DNS_ANSWER, a.res.dr_outcome, "wildcard name: answered");
	is_string("198.18.0.2", a.addr, "wildcard name: next address");
	is_string("wild", a.res.dr_rule, "wildcard rule id");
	ask(&pol, map, "github.com", DNS_TYPE_A, DNS_CLASS_IN, &a);
	is_string(first, a.addr, "github.com again: stable");

	is_int(DNS_RCODE_NOERROR, ask(&pol, map, "github.com", DNS_TYPE_AAAA,
	    DNS_CLASS_IN, &a), "AAAA: NOERROR");
	is_int(PROXY_DNS_NODATA, a.res.dr_outcome, "AAAA: no data");
	is_int(0, ancount(&a), "AAAA: no records");
	ask(&pol, map, "github.com", DNS_TYPE_HTTPS, DNS_CLASS_IN, &a);
	ok(a.res.dr_outcome == PROXY_DNS_NODATA && ancount(&a) == 0,
	    "HTTPS: no data (no ECH keys)");
	ask(&pol, map, "github.com", DNS_TYPE_SVCB, DNS_CLASS_IN, &a);
	ok(a.res.dr_outcome == PROXY_DNS_NODATA && ancount(&a) == 0, "SVCB: no data");
	is_int(2, proxy_map_count(map), "AAAA/HTTPS/SVCB allocate nothing");
}

static void
test_denied(void)
{
	struct ans a;
	static const uint16_t refused[] = { DNS_TYPE_TXT, DNS_TYPE_MX, DNS_TYPE_ANY,
	    DNS_TYPE_CNAME, DNS_TYPE_NS, DNS_TYPE_PTR, DNS_TYPE_SOA, 252, 99 };
	size_t i;

	is_int(DNS_RCODE_NXDOMAIN, ask(&pol, map, "evil.com", DNS_TYPE_A,
	    DNS_CLASS_IN, &a), "A evil.com: NXDOMAIN");
	is_string("name_not_allowed", a.res.dr_reason, "reason name_not_allowed");
	is_string("evil.com", a.res.dr_qname, "qname for the audit");
	is_int(DNS_RCODE_NXDOMAIN, ask(&pol, map, "evil.com", DNS_TYPE_AAAA,
	    DNS_CLASS_IN, &a), "AAAA evil.com: NXDOMAIN");
	is_int(DNS_RCODE_NXDOMAIN, ask(&pol, map, "example.org", DNS_TYPE_A,
	    DNS_CLASS_IN, &a), "wildcard suffix itself: NXDOMAIN");
	is_int(DNS_RCODE_NXDOMAIN, ask(&pol, map, "xgithub.com", DNS_TYPE_A,
	    DNS_CLASS_IN, &a), "xgithub.com: NXDOMAIN");
	is_int(DNS_RCODE_NXDOMAIN, ask(&pol, map, "github.com.evil.com",
	    DNS_TYPE_A, DNS_CLASS_IN, &a), "github.com.evil.com: NXDOMAIN");
	is_int(DNS_RCODE_NXDOMAIN, ask(&pol, map, "10.1.2.3", DNS_TYPE_A,
	    DNS_CLASS_IN, &a), "IP literal (even under a cidr rule): NXDOMAIN");
	is_string("ip_literal_name", a.res.dr_reason, "reason ip_literal_name");
	is_int(DNS_RCODE_NXDOMAIN, ask(&pol, map, "_x.github.com", DNS_TYPE_A,
	    DNS_CLASS_IN, &a), "invalid name: NXDOMAIN");
	is_string("invalid_name", a.res.dr_reason, "reason invalid_name");
	is_int(DNS_RCODE_NXDOMAIN, ask(&pol, map, "", DNS_TYPE_A, DNS_CLASS_IN, &a),
	    "root: NXDOMAIN");

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		char t[16];

		dns_type_str(refused[i], t, sizeof(t));
		is_int(DNS_RCODE_REFUSED, ask(&pol, map, "github.com", refused[i],
		    DNS_CLASS_IN, &a), "%s github.com: REFUSED", t);
	}
	is_string("qtype_refused", a.res.dr_reason, "reason qtype_refused");
	is_int(DNS_RCODE_REFUSED, ask(&pol, map, "evil.com", DNS_TYPE_TXT,
	    DNS_CLASS_IN, &a), "TXT of a denied name: REFUSED too");
	is_int(DNS_RCODE_REFUSED, ask(&pol, map, "github.com", DNS_TYPE_A, 3, &a),
	    "class CH: REFUSED");
	is_int(DNS_RCODE_REFUSED, ask(&pol, map, "github.com", DNS_TYPE_A, 255, &a),
	    "class ANY: REFUSED");
	is_int(DNS_RCODE_REFUSED, ask(&pol, NULL, "github.com", DNS_TYPE_A,
	    DNS_CLASS_IN, &a), "unknown sandbox: REFUSED");
	is_string("unknown_sandbox", a.res.dr_reason, "reason unknown_sandbox");
	is_int(DNS_RCODE_NXDOMAIN, ask(NULL, map, "github.com", DNS_TYPE_A,
	    DNS_CLASS_IN, &a), "no policy: NXDOMAIN");
	is_int(2, proxy_map_count(map), "denials allocate nothing");
}

static void
test_report(void)
{
	struct policy rep = pol;
	struct ans a;

	rep.p_mode = POLICY_MODE_REPORT;
	ask(&rep, map, "evil.com", DNS_TYPE_A, DNS_CLASS_IN, &a);
	is_int(PROXY_DNS_ANSWER, a.res.dr_outcome, "report mode: denied name answered");
	is_int(1, a.res.dr_would_deny, "report mode: would_deny");
	is_string("name_not_allowed", a.res.dr_reason, "report mode: reason kept");
	is_string("198.18.0.3", a.addr, "report mode: mapped address");
	ask(&rep, map, "github.com", DNS_TYPE_A, DNS_CLASS_IN, &a);
	is_int(0, a.res.dr_would_deny, "report mode: allowed name, no would_deny");
	ask(&rep, map, "_bad.test", DNS_TYPE_A, DNS_CLASS_IN, &a);
	is_int(PROXY_DNS_NXDOMAIN, a.res.dr_outcome,
	    "report mode: invalid name still NXDOMAIN");
}

static void
test_malformed(void)
{
	struct proxy_dns_result res;
	uint8_t q[512], r[DNS_RESP_MAX];
	size_t qlen, rlen;

	qlen = query(q, 7, "github.com", DNS_TYPE_A, DNS_CLASS_IN, 0);
	q[2] |= 0x80;
	is_int(0, proxy_dns_answer(&pol, map, q, qlen, 1, r, sizeof(r), &rlen, &res),
	    "response as query: handled");
	is_int(PROXY_DNS_DROP, res.dr_outcome, "response as query: dropped");
	is_int(0, rlen, "response as query: nothing sent");
	proxy_dns_answer(&pol, map, q, 5, 1, r, sizeof(r), &rlen, &res);
	ok(res.dr_outcome == PROXY_DNS_DROP && rlen == 0, "5 bytes: dropped");

	qlen = query(q, 7, "github.com", DNS_TYPE_A, DNS_CLASS_IN, 1);
	q[qlen++] = 0;
	proxy_dns_answer(&pol, map, q, qlen, 1, r, sizeof(r), &rlen, &res);
	is_int(PROXY_DNS_FORMERR, res.dr_outcome, "trailing byte: FORMERR");
	ok(rlen == 12 && (r[3] & 0xf) == DNS_RCODE_FORMERR && r[11] == 0,
	    "FORMERR: header only, no OPT");
	qlen = query(q, 7, "github.com", DNS_TYPE_A, DNS_CLASS_IN, 0);
	q[2] = 0x28;	/* opcode 5 */
	proxy_dns_answer(&pol, map, q, qlen, 1, r, sizeof(r), &rlen, &res);
	ok(res.dr_outcome == PROXY_DNS_NOTIMP && rlen == 12 &&
	    (r[3] & 0xf) == DNS_RCODE_NOTIMP, "UPDATE: NOTIMP");
	qlen = query(q, 7, "github.com", DNS_TYPE_A, DNS_CLASS_IN, 1);
	q[qlen - 5] = 2;	/* EDNS version 2 */
	proxy_dns_answer(&pol, map, q, qlen, 1, r, sizeof(r), &rlen, &res);
	ok(res.dr_outcome == PROXY_DNS_BADVERS && r[rlen - 6] == 1,
	    "EDNS version 2: BADVERS");
	qlen = query(q, 7, "github.com", DNS_TYPE_A, DNS_CLASS_IN, 1);
	is_int(-1, proxy_dns_answer(&pol, map, q, qlen, 1, r, 20, &rlen, &res),
	    "response buffer too small: -1");
	is_int(0, rlen, "response buffer too small: nothing to send");
}

/* A policy with a base, loaded as airlockd loads one. */
static struct policy *
deny_policy(const char *mode)
{
	struct policy_bundle b = { NULL, 0 };
	struct policy_errors errs = { 0 };
	struct policy *p;
	char own[512], base[1024];
	static const char base_rules[] = "\"rules\":["
	    "{\"id\":\"no-evil\",\"action\":\"deny\",\"host\":\"evil.example.org\"},"
	    "{\"id\":\"no-443\",\"action\":\"deny\",\"host\":\"ports.example.org\","
	    "\"ports\":[443]},"
	    "{\"id\":\"no-tls\",\"action\":\"deny\",\"host\":\"tls.example.org\","
	    "\"protocol\":\"tls\"},"
	    "{\"id\":\"no-post\",\"action\":\"deny\",\"host\":\"api.example.org\","
	    "\"http\":{\"methods\":[\"POST\"]}},"
	    "{\"id\":\"only-deny\",\"action\":\"deny\",\"host\":\"deny.test\","
	    "\"ports\":[22]}]}";

	/* Report mode only when both files say so. */
	snprintf(base, sizeof(base), "{\"policy\":\"org\",%s%s", mode, base_rules);
	snprintf(own, sizeof(own), "{\"policy\":\"own\",%s\"base\":[\"base.json\"],"
	    "\"rules\":[{\"id\":\"wild\",\"host\":\"*.example.org\","
	    "\"ports\":[443,8443],\"tls\":\"inspect\"}]}", mode);
	if (policy_bundle_add(&b, "own.json", own, strlen(own), NULL) == -1 ||
	    policy_bundle_add(&b, "base.json", base, strlen(base), NULL) == -1)
		bail("out of memory");
	if ((p = policy_load_bundle(&b, &errs)) == NULL)
		bail("the test policy does not load: %s", errs.n > 0 ?
		    errs.v[0].pe_reason : "?");
	policy_bundle_free(&b);
	policy_errors_free(&errs);
	return p;
}

static void
test_deny_rules(void)
{
	static const struct {
		const char *name, *rule, *file, *reason;
		int rcode;
	} t[] = {
		{ "evil.example.org", "no-evil", "base.json", "denied_by_rule",
		    DNS_RCODE_NXDOMAIN },
		{ "good.example.org", "wild", "own.json", NULL, DNS_RCODE_NOERROR },
		{ "ports.example.org", "wild", "own.json", NULL, DNS_RCODE_NOERROR },
		{ "tls.example.org", "wild", "own.json", NULL, DNS_RCODE_NOERROR },
		{ "api.example.org", "wild", "own.json", NULL, DNS_RCODE_NOERROR },
		{ "deny.test", NULL, NULL, "name_not_allowed", DNS_RCODE_NXDOMAIN },
	};
	struct policy *p = deny_policy(""), *rp = deny_policy("\"mode\":\"report\",");
	struct ans a;
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		is_int(t[i].rcode, ask(p, map, t[i].name, DNS_TYPE_A, DNS_CLASS_IN,
		    &a), "deny rules: %s: rcode %d", t[i].name, t[i].rcode);
		ok((t[i].rule == NULL && a.res.dr_rule == NULL) ||
		    (t[i].rule != NULL && a.res.dr_rule != NULL &&
		    strcmp(t[i].rule, a.res.dr_rule) == 0 && a.res.dr_rule_file != NULL &&
		    strcmp(t[i].file, a.res.dr_rule_file) == 0),
		    "  rule %s of %s", t[i].rule ? t[i].rule : "none",
		    t[i].file ? t[i].file : "none");
		ok((t[i].reason == NULL && a.res.dr_reason == NULL) ||
		    (t[i].reason != NULL && a.res.dr_reason != NULL &&
		    strcmp(t[i].reason, a.res.dr_reason) == 0), "  reason %s",
		    t[i].reason ? t[i].reason : "none");
	}
	is_int(DNS_RCODE_NOERROR, ask(rp, map, "evil.example.org", DNS_TYPE_A,
	    DNS_CLASS_IN, &a), "report mode: a name a deny rule refuses is answered");
	ok(a.res.dr_would_deny && a.res.dr_reason != NULL &&
	    strcmp(a.res.dr_reason, "denied_by_rule") == 0, "  would_deny, "
	    "denied_by_rule");
	policy_free(p);
	policy_free(rp);
}

int
main(void)
{
	plan_lazy();
	setup();
	test_allowed();
	test_denied();
	test_report();
	test_malformed();
	test_deny_rules();
	proxy_map_free(map);
	return 0;
}
