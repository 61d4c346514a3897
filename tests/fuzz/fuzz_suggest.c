/*
 * tests/fuzz/fuzz_suggest.c: policies/policy_suggest.c (airlock policy suggest) over
 * arbitrary destinations, methods and paths, as audit records carry them from a VM.
 *
 * Input: lines "FLAGS DST PORT [METHOD [PATH]]"; FLAGS' low bits pick the protocol
 * and inspection, and the first line's FLAGS the siblings count.  DST goes through
 * the host-name normaliser as the CLI's does; one that is no name is tried as an
 * address.
 * Invariants: a build never fails but for memory (the suggestion always loads: the
 * engine loads it itself, and so does this harness); no cidr rule touches the
 * floor; every destination fed (but the floor's) is allowed at connection level on
 * the port it was seen on, with the protocol it was seen with (or, where it was
 * seen with two, with the other one: a rule matches on host and port).  Leaks show under
 * ASan.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostname.h"
#include "netaddr.h"
#include "policy.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FS_MAX	64

struct fs_seen {
	char		 host[HOSTNAME_MAX + 1];
	struct netaddr	 addr;
	int		 is_addr;
	uint16_t	 port;
	enum policy_proto proto;
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy_errors errs = { NULL, 0 };
	struct fs_seen seen[FS_MAX];
	struct policy_suggest *s;
	struct policy_verdict v;
	struct policy_query q;
	struct policy_seen w;
	struct policy *p;
	struct netaddr v4;
	const char *why;
	char *buf, *line, *save, *tok, *f[5], err[256], *text, abuf[64];
	size_t n = 0, i, k;
	unsigned siblings = 3, flags;
	int nf, first = 1;

	if (size > 16384 || (buf = malloc(size + 1)) == NULL)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	if ((s = policy_suggest_new(NULL)) == NULL)
		abort();
	for (line = strtok_r(buf, "\n", &save); line != NULL && n < FS_MAX;
	    line = strtok_r(NULL, "\n", &save)) {
		for (nf = 0, tok = strtok(line, " "); tok != NULL && nf < 5;
		    tok = strtok(NULL, " "))
			f[nf++] = tok;
		if (nf < 3)
			continue;
		flags = (unsigned)strtoul(f[0], NULL, 10);
		if (first)
			siblings = flags % 5;
		first = 0;
		memset(&seen[n], 0, sizeof(seen[n]));
		seen[n].port = (uint16_t)strtoul(f[2], NULL, 10);
		if (seen[n].port == 0)
			continue;
		seen[n].proto = (enum policy_proto)(flags % 3);
		if (hostname_normalize(f[1], strlen(f[1]), seen[n].host) != HOSTNAME_OK) {
			if (netaddr_parse(f[1], &seen[n].addr) != 0)
				continue;
			seen[n].is_addr = 1;
			/* as the engine and policy_decide() see it: its IPv4 address */
			if (netaddr_embedded_v4(&seen[n].addr, &v4))
				seen[n].addr = v4;
		}
		memset(&w, 0, sizeof(w));
		w.pw_host = seen[n].is_addr ? NULL : seen[n].host;
		w.pw_addr = &seen[n].addr;
		w.pw_port = seen[n].port;
		w.pw_proto = seen[n].proto;
		w.pw_inspect = (flags / 3) % 2;
		w.pw_method = nf > 3 ? f[3] : NULL;
		w.pw_path = nf > 4 ? f[4] : (nf > 3 ? "/" : NULL);
		if (policy_suggest_add(s, &w) != 0)
			abort();
		n++;
	}
	text = policy_suggest_build(s, "fuzz", siblings, err, sizeof(err));
	policy_suggest_free(s);
	free(buf);
	if (text == NULL) {
		if (strcmp(err, "out of memory") != 0) {
			fprintf(stderr, "fuzz_suggest: %s\n", err);
			abort();	/* a suggestion that does not load */
		}
		return 0;
	}
	if ((p = policy_load_buf(text, strlen(text), "fuzz", &errs)) == NULL)
		abort();
	for (i = 0; i < p->p_nrules; i++)
		if (p->p_rules[i].pr_is_cidr &&
		    netaddr_cidr_floor(&p->p_rules[i].pr_cidr, &why))
			abort();
	for (k = 0; k < n; k++) {
		if (seen[k].is_addr &&
		    netaddr_classify(&seen[k].addr, &why) == NETADDR_FLOOR)
			continue;
		memset(&q, 0, sizeof(q));
		q.pq_host = seen[k].is_addr ? NULL : seen[k].host;
		q.pq_addr = seen[k].is_addr ? &seen[k].addr : NULL;
		q.pq_port = seen[k].port;
		q.pq_proto = seen[k].proto;
		if (policy_decide(p, &q, &v))
			continue;
		/* one rule per host and port: another protocol seen there may win */
		for (i = 0; i < n; i++)
			if (seen[i].proto != seen[k].proto &&
			    seen[i].port == seen[k].port &&
			    seen[i].is_addr == seen[k].is_addr &&
			    (seen[k].is_addr ? netaddr_equal(&seen[i].addr,
			    &seen[k].addr) : strcmp(seen[i].host,
			    seen[k].host) == 0))
				break;
		if (i == n || v.pv_reason != POLICY_REASON_PROTOCOL_NOT_ALLOWED) {
			fprintf(stderr, "fuzz_suggest: %s port %u proto %d refused "
			    "(%s) by:\n%s\n", seen[k].is_addr ? netaddr_fmt(
			    &seen[k].addr, abuf, sizeof(abuf)) : seen[k].host, (unsigned)seen[k].port, (int)seen[k].proto,
			    policy_reason_str(v.pv_reason), text);
			abort();	/* something seen that the suggestion refuses */
		}
	}
	policy_free(p);
	policy_errors_free(&errs);
	free(text);
	return 0;
}
