/*
 * tests/unit/policy_layers.c: policies made of several files (policies/SCHEMA.md,
 * "Bases"): the evaluation order (every deny first, the bases' in the order listed
 * and depth first, then the policy's own; then its own allows, then the bases'),
 * deny rules beating allow rules across files, the stricter limits, mode and
 * upstream_proxy across files, cycles, missing bases, the depth limit, error
 * positions in the file that names the base, deny rules that decide requests
 * against spliced connections, the hash over every file, bundles read from disk
 * and loaded without it, and policy_load_layers()' extra layers.
 *
 * Documents are written with single quotes for readability; "'" becomes '"'.
 */
#include <sys/stat.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netaddr.h"
#include "policy.h"
#include "policy_test.h"
#include "../tap.h"

static struct policy_errors errs;

/* Adds the document src to b as file. */
static void
add(struct policy_bundle *b, const char *file, const char *src)
{
	char *s = policy_test_dq(src);

	if (policy_bundle_add(b, file, s, strlen(s), NULL) == -1)
		bail("out of memory");
	free(s);
}

static void
show_errors(void)
{
	policy_errors_diag(&errs);
}

/* Loads b (its first file), expecting success. */
static struct policy * __attribute__((format(printf, 2, 3)))
good(const struct policy_bundle *b, const char *fmt, ...)
{
	struct policy *p;
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	policy_errors_free(&errs);
	p = policy_load_bundle(b, &errs);
	if (!ok(p != NULL && errs.n == 0, "loads: %s", what))
		show_errors();
	return p;
}

/* Loads b expecting exactly one error, formatted as want (a prefix of it). */
static void
bad(const struct policy_bundle *b, const char *want, const char *what)
{
	struct policy *p;
	char line[1024];

	policy_errors_free(&errs);
	p = policy_load_bundle(b, &errs);
	if (!ok(p == NULL && errs.n == 1, "refused with one error: %s", what)) {
		show_errors();
		policy_free(p);
		return;
	}
	policy_error_fmt(&errs.v[0], line, sizeof(line));
	if (!ok(strncmp(line, want, strlen(want)) == 0, "  %s", want))
		diag("  got: %s", line);
}

/* "file:id" of rule i, to compare orders. */
static const char *
rule_at(const struct policy *p, size_t i)
{
	static char buf[256];

	if (i >= p->p_nrules)
		return "(none)";
	snprintf(buf, sizeof(buf), "%s:%s", p->p_rules[i].pr_file,
	    p->p_rules[i].pr_id);
	return buf;
}

/* The verdict on host:port (a request when method is set), as "allow FILE:ID"... */
static const char *
decide(const struct policy *p, const char *host, const struct netaddr *a,
    uint16_t port, enum policy_proto proto, const char *method, const char *path)
{
	static char buf[512];
	struct policy_query q = { host, a, port, proto, method, path };
	struct policy_verdict v;

	policy_decide(p, &q, &v);
	snprintf(buf, sizeof(buf), "%s%s %s %s:%s%s", v.pv_allow ? "allow" : "deny",
	    v.pv_would_deny ? "(would deny)" : "", policy_reason_str(v.pv_reason),
	    v.pv_rule != NULL ? v.pv_rule->pr_file : "-",
	    v.pv_rule != NULL ? v.pv_rule->pr_id : "-",
	    v.pv_rule != NULL && v.pv_tls == POLICY_TLS_INSPECT ? " inspect" : "");
	return buf;
}

