/*
 * tests/unit/policy_load.c: the policy loader: every schema rule, every refusal,
 * error collection with JSON paths and positions, files.
 *
 * Policies are written with single quotes for readability; load() turns every
 * "'" into '"' (a literal quote is written \u0027).
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy.h"
#include "policy_test.h"
#include "../tap.h"

static struct policy_errors errs;

static struct policy *
load(const char *src)
{
	struct policy *p;
	char *buf;

	policy_errors_free(&errs);
	buf = policy_test_dq(src);
	p = policy_load_buf(buf, strlen(buf), "t.json", &errs);
	free(buf);
	return p;
}

static void
show_errors(void)
{
	policy_errors_diag(&errs);
}

/* The document must fail with exactly one error at path whose reason has sub. */
static void
bad(const char *src, const char *path, const char *sub)
{
	struct policy *p;
	const struct policy_error *e;

	p = load(src);
	if (!ok(p == NULL && errs.n == 1, "refused with one error: %s", src)) {
		show_errors();
		policy_free(p);
		return;
	}
	e = &errs.v[0];
	if (path == NULL)
		ok(e->pe_path == NULL, "  no JSON path (got %s)",
		    e->pe_path ? e->pe_path : "none");
	else
		is_string(path, e->pe_path, "  at %s", path);
	if (!ok(strstr(e->pe_reason, sub) != NULL, "  reason mentions \"%s\"",
	    sub))
		diag("  reason: %s", e->pe_reason);
}

static struct policy *
good(const char *src)
{
	struct policy *p;

	p = load(src);
	if (!ok(p != NULL && errs.n == 0, "accepted: %s", src))
		show_errors();
	return p;
}

/* One rule object inside a minimal policy. */
#define R(rule)	"{'policy':'t','rules':[" rule "]}"

