/*
 * include/vault.h: secrets encrypted at rest, implemented in vault/.  Used by the
 * CLI (airlock vault ...) and by airlockd (find, bind, get).
 *
 * Files in the state directory:
 *	vault.key	32 random bytes, the AES-256-GCM master key.  Must have no
 *			group/other permission bits and be owned by us or root.
 *	vault.key.new	only while `rotate-key` runs (see vault/vault.c).
 *	vault.db	the secrets, binary format "AIRLOCKV" version 1, described in
 *			vault/vault_file.c: per secret name, bound hosts, placeholder,
 *			timestamps, a fresh 12-byte nonce, ciphertext and tag, with the
 *			entry's metadata as AAD; a key-check record; a file trailer tag.
 *	vault.lock	flock(2): one writer at a time.
 *
 * Values only ever live in struct secret buffers, which secret_free() wipes.
 * No function here puts a value into an error message.
 */
#ifndef AIRLOCK_VAULT_H
#define AIRLOCK_VAULT_H

#include <stddef.h>
#include <stdint.h>

#define VAULT_KEY_LEN		32
#define VAULT_NAME_MAX		64	/* [A-Za-z0-9_.-], starts with alnum */
#define VAULT_VALUE_MAX		(64 * 1024)
#define VAULT_PLACEHOLDER_MIN	16
#define VAULT_PLACEHOLDER_MAX	128	/* printable ASCII, no spaces */
#define VAULT_HOSTS_MAX		32
#define VAULT_SECRETS_MAX	4096

/* A secret value: n bytes at p (not NUL-terminated).  Release with secret_free(). */
struct secret {
	uint8_t		*p;
	size_t		 n;
};

/* Wipes (OPENSSL_cleanse) and frees s->p, then sets *s to {NULL, 0}.  NULL-safe. */
void	secret_free(struct secret *s);

enum vault_err {
	VAULT_OK = 0,
	VAULT_ERR_SYS = -1,		/* I/O or allocation; message has errno text */
	VAULT_ERR_PERM = -2,		/* loose mode or wrong owner on a vault file */
	VAULT_ERR_FORMAT = -3,		/* bad magic, unknown version, truncated, trailing */
	VAULT_ERR_WRONG_KEY = -4,	/* key-check record does not authenticate */
	VAULT_ERR_TAMPERED = -5,	/* an entry or the file trailer fails auth */
	VAULT_ERR_ABSENT = -6,		/* no vault (and not asked to create one) */
	VAULT_ERR_INVALID = -7,		/* bad name, host, placeholder or value */
	VAULT_ERR_NOT_FOUND = -8,	/* no such secret */
	VAULT_ERR_CRYPTO = -9,		/* OpenSSL failed */
};

struct vault;

/* Read-only metadata of one secret; the pointers are borrowed from the vault. */
struct vault_info {
	const char	*vi_name;
	const char	*vi_placeholder;
	const char *const *vi_hosts;	/* normalised patterns: exact or "*.suffix" */
	size_t		 vi_nhosts;
	long long	 vi_created;	/* unix seconds */
	long long	 vi_rotated;	/* last value change (== created at first) */
};

#define VAULT_OPEN_WRITE	0x1	/* exclusive lock; vault_commit() allowed */
#define VAULT_OPEN_CREATE	0x2	/* with WRITE: make key + empty db if absent */

/*
 * Opens the vault of state_dir: checks the key file's mode and owner, reads the key,
 * parses vault.db and authenticates every entry (a wrong key, a tampered entry, a
 * truncated file each fail with their own message).  Finishes an interrupted
 * rotate-key.  Returns VAULT_OK and *out (release with vault_close()), or a negative
 * enum vault_err with one line in err.
 */
int	vault_open(const char *state_dir, int flags, struct vault **out, char *err,
	    size_t errlen);
/* Wipes the key and frees everything; releases the lock.  NULL-safe. */
void	vault_close(struct vault *v);

