/*
 * tests/unit/policy_decide.c: first-match evaluation, every denial reason, the
 * wildcard and path traps, report mode, and policy_rule_allows_private().
 */
#include <sys/socket.h>

#include <stdlib.h>
#include <string.h>

#include "netaddr.h"
#include "policy.h"
#include "../tap.h"

static struct policy *
load(const char *src)
{
	struct policy_errors errs = { 0 };
	struct policy *p;
	char *buf;
	size_t i, len = strlen(src);

	if ((buf = strdup(src)) == NULL)
		bail("out of memory");
	for (i = 0; i < len; i++)
		if (buf[i] == '\'')
			buf[i] = '"';
	p = policy_load_buf(buf, len, "t.json", &errs);
	free(buf);
	if (p == NULL)
		bail("test policy does not load: %s", errs.n ?
		    errs.v[0].pe_reason : "?");
	policy_errors_free(&errs);
	return p;
}

static struct netaddr *
addr(const char *s)
{
	static struct netaddr a[4];
	static int i;
	struct netaddr *r = &a[i++ % 4];

	if (netaddr_parse(s, r) == -1)
		bail("bad test address %s", s);
	return r;
}

/*
 * Checks one query.  want_rule NULL: no rule; want_reason "none": allowed.
 */
static void
check(const struct policy *p, const char *host, const struct netaddr *a,
    uint16_t port, enum policy_proto proto, const char *method, const char *path,
    const char *want_reason, const char *want_rule)
{
	struct policy_query q = { host, a, port, proto, method, path };
	struct policy_verdict v;
	int allow, want_allow = strcmp(want_reason, "none") == 0;

	allow = policy_decide(p, &q, &v);
	is_string(want_reason, policy_reason_str(v.pv_reason), "%s:%u %s %s %s: "
	    "%s", host ? host : "(addr)", port, policy_proto_str(proto),
	    method ? method : "-", path ? path : "-", want_reason);
	if (p->p_mode == POLICY_MODE_ENFORCE)
		ok(allow == want_allow && v.pv_allow == allow &&
		    v.pv_would_deny == 0, "  %s", want_allow ? "allowed" :
		    "denied");
	else
		ok(allow == 1 && v.pv_allow == 1 && v.pv_would_deny == !want_allow,
		    "  report mode: allowed, would_deny=%d", !want_allow);
	is_string(want_rule ? want_rule : "(none)",
	    v.pv_rule ? v.pv_rule->pr_id : "(none)", "  rule");
}

#define TLS	POLICY_PROTO_TLS
#define HTTP	POLICY_PROTO_HTTP
#define TCP	POLICY_PROTO_TCP