static void
test_valid(void)
{
	struct policy *p;
	const struct policy_rule *r;
	size_t i;

	p = good("{'policy':'deny-all','rules':[]}");
	if (p != NULL) {
		is_string("deny-all", p->p_name, "name");
		is_int(0, p->p_nrules, "no rules");
		is_int(POLICY_MODE_ENFORCE, p->p_mode, "mode defaults to enforce");
		is_int(64, strlen(p->p_hash), "hash is 64 hex digits");
		for (i = 0; i < 64 && strchr("0123456789abcdef", p->p_hash[i]); i++)
			;
		is_int(64, i, "hash is lower-case hex");
		ok(p->p_file == NULL, "no file for a buffer");
	}
	policy_free(p);
	/* SHA-256 of exactly these bytes (sha256sum). */
	p = policy_load_buf("{\"policy\":\"a\",\"rules\":[]}\n", 26, "x", &errs);
	if (ok(p != NULL, "hash test loads"))
		is_string("3de5133095a9589c86e20e82cec8270820d39420887f2ace854ff8f8"
		    "2fbd11b6", p->p_hash, "hash is SHA-256 of the bytes "
		    "(sha256sum)");
	policy_free(p);

	p = good("{'policy':'a.B_c-9','mode':'report','rules':[],"
	    "'limits':{'connections':256,'connections_per_second':10,"
	    "'requests_per_second':50,'bytes_per_second':10485760000}}");
	if (p != NULL) {
		is_int(POLICY_MODE_REPORT, p->p_mode, "report mode");
		is_int(256, p->p_limits.pl_connections, "limits.connections");
		is_int(10, p->p_limits.pl_connections_per_second,
		    "limits.connections_per_second");
		is_int(50, p->p_limits.pl_requests_per_second,
		    "limits.requests_per_second");
		is_int(10485760000LL, (long long)p->p_limits.pl_bytes_per_second,
		    "limits.bytes_per_second above 2^32");
	}
	policy_free(p);

	p = good(R("{'id':'a','host':'API.GitHub.com.'},"
	    "{'id':'b','host':'*.pythonhosted.org','ports':[443,8443]},"
	    "{'id':'c','host':'example.org','protocol':'http'},"
	    "{'id':'d','host':'github.com','ports':[22],'protocol':'tcp'},"
	    "{'id':'e','host':'api.example.com','http':{'methods':['get','Post'],"
	    "'paths':['/repos/acme/*','/**'],'websocket':true}},"
	    "{'id':'f','host':'api.openai.com','inject':[{'secret':'openai_key',"
	    "'header':'Authorization','value':'Bearer {secret}'},"
	    "{'secret':'org.id-1','header':'OpenAI-Organization'}]},"
	    "{'id':'g','cidr':'10.1.0.0/16','ports':[5432],'protocol':'tcp'},"
	    "{'id':'h','cidr':'2001:db8::/32','tls':'splice'},"
	    "{'id':'i','host':'plain.example','protocol':'http',"
	    "'http':{'methods':['GET']}},"
	    "{'id':'j','host':'x.example','tls':'inspect'}"));

	if (p != NULL && is_int(10, p->p_nrules, "ten rules")) {
		r = &p->p_rules[0];
		is_string("api.github.com", r->pr_host, "host normalised");
		is_int(0, r->pr_is_cidr, "host rule");
		ok(r->pr_nports == 1 && r->pr_ports[0] == 443, "ports default 443");
		is_int(POLICY_PROTO_TLS, r->pr_proto, "protocol default tls");
		is_int(POLICY_TLS_SPLICE, r->pr_tls, "tls default splice");
		ok(r->pr_nmethods == 0 && r->pr_npaths == 0 && r->pr_ninject == 0,
		    "no http, no inject");
		r = &p->p_rules[1];
		is_string("*.pythonhosted.org", r->pr_host, "wildcard host");
		ok(r->pr_nports == 2 && r->pr_ports[0] == 443 &&
		    r->pr_ports[1] == 8443, "two ports");
		r = &p->p_rules[2];
		is_int(POLICY_PROTO_HTTP, r->pr_proto, "protocol http");
		ok(r->pr_nports == 1 && r->pr_ports[0] == 80,
		    "http ports default 80");
		r = &p->p_rules[3];
		is_int(POLICY_PROTO_TCP, r->pr_proto, "protocol tcp");
		ok(r->pr_nports == 1 && r->pr_ports[0] == 22, "port 22");
		r = &p->p_rules[4];
		is_int(POLICY_TLS_INSPECT, r->pr_tls, "http implies inspect");
		ok(r->pr_nmethods == 2 && strcmp(r->pr_methods[0], "GET") == 0 &&
		    strcmp(r->pr_methods[1], "POST") == 0, "methods upper-cased");
		ok(r->pr_npaths == 2 && strcmp(r->pr_paths[0],
		    "/repos/acme/*") == 0, "paths kept");
		is_int(1, r->pr_websocket, "websocket");
		r = &p->p_rules[5];
		is_int(POLICY_TLS_INSPECT, r->pr_tls, "inject implies inspect");
		if (is_int(2, r->pr_ninject, "two injections")) {
			is_string("openai_key", r->pr_inject[0].pi_secret, "secret");
			is_string("Authorization", r->pr_inject[0].pi_header,
			    "header");
			is_string("Bearer {secret}", r->pr_inject[0].pi_value,
			    "value");
			is_string("{secret}", r->pr_inject[1].pi_value,
			    "value defaults to {secret}");
		}
		is_int(0, r->pr_websocket, "websocket defaults to false");
		r = &p->p_rules[6];
		ok(r->pr_is_cidr && r->pr_cidr.nc_prefix == 16, "cidr rule");
		r = &p->p_rules[7];
		ok(r->pr_is_cidr && r->pr_cidr.nc_prefix == 32 &&
		    r->pr_tls == POLICY_TLS_SPLICE, "IPv6 cidr, splice");
		r = &p->p_rules[8];
		ok(r->pr_proto == POLICY_PROTO_HTTP && r->pr_nmethods == 1 &&
		    r->pr_ports[0] == 80, "plain http with methods");
		is_int(POLICY_TLS_INSPECT, p->p_rules[9].pr_tls, "explicit inspect");
	}
	policy_free(p);

	/* http.forwarded: airlock's own Forwarded on a rule that asks for it */
	p = good(R("{'id':'a','host':'x.example','http':{'forwarded':true}},"
	    "{'id':'b','host':'plain.example','protocol':'http',"
	    "'http':{'forwarded':false}},{'id':'c','host':'y.example','tls':'inspect'}"));
	if (p != NULL && is_int(3, p->p_nrules, "three rules")) {
		is_int(1, p->p_rules[0].pr_forwarded, "forwarded true");
		is_int(POLICY_TLS_INSPECT, p->p_rules[0].pr_tls,
		    "... implies inspect, as any http key");
		is_int(0, p->p_rules[1].pr_forwarded, "forwarded false");
		is_int(0, p->p_rules[2].pr_forwarded, "forwarded defaults to false");
	}
	policy_free(p);

	/* A subset of an earlier rule's ports is dead but accepted. */
	p = good(R("{'id':'a','host':'x.example','ports':[443,8443]},"
	    "{'id':'b','host':'x.example','ports':[443]}"));
	policy_free(p);
	/* Same ports, different hosts: fine. */
	p = good(R("{'id':'a','host':'x.example'},{'id':'b','host':'*.x.example'}"));
	policy_free(p);
}

