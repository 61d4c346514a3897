/*
 * vault/vault_ca.c: see include/ca.h.  The interception CAs and the leaf signer.
 *
 * Decision: one self-signed, name-constrained root CA per sandbox.
 *
 * The question (issue 5) was whether a per-sandbox CA with X.509 nameConstraints
 * limited to the names the sandbox inspects is honoured by clients, so that a leaked
 * CA key mints nothing useful.  Three shapes were considered:
 *  (a) one host root, trusted by every VM, unconstrained: a leaked key (or a bug in
 *      the proxy's name check) mints a certificate for any name that every VM accepts.
 *  (b) the host root trusted by the VMs, and a constrained intermediate per sandbox
 *      signing the leaves: constraints in an intermediate are honoured by every
 *      verifier, but the root key still mints anything for every VM, and VM A trusts
 *      sandbox B's intermediate.  A VM trusting only its intermediate would need
 *      X509_V_FLAG_PARTIAL_CHAIN, which curl does not set.
 *  (c) a self-signed root per sandbox carrying the constraints, and the VM trusts
 *      only that root.  RFC 5280 leaves constraints on a trust anchor to the relying
 *      party, so this is the shape that needed the experiment.
 * Evidence (Debian 12: OpenSSL 3.0, curl 7.88.1 with OpenSSL): OpenSSL's
 * check_name_constraints() applies the constraints of every certificate above the
 * leaf, the trust anchor included.  tests/unit/ca_mint.c verifies with
 * X509_verify_cert: a leaf for a permitted name passes; a leaf the same key signs
 * for another name fails with X509_V_ERR_PERMITTED_VIOLATION (47); a leaf for a name
 * below an exact name fails with X509_V_ERR_EXCLUDED_VIOLATION (48); a leaf for an
 * IP address fails (48); a leaf with the name only in its CN, no SAN, fails.
 * tests/integration/ca_cli.t repeats it end to end with `openssl verify` and with
 * `curl --cacert SANDBOX.pem` against `openssl s_server` on 127.0.0.1: the minted
 * leaf gives HTTP 200, a leaf signed by the same key for an unlisted name gives
 * "SSL certificate problem: permitted subtree violation".  So (c) is chosen: a leak
 * of the key the proxy holds for sandbox A is worth only A's inspected names, and
 * only to A's VM.  Verifiers that ignore anchor constraints (older NSS, some
 * embedded stacks) degrade to (a) for that one VM, no worse.
 * The cost: the constraints are fixed when the CA is made, so a policy change that
 * inspects a new name makes a new CA (ca_sandbox_sync reports it) and the VM needs
 * the new certificate.  The host CA of `airlock ca init` stays for VMs that must
 * keep one long-lived anchor; it is unconstrained, so prefer the sandbox CA.
 *
 * Constraint encoding: DNS constraints in OpenSSL (and RFC 5280) are subtrees:
 * "api.github.com" also permits "x.api.github.com".  An exact policy name N is
 * therefore permitted N plus excluded ".N" (OpenSSL: a leading dot means strictly
 * below), unless a wildcard of the same policy covers N.  "*.S" is permitted ".S".
 * The iPAddress forms 0.0.0.0/0 and ::/0 are excluded: constraints bind only the
 * name forms they mention, and a leaf for an address must not slip through.
 *
 * Leaves: valid from now - 1 h (VM clocks lag) to now + 24 h: short enough that a
 * leaf leaked from the proxy's memory expires within a day, long enough that the
 * cache saves nearly every signature.  The serial is 128 random bits (top bit clear,
 * so the DER INTEGER stays positive in 16 bytes; never zero).
 */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "ca.h"
#include "hostname.h"
#include "sandbox.h"
#include "vault_int.h"

struct ca {
	X509		*ca_cert;
	EVP_PKEY	*ca_key;
	NAME_CONSTRAINTS *ca_nc;	/* NULL: the unconstrained host CA */
};

static void
ca_ssl_err(char *err, size_t errlen, const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[256];

	ERR_error_string_n(e, buf, sizeof(buf));
	snprintf(err, errlen, "%s: %s", what, e ? buf : "OpenSSL failure");
	ERR_clear_error();
}

