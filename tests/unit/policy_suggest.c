/*
 * tests/unit/policy_suggest.c: policies/policy_suggest.c, the engine behind `airlock
 * policy suggest`: what a suggestion allows, what it never widens to, and that it
 * loads.  Each suggestion is loaded again here and asked with policy_decide() what
 * it allows, so the checks are about decisions, not about the text's shape.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "policy.h"
#include "../tap.h"

static struct policy_suggest *S;
static char *notes_buf;
static size_t notes_len;
static FILE *notes;

static void
begin(void)
{
	free(notes_buf);
	notes_buf = NULL;
	if ((notes = open_memstream(&notes_buf, &notes_len)) == NULL ||
	    (S = policy_suggest_new(notes)) == NULL)
		bail("setup");
}

static void
seen(const char *host, const char *addr, uint16_t port, enum policy_proto proto,
    int inspect, const char *method, const char *path)
{
	static struct netaddr a;
	struct policy_seen w;

	memset(&w, 0, sizeof(w));
	if (addr != NULL && netaddr_parse(addr, &a) != 0)
		bail("bad address %s", addr);
	w.pw_host = host;
	w.pw_addr = &a;
	w.pw_port = port;
	w.pw_proto = proto;
	w.pw_inspect = inspect;
	w.pw_method = method;
	w.pw_path = path;
	if (policy_suggest_add(S, &w) != 0)
		bail("policy_suggest_add");
}

/* The suggestion, loaded (NULL on failure, said); *text keeps the JSON. */
static struct policy *
end(unsigned siblings, char **text)
{
	struct policy_errors errs = { NULL, 0 };
	struct policy *p;
	char err[256];

	*text = policy_suggest_build(S, "suggested-t", siblings, err, sizeof(err));
	policy_suggest_free(S);
	fclose(notes);
	if (*text == NULL) {
		diag("build: %s", err);
		return NULL;
	}
	if ((p = policy_load_buf(*text, strlen(*text), "t", &errs)) == NULL)
		diag("does not load: %s", *text);
	policy_errors_free(&errs);
	return p;
}

static int
allows(const struct policy *p, const char *host, uint16_t port,
    enum policy_proto proto, const char *method, const char *path)
{
	struct policy_query q;
	struct policy_verdict v;

	memset(&q, 0, sizeof(q));
	q.pq_host = host;
	q.pq_port = port;
	q.pq_proto = proto;
	q.pq_method = method;
	q.pq_path = path;
	return policy_decide(p, &q, &v);
}

static int
allows_addr(const struct policy *p, const char *addr, uint16_t port)
{
	struct policy_query q;
	struct policy_verdict v;
	struct netaddr a;

	memset(&q, 0, sizeof(q));
	if (netaddr_parse(addr, &a) != 0)
		return 0;
	q.pq_addr = &a;
	q.pq_port = port;
	q.pq_proto = POLICY_PROTO_TLS;
	return policy_decide(p, &q, &v);
}

/* the number of rules, and whether one has this id */
static int
has_id(const char *text, const char *id)
{
	json_t *doc = json_loads(text, 0, NULL), *r;
	size_t i;
	int found = 0;

	json_array_foreach(json_object_get(doc, "rules"), i, r)
		if (strcmp(json_string_value(json_object_get(r, "id")), id) == 0)
			found = 1;
	json_decref(doc);
	return found;
}

static size_t
nrules(const struct policy *p)
{
	return p != NULL ? p->p_nrules : 0;
}