static void
test_order(void)
{
	struct policy_bundle b = { NULL, 0 };
	struct policy *p;
	size_t i;
	static const char *const want[] = {
		"d.json:d-deny", "b.json:b-deny", "c.json:c-deny", "own.json:own-deny",
		"own.json:own-allow", "b.json:b-allow", "d.json:d-allow",
		"c.json:c-allow",
	};

	/* own -> [b, c]; b -> [d]: a tree, each file's rules around its bases'. */
	add(&b, "own.json", "{'policy':'own','base':['b.json','c.json'],'rules':["
	    "{'id':'own-allow','host':'own.test'},"
	    "{'id':'own-deny','action':'deny','host':'x.own.test'}]}");
	add(&b, "b.json", "{'policy':'b','base':['d.json'],'rules':["
	    "{'id':'b-deny','action':'deny','host':'x.b.test'},"
	    "{'id':'b-allow','host':'b.test'}]}");
	add(&b, "c.json", "{'policy':'c','rules':[{'id':'c-allow','host':'c.test'},"
	    "{'id':'c-deny','action':'deny','host':'x.c.test'}]}");
	add(&b, "d.json", "{'policy':'d','rules':[{'id':'d-allow','host':'d.test'},"
	    "{'id':'d-deny','action':'deny','host':'x.d.test'}]}");
	if ((p = good(&b, "a policy with two bases, one with a base")) != NULL &&
	    is_int(8, p->p_nrules, "eight rules")) {
		for (i = 0; i < 8; i++)
			is_string(want[i], rule_at(p, i), "rule %zu", i);
		is_int(1, p->p_rules[0].pr_index, "pr_index: d-deny is d's rules[1]");
		is_int(1, p->p_rules[3].pr_index, "own-deny is own's rules[1]");
		is_int(4, p->p_nfiles, "four files");
		is_string("own.json", p->p_files[0]->ps_file, "p_files[0]: its own");
		is_string("b.json", p->p_files[1]->ps_file, "then b (listed first)");
		is_string("d.json", p->p_files[2]->ps_file, "then b's base");
		is_string("c.json", p->p_files[3]->ps_file, "then c");
		is_int(2, p->p_files[2]->ps_depth, "d is two levels down");
		is_string("d", p->p_files[2]->ps_name, "each file's own name");
		is_string("own", p->p_name, "the policy's name is its own file's");
		is_string("own.json", p->p_file, "p_file: the policy's own");
	}
	policy_free(p);
	policy_bundle_free(&b);

	/* A diamond: own -> [b, c], both -> [d]: d is one layer, at its first place. */
	add(&b, "own.json", "{'policy':'own','base':['b.json','c.json'],'rules':[]}");
	add(&b, "b.json", "{'policy':'b','base':['d.json'],'rules':["
	    "{'id':'b','host':'b.test'}]}");
	add(&b, "c.json", "{'policy':'c','base':['d.json'],'rules':["
	    "{'id':'c','host':'c.test'}]}");
	add(&b, "d.json", "{'policy':'d','rules':[{'id':'d','host':'d.test'}]}");
	if ((p = good(&b, "a diamond")) != NULL && is_int(3, p->p_nrules,
	    "d's rule once")) {
		is_string("b.json:b", rule_at(p, 0), "b");
		is_string("d.json:d", rule_at(p, 1), "d after b (b's base)");
		is_string("c.json:c", rule_at(p, 2), "c last");
		is_int(4, p->p_nfiles, "four files");
	}
	policy_free(p);
	policy_bundle_free(&b);
}

/* One query and the verdict it must get (decide()'s form). */
struct want {
	const char	*w_verdict;
	const char	*w_host;
	const char	*w_addr;	/* or NULL */
	uint16_t	 w_port;
	enum policy_proto w_proto;
	const char	*w_method;	/* NULL: a connection */
	const char	*w_path;
	const char	*w_what;
};

static void
expect(const struct policy *p, const struct want *w, size_t n)
{
	struct netaddr a;
	size_t i;

	for (i = 0; i < n; i++) {
		if (w[i].w_addr != NULL && netaddr_parse(w[i].w_addr, &a) == -1)
			bail("bad test address %s", w[i].w_addr);
		is_string(w[i].w_verdict, decide(p, w[i].w_host, w[i].w_addr != NULL ?
		    &a : NULL, w[i].w_port, w[i].w_proto, w[i].w_method,
		    w[i].w_path), "%s", w[i].w_what);
	}
}

#define TLS	POLICY_PROTO_TLS
#define HTTP	POLICY_PROTO_HTTP
#define TCP	POLICY_PROTO_TCP

static void
test_deny_beats_allow(void)
{
	static const struct want w[] = {
		{ "deny denied_by_rule /p/org/baseline.json:no-evil",
		    "evil.example.com", NULL, 443, TLS, NULL, NULL,
		    "a base's deny beats the sandbox's own allow" },
		{ "deny denied_by_rule /p/org/baseline.json:no-evil",
		    "evil.example.com", NULL, 8080, HTTP, "GET", "/",
		    "... on every port and protocol (no ports, no protocol: all)" },
		{ "allow none /p/own.json:example", "good.example.com", NULL, 443,
		    TLS, NULL, NULL, "positive control: another name of the "
		    "wildcard is allowed" },
		{ "deny denied_by_rule /p/own.json:no-paste", "paste.example.org",
		    NULL, 443, TLS, NULL, NULL,
		    "the sandbox's own deny beats a base's allow" },
		{ "allow none /p/org/baseline.json:any-example-org",
		    "docs.example.org", NULL, 443, TLS, NULL, NULL,
		    "positive control: the base's allow for another name" },
		{ "allow none /p/own.json:example", "www.example.com", NULL, 443,
		    TLS, NULL, NULL,
		    "the sandbox's own allow is found before the base's" },
		{ "allow none /p/org/baseline.json:wide", "www.example.com", NULL,
		    8443, TLS, NULL, NULL, "the base's allow where the sandbox's "
		    "says nothing (port 8443)" },
		{ "deny name_not_allowed -:-", "other.test", NULL, 443, TLS, NULL,
		    NULL, "a name no file names" },
	};
	struct policy_bundle b = { NULL, 0 };
	struct policy *p;

	add(&b, "/p/own.json", "{'policy':'own','base':['org/baseline.json'],"
	    "'rules':[{'id':'example','host':'*.example.com'},"
	    "{'id':'api','host':'api.example.com','inject':[{'secret':'k',"
	    "'header':'Authorization'}]},"
	    "{'id':'no-paste','action':'deny','host':'paste.example.org'}]}");
	add(&b, "/p/org/baseline.json", "{'policy':'org','rules':["
	    "{'id':'no-evil','action':'deny','host':'evil.example.com'},"
	    "{'id':'any-example-org','host':'*.example.org'},"
	    "{'id':'wide','host':'*.example.com','ports':[443,8443]}]}");
	if ((p = good(&b, "a sandbox policy on an org baseline")) != NULL)
		expect(p, w, sizeof(w) / sizeof(w[0]));
	policy_free(p);
	policy_bundle_free(&b);

	/* A sandbox's inject rule for one name before a base's wildcard. */
	add(&b, "own.json", "{'policy':'own','base':['base.json'],'rules':["
	    "{'id':'api','host':'api.example.com','inject':[{'secret':'k',"
	    "'header':'Authorization'}]}]}");
	add(&b, "base.json", "{'policy':'base','rules':[{'id':'all',"
	    "'host':'*.example.com'}]}");
	if ((p = good(&b, "an inject rule over a base's wildcard")) != NULL)
		is_string("allow none own.json:api inspect",
		    decide(p, "api.example.com", NULL, 443, POLICY_PROTO_TLS, NULL,
		    NULL), "the sandbox's inject rule decides api.example.com");
	policy_free(p);
	policy_bundle_free(&b);
}