/* Sets a random 128-bit serial: top bit clear, not zero.  0 or -1. */
static int
ca_serial_set(X509 *x)
{
	unsigned char b[16];
	ASN1_INTEGER *ai = NULL;
	BIGNUM *bn = NULL;
	int rv = -1;

	if (RAND_bytes(b, sizeof(b)) != 1)
		goto out;
	b[0] &= 0x7f;
	if ((bn = BN_bin2bn(b, sizeof(b), NULL)) == NULL)
		goto out;
	if (BN_is_zero(bn))	/* 2^-127: take it as a broken RNG */
		goto out;
	if ((ai = BN_to_ASN1_INTEGER(bn, NULL)) == NULL)
		goto out;
	if (X509_set_serialNumber(x, ai) != 1)
		goto out;
	rv = 0;
 out:
	ASN1_INTEGER_free(ai);
	BN_free(bn);
	return rv;
}

/* Adds one extension given in openssl.cnf syntax.  0 or -1. */
static int
ca_ext_add(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509_EXTENSION *ext;
	X509V3_CTX ctx;
	int rv;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	if ((ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value)) == NULL)
		return -1;
	rv = X509_add_ext(x, ext, -1) == 1 ? 0 : -1;
	X509_EXTENSION_free(ext);
	return rv;
}

static EVP_PKEY *
ca_key_new(void)
{
	return EVP_EC_gen("P-256");
}

EVP_PKEY *
ca_leaf_key_new(void)
{
	return ca_key_new();
}

static int
ca_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The nameConstraints value (openssl.cnf syntax) for a sandbox's inspected names.
 * Returns a malloc'd string, or NULL with err set.
 */
static char *
ca_nc_value(const char *const *names, size_t n, char *err, size_t errlen)
{
	char norm[HOSTNAME_MAX + 1], **v = NULL, *s = NULL;
	size_t i, j, nv = 0, len = 0, off = 0;
	int hr, covered;

	if (n == 0 || n > CA_NAMES_MAX) {
		snprintf(err, errlen, "a sandbox CA needs 1-%d names to inspect "
		    "(got %zu)", CA_NAMES_MAX, n);
		return NULL;
	}
	if ((v = calloc(n, sizeof(*v))) == NULL)
		goto nomem;
	for (i = 0; i < n; i++) {
		if ((hr = hostname_pattern_normalize(names[i], strlen(names[i]),
		    norm)) != HOSTNAME_OK) {
			snprintf(err, errlen, "name '%.253s': %s", names[i],
			    hostname_strerror(hr));
			goto error;
		}
		for (j = 0; j < nv; j++)
			if (strcmp(v[j], norm) == 0)
				break;
		if (j < nv)
			continue;
		if ((v[nv++] = strdup(norm)) == NULL)
			goto nomem;
	}
	qsort(v, nv, sizeof(*v), ca_strcmp);
	/* Worst case per name: "permitted;DNS:" + name + ",excluded;DNS:." + name + ",". */
	len = strlen("critical,") + nv * (2 * HOSTNAME_MAX + 40) + 64;
	if ((s = malloc(len)) == NULL)
		goto nomem;
	off = (size_t)snprintf(s, len, "critical");
	for (i = 0; i < nv; i++) {
		if (v[i][0] == '*') {
			off += (size_t)snprintf(s + off, len - off,
			    ",permitted;DNS:%s", v[i] + 1);
			continue;
		}
		/* Covered by a wildcard "*.S" with S == N or N below S? */
		covered = 0;
		for (j = 0; j < nv; j++)
			if (v[j][0] == '*' && hostname_match(v[j], v[i]))
				covered = 1;
		if (covered)
			continue;
		off += (size_t)snprintf(s + off, len - off, ",permitted;DNS:%s",
		    v[i]);
		/* A wildcard "*.N" keeps the subtree below N open. */
		for (j = 0; j < nv; j++)
			if (v[j][0] == '*' && strcmp(v[j] + 2, v[i]) == 0)
				covered = 1;
		if (!covered)
			off += (size_t)snprintf(s + off, len - off,
			    ",excluded;DNS:.%s", v[i]);
	}
	snprintf(s + off, len - off,
	    ",excluded;IP:0.0.0.0/0.0.0.0,excluded;IP:::/::");
	for (i = 0; i < nv; i++)
		free(v[i]);
	free(v);
	return s;
 nomem:
	snprintf(err, errlen, "%s", strerror(errno));
 error:
	if (v != NULL)
		for (i = 0; i < nv; i++)
			free(v[i]);
	free(v);
	free(s);
	return NULL;
}

