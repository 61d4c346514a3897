/*
 * audit/audit_sign.c: signed checkpoints (include/audit.h).  The key files, the
 * key id, the bytes a checkpoint's signature covers, the signer (the one rule it
 * keeps: each head it signs comes after the last, and each signature names the one
 * before) and the verification with the public key alone.
 *
 * The signer runs where the key is: in airlockd that is the keys process
 * (proxy/proxy_keyd.c), never the writer; the writer only asks (audit_sign_fn).
 * Ed25519 signs the bytes themselves (no pre-hash), so the canonical form is what
 * is signed, exactly; it is text, so a reader can rebuild it by hand from a record
 * (docs/AUDIT.md gives it).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "audit.h"
#include "audit_int.h"
#include "hexdig.h"

#define SIGN_FILE_MAX	16384	/* a PEM key file is far smaller */
#define SIG_BYTES	64

static const char hexdigits[] = "0123456789abcdef";

int
audit_is_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[n] == '\0';
}

int
audit_at_is_valid(const char *at)
{
	static const char *const ats[] = { "start", "count", "max_bytes", "sighup",
	    "shutdown" };
	size_t i;

	for (i = 0; i < sizeof(ats) / sizeof(ats[0]); i++)
		if (strcmp(at, ats[i]) == 0)
			return 1;
	return 0;
}

int
audit_source_is_valid(const char *source)
{
	return strcmp(source, "max_bytes") == 0 || strcmp(source, "sighup") == 0;
}

static void
hex_put(const unsigned char *p, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hexdigits[p[i] >> 4];
		out[2 * i + 1] = hexdigits[p[i] & 0xf];
	}
	out[2 * n] = '\0';
}

size_t
audit_checkpoint_canon(char *buf, size_t len, const char *key, long long seq,
    const char *head, const char *ts, long long link_seq, const char *link_head)
{
	size_t i;
	int n;

	if (key == NULL || head == NULL || ts == NULL || link_head == NULL ||
	    seq < 1 || link_seq < 0 || !audit_is_hex(key, AUDIT_KEYID_HEX) ||
	    !audit_is_hex(head, AUDIT_HASH_HEX) ||
	    !audit_is_hex(link_head, AUDIT_HASH_HEX) || strlen(ts) > 31)
		return 0;
	for (i = 0; ts[i] != '\0'; i++)
		if ((unsigned char)ts[i] <= 0x20 || (unsigned char)ts[i] >= 0x7f)
			return 0;
	n = snprintf(buf, len, "airlock-audit-checkpoint-v1\nkey %s\nseq %lld\n"
	    "head %s\nts %s\nlink %lld %s\n", key, seq, head, ts, link_seq,
	    link_head);
	if (n < 0 || (size_t)n >= len)
		return 0;
	return (size_t)n;
}

/* The id of a key (its public half): SHA-256 of the SPKI DER, 16 bytes, hex. */
static int
key_id(EVP_PKEY *k, char id[AUDIT_KEYID_HEX + 1])
{
	unsigned char *der = NULL, md[32];
	unsigned int mdlen = 0;
	int n, rv = -1;

	if ((n = i2d_PUBKEY(k, &der)) > 0 &&
	    EVP_Digest(der, (size_t)n, md, &mdlen, EVP_sha256(), NULL) == 1 &&
	    mdlen == sizeof(md)) {
		hex_put(md, AUDIT_KEYID_HEX / 2, id);
		rv = 0;
	}
	OPENSSL_free(der);
	return rv;
}

/* Writes len bytes to a new file at path (O_EXCL, mode), synced.  0 or -1 (errno). */
static int
file_create(const char *path, mode_t mode, const void *p, size_t len)
{
	size_t done = 0;
	ssize_t n;
	int fd, saved;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    mode)) == -1)
		return -1;
	while (done < len) {
		if ((n = write(fd, (const char *)p + done, len - done)) == -1) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		done += (size_t)n;
	}
	if (fsync(fd) == -1)
		goto fail;
	if (close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	return 0;
 fail:
	saved = errno;
	if (fd != -1)
		close(fd);
	(void)unlink(path);
	errno = saved;
	return -1;
}

