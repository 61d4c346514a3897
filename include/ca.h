/*
 * include/ca.h: the TLS interception CAs (`airlock ca`), implemented in
 * vault/vault_ca.c and vault/vault_ca_cache.c.
 *
 * Two kinds of CA, both ECDSA P-256, self-signed, basicConstraints CA:TRUE
 * pathlen:0 and keyUsage keyCertSign+cRLSign (both critical):
 *	STATE_DIR/ca.key, ca.pem		`airlock ca init`: the host CA, no name
 *						constraints (for VMs not provisioned per
 *						sandbox).
 *	STATE_DIR/ca/SANDBOX.key, SANDBOX.pem	one per sandbox, with critical X.509
 *						nameConstraints limited to the names its
 *						policy inspects.  This is what a sandbox's
 *						VM trusts (`airlock ca cert SANDBOX`): a
 *						leaked key mints nothing another VM, or
 *						this VM for another name, would accept.
 * The reasons and the curl/OpenSSL evidence are in vault/vault_ca.c.  Keys are
 * 0600 and refused when group/other bits are set.
 *
 * Leaves (ca_leaf_mint): one SAN dNSName, serverAuth, random 128-bit serial,
 * valid from now - CA_LEAF_BACKDATE to now + CA_LEAF_LIFETIME.
 */
#ifndef AIRLOCK_CA_H
#define AIRLOCK_CA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#define CA_LIFETIME_DAYS	3650		/* the CAs: ~10 years */
#define CA_LEAF_BACKDATE	3600		/* notBefore = now - 1 h (clock skew) */
#define CA_LEAF_LIFETIME	86400		/* notAfter = now + 24 h */
#define CA_LEAF_REFRESH		3600		/* the cache drops a leaf 1 h before */
#define CA_NAMES_MAX		1024		/* names in one sandbox CA */

enum ca_err {
	CA_OK = 0,
	CA_ERR = -1,		/* I/O, OpenSSL, allocation */
	CA_ERR_EXISTS = -2,	/* ca init without --force over an existing CA */
	CA_ERR_ABSENT = -3,	/* no such CA (run `airlock ca init`) */
	CA_ERR_PERM = -4,	/* key file with loose mode or wrong owner */
	CA_ERR_NAME = -5,	/* invalid name, or outside the CA's constraints */
};

struct ca;

/*
 * Creates the host CA in state_dir (ca.key 0600, written first; ca.pem 0644).
 * Refuses to replace an existing one unless force.  Returns CA_OK or an enum ca_err
 * with one line in err.
 */
int	ca_init(const char *state_dir, int force, char *err, size_t errlen);

/*
 * Makes sure the CA of sandbox exists and is constrained to exactly names (policy
 * host patterns: exact names, or "*.suffix"; normalised, deduplicated, sorted here).
 * Creates it if absent, and re-creates it (new key) if its constraints differ, with
 * *reissued set to 1: the VM must then be given the new certificate.  Exact name N
 * becomes permitted N + excluded .N (unless a wildcard covers N); "*.S" becomes
 * permitted .S; every IP address is excluded.  Returns CA_OK or an enum ca_err.
 */
int	ca_sandbox_sync(const char *state_dir, const char *sandbox,
	    const char *const *names, size_t n, int *reissued, char *err,
	    size_t errlen);

/*
 * Loads a CA: the host CA when sandbox is NULL, else the sandbox's.  Returns the CA
 * (release with ca_free()) or NULL with err set (CA_ERR_ABSENT, CA_ERR_PERM... in
 * *rv if rv is not NULL).
 */
struct ca *ca_load(const char *state_dir, const char *sandbox, int *rv, char *err,
	    size_t errlen);
void	ca_free(struct ca *ca);

/* The CA certificate (borrowed: valid until ca_free()). */
X509	*ca_cert(const struct ca *ca);
/* 1 if the CA carries name constraints (a sandbox CA). */
int	ca_is_constrained(const struct ca *ca);
/* Writes the CA certificate as PEM to fp.  Returns 0 or -1. */
int	ca_cert_write_pem(const struct ca *ca, FILE *fp);

/*
 * The CA's certificate and key as DER (the key as PKCS#8), for airlockd's root
 * state reader: the certificate goes to the unprivileged process, the key only to
 * the keys process (proxy/proxy_keyd.c).  key NULL: the certificate only.  The
 * caller releases *key with OPENSSL_clear_free() and *cert with OPENSSL_free().
 * Returns 0 or -1.
 */
