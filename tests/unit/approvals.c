/*
 * tests/unit/approvals.c: the pure parts of approvals: one sandbox's pending table
 * and grants (proxy/proxy_approval.c: bounded, oldest dropped and counted, one
 * entry per name and port, --once used up, --for expiring), the ids
 * (sandbox_approval_id(): stable, per sandbox) and the CLI's --for durations
 * (cli_duration_parse()), and the "unknown" key of the loader.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "policy.h"
#include "sandbox.h"
#include "../../cli/cli.h"
#include "../../proxy/proxy_approval.h"
#include "../tap.h"

static void
test_duration(void)
{
	static const struct { const char *in; long long want; } good[] = {
		{ "1s", 1 }, { "90s", 90 }, { "10m", 600 }, { "2h", 7200 },
		{ "1d", 86400 }, { "30d", 2592000 }, { "2592000s", 2592000 },
	};
	static const char *const bad[] = { "", "s", "10", "0s", "01m", "10x",
	    "10mm", "-1s", "31d", "2592001s", "721h", " 1s", "1s ",
	    "99999999999999999999s" };
	long long v;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = -1;
		ok(cli_duration_parse(good[i].in, &v) == 0 && v == good[i].want,
		    "duration %s is %lld s", good[i].in, good[i].want);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(cli_duration_parse(bad[i], &v) == -1, "duration '%s' refused",
		    bad[i]);
}

static void
test_ids(void)
{
	char a[SANDBOX_APPROVAL_ID_LEN + 1], b[SANDBOX_APPROVAL_ID_LEN + 1];

	sandbox_approval_id("a", "x.test", 443, a);
	sandbox_approval_id("a", "x.test", 443, b);
	ok(strlen(a) == SANDBOX_APPROVAL_ID_LEN && strcmp(a, b) == 0,
	    "an id is stable (%s)", a);
	sandbox_approval_id("b", "x.test", 443, b);
	ok(strcmp(a, b) != 0, "another sandbox, another id");
	sandbox_approval_id("a", "x.test", 80, b);
	ok(strcmp(a, b) != 0, "another port, another id");
}

static size_t
npending(struct proxy_approvals *a, uint64_t *dropped)
{
	size_t np, ng;

	proxy_approvals_counts(a, 0, &np, dropped, &ng);
	return np;
}

static void
test_table(void)
{
	struct proxy_approvals *a = proxy_approvals_new();
	char id[APPROVAL_ID_LEN + 1], want[APPROVAL_ID_LEN + 1], name[64];
	uint64_t dropped = 0;
	json_t *j, *e;
	size_t i, np, ng;

	if (a == NULL)
		bail("out of memory");
	is_int(1, proxy_approvals_note(a, "sb", "x.test", 0, NULL, NULL, 1000, id),
	    "a first refusal is a new entry");
	sandbox_approval_id("sb", "x.test", 0, want);
	is_string(want, id, "its id is the sandbox's id of the name and port");
	is_int(0, proxy_approvals_note(a, "sb", "x.test", 0, NULL, NULL, 2000, id),
	    "the same name and port again: counted");
	is_int(1, proxy_approvals_note(a, "sb", "x.test", 80, "GET", "/a", 3000,
	    id), "another port: an entry of its own");
	proxy_approvals_note(a, "sb", "x.test", 80, "POST", "/b", 4000, id);
	j = proxy_approvals_json(a, 0);
	e = json_array_get(json_object_get(j, "pending"), 0);
	is_int(2, json_integer_value(json_object_get(e, "count")), "count 2");
	is_string("1970-01-01T00:00:01Z", json_string_value(json_object_get(e,
	    "first_seen")), "first seen");
	is_string("1970-01-01T00:00:02Z", json_string_value(json_object_get(e,
	    "last_seen")), "last seen");
	ok(json_object_get(e, "method") == NULL, "a DNS entry has no method");
	e = json_array_get(json_object_get(j, "pending"), 1);
	ok(strcmp(json_string_value(json_object_get(e, "method")), "GET") == 0 &&
	    strcmp(json_string_value(json_object_get(e, "path")), "/a") == 0 &&
	    strcmp(json_string_value(json_object_get(e, "last_method")),
	    "POST") == 0 && strcmp(json_string_value(json_object_get(e,
	    "last_path")), "/b") == 0, "first and last request kept");
	json_decref(j);

	/* The VM's bytes reach an operator's terminal: printable ASCII only. */
	proxy_approvals_note(a, "sb", "esc.test", 80, "GET",
	    "/\x1b]0;pwned\x07\x1b[2J\xc2\x9b" "31m\x7f/x", 4500, id);
	j = proxy_approvals_json(a, 0);
	e = json_array_get(json_object_get(j, "pending"), 2);
	is_string("/?]0;pwned??[2J??31m?/x", json_string_value(json_object_get(e,
	    "path")), "control bytes, escapes and non-ASCII in a path become '?'");
	json_decref(j);
	proxy_approvals_note(a, "sb", "ok.test", 80, "GET", "/a-b_c.d~e%20f?g=h",
	    4600, id);
	j = proxy_approvals_json(a, 0);
	e = json_array_get(json_object_get(j, "pending"), 3);
	is_string("/a-b_c.d~e%20f?g=h", json_string_value(json_object_get(e,
	    "path")), "... an ordinary path is kept as it is (positive control)");
	json_decref(j);

	/* Bounded: the oldest goes, counted. */
	for (i = 0; i < APPROVAL_PENDING_MAX + 5; i++) {
		snprintf(name, sizeof(name), "n%zu.test", i);
		proxy_approvals_note(a, "sb", name, 443, NULL, NULL, 5000, id);
	}
	np = npending(a, &dropped);
	is_int(APPROVAL_PENDING_MAX, (long long)np, "at most %d entries",
	    APPROVAL_PENDING_MAX);
	is_int(9, (long long)dropped, "the 9 oldest dropped and counted (4 + 69 entries, 64 kept)");
	j = proxy_approvals_json(a, 0);
	e = json_array_get(json_object_get(j, "pending"), 0);
	is_string("n5.test", json_string_value(json_object_get(e, "name")),
	    "the oldest left is the 6th flood name");
	json_decref(j);

	/* forget: the port's entry and the DNS one. */
	proxy_approvals_note(a, "sb", "y.test", 0, NULL, NULL, 1, id);
	proxy_approvals_note(a, "sb", "y.test", 443, NULL, NULL, 1, id);
	proxy_approvals_note(a, "sb", "y.test", 8443, NULL, NULL, 1, id);
	is_int(2, (long long)proxy_approvals_forget(a, "y.test", 443, 0),
	    "forget y.test:443 takes it and the DNS entry");
	is_int(1, (long long)proxy_approvals_forget(a, "y.test", 8443, 0),
	    "... not the other port's");

	/* Grants. */
	ok(!proxy_approvals_take(a, "g.test", 443, 0, 1), "no grant: nothing");
	proxy_approvals_grant(a, "g.test", 443, 1, 0, 0);
	ok(proxy_approvals_has_name(a, "g.test", 0), "a grant names its name (DNS)");
	ok(!proxy_approvals_take(a, "g.test", 444, 0, 1), "not on another port");
	ok(proxy_approvals_take(a, "g.test", 443, 0, 0), "peek: granted");
	ok(proxy_approvals_take(a, "g.test", 443, 0, 1), "once: granted");
	ok(!proxy_approvals_take(a, "g.test", 443, 0, 1), "... and used up");
	ok(!proxy_approvals_has_name(a, "g.test", 0), "... DNS too");
	proxy_approvals_grant(a, "f.test", 443, 0, 10000, 0);
	ok(proxy_approvals_take(a, "f.test", 443, 9999, 1) &&
	    proxy_approvals_take(a, "f.test", 443, 9999, 1), "--for: many times");
	ok(!proxy_approvals_take(a, "f.test", 443, 10000, 1), "... until it expires");
	for (i = 0; i < APPROVAL_GRANTS_MAX; i++) {
		snprintf(name, sizeof(name), "g%zu.test", i);
		if (proxy_approvals_grant(a, name, 443, 0, 100, 0) == -1)
			break;
	}
	is_int(APPROVAL_GRANTS_MAX, (long long)i, "%d live grants", APPROVAL_GRANTS_MAX);
	ok(proxy_approvals_grant(a, "h.test", 443, 1, 0, 0) == -1,
	    "one more is refused");
	ok(proxy_approvals_grant(a, "h.test", 443, 1, 0, 100) == 0,
	    "... until the others expired");
	proxy_approvals_counts(a, 100, &np, &dropped, &ng);
	is_int(1, (long long)ng, "one live grant left");
	proxy_approvals_grant(a, "d.test", 443, 1, 0, 100);
	proxy_approvals_forget(a, "d.test", 443, 1);
	ok(!proxy_approvals_take(a, "d.test", 443, 100, 0), "deny revokes a grant");
	proxy_approvals_free(a);
}