/* "airlock <what> (<hostname>)", cut to the 64 bytes a CN may hold. */
static void
ca_subject_cn(const char *what, char *cn, size_t cnlen)
{
	char host[256];
	int room;

	if (gethostname(host, sizeof(host)) == -1)
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = '\0';
	/* "airlock " + " (" + ")" = 11 bytes around what and the host name. */
	room = 64 - 11 - (int)strlen(what);
	snprintf(cn, cnlen, "airlock %s (%.*s)", what, room > 1 ? room : 1, host);
	if (cnlen > 64)
		cn[64] = '\0';
}

/*
 * Makes a self-signed P-256 CA: cn, optional nameConstraints value nc.  Returns
 * CA_OK with *keyp and *certp, or an enum ca_err.
 */
static int
ca_make(const char *cn, const char *nc, EVP_PKEY **keyp, X509 **certp, char *err,
    size_t errlen)
{
	EVP_PKEY *key = NULL;
	X509 *x = NULL;
	X509_NAME *name;
	int rv = CA_ERR;

	if ((key = ca_key_new()) == NULL || (x = X509_new()) == NULL) {
		ca_ssl_err(err, errlen, "CA key");
		goto out;
	}
	name = X509_get_subject_name(x);
	if (X509_set_version(x, X509_VERSION_3) != 1 || ca_serial_set(x) == -1 ||
	    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
	    (const unsigned char *)cn, -1, -1, 0) != 1 ||
	    X509_set_issuer_name(x, name) != 1 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), -CA_LEAF_BACKDATE) == NULL ||
	    X509_time_adj_ex(X509_getm_notAfter(x), CA_LIFETIME_DAYS, 0,
	    NULL) == NULL ||
	    X509_set_pubkey(x, key) != 1 ||
	    ca_ext_add(x, x, NID_basic_constraints,
	    "critical,CA:TRUE,pathlen:0") == -1 ||
	    ca_ext_add(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") == -1 ||
	    ca_ext_add(x, x, NID_subject_key_identifier, "hash") == -1 ||
	    ca_ext_add(x, x, NID_authority_key_identifier, "keyid:always") == -1 ||
	    (nc != NULL && ca_ext_add(x, x, NID_name_constraints, nc) == -1) ||
	    X509_sign(x, key, EVP_sha256()) == 0) {
		ca_ssl_err(err, errlen, "CA certificate");
		goto out;
	}
	*keyp = key;
	*certp = x;
	key = NULL;
	x = NULL;	/* transferred */
	rv = CA_OK;
 out:
	EVP_PKEY_free(key);
	X509_free(x);
	return rv;
}

/* Writes the key (0600, first) and the certificate (0644). */
static int
ca_files_write(const char *dir, const char *keyname, const char *pemname,
    EVP_PKEY *key, X509 *cert, char *err, size_t errlen)
{
	BIO *kb = NULL, *cb = NULL;
	char *p;
	long n;
	int rv = CA_ERR;

	/* secmem: the key's PEM is wiped when the BIO is freed. */
	if ((kb = BIO_new(BIO_s_secmem())) == NULL ||
	    (cb = BIO_new(BIO_s_mem())) == NULL ||
	    PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL) != 1 ||
	    PEM_write_bio_X509(cb, cert) != 1) {
		ca_ssl_err(err, errlen, keyname);
		goto out;
	}
	n = BIO_get_mem_data(kb, &p);
	if (vault_fs_write_atomic(dir, keyname, p, (size_t)n, 0600, err,
	    errlen) != VAULT_OK)
		goto out;
	n = BIO_get_mem_data(cb, &p);
	if (vault_fs_write_atomic(dir, pemname, p, (size_t)n, 0644, err,
	    errlen) != VAULT_OK)
		goto out;
	rv = CA_OK;
 out:
	BIO_free(kb);
	BIO_free(cb);
	return rv;
}

