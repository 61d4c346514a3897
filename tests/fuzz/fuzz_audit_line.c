/*
 * tests/fuzz/fuzz_audit_line.c: the audit verifier over arbitrary bytes, split into
 * lines.  Each line goes to the chain as it is, and once more with its hash
 * recomputed (when it has the hash suffix), so the fuzzer gets past the hash into
 * the JSON and chain checks.  Promises: a line the chain accepts parses again to the
 * same seq, and any one byte changed in it makes it fail.  The first line is also
 * fed to audit_time_parse and audit_host_match.
 *
 * The writer's own records (checkpoint, rotate) are checked by the same parser;
 * the lines with their hash recomputed also go to a third chain that checks
 * checkpoint signatures and links with FZ_PUB, the public half of the test key
 * below, so the seeds' signed checkpoints (written with it by
 * `audit_gen --sign-key`, the key saved to a file) get the fuzzer into the
 * signature checks.  Promise: a line that chain takes, the plain one takes too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "../../audit/audit_int.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/*
 * A test key, nothing else's (its private half, for making seeds):
 *	-----BEGIN PRIVATE KEY-----
 *	MC4CAQAwBQYDK2VwBCIEIK3YS0QVcASg1GjEuXIwEZ25mIb3YFMKSot98+/L/2sh
 *	-----END PRIVATE KEY-----
 */
#define FZ_PUB	"-----BEGIN PUBLIC KEY-----\n" \
	"MCowBQYDK2VwAyEALZRnf72LgRgrpadh+aF9Pt4p+uqXFw3zVsuRiL4dW60=\n" \
	"-----END PUBLIC KEY-----\n"
static struct audit_pubkey *fz_pub;

#define SUFFIX	(sizeof(AUDIT_HASH_SEP) - 1 + AUDIT_HASH_HEX + \
	    sizeof(AUDIT_HASH_END) - 1)

static void
fz_promises(const char *line, size_t len, size_t salt)
{
	struct audit_line a, b;
	char why[256], *copy;
	size_t pos;

	if (audit_line_parse(line, len, NULL, 0, &a, why, sizeof(why)) == -1 ||
	    audit_line_parse(line, len, NULL, 0, &b, why, sizeof(why)) == -1 ||
	    a.al_seq != b.al_seq || strcmp(a.al_hash, b.al_hash) != 0)
		abort();
	if ((copy = malloc(len)) == NULL)
		return;
	memcpy(copy, line, len);
	pos = salt % len;
	copy[pos] ^= (char)(1 + salt % 255);
	if (audit_line_parse(copy, len, NULL, 0, &b, why, sizeof(why)) == 0)
		abort();
	free(copy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct audit_chain raw, fixed, sig;
	const char *p = (const char *)data, *end = p + size, *nl;
	char why[256], hex[AUDIT_HASH_HEX + 1], *line;
	struct audit_line al;
	long long ms;
	size_t len, n = 0;

	char err[256];

	if (fz_pub == NULL && (fz_pub = audit_pubkey_from_pem(FZ_PUB,
	    strlen(FZ_PUB), err, sizeof(err))) == NULL)
		abort();
	audit_chain_init(&raw, NULL, 0);
	audit_chain_init(&fixed, NULL, 0);
	audit_chain_init(&sig, NULL, 0);
	sig.ac_pubkey = fz_pub;
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		len = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		if (audit_chain_add(&raw, p, len, why, sizeof(why)) == -1)
			audit_chain_init(&raw, NULL, 0);
		if (len > SUFFIX && (line = malloc(len + 1)) != NULL) {
			memcpy(line, p, len);
			line[len] = '\0';
			if (n == 0) {
				(void)audit_time_parse(line, (int)(len & 1), &ms);
				(void)audit_host_match(line, line + len / 2);
			}
			if (audit_hash_compute(line, len - SUFFIX, NULL, 0, hex) == 0)
				memcpy(line + len - SUFFIX +
				    sizeof(AUDIT_HASH_SEP) - 1, hex, AUDIT_HASH_HEX);
			if (audit_chain_add(&fixed, line, len, why,
			    sizeof(why)) == 0)
				fz_promises(line, len, len * 31 + n);
			else
				audit_chain_init(&fixed, NULL, 0);
			if (audit_chain_add(&sig, line, len, why, sizeof(why)) == 0) {
				if (audit_line_parse(line, len, NULL, 0, &al, why,
				    sizeof(why)) == -1)
					abort();
			} else {
				audit_chain_init(&sig, NULL, 0);
				sig.ac_pubkey = fz_pub;
			}
			free(line);
		}
		n++;
		p += len + 1;
	}
	return 0;
}