/* 0 if nothing is at path (not even a dangling symlink), else -1 with err. */
static int
file_absent(const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(path, &st) == 0) {
		snprintf(err, errlen, "%s: exists: not overwriting it", path);
		return -1;
	}
	if (errno != ENOENT) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* The PEM text one of two writers makes of k, in a memory BIO. */
static BIO *
key_pem(EVP_PKEY *k, int public)
{
	BIO *b;

	if ((b = BIO_new(BIO_s_mem())) == NULL)
		return NULL;
	if ((public ? PEM_write_bio_PUBKEY(b, k) : PEM_write_bio_PKCS8PrivateKey(b,
	    k, NULL, NULL, 0, NULL, NULL)) != 1) {
		BIO_free(b);
		return NULL;
	}
	return b;
}

int
audit_sign_keygen(const char *path, char keyid[AUDIT_KEYID_HEX + 1], char *err,
    size_t errlen)
{
	char pub[4096];
	EVP_PKEY *k = NULL;
	BIO *priv = NULL, *pb = NULL;
	char *p;
	long n;
	int rv = -1;

	if ((size_t)snprintf(pub, sizeof(pub), "%s.pub", path) >= sizeof(pub)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	/* Both checked first: nothing is made when either is there (O_EXCL too). */
	if (file_absent(path, err, errlen) == -1 ||
	    file_absent(pub, err, errlen) == -1)
		return -1;
	if ((k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519")) == NULL ||
	    key_id(k, keyid) == -1 || (priv = key_pem(k, 0)) == NULL ||
	    (pb = key_pem(k, 1)) == NULL) {
		snprintf(err, errlen, "%s: cannot make an Ed25519 key (OpenSSL)",
		    path);
		goto out;
	}
	n = BIO_get_mem_data(priv, &p);
	if (file_create(path, 0600, p, (size_t)n) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	n = BIO_get_mem_data(pb, &p);
	if (file_create(pub, 0644, p, (size_t)n) == -1) {
		snprintf(err, errlen, "%s: %s", pub, strerror(errno));
		(void)unlink(path);
		goto out;
	}
	rv = 0;
 out:
	/* The memory BIO's buffer is cleansed as it is freed (BIO_s_mem). */
	BIO_free(priv);
	BIO_free(pb);
	EVP_PKEY_free(k);
	return rv;
}

/* An Ed25519 key of either kind from PEM text.  NULL with err. */
static EVP_PKEY *
key_from_pem(const char *what, const char *pem, size_t len, int public, char *err,
    size_t errlen)
{
	EVP_PKEY *k = NULL;
	BIO *b;

	if (len > SIGN_FILE_MAX || (b = BIO_new_mem_buf(pem, (int)len)) == NULL) {
		snprintf(err, errlen, "%s: not a PEM key", what);
		return NULL;
	}
	k = public ? PEM_read_bio_PUBKEY(b, NULL, NULL, NULL) :
	    PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	BIO_free(b);
	if (k == NULL) {
		snprintf(err, errlen, "%s: not a PEM %s key", what, public ?
		    "public (SubjectPublicKeyInfo)" : "private (PKCS#8)");
		return NULL;
	}
	if (EVP_PKEY_get_base_id(k) != EVP_PKEY_ED25519) {
		snprintf(err, errlen, "%s: not an Ed25519 key", what);
		EVP_PKEY_free(k);
		return NULL;
	}
	return k;
}

int
audit_sign_key_load(const char *path, unsigned char **der, size_t *derlen,
    char keyid[AUDIT_KEYID_HEX + 1], char *err, size_t errlen)
{
	char buf[SIGN_FILE_MAX + 1];
	PKCS8_PRIV_KEY_INFO *p8 = NULL;
	EVP_PKEY *k = NULL;
	size_t got = 0;
	int dl = 0, rv = -1;

	*der = NULL;
	*derlen = 0;
	if (audit_secret_read(path, "signing key", 1, buf, sizeof(buf), &got, err,
	    errlen) == -1)
		return -1;
	if (got > SIGN_FILE_MAX) {
		snprintf(err, errlen, "%s: larger than %d bytes: not a key", path,
		    SIGN_FILE_MAX);
		goto out;
	}
	if ((k = key_from_pem(path, buf, got, 0, err, errlen)) == NULL)
		goto out;
	if ((p8 = EVP_PKEY2PKCS8(k)) == NULL ||
	    (dl = i2d_PKCS8_PRIV_KEY_INFO(p8, der)) <= 0 ||
	    dl > AUDIT_SIGN_KEY_MAX || key_id(k, keyid) == -1) {
		snprintf(err, errlen, "%s: cannot encode the key", path);
		if (*der != NULL)
			OPENSSL_clear_free(*der, dl > 0 ? (size_t)dl : 0);
		*der = NULL;
		goto out;
	}
	*derlen = (size_t)dl;
	rv = 0;
 out:
	OPENSSL_cleanse(buf, sizeof(buf));
	PKCS8_PRIV_KEY_INFO_free(p8);
	EVP_PKEY_free(k);
	return rv;
}

/*
 * The signer.
 */
struct audit_signer {
	EVP_PKEY	*sg_key;
	char		 sg_id[AUDIT_KEYID_HEX + 1];
	long long	 sg_seq;		/* the last head signed, or the start */
	char		 sg_head[AUDIT_HASH_HEX + 1];
	int		 sg_signed;		/* a signature was made */
};

struct audit_signer *
audit_signer_new(const unsigned char *der, size_t derlen, long long seq,
    const char *head, char *err, size_t errlen)
{
	struct audit_signer *s = NULL;
	PKCS8_PRIV_KEY_INFO *p8 = NULL;
	const unsigned char *p = der;

	if (seq < 0 || (seq > 0 && (head == NULL ||
	    !audit_is_hex(head, AUDIT_HASH_HEX))) || (seq == 0 && head != NULL &&
	    strcmp(head, AUDIT_ZERO_HASH) != 0)) {
		snprintf(err, errlen, "the chain's head: a seq and its 64-hex hash");
		return NULL;
	}
	if (derlen == 0 || derlen > AUDIT_SIGN_KEY_MAX ||
	    (s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, errlen, "%s", derlen == 0 || derlen >
		    AUDIT_SIGN_KEY_MAX ? "not a signing key" : "out of memory");
		return NULL;
	}
	if ((p8 = d2i_PKCS8_PRIV_KEY_INFO(NULL, &p, (long)derlen)) == NULL ||
	    p != der + derlen || (s->sg_key = EVP_PKCS82PKEY(p8)) == NULL ||
	    EVP_PKEY_get_base_id(s->sg_key) != EVP_PKEY_ED25519 ||
	    key_id(s->sg_key, s->sg_id) == -1) {
		snprintf(err, errlen, "not an Ed25519 PKCS#8 key");
		PKCS8_PRIV_KEY_INFO_free(p8);
		audit_signer_free(s);
		return NULL;
	}
	PKCS8_PRIV_KEY_INFO_free(p8);
	s->sg_seq = seq;
	memcpy(s->sg_head, seq > 0 ? head : AUDIT_ZERO_HASH, AUDIT_HASH_HEX + 1);
	return s;
}

void
audit_signer_free(struct audit_signer *s)
{
	if (s == NULL)
		return;
	EVP_PKEY_free(s->sg_key);	/* an ECX key is cleansed as it is freed */
	free(s);
}

const char *
audit_signer_key_id(const struct audit_signer *s)
{
	return s->sg_id;
}

long long
audit_signer_last(const struct audit_signer *s, char head[AUDIT_HASH_HEX + 1])
{
	memcpy(head, s->sg_head, AUDIT_HASH_HEX + 1);
	return s->sg_seq;
}

int
audit_signer_sign(struct audit_signer *s, long long seq, const char *head,
    long long ts_ms, struct audit_signature *out, char *err, size_t errlen)
{
	char canon[AUDIT_CANON_MAX], ts[32];
	unsigned char sig[SIG_BYTES];
	EVP_MD_CTX *ctx = NULL;
	size_t clen, siglen = sizeof(sig);
	int rv = -1;

	memset(out, 0, sizeof(*out));
	if (seq < 1 || head == NULL || !audit_is_hex(head, AUDIT_HASH_HEX) ||
	    ts_ms < 0 || ts_ms > AUDIT_TS_MAX_MS) {
		snprintf(err, errlen, "not a head to sign (seq, hash, ts)");
		return -1;
	}
	/*
	 * Only forward: a head already signed (or one before it) is never signed
	 * again, with this hash or another.  The head the signer started at may be
	 * signed once, as its first signature (a checkpoint at start).
	 */
	if (seq < s->sg_seq || (seq == s->sg_seq && (s->sg_signed ||
	    strcmp(head, s->sg_head) != 0))) {
		snprintf(err, errlen, "seq %lld is not after seq %lld, the last "
		    "head signed", seq, s->sg_seq);
		return -1;
	}
	audit_time_format(ts_ms, ts, sizeof(ts));
	if ((clen = audit_checkpoint_canon(canon, sizeof(canon), s->sg_id, seq, head,
	    ts, s->sg_seq, s->sg_head)) == 0) {
		snprintf(err, errlen, "cannot build the signed bytes");
		return -1;
	}
	if ((ctx = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestSignInit(ctx, NULL, NULL, NULL, s->sg_key) != 1 ||
	    EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)canon,
	    clen) != 1 || siglen != sizeof(sig)) {
		snprintf(err, errlen, "signing failed (OpenSSL)");
		goto out;
	}
	memcpy(out->as_key, s->sg_id, sizeof(out->as_key));
	hex_put(sig, sizeof(sig), out->as_sig);
	out->as_link_seq = s->sg_seq;
	memcpy(out->as_link_head, s->sg_head, sizeof(out->as_link_head));
	s->sg_seq = seq;
	memcpy(s->sg_head, head, AUDIT_HASH_HEX + 1);
	s->sg_signed = 1;
	rv = 0;
 out:
	EVP_MD_CTX_free(ctx);
	return rv;
}

/*
 * Verification.
 */
struct audit_pubkey {
	EVP_PKEY	*pk_key;
	char		 pk_id[AUDIT_KEYID_HEX + 1];
};

struct audit_pubkey *
audit_pubkey_from_pem(const char *pem, size_t len, char *err, size_t errlen)
{
	struct audit_pubkey *pk;

	if ((pk = calloc(1, sizeof(*pk))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if ((pk->pk_key = key_from_pem("public key", pem, len, 1, err,
	    errlen)) == NULL || key_id(pk->pk_key, pk->pk_id) == -1) {
		audit_pubkey_free(pk);
		return NULL;
	}
	return pk;
}

struct audit_pubkey *
audit_pubkey_load(const char *path, char *err, size_t errlen)
{
	struct audit_pubkey *pk;
	char buf[SIGN_FILE_MAX + 1], why[256];
	size_t got;
	FILE *f;

	if ((f = fopen(path, "re")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	got = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (got > SIGN_FILE_MAX) {
		snprintf(err, errlen, "%s: larger than %d bytes: not a key", path,
		    SIGN_FILE_MAX);
		return NULL;
	}
	if ((pk = audit_pubkey_from_pem(buf, got, why, sizeof(why))) == NULL)
		snprintf(err, errlen, "%s: %s", path, why);
	return pk;
}

void
audit_pubkey_free(struct audit_pubkey *pk)
{
	if (pk == NULL)
		return;
	EVP_PKEY_free(pk->pk_key);
	free(pk);
}

const char *
audit_pubkey_id(const struct audit_pubkey *pk)
{
	return pk->pk_id;
}

int
audit_pubkey_verify(const struct audit_pubkey *pk, const char *msg, size_t len,
    const char *sighex)
{
	unsigned char sig[SIG_BYTES];
	EVP_MD_CTX *ctx;
	size_t i;
	int ok;

	if (!audit_is_hex(sighex, AUDIT_SIG_HEX))
		return 0;
	for (i = 0; i < sizeof(sig); i++)
		sig[i] = (unsigned char)(hexdig_val((unsigned char)sighex[2 * i]) <<
		    4 | hexdig_val((unsigned char)sighex[2 * i + 1]));
	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return 0;
	ok = EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, pk->pk_key) == 1 &&
	    EVP_DigestVerify(ctx, sig, sizeof(sig), (const unsigned char *)msg,
	    len) == 1;
	EVP_MD_CTX_free(ctx);
	return ok;
}
