/*
 * tests/unit/vault_store.c: the vault through its files: create, put/get round trip,
 * host binding, placeholders and their guards, key and db permissions, wrong key,
 * rotate-key (and a crash at every step of it), and a canary that must never appear
 * in clear in any file of the state directory.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tap.h"
#include "vault.h"

#define CANARY	"CANARY-7f3a9c1e-do-not-leak-0042"

static char err[512];

static int
file_read(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f;
	long n;

	if ((f = fopen(path, "rb")) == NULL)
		return -1;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	*buf = malloc((size_t)n + 1);
	*len = fread(*buf, 1, (size_t)n, f);
	fclose(f);
	return 0;
}

static int
file_write(const char *path, const void *buf, size_t len, mode_t mode)
{
	FILE *f;

	unlink(path);
	if ((f = fopen(path, "wb")) == NULL)
		return -1;
	fwrite(buf, 1, len, f);
	fclose(f);
	return chmod(path, mode);
}

static const char *
pathof(const char *dir, const char *name)
{
	static char p[4][1200];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

static int
put(struct vault *v, const char *name, const char *host, const char *ph,
    const char *value)
{
	struct secret s = { (uint8_t *)(uintptr_t)value, strlen(value) };
	const char *hosts[1] = { host };

	return vault_secret_put(v, name, hosts, 1, ph, &s, err, sizeof(err));
}

static int
get_is(const struct vault *v, const char *name, const char *want)
{
	struct secret s;
	int pass;

	if (vault_secret_get(v, name, &s, err, sizeof(err)) != VAULT_OK)
		return ok(0, "get %s: %s", name, err);
	pass = s.n == strlen(want) && memcmp(s.p, want, s.n) == 0;
	secret_free(&s);
	ok(s.p == NULL && s.n == 0, "secret_free resets the secret");
	return ok(pass, "get %s returns the value put", name);
}

static int
mode_of(const char *path)
{
	struct stat st;

	if (stat(path, &st) == -1)
		return -1;
	return st.st_mode & 07777;
}

/* Does needle appear in any regular file under dir? */
static int
dir_contains(const char *dir, const void *needle, size_t n, char *which,
    size_t wlen)
{
	struct dirent *de;
	uint8_t *buf;
	size_t len;
	DIR *d;
	int found = 0;

	if ((d = opendir(dir)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' && (de->d_name[1] == '\0' ||
		    strcmp(de->d_name, "..") == 0))
			continue;
		if (file_read(pathof(dir, de->d_name), &buf, &len) == -1)
			continue;
		if (len >= n && memmem(buf, len, needle, n) != NULL) {
			snprintf(which, wlen, "%s", de->d_name);
			found = 1;
		}
		free(buf);
	}
	closedir(d);
	return found;
}