static void
test_json_errors(void)
{
	struct policy *p;

	bad("{'policy':'a','rules':[]", NULL, "invalid JSON");
	bad("", NULL, "empty: a JSON object is expected");
	bad(" \n\t", NULL, "empty: a JSON object is expected");
	bad("{'policy':'a','rules':[],}", NULL, "invalid JSON");
	bad("{'policy':'a','rules':[]} x", NULL, "invalid JSON");
	bad("{'policy':'a\\u0000b','rules':[]}", NULL, "invalid JSON");
	bad("{'policy':'a','policy':'b','rules':[]}", "$.policy", "duplicate key");
	bad(R("{'id':'a','host':'x.example','host':'y.example'}"), "$.rules[0].host",
	    "duplicate key");
	bad("{'policy':'a','rules':[{'id':'a','host':'x.example'},"
	    "{'id':'b','host':'y.example','http':{'paths':['/'],'paths':['/x']}}]}",
	    "$.rules[1].http.paths", "duplicate key");
	p = load("{'policy':'a',\n 'rules':[],\n 'rules':[]}");
	ok(p == NULL && errs.n == 1 && errs.v[0].pe_line == 3,
	    "duplicate key error has its line (%d)",
	    errs.n ? errs.v[0].pe_line : -1);
	policy_free(p);
	bad("[]", "$", "must be a JSON object");
	bad("{'policy':'a','rules':[],'rule':[]}", "$.rule", "unknown key");
	bad("{'policy':'a','rules':[],'a b\\n':1}", "$[\"a b\\x0a\"]",
	    "unknown key \"a b\\x0a\"");
	bad("{'policy':'a','rules':[],'a\\\"b':1}", "$[\"a\\\"b\"]",
	    "unknown key \"a\\\"b\"");
	bad(R("{'id':'a','host':'x.example','hots':'y'}"), "$.rules[0].hots",
	    "unknown key");
	bad(R("{'id':'a','host':'x.example','http':{'method':['GET']}}"),
	    "$.rules[0].http.method", "unknown key");
	bad(R("{'id':'a','host':'x.example','inject':[{'secret':'s',"
	    "'header':'X-Key','valeu':'{secret}'}]}"),
	    "$.rules[0].inject[0].valeu", "unknown key");
	bad("{'policy':'a','rules':[],'limits':{'conns':1}}", "$.limits.conns",
	    "unknown key");
	/* Missing required keys. */
	bad("{'rules':[]}", "$", "missing required key \"policy\"");
	bad("{'policy':'a'}", "$", "missing required key \"rules\"");
	bad(R("{'host':'x.example'}"), "$.rules[0]", "missing required key \"id\"");
	bad(R("{'id':'a'}"), "$.rules[0]", "missing required key \"host\"");
	bad(R("{'id':'a','host':'x.example','inject':[{'header':'X-Key'}]}"),
	    "$.rules[0].inject[0]", "\"secret\"");
	bad(R("{'id':'a','host':'x.example','inject':[{'secret':'k'}]}"),
	    "$.rules[0].inject[0]", "\"header\"");
	/* Wrong types. */
	bad("{'policy':5,'rules':[]}", "$.policy", "must be a string");
	bad("{'policy':null,'rules':[]}", "$.policy", "not null");
	bad("{'policy':'a','rules':{}}", "$.rules", "must be an array");
	bad("{'policy':'a','rules':[],'mode':true}", "$.mode", "a boolean");
	bad("{'policy':'a','rules':[],'limits':[]}", "$.limits",
	    "must be an object");
	bad("{'policy':'a','rules':[],'limits':{'connections':'5'}}",
	    "$.limits.connections", "integer");
	bad("{'policy':'a','rules':[],'limits':{'connections':1.5}}",
	    "$.limits.connections", "integer");
	bad("{'policy':'a','rules':[],'limits':{'connections':-1}}",
	    "$.limits.connections", "between 0");
	bad("{'policy':'a','rules':[],'limits':{'requests_per_second':"
	    "4294967296}}", "$.limits.requests_per_second", "between 0");
	/* The HTTP/2 limits may lower airlock's own (100), never raise them. */
	p = good("{'policy':'a','rules':[],'limits':{'h2_streams':5,"
	    "'h2_resets_per_second':10,'h2_control_per_second':100}}");
	if (p != NULL) {
		is_int(5, p->p_limits.pl_h2_streams, "limits.h2_streams");
		is_int(10, p->p_limits.pl_h2_resets_per_second,
		    "limits.h2_resets_per_second");
		is_int(100, p->p_limits.pl_h2_control_per_second,
		    "limits.h2_control_per_second");
	}
	policy_free(p);
	bad("{'policy':'a','rules':[],'limits':{'h2_streams':101}}",
	    "$.limits.h2_streams", "between 0 and 100 (0: the default)");
	bad(R("'x'"), "$.rules[0]", "must be an object");
	bad(R("{'id':7,'host':'x.example'}"), "$.rules[0].id", "must be a string");
	bad(R("{'id':'a','host':['x.example']}"), "$.rules[0].host",
	    "must be a string");
	bad(R("{'id':'a','host':'x.example','ports':'443'}"),
	    "$.rules[0].ports", "must be an array");
	bad(R("{'id':'a','host':'x.example','ports':443}"),
	    "$.rules[0].ports", "must be an array");
	bad(R("{'id':'a','host':'x.example','ports':['443']}"),
	    "$.rules[0].ports[0]", "must be an integer");
	bad(R("{'id':'a','host':'x.example','ports':[443.0]}"),
	    "$.rules[0].ports[0]", "must be an integer");
	bad(R("{'id':'a','host':'x.example','http':[]}"), "$.rules[0].http",
	    "must be an object");
	bad(R("{'id':'a','host':'x.example','http':{'websocket':'yes'}}"),
	    "$.rules[0].http.websocket", "true or false");
	bad(R("{'id':'a','host':'x.example','http':{'forwarded':1}}"),
	    "$.rules[0].http.forwarded", "true or false");
	bad(R("{'id':'a','host':'x.example','tls':'splice','http':{'forwarded':true}}"),
	    "$.rules[0].http", "needs \"tls\": \"inspect\"");
	bad(R("{'id':'a','host':'x.example','forwarded':true}"),
	    "$.rules[0].forwarded", "unknown");
	bad(R("{'id':'a','host':'x.example','http':{'methods':[1]}}"),
	    "$.rules[0].http.methods[0]", "must be a string");
	bad(R("{'id':'a','host':'x.example','inject':{}}"),
	    "$.rules[0].inject", "must be an array");
	bad(R("{'id':'a','host':'x.example','inject':['k']}"),
	    "$.rules[0].inject[0]", "must be an object");
	/* Bad enum values. */
	bad("{'policy':'a','rules':[],'mode':'audit'}", "$.mode",
	    "not a mode");
	bad(R("{'id':'a','host':'x.example','protocol':'udp'}"),
	    "$.rules[0].protocol", "not a protocol");
	bad(R("{'id':'a','host':'x.example','protocol':'TLS'}"),
	    "$.rules[0].protocol", "not a protocol");
	bad(R("{'id':'a','host':'x.example','tls':'decrypt'}"),
	    "$.rules[0].tls", "not a TLS mode");
	/* Empty arrays. */
	bad(R("{'id':'a','host':'x.example','ports':[]}"), "$.rules[0].ports",
	    "must not be empty");
	bad(R("{'id':'a','host':'x.example','http':{'methods':[]}}"),
	    "$.rules[0].http.methods", "must not be empty");
	bad(R("{'id':'a','host':'x.example','http':{'paths':[]}}"),
	    "$.rules[0].http.paths", "must not be empty");
	bad(R("{'id':'a','host':'x.example','inject':[]}"),
	    "$.rules[0].inject", "must not be empty");
	/* Names. */
	bad("{'policy':'','rules':[]}", "$.policy", "not a valid policy name");
	bad("{'policy':'a b','rules':[]}", "$.policy", "not a valid policy name");
	bad("{'policy':'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaa','rules':[]}", "$.policy", "not a valid policy name");
	p = good("{'policy':'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaa','rules':[]}");
	policy_free(p);
	bad(R("{'id':'a/b','host':'x.example'}"), "$.rules[0].id",
	    "not a valid rule id");
	bad(R("{'id':'a','host':'x.example'},{'id':'a','host':'y.example'}"),
	    "$.rules[1].id", "duplicate rule id");
}

