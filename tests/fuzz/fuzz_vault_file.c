/*
 * tests/fuzz/fuzz_vault_file.c: the vault.db parser (vault_open_buf) on arbitrary
 * bytes with a fixed key (bytes 0..31).  When an image parses, every accessor runs
 * and every value is decrypted and wiped, so the fuzzer also walks the accepted
 * paths.  The seed corpus holds images made under that key (an empty vault, one with
 * two secrets) and damaged copies.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vault.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t key[VAULT_KEY_LEN];
	struct vault_info vi;
	struct secret s;
	struct vault *v = NULL;
	char err[512];
	size_t i, j;

	for (i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)i;
	if (vault_open_buf(data, size, key, &v, err, sizeof(err)) != VAULT_OK)
		return 0;
	for (i = 0; i < vault_count(v); i++) {
		if (vault_info_get(v, i, &vi) != VAULT_OK)
			abort();
		if (vault_secret_find(v, vi.vi_name) != (int)i ||
		    vault_secret_find_placeholder(v, vi.vi_placeholder) != (int)i)
			abort();
		for (j = 0; j < vi.vi_nhosts; j++)
			(void)vault_secret_allows_host(v, vi.vi_name,
			    vi.vi_hosts[j][0] == '*' ? vi.vi_hosts[j] + 2 :
			    vi.vi_hosts[j]);
		if (vault_secret_get(v, vi.vi_name, &s, err, sizeof(err)) !=
		    VAULT_OK || s.n == 0)
			abort();	/* open authenticated every entry */
		secret_free(&s);
	}
	vault_close(v);
	return 0;
}