/* Deny rules of their own: defaults, matching, requests, report mode. */
static void
test_deny_rules(void)
{
	static const struct want w[] = {
		{ "deny denied_by_rule p.json:ssh-only", "git.test", NULL, 443, TCP,
		    NULL, NULL, "a deny rule's port" },
		{ "allow none p.json:git", "git.test", NULL, 22, TCP, NULL, NULL,
		    "positive control: another port of the allow rule" },
		{ "deny denied_by_rule p.json:no-db", NULL, "10.1.2.3", 5432, TCP,
		    NULL, NULL, "a cidr deny rule" },
		{ "deny denied_by_rule p.json:tls-only", "mixed.test", NULL, 443, TLS,
		    NULL, NULL, "a deny rule's protocol: TLS refused" },
		{ "allow none p.json:mixed", "mixed.test", NULL, 443, TCP, NULL, NULL,
		    "... other bytes go on to the allow rule" },
		{ "allow none p.json:api inspect", "api.test", NULL, 443, TLS, NULL,
		    NULL, "a deny rule with methods and paths does not refuse an "
		    "inspected connection" },
		{ "deny denied_by_rule p.json:no-admin inspect", "api.test", NULL,
		    443, TLS, "POST", "/admin/users",
		    "... it refuses a request it matches" },
		{ "deny denied_by_rule p.json:no-admin inspect", "api.test", NULL,
		    443, TLS, "DELETE", "/x/../admin", "... by the normalised path" },
		{ "allow none p.json:api inspect", "api.test", NULL, 443, TLS, "GET",
		    "/admin/users", "positive control: another method" },
		{ "allow none p.json:api inspect", "api.test", NULL, 443, TLS, "POST",
		    "/users", "positive control: another path" },
		{ "deny invalid_path p.json:no-admin inspect", "api.test", NULL, 443,
		    TLS, "POST", "/admin%2Fusers",
		    "a path it cannot judge is refused, not let past it" },
		/*
		 * A cidr rule over the mapped pool would carry api.test as raw
		 * TCP: the deny rule could not see the requests.
		 */
		{ "deny denied_by_rule p.json:no-admin", "api.test", "198.18.0.9",
		    443, TLS, NULL, NULL, "TLS to the name that a cidr rule would "
		    "relay uninspected: refused" },
		{ "allow none p.json:any", "api.test", "198.18.0.9", 443, TCP, NULL,
		    NULL, "positive control: other bytes there carry no request "
		    "to refuse" },
	};
	static const struct want wr[] = {
		{ "allow(would deny) denied_by_rule r.json:no", "a.test", NULL, 443,
		    TLS, NULL, NULL,
		    "report mode: let through (spliced), the deny rule named" },
		{ "allow(would deny) denied_by_rule r.json:no-post inspect", "b.test",
		    NULL, 443, TLS, "POST", "/",
		    "report mode: a request let through on its inspected connection" },
	};
	struct policy_bundle b = { NULL, 0 };
	struct netaddr a;
	struct policy *p;

	if (netaddr_parse("10.1.2.3", &a) == -1)
		bail("netaddr_parse");
	add(&b, "p.json", "{'policy':'p','rules':["
	    "{'id':'ssh-only','action':'deny','host':'git.test','ports':[443]},"
	    "{'id':'no-db','action':'deny','cidr':'10.1.2.0/24'},"
	    "{'id':'tls-only','action':'deny','host':'mixed.test','protocol':'tls'},"
	    "{'id':'no-admin','action':'deny','host':'api.test','http':{"
	    "'methods':['POST','DELETE'],'paths':['/admin/**']}},"
	    "{'id':'git','host':'git.test','ports':[22,443],'protocol':'tcp'},"
	    "{'id':'db','cidr':'10.1.0.0/16','ports':[5432],'protocol':'tcp'},"
	    "{'id':'mixed','host':'mixed.test','ports':[443],'protocol':'tcp'},"
	    "{'id':'any','cidr':'198.18.0.0/15','ports':[443],'protocol':'tcp'},"
	    "{'id':'api','host':'api.test','tls':'inspect'}]}");
	if ((p = good(&b, "deny rules of every kind")) != NULL) {
		ok(p->p_rules[0].pr_nports == 1 && p->p_rules[0].pr_ports[0] == 443,
		    "ports as written");
		is_int(0, p->p_rules[1].pr_nports, "no ports: every port (0)");
		is_int(POLICY_PROTO_TCP, p->p_rules[1].pr_proto,
		    "no protocol: any bytes");
		is_int(POLICY_TLS_SPLICE, p->p_rules[3].pr_tls,
		    "a deny rule decides no mode");
		ok(!policy_rule_allows_private(&p->p_rules[1], &a),
		    "a cidr deny rule opens no private address");
		expect(p, w, sizeof(w) / sizeof(w[0]));
	}
	policy_free(p);
	policy_bundle_free(&b);

	/* Report mode: a deny rule's would-be denial. */
	add(&b, "r.json", "{'policy':'r','mode':'report','rules':["
	    "{'id':'no','action':'deny','host':'a.test'},"
	    "{'id':'no-post','action':'deny','host':'b.test','http':"
	    "{'methods':['POST']}},"
	    "{'id':'a','host':'a.test','tls':'inspect'},"
	    "{'id':'b','host':'b.test','tls':'inspect'}]}");
	if ((p = good(&b, "report mode with deny rules")) != NULL)
		expect(p, wr, sizeof(wr) / sizeof(wr[0]));
	policy_free(p);
	policy_bundle_free(&b);
}