static void
test_rule_errors(void)
{
	/* Ports. */
	bad(R("{'id':'a','host':'x.example','ports':[0]}"),
	    "$.rules[0].ports[0]", "out of range");
	bad(R("{'id':'a','host':'x.example','ports':[65536]}"),
	    "$.rules[0].ports[0]", "out of range");
	bad(R("{'id':'a','host':'x.example','ports':[-443]}"),
	    "$.rules[0].ports[0]", "out of range");
	bad(R("{'id':'a','host':'x.example','ports':[443,80,443]}"),
	    "$.rules[0].ports[2]", "duplicate port");
	/* Host and cidr. */
	bad(R("{'id':'a','host':'x.example','cidr':'10.0.0.0/8'}"), "$.rules[0]",
	    "not both");
	bad(R("{'id':'a','ports':[443]}"), "$.rules[0]", "\"cidr\"");
	bad(R("{'id':'a','host':'*.com'}"), "$.rules[0].host", "public suffix");
	bad(R("{'id':'a','host':'*.co.uk'}"), "$.rules[0].host", "public suffix");
	bad(R("{'id':'a','host':'*'}"), "$.rules[0].host", "invalid host");
	bad(R("{'id':'a','host':'foo.*.example'}"), "$.rules[0].host",
	    "invalid host");
	bad(R("{'id':'a','host':'a..example'}"), "$.rules[0].host",
	    "empty label");
	bad(R("{'id':'a','host':'ex ample.com'}"), "$.rules[0].host",
	    "invalid host");
	bad(R("{'id':'a','host':'b\\u00fccher.example'}"), "$.rules[0].host",
	    "non-ASCII");
	bad(R("{'id':'a','host':''}"), "$.rules[0].host", "empty");
	bad(R("{'id':'a','host':'1.2.3.4'}"), "$.rules[0].host",
	    "\"cidr\": \"1.2.3.4/32\"");
	bad(R("{'id':'a','host':'::1'}"), "$.rules[0].host", "::1/128");
	bad(R("{'id':'a','host':'127.1'}"), "$.rules[0].host", "use \"cidr\"");
	bad(R("{'id':'a','host':'2130706433'}"), "$.rules[0].host",
	    "use \"cidr\"");
	bad(R("{'id':'a','cidr':'10.0.0.1/8'}"), "$.rules[0].cidr",
	    "host bits zero");
	bad(R("{'id':'a','cidr':'10.0.0.5'}"), "$.rules[0].cidr",
	    "write \"10.0.0.5/32\"");
	bad(R("{'id':'a','cidr':'010.0.0.0/8'}"), "$.rules[0].cidr",
	    "invalid cidr");
	bad(R("{'id':'a','cidr':'example.com/8'}"), "$.rules[0].cidr",
	    "invalid cidr");
	/* HTTP. */
	bad(R("{'id':'a','host':'x.example','http':{'methods':['GE T']}}"),
	    "$.rules[0].http.methods[0]", "not an HTTP method");
	bad(R("{'id':'a','host':'x.example','http':{'methods':['']}}"),
	    "$.rules[0].http.methods[0]", "not an HTTP method");
	bad(R("{'id':'a','host':'x.example','http':{'methods':['GET','get']}}"),
	    "$.rules[0].http.methods[1]", "duplicate method \"GET\"");
	bad(R("{'id':'a','host':'x.example','http':{'paths':['repos/*']}}"),
	    "$.rules[0].http.paths[0]", "start with '/'");
	bad(R("{'id':'a','host':'x.example','http':{'paths':['']}}"),
	    "$.rules[0].http.paths[0]", "start with '/'");
	bad(R("{'id':'a','host':'x.example','http':{'paths':['/a/../b/*']}}"),
	    "$.rules[0].http.paths[0]", "write it as \"/b/*\"");
	bad(R("{'id':'a','host':'x.example','http':{'paths':['/%7euser']}}"),
	    "$.rules[0].http.paths[0]", "write it as \"/~user\"");
	bad(R("{'id':'a','host':'x.example','http':{'paths':['/../x']}}"),
	    "$.rules[0].http.paths[0]", "invalid path glob");
	bad(R("{'id':'a','host':'x.example','http':{'paths':['/a%2Fb']}}"),
	    "$.rules[0].http.paths[0]", "invalid path glob");
	bad(R("{'id':'a','host':'x.example','http':{'paths':['/a/**x']}}"),
	    "$.rules[0].http.paths[0]", "whole path segment");
	bad(R("{'id':'a','host':'x.example','http':{'paths':['/a/***']}}"),
	    "$.rules[0].http.paths[0]", "whole path segment");
	bad(R("{'id':'a','host':'x.example','http':{'paths':['/a?b=1']}}"),
	    "$.rules[0].http.paths[0]", "'?' or '#'");
	bad(R("{'id':'a','host':'x.example','http':{'paths':['/a','/a']}}"),
	    "$.rules[0].http.paths[1]", "duplicate path");
	/* Inject. */
	bad(R("{'id':'a','host':'x.example','inject':[{'secret':'a b',"
	    "'header':'X-Key'}]}"), "$.rules[0].inject[0].secret",
	    "not a vault name");
	bad(R("{'id':'a','host':'x.example','inject':[{'secret':'k',"
	    "'header':'Host'}]}"), "$.rules[0].inject[0].header",
	    "cannot be injected");
	bad(R("{'id':'a','host':'x.example','inject':[{'secret':'k',"
	    "'header':'content-length'}]}"), "$.rules[0].inject[0].header",
	    "cannot be injected");
	bad(R("{'id':'a','host':'x.example','inject':[{'secret':'k',"
	    "'header':'Transfer-Encoding'}]}"), "$.rules[0].inject[0].header",
	    "cannot be injected");
	bad(R("{'id':'a','host':'x.example','inject':[{'secret':'k',"
	    "'header':'Proxy-Authorization'}]}"), "$.rules[0].inject[0].header",
	    "cannot be injected");
	bad(R("{'id':'a','host':'x.example','inject':[{'secret':'k',"
	    "'header':'TE'}]}"), "$.rules[0].inject[0].header",
	    "cannot be injected");
	bad(R("{'id':'a','host':'x.example','inject':[{'secret':'k',"
	    "'header':'X Key'}]}"), "$.rules[0].inject[0].header",
	    "not a header name");
	bad(R("{'id':'a','host':'x.example','inject':[{'secret':'k',"
	    "'header':'X-Key:'}]}"), "$.rules[0].inject[0].header",
	    "not a header name");
	bad(R("{'id':'a','host':'x.example','inject':[{'secret':'k',"
	    "'header':'X-Key'},{'secret':'l','header':'x-key'}]}"),
	    "$.rules[0].inject[1].header", "already injected");
	bad(R("{'id':'a','host':'x.example','inject':[{'secret':'k',"
	    "'header':'X-Key','value':'Bearer'}]}"),
	    "$.rules[0].inject[0].value", "exactly once (found 0)");
	bad(R("{'id':'a','host':'x.example','inject':[{'secret':'k',"
	    "'header':'X-Key','value':'{secret}{secret}'}]}"),
	    "$.rules[0].inject[0].value", "exactly once (found 2)");
	bad(R("{'id':'a','host':'x.example','inject':[{'secret':'k',"
	    "'header':'X-Key','value':'{secret}\\r\\nX-Evil: 1'}]}"),
	    "$.rules[0].inject[0].value", "no CR, LF");
	bad(R("{'id':'a','host':'x.example','inject':[{'secret':'k',"
	    "'header':'X-Key','value':'{secret}\\n'}]}"),
	    "$.rules[0].inject[0].value", "no CR, LF");
}