static void
test_names(void)
{
	struct policy *p;
	struct policy_query q = { 0 };
	struct policy_verdict v;

	p = load("{'policy':'n','rules':["
	    "{'id':'wild','host':'*.example.com'},"
	    "{'id':'api','host':'api.example.com','tls':'inspect'},"
	    "{'id':'apex','host':'example.com','ports':[443,8443]},"
	    "{'id':'web','host':'example.com','protocol':'http'},"
	    "{'id':'ssh','host':'git.example.org','ports':[22],'protocol':'tcp'}"
	    "]}");

	/* First match wins: the wildcard comes before the exact rule. */
	check(p, "api.example.com", NULL, 443, TLS, NULL, NULL, "none", "wild");
	check(p, "a.b.example.com", NULL, 443, TLS, NULL, NULL, "none", "wild");
	check(p, "API.Example.COM.", NULL, 443, TLS, NULL, NULL, "none", "wild");
	/* Wildcard traps. */
	check(p, "evil-example.com", NULL, 443, TLS, NULL, NULL,
	    "name_not_allowed", NULL);
	check(p, "example.com.evil.org", NULL, 443, TLS, NULL, NULL,
	    "name_not_allowed", NULL);
	check(p, "xexample.com", NULL, 443, TLS, NULL, NULL, "name_not_allowed",
	    NULL);
	check(p, "example.com", NULL, 443, TLS, NULL, NULL, "none", "apex");
	check(p, "example.com", NULL, 8443, TLS, NULL, NULL, "none", "apex");
	check(p, "example.com", NULL, 80, HTTP, NULL, NULL, "none", "web");
	/* Ports. */
	check(p, "api.example.com", NULL, 8443, TLS, NULL, NULL,
	    "port_not_allowed", NULL);
	check(p, "example.com", NULL, 22, TLS, NULL, NULL, "port_not_allowed",
	    NULL);
	check(p, "git.example.org", NULL, 443, TLS, NULL, NULL,
	    "port_not_allowed", NULL);
	check(p, "other.org", NULL, 22, TCP, NULL, NULL, "name_not_allowed",
	    NULL);
	/* Protocols. */
	check(p, "example.com", NULL, 443, HTTP, NULL, NULL,
	    "protocol_not_allowed", "apex");
	check(p, "example.com", NULL, 80, TLS, NULL, NULL,
	    "protocol_not_allowed", "web");
	check(p, "example.com", NULL, 443, TCP, NULL, NULL,
	    "protocol_not_allowed", "apex");
	check(p, "git.example.org", NULL, 22, TCP, NULL, NULL, "none", "ssh");
	check(p, "git.example.org", NULL, 22, TLS, NULL, NULL, "none", "ssh");
	check(p, "git.example.org", NULL, 22, HTTP, NULL, NULL, "none", "ssh");
	/* Malformed names. */
	check(p, "", NULL, 443, TLS, NULL, NULL, "invalid_name", NULL);
	check(p, "exa mple.com", NULL, 443, TLS, NULL, NULL, "invalid_name",
	    NULL);
	check(p, "a..example.com", NULL, 443, TLS, NULL, NULL, "invalid_name",
	    NULL);
	check(p, "api.example.com\t", NULL, 443, TLS, NULL, NULL,
	    "invalid_name", NULL);
	check(p, "*.example.com", NULL, 443, TLS, NULL, NULL, "invalid_name",
	    NULL);
	check(p, "b\xc3\xbc" "cher.example.com", NULL, 443, TLS, NULL, NULL,
	    "invalid_name", NULL);
	check(p, "1.2.3.4", NULL, 443, TLS, NULL, NULL, "ip_literal_name", NULL);
	check(p, "127.1", NULL, 443, TLS, NULL, NULL, "ip_literal_name", NULL);
	check(p, "::1", NULL, 443, TLS, NULL, NULL, "ip_literal_name", NULL);
	check(p, "[2001:db8::1]", NULL, 443, TLS, NULL, NULL, "ip_literal_name",
	    NULL);
	check(p, NULL, NULL, 443, TLS, NULL, NULL, "invalid_name", NULL);

	/* The verdict carries the rule's TLS mode. */
	q.pq_host = "example.com";
	q.pq_port = 443;
	q.pq_proto = TLS;
	ok(policy_decide(p, &q, &v) == 1 && v.pv_tls == POLICY_TLS_SPLICE,
	    "apex is spliced");
	policy_free(p);

	p = load("{'policy':'n','rules':[{'id':'api','host':'api.example.com',"
	    "'tls':'inspect'},{'id':'wild','host':'*.example.com'}]}");
	q.pq_host = "api.example.com";
	ok(policy_decide(p, &q, &v) == 1 && v.pv_tls == POLICY_TLS_INSPECT &&
	    strcmp(v.pv_rule->pr_id, "api") == 0,
	    "exact rule first: inspected");
	q.pq_host = "www.example.com";
	ok(policy_decide(p, &q, &v) == 1 && v.pv_tls == POLICY_TLS_SPLICE &&
	    strcmp(v.pv_rule->pr_id, "wild") == 0, "others spliced");
	policy_free(p);

	/* Default deny. */
	p = load("{'policy':'none','rules':[]}");
	check(p, "example.com", NULL, 443, TLS, NULL, NULL, "name_not_allowed",
	    NULL);
	check(p, NULL, addr("8.8.8.8"), 443, TLS, NULL, NULL,
	    "address_not_allowed", NULL);
	policy_free(p);
}

static void
test_addresses(void)
{
	struct policy *p;

	p = load("{'policy':'a','rules':["
	    "{'id':'db','cidr':'10.1.0.0/16','ports':[5432],'protocol':'tcp'},"
	    "{'id':'v6','cidr':'2001:db8::/32'},"
	    "{'id':'name','host':'x.example'}]}");
	check(p, NULL, addr("10.1.2.3"), 5432, TCP, NULL, NULL, "none", "db");
	check(p, NULL, addr("10.1.2.3"), 5433, TCP, NULL, NULL,
	    "port_not_allowed", NULL);
	check(p, NULL, addr("10.2.0.1"), 5432, TCP, NULL, NULL,
	    "address_not_allowed", NULL);
	check(p, NULL, addr("::ffff:10.1.2.3"), 5432, TCP, NULL, NULL, "none",
	    "db");
	check(p, NULL, addr("2001:db8::5"), 443, TLS, NULL, NULL, "none", "v6");
	check(p, NULL, addr("2001:db9::5"), 443, TLS, NULL, NULL,
	    "address_not_allowed", NULL);
	/* An IP-literal name is judged by the address only. */
	check(p, "10.1.2.3", addr("10.1.2.3"), 5432, TCP, NULL, NULL, "none",
	    "db");
	check(p, "10.1.2.3", addr("10.9.9.9"), 5432, TCP, NULL, NULL,
	    "ip_literal_name", NULL);
	check(p, "10.1.2.3", NULL, 5432, TCP, NULL, NULL, "ip_literal_name",
	    NULL);
	/* A name and an address: either kind of rule can match, in order. */
	check(p, "x.example", addr("203.0.113.9"), 443, TLS, NULL, NULL, "none",
	    "name");
	check(p, "y.example", addr("10.1.2.3"), 5432, TCP, NULL, NULL, "none",
	    "db");
	check(p, "y.example", addr("203.0.113.9"), 443, TLS, NULL, NULL,
	    "name_not_allowed", NULL);
	/* An address never matches a host rule. */
	check(p, NULL, addr("203.0.113.9"), 443, TLS, NULL, NULL,
	    "address_not_allowed", NULL);
	/* An invalid name is not rescued by the address. */
	check(p, "bad name", addr("10.1.2.3"), 5432, TCP, NULL, NULL,
	    "invalid_name", NULL);
	policy_free(p);
}