/* The keys of a deny rule: what it refuses, what does not apply. */
static void
test_deny_schema(void)
{
	struct policy_bundle b = { NULL, 0 };
	static const struct {
		const char *rule, *want;
	} t[] = {
		{ "{'id':'x','action':'refuse','host':'a.test'}",
		    "t.json:1:34: $.rules[0].action: \"refuse\" is not an action" },
		{ "{'id':'x','action':'deny','host':'a.test','tls':'inspect'}",
		    "t.json:1:66: $.rules[0].tls: \"tls\" does not apply to a deny rule" },
		{ "{'id':'x','action':'deny','host':'a.test','inject':[{'secret':'s',"
		    "'header':'X'}]}",
		    "t.json:1:66: $.rules[0].inject: \"inject\" does not apply" },
		{ "{'id':'x','action':'deny','host':'a.test','http':{'websocket':false}}",
		    "t.json:1:74: $.rules[0].http.websocket: \"websocket\" does not "
		    "apply to a deny rule" },
		{ "{'id':'x','action':'deny','host':'a.test','http':{'forwarded':true}}",
		    "t.json:1:74: $.rules[0].http.forwarded: \"forwarded\" does not" },
		{ "{'id':'x','action':'deny','cidr':'10.0.0.0/8','http':{'methods':"
		    "['GET']}}",
		    "t.json:1:70: $.rules[0].http: a cidr rule cannot decide requests" },
		{ "{'id':'x','action':'deny','host':'a.test','protocol':'tcp','http':"
		    "{'methods':['GET']}}",
		    "t.json:1:83: $.rules[0].http: \"http\" does not apply to "
		    "\"protocol\": \"tcp\"" },
	};
	char doc[512];
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(doc, sizeof(doc), "{'policy':'t','rules':[%s]}", t[i].rule);
		add(&b, "t.json", doc);
		bad(&b, t[i].want, t[i].rule);
		policy_bundle_free(&b);
	}
	/* A deny rule with http and no protocol: requests over TLS and plain HTTP. */
	add(&b, "t.json", "{'policy':'t','rules':[{'id':'x','action':'deny',"
	    "'host':'a.test','http':{'methods':['PUT']}},{'id':'a','host':'a.test',"
	    "'ports':[80],'protocol':'http'}]}");
	{
		struct policy *p = good(&b, "a deny rule with http, no protocol");

		if (p != NULL)
			is_string("deny denied_by_rule t.json:x", decide(p, "a.test",
			    NULL, 80, POLICY_PROTO_HTTP, "PUT", "/"),
			    "it refuses a plain-HTTP request");
		policy_free(p);
	}
	policy_bundle_free(&b);
	/* Two deny rules for one destination: not "can never match". */
	add(&b, "t.json", "{'policy':'t','rules':[{'id':'x','action':'deny',"
	    "'host':'a.test','http':{'methods':['PUT']}},{'id':'y','action':'deny',"
	    "'host':'a.test','http':{'methods':['POST']}}]}");
	policy_free(good(&b, "two deny rules for one host"));
	policy_bundle_free(&b);
}