static void
test_combinations(void)
{
	bad(R("{'id':'a','host':'x.example','tls':'splice','inject':["
	    "{'secret':'k','header':'X-Key'}]}"), "$.rules[0].inject",
	    "needs \"tls\": \"inspect\"");
	bad(R("{'id':'a','host':'x.example','tls':'splice','http':{}}"),
	    "$.rules[0].http", "needs \"tls\": \"inspect\"");
	bad(R("{'id':'a','host':'x.example','protocol':'tcp','tls':'splice'}"),
	    "$.rules[0].tls", "does not apply");
	bad(R("{'id':'a','host':'x.example','protocol':'tcp','http':{}}"),
	    "$.rules[0].http", "does not apply");
	bad(R("{'id':'a','host':'x.example','protocol':'tcp','inject':["
	    "{'secret':'k','header':'X-Key'}]}"), "$.rules[0].inject",
	    "does not apply");
	bad(R("{'id':'a','host':'x.example','protocol':'http','inject':["
	    "{'secret':'k','header':'X-Key'}]}"), "$.rules[0].inject",
	    "never into plain HTTP");
	bad(R("{'id':'a','host':'x.example','protocol':'http','tls':'inspect'}"),
	    "$.rules[0].tls", "does not apply");
	bad(R("{'id':'a','host':'x.example','http':{'websocket':true},"
	    "'inject':[{'secret':'k','header':'X-Key'}]}"), "$.rules[0].inject",
	    "cannot allow \"websocket\"");
	bad(R("{'id':'a','cidr':'10.0.0.0/8','http':{}}"), "$.rules[0].http",
	    "no host name");
	bad(R("{'id':'a','cidr':'10.0.0.0/8','inject':[{'secret':'k',"
	    "'header':'X-Key'}]}"), "$.rules[0].inject", "no host name");
	bad(R("{'id':'a','cidr':'10.0.0.0/8','tls':'inspect'}"), "$.rules[0].tls",
	    "no host name");
	bad(R("{'id':'a','host':'x.example','ports':[443,8443]},"
	    "{'id':'b','host':'X.Example.','ports':[8443,443],'protocol':'tcp'}"),
	    "$.rules[1]", "can never match");
	bad(R("{'id':'a','host':'*.x.example'},{'id':'b','host':'*.x.example'}"),
	    "$.rules[1]", "rules[0]");
	bad(R("{'id':'a','cidr':'10.0.0.0/8'},{'id':'b','cidr':'10.0.0.0/8'}"),
	    "$.rules[1]", "same cidr");
}