/*
 * Parses a vault.db image with the given key, without touching files (tests, fuzz).
 * Same checks and return values as vault_open(); *out must be released with
 * vault_close().
 */
int	vault_open_buf(const uint8_t *db, size_t len, const uint8_t key[VAULT_KEY_LEN],
	    struct vault **out, char *err, size_t errlen);

/* The number of secrets, and the metadata of the i-th (sorted by name). */
size_t	vault_count(const struct vault *v);
int	vault_info_get(const struct vault *v, size_t i, struct vault_info *vi);

/* Index of the secret called name / whose placeholder is exactly ph, or -1. */
int	vault_secret_find(const struct vault *v, const char *name);
int	vault_secret_find_placeholder(const struct vault *v, const char *ph);

/*
 * 1 if secret name may be sent to host (host normalised with hostname_normalize()
 * and matched against the bound patterns with hostname_match()); 0 if not, or if
 * there is no such secret or host is not a valid name.
 */
int	vault_secret_allows_host(const struct vault *v, const char *name,
	    const char *host);

/*
 * Decrypts secret name into *out (a copy: release with secret_free()).  Returns
 * VAULT_OK or a negative enum vault_err (err names the secret, never the value).
 */
int	vault_secret_get(const struct vault *v, const char *name, struct secret *out,
	    char *err, size_t errlen);

/*
 * Adds or replaces secret name (in memory; vault_commit() writes it).  hosts are
 * patterns as in policies (exact name or "*.suffix"), 1..VAULT_HOSTS_MAX.  placeholder
 * NULL keeps the existing one, or for a new secret makes
 * "AIRLOCK_PLACEHOLDER_<NAME>_<16 random hex>".  The value (1..VAULT_VALUE_MAX
 * bytes) is encrypted under a fresh nonce; the caller keeps and frees it.  Refuses a
 * value containing the placeholder or the reverse, and a placeholder equal to,
 * inside or containing another secret's.  Replacing keeps created and sets rotated.
 */
int	vault_secret_put(struct vault *v, const char *name, const char *const *hosts,
	    size_t nhosts, const char *placeholder, const struct secret *value,
	    char *err, size_t errlen);
/* Removes secret name (in memory).  VAULT_OK or VAULT_ERR_NOT_FOUND. */
int	vault_secret_remove(struct vault *v, const char *name, char *err,
	    size_t errlen);

/*
 * Writes vault.db atomically (temp file, fsync, rename, fsync of the directory).
 * Needs VAULT_OPEN_WRITE.  Returns VAULT_OK or a negative enum vault_err.
 */
int	vault_commit(struct vault *v, char *err, size_t errlen);

/*
 * Re-encrypts every secret under a new random key and installs it crash-safely:
 * vault.key.new is written first, then vault.db (new key), then vault.key.new is
 * renamed over vault.key; vault_open() tries both keys, so no crash leaves the db
 * and the key mismatched.  Needs VAULT_OPEN_WRITE.
 */
int	vault_rotate_key(struct vault *v, char *err, size_t errlen);

/* The serialised vault.db image of v (tests, fuzz corpus).  Free with free(). */
int	vault_serialize(const struct vault *v, uint8_t **out, size_t *outlen,
	    char *err, size_t errlen);

/*
 * Syntax checks, shared with the CLI: 1 if valid.  A placeholder is
 * VAULT_PLACEHOLDER_MIN..MAX bytes of printable ASCII other than space.
 */
int	vault_name_is_valid(const char *name);
int	vault_placeholder_is_valid(const char *ph);

/*
 * Makes the process not dumpable and sets RLIMIT_CORE to 0, so secret values cannot
 * end up in a core file or be read through ptrace by another process of the same
 * user.  Returns 0 or -1 (errno set).
 */
int	vault_process_harden(void);

/* Short text for an enum vault_err. */
const char *vault_strerror(int err);

#endif