/* A deny rule deciding requests over a connection an allow rule splices. */
static void
test_unseen(void)
{
	static const struct {
		const char *own, *org, *want, *what;
	} t[] = {
		{ "{'id':'gh','host':'api.github.com'}",
		    "{'id':'read-only','action':'deny','host':'*.github.com','http':"
		    "{'methods':['POST']}}",
		    "own.json:2:3: $.rules[0]: rule \"gh\" splices api.github.com, "
		    "where deny rule \"read-only\" of org.json refuses requests by "
		    "method or path", "a spliced name under a base's method deny" },
		{ "{'id':'gh','host':'api.github.com','tls':'inspect'},"
		    "{'id':'gh-other','host':'github.com'},"
		    "{'id':'gh-alt','host':'api.github.com','ports':[8443]}",
		    "{'id':'read-only','action':'deny','host':'*.github.com',"
		    "'ports':[443],'http':{'methods':['POST']}}", NULL,
		    "positive control: inspected; another name; another port" },
		/* A splice rule that an earlier inspecting rule shadows there. */
		{ "{'id':'api','host':'api.github.com','ports':[443,8443],"
		    "'tls':'inspect'}",
		    "{'id':'no-post','action':'deny','host':'api.github.com','http':"
		    "{'methods':['POST']}},{'id':'all','host':'*.github.com'}", NULL,
		    "the base's wildcard splice never decides the denied name: the "
		    "policy's inspect rule comes first" },
		{ "{'id':'api','host':'api.github.com','tls':'inspect'}",
		    "{'id':'no-post','action':'deny','host':'*.github.com','http':"
		    "{'methods':['POST']}},\n {'id':'all','host':'*.github.com'}",
		    "org.json:2:2: $.rules[1]: rule \"all\" splices *.github.com, "
		    "where deny rule \"no-post\" of org.json", "an inspect rule for "
		    "one name leaves the others of a wildcard to the splice" },
		{ "{'id':'api','host':'api.github.com','tls':'inspect'}",
		    "{'id':'no-post','action':'deny','host':'api.github.com','http':"
		    "{'methods':['POST']}},\n {'id':'all','host':'*.github.com',"
		    "'ports':[443,8443]}",
		    "org.json:2:2: $.rules[1]: rule \"all\" splices *.github.com",
		    "... and so does one for another port (8443)" },
	};
	struct policy_bundle b = { NULL, 0 };
	char doc[1024];
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(doc, sizeof(doc), "{'policy':'own','base':['org.json'],"
		    "'rules':[\n  %s]}", t[i].own);
		add(&b, "own.json", doc);
		snprintf(doc, sizeof(doc), "{'policy':'org','rules':[%s]}", t[i].org);
		add(&b, "org.json", doc);
		if (t[i].want != NULL)
			bad(&b, t[i].want, t[i].what);
		else
			policy_free(good(&b, "%s", t[i].what));
		policy_bundle_free(&b);
	}
}

/* own.json on base.json, loaded as good() does. */
static struct policy *
pair(const char *own, const char *base, const char *what)
{
	struct policy_bundle b = { NULL, 0 };
	struct policy *p;

	add(&b, "own.json", own);
	add(&b, "base.json", base);
	p = good(&b, "%s", what);
	policy_bundle_free(&b);
	return p;
}