static void
test_collection(void)
{
	struct policy *p;
	char line[512];
	size_t i;

	/* Three different errors, in document order, with their positions. */
	p = load("{\n"
	    "  'policy': 'three',\n"
	    "  'rules': [\n"
	    "    { 'id': 'a', 'host': 'x.example', 'ports': [443, 0] },\n"
	    "    { 'id': 'b', 'host': '*.com' },\n"
	    "    { 'id': 'c', 'host': 'y.example', 'colour': 'red' }\n"
	    "  ]\n"
	    "}\n");
	ok(p == NULL, "three-error policy refused");
	if (is_int(3, errs.n, "three errors collected")) {
		is_string("$.rules[0].ports[1]", errs.v[0].pe_path, "first path");
		ok(errs.v[0].pe_line == 4 && errs.v[0].pe_column == 54,
		    "  at 4:54 (got %d:%d)", errs.v[0].pe_line,
		    errs.v[0].pe_column);
		is_string("$.rules[1].host", errs.v[1].pe_path, "second path");
		ok(errs.v[1].pe_line == 5 && errs.v[1].pe_column == 18,
		    "  at 5:18 (got %d:%d)", errs.v[1].pe_line,
		    errs.v[1].pe_column);
		is_string("$.rules[2].colour", errs.v[2].pe_path, "third path");
		ok(errs.v[2].pe_line == 6 && errs.v[2].pe_column == 39,
		    "  at 6:39 (got %d:%d)", errs.v[2].pe_line,
		    errs.v[2].pe_column);
		policy_error_fmt(&errs.v[0], line, sizeof(line));
		is_string("t.json:4:54: $.rules[0].ports[1]: port 0 is out of "
		    "range (1..65535)", line, "error format");
	} else
		show_errors();

	/* Missing keys are placed at their object, sorted before inner ones. */
	p = load("{'rules':[{'id':'a','host':'x.example','ports':[0]}]}");
	if (is_int(2, errs.n, "two errors")) {
		is_string("$", errs.v[0].pe_path, "missing policy first");
		ok(errs.v[0].pe_line == 1 && errs.v[0].pe_column == 1,
		    "  at 1:1");
		is_string("$.rules[0].ports[0]", errs.v[1].pe_path, "then the port");
	}
	policy_free(p);

	/* Escaped keys are located too. */
	p = load("{'policy':'a','rules':[],\n'\\u0041\\u00e9x':1}");
	ok(errs.n == 1 && errs.v[0].pe_line == 2 && errs.v[0].pe_column == 1,
	    "escaped unknown key located at 2:1");
	policy_free(p);

	/* jansson accepts a NUL byte after a scalar; locating must not hang. */
	{
		static const char nul[] = "{\"policy\":\"a\",\"rules\":[{\"id\":"
		    "\"a\",\"host\":\"x.example\",\"ports\":[443\0],\"x\":1}]}";

		policy_errors_free(&errs);
		p = policy_load_buf(nul, sizeof(nul) - 1, "nul", &errs);
		ok(p == NULL && errs.n == 1 && errs.v[0].pe_line == 1 &&
		    errs.v[0].pe_column == 68, "NUL after a number: error "
		    "located at 1:68 (got %d:%d)", errs.n ? errs.v[0].pe_line : 0,
		    errs.n ? errs.v[0].pe_column : 0);
		policy_free(p);
	}

	/* Errors are capped. */
	{
		char *big;
		size_t o;

		big = malloc(64 + 4 * 300);
		if (big == NULL)
			bail("out of memory");
		o = (size_t)sprintf(big, "{'policy':'a','rules':[{'id':'a','host':"
		    "'x.example','ports':[");
		for (i = 0; i < 300; i++)
			o += (size_t)sprintf(big + o, "%s0", i ? "," : "");
		sprintf(big + o, "]}]}");
		p = load(big);
		free(big);
		ok(p == NULL && errs.n == POLICY_ERRORS_MAX, "errors capped at %d "
		    "(got %zu)", POLICY_ERRORS_MAX, errs.n);
		if (errs.n > 0)
			ok(strstr(errs.v[errs.n - 1].pe_reason, "too many") != NULL,
			    "  last one says so");
	}

	/* A buffer over 1 MiB is refused before parsing. */
	{
		char *big = malloc(POLICY_FILE_MAX + 2);

		if (big == NULL)
			bail("out of memory");
		memset(big, ' ', POLICY_FILE_MAX + 1);
		memcpy(big, "{\"policy\":\"a\",\"rules\":[]}", 25);
		p = policy_load_buf(big, POLICY_FILE_MAX + 1, "big", &errs);
		ok(p == NULL && errs.n > 0 && strstr(errs.v[errs.n - 1].pe_reason,
		    "1 MiB") != NULL, "over 1 MiB refused");
		policy_errors_free(&errs);
		p = policy_load_buf(big, POLICY_FILE_MAX, "big", &errs);
		ok(p != NULL, "exactly 1 MiB accepted");
		policy_free(p);
		free(big);
	}

	/* errs may be NULL. */
	p = policy_load_buf("{}", 2, "x", NULL);
	ok(p == NULL, "refused without an error list");
	/* Errors accumulate across loads. */
	policy_errors_free(&errs);
	p = policy_load_buf("{}", 2, "one", &errs);
	p = policy_load_buf("[]", 2, "two", &errs);
	ok(p == NULL && errs.n == 3 && strcmp(errs.v[2].pe_file, "two") == 0,
	    "errors of two loads appended");
}