static void
test_create_roundtrip(const char *dir)
{
	struct vault_info vi;
	struct vault *v;
	const char *ph;
	int rv, i;

	is_int(VAULT_ERR_ABSENT, vault_open(dir, 0, &v, err, sizeof(err)),
	    "no vault: open without create is refused");
	ok(strstr(err, "vault.key is missing") != NULL, "... clearly: %s", err);
	rv = vault_open(dir, VAULT_OPEN_WRITE | VAULT_OPEN_CREATE, &v, err,
	    sizeof(err));
	if (!is_int(VAULT_OK, rv, "create a vault: %s", err))
		bail("cannot create a vault");
	is_int(0600, mode_of(pathof(dir, "vault.key")), "vault.key is 0600");
	is_int(0600, mode_of(pathof(dir, "vault.db")), "vault.db is 0600");
	is_int(VAULT_OK, put(v, "github_token", "api.github.com", NULL,
	    "ghp_realvalue_1234567890"), "put github_token: %s", err);
	is_int(VAULT_OK, put(v, "wild", "*.example.com", "sk-AIRLOCK-0123456789abcdef",
	    CANARY), "put a canary bound to *.example.com: %s", err);
	is_int(VAULT_OK, vault_commit(v, err, sizeof(err)), "commit: %s", err);
	vault_close(v);

	rv = vault_open(dir, 0, &v, err, sizeof(err));
	if (!is_int(VAULT_OK, rv, "reopen read-only: %s", err))
		bail("cannot reopen");
	is_int(2, (long long)vault_count(v), "two secrets");
	get_is(v, "github_token", "ghp_realvalue_1234567890");
	get_is(v, "wild", CANARY);
	is_int(VAULT_ERR_NOT_FOUND, vault_secret_get(v, "nope", &(struct secret){ 0 },
	    err, sizeof(err)), "get of an unknown name: not found");
	i = vault_secret_find(v, "github_token");
	vault_info_get(v, (size_t)i, &vi);
	ph = vi.vi_placeholder;
	ok(strncmp(ph, "AIRLOCK_PLACEHOLDER_GITHUB_TOKEN_", 33) == 0 &&
	    strlen(ph) == 33 + 16 && strspn(ph + 33, "0123456789abcdef") == 16,
	    "default placeholder shape: %s", ph);
	is_int(i, vault_secret_find_placeholder(v, ph), "find by placeholder");
	is_int(-1, vault_secret_find_placeholder(v, "AIRLOCK_PLACEHOLDER_X"),
	    "unknown placeholder: -1");
	ok(vi.vi_created > 0 && vi.vi_rotated == vi.vi_created, "timestamps set");
	is_string("api.github.com", vi.vi_hosts[0], "host stored");
	ok(vault_secret_allows_host(v, "github_token", "api.github.com"),
	    "bound host allowed");
	ok(vault_secret_allows_host(v, "github_token", "API.GitHub.com."),
	    "bound host allowed after normalisation");
	ok(!vault_secret_allows_host(v, "github_token", "api.github.com.evil.net"),
	    "other host refused");
	ok(!vault_secret_allows_host(v, "github_token", "github.com"),
	    "parent host refused");
	ok(vault_secret_allows_host(v, "wild", "a.b.example.com"),
	    "*.example.com allows a.b.example.com");
	ok(!vault_secret_allows_host(v, "wild", "example.com"),
	    "*.example.com refuses example.com");
	ok(!vault_secret_allows_host(v, "nope", "api.github.com"),
	    "unknown secret allows nothing");
	vault_close(v);
}