static void
test_top_keys(void)
{
	static const struct {
		const char *own, *base;
		enum policy_mode want;
	} modes[] = {
		{ ",'mode':'report'", "", POLICY_MODE_ENFORCE },
		{ ",'mode':'report'", ",'mode':'report'", POLICY_MODE_REPORT },
		{ "", ",'mode':'report'", POLICY_MODE_ENFORCE },
		{ ",'mode':'enforce'", ",'mode':'report'", POLICY_MODE_ENFORCE },
	};
	struct policy_bundle b = { NULL, 0 };
	char own[256], base[256];
	struct policy *p;
	size_t i;

	p = pair("{'policy':'own','base':['base.json'],'rules':[],"
	    "'limits':{'connections':20,'requests_per_second':5,'h2_streams':0,"
	    "'bytes_per_second':0}}", "{'policy':'base','rules':[],'limits':{"
	    "'connections':10,'requests_per_second':50,'h2_streams':40,"
	    "'bytes_per_second':1000000}}", "limits in both");
	if (p != NULL) {
		is_int(10, p->p_limits.pl_connections, "connections: the base's 10");
		is_int(5, p->p_limits.pl_requests_per_second,
		    "requests_per_second: its own 5");
		is_int(40, p->p_limits.pl_h2_streams, "h2_streams: 40 over 0 (the "
		    "default)");
		is_int(1000000, (long long)p->p_limits.pl_bytes_per_second,
		    "bytes_per_second: a limit over 0 (unlimited)");
		is_int(0, p->p_limits.pl_connections_per_second, "none: 0");
	}
	policy_free(p);

	/* Report only when every file says so; no "mode" is enforce. */
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		snprintf(own, sizeof(own), "{'policy':'own','base':['base.json'],"
		    "'rules':[]%s}", modes[i].own);
		snprintf(base, sizeof(base), "{'policy':'base','rules':[]%s}",
		    modes[i].base);
		if ((p = pair(own, base, own)) != NULL)
			is_string(policy_mode_str(modes[i].want),
			    policy_mode_str(p->p_mode), "  over a base with '%s'",
			    modes[i].base);
		policy_free(p);
	}

	if ((p = pair("{'policy':'own','base':['base.json'],'rules':[]}",
	    "{'policy':'base','rules':[],'upstream_proxy':'direct'}",
	    "a base's upstream_proxy")) != NULL)
		is_int(POLICY_UPSTREAM_DIRECT, p->p_upstream, "the base's direct");
	policy_free(p);
	if ((p = pair("{'policy':'own','base':['base.json'],'rules':[],"
	    "'upstream_proxy':{'url':'http://proxy.corp.test:3128'}}",
	    "{'policy':'base','rules':[],'upstream_proxy':"
	    "{'url':'http://proxy.corp.test:3128/'}}", "the same proxy in both")) !=
	    NULL)
		is_int(POLICY_UPSTREAM_PROXY, p->p_upstream, "the proxy");
	policy_free(p);
	add(&b, "own.json", "{'policy':'own','base':['base.json'],'rules':[],\n"
	    " 'upstream_proxy':'direct'}");
	add(&b, "base.json", "{'policy':'base','rules':[],'upstream_proxy':"
	    "{'url':'http://proxy.corp.test:3128'}}");
	bad(&b, "base.json:1:29: $.upstream_proxy: differs from the "
	    "\"upstream_proxy\" of own.json", "two files' proxies disagree");
	policy_bundle_free(&b);
}

/* b: l0.json -> l1.json -> ... -> l<levels>.json, each the next one's base. */
static void
chain(struct policy_bundle *b, int levels)
{
	char name[32], doc[256];
	int i;

	for (i = 0; i <= levels; i++) {
		snprintf(name, sizeof(name), "l%d.json", i);
		if (i < levels)
			snprintf(doc, sizeof(doc), "{'policy':'l%d','base':['l%d.json'],"
			    "'rules':[]}", i, i + 1);
		else
			snprintf(doc, sizeof(doc), "{'policy':'l%d','rules':[]}", i);
		add(b, name, doc);
	}
}

static void
test_base_errors(void)
{
	static const struct {
		const char *doc, *want, *what;
	} one[] = {
		{ "{'policy':'a','base':['a.json'],'rules':[]}",
		    "a.json:1:23: $.base[0]: a cycle of bases: a.json -> a.json",
		    "a file naming itself" },
		{ "{'policy':'a','rules':[],'base':[]}",
		    "a.json:1:26: $.base: must not be empty", "an empty base list" },
		{ "{'policy':'a','rules':[],'base':['x.json','x.json']}",
		    "a.json:1:43: $.base[1]: duplicate base", "a base named twice" },
		{ "{'policy':'a','rules':[],'base':'x.json'}",
		    "a.json:1:26: $.base: must be an array", "base not an array" },
		{ "{'policy':'a','rules':[],'base':['']}",
		    "a.json:1:34: $.base[0]: a base must be a file name",
		    "an empty name" },
	};
	struct policy_bundle b = { NULL, 0 };
	struct policy *p;
	size_t i;

	for (i = 0; i < sizeof(one) / sizeof(one[0]); i++) {
		add(&b, "a.json", one[i].doc);
		bad(&b, one[i].want, one[i].what);
		policy_bundle_free(&b);
	}
	add(&b, "a.json", "{'policy':'a','base':['b.json'],'rules':[]}");
	add(&b, "b.json", "{'policy':'b','rules':[],\n  'base':['./a.json']}");
	bad(&b, "b.json:2:11: $.base[0]: a cycle of bases: a.json -> b.json -> "
	    "a.json", "a cycle (through another spelling of the name)");
	policy_bundle_free(&b);

	add(&b, "/etc/p/a.json", "{'policy':'a','rules':[],'base':[\n"
	    "  'gone.json']}");
	bad(&b, "/etc/p/a.json:2:3: $.base[0]: base \"gone.json\" (/etc/p/gone.json): "
	    "not read", "a base missing from the bundle");
	policy_bundle_free(&b);

	/* Errors inside a base are the base's. */
	add(&b, "a.json", "{'policy':'a','base':['sub/b.json'],'rules':[]}");
	add(&b, "sub/b.json", "{'policy':'b','rules':[{'id':'r','host':'*.com'}]}");
	bad(&b, "sub/b.json:1:34: $.rules[0].host: invalid host pattern",
	    "an error in a base, under its own name");
	policy_bundle_free(&b);

	/* Depth: 8 levels of bases below the policy's own file load, 9 do not. */
	chain(&b, 8);
	if ((p = good(&b, "8 levels of bases")) != NULL)
		is_int(9, p->p_nfiles, "nine files");
	policy_free(p);
	policy_bundle_free(&b);
	chain(&b, 9);
	bad(&b, "l8.json:1:24: $.base[0]: more than 8 levels of bases: l0.json -> "
	    "l1.json", "9 levels");
	policy_bundle_free(&b);
}

