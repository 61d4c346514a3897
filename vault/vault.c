/*
 * vault/vault.c: see include/vault.h.  Opening, the secret API, commit and key
 * rotation.  Beneath it: the file format and the names and placeholders it accepts
 * (vault_file.c), the file system steps (vault_fs.c), the interception CAs
 * (vault_ca.c) and their leaf cache (vault_ca_cache.c).
 *
 * Key rotation and crashes.  rotate-key writes, in this order, each step atomic:
 *	1. vault.key.new	(new key K2)
 *	2. vault.db		(everything re-encrypted under K2)
 *	3. vault.key.new -> vault.key
 * vault_open() reads vault.key and, if present, vault.key.new, and tries the key check
 * with vault.key first, then vault.key.new.  So whatever step a crash interrupts, one
 * of the two keys opens the db: before 2 it is vault.key (the leftover .new is removed
 * by the next writer), after 2 it is vault.key.new (and the next writer finishes
 * step 3).  The db and the key are never both replaced by one rename, and no state
 * exists in which neither key fits.
 */
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "hostname.h"
#include "vault_int.h"

#define VAULT_KEY_FILE		"vault.key"
#define VAULT_KEY_NEW_FILE	"vault.key.new"
#define VAULT_DB_FILE		"vault.db"
#define VAULT_LOCK_FILE		"vault.lock"

void
secret_free(struct secret *s)
{
	if (s == NULL)
		return;
	if (s->p != NULL)
		OPENSSL_clear_free(s->p, s->n);
	s->p = NULL;
	s->n = 0;
}

const char *
vault_strerror(int err)
{
	switch (err) {
	case VAULT_OK:
		return "ok";
	case VAULT_ERR_SYS:
		return "system error";
	case VAULT_ERR_PERM:
		return "unsafe file permissions";
	case VAULT_ERR_FORMAT:
		return "malformed vault file";
	case VAULT_ERR_WRONG_KEY:
		return "wrong vault key";
	case VAULT_ERR_TAMPERED:
		return "authentication failed";
	case VAULT_ERR_ABSENT:
		return "no vault";
	case VAULT_ERR_INVALID:
		return "invalid argument";
	case VAULT_ERR_NOT_FOUND:
		return "no such secret";
	case VAULT_ERR_CRYPTO:
		return "crypto failure";
	}
	return "unknown error";
}

int
vault_process_harden(void)
{
	struct rlimit rl = { 0, 0 };

	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		return -1;
	if (setrlimit(RLIMIT_CORE, &rl) == -1)
		return -1;
	return 0;
}

static struct vault *
vault_new(void)
{
	struct vault *v;

	if ((v = calloc(1, sizeof(*v))) == NULL)
		return NULL;
	v->v_lockfd = -1;
	return v;
}

void
vault_close(struct vault *v)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; i < v->v_n; i++)
		vault_entry_clear(&v->v_ents[i]);
	free(v->v_ents);
	free(v->v_dir);
	if (v->v_lockfd != -1)
		close(v->v_lockfd);	/* releases the flock */
	OPENSSL_cleanse(v, sizeof(*v));
	free(v);
}

int
vault_open_buf(const uint8_t *db, size_t len, const uint8_t key[VAULT_KEY_LEN],
    struct vault **out, char *err, size_t errlen)
{
	struct vault *v;
	int rv;

	*out = NULL;
	if ((v = vault_new()) == NULL) {
		snprintf(err, errlen, "vault: %s", strerror(errno));
		return VAULT_ERR_SYS;
	}
	memcpy(v->v_key, key, VAULT_KEY_LEN);
	if ((rv = vault_file_parse(v, db, len, NULL, NULL, err, errlen)) !=
	    VAULT_OK) {
		vault_close(v);
		return rv;
	}
	*out = v;
	return VAULT_OK;
}

/* Reads a key file (checked secrecy, exactly VAULT_KEY_LEN bytes) into key. */
static int
vault_key_read(const char *dir, const char *name, uint8_t key[VAULT_KEY_LEN],
    char *err, size_t errlen)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int rv;

	if ((rv = vault_fs_read_secret(dir, name, 4096, &buf, &len, err,
	    errlen)) != VAULT_OK)
		return rv;
	if (len != VAULT_KEY_LEN) {
		snprintf(err, errlen, "%s: %zu bytes, must be %d", name, len,
		    VAULT_KEY_LEN);
		rv = VAULT_ERR_FORMAT;
	} else
		memcpy(key, buf, VAULT_KEY_LEN);
	OPENSSL_clear_free(buf, len + 1);
	return rv;
}

