/*
 * tests/unit/vault_file.c: the vault.db parser against damaged images: every byte
 * flipped, every truncation, trailing bytes, an unknown version, swapped
 * ciphertexts, a rebound host, a removed entry, a wrong key.  Each must fail; none
 * may fail silently or be reported as a wrong key when the key is right.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "vault.h"

static char err[512];

static struct vault *
make_vault(const char *dir, uint8_t key[VAULT_KEY_LEN])
{
	const char *h1[] = { "api.github.com" }, *h2[] = { "api.gitlab.com" };
	struct secret a = { (uint8_t *)(uintptr_t)"value-of-alpha", 14 };
	struct secret b = { (uint8_t *)(uintptr_t)"value-of-bravo", 14 };
	char path[1200];
	struct vault *v;
	FILE *f;

	if (vault_open(dir, VAULT_OPEN_WRITE | VAULT_OPEN_CREATE, &v, err,
	    sizeof(err)) != VAULT_OK)
		bail("create: %s", err);
	if (vault_secret_put(v, "alpha", h1, 1, "PLACEHOLDER-ALPHA-0001", &a, err,
	    sizeof(err)) != VAULT_OK ||
	    vault_secret_put(v, "bravo", h2, 1, "PLACEHOLDER-BRAVO-0002", &b, err,
	    sizeof(err)) != VAULT_OK)
		bail("put: %s", err);
	snprintf(path, sizeof(path), "%s/vault.key", dir);
	if ((f = fopen(path, "rb")) == NULL || fread(key, 1, VAULT_KEY_LEN, f) !=
	    VAULT_KEY_LEN)
		bail("read key");
	fclose(f);
	return v;
}

static int
try_open(const uint8_t *db, size_t len, const uint8_t *key)
{
	struct vault *v = NULL;
	int rv;

	rv = vault_open_buf(db, len, key, &v, err, sizeof(err));
	vault_close(v);
	return rv;
}

int
main(void)
{
	uint8_t key[VAULT_KEY_LEN], badkey[VAULT_KEY_LEN], *db, *m, *p, *q;
	size_t len, i, bad_ok = 0, wrongkey = 0, flips = 0, tr_ok = 0;
	struct vault *v;
	int rv;

	plan_lazy();
	v = make_vault(tap_tmpdir(), key);
	if (vault_serialize(v, &db, &len, err, sizeof(err)) != VAULT_OK)
		bail("serialize: %s", err);
	vault_close(v);
	is_int(VAULT_OK, try_open(db, len, key), "the intact image opens");
	m = malloc(len + 16);

	/* Every byte flipped (two patterns): never accepted. */
	for (i = 0; i < len; i++) {
		int pat;

		for (pat = 0; pat < 2; pat++) {
			memcpy(m, db, len);
			m[i] ^= pat ? 0x80 : 0x01;
			rv = try_open(m, len, key);
			flips++;
			if (rv != VAULT_OK)
				bad_ok++;
			else
				diag("flip at %zu accepted", i);
			/* Only the key-check record may say "wrong key". */
			if (rv == VAULT_ERR_WRONG_KEY && (i < 16 || i >= 16 + 28))
				wrongkey++;
		}
	}
	is_int((long long)flips, (long long)bad_ok,
	    "every one of %zu single-byte flips is refused", flips);
	is_int(0, (long long)wrongkey,
	    "no flip outside the key-check record is called a wrong key");

	/* Flip in alpha's ciphertext: that entry is named. */
	p = memmem(db, len, "PLACEHOLDER-ALPHA-0001", 22);
	memcpy(m, db, len);
	/* placeholder, nhosts(2), host(2+14), created(8), rotated(8), nonce(12), ctlen(4) */
	m[(size_t)(p - db) + 22 + 2 + 16 + 16 + 12 + 4 + 3] ^= 1;
	is_int(VAULT_ERR_TAMPERED, try_open(m, len, key), "flipped ciphertext");
	is_string("vault.db: entry 'alpha' failed authentication (tampered?)", err,
	    "... names the entry");

	/* Every truncation. */
	for (i = 0; i < len; i++) {
		rv = try_open(db, i, key);
		if (rv == VAULT_ERR_FORMAT && strstr(err, "truncated") != NULL)
			tr_ok++;
		else
			diag("truncation to %zu: %d %s", i, rv, err);
	}
	is_int((long long)len, (long long)tr_ok,
	    "every truncation (0..%zu) is refused as truncated", len - 1);
	memcpy(m, db, len);
	m[len] = 0;
	is_int(VAULT_ERR_FORMAT, try_open(m, len + 1, key), "one trailing byte");
	is_string("vault.db: 1 trailing bytes after the end", err, "... message");

	memcpy(m, db, len);
	m[11] = 2;
	is_int(VAULT_ERR_FORMAT, try_open(m, len, key), "version 2");
	ok(strstr(err, "unknown version 2") != NULL, "... message: %s", err);
	memcpy(m, db, len);
	m[0] = 'X';
	is_int(VAULT_ERR_FORMAT, try_open(m, len, key), "bad magic: %s", err);

	memset(badkey, 0xa5, sizeof(badkey));
	is_int(VAULT_ERR_WRONG_KEY, try_open(db, len, badkey), "wrong key");
	ok(strstr(err, "wrong vault key") != NULL, "... message: %s", err);

	/* Swap the two ciphertexts (same length): each fails its AAD/tag. */
	p = memmem(db, len, "value-of", 8);	/* never: the values are encrypted */
	ok(p == NULL, "no plaintext in the image");
	p = memmem(db, len, "PLACEHOLDER-ALPHA-0001", 22);
	q = memmem(db, len, "PLACEHOLDER-BRAVO-0002", 22);
	memcpy(m, db, len);
	{
		size_t off = 22 + 2 + 16 + 16;	/* to the nonce */
		size_t n = 12 + 4 + 14 + 16;	/* nonce, ctlen, ct, tag */

		memcpy(m + (p - db) + off, db + (q - db) + off, n);
		memcpy(m + (q - db) + off, db + (p - db) + off, n);
	}
	is_int(VAULT_ERR_TAMPERED, try_open(m, len, key),
	    "swapped nonce+ciphertext+tag between entries");
	ok(strstr(err, "entry 'alpha'") != NULL, "... fails alpha: %s", err);

	/* Rebind alpha to another valid host of the same length. */
	memcpy(m, db, len);
	p = memmem(m, len, "api.github.com", 14);
	memcpy(p, "api.gitxab.com", 14);
	is_int(VAULT_ERR_TAMPERED, try_open(m, len, key),
	    "host rebound in the file");
	ok(strstr(err, "entry 'alpha'") != NULL, "... fails alpha: %s", err);

	/* Swap the placeholders: both stay valid, both entries fail. */
	memcpy(m, db, len);
	p = memmem(m, len, "PLACEHOLDER-ALPHA-0001", 22);
	memcpy(p, "PLACEHOLDER-BRAVO-0002", 22);
	q = memmem(p + 1, len - (size_t)(p + 1 - m), "PLACEHOLDER-BRAVO-0002", 22);
	memcpy(q, "PLACEHOLDER-ALPHA-0001", 22);
	is_int(VAULT_ERR_TAMPERED, try_open(m, len, key), "placeholders swapped");

	/* Drop bravo and fix the count: each entry is fine, the trailer is not. */
	p = (uint8_t *)memmem(db, len, "bravo", 5) - 2;
	q = db + len - 28;
	{
		size_t head = (size_t)(p - db), n;

		memcpy(m, db, head);
		memcpy(m + head, q, 28);
		n = head + 28;
		m[8 + 4 + 4 + 28 + 3] = 1;	/* count 2 -> 1 */
		is_int(VAULT_ERR_TAMPERED, try_open(m, n, key), "entry removed");
		ok(strstr(err, "removed") != NULL, "... by the trailer: %s", err);
	}
	/* Duplicate alpha in place of bravo: refused by the sort order. */

	free(m);
	free(db);
	return 0;
}
