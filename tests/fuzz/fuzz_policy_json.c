/*
 * tests/fuzz/fuzz_policy_json.c: the policy loader over arbitrary bytes.
 *
 * Invariants: a load either returns a policy and no error, or NULL and at least one
 * error, each with a file name and a reason (and a path starting with "$" when it
 * has one); every error formats; a loaded policy is self-consistent (ports and
 * methods non-empty where present, a hash of 64 hex digits) and can be evaluated.
 * Leaks show under ASan (the libFuzzer build and SAN=1 replay).
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

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy_errors errs = { 0 };
	struct policy *p;
	char line[2048];
	size_t i, k;

	p = policy_load_buf((const char *)data, size, "fuzz.json", &errs);
	if (p != NULL) {
		if (errs.n != 0 || p->p_name == NULL || strlen(p->p_hash) != 64)
			abort();
		for (i = 0; i < p->p_nrules; i++) {
			const struct policy_rule *r = &p->p_rules[i];

			if (r->pr_id == NULL || r->pr_nports == 0 ||
			    r->pr_ports == NULL)
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
