/*
 * vault/vault_file.c: the vault.db format and its AES-256-GCM records.
 *
 * vault.db, version 1 (all integers big-endian; no padding; nothing after the end):
 *
 *	magic		8	"AIRLOCKV"
 *	version		u32	1 (any other value: "unknown version")
 *	flags		u32	0
 *	keycheck	12+16	nonce, tag: GCM of the empty string, AAD "AIRLOCKV keycheck 1"
 *	count		u32	<= VAULT_SECRETS_MAX
 *	count entries, strictly sorted by name:
 *	  name		u16 len + bytes	[A-Za-z0-9_.-], <= 64
 *	  placeholder	u16 len + bytes	printable ASCII, 16..128
 *	  nhosts	u16		1..32
 *	  hosts		nhosts x (u16 len + bytes), each already normalised
 *	  created	i64		unix seconds
 *	  rotated	i64
 *	  nonce		12		random, fresh for every encryption
 *	  ctlen		u32		1..VAULT_VALUE_MAX
 *	  ciphertext	ctlen
 *	  tag		16
 *	trailer		12+16	nonce, tag: GCM of the empty string, AAD "AIRLOCKV trailer 1"
 *				followed by every byte of the file before the trailer
 *
 * Why three kinds of record:
 * - The key check tells a wrong key ("wrong vault key") apart from a damaged entry.
 * - Each entry's AAD is "AIRLOCKV entry 1" + version + the canonical encoding of its
 *   metadata (name, placeholder, hosts, timestamps: exactly the bytes above, which the
 *   strict parser accepts in one spelling only).  So a ciphertext moved to another
 *   entry, a secret rebound to another host, or a placeholder swapped fails that
 *   entry's authentication, and the error can name the entry.
 * - The trailer authenticates the whole file, so removing, duplicating or reordering
 *   entries (each still valid alone) is detected too.  Rolling the whole file back to
 *   an older copy under the same key is not detectable: that needs state outside the
 *   file (XXX a generation counter next to the key would catch it).
 *
 * The parser checks the whole structure before any decryption, so truncation and
 * trailing bytes are reported as such, and the fuzzer reaches every length check.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "hostname.h"
#include "vault_int.h"

#define VAULT_MAGIC		"AIRLOCKV"
#define VAULT_MAGIC_LEN		8
#define VAULT_VERSION		1
#define VAULT_AAD_KEYCHECK	"AIRLOCKV keycheck 1"
#define VAULT_AAD_ENTRY		"AIRLOCKV entry 1"
#define VAULT_AAD_TRAILER	"AIRLOCKV trailer 1"

/* A growable output buffer; an allocation failure sticks in b_fail. */
struct vbuf {
	uint8_t		*b_p;
	size_t		 b_n;
	size_t		 b_cap;
	int		 b_fail;
};

static void
vbuf_add(struct vbuf *b, const void *p, size_t n)
{
	uint8_t *np;
	size_t ncap;

	if (b->b_fail)
		return;
	if (n > b->b_cap - b->b_n) {
		ncap = b->b_cap ? b->b_cap : 256;
		while (ncap - b->b_n < n) {
			if (ncap > SIZE_MAX / 2) {
				b->b_fail = 1;
				return;
			}
			ncap *= 2;
		}
		if ((np = realloc(b->b_p, ncap)) == NULL) {
			b->b_fail = 1;
			return;
		}
		b->b_p = np;
		b->b_cap = ncap;
	}
	memcpy(b->b_p + b->b_n, p, n);
	b->b_n += n;
}

static void
vbuf_u16(struct vbuf *b, uint16_t v)
{
	uint8_t x[2] = { v >> 8, v };

	vbuf_add(b, x, sizeof(x));
}

static void
vbuf_u32(struct vbuf *b, uint32_t v)
{
	uint8_t x[4] = { v >> 24, v >> 16, v >> 8, v };

	vbuf_add(b, x, sizeof(x));
}

static void
vbuf_i64(struct vbuf *b, int64_t sv)
{
	uint64_t v = (uint64_t)sv;
	uint8_t x[8];
	int i;

	for (i = 0; i < 8; i++)
		x[i] = v >> (56 - 8 * i);
	vbuf_add(b, x, sizeof(x));
}