static void
test_exact(void)
{
	struct policy *p;
	char *text;

	begin();
	seen("api.github.com", NULL, 443, POLICY_PROTO_TLS, 1, "GET", "/user");
	seen("api.github.com", NULL, 443, POLICY_PROTO_TLS, 1, "GET",
	    "/repos/acme/app");
	seen("api.github.com", NULL, 443, POLICY_PROTO_TLS, 1, NULL, NULL);
	seen("pypi.org", NULL, 443, POLICY_PROTO_TLS, 0, NULL, NULL);
	seen("github.com", NULL, 22, POLICY_PROTO_TCP, 0, NULL, NULL);
	p = end(3, &text);
	ok(p != NULL, "a suggestion loads");
	is_int(3, (long long)nrules(p), "one rule per destination and protocol");
	ok(allows(p, "api.github.com", 443, POLICY_PROTO_TLS, "GET", "/user"),
	    "allows a request it saw");
	ok(!allows(p, "api.github.com", 443, POLICY_PROTO_TLS, "POST", "/user"),
	    "... not a method it did not see");
	ok(!allows(p, "api.github.com", 443, POLICY_PROTO_TLS, "GET", "/admin"),
	    "... nor a path it did not see");
	ok(allows(p, "pypi.org", 443, POLICY_PROTO_TLS, NULL, NULL),
	    "a spliced name is allowed on its port");
	ok(!allows(p, "pypi.org", 8443, POLICY_PROTO_TLS, NULL, NULL),
	    "... not on another port");
	ok(allows(p, "github.com", 22, POLICY_PROTO_TCP, NULL, NULL),
	    "raw TCP to port 22 as seen");
	ok(!allows(p, "github.com", 443, POLICY_PROTO_TLS, NULL, NULL),
	    "... which opens no TLS to that name");
	ok(!allows(p, "evil.example", 443, POLICY_PROTO_TLS, NULL, NULL),
	    "a name never seen is refused");
	ok(text != NULL && has_id(text, "api.github.com-3-records") &&
	    has_id(text, "pypi.org-1-record") && has_id(text, "github.com-tcp-1-record"),
	    "ids name how many records each rule covers");
	policy_free(p);
	free(text);
}

static void
test_wildcards(void)
{
	struct policy *p;
	char *text;

	begin();
	seen("a.pythonhosted.org", NULL, 443, POLICY_PROTO_TLS, 0, NULL, NULL);
	seen("b.pythonhosted.org", NULL, 443, POLICY_PROTO_TLS, 0, NULL, NULL);
	seen("c.d.pythonhosted.org", NULL, 443, POLICY_PROTO_TLS, 0, NULL, NULL);
	/* github.io is a public suffix (the list's private part): never a wildcard */
	seen("a.github.io", NULL, 443, POLICY_PROTO_TLS, 0, NULL, NULL);
	seen("b.github.io", NULL, 443, POLICY_PROTO_TLS, 0, NULL, NULL);
	seen("c.github.io", NULL, 443, POLICY_PROTO_TLS, 0, NULL, NULL);
	/* two siblings only: stay exact */
	seen("x.example.net", NULL, 443, POLICY_PROTO_TLS, 0, NULL, NULL);
	seen("y.example.net", NULL, 443, POLICY_PROTO_TLS, 0, NULL, NULL);
	p = end(3, &text);
	ok(p != NULL, "wildcards: loads");
	ok(allows(p, "zzz.pythonhosted.org", 443, POLICY_PROTO_TLS, NULL, NULL),
	    "three names below one registrable domain make *.pythonhosted.org");
	ok(!allows(p, "pythonhosted.org", 443, POLICY_PROTO_TLS, NULL, NULL),
	    "... which does not open the domain itself");
	ok(!allows(p, "evil.github.io", 443, POLICY_PROTO_TLS, NULL, NULL),
	    "no wildcard over a public suffix (github.io)");
	ok(allows(p, "a.github.io", 443, POLICY_PROTO_TLS, NULL, NULL) &&
	    allows(p, "c.github.io", 443, POLICY_PROTO_TLS, NULL, NULL),
	    "... those names stay exact rules");
	ok(!allows(p, "z.example.net", 443, POLICY_PROTO_TLS, NULL, NULL) &&
	    allows(p, "x.example.net", 443, POLICY_PROTO_TLS, NULL, NULL),
	    "two siblings are not enough for a wildcard (siblings 3)");
	ok(text != NULL && has_id(text, "any.pythonhosted.org-3-records"),
	    "the wildcard's id counts the records of its names");
	policy_free(p);
	free(text);

	begin();
	seen("a.pythonhosted.org", NULL, 443, POLICY_PROTO_TLS, 0, NULL, NULL);
	seen("b.pythonhosted.org", NULL, 443, POLICY_PROTO_TLS, 0, NULL, NULL);
	seen("c.pythonhosted.org", NULL, 443, POLICY_PROTO_TLS, 0, NULL, NULL);
	p = end(0, &text);
	ok(p != NULL && !allows(p, "zzz.pythonhosted.org", 443, POLICY_PROTO_TLS,
	    NULL, NULL), "siblings 0: no wildcard at all");
	policy_free(p);
	free(text);
}