int	ca_export_der(const struct ca *ca, uint8_t **key, size_t *keylen,
	    uint8_t **cert, size_t *certlen);
/*
 * The reverse: a CA from DER bytes (with constrained, name constraints required).
 * key NULL makes a certificate-only CA: its certificate and constraints serve
 * chains, anchors and ca_name_is_permitted(), and ca_leaf_mint() refuses it.  With
 * a key, the key is checked against the certificate.  NULL with err on failure.
 */
struct ca *ca_load_der(const uint8_t *cert, size_t certlen, const uint8_t *key,
	    size_t keylen, int constrained, char *err, size_t errlen);
/* 1 if the CA holds its private key (it can sign), 0 if certificate-only. */
int	ca_has_key(const struct ca *ca);

/*
 * 1 if name (normalised first) is a valid DNS name, not a wildcard or an IP
 * literal, and inside the CA's name constraints (always, for the host CA).
 */
int	ca_name_is_permitted(const struct ca *ca, const char *name);

/* A fresh P-256 key for leaves (one per process).  EVP_PKEY_free() it. */
EVP_PKEY *ca_leaf_key_new(void);

/*
 * Mints a leaf for name with leaf_key's public key, signed by ca: random 128-bit
 * serial (top bit clear, non-zero), subject CN=name (when it fits 64 bytes), one
 * SAN dNSName=name, EKU serverAuth, keyUsage digitalSignature, basicConstraints
 * CA:FALSE, SKI/AKI, notBefore now - CA_LEAF_BACKDATE, notAfter now +
 * CA_LEAF_LIFETIME.  name goes through hostname_normalize(); wildcards and IP
 * literals are refused, and so is a name the CA's constraints do not permit (checked
 * before signing).  Only leaf_key's public half is used: a public key alone will do.
 * A certificate-only CA (ca_load_der() without a key) signs nothing: CA_ERR.
 * Returns CA_OK and *out (X509_free() it) or an enum ca_err.
 * Thread-safe: ca and leaf_key are only read.
 */
int	ca_leaf_mint(const struct ca *ca, const char *name, EVP_PKEY *leaf_key,
	    X509 **out, char *err, size_t errlen);

/*
 * A bounded LRU of minted leaves, name -> X509, for ONE struct ca (make a new cache
 * when the CA changes).  Thread-safe (one mutex).  An entry is dropped
 * CA_LEAF_REFRESH seconds before its notAfter.
 */
struct ca_leaf_cache;

/* Returns a cache of at most max leaves (release with ca_leaf_cache_free()), or NULL. */
struct ca_leaf_cache *ca_leaf_cache_new(size_t max);
void	ca_leaf_cache_free(struct ca_leaf_cache *c);
/*
 * The cached leaf of name (normalised, as minted) valid at now, with a new reference
 * (X509_free() it), or NULL.  A hit makes the entry most recently used.
 */
X509	*ca_leaf_cache_get(struct ca_leaf_cache *c, const char *name, time_t now);
/* Caches x for name (takes a new reference; the caller keeps its own), evicting the
 * least recently used entry when full.  Returns 0 or -1. */
int	ca_leaf_cache_put(struct ca_leaf_cache *c, const char *name, X509 *x);
size_t	ca_leaf_cache_count(struct ca_leaf_cache *c);

/*
 * The cached leaf for name, or a new one minted and cached.  Returns CA_OK and *out
 * (a new reference: X509_free() it), or an enum ca_err.
 */
int	ca_leaf_get(struct ca_leaf_cache *c, const struct ca *ca, const char *name,
	    EVP_PKEY *leaf_key, X509 **out, char *err, size_t errlen);
/*
 * The same with the signing done elsewhere: on a miss, mint(arg, normalised name,
 * out, err, errlen) makes the leaf (airlockd asks its keys process), which is then
 * cached.  mint returns CA_OK and *out, or an enum ca_err with err set.
 */
typedef int (*ca_mint_fn)(void *arg, const char *name, X509 **out, char *err,
	    size_t errlen);
int	ca_leaf_get_fn(struct ca_leaf_cache *c, const char *name, ca_mint_fn mint,
	    void *arg, X509 **out, char *err, size_t errlen);

#endif