static void
test_nonce_and_guards(const char *dir)
{
	const char *hosts2[2] = { "a.example.org", "A.EXAMPLE.ORG" };
	uint8_t *db1, *db2, *big;
	struct secret s;
	struct vault *v;
	size_t l1, l2;
	long long created;
	struct vault_info vi;

	if (vault_open(dir, VAULT_OPEN_WRITE, &v, err, sizeof(err)) != VAULT_OK)
		bail("open: %s", err);
	/* Two secrets with one value: different nonces and ciphertexts. */
	is_int(VAULT_OK, put(v, "same1", "a.example.org", NULL, "samevalue-xyz"),
	    "put same1");
	is_int(VAULT_OK, put(v, "same2", "a.example.org", NULL, "samevalue-xyz"),
	    "put same2");
	vault_serialize(v, &db1, &l1, err, sizeof(err));
	ok(memmem(db1, l1, "samevalue-xyz", 13) == NULL,
	    "the value is not in the serialised db");
	{
		/* Ciphertexts sit right before each entry's tag: compare via get. */
		uint8_t *a = memmem(db1, l1, "same1", 5), *b = memmem(db1, l1,
		    "same2", 5);
		size_t meta = 2 + 5 + 2 + strlen("AIRLOCK_PLACEHOLDER_SAME1_") +
		    16 + 2 + 2 + 13 + 16;

		ok(a != NULL && b != NULL && memcmp(a - 2 + meta, b - 2 + meta,
		    12 + 4 + 13) != 0, "same value twice: nonce+ciphertext differ");
	}
	created = 0;
	vault_info_get(v, (size_t)vault_secret_find(v, "same1"), &vi);
	created = vi.vi_created;
	is_int(VAULT_OK, put(v, "same1", "a.example.org", NULL, "samevalue-xyz"),
	    "put same1 again (same value)");
	vault_serialize(v, &db2, &l2, err, sizeof(err));
	ok(l1 == l2 && memcmp(db1, db2, l1) != 0,
	    "re-put of the same value changes the file (fresh nonce)");
	vault_info_get(v, (size_t)vault_secret_find(v, "same1"), &vi);
	is_int(created, vi.vi_created, "replace keeps created");
	ok(strncmp(vi.vi_placeholder, "AIRLOCK_PLACEHOLDER_SAME1_", 26) == 0,
	    "replace keeps the placeholder");
	free(db1);
	free(db2);

	s.p = (uint8_t *)(uintptr_t)"v4lue-abc";
	s.n = 9;
	is_int(VAULT_OK, vault_secret_put(v, "dup", hosts2, 2, NULL, &s, err,
	    sizeof(err)), "repeated host spelled twice: accepted");
	vault_info_get(v, (size_t)vault_secret_find(v, "dup"), &vi);
	is_int(1, (long long)vi.vi_nhosts, "... and stored once");

	/* Guards: each refused with VAULT_ERR_INVALID and a message. */
	is_int(VAULT_ERR_INVALID, put(v, "x", "a.example.org", NULL, ""),
	    "empty value refused: %s", err);
	big = malloc(VAULT_VALUE_MAX + 1);
	memset(big, 'a', VAULT_VALUE_MAX + 1);
	s.p = big;
	s.n = VAULT_VALUE_MAX + 1;
	is_int(VAULT_ERR_INVALID, vault_secret_put(v, "x", hosts2, 1, NULL, &s,
	    err, sizeof(err)), "65537-byte value refused: %s", err);
	s.n = VAULT_VALUE_MAX;
	is_int(VAULT_OK, vault_secret_put(v, "big", hosts2, 1, NULL, &s, err,
	    sizeof(err)), "65536-byte value accepted");
	free(big);
	is_int(VAULT_ERR_INVALID, put(v, "x", "a.example.org", "short-ph", "v1v1v1"),
	    "placeholder under 16 chars refused: %s", err);
	is_int(VAULT_ERR_INVALID, put(v, "x", "a.example.org",
	    "has a space in it ok", "v1v1v1"), "placeholder with a space refused");
	is_int(VAULT_ERR_INVALID, put(v, "x", "a.example.org",
	    "tab\there-0123456789", "v1v1v1"), "placeholder with a tab refused");
	is_int(VAULT_ERR_INVALID, put(v, "x", "a.example.org",
	    "ghp_0123456789abcdef", "xxghp_0123456789abcdefxx"),
	    "value containing the placeholder refused: %s", err);
	ok(strstr(err, "xxghp") == NULL, "... without echoing the value");
	is_int(VAULT_ERR_INVALID, put(v, "x", "a.example.org",
	    "ghp_0123456789abcdef", "456789"),
	    "placeholder containing the value refused");
	is_int(VAULT_ERR_INVALID, put(v, "x", "a.example.org",
	    "sk-AIRLOCK-0123456789abcdef", "v1v1v1"),
	    "placeholder equal to another secret's refused: %s", err);
	is_int(VAULT_ERR_INVALID, put(v, "x", "a.example.org",
	    "sk-AIRLOCK-0123456789abcdef-2", "v1v1v1"),
	    "placeholder containing another secret's refused");
	is_int(VAULT_ERR_INVALID, put(v, "x", "a.example.org", "AIRLOCK-0123456789",
	    "v1v1v1"), "placeholder inside another secret's refused");
	is_int(VAULT_ERR_INVALID, put(v, "bad name", "a.example.org", NULL, "v1"),
	    "name with a space refused");
	is_int(VAULT_ERR_INVALID, put(v, "_x", "a.example.org", NULL, "v1"),
	    "name starting with _ refused");
	is_int(VAULT_ERR_INVALID, put(v, "x", "*.com", NULL, "v1"),
	    "host *.com refused: %s", err);
	is_int(VAULT_ERR_INVALID, put(v, "x", "10.0.0.1", NULL, "v1"),
	    "IP literal host refused: %s", err);
	s.p = (uint8_t *)(uintptr_t)"v1";
	s.n = 2;
	is_int(VAULT_ERR_INVALID, vault_secret_put(v, "x", hosts2, 0, NULL, &s,
	    err, sizeof(err)), "no host refused");
	is_int(-1, vault_secret_find(v, "x"), "nothing was added by refusals");

	is_int(VAULT_OK, vault_secret_remove(v, "same2", err, sizeof(err)),
	    "rm same2");
	is_int(VAULT_ERR_NOT_FOUND, vault_secret_remove(v, "same2", err,
	    sizeof(err)), "rm again: not found");
	is_int(VAULT_OK, vault_commit(v, err, sizeof(err)), "commit");
	vault_close(v);
	if (vault_open(dir, 0, &v, err, sizeof(err)) != VAULT_OK)
		bail("reopen: %s", err);
	is_int(-1, vault_secret_find(v, "same2"), "removed secret is gone");
	ok(vault_secret_find(v, "big") != -1, "others kept");
	is_int(VAULT_ERR_INVALID, vault_commit(v, err, sizeof(err)),
	    "commit on a read-only open refused");
	vault_close(v);
}