static void
vbuf_str(struct vbuf *b, const char *s)
{
	size_t n = strlen(s);

	vbuf_u16(b, (uint16_t)n);
	vbuf_add(b, s, n);
}

/* The canonical metadata encoding: what the file stores, and the entry's AAD tail. */
static void
vault_entry_meta(struct vbuf *b, const struct vault_entry *e)
{
	size_t i;

	vbuf_str(b, e->ve_name);
	vbuf_str(b, e->ve_placeholder);
	vbuf_u16(b, (uint16_t)e->ve_nhosts);
	for (i = 0; i < e->ve_nhosts; i++)
		vbuf_str(b, e->ve_hosts[i]);
	vbuf_i64(b, e->ve_created);
	vbuf_i64(b, e->ve_rotated);
}

static int
vault_entry_aad(const struct vault_entry *e, struct vbuf *b)
{
	vbuf_add(b, VAULT_AAD_ENTRY, sizeof(VAULT_AAD_ENTRY));
	vbuf_u32(b, VAULT_VERSION);
	vault_entry_meta(b, e);
	return b->b_fail ? -1 : 0;
}

/*
 * One AES-256-GCM operation.  enc: encrypt in -> out and write tag; else decrypt and
 * check tag.  Returns 1 on success, 0 on authentication failure, -1 on error.
 */
static int
vault_gcm(int enc, const uint8_t key[VAULT_KEY_LEN],
    const uint8_t nonce[VAULT_NONCE_LEN], const uint8_t *aad1, size_t aad1len,
    const uint8_t *aad2, size_t aad2len, const uint8_t *in, size_t inlen,
    uint8_t *out, uint8_t tag[VAULT_TAG_LEN])
{
	EVP_CIPHER_CTX *ctx = NULL;
	uint8_t dummy[16];
	int n, rv = -1;

	/* GCM's final step writes nothing, but never hand OpenSSL NULL + 0. */
	if (out == NULL)
		out = dummy;

	if (inlen > INT32_MAX || aad1len > INT32_MAX || aad2len > INT32_MAX)
		return -1;
	if ((ctx = EVP_CIPHER_CTX_new()) == NULL)
		return -1;
	if (EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) != 1 ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, VAULT_NONCE_LEN,
	    NULL) != 1 ||
	    EVP_CipherInit_ex(ctx, NULL, NULL, key, nonce, enc) != 1)
		goto out;
	if (aad1len > 0 && EVP_CipherUpdate(ctx, NULL, &n, aad1, (int)aad1len) != 1)
		goto out;
	if (aad2len > 0 && EVP_CipherUpdate(ctx, NULL, &n, aad2, (int)aad2len) != 1)
		goto out;
	if (inlen > 0 && EVP_CipherUpdate(ctx, out, &n, in, (int)inlen) != 1)
		goto out;
	if (enc) {
		if (EVP_CipherFinal_ex(ctx, out + inlen, &n) != 1 ||
		    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, VAULT_TAG_LEN,
		    tag) != 1)
			goto out;
		rv = 1;
	} else {
		if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, VAULT_TAG_LEN,
		    tag) != 1)
			goto out;
		rv = EVP_CipherFinal_ex(ctx, out + inlen, &n) == 1 ? 1 : 0;
	}
 out:
	EVP_CIPHER_CTX_free(ctx);
	return rv;
}

/*
 * Encrypts pt (ptlen bytes) into e under a fresh random nonce, with e's metadata as
 * AAD.  Replaces e->ve_ct.  Returns 0 or -1.
 */
int
vault_entry_seal(const uint8_t key[VAULT_KEY_LEN], struct vault_entry *e,
    const uint8_t *pt, size_t ptlen)
{
	struct vbuf aad = { 0 };
	uint8_t *ct = NULL;
	int rv = -1;

	if (ptlen == 0 || (ct = malloc(ptlen)) == NULL)
		goto out;
	if (vault_entry_aad(e, &aad) == -1)
		goto out;
	if (RAND_bytes(e->ve_nonce, VAULT_NONCE_LEN) != 1)
		goto out;
	if (vault_gcm(1, key, e->ve_nonce, aad.b_p, aad.b_n, NULL, 0, pt, ptlen,
	    ct, e->ve_tag) != 1)
		goto out;
	free(e->ve_ct);
	e->ve_ct = ct;
	ct = NULL;	/* transferred */
	e->ve_ctlen = ptlen;
	rv = 0;
 out:
	free(ct);
	free(aad.b_p);
	return rv;
}

