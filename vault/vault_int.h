/*
 * vault/vault_int.h: private to vault/.  Prototypes grouped by the file defining them.
 */
#ifndef AIRLOCK_VAULT_INT_H
#define AIRLOCK_VAULT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vault.h"

#define VAULT_NONCE_LEN		12
#define VAULT_TAG_LEN		16
#define VAULT_FILE_MAX		(64 * 1024 * 1024)

struct vault_entry {
	char		*ve_name;
	char		*ve_placeholder;
	char		**ve_hosts;
	size_t		 ve_nhosts;
	int64_t		 ve_created;
	int64_t		 ve_rotated;
	uint8_t		 ve_nonce[VAULT_NONCE_LEN];
	uint8_t		*ve_ct;		/* ciphertext, same length as the value */
	size_t		 ve_ctlen;
	uint8_t		 ve_tag[VAULT_TAG_LEN];
};

struct vault {
	uint8_t		 v_key[VAULT_KEY_LEN];
	struct vault_entry *v_ents;	/* sorted by name, strictly */
	size_t		 v_n;
	char		*v_dir;		/* NULL: opened from a buffer */
	int		 v_lockfd;	/* -1 when none */
	int		 v_flags;
};

/* vault_file.c: the vault.db format and the AES-256-GCM operations. */
int	vault_file_parse(struct vault *v, const uint8_t *buf, size_t len,
	    const uint8_t *altkey, int *used_alt, char *err, size_t errlen);
int	vault_file_build(const struct vault *v, uint8_t **out, size_t *outlen,
	    char *err, size_t errlen);
int	vault_entry_seal(const uint8_t key[VAULT_KEY_LEN], struct vault_entry *e,
	    const uint8_t *pt, size_t ptlen);
int	vault_entry_open(const uint8_t key[VAULT_KEY_LEN],
	    const struct vault_entry *e, uint8_t *pt);
void	vault_entry_clear(struct vault_entry *e);

/* vault_fs.c: files with checked secrecy, atomic writes; shared with vault_ca.c. */
int	vault_fs_open_secret(const char *dir, const char *name, int *fdp,
	    off_t *sizep, char *err, size_t errlen);
int	vault_fs_read_secret(const char *dir, const char *name, size_t maxlen,
	    uint8_t **out, size_t *outlen, char *err, size_t errlen);
int	vault_fs_write_atomic(const char *dir, const char *name, const void *buf,
	    size_t len, mode_t mode, char *err, size_t errlen);
int	vault_fs_rename(const char *dir, const char *from, const char *to,
	    char *err, size_t errlen);
int	vault_fs_mkdir(const char *dir, char *err, size_t errlen);
int	vault_fs_exists(const char *dir, const char *name);

#endif