static void
test_perms_and_keys(const char *dir)
{
	uint8_t *k, *db, other[VAULT_KEY_LEN];
	char key[1100];
	size_t kl, dl;
	struct vault *v;
	int rv;

	snprintf(key, sizeof(key), "%s/vault.key", dir);
	file_read(key, &k, &kl);
	chmod(key, 0640);
	is_int(VAULT_ERR_PERM, vault_open(dir, 0, &v, err, sizeof(err)),
	    "vault.key 0640 refused");
	is_string("vault.key: mode 0640, must be 0600", err, "... message");
	chmod(key, 0604);
	is_int(VAULT_ERR_PERM, vault_open(dir, 0, &v, err, sizeof(err)),
	    "vault.key 0604 refused");
	is_string("vault.key: mode 0604, must be 0600", err, "... message");
	chmod(key, 0644);
	is_int(VAULT_ERR_PERM, vault_open(dir, VAULT_OPEN_WRITE |
	    VAULT_OPEN_CREATE, &v, err, sizeof(err)),
	    "vault.key 0644 refused even with create");
	chmod(key, 0400);
	is_int(VAULT_OK, vault_open(dir, 0, &v, err, sizeof(err)),
	    "vault.key 0400 accepted");
	vault_close(v);
	chmod(key, 0600);
	chmod(pathof(dir, "vault.db"), 0644);
	is_int(VAULT_ERR_PERM, vault_open(dir, 0, &v, err, sizeof(err)),
	    "vault.db 0644 refused: %s", err);
	chmod(pathof(dir, "vault.db"), 0600);

	/* A symlinked key is refused (O_NOFOLLOW). */
	rename(key, pathof(dir, "real.key"));
	ok(symlink("real.key", key) == 0, "symlink made");
	is_int(VAULT_ERR_PERM, vault_open(dir, 0, &v, err, sizeof(err)),
	    "symlinked vault.key refused: %s", err);
	unlink(key);
	rename(pathof(dir, "real.key"), key);

	file_write(key, k, 31, 0600);
	rv = vault_open(dir, 0, &v, err, sizeof(err));
	ok(rv == VAULT_ERR_FORMAT && strstr(err, "must be 32") != NULL,
	    "31-byte key refused: %s", err);
	memset(other, 0x5a, sizeof(other));
	file_write(key, other, sizeof(other), 0600);
	rv = vault_open(dir, 0, &v, err, sizeof(err));
	is_int(VAULT_ERR_WRONG_KEY, rv, "another key: wrong key");
	ok(strstr(err, "wrong vault key") != NULL, "... message: %s", err);
	file_write(key, k, kl, 0600);
	is_int(VAULT_OK, vault_open(dir, 0, &v, err, sizeof(err)),
	    "the right key opens again");
	vault_close(v);

	/* A db without a key is never given a fresh key by create. */
	file_read(pathof(dir, "vault.db"), &db, &dl);
	unlink(key);
	is_int(VAULT_ERR_ABSENT, vault_open(dir, VAULT_OPEN_WRITE |
	    VAULT_OPEN_CREATE, &v, err, sizeof(err)),
	    "db without key: refused, not re-keyed");
	file_write(key, k, kl, 0600);
	free(k);
	free(db);
}