static void
test_paths(void)
{
	struct policy *p;
	char *text;

	begin();
	seen("api.example.com", NULL, 443, POLICY_PROTO_TLS, 1, "GET", "/items/12345");
	seen("api.example.com", NULL, 443, POLICY_PROTO_TLS, 1, "GET",
	    "/commits/0123456789abcdef0123");
	seen("api.example.com", NULL, 443, POLICY_PROTO_TLS, 1, "GET", "/docs/a");
	seen("api.example.com", NULL, 443, POLICY_PROTO_TLS, 1, "GET", "/docs/b");
	seen("api.example.com", NULL, 443, POLICY_PROTO_TLS, 1, "GET", "/docs/c");
	seen("api.example.com", NULL, 443, POLICY_PROTO_TLS, 1, "GET", "/one/x");
	seen("api.example.com", NULL, 443, POLICY_PROTO_TLS, 1, "GET", "/a*b");
	seen("api.example.com", NULL, 443, POLICY_PROTO_TLS, 1, "GET", "/q?x=1");
	p = end(3, &text);
	ok(p != NULL, "paths: loads");
	ok(allows(p, "api.example.com", 443, POLICY_PROTO_TLS, "GET", "/items/999"),
	    "a numeric segment becomes *");
	ok(!allows(p, "api.example.com", 443, POLICY_PROTO_TLS, "GET",
	    "/items/999/more"), "... for one segment only");
	ok(allows(p, "api.example.com", 443, POLICY_PROTO_TLS, "GET",
	    "/commits/ffffffffffffffff0000"), "a hex id becomes *");
	ok(allows(p, "api.example.com", 443, POLICY_PROTO_TLS, "GET", "/docs/zzz"),
	    "three paths under one parent make /docs/*");
	ok(!allows(p, "api.example.com", 443, POLICY_PROTO_TLS, "GET", "/one/y") &&
	    allows(p, "api.example.com", 443, POLICY_PROTO_TLS, "GET", "/one/x"),
	    "one path stays exact");
	ok(!allows(p, "api.example.com", 443, POLICY_PROTO_TLS, "GET", "/aXb"),
	    "a path with '*' in it is left out, not made a glob");
	ok(notes_buf != NULL && strstr(notes_buf, "a path left out") != NULL,
	    "... and the notes say so");
	ok(allows(p, "api.example.com", 443, POLICY_PROTO_TLS, "GET", "/q"),
	    "the query is not part of a path glob");
	policy_free(p);
	free(text);
}

static void
test_addresses(void)
{
	struct policy *p;
	char *text;

	begin();
	seen(NULL, "169.254.169.254", 80, POLICY_PROTO_HTTP, 0, "GET", "/latest");
	seen(NULL, "127.0.0.1", 443, POLICY_PROTO_TLS, 0, NULL, NULL);
	seen(NULL, "93.184.216.34", 443, POLICY_PROTO_TLS, 1, "GET", "/x");
	p = end(3, &text);
	ok(p != NULL, "addresses: loads");
	ok(allows_addr(p, "93.184.216.34", 443), "a public address seen: a /32 rule");
	ok(!allows_addr(p, "93.184.216.35", 443), "... for that address only");
	ok(text != NULL && strstr(text, "169.254") == NULL &&
	    strstr(text, "127.0.0.1") == NULL,
	    "no floor address (metadata, loopback) is ever suggested");
	ok(notes_buf != NULL && strstr(notes_buf, "169.254.169.254:80 left out: the "
	    "floor refuses it (metadata)") != NULL, "... and the notes say why");
	policy_free(p);
	free(text);
}

int
main(void)
{
	plan_lazy();
	test_exact();
	test_wildcards();
	test_paths();
	test_addresses();
	free(notes_buf);
	return tap_failures() != 0;
}