/*
 * Decrypts e into pt (e->ve_ctlen bytes, caller's buffer).  Returns 1, 0 when the
 * entry does not authenticate (pt is then wiped), or -1 on error.
 */
int
vault_entry_open(const uint8_t key[VAULT_KEY_LEN], const struct vault_entry *e,
    uint8_t *pt)
{
	struct vbuf aad = { 0 };
	uint8_t tag[VAULT_TAG_LEN];
	int rv = -1;

	if (vault_entry_aad(e, &aad) == -1)
		goto out;
	memcpy(tag, e->ve_tag, sizeof(tag));
	rv = vault_gcm(0, key, e->ve_nonce, aad.b_p, aad.b_n, NULL, 0, e->ve_ct,
	    e->ve_ctlen, pt, tag);
	if (rv != 1)
		OPENSSL_cleanse(pt, e->ve_ctlen);
 out:
	free(aad.b_p);
	return rv;
}

/* Frees what e owns (not e). */
void
vault_entry_clear(struct vault_entry *e)
{
	size_t i;

	free(e->ve_name);
	free(e->ve_placeholder);
	for (i = 0; i < e->ve_nhosts; i++)
		free(e->ve_hosts[i]);
	free(e->ve_hosts);
	free(e->ve_ct);
	memset(e, 0, sizeof(*e));
}

/* A bounds-checked reader over the file image. */
struct vrd {
	const uint8_t	*r_p;
	size_t		 r_n;
	size_t		 r_off;
};

static int
vrd_take(struct vrd *r, size_t n, const uint8_t **p)
{
	if (n > r->r_n - r->r_off)
		return -1;
	*p = r->r_p + r->r_off;
	r->r_off += n;
	return 0;
}

static int
vrd_u16(struct vrd *r, uint16_t *v)
{
	const uint8_t *p;

	if (vrd_take(r, 2, &p) == -1)
		return -1;
	*v = (uint16_t)(p[0] << 8 | p[1]);
	return 0;
}

static int
vrd_u32(struct vrd *r, uint32_t *v)
{
	const uint8_t *p;

	if (vrd_take(r, 4, &p) == -1)
		return -1;
	*v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return 0;
}

static int
vrd_i64(struct vrd *r, int64_t *v)
{
	const uint8_t *p;
	uint64_t x = 0;
	int i;

	if (vrd_take(r, 8, &p) == -1)
		return -1;
	for (i = 0; i < 8; i++)
		x = x << 8 | p[i];
	*v = (int64_t)x;
	return 0;
}

/* A length-prefixed string, as a new NUL-free C string.  -1 truncated, -2 NUL/ENOMEM. */
static int
vrd_str(struct vrd *r, char **out)
{
	const uint8_t *p;
	uint16_t n;

	if (vrd_u16(r, &n) == -1 || vrd_take(r, n, &p) == -1)
		return -1;
	if (memchr(p, '\0', n) != NULL)
		return -2;
	if ((*out = strndup((const char *)p, n)) == NULL)
		return -2;
	return 0;
}

/* Checks of one parsed entry's metadata.  Returns NULL or a reason. */
static const char *
vault_entry_check(const struct vault_entry *e)
{
	char norm[HOSTNAME_MAX + 1];
	size_t i, j;

	if (!vault_name_is_valid(e->ve_name))
		return "invalid name";
	if (!vault_placeholder_is_valid(e->ve_placeholder))
		return "invalid placeholder";
	if (e->ve_nhosts == 0 || e->ve_nhosts > VAULT_HOSTS_MAX)
		return "bad host count";
	for (i = 0; i < e->ve_nhosts; i++) {
		if (hostname_pattern_normalize(e->ve_hosts[i],
		    strlen(e->ve_hosts[i]), norm) != HOSTNAME_OK ||
		    strcmp(norm, e->ve_hosts[i]) != 0)
			return "host not in normal form";
		for (j = 0; j < i; j++)
			if (strcmp(e->ve_hosts[j], e->ve_hosts[i]) == 0)
				return "duplicate host";
	}
	if (e->ve_created < 0 || e->ve_rotated < e->ve_created)
		return "bad timestamps";
	if (e->ve_ctlen == 0 || e->ve_ctlen > VAULT_VALUE_MAX)
		return "bad value length";
	return NULL;
}