int
ca_init(const char *state_dir, int force, char *err, size_t errlen)
{
	char cn[128];
	EVP_PKEY *key = NULL;
	X509 *cert = NULL;
	int rv;

	if (!force && (vault_fs_exists(state_dir, "ca.key") ||
	    vault_fs_exists(state_dir, "ca.pem"))) {
		snprintf(err, errlen, "a CA already exists in %s (ca init --force "
		    "replaces it; every VM then needs the new ca.pem)", state_dir);
		return CA_ERR_EXISTS;
	}
	if (vault_fs_mkdir(state_dir, err, errlen) != VAULT_OK)
		return CA_ERR;
	ca_subject_cn("interception CA", cn, sizeof(cn));
	if ((rv = ca_make(cn, NULL, &key, &cert, err, errlen)) == CA_OK)
		rv = ca_files_write(state_dir, "ca.key", "ca.pem", key, cert, err,
		    errlen);
	EVP_PKEY_free(key);
	X509_free(cert);
	return rv;
}

void
ca_free(struct ca *ca)
{
	if (ca == NULL)
		return;
	X509_free(ca->ca_cert);
	EVP_PKEY_free(ca->ca_key);
	NAME_CONSTRAINTS_free(ca->ca_nc);
	free(ca);
}

/* The directory and file names of a CA; sandbox NULL: the host CA. */
static int
ca_paths(const char *state_dir, const char *sandbox, char *dir, size_t dirlen,
    char *keyname, char *pemname, size_t namelen, char *err, size_t errlen)
{
	if (sandbox == NULL) {
		snprintf(dir, dirlen, "%s", state_dir);
		snprintf(keyname, namelen, "ca.key");
		snprintf(pemname, namelen, "ca.pem");
		return CA_OK;
	}
	if (!sandbox_name_is_valid(sandbox)) {
		snprintf(err, errlen, "invalid sandbox name '%.64s'", sandbox);
		return CA_ERR_NAME;
	}
	if ((size_t)snprintf(dir, dirlen, "%s/ca", state_dir) >= dirlen) {
		snprintf(err, errlen, "%s: path too long", state_dir);
		return CA_ERR;
	}
	snprintf(keyname, namelen, "%s.key", sandbox);
	snprintf(pemname, namelen, "%s.pem", sandbox);
	return CA_OK;
}

struct ca *
ca_load(const char *state_dir, const char *sandbox, int *rvp, char *err,
    size_t errlen)
{
	char dir[PATH_MAX], keyname[64], pemname[64], path[PATH_MAX + 64];
	struct ca *ca = NULL;
	uint8_t *kbuf = NULL;
	size_t klen = 0;
	BIO *b = NULL;
	FILE *f = NULL;
	int rv, crit;

	if ((rv = ca_paths(state_dir, sandbox, dir, sizeof(dir), keyname,
	    pemname, sizeof(keyname), err, errlen)) != CA_OK)
		goto out;
	rv = CA_ERR;
	if ((ca = calloc(1, sizeof(*ca))) == NULL) {
		snprintf(err, errlen, "%s", strerror(errno));
		goto out;
	}
	switch (vault_fs_read_secret(dir, keyname, 64 * 1024, &kbuf, &klen, err,
	    errlen)) {
	case VAULT_OK:
		break;
	case VAULT_ERR_ABSENT:
		if (sandbox == NULL)
			snprintf(err, errlen, "no CA in %s (run `airlock ca "
			    "init`)", state_dir);
		else
			snprintf(err, errlen, "no CA for sandbox '%s' (`airlock "
			    "ca cert %s` makes it)", sandbox, sandbox);
		rv = CA_ERR_ABSENT;
		goto out;
	case VAULT_ERR_PERM:
		rv = CA_ERR_PERM;
		goto out;
	default:
		goto out;
	}
	if ((b = BIO_new_mem_buf(kbuf, (int)klen)) == NULL ||
	    (ca->ca_key = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL)) == NULL) {
		ca_ssl_err(err, errlen, keyname);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, pemname);
	if ((f = fopen(path, "re")) == NULL) {
		snprintf(err, errlen, "%s: %s", pemname, strerror(errno));
		rv = errno == ENOENT ? CA_ERR_ABSENT : CA_ERR;
		goto out;
	}
	if ((ca->ca_cert = PEM_read_X509(f, NULL, NULL, NULL)) == NULL) {
		ca_ssl_err(err, errlen, pemname);
		goto out;
	}
	if (X509_check_private_key(ca->ca_cert, ca->ca_key) != 1) {
		snprintf(err, errlen, "%s does not match %s", keyname, pemname);
		ERR_clear_error();
		goto out;
	}
	ca->ca_nc = X509_get_ext_d2i(ca->ca_cert, NID_name_constraints, &crit,
	    NULL);
	if (ca->ca_nc == NULL && crit != -1) {
		snprintf(err, errlen, "%s: unreadable nameConstraints", pemname);
		goto out;
	}
	if (sandbox != NULL && ca->ca_nc == NULL) {
		snprintf(err, errlen, "%s: a sandbox CA without name constraints",
		    pemname);
		goto out;
	}
	rv = CA_OK;
 out:
	if (kbuf != NULL)
		OPENSSL_clear_free(kbuf, klen + 1);
	BIO_free(b);
	if (f != NULL)
		fclose(f);
	if (rvp != NULL)
		*rvp = rv;
	if (rv != CA_OK) {
		ca_free(ca);
		return NULL;
	}
	return ca;
}

