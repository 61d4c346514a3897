/*
 * proxy/proxy_keys.h: the vault and the interception CAs inside
 * airlockd (issue 5).  Private to proxy/: the key material (proxy_keys.c), the TLS
 * contexts (proxy_tls.c) and the inspecting connection (proxy_inspect*.c).
 *
 * Key material.  vault.key and the CA keys are 0600 root files, and airlockd runs as
 * an unprivileged user after start-up, so the root reader (proxy_reader.c) builds one
 * image of everything the proxy needs -- every secret's name, placeholder, bound
 * hosts and value; the host CA's certificate; per sandbox whose policy inspects, the
 * CA synced to the names it inspects (ca_sandbox_sync, as root: it may write a new
 * CA) with its key -- and hands the bytes over the reader's socket, at start and on
 * every reload.  The reader takes no argument from the unprivileged side: it parses
 * the policies itself to learn the names, so a compromised worker cannot ask it for
 * a CA constrained to other names.  The unprivileged side parses the image into an
 * immutable, reference-counted struct proxy_keys that connections hold while they
 * use it; a reload swaps the current one.
 *
 * Secret values are decrypted once per load and kept on the heap (wiped with
 * OPENSSL_clear_free on release, as is every buffer of the image): the redaction of
 * responses must know every value at all times, and decrypting per request would
 * keep the vault key in memory instead, which is no better.  The process is not
 * dumpable and has no core limit (vault_process_harden()).
 */
#ifndef AIRLOCK_PROXY_KEYS_H
#define AIRLOCK_PROXY_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "ca.h"
#include "policy.h"

struct scan_set;

/* One secret as the proxy holds it. */
struct proxy_secret {
	char		*ps_name;
	char		*ps_placeholder;
	char		**ps_hosts;		/* vault patterns: exact or "*.suffix" */
	size_t		 ps_nhosts;
	uint8_t		*ps_value;
	size_t		 ps_vlen;
};

/* One sandbox's interception CA and its leaf cache. */
struct proxy_sbca {
	char		*pc_sandbox;
	char		 pc_policy_hash[65];	/* the policy it was synced for */
	struct ca	*pc_ca;			/* NULL: pc_error says why */
	struct ca_leaf_cache *pc_cache;
	char		 pc_error[200];
};

struct proxy_keys {
	unsigned int	 pk_refs;		/* atomic */
	unsigned long long pk_gen;		/* unique per image (session cache) */
	int		 pk_vault;		/* 1 loaded, 0 none, -1 unusable */
	char		 pk_vault_error[256];	/* "" or why there is none */
	struct proxy_secret *pk_secrets;
	size_t		 pk_nsecrets;
	struct proxy_sbca *pk_cas;
	size_t		 pk_ncas;
	/* airlock's own CA certificates: never accepted upstream */
	X509		**pk_anchors;
	size_t		 pk_nanchors;
	/*
	 * Secrets of older images still held by connections that this image lacks
	 * (removed or rotated since): redacted, never injected (proxy_keys_set).
	 */
	struct proxy_secret *pk_retired;
	size_t		 pk_nretired;
	/*
	 * scanners (proxy_scan.h); ids are indexes into pk_secrets, then (redaction
	 * only) pk_nsecrets + an index into pk_retired: proxy_keys_secret_name()
	 */
	struct scan_set	*pk_ph_set;		/* placeholder -> value */
	struct scan_set	*pk_val_set;		/* value -> placeholder */
	size_t		 pk_nvals;		/* entries of pk_val_set */
	struct proxy_keys *pk_live;		/* proxy_keys.c's list */
};

/* What the reader needs of one sandbox record: its name and policy bytes. */
struct proxy_keys_src {
	const char	*ks_sandbox;
	const char	*ks_policy;	/* NULL: the file could not be read */
	size_t		 ks_len;
};

/* proxy_keys.c */
/*
 * Root side: the key-material image of state_dir for the sandboxes in src.  Never
 * fails for a missing vault or CA (the image says so); -1 only when out of memory.
 * *out is released with proxy_keys_image_free() (it holds secret values).
 */
int	proxy_keys_build(const char *state_dir, const struct proxy_keys_src *src,
	    size_t n, uint8_t **out, size_t *outlen);
void	proxy_keys_image_free(uint8_t *img, size_t len);
/* Unprivileged side: the image into a struct proxy_keys (1 reference), or NULL. */
struct proxy_keys *proxy_keys_parse(const uint8_t *img, size_t len, char *err,
	    size_t errlen);
void	proxy_keys_put(struct proxy_keys *k);
/*
 * Installs k (taken over) as the current key material; the old one is put.  The
 * values of older images still in use that k lacks are added to k's redaction set
 * first.  0, or -1 (out of memory: nothing changed, k is still the caller's).
 */
int	proxy_keys_set(struct proxy_keys *k);
/* The name of secret id of k's scanners (a retired one too), or NULL. */
const char *proxy_keys_secret_name(const struct proxy_keys *k, int id);
/* The current key material, referenced (put it), or NULL before the first load. */
struct proxy_keys *proxy_keys_get(void);
/* The secret called name, or NULL. */
const struct proxy_secret *proxy_keys_secret(const struct proxy_keys *k,
	    const char *name);
/* 1 if the vault binds secret s to the normalised host name. */
int	proxy_secret_allows_host(const struct proxy_secret *s, const char *host);
/* The CA entry of sandbox, or NULL if its policy inspects nothing. */
struct proxy_sbca *proxy_keys_ca(const struct proxy_keys *k, const char *sandbox);
/*
 * The policy/vault binding check: every secret a rule injects must be in the vault
 * and bound to the rule's host (for a "*.suffix" rule, a vault binding must cover
 * every name below suffix).  0, or -1 with the first problem in err.
 */
int	proxy_keys_check_policy(const struct proxy_keys *k, const struct policy *p,
	    char *err, size_t errlen);
/*
 * Can policy p of sandbox go in with key image k?  Yes (0) if p inspects nothing,
 * or if k holds a usable CA synced for exactly this policy (same hash); else -1 with
 * why in err (the CA could not be made, or the file changed between the two reads of
 * a reload).
 */
int	proxy_keys_for_policy(const struct proxy_keys *k, const char *sandbox,
	    const struct policy *p, char *err, size_t errlen);
/* 1 if x is (has the key of) one of airlock's own CAs. */
int	proxy_keys_is_anchor(const struct proxy_keys *k, X509 *x);
/* The process's one leaf key (made on first use, before the privilege drop). */
EVP_PKEY *proxy_keys_leaf_key(void);

#endif
