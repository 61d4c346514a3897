/*
 * tests/fuzz/fuzz_policy_json.c: the policy loader over arbitrary bytes.
 *
 * The input is one document, or several separated by a line "=====": the first is
 * fuzz.json, the others b1.json, b2.json, ... of one bundle, so that "base" can name
 * them (bases, cycles, depth, merging) without a file system.
 *
 * Invariants: a load either returns a policy and no error, or NULL and at least one
 * error, each with a file name and a reason (and a path starting with "$" when it
 * has one); every error formats; a loaded policy is self-consistent (ports non-empty
 * but for deny rules, every deny rule before every allow rule, each rule's file one
 * of the policy's files, a hash of 64 hex digits) and can be evaluated.  Leaks show
 * under ASan (the libFuzzer build and SAN=1 replay).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netaddr.h"
#include "policy.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
fuzz_decide(const struct policy *p)
{
	static const char *hosts[] = { "api.github.com", "a.b.example.com",
	    "example.com", "10.0.0.1", "bad name", "" };
	static const char *paths[] = { "/", "/repos/acme/app", "/a/../b",
	    "/%2e%2e/x", "/x%2Fy" };
	struct policy_verdict v;
	struct policy_query q;
	struct netaddr a;
	size_t i, k;

	if (netaddr_parse("10.0.0.1", &a) == -1)
		abort();
	for (i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		for (k = 0; k < sizeof(paths) / sizeof(paths[0]); k++) {
			memset(&q, 0, sizeof(q));
			q.pq_host = hosts[i];
			q.pq_addr = (i % 2) ? &a : NULL;
			q.pq_port = i % 3 ? 443 : 22;
			q.pq_proto = (enum policy_proto)(k % 3);
			q.pq_method = k % 2 ? "GET" : NULL;
			q.pq_path = paths[k];
			if (policy_decide(p, &q, &v) != v.pv_allow)
				abort();
			if (v.pv_allow && !v.pv_would_deny &&
			    (v.pv_reason != POLICY_REASON_NONE ||
			    v.pv_rule == NULL))
				abort();
			if (v.pv_rule != NULL)
				policy_rule_allows_private(v.pv_rule, &a);
		}
	}
}

#define FZ_SEP		"\n=====\n"

/* The documents of data (see above) into b. */
static void
fuzz_bundle(const uint8_t *data, size_t size, struct policy_bundle *b)
{
	const char *p = (const char *)data, *end = p + size, *sep;
	char name[32];
	unsigned int i;

	for (i = 0; p <= end; i++) {
		sep = memmem(p, (size_t)(end - p), FZ_SEP, strlen(FZ_SEP));
		if (i == 0)
			snprintf(name, sizeof(name), "fuzz.json");
		else
			snprintf(name, sizeof(name), "b%u.json", i);
		if (policy_bundle_add(b, name, p, (size_t)((sep != NULL ? sep : end) -
		    p), NULL) == -1)
			abort();
		if (sep == NULL)
			break;
		p = sep + strlen(FZ_SEP);
	}
}

static void
fuzz_check(const struct policy *p)
{
	size_t i, k;
	int allows = 0;

	if (p->p_name == NULL || strlen(p->p_hash) != 64 || p->p_nfiles == 0)
		abort();
	for (i = 0; i < p->p_nfiles; i++)
		if (strlen(p->p_files[i]->ps_hash) != 64)
			abort();
	for (i = 0; i < p->p_nrules; i++) {
		const struct policy_rule *r = &p->p_rules[i];

		if (r->pr_action == POLICY_ACTION_ALLOW)
			allows = 1;
		else if (allows)
			abort();	/* a deny rule after an allow rule */
		for (k = 0; k < p->p_nfiles; k++)
			if (r->pr_file == p->p_files[k]->ps_file)
				break;
		if (k == p->p_nfiles)
			abort();
		if (r->pr_action == POLICY_ACTION_DENY && (r->pr_ninject > 0 ||
		    r->pr_tls != POLICY_TLS_SPLICE || r->pr_websocket ||
		    r->pr_forwarded))
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy_errors errs = { 0 };
	struct policy_bundle b = { NULL, 0 };
	struct policy *p;
	char line[2048];
	size_t i, k;

	fuzz_bundle(data, size, &b);
	p = policy_load_bundle(&b, &errs);
	policy_bundle_free(&b);
	if (p != NULL) {
		if (errs.n != 0)
			abort();
		fuzz_check(p);
		for (i = 0; i < p->p_nrules; i++) {
			const struct policy_rule *r = &p->p_rules[i];

			if (r->pr_id == NULL || (r->pr_action == POLICY_ACTION_ALLOW &&
			    (r->pr_nports == 0 || r->pr_ports == NULL)))
				abort();
			for (k = 0; k < r->pr_nports; k++)
				if (r->pr_ports[k] == 0)
					abort();
			for (k = 0; k < r->pr_ninject; k++)
				if (strstr(r->pr_inject[k].pi_value,
				    "{secret}") == NULL ||
				    r->pr_tls != POLICY_TLS_INSPECT)
					abort();
		}
		fuzz_decide(p);
	} else if (errs.n == 0)
		abort();
	for (i = 0; i < errs.n; i++) {
		if (errs.v[i].pe_file == NULL || errs.v[i].pe_reason == NULL ||
		    (errs.v[i].pe_path != NULL && errs.v[i].pe_path[0] != '$'))
			abort();
		if (policy_error_fmt(&errs.v[i], line, sizeof(line)) < 0)
			abort();
		/* No raw control byte of the input reaches a message. */
		for (k = 0; line[k] != '\0'; k++)
			if ((unsigned char)line[k] < 0x20)
				abort();
	}
	policy_errors_free(&errs);
	policy_free(p);
	return 0;
}