int
ca_sandbox_sync(const char *state_dir, const char *sandbox,
    const char *const *names, size_t n, int *reissued, char *err, size_t errlen)
{
	char dir[PATH_MAX], keyname[64], pemname[64], cn[128], lerr[256];
	char what[64];
	X509_EXTENSION *want = NULL;
	const X509_EXTENSION *have;
	struct ca *old = NULL;
	EVP_PKEY *key = NULL;
	X509 *cert = NULL;
	X509V3_CTX ctx;
	char *nc = NULL;
	int rv, lrv, idx;

	*reissued = 0;
	if ((rv = ca_paths(state_dir, sandbox, dir, sizeof(dir), keyname,
	    pemname, sizeof(keyname), err, errlen)) != CA_OK)
		goto out;
	rv = CA_ERR_NAME;
	if ((nc = ca_nc_value(names, n, err, errlen)) == NULL)
		goto out;
	rv = CA_ERR;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, NULL, NULL, NULL, NULL, X509V3_CTX_TEST);
	if ((want = X509V3_EXT_conf_nid(NULL, &ctx, NID_name_constraints,
	    nc)) == NULL) {
		ca_ssl_err(err, errlen, "nameConstraints");
		goto out;
	}
	old = ca_load(state_dir, sandbox, &lrv, lerr, sizeof(lerr));
	if (old == NULL && lrv == CA_ERR_PERM) {
		/* Never replace a key someone may have read: say so. */
		snprintf(err, errlen, "%s", lerr);
		rv = CA_ERR_PERM;
		goto out;
	}
	if (old != NULL) {
		idx = X509_get_ext_by_NID(old->ca_cert, NID_name_constraints, -1);
		have = idx >= 0 ? X509_get_ext(old->ca_cert, idx) : NULL;
		if (have != NULL && ASN1_OCTET_STRING_cmp(
		    X509_EXTENSION_get_data((X509_EXTENSION *)(uintptr_t)have),
		    X509_EXTENSION_get_data(want)) == 0) {
			rv = CA_OK;
			goto out;
		}
		*reissued = 1;
	}
	if (vault_fs_mkdir(state_dir, err, errlen) != VAULT_OK ||
	    vault_fs_mkdir(dir, err, errlen) != VAULT_OK)
		goto out;
	snprintf(what, sizeof(what), "sandbox %s CA", sandbox);
	ca_subject_cn(what, cn, sizeof(cn));
	if ((rv = ca_make(cn, nc, &key, &cert, err, errlen)) != CA_OK)
		goto out;
	rv = ca_files_write(dir, keyname, pemname, key, cert, err, errlen);
 out:
	X509_EXTENSION_free(want);
	ca_free(old);
	EVP_PKEY_free(key);
	X509_free(cert);
	free(nc);
	return rv;
}

X509 *
ca_cert(const struct ca *ca)
{
	return ca->ca_cert;
}

int
ca_is_constrained(const struct ca *ca)
{
	return ca->ca_nc != NULL;
}

int
ca_cert_write_pem(const struct ca *ca, FILE *fp)
{
	return PEM_write_X509(fp, ca->ca_cert) == 1 ? 0 : -1;
}

int
ca_has_key(const struct ca *ca)
{
	return ca->ca_key != NULL;
}