static int
vault_key_write(const char *dir, const char *name, const uint8_t *key, char *err,
    size_t errlen)
{
	return vault_fs_write_atomic(dir, name, key, VAULT_KEY_LEN, 0600, err,
	    errlen);
}

static int
vault_lock(struct vault *v, int exclusive, char *err, size_t errlen)
{
	char path[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", v->v_dir,
	    VAULT_LOCK_FILE) >= sizeof(path)) {
		snprintf(err, errlen, "%s: path too long", VAULT_LOCK_FILE);
		return VAULT_ERR_SYS;
	}
	/* A reader may lack write access to the directory: no lock then. */
	v->v_lockfd = open(path, (exclusive ? O_RDWR | O_CREAT : O_RDONLY) |
	    O_NOFOLLOW | O_CLOEXEC, 0600);
	if (v->v_lockfd == -1) {
		if (!exclusive)
			return VAULT_OK;
		snprintf(err, errlen, "%s: %s", VAULT_LOCK_FILE, strerror(errno));
		return VAULT_ERR_SYS;
	}
	if (flock(v->v_lockfd, exclusive ? LOCK_EX : LOCK_SH) == -1) {
		snprintf(err, errlen, "%s: %s", VAULT_LOCK_FILE, strerror(errno));
		return VAULT_ERR_SYS;
	}
	return VAULT_OK;
}

int
vault_open(const char *state_dir, int flags, struct vault **out, char *err,
    size_t errlen)
{
	struct vault *v = NULL;
	uint8_t newkey[VAULT_KEY_LEN], *db = NULL;
	size_t dblen = 0;
	int rv, have_new = 0, used_new = 0, write = flags & VAULT_OPEN_WRITE;

	*out = NULL;
	if ((v = vault_new()) == NULL || (v->v_dir = strdup(state_dir)) == NULL) {
		snprintf(err, errlen, "vault: %s", strerror(errno));
		rv = VAULT_ERR_SYS;
		goto out;
	}
	v->v_flags = flags;
	if (write && (flags & VAULT_OPEN_CREATE) &&
	    (rv = vault_fs_mkdir(state_dir, err, errlen)) != VAULT_OK)
		goto out;
	if ((rv = vault_lock(v, write, err, errlen)) != VAULT_OK)
		goto out;

	rv = vault_key_read(state_dir, VAULT_KEY_FILE, v->v_key, err, errlen);
	if (rv == VAULT_ERR_ABSENT && write && (flags & VAULT_OPEN_CREATE) &&
	    !vault_fs_exists(state_dir, VAULT_DB_FILE) &&
	    !vault_fs_exists(state_dir, VAULT_KEY_NEW_FILE)) {
		/* A new vault: the key first, so a db never exists without one. */
		if (RAND_priv_bytes(v->v_key, VAULT_KEY_LEN) != 1) {
			snprintf(err, errlen, "vault.key: RAND_priv_bytes failed");
			rv = VAULT_ERR_CRYPTO;
			goto out;
		}
		if ((rv = vault_key_write(state_dir, VAULT_KEY_FILE, v->v_key,
		    err, errlen)) != VAULT_OK)
			goto out;
		if ((rv = vault_commit(v, err, errlen)) != VAULT_OK)
			goto out;
		*out = v;
		v = NULL;	/* transferred */
		rv = VAULT_OK;
		goto out;
	}
	if (rv == VAULT_ERR_ABSENT)
		snprintf(err, errlen, "no vault in %s (vault.key is missing; "
		    "`airlock vault put` creates one)", state_dir);
	if (rv != VAULT_OK)
		goto out;
	rv = vault_key_read(state_dir, VAULT_KEY_NEW_FILE, newkey, err, errlen);
	if (rv == VAULT_OK)
		have_new = 1;
	else if (rv != VAULT_ERR_ABSENT)
		goto out;

	rv = vault_fs_read_secret(state_dir, VAULT_DB_FILE, VAULT_FILE_MAX, &db,
	    &dblen, err, errlen);
	if (rv == VAULT_ERR_ABSENT && write && (flags & VAULT_OPEN_CREATE) &&
	    !have_new) {
		/* A crash between writing the first key and the first db. */
		if ((rv = vault_commit(v, err, errlen)) != VAULT_OK)
			goto out;
		*out = v;
		v = NULL;	/* transferred */
		goto out;
	}
	if (rv != VAULT_OK)
		goto out;
	if ((rv = vault_file_parse(v, db, dblen, have_new ? newkey : NULL,
	    &used_new, err, errlen)) != VAULT_OK)
		goto out;
	if (write && have_new) {
		/* Finish (or clean up after) an interrupted rotate-key. */
		if (used_new)
			rv = vault_fs_rename(state_dir, VAULT_KEY_NEW_FILE,
			    VAULT_KEY_FILE, err, errlen);
		else {
			char path[PATH_MAX];

			snprintf(path, sizeof(path), "%s/%s", state_dir,
			    VAULT_KEY_NEW_FILE);
			if (unlink(path) == -1) {
				snprintf(err, errlen, "%s: %s",
				    VAULT_KEY_NEW_FILE, strerror(errno));
				rv = VAULT_ERR_SYS;
			}
		}
		if (rv != VAULT_OK)
			goto out;
	}
	*out = v;
	v = NULL;	/* transferred */
	rv = VAULT_OK;
 out:
	OPENSSL_cleanse(newkey, sizeof(newkey));
	if (db != NULL)
		OPENSSL_clear_free(db, dblen + 1);
	vault_close(v);
	return rv;
}