/*
 * Parses a vault.db image into v (which must be empty; v->v_key set).  When the key
 * check fails with v->v_key and altkey is not NULL, altkey is tried and, if it
 * authenticates, copied into v->v_key with *used_alt set.  Returns an enum vault_err
 * with err set; on failure v may hold partial entries (vault_close() frees them).
 */
int
vault_file_parse(struct vault *v, const uint8_t *buf, size_t len,
    const uint8_t *altkey, int *used_alt, char *err, size_t errlen)
{
	struct vrd r = { buf, len, 0 };
	struct vault_entry *e;
	const uint8_t *p, *kc, *tr;
	uint8_t tag[VAULT_TAG_LEN], *pt = NULL;
	uint32_t version, flags, count, ctlen;
	uint16_t nh;
	const char *why;
	size_t i, j;
	int rv, sr;

	if (used_alt != NULL)
		*used_alt = 0;
	if (len < VAULT_MAGIC_LEN)
		goto truncated;
	if (memcmp(buf, VAULT_MAGIC, VAULT_MAGIC_LEN) != 0) {
		snprintf(err, errlen, "vault.db: not a vault file (bad magic)");
		return VAULT_ERR_FORMAT;
	}
	r.r_off = VAULT_MAGIC_LEN;
	if (vrd_u32(&r, &version) == -1)
		goto truncated;
	if (version != VAULT_VERSION) {
		snprintf(err, errlen, "vault.db: unknown version %u (this airlock "
		    "reads version %u)", version, VAULT_VERSION);
		return VAULT_ERR_FORMAT;
	}
	if (vrd_u32(&r, &flags) == -1)
		goto truncated;
	if (flags != 0) {
		snprintf(err, errlen, "vault.db: unknown flags 0x%x", flags);
		return VAULT_ERR_FORMAT;
	}
	if (vrd_take(&r, VAULT_NONCE_LEN + VAULT_TAG_LEN, &kc) == -1 ||
	    vrd_u32(&r, &count) == -1)
		goto truncated;
	if (count > VAULT_SECRETS_MAX) {
		snprintf(err, errlen, "vault.db: %u secrets, at most %d", count,
		    VAULT_SECRETS_MAX);
		return VAULT_ERR_FORMAT;
	}
	/* Never trust count for an allocation larger than the file could hold. */
	if (count > len / 32)
		goto truncated;
	if (count > 0 && (v->v_ents = calloc(count, sizeof(*v->v_ents))) == NULL) {
		snprintf(err, errlen, "vault.db: %s", strerror(errno));
		return VAULT_ERR_SYS;
	}
	for (i = 0; i < count; i++) {
		e = &v->v_ents[i];
		v->v_n = i + 1;
		if ((sr = vrd_str(&r, &e->ve_name)) == -1)
			goto truncated;
		if (sr == -2)
			goto bad_entry;
		if ((sr = vrd_str(&r, &e->ve_placeholder)) == -1)
			goto truncated;
		if (sr == -2)
			goto bad_entry;
		if (vrd_u16(&r, &nh) == -1)
			goto truncated;
		if (nh == 0 || nh > VAULT_HOSTS_MAX) {
			why = "bad host count";
			goto bad_meta;
		}
		if ((e->ve_hosts = calloc(nh, sizeof(char *))) == NULL) {
			snprintf(err, errlen, "vault.db: %s", strerror(errno));
			return VAULT_ERR_SYS;
		}
		for (j = 0; j < nh; j++) {
			e->ve_nhosts = j + 1;
			if ((sr = vrd_str(&r, &e->ve_hosts[j])) == -1)
				goto truncated;
			if (sr == -2)
				goto bad_entry;
		}
		if (vrd_i64(&r, &e->ve_created) == -1 ||
		    vrd_i64(&r, &e->ve_rotated) == -1 ||
		    vrd_take(&r, VAULT_NONCE_LEN, &p) == -1)
			goto truncated;
		memcpy(e->ve_nonce, p, VAULT_NONCE_LEN);
		if (vrd_u32(&r, &ctlen) == -1)
			goto truncated;
		e->ve_ctlen = ctlen;
		if (ctlen == 0 || ctlen > VAULT_VALUE_MAX) {
			why = "bad value length";
			goto bad_meta;
		}
		if (vrd_take(&r, ctlen, &p) == -1)
			goto truncated;
		if ((e->ve_ct = malloc(ctlen)) == NULL) {
			snprintf(err, errlen, "vault.db: %s", strerror(errno));
			return VAULT_ERR_SYS;
		}
		memcpy(e->ve_ct, p, ctlen);
		if (vrd_take(&r, VAULT_TAG_LEN, &p) == -1)
			goto truncated;
		memcpy(e->ve_tag, p, VAULT_TAG_LEN);
		if ((why = vault_entry_check(e)) != NULL)
			goto bad_meta;
		if (i > 0 && strcmp(v->v_ents[i - 1].ve_name, e->ve_name) >= 0) {
			why = "entries not sorted or duplicated";
			goto bad_meta;
		}
		for (j = 0; j < i; j++)
			if (strcmp(v->v_ents[j].ve_placeholder,
			    e->ve_placeholder) == 0) {
				why = "duplicate placeholder";
				goto bad_meta;
			}
	}
	if (vrd_take(&r, VAULT_NONCE_LEN + VAULT_TAG_LEN, &tr) == -1)
		goto truncated;
	if (r.r_off != len) {
		snprintf(err, errlen, "vault.db: %zu trailing bytes after the end",
		    len - r.r_off);
		return VAULT_ERR_FORMAT;
	}

	/* The structure is sound: now the key, each entry, the whole file. */
	memcpy(tag, kc + VAULT_NONCE_LEN, VAULT_TAG_LEN);
	rv = vault_gcm(0, v->v_key, kc, (const uint8_t *)VAULT_AAD_KEYCHECK,
	    sizeof(VAULT_AAD_KEYCHECK), NULL, 0, NULL, 0, NULL, tag);
	if (rv == 0 && altkey != NULL) {
		memcpy(tag, kc + VAULT_NONCE_LEN, VAULT_TAG_LEN);
		rv = vault_gcm(0, altkey, kc,
		    (const uint8_t *)VAULT_AAD_KEYCHECK,
		    sizeof(VAULT_AAD_KEYCHECK), NULL, 0, NULL, 0, NULL, tag);
		if (rv == 1) {
			memcpy(v->v_key, altkey, VAULT_KEY_LEN);
			if (used_alt != NULL)
				*used_alt = 1;
		}
	}
	if (rv == -1)
		goto crypto;
	if (rv == 0) {
		snprintf(err, errlen, "vault.db: wrong vault key (the key check "
		    "does not authenticate with vault.key)");
		return VAULT_ERR_WRONG_KEY;
	}
	for (i = 0; i < v->v_n; i++) {
		e = &v->v_ents[i];
		if ((pt = malloc(e->ve_ctlen)) == NULL) {
			snprintf(err, errlen, "vault.db: %s", strerror(errno));
			return VAULT_ERR_SYS;
		}
		rv = vault_entry_open(v->v_key, e, pt);
		OPENSSL_clear_free(pt, e->ve_ctlen);
		pt = NULL;
		if (rv == -1)
			goto crypto;
		if (rv == 0) {
			snprintf(err, errlen, "vault.db: entry '%s' failed "
			    "authentication (tampered?)", e->ve_name);
			return VAULT_ERR_TAMPERED;
		}
	}
	memcpy(tag, tr + VAULT_NONCE_LEN, VAULT_TAG_LEN);
	rv = vault_gcm(0, v->v_key, tr, (const uint8_t *)VAULT_AAD_TRAILER,
	    sizeof(VAULT_AAD_TRAILER), buf, (size_t)(tr - buf), NULL, 0, NULL,
	    tag);
	if (rv == -1)
		goto crypto;
	if (rv == 0) {
		snprintf(err, errlen, "vault.db: file failed authentication "
		    "(entries removed, added or reordered?)");
		return VAULT_ERR_TAMPERED;
	}
	return VAULT_OK;

 truncated:
	snprintf(err, errlen, "vault.db: truncated (%zu bytes)", len);
	return VAULT_ERR_FORMAT;
 bad_entry:
	snprintf(err, errlen, "vault.db: entry %zu: NUL byte in a string or out "
	    "of memory", i);
	return VAULT_ERR_FORMAT;
 bad_meta:
	snprintf(err, errlen, "vault.db: entry %zu: %s", i, why);
	return VAULT_ERR_FORMAT;
 crypto:
	snprintf(err, errlen, "vault.db: OpenSSL AES-GCM failure");
	return VAULT_ERR_CRYPTO;
}