static void
test_files(void)
{
	const char *dir = tap_tmpdir();
	char path[512], fifo[512];
	struct policy *p;
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "%s/p.json", dir);
	if ((f = fopen(path, "w")) == NULL)
		bail("fopen %s", path);
	fputs("{\"policy\":\"f\",\"rules\":[]}\n", f);
	fclose(f);
	policy_errors_free(&errs);
	p = policy_load_file(path, &errs);
	if (ok(p != NULL, "file loads"))
		is_string(path, p->p_file, "p_file set");
	policy_free(p);

	p = policy_load_file("/nonexistent/p.json", &errs);
	ok(p == NULL && errs.n == 1 && strstr(errs.v[0].pe_reason,
	    "cannot open") != NULL, "missing file refused");
	policy_errors_free(&errs);

	p = policy_load_file(dir, &errs);
	ok(p == NULL && errs.n == 1 && strstr(errs.v[0].pe_reason,
	    "not a regular file") != NULL, "directory refused");
	policy_errors_free(&errs);

	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	if (mkfifo(fifo, 0600) == 0) {
		p = policy_load_file(fifo, &errs);
		ok(p == NULL && errs.n == 1 && strstr(errs.v[0].pe_reason,
		    "not a regular file") != NULL, "FIFO refused without hanging");
		policy_errors_free(&errs);
	} else
		skip("mkfifo failed");

	snprintf(path, sizeof(path), "%s/big.json", dir);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) == -1 ||
	    ftruncate(fd, POLICY_FILE_MAX + 1) == -1)
		bail("cannot create %s", path);
	close(fd);
	p = policy_load_file(path, &errs);
	ok(p == NULL && errs.n == 1 && strstr(errs.v[0].pe_reason, "1 MiB") !=
	    NULL, "file over 1 MiB refused");
	policy_errors_free(&errs);
}