static void
test_policy_key(void)
{
	static const char ask[] = "{\"policy\":\"p\",\"unknown\":\"ask\","
	    "\"rules\":[]}";
	static const char deny[] = "{\"policy\":\"p\",\"unknown\":\"deny\","
	    "\"rules\":[]}";
	static const char none[] = "{\"policy\":\"p\",\"rules\":[]}";
	static const char bad[] = "{\"policy\":\"p\",\"unknown\":true,\"rules\":[]}";
	struct policy *p;

	p = policy_load_buf(ask, sizeof(ask) - 1, "ask", NULL);
	ok(p != NULL && p->p_unknown == POLICY_UNKNOWN_ASK, "\"unknown\": \"ask\"");
	policy_free(p);
	p = policy_load_buf(deny, sizeof(deny) - 1, "deny", NULL);
	ok(p != NULL && p->p_unknown == POLICY_UNKNOWN_DENY, "\"unknown\": \"deny\"");
	policy_free(p);
	p = policy_load_buf(none, sizeof(none) - 1, "none", NULL);
	ok(p != NULL && p->p_unknown == POLICY_UNKNOWN_DENY, "default: deny");
	policy_free(p);
	p = policy_load_buf(bad, sizeof(bad) - 1, "bad", NULL);
	ok(p == NULL, "\"unknown\": true is an error");
	policy_free(p);
	ok(policy_reason_is_unknown(POLICY_REASON_NAME_NOT_ALLOWED) &&
	    policy_reason_is_unknown(POLICY_REASON_PORT_NOT_ALLOWED) &&
	    !policy_reason_is_unknown(POLICY_REASON_DENIED_BY_RULE) &&
	    !policy_reason_is_unknown(POLICY_REASON_PATH_NOT_ALLOWED),
	    "unknown reasons: name_not_allowed, port_not_allowed only");
}

int
main(void)
{
	plan_lazy();
	test_duration();
	test_ids();
	test_table();
	test_policy_key();
	return 0;
}