size_t
vault_count(const struct vault *v)
{
	return v->v_n;
}

int
vault_info_get(const struct vault *v, size_t i, struct vault_info *vi)
{
	const struct vault_entry *e;

	if (i >= v->v_n)
		return VAULT_ERR_NOT_FOUND;
	e = &v->v_ents[i];
	vi->vi_name = e->ve_name;
	vi->vi_placeholder = e->ve_placeholder;
	vi->vi_hosts = (const char *const *)e->ve_hosts;
	vi->vi_nhosts = e->ve_nhosts;
	vi->vi_created = e->ve_created;
	vi->vi_rotated = e->ve_rotated;
	return VAULT_OK;
}

int
vault_secret_find(const struct vault *v, const char *name)
{
	size_t lo = 0, hi = v->v_n, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = strcmp(name, v->v_ents[mid].ve_name);
		if (c == 0)
			return (int)mid;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

int
vault_secret_find_placeholder(const struct vault *v, const char *ph)
{
	size_t i;

	for (i = 0; i < v->v_n; i++)
		if (strcmp(v->v_ents[i].ve_placeholder, ph) == 0)
			return (int)i;
	return -1;
}

int
vault_secret_allows_host(const struct vault *v, const char *name,
    const char *host)
{
	char norm[HOSTNAME_MAX + 1];
	const struct vault_entry *e;
	size_t i;
	int idx;

	if ((idx = vault_secret_find(v, name)) == -1)
		return 0;
	if (hostname_normalize(host, strlen(host), norm) != HOSTNAME_OK)
		return 0;
	e = &v->v_ents[idx];
	for (i = 0; i < e->ve_nhosts; i++)
		if (hostname_match(e->ve_hosts[i], norm))
			return 1;
	return 0;
}

int
vault_secret_get(const struct vault *v, const char *name, struct secret *out,
    char *err, size_t errlen)
{
	const struct vault_entry *e;
	struct secret s = { NULL, 0 };
	int idx, rv;

	out->p = NULL;
	out->n = 0;
	if ((idx = vault_secret_find(v, name)) == -1) {
		snprintf(err, errlen, "no secret named '%s'", name);
		return VAULT_ERR_NOT_FOUND;
	}
	e = &v->v_ents[idx];
	if ((s.p = malloc(e->ve_ctlen)) == NULL) {
		snprintf(err, errlen, "secret '%s': %s", name, strerror(errno));
		return VAULT_ERR_SYS;
	}
	s.n = e->ve_ctlen;
	rv = vault_entry_open(v->v_key, e, s.p);
	if (rv != 1) {
		secret_free(&s);
		snprintf(err, errlen, rv == 0 ? "vault.db: entry '%s' failed "
		    "authentication (tampered?)" : "secret '%s': OpenSSL "
		    "AES-GCM failure", name);
		return rv == 0 ? VAULT_ERR_TAMPERED : VAULT_ERR_CRYPTO;
	}
	*out = s;	/* transferred */
	return VAULT_OK;
}

/* 1 if a and b overlap as strings: equal, or one contains the other. */
static int
vault_str_overlaps(const void *a, size_t an, const void *b, size_t bn)
{
	if (an >= bn)
		return memmem(a, an, b, bn) != NULL;
	return memmem(b, bn, a, an) != NULL;
}

static int
vault_placeholder_default(const char *name, char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t rnd[8];
	size_t i, o;

	o = (size_t)snprintf(out, outlen, "AIRLOCK_PLACEHOLDER_");
	for (i = 0; name[i] != '\0' && o + 1 < outlen; i++)
		out[o++] = isalnum((unsigned char)name[i]) ?
		    (char)toupper((unsigned char)name[i]) : '_';
	if (o + 1 + 16 + 1 > outlen || RAND_bytes(rnd, sizeof(rnd)) != 1)
		return -1;
	out[o++] = '_';
	for (i = 0; i < sizeof(rnd); i++) {
		out[o++] = hex[rnd[i] >> 4];
		out[o++] = hex[rnd[i] & 0xf];
	}
	out[o] = '\0';
	return 0;
}

int
vault_secret_put(struct vault *v, const char *name, const char *const *hosts,
    size_t nhosts, const char *placeholder, const struct secret *value,
    char *err, size_t errlen)
{
	char ph[VAULT_PLACEHOLDER_MAX + 1], norm[HOSTNAME_MAX + 1];
	struct vault_entry ne = { 0 }, *e, *nents;
	size_t i, j, at;
	int idx, hr, rv = VAULT_ERR_INVALID;
	time_t now = time(NULL);

	if (!vault_name_is_valid(name)) {
		snprintf(err, errlen, "invalid secret name '%.80s' (1-%d of "
		    "A-Z a-z 0-9 _ . -, starting with a letter or digit)", name,
		    VAULT_NAME_MAX);
		goto out;
	}
	if (nhosts == 0 || nhosts > VAULT_HOSTS_MAX) {
		snprintf(err, errlen, "secret '%s': bind it to 1-%d hosts "
		    "(--host)", name, VAULT_HOSTS_MAX);
		goto out;
	}
	if (value->n == 0 || value->n > VAULT_VALUE_MAX) {
		snprintf(err, errlen, "secret '%s': the value must be 1-%d bytes "
		    "(got %zu)", name, VAULT_VALUE_MAX, value->n);
		goto out;
	}
	/*
	 * A value goes into header fields: CR or LF would split the head it is
	 * injected into (a request smuggled past every check), NUL truncates it.
	 */
	if (memchr(value->p, '\r', value->n) != NULL ||
	    memchr(value->p, '\n', value->n) != NULL ||
	    memchr(value->p, '\0', value->n) != NULL) {
		snprintf(err, errlen, "secret '%s': the value contains CR, LF or NUL "
		    "(it would split or cut the header it is injected into)", name);
		goto out;
	}
	idx = vault_secret_find(v, name);
	if (placeholder != NULL) {
		if (!vault_placeholder_is_valid(placeholder)) {
			snprintf(err, errlen, "secret '%s': a placeholder must be "
			    "%d-%d printable ASCII characters without spaces",
			    name, VAULT_PLACEHOLDER_MIN, VAULT_PLACEHOLDER_MAX);
			goto out;
		}
		snprintf(ph, sizeof(ph), "%s", placeholder);
	} else if (idx != -1)
		snprintf(ph, sizeof(ph), "%s", v->v_ents[idx].ve_placeholder);
	else if (vault_placeholder_default(name, ph, sizeof(ph)) == -1) {
		snprintf(err, errlen, "secret '%s': cannot make a placeholder",
		    name);
		rv = VAULT_ERR_CRYPTO;
		goto out;
	}
	if (vault_str_overlaps(value->p, value->n, ph, strlen(ph))) {
		snprintf(err, errlen, "secret '%s': the value and the placeholder "
		    "contain one another", name);
		goto out;
	}
	for (i = 0; i < v->v_n; i++) {
		const char *o = v->v_ents[i].ve_placeholder;

		if ((int)i != idx && vault_str_overlaps(o, strlen(o), ph,
		    strlen(ph))) {
			snprintf(err, errlen, "secret '%s': placeholder overlaps "
			    "the placeholder of secret '%s'", name,
			    v->v_ents[i].ve_name);
			goto out;
		}
	}

	rv = VAULT_ERR_SYS;
	if ((ne.ve_name = strdup(name)) == NULL ||
	    (ne.ve_placeholder = strdup(ph)) == NULL ||
	    (ne.ve_hosts = calloc(nhosts, sizeof(char *))) == NULL) {
		snprintf(err, errlen, "vault: %s", strerror(errno));
		goto out;
	}
	for (i = 0; i < nhosts; i++) {
		if ((hr = hostname_pattern_normalize(hosts[i], strlen(hosts[i]),
		    norm)) != HOSTNAME_OK) {
			snprintf(err, errlen, "secret '%s': host '%.253s': %s",
			    name, hosts[i], hostname_strerror(hr));
			rv = VAULT_ERR_INVALID;
			goto out;
		}
		for (j = 0; j < ne.ve_nhosts; j++)
			if (strcmp(ne.ve_hosts[j], norm) == 0)
				break;
		if (j < ne.ve_nhosts)
			continue;	/* a repeated --host */
		if ((ne.ve_hosts[ne.ve_nhosts] = strdup(norm)) == NULL) {
			snprintf(err, errlen, "vault: %s", strerror(errno));
			goto out;
		}
		ne.ve_nhosts++;
	}
	ne.ve_created = idx != -1 ? v->v_ents[idx].ve_created : (int64_t)now;
	ne.ve_rotated = now;
	if (ne.ve_rotated < ne.ve_created)
		ne.ve_rotated = ne.ve_created;	/* the clock went back */
	if (vault_entry_seal(v->v_key, &ne, value->p, value->n) == -1) {
		snprintf(err, errlen, "secret '%s': OpenSSL AES-GCM failure", name);
		rv = VAULT_ERR_CRYPTO;
		goto out;
	}

	if (idx != -1) {
		e = &v->v_ents[idx];
		vault_entry_clear(e);
		*e = ne;
	} else {
		if (v->v_n >= VAULT_SECRETS_MAX) {
			snprintf(err, errlen, "vault: at most %d secrets",
			    VAULT_SECRETS_MAX);
			rv = VAULT_ERR_INVALID;
			goto out;
		}
		if ((nents = reallocarray(v->v_ents, v->v_n + 1,
		    sizeof(*nents))) == NULL) {
			snprintf(err, errlen, "vault: %s", strerror(errno));
			goto out;
		}
		v->v_ents = nents;
		for (at = 0; at < v->v_n; at++)
			if (strcmp(name, v->v_ents[at].ve_name) < 0)
				break;
		memmove(&v->v_ents[at + 1], &v->v_ents[at],
		    (v->v_n - at) * sizeof(*nents));
		v->v_ents[at] = ne;
		v->v_n++;
	}
	memset(&ne, 0, sizeof(ne));	/* transferred */
	rv = VAULT_OK;
 out:
	vault_entry_clear(&ne);
	return rv;
}

int
vault_secret_remove(struct vault *v, const char *name, char *err, size_t errlen)
{
	int idx;

	if ((idx = vault_secret_find(v, name)) == -1) {
		snprintf(err, errlen, "no secret named '%.80s'", name);
		return VAULT_ERR_NOT_FOUND;
	}
	vault_entry_clear(&v->v_ents[idx]);
	memmove(&v->v_ents[idx], &v->v_ents[idx + 1],
	    (v->v_n - (size_t)idx - 1) * sizeof(v->v_ents[0]));
	v->v_n--;
	return VAULT_OK;
}

int
vault_serialize(const struct vault *v, uint8_t **out, size_t *outlen, char *err,
    size_t errlen)
{
	return vault_file_build(v, out, outlen, err, errlen);
}

int
vault_commit(struct vault *v, char *err, size_t errlen)
{
	uint8_t *db = NULL;
	size_t len = 0;
	int rv;

	if (v->v_dir == NULL || !(v->v_flags & VAULT_OPEN_WRITE)) {
		snprintf(err, errlen, "vault: not opened for writing");
		return VAULT_ERR_INVALID;
	}
	if ((rv = vault_file_build(v, &db, &len, err, errlen)) != VAULT_OK)
		return rv;
	rv = vault_fs_write_atomic(v->v_dir, VAULT_DB_FILE, db, len, 0600, err,
	    errlen);
	free(db);
	return rv;
}

int
vault_rotate_key(struct vault *v, char *err, size_t errlen)
{
	struct vault_entry *ents = NULL;
	uint8_t newkey[VAULT_KEY_LEN], oldkey[VAULT_KEY_LEN], *pt = NULL;
	size_t i, ptlen = 0, done = 0;
	int rv = VAULT_ERR_SYS;

	if (v->v_dir == NULL || !(v->v_flags & VAULT_OPEN_WRITE)) {
		snprintf(err, errlen, "vault: not opened for writing");
		return VAULT_ERR_INVALID;
	}
	if (RAND_priv_bytes(newkey, sizeof(newkey)) != 1) {
		snprintf(err, errlen, "vault.key: RAND_priv_bytes failed");
		rv = VAULT_ERR_CRYPTO;
		goto out;
	}
	/* Re-encrypt into copies, so a failure leaves v as it was. */
	if (v->v_n > 0 && (ents = calloc(v->v_n, sizeof(*ents))) == NULL) {
		snprintf(err, errlen, "vault: %s", strerror(errno));
		goto out;
	}
	for (i = 0; i < v->v_n; i++, done = i) {
		const struct vault_entry *e = &v->v_ents[i];
		struct vault_entry *n = &ents[i];
		size_t h;

		ptlen = e->ve_ctlen;
		if ((pt = malloc(ptlen)) == NULL ||
		    (n->ve_name = strdup(e->ve_name)) == NULL ||
		    (n->ve_placeholder = strdup(e->ve_placeholder)) == NULL ||
		    (n->ve_hosts = calloc(e->ve_nhosts, sizeof(char *))) == NULL) {
			snprintf(err, errlen, "vault: %s", strerror(errno));
			done = i + 1;
			goto out;
		}
		done = i + 1;
		for (h = 0; h < e->ve_nhosts; h++, n->ve_nhosts = h)
			if ((n->ve_hosts[h] = strdup(e->ve_hosts[h])) == NULL) {
				snprintf(err, errlen, "vault: %s", strerror(errno));
				goto out;
			}
		n->ve_nhosts = e->ve_nhosts;
		n->ve_created = e->ve_created;
		n->ve_rotated = e->ve_rotated;
		if ((rv = vault_entry_open(v->v_key, e, pt)) != 1) {
			snprintf(err, errlen, rv == 0 ? "vault.db: entry '%s' "
			    "failed authentication (tampered?)" : "secret '%s': "
			    "OpenSSL AES-GCM failure", e->ve_name);
			rv = rv == 0 ? VAULT_ERR_TAMPERED : VAULT_ERR_CRYPTO;
			goto out;
		}
		if (vault_entry_seal(newkey, n, pt, ptlen) == -1) {
			snprintf(err, errlen, "secret '%s': OpenSSL AES-GCM "
			    "failure", e->ve_name);
			rv = VAULT_ERR_CRYPTO;
			goto out;
		}
		OPENSSL_clear_free(pt, ptlen);
		pt = NULL;
	}

	/* Step 1: the new key beside the old one. */
	if ((rv = vault_key_write(v->v_dir, VAULT_KEY_NEW_FILE, newkey, err,
	    errlen)) != VAULT_OK)
		goto out;
	/* Step 2: the db under the new key (swap it into v to build). */
	memcpy(oldkey, v->v_key, sizeof(oldkey));
	memcpy(v->v_key, newkey, sizeof(newkey));
	{
		struct vault_entry *t = v->v_ents;

		v->v_ents = ents;
		ents = t;
	}
	if ((rv = vault_commit(v, err, errlen)) != VAULT_OK) {
		/* Back to the old state; the stale .new is removed next open. */
		struct vault_entry *t = v->v_ents;

		v->v_ents = ents;
		ents = t;
		memcpy(v->v_key, oldkey, sizeof(oldkey));
		goto out;
	}
	/* Step 3: the new key replaces the old. */
	if ((rv = vault_fs_rename(v->v_dir, VAULT_KEY_NEW_FILE, VAULT_KEY_FILE,
	    err, errlen)) != VAULT_OK)
		goto out;	/* vault_open() finishes this step */
	rv = VAULT_OK;
 out:
	if (pt != NULL)
		OPENSSL_clear_free(pt, ptlen);
	if (ents != NULL) {
		for (i = 0; i < done; i++)
			vault_entry_clear(&ents[i]);
		free(ents);
	}
	OPENSSL_cleanse(newkey, sizeof(newkey));
	OPENSSL_cleanse(oldkey, sizeof(oldkey));
	return rv;
}