/* ld_base_path() through what the loader asks the bundle for. */
static void
test_paths(void)
{
	static const struct {
		const char *from, *base, *want;
	} t[] = {
		{ "/etc/p/a.json", "b.json", "/etc/p/b.json" },
		{ "/etc/p/a.json", "../q/b.json", "/etc/q/b.json" },
		{ "/etc/p/a.json", "/abs/b.json", "/abs/b.json" },
		{ "/a.json", "./x//y/../b.json", "/x/b.json" },
		{ "/a.json", "../../b.json", "/b.json" },
		{ "a.json", "b.json", "b.json" },
		{ "d/a.json", "../../b.json", "../b.json" },
		{ "../d/a.json", "../b.json", "../b.json" },
		{ "<stdin>", "sub/b.json", "sub/b.json" },
	};
	struct policy_bundle b = { NULL, 0 };
	char doc[256];
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(doc, sizeof(doc), "{'policy':'a','base':['%s'],'rules':[]}",
		    t[i].base);
		add(&b, t[i].from, doc);
		add(&b, t[i].want, "{'policy':'b','rules':[]}");
		policy_free(good(&b, "from %s, base %s is %s", t[i].from,
		    t[i].base, t[i].want));
		policy_bundle_free(&b);
	}
}

/* The hash: of the bytes for one file; over every file's hash with bases. */
static void
test_hash(void)
{
	struct policy_bundle b = { NULL, 0 };
	struct policy *p, *one;
	char h1[65], h2[65];

	add(&b, "a.json", "{'policy':'a','rules':[]}");
	one = good(&b, "one file");
	policy_bundle_free(&b);
	add(&b, "a.json", "{'policy':'a','rules':[],'base':['b.json']}");
	add(&b, "b.json", "{'policy':'b','rules':[]}");
	p = good(&b, "with a base");
	policy_bundle_free(&b);
	if (one == NULL || p == NULL)
		goto out;
	is_string(one->p_files[0]->ps_hash, one->p_hash, "one file: its own hash");
	ok(strcmp(p->p_hash, p->p_files[0]->ps_hash) != 0 &&
	    strcmp(p->p_hash, p->p_files[1]->ps_hash) != 0,
	    "with a base: neither file's own hash");
	snprintf(h1, sizeof(h1), "%s", p->p_hash);
	policy_free(p);
	add(&b, "a.json", "{'policy':'a','rules':[],'base':['b.json']}");
	add(&b, "b.json", "{'policy':'b','rules':[] }");
	if ((p = good(&b, "the base changed by one byte")) != NULL) {
		snprintf(h2, sizeof(h2), "%s", p->p_hash);
		ok(strcmp(h1, h2) != 0, "a base's change changes the policy's hash");
	}
	policy_bundle_free(&b);
 out:
	policy_free(one);
	policy_free(p);
}