int
ca_export_der(const struct ca *ca, uint8_t **key, size_t *keylen, uint8_t **cert,
    size_t *certlen)
{
	PKCS8_PRIV_KEY_INFO *p8 = NULL;
	unsigned char *k = NULL, *c = NULL;
	int kn = 0, cn;

	if ((cn = i2d_X509(ca->ca_cert, &c)) <= 0)
		goto fail;
	/* PKCS8_PRIV_KEY_INFO_free() cleanses the key it held. */
	if (key != NULL && (ca->ca_key == NULL ||
	    (p8 = EVP_PKEY2PKCS8(ca->ca_key)) == NULL ||
	    (kn = i2d_PKCS8_PRIV_KEY_INFO(p8, &k)) <= 0))
		goto fail;
	PKCS8_PRIV_KEY_INFO_free(p8);
	*cert = c;
	*certlen = (size_t)cn;
	if (key != NULL) {
		*key = k;
		*keylen = (size_t)kn;
	}
	return 0;
 fail:
	PKCS8_PRIV_KEY_INFO_free(p8);
	OPENSSL_free(c);
	ERR_clear_error();
	return -1;
}

struct ca *
ca_load_der(const uint8_t *cert, size_t certlen, const uint8_t *key, size_t keylen,
    int constrained, char *err, size_t errlen)
{
	const unsigned char *p;
	struct ca *ca;
	int crit, ok = 0;

	if (keylen > INT_MAX || certlen > INT_MAX ||
	    (ca = calloc(1, sizeof(*ca))) == NULL) {
		snprintf(err, errlen, "CA: %s", strerror(ENOMEM));
		return NULL;
	}
	p = cert;
	if ((ca->ca_cert = d2i_X509(NULL, &p, (long)certlen)) == NULL ||
	    p != cert + certlen) {
		snprintf(err, errlen, "CA certificate: not one DER certificate");
		goto out;
	}
	if (key != NULL) {
		p = key;
		if ((ca->ca_key = d2i_AutoPrivateKey(NULL, &p, (long)keylen)) == NULL ||
		    p != key + keylen) {
			/* Never an OpenSSL text here: nothing of the key's bytes. */
			snprintf(err, errlen, "CA key: not one DER private key");
			goto out;
		}
		if (X509_check_private_key(ca->ca_cert, ca->ca_key) != 1) {
			snprintf(err, errlen, "CA key and certificate do not match");
			goto out;
		}
	}
	ca->ca_nc = X509_get_ext_d2i(ca->ca_cert, NID_name_constraints, &crit,
	    NULL);
	if ((ca->ca_nc == NULL && crit != -1) || (constrained && ca->ca_nc == NULL)) {
		snprintf(err, errlen, "CA certificate: missing or unreadable "
		    "nameConstraints");
		goto out;
	}
	ok = 1;
 out:
	ERR_clear_error();
	if (!ok) {
		ca_free(ca);
		return NULL;
	}
	return ca;
}

/* Adds SAN dNSName=name to x.  0 or -1. */
static int
ca_san_add(X509 *x, const char *name)
{
	char v[HOSTNAME_MAX + 8];

	snprintf(v, sizeof(v), "DNS:%s", name);
	return ca_ext_add(x, NULL, NID_subject_alt_name, v);
}

/*
 * One DNS subtree, with the semantics of OpenSSL's nc_dns() (x509/v3_ncons.c): an
 * empty base matches all; otherwise the name equals base, or ends in base with a
 * label boundary before it, or base starts with '.' and the name ends in it.
 */
static int
ca_nc_dns_match(const ASN1_IA5STRING *base, const char *name)
{
	const char *b = (const char *)ASN1_STRING_get0_data(base);
	size_t bl = (size_t)ASN1_STRING_length(base), nl = strlen(name);
	const char *tail;

	if (bl == 0)
		return 1;
	if (nl < bl)
		return 0;
	tail = name + (nl - bl);
	if (nl > bl && b[0] != '.' && tail[-1] != '.')
		return 0;
	return strncasecmp(tail, b, bl) == 0;
}

/*
 * The constraint check a verifier makes, for the one dNSName (and CN) a leaf of
 * ours carries, done on the name before anything is signed.  We do not call
 * NAME_CONSTRAINTS_check() on the unsigned leaf: it reads OpenSSL's extension cache,
 * which is filled only for parsed or explicitly cached certificates (it passed
 * every name here, which is how we found out).  tests/unit/ca_mint.c checks this
 * function against X509_verify_cert() on forged leaves.
 */