static void
test_http(void)
{
	struct policy *p;

	p = load("{'policy':'h','rules':["
	    "{'id':'gh','host':'api.github.com','http':{'methods':['GET','POST'],"
	    "'paths':['/repos/acme/*','/repos/acme/*/issues/**','/user']}},"
	    "{'id':'any','host':'any.example','http':{'methods':['GET']}},"
	    "{'id':'paths','host':'paths.example','http':{'paths':['/a/*.json']}},"
	    "{'id':'plain','host':'plain.example','protocol':'http',"
	    "'http':{'methods':['GET'],'paths':['/pub/**']}}]}");
	/* Connection-level decision: no method yet. */
	check(p, "api.github.com", NULL, 443, TLS, NULL, NULL, "none", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET", "/repos/acme/app",
	    "none", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "POST",
	    "/repos/acme/app/issues/1/comments", "none", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET", "/user", "none", "gh");
	/* Methods: exact, case-sensitive tokens. */
	check(p, "api.github.com", NULL, 443, TLS, "DELETE", "/repos/acme/app",
	    "method_not_allowed", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "get", "/repos/acme/app",
	    "method_not_allowed", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GETX", "/repos/acme/app",
	    "method_not_allowed", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "", "/repos/acme/app",
	    "method_not_allowed", "gh");
	/* Path traps. */
	check(p, "api.github.com", NULL, 443, TLS, "GET",
	    "/repos/acme/../../admin", "path_not_allowed", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET",
	    "/repos/acme/%2e%2e/other", "path_not_allowed", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET",
	    "/repos/acme/%2E%2E/%2e%2e/%2e%2e/admin", "invalid_path", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET",
	    "/repos/acme/x%2F..%2F..%2Fadmin", "invalid_path", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET",
	    "/repos/acme/x%5C..%5Cadmin", "invalid_path", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET",
	    "/repos/acme/x\\..\\admin", "invalid_path", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET", "/repos/acme/app%00",
	    "invalid_path", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET", "/repos/acme/..;/x",
	    "invalid_path", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET", "//repos/acme/app",
	    "path_not_allowed", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET", "/repos//acme/app",
	    "path_not_allowed", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET", "/repos/acme//app",
	    "path_not_allowed", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET", "/repos/acme/a/b",
	    "path_not_allowed", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET", "/repos/acmex/app",
	    "path_not_allowed", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET", "/repos/ACME/app",
	    "path_not_allowed", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET", "/user/../admin",
	    "path_not_allowed", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET", "/users",
	    "path_not_allowed", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET", "user",
	    "invalid_path", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET", NULL, "invalid_path",
	    "gh");
	/* Allowed spellings of allowed paths. */
	check(p, "api.github.com", NULL, 443, TLS, "GET", "/repos/acme/%61pp",
	    "none", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET",
	    "/repos/other/../acme/app", "none", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "GET", "/user?x=/../admin",
	    "none", "gh");
	/* Methods only: any path, even odd ones. */
	check(p, "any.example", NULL, 443, TLS, "GET", "/anything/at/all",
	    "none", "any");
	check(p, "any.example", NULL, 443, TLS, "PUT", "/x",
	    "method_not_allowed", "any");
	/* Paths only: any method. */
	check(p, "paths.example", NULL, 443, TLS, "PATCH", "/a/x.json", "none",
	    "paths");
	check(p, "paths.example", NULL, 443, TLS, "PATCH", "/a/b/x.json",
	    "path_not_allowed", "paths");
	/* Plain HTTP rule with methods and paths. */
	check(p, "plain.example", NULL, 80, HTTP, "GET", "/pub/a/b", "none",
	    "plain");
	check(p, "plain.example", NULL, 80, HTTP, "GET", "/private",
	    "path_not_allowed", "plain");
	check(p, "plain.example", NULL, 80, TLS, "GET", "/pub/a",
	    "protocol_not_allowed", "plain");
	policy_free(p);
}

static void
test_report(void)
{
	struct policy *p;
	struct policy_query q = { 0 };
	struct policy_verdict v;

	p = load("{'policy':'r','mode':'report','rules':["
	    "{'id':'gh','host':'api.github.com','http':{'methods':['GET']}}]}");
	check(p, "api.github.com", NULL, 443, TLS, "GET", "/x", "none", "gh");
	check(p, "api.github.com", NULL, 443, TLS, "POST", "/x",
	    "method_not_allowed", "gh");
	check(p, "evil.example", NULL, 443, TLS, NULL, NULL, "name_not_allowed",
	    NULL);
	check(p, "api.github.com", NULL, 80, HTTP, NULL, NULL,
	    "port_not_allowed", NULL);
	check(p, "bad name", NULL, 443, TLS, NULL, NULL, "invalid_name", NULL);
	q.pq_host = "api.github.com";
	q.pq_port = 443;
	q.pq_proto = TLS;
	q.pq_method = "DELETE";
	q.pq_path = "/";
	ok(policy_decide(p, &q, &v) == 1 && v.pv_would_deny &&
	    v.pv_tls == POLICY_TLS_INSPECT, "report mode keeps the rule's "
	    "inspect mode on a would-be denial");
	policy_free(p);
}

static void
test_private(void)
{
	struct policy *p;
	const struct policy_rule *r;

	p = load("{'policy':'p','rules':["
	    "{'id':'r0','cidr':'10.1.0.0/16'},"
	    "{'id':'r1','cidr':'0.0.0.0/0'},"
	    "{'id':'r2','cidr':'8.0.0.0/6'},"
	    "{'id':'r3','cidr':'127.0.0.0/8'},"
	    "{'id':'r4','cidr':'8.8.8.0/24'},"
	    "{'id':'r5','cidr':'fd00::/8'},"
	    "{'id':'r6','cidr':'::/0'},"
	    "{'id':'r7','host':'db.internal.example'},"
	    "{'id':'r8','cidr':'10.0.0.0/7'},"
	    "{'id':'r9','cidr':'172.16.0.0/12'},"
	    "{'id':'r10','cidr':'169.254.169.254/32'}]}");
	r = p->p_rules;
	is_int(1, policy_rule_allows_private(&r[0], addr("10.1.2.3")),
	    "10.1.0.0/16 names 10.1.2.3");
	is_int(1, policy_rule_allows_private(&r[0], addr("::ffff:10.1.2.3")),
	    "10.1.0.0/16 names ::ffff:10.1.2.3");
	is_int(0, policy_rule_allows_private(&r[0], addr("10.2.0.1")),
	    "10.1.0.0/16 does not name 10.2.0.1");
	is_int(0, policy_rule_allows_private(&r[1], addr("10.1.2.3")),
	    "0.0.0.0/0 does not name 10.1.2.3");
	is_int(0, policy_rule_allows_private(&r[2], addr("10.1.2.3")),
	    "8.0.0.0/6 does not name 10.1.2.3 (covers public space)");
	is_int(0, policy_rule_allows_private(&r[3], addr("127.0.0.1")),
	    "127.0.0.0/8 never opens the floor");
	is_int(0, policy_rule_allows_private(&r[4], addr("8.8.8.8")),
	    "a public address is not private");
	is_int(1, policy_rule_allows_private(&r[5], addr("fd00::1")),
	    "fd00::/8 names fd00::1");
	is_int(0, policy_rule_allows_private(&r[6], addr("fd00::1")),
	    "::/0 does not name fd00::1");
	is_int(0, policy_rule_allows_private(&r[7], addr("10.1.2.3")),
	    "a host rule names no address");
	is_int(0, policy_rule_allows_private(&r[8], addr("10.1.2.3")),
	    "10.0.0.0/7 (10/8 + public 11/8) does not name 10.1.2.3");
	is_int(1, policy_rule_allows_private(&r[9], addr("172.31.0.1")),
	    "172.16.0.0/12 names 172.31.0.1");
	is_int(0, policy_rule_allows_private(&r[10], addr("169.254.169.254")),
	    "the metadata address is never opened");
	is_int(0, policy_rule_allows_private(NULL, addr("10.1.2.3")), "NULL rule");
	policy_free(p);
}

int
main(void)
{
	plan_lazy();
	test_names();
	test_addresses();
	test_http();
	test_report();
	test_private();
	is_string("unknown", policy_reason_str((enum policy_reason)99),
	    "unknown reason code");
	is_string("address_in_floor",
	    policy_reason_str(POLICY_REASON_ADDRESS_IN_FLOOR), "floor code");
	is_string("private_address",
	    policy_reason_str(POLICY_REASON_PRIVATE_ADDRESS), "private code");
	return 0;
}