/* Extra layers: rules after the policy's, no mode or upstream_proxy. */
static void
test_layers(void)
{
	struct policy_bundle b = { NULL, 0 };
	const char *files[] = { "own.json", "approved.json" };
	struct policy *p;

	add(&b, "own.json", "{'policy':'own','base':['org.json'],'rules':["
	    "{'id':'own','host':'own.test'},"
	    "{'id':'own-deny','action':'deny','host':'bad.own.test'}]}");
	add(&b, "org.json", "{'policy':'org','rules':["
	    "{'id':'org-deny','action':'deny','host':'evil.test'},"
	    "{'id':'org','host':'*.org.test'}],'limits':{'connections':10}}");
	add(&b, "approved.json", "{'policy':'approved','rules':["
	    "{'id':'ok-evil','host':'evil.test'},"
	    "{'id':'no-x','action':'deny','host':'x.org.test'},"
	    "{'id':'later','host':'later.test'}],'limits':{'connections':5}}");
	policy_errors_free(&errs);
	p = policy_load_layers(&b, files, 2, &errs);
	if (ok(p != NULL, "a policy and an extra layer load")) {
		is_int(7, p->p_nrules, "seven rules");
		is_string("org.json:org-deny", rule_at(p, 0), "the base's deny");
		is_string("own.json:own-deny", rule_at(p, 1), "the policy's deny");
		is_string("approved.json:no-x", rule_at(p, 2), "then the layer's deny");
		is_string("own.json:own", rule_at(p, 3), "the policy's allow");
		is_string("org.json:org", rule_at(p, 4), "the base's allow");
		is_string("approved.json:ok-evil", rule_at(p, 5), "the layer's allows "
		    "last");
		is_string("approved.json:later", rule_at(p, 6), "in its order");
		is_string("deny denied_by_rule org.json:org-deny",
		    decide(p, "evil.test", NULL, 443, POLICY_PROTO_TLS, NULL, NULL),
		    "a layer's allow does not override a base's deny");
		is_string("deny denied_by_rule approved.json:no-x",
		    decide(p, "x.org.test", NULL, 443, POLICY_PROTO_TLS, NULL, NULL),
		    "a layer's deny beats a base's allow");
		is_int(5, p->p_limits.pl_connections, "limits: the layer's stricter");
		is_int(3, p->p_nfiles, "three files");
		is_int(1, p->p_files[2]->ps_layer, "the layer's file is layer 1");
		is_string("own", p->p_name, "the policy's name");
	} else
		show_errors();
	policy_free(p);
	policy_bundle_free(&b);

	add(&b, "own.json", "{'policy':'own','rules':[]}");
	add(&b, "approved.json", "{'policy':'approved','rules':[],'mode':'report'}");
	policy_errors_free(&errs);
	p = policy_load_layers(&b, files, 2, &errs);
	ok(p == NULL && errs.n == 1 && strstr(errs.v[0].pe_reason, "an extra layer "
	    "cannot set \"mode\"") != NULL, "an extra layer with a mode is refused");
	policy_free(p);
	policy_bundle_free(&b);
}

/* From the file system into a bundle; loaded from it with the files gone. */
static void
test_read(void)
{
	const char *dir = tap_tmpdir();
	struct policy_bundle b = { NULL, 0 };
	char own[512], base[512], sub[512], missing[512];
	struct policy *p;
	FILE *f;
	size_t i;

	snprintf(sub, sizeof(sub), "%s/org", dir);
	if (mkdir(sub, 0700) == -1)
		bail("mkdir %s", sub);
	snprintf(own, sizeof(own), "%s/own.json", dir);
	snprintf(base, sizeof(base), "%s/org/base.json", dir);
	if ((f = fopen(own, "w")) == NULL)
		bail("fopen %s", own);
	fputs("{\"policy\":\"own\",\"base\":[\"org/base.json\"],\"rules\":[]}\n", f);
	fclose(f);
	if ((f = fopen(base, "w")) == NULL)
		bail("fopen %s", base);
	fputs("{\"policy\":\"base\",\"rules\":[{\"id\":\"deny\",\"action\":\"deny\","
	    "\"host\":\"evil.test\"}]}\n", f);
	fclose(f);
	ok(policy_bundle_read(&b, own) == 0 && b.pb_n == 2, "read: two files");
	for (i = 0; i < b.pb_n; i++)
		ok(b.pb_v[i].pt_buf != NULL, "  %s read", b.pb_v[i].pt_file);
	if (b.pb_n == 2)
		is_string(base, b.pb_v[1].pt_file, "  the base by its joined path");
	unlink(own);
	unlink(base);
	if ((p = good(&b, "the bundle, with the files gone")) != NULL)
		is_string(base, p->p_rules[0].pr_file, "the rule's file");
	policy_free(p);
	policy_bundle_free(&b);

	/* A base that cannot be read: in the bundle with its error. */
	if ((f = fopen(own, "w")) == NULL)
		bail("fopen %s", own);
	fputs("{\"policy\":\"own\",\n \"base\":[\"nope.json\"],\"rules\":[]}\n", f);
	fclose(f);
	snprintf(missing, sizeof(missing), "%s/nope.json", dir);
	ok(policy_bundle_read(&b, own) == 0 && b.pb_n == 2 &&
	    b.pb_v[1].pt_buf == NULL && b.pb_v[1].pt_error != NULL,
	    "read: a missing base goes in with its error");
	{
		char want[2048];

		snprintf(want, sizeof(want), "%s:2:10: $.base[0]: base \"nope.json\" "
		    "(%s): cannot open: No such file or directory", own, missing);
		bad(&b, want, "the missing base, at the name that names it");
	}
	policy_bundle_free(&b);
	policy_errors_free(&errs);
	p = policy_load_file(own, &errs);
	ok(p == NULL && errs.n == 1, "policy_load_file: the same error");
	policy_free(p);
	unlink(own);
}

int
main(void)
{
	plan_lazy();
	test_order();
	test_deny_beats_allow();
	test_deny_rules();
	test_deny_schema();
	test_unseen();
	test_top_keys();
	test_base_errors();
	test_paths();
	test_hash();
	test_layers();
	test_read();
	policy_errors_free(&errs);
	return tap_failures() != 0;
}