static int
ca_nc_permits(const struct ca *ca, const char *name)
{
	GENERAL_SUBTREE *st;
	int i, have = 0, match = 0;

	if (ca->ca_nc == NULL)
		return 1;
	for (i = 0; i < sk_GENERAL_SUBTREE_num(ca->ca_nc->excludedSubtrees); i++) {
		st = sk_GENERAL_SUBTREE_value(ca->ca_nc->excludedSubtrees, i);
		if (st->base->type == GEN_DNS &&
		    ca_nc_dns_match(st->base->d.dNSName, name))
			return 0;
	}
	for (i = 0; i < sk_GENERAL_SUBTREE_num(ca->ca_nc->permittedSubtrees); i++) {
		st = sk_GENERAL_SUBTREE_value(ca->ca_nc->permittedSubtrees, i);
		if (st->base->type != GEN_DNS)
			continue;
		have = 1;
		if (ca_nc_dns_match(st->base->d.dNSName, name))
			match = 1;
	}
	return !have || match;
}

/* Normalises a leaf name: a DNS name, no wildcard, no IP literal.  0 or -1. */
static int
ca_leaf_name(const char *in, char *out, char *err, size_t errlen)
{
	int hr;

	if ((hr = hostname_normalize(in, strlen(in), out)) != HOSTNAME_OK) {
		snprintf(err, errlen, "leaf name '%.253s': %s", in,
		    hostname_strerror(hr));
		return -1;
	}
	return 0;
}

int
ca_name_is_permitted(const struct ca *ca, const char *name)
{
	char norm[HOSTNAME_MAX + 1], err[64];

	if (ca_leaf_name(name, norm, err, sizeof(err)) == -1)
		return 0;
	return ca_nc_permits(ca, norm);
}

int
ca_leaf_mint(const struct ca *ca, const char *name, EVP_PKEY *leaf_key, X509 **out,
    char *err, size_t errlen)
{
	char norm[HOSTNAME_MAX + 1];
	X509 *x = NULL;
	X509_NAME *subj;
	int rv = CA_ERR_NAME;

	*out = NULL;
	if (ca_leaf_name(name, norm, err, errlen) == -1)
		goto out;
	if (!ca_nc_permits(ca, norm)) {
		snprintf(err, errlen, "leaf name '%s' is outside the CA's name "
		    "constraints", norm);
		goto out;
	}
	rv = CA_ERR;
	if (ca->ca_key == NULL) {
		snprintf(err, errlen, "this CA holds no key (certificate only)");
		goto out;
	}
	if ((x = X509_new()) == NULL)
		goto ssl;
	subj = X509_get_subject_name(x);
	if (X509_set_version(x, X509_VERSION_3) != 1 || ca_serial_set(x) == -1)
		goto ssl;
	if (strlen(norm) <= 64 && X509_NAME_add_entry_by_txt(subj, "CN",
	    MBSTRING_ASC, (const unsigned char *)norm, -1, -1, 0) != 1)
		goto ssl;
	if (X509_set_issuer_name(x, X509_get_subject_name(ca->ca_cert)) != 1 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), -CA_LEAF_BACKDATE) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(x), CA_LEAF_LIFETIME) == NULL)
		goto ssl;
	/* Never outlive the CA. */
	if (ASN1_TIME_compare(X509_get0_notAfter(x),
	    X509_get0_notAfter(ca->ca_cert)) > 0 &&
	    X509_set1_notAfter(x, X509_get0_notAfter(ca->ca_cert)) != 1)
		goto ssl;
	if (X509_set_pubkey(x, leaf_key) != 1 ||
	    ca_ext_add(x, ca->ca_cert, NID_basic_constraints,
	    "critical,CA:FALSE") == -1 ||
	    ca_ext_add(x, ca->ca_cert, NID_key_usage,
	    "critical,digitalSignature") == -1 ||
	    ca_ext_add(x, ca->ca_cert, NID_ext_key_usage, "serverAuth") == -1 ||
	    ca_san_add(x, norm) == -1 ||
	    ca_ext_add(x, ca->ca_cert, NID_subject_key_identifier, "hash") == -1 ||
	    ca_ext_add(x, ca->ca_cert, NID_authority_key_identifier,
	    "keyid:always") == -1)
		goto ssl;
	if (X509_sign(x, ca->ca_key, EVP_sha256()) == 0)
		goto ssl;
	*out = x;
	x = NULL;	/* transferred */
	rv = CA_OK;
	goto out;
 ssl:
	ca_ssl_err(err, errlen, "leaf certificate");
 out:
	X509_free(x);
	return rv;
}