static void
test_rotate(const char *dir)
{
	uint8_t *k1, *k2, *d1, *d2, *k;
	size_t k1l, k2l, d1l, d2l, kl;
	struct vault *v;
	char which[256];

	file_read(pathof(dir, "vault.key"), &k1, &k1l);
	file_read(pathof(dir, "vault.db"), &d1, &d1l);
	if (vault_open(dir, VAULT_OPEN_WRITE, &v, err, sizeof(err)) != VAULT_OK)
		bail("open: %s", err);
	is_int(VAULT_OK, vault_rotate_key(v, err, sizeof(err)), "rotate-key: %s",
	    err);
	get_is(v, "wild", CANARY);
	vault_close(v);
	ok(access(pathof(dir, "vault.key.new"), F_OK) == -1,
	    "no vault.key.new left");
	file_read(pathof(dir, "vault.key"), &k2, &k2l);
	file_read(pathof(dir, "vault.db"), &d2, &d2l);
	ok(k2l == 32 && memcmp(k1, k2, 32) != 0, "the key changed");
	is_int(0600, mode_of(pathof(dir, "vault.key")), "new key 0600");
	if (vault_open(dir, 0, &v, err, sizeof(err)) != VAULT_OK)
		bail("open after rotate: %s", err);
	get_is(v, "github_token", "ghp_realvalue_1234567890");
	get_is(v, "wild", CANARY);
	vault_close(v);
	file_write(pathof(dir, "vault.key"), k1, k1l, 0600);
	is_int(VAULT_ERR_WRONG_KEY, vault_open(dir, 0, &v, err, sizeof(err)),
	    "the old key no longer opens the db");

	/* Crash after step 2: old key, new key beside it, db under new key. */
	file_write(pathof(dir, "vault.key.new"), k2, k2l, 0600);
	is_int(VAULT_OK, vault_open(dir, 0, &v, err, sizeof(err)),
	    "crash after db rename: read-only open uses vault.key.new");
	get_is(v, "wild", CANARY);
	vault_close(v);
	ok(access(pathof(dir, "vault.key.new"), F_OK) == 0,
	    "... and a read-only open changes nothing");
	is_int(VAULT_OK, vault_open(dir, VAULT_OPEN_WRITE, &v, err, sizeof(err)),
	    "a writer opens it too");
	vault_close(v);
	file_read(pathof(dir, "vault.key"), &k, &kl);
	ok(kl == 32 && memcmp(k, k2, 32) == 0 &&
	    access(pathof(dir, "vault.key.new"), F_OK) == -1,
	    "... and finishes the rotation (vault.key = new key)");
	free(k);

	/* Crash after step 1: old key and db, new key beside them. */
	file_write(pathof(dir, "vault.key"), k1, k1l, 0600);
	file_write(pathof(dir, "vault.db"), d1, d1l, 0600);
	file_write(pathof(dir, "vault.key.new"), k2, k2l, 0600);
	is_int(VAULT_OK, vault_open(dir, VAULT_OPEN_WRITE, &v, err, sizeof(err)),
	    "crash before db rename: opens with the old key");
	get_is(v, "github_token", "ghp_realvalue_1234567890");
	vault_close(v);
	ok(access(pathof(dir, "vault.key.new"), F_OK) == -1,
	    "... and the stale vault.key.new is removed");
	chmod(pathof(dir, "vault.key"), 0600);
	file_write(pathof(dir, "vault.key.new"), k2, k2l, 0644);
	is_int(VAULT_ERR_PERM, vault_open(dir, 0, &v, err, sizeof(err)),
	    "a loose vault.key.new is refused too: %s", err);
	unlink(pathof(dir, "vault.key.new"));

	ok(dir_contains(dir, CANARY, strlen(CANARY), which, sizeof(which)) == 0,
	    "the canary value is in no file of the state dir, not even vault.db");
	ok(dir_contains(dir, "ghp_realvalue", 13, which, sizeof(which)) == 0,
	    "nor the other value");
	ok(dir_contains(dir, "sk-AIRLOCK-0123456789abcdef", 27, which,
	    sizeof(which)) == 1 && strcmp(which, "vault.db") == 0,
	    "(the grep works: the placeholder is found in vault.db)");
	free(k1);
	free(k2);
	free(d1);
	free(d2);
}

int
main(void)
{
	char dir[1024];

	plan_lazy();
	snprintf(dir, sizeof(dir), "%s/state", tap_tmpdir());
	test_create_roundtrip(dir);
	test_nonce_and_guards(dir);
	test_perms_and_keys(dir);
	test_rotate(dir);
	ok(vault_process_harden() == 0, "vault_process_harden");
	return 0;
}