/*
 * Serialises v with fresh key-check and trailer nonces.  Returns VAULT_OK and *out
 * (free with free(); it holds only ciphertext), or an enum vault_err.
 */
int
vault_file_build(const struct vault *v, uint8_t **out, size_t *outlen, char *err,
    size_t errlen)
{
	struct vbuf b = { 0 };
	uint8_t nonce[VAULT_NONCE_LEN], tag[VAULT_TAG_LEN];
	const struct vault_entry *e;
	size_t i, trailer;

	vbuf_add(&b, VAULT_MAGIC, VAULT_MAGIC_LEN);
	vbuf_u32(&b, VAULT_VERSION);
	vbuf_u32(&b, 0);
	if (RAND_bytes(nonce, sizeof(nonce)) != 1 ||
	    vault_gcm(1, v->v_key, nonce, (const uint8_t *)VAULT_AAD_KEYCHECK,
	    sizeof(VAULT_AAD_KEYCHECK), NULL, 0, NULL, 0, NULL, tag) != 1)
		goto crypto;
	vbuf_add(&b, nonce, sizeof(nonce));
	vbuf_add(&b, tag, sizeof(tag));
	vbuf_u32(&b, (uint32_t)v->v_n);
	for (i = 0; i < v->v_n; i++) {
		e = &v->v_ents[i];
		vault_entry_meta(&b, e);
		vbuf_add(&b, e->ve_nonce, VAULT_NONCE_LEN);
		vbuf_u32(&b, (uint32_t)e->ve_ctlen);
		vbuf_add(&b, e->ve_ct, e->ve_ctlen);
		vbuf_add(&b, e->ve_tag, VAULT_TAG_LEN);
	}
	if (b.b_fail)
		goto nomem;
	trailer = b.b_n;
	if (RAND_bytes(nonce, sizeof(nonce)) != 1 ||
	    vault_gcm(1, v->v_key, nonce, (const uint8_t *)VAULT_AAD_TRAILER,
	    sizeof(VAULT_AAD_TRAILER), b.b_p, trailer, NULL, 0, NULL, tag) != 1)
		goto crypto;
	vbuf_add(&b, nonce, sizeof(nonce));
	vbuf_add(&b, tag, sizeof(tag));
	if (b.b_fail)
		goto nomem;
	*out = b.b_p;
	*outlen = b.b_n;
	return VAULT_OK;
 nomem:
	free(b.b_p);
	snprintf(err, errlen, "vault.db: out of memory");
	return VAULT_ERR_SYS;
 crypto:
	free(b.b_p);
	snprintf(err, errlen, "vault.db: OpenSSL AES-GCM failure");
	return VAULT_ERR_CRYPTO;
}

/* The names and placeholders the format accepts (vault.h). */
int
vault_name_is_valid(const char *name)
{
	size_t i, n = strlen(name);

	if (n == 0 || n > VAULT_NAME_MAX || !isalnum((unsigned char)name[0]))
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (!(isascii(c) && (isalnum(c) || c == '_' || c == '-' ||
		    c == '.')))
			return 0;
	}
	return 1;
}

int
vault_placeholder_is_valid(const char *ph)
{
	size_t i, n = strlen(ph);

	if (n < VAULT_PLACEHOLDER_MIN || n > VAULT_PLACEHOLDER_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if ((unsigned char)ph[i] <= 0x20 || (unsigned char)ph[i] >= 0x7f)
			return 0;
	return 1;
}
