/*
 * tests/fuzz/fuzz_dns.c: the DNS codec and the answering logic
 * (proxy/proxy_dns_codec.c, proxy/proxy_dns_answer.c) over arbitrary bytes (with
 * an operator's grant for some names when the last byte says: granted only
 * where asked, never over a rule), with a
 * fixed policy and a small mapping table (so recycling runs too).  Besides memory
 * safety it checks promises: a response fits, echoes the ID with QR=1, is absent
 * only for a drop; an answer's address lies in the pool and maps back to its name;
 * the same bytes over TCP give the same outcome.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "../../proxy/proxy_map.h"
#include "../../proxy/proxy_dns_codec.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static uint16_t fz_ports[] = { 443 };
static struct policy_rule fz_rules[3];
static struct policy fz_pol;
static struct proxy_map *fz_map;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct netaddr_cidr pool;

	(void)argc;
	(void)argv;
	fz_rules[0].pr_id = "exact";
	snprintf(fz_rules[0].pr_host, sizeof(fz_rules[0].pr_host), "%s", "github.com");
	fz_rules[1].pr_id = "wild";
	snprintf(fz_rules[1].pr_host, sizeof(fz_rules[1].pr_host), "%s", "*.example.org");
	fz_rules[2].pr_id = "any-a";
	snprintf(fz_rules[2].pr_host, sizeof(fz_rules[2].pr_host), "%s", "*.a");
	for (int i = 0; i < 3; i++) {
		fz_rules[i].pr_ports = fz_ports;
		fz_rules[i].pr_nports = 1;
	}
	fz_pol.p_name = "fuzz";
	fz_pol.p_rules = fz_rules;
	fz_pol.p_nrules = 3;
	memset(&pool, 0, sizeof(pool));
	pool.nc_addr.na_family = AF_INET;
	pool.nc_addr.na_u.v4.s_addr = htonl(0xc6120000U);	/* 198.18.0.0/26 */
	pool.nc_prefix = 26;
	if ((fz_map = proxy_map_new(&pool, 8)) == NULL)
		abort();
	return 0;
}

static int fz_grant;

static int
fz_approved(void *arg, const char *name)
{
	return fz_grant && strlen(name) % 2 == 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proxy_dns_result res, res2;
	uint8_t resp[DNS_RESP_MAX], resp2[DNS_RESP_MAX];
	char name[HOSTNAME_MAX + 1];
	size_t len, len2;
	uint32_t a;

	if (fz_map == NULL)
		LLVMFuzzerInitialize(NULL, NULL);
	fz_pol.p_mode = size > 0 && (data[size - 1] & 1) ? POLICY_MODE_REPORT :
	    POLICY_MODE_ENFORCE;
	/* The input's last byte: an operator's grant for names of an odd length. */
	fz_grant = size > 0 && (data[size - 1] & 2);
	if (proxy_dns_answer_ap(&fz_pol, fz_map, fz_approved, NULL, data, size, 1,
	    resp, sizeof(resp), &len, &res) == -1)
		abort();	/* DNS_RESP_MAX is always enough */
	/* Granted only where asked, and never over a rule (a deny rule's name). */
	if (res.dr_approved && (!fz_grant || strlen(res.dr_qname) % 2 == 0 ||
	    res.dr_rule != NULL || res.dr_unknown))
		abort();
	if (len > DNS_EDNS_UDP)
		abort();
	if ((res.dr_outcome == PROXY_DNS_DROP) != (len == 0))
		abort();
	if (len > 0) {
		if (len < 12 || resp[0] != data[0] || resp[1] != data[1] ||
		    !(resp[2] & 0x80))
			abort();
	}
	if (res.dr_outcome == PROXY_DNS_ANSWER) {
		a = ntohl(res.dr_addr.na_u.v4.s_addr);
		if (a <= 0xc6120000U || a >= 0xc612003fU)
			abort();	/* outside the pool, network or broadcast */
		if (proxy_map_addr_to_name(fz_map, &res.dr_addr, name,
		    sizeof(name)) == -1 || strcmp(name, res.dr_qname) != 0)
			abort();
		/* The A record's data ends the message, or precedes our OPT. */
		if (memcmp(resp + len - 4 - (resp[11] ? 11 : 0),
		    &res.dr_addr.na_u.v4.s_addr, 4) != 0)
			abort();
	}
	if (proxy_dns_answer(&fz_pol, NULL, data, size, 0, resp2, sizeof(resp2),
	    &len2, &res2) == -1)
		abort();
	if (res.dr_outcome == PROXY_DNS_ANSWER && res2.dr_outcome !=
	    PROXY_DNS_REFUSED)
		abort();	/* no sandbox: never an answer */
	return 0;
}
