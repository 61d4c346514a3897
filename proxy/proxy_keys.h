/*
 * proxy/proxy_keys.h: the vault and the interception CAs inside
 * airlockd (issue 5).  Private to proxy/: the key material (proxy_keys.c), the TLS
 * contexts (proxy_tls.c) and the inspecting connection (proxy_inspect*.c).
 *
 * Key material.  vault.key and the CA keys are 0600 root files, and airlockd runs as
 * an unprivileged user after start-up, so the root reader (proxy_reader.c) collects
 * what the proxy needs -- every secret's name, placeholder, bound hosts and value;
 * the host CA's certificate; per sandbox whose policy inspects, the CA synced to the
 * names it inspects (ca_sandbox_sync, as root: it may write a new CA) -- at start and
 * on every reload.  The reader takes no argument from the unprivileged side but
 * which sandbox an attach adds: it parses the policies itself to learn the names, so
 * a compromised worker cannot ask it for a CA constrained to other names.
 *
 * CA private keys never reach the process that parses the VMs' bytes.  The reader
 * sends each sandbox CA's key, with the policy hash and the inspected names, to the
 * keys process (proxy_keyd.c, "keyd": unprivileged, no input from the VMs) and waits
 * for its answer; then it hands the proxy an image of everything else, the CA
 * *certificates* only (chains, anchors), over its socket.  A worker that needs a
 * leaf not in its cache (ca_leaf_cache, per CA entry) sends keyd the sandbox, the
 * name, the policy hash of its CA entry and the public half of the process's one
 * leaf key; keyd signs only a name that sandbox's policy in force inspects
 * (README.md, "The keys process").  Without keyd, or when it refused the keys, the
 * image's entries say so and inspection fails closed (inspect_unavailable).  The
 * reader is forked as root or not, so the keys always go to keyd from it.
 *
 * The unprivileged side parses the image into an immutable, reference-counted struct
 * proxy_keys that connections hold while they use it; a reload swaps the current one.
 *
 * Secret values are decrypted once per load and kept on the heap (wiped with
 * OPENSSL_clear_free on release, as is every buffer of the image): the redaction of
 * responses must know every value injected at all times, and decrypting per request
 * would keep the vault key in memory instead, which is no better.  Only the values
 * the recorded policies bind are sent; the others are withheld (struct
 * proxy_secret).  The process is not
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

/*
 * One secret as the proxy holds it.  Its value only if a recorded policy binds it
 * (injects it, or its upstream proxy takes it): else ps_value is NULL, withheld by
 * the reader, and the secret is known by its placeholder alone (proxy_keys.c).
 */
struct proxy_secret {
	char		*ps_name;
	char		*ps_placeholder;
	char		**ps_hosts;		/* vault patterns: exact or "*.suffix" */
	size_t		 ps_nhosts;
	uint8_t		*ps_value;		/* NULL: withheld */
	size_t		 ps_vlen;
};

/* One sandbox's interception CA (its certificate: keyd holds the key) and leaves. */
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

/* What the reader needs of one sandbox record: its name and policy's files. */
struct proxy_keys_src {
	const char	*ks_sandbox;
	const struct policy_bundle *ks_bundle;	/* policy_bundle_read() */
};

/*
 * What the root side collected for one record (proxy_keys_collect()): what becomes
 * of its policy, and for one that inspects, its CA with the key, for keyd.
 */
enum proxy_kb_state {
	PK_FRESH,	/* loads, passes the vault check, inspects: kc_cert, kc_key */
	PK_CAFAIL,	/* ... but its CA could not be made: kc_error */
	PK_NONE,	/* loads, passes, inspects nothing: needs no CA */
	PK_REFUSED,	/* unreadable, does not load, or fails the vault check */
};

struct proxy_kb_ca {
	char		*kc_sandbox;
	char		 kc_hash[65];		/* "" when the policy did not load */
	enum proxy_kb_state kc_state;
	char		 kc_error[256];
	uint8_t		*kc_cert;		/* DER */
	size_t		 kc_certlen;
	uint8_t		*kc_key;		/* PKCS#8 DER, wiped on free */
	size_t		 kc_keylen;
	char		**kc_names;		/* the inspected patterns */
	size_t		 kc_nnames;
};

struct proxy_keys_build;

/* proxy_keys.c */
/*
 * Root side: everything of state_dir the image and keyd need, for the sandboxes in
 * src (vault, host CA certificate, each record's outcome and CA).  Never fails for a
 * missing vault or CA (the outcome says so); NULL only when out of memory.  Release
 * with proxy_keys_build_free() (it holds secret values and CA keys: wiped).
 */
struct proxy_keys_build *proxy_keys_collect(const char *state_dir,
	    const struct proxy_keys_src *src, size_t n);
void	proxy_keys_build_free(struct proxy_keys_build *kb);
/* The records collected, in src's order. */
size_t	proxy_keys_build_count(const struct proxy_keys_build *kb);
const struct proxy_kb_ca *proxy_keys_build_ca(const struct proxy_keys_build *kb,
	    size_t i);
/*
 * The image of kb for the unprivileged side: CA certificates, never a CA key.
 * keyd_err non-NULL: keyd did not take the keys, and every CA entry says so (no
 * leaf can be signed).  0, or -1 when out of memory.  *out is released with
 * proxy_keys_image_free() (it holds secret values).
 */
int	proxy_keys_image(const struct proxy_keys_build *kb, const char *keyd_err,
	    uint8_t **out, size_t *outlen);
/* collect + image, as if keyd took the keys (tests: no keyd there). */
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
/*
 * 1 if the vault binds secret s to the normalised host name and its value is held
 * here (not withheld): the one test before a value is used.
 */
int	proxy_secret_allows_host(const struct proxy_secret *s, const char *host);
/* The CA entry of sandbox, or NULL if its policy inspects nothing. */
struct proxy_sbca *proxy_keys_ca(const struct proxy_keys *k, const char *sandbox);
/*
 * The policy/vault binding check: every secret a rule injects must be in the vault
 * and bound to the rule's host (for a "*.suffix" rule, a vault binding must cover
 * every name below suffix), and the secret of the upstream proxy the policy's
 * connections go through (its own or airlock.json's, proxy_upstream_route()) bound
 * to that proxy's host name.  0, or -1 with the first problem in err.
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
/*
 * The leaf for name (a connection's normalised host) under c: from c's cache, or
 * signed by keyd for c's sandbox and policy hash and cached.  CA_OK and *out (a
 * new reference), or an enum ca_err with err (keyd refused, gone, or too slow).
 * Called in a worker thread (its own keyd channel, proxy_keyd_client.c).
 */
int	proxy_keys_leaf(const struct proxy_sbca *c, const char *name, X509 **out,
	    char *err, size_t errlen);

#endif