/* "upstream_proxy": the policy's own, "direct", or absent; and the route. */
static void
test_upstream(void)
{
	struct upstream_proxy global;
	const struct upstream_proxy *up;
	struct policy *p;
	const char *why;

	if (upstream_url_parse("http://proxy.corp.test:3128", 27, &global, &why) == -1)
		bail("upstream_url_parse: %s", why);

	p = good("{'policy':'t','rules':[]}");
	if (p != NULL) {
		is_int(POLICY_UPSTREAM_GLOBAL, p->p_upstream, "absent: the global proxy");
		ok(policy_upstream_route(p, &global) == &global,
		    "  route: airlock.json's proxy");
		ok(policy_upstream_route(p, NULL) == NULL, "  route: direct without one");
	}
	policy_free(p);
	p = good("{'policy':'t','rules':[],'upstream_proxy':'direct'}");
	if (p != NULL) {
		is_int(POLICY_UPSTREAM_DIRECT, p->p_upstream, "\"direct\"");
		ok(policy_upstream_route(p, &global) == NULL,
		    "  route: direct although airlock.json names a proxy");
	}
	policy_free(p);
	p = good("{'policy':'t','rules':[],'upstream_proxy':{'url':"
	    "'http://Squid.Example:8080','auth':'squid_cred'}}");
	if (p != NULL) {
		up = policy_upstream_route(p, &global);
		ok(p->p_upstream == POLICY_UPSTREAM_PROXY && up == &p->p_upstream_proxy,
		    "its own proxy: the route, over airlock.json's");
		ok(up != NULL && strcmp(up->up_host, "squid.example") == 0 &&
		    up->up_port == 8080 && !up->up_is_addr &&
		    strcmp(up->up_auth, "squid_cred") == 0,
		    "  host normalised, port, secret");
		ok(up != NULL && !upstream_same(up, &global), "  not the global one");
	}
	policy_free(p);
	p = good("{'policy':'t','rules':[],'upstream_proxy':{'url':"
	    "'http://192.168.7.7:3128/','auth':null}}");
	if (p != NULL)
		ok(p->p_upstream_proxy.up_is_addr &&
		    strcmp(p->p_upstream_proxy.up_host, "192.168.7.7") == 0 &&
		    p->p_upstream_proxy.up_auth[0] == '\0',
		    "  a private address, auth null");
	policy_free(p);

	bad("{'policy':'t','rules':[],'upstream_proxy':'none'}", "$.upstream_proxy",
	    "must be \"direct\" or an object");
	bad("{'policy':'t','rules':[],'upstream_proxy':null}", "$.upstream_proxy",
	    "not null");
	bad("{'policy':'t','rules':[],'upstream_proxy':{}}", "$.upstream_proxy",
	    "missing required key \"url\"");
	bad("{'policy':'t','rules':[],'upstream_proxy':{'url':'http://p.test:1',"
	    "'port':1}}", "$.upstream_proxy.port", "unknown key");
	bad("{'policy':'t','rules':[],'upstream_proxy':{'url':3128}}",
	    "$.upstream_proxy.url", "must be a string");
	bad("{'policy':'t','rules':[],'upstream_proxy':{'url':'http://p.test'}}",
	    "$.upstream_proxy.url", "the port is missing");
	bad("{'policy':'t','rules':[],'upstream_proxy':{'url':'https://p.test:443'}}",
	    "$.upstream_proxy.url", "https:// is not supported");
	bad("{'policy':'t','rules':[],'upstream_proxy':{'url':"
	    "'http://u:Canary-Pol-9@p.test:3128'}}", "$.upstream_proxy.url",
	    "credentials do not go in the URL");
	ok(errs.n == 1 && strstr(errs.v[0].pe_reason, "Canary-Pol-9") == NULL,
	    "  without quoting the password");
	bad("{'policy':'t','rules':[],'upstream_proxy':{'url':'http://127.0.0.2:3128'}}",
	    "$.upstream_proxy.url", "a loopback proxy is refused");
	bad("{'policy':'t','rules':[],'upstream_proxy':{'url':"
	    "'http://169.254.170.2:80'}}", "$.upstream_proxy.url",
	    "never-routable floor");
	bad("{'policy':'t','rules':[],'upstream_proxy':{'url':'http://[::1]:3128'}}",
	    "$.upstream_proxy.url", "IPv6");
	bad("{'policy':'t','rules':[],'upstream_proxy':{'url':'http://p.test:1',"
	    "'auth':'a b'}}", "$.upstream_proxy.auth", "a vault secret's name");
	bad("{'policy':'t','rules':[],'upstream_proxy':{'url':'http://p.test:1',"
	    "'auth':true}}", "$.upstream_proxy.auth", "a vault secret's name");
	bad("{'policy':'t','rules':[],'upstream_proxy':{'url':'http://10.0.0.1:1',"
	    "'auth':'cred'}}", "$.upstream_proxy.auth",
	    "credentials need the proxy named by a host name");
}

int
main(void)
{
	plan_lazy();
	test_upstream();
	test_valid();
	test_json_errors();
	test_rule_errors();
	test_combinations();
	test_collection();
	test_files();
	policy_errors_free(&errs);
	return 0;
}
