/*
 * proxy/proxy_keys.c: the key material of airlockd (see proxy_keys.h): built as
 * root by the state reader, parsed and held by the unprivileged process.
 *
 * The image (both ends are the same binary; integers are native uint32_t):
 *	"AKM1"
 *	vault status (0 loaded, 1 absent, 2 error), blob error text
 *	nsecrets, per secret: blob name, blob placeholder, nhosts, blob host...,
 *	    blob value
 *	host CA present (0/1) [, blob certificate PEM]
 *	ncas, per sandbox: blob name, blob policy hash, status (0 ok), blob error,
 *	    [blob key PEM, blob certificate PEM when ok]
 * A blob is a uint32_t length and the bytes.  Buffers that held values or keys are
 * wiped before they are freed.
 *
 * A sandbox's CA goes in together with its policy or not at all (issue 11: a refused
 * reload used to leave the sandbox's old policy without a CA).  So each CA entry
 * names the policy it was synced for (the SHA-256 of the file's bytes), and the
 * unprivileged side accepts a policy only with the key image whose entry carries its
 * hash (proxy_keys_for_policy()); a policy it refuses keeps the image it came in
 * with.  The reader makes (or reissues) a CA on disk only for a policy that will be
 * accepted as far as it can tell: one that loads and passes the vault binding check
 * (proxy_keys_check_policy) against the vault in this same image, so a typo or a bad
 * binding never rotates the CA the VM trusts.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "ca.h"
#include "hostname.h"
#include "log.h"
#include "policy.h"
#include "proxy_keys.h"
#include "proxy_scan.h"
#include "vault.h"

#define PK_MAGIC	"AKM2"
#define PK_BLOB_MAX	(VAULT_VALUE_MAX + 1024)
#define PK_CAS_MAX	4096
#define PK_LEAF_CACHE	1024

static pthread_mutex_t proxy_keys_lock = PTHREAD_MUTEX_INITIALIZER;
/* Every image installed and still referenced, newest first (under the lock). */
static struct proxy_keys *proxy_keys_live;
static struct proxy_keys *proxy_keys_cur;
static EVP_PKEY *proxy_leaf_key;
static pthread_once_t proxy_leaf_once = PTHREAD_ONCE_INIT;
static unsigned long long proxy_keys_gen;	/* atomic: the last pk_gen */

/*
 * A growing buffer that wipes what it leaves behind.
 */
struct pk_buf {
	uint8_t	*p;
	size_t	 len;
	size_t	 cap;
	int	 failed;
};

static void
pk_put(struct pk_buf *b, const void *d, size_t n)
{
	uint8_t *np;
	size_t cap;

	if (b->failed)
		return;
	if (b->len + n > b->cap) {
		cap = b->cap != 0 ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		if ((np = malloc(cap)) == NULL) {
			b->failed = 1;
			return;
		}
		if (b->len > 0)
			memcpy(np, b->p, b->len);
		if (b->p != NULL)
			OPENSSL_clear_free(b->p, b->cap);
		b->p = np;
		b->cap = cap;
	}
	if (n > 0)
		memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void
pk_u32(struct pk_buf *b, uint32_t v)
{
	pk_put(b, &v, sizeof(v));
}

static void
pk_blob(struct pk_buf *b, const void *d, size_t n)
{
	pk_u32(b, (uint32_t)n);
	pk_put(b, d, n);
}

static void
pk_str(struct pk_buf *b, const char *s)
{
	pk_blob(b, s, strlen(s));
}

void
proxy_keys_image_free(uint8_t *img, size_t len)
{
	if (img != NULL)
		OPENSSL_clear_free(img, len);
}

/* The names policy p inspects (exact or "*.suffix"), as ca_sandbox_sync wants. */
static size_t
pk_inspect_names(const struct policy *p, const char **v)
{
	size_t i, n = 0;

	for (i = 0; i < p->p_nrules; i++)
		if (!p->p_rules[i].pr_is_cidr &&
		    p->p_rules[i].pr_proto == POLICY_PROTO_TLS &&
		    p->p_rules[i].pr_tls == POLICY_TLS_INSPECT)
			v[n++] = p->p_rules[i].pr_host;
	return n;
}

static void
pk_build_vault(const char *state_dir, struct pk_buf *b)
{
	struct vault *v = NULL;
	struct vault_info vi;
	struct secret s = { NULL, 0 };
	char err[256];
	size_t i, j, n;
	int rv;

	rv = vault_open(state_dir, 0, &v, err, sizeof(err));
	if (rv == VAULT_ERR_ABSENT) {
		pk_u32(b, 1);
		pk_str(b, "no vault");
		pk_u32(b, 0);
		return;
	}
	if (rv != VAULT_OK) {
		pk_u32(b, 2);
		pk_str(b, err);
		pk_u32(b, 0);
		return;
	}
	n = vault_count(v);
	for (i = 0; i < n; i++) {
		if (vault_info_get(v, i, &vi) != VAULT_OK ||
		    vault_secret_get(v, vi.vi_name, &s, err, sizeof(err)) != VAULT_OK)
			break;
		secret_free(&s);
	}
	if (i < n) {
		/* A secret that does not decrypt: the vault as a whole is refused. */
		pk_u32(b, 2);
		pk_str(b, err);
		pk_u32(b, 0);
		vault_close(v);
		return;
	}
	pk_u32(b, 0);
	pk_str(b, "");
	pk_u32(b, (uint32_t)n);
	for (i = 0; i < n; i++) {
		(void)vault_info_get(v, i, &vi);
		(void)vault_secret_get(v, vi.vi_name, &s, err, sizeof(err));
		pk_str(b, vi.vi_name);
		pk_str(b, vi.vi_placeholder);
		pk_u32(b, (uint32_t)vi.vi_nhosts);
		for (j = 0; j < vi.vi_nhosts; j++)
			pk_str(b, vi.vi_hosts[j]);
		pk_blob(b, s.p, s.n);
		secret_free(&s);
	}
	vault_close(v);
}

static void
pk_build_hostca(const char *state_dir, struct pk_buf *b)
{
	struct ca *ca;
	char err[256], *key = NULL, *cert = NULL;
	size_t klen = 0, clen = 0;

	if ((ca = ca_load(state_dir, NULL, NULL, err, sizeof(err))) == NULL ||
	    ca_export_pem(ca, &key, &klen, &cert, &clen) == -1) {
		pk_u32(b, 0);
		ca_free(ca);
		return;
	}
	pk_u32(b, 1);
	pk_blob(b, cert, clen);	/* the certificate only: never the host CA's key */
	OPENSSL_clear_free(key, klen);
	free(cert);
	ca_free(ca);
}

static void
pk_build_ca(const char *state_dir, const struct proxy_keys_src *s,
    const struct proxy_keys *kv, struct pk_buf *b, int *counted)
{
	struct policy *p;
	struct ca *ca = NULL;
	const char **names = NULL;
	char err[256], *key = NULL, *cert = NULL;
	size_t n, klen = 0, clen = 0;
	int reissued = 0;

	*counted = 0;
	if (s->ks_policy == NULL ||
	    (p = policy_load_buf(s->ks_policy, s->ks_len, "policy", NULL)) == NULL)
		return;		/* no policy in force: nothing to inspect */
	if ((names = calloc(p->p_nrules + 1, sizeof(*names))) == NULL) {
		policy_free(p);
		return;
	}
	if ((n = pk_inspect_names(p, names)) == 0)
		goto out;
	/* The unprivileged side refuses it for this: leave its CA as it is. */
	if (proxy_keys_check_policy(kv, p, err, sizeof(err)) == -1)
		goto out;
	*counted = 1;
	pk_str(b, s->ks_sandbox);
	pk_str(b, p->p_hash);
	if (ca_sandbox_sync(state_dir, s->ks_sandbox, names, n, &reissued, err,
	    sizeof(err)) != CA_OK ||
	    (ca = ca_load(state_dir, s->ks_sandbox, NULL, err, sizeof(err))) == NULL) {
		pk_u32(b, 1);
		pk_str(b, err);
		goto out;
	}
	if (ca_export_pem(ca, &key, &klen, &cert, &clen) == -1) {
		pk_u32(b, 1);
		pk_str(b, "cannot export the CA");
		goto out;
	}
	if (reissued)
		log_warnx("sandbox %s: the names its policy inspects changed: made a "
		    "new CA; give the VM `airlock ca cert %s`", s->ks_sandbox,
		    s->ks_sandbox);
	pk_u32(b, 0);
	pk_str(b, "");
	pk_blob(b, key, klen);
	pk_blob(b, cert, clen);
 out:
	if (key != NULL)
		OPENSSL_clear_free(key, klen);
	free(cert);
	ca_free(ca);
	free(names);
	policy_free(p);
}

int
proxy_keys_build(const char *state_dir, const struct proxy_keys_src *src, size_t n,
    uint8_t **out, size_t *outlen)
{
	struct pk_buf b = { NULL, 0, 0, 0 }, cas = { NULL, 0, 0, 0 };
	struct proxy_keys *kv = NULL;
	uint32_t none = 0;
	size_t i, ncas = 0;
	char err[256];
	int counted;

	*out = NULL;
	*outlen = 0;
	pk_put(&b, PK_MAGIC, 4);
	pk_build_vault(state_dir, &b);
	pk_build_hostca(state_dir, &b);
	/* The vault as the unprivileged side will see it, for the binding check. */
	pk_put(&b, &none, sizeof(none));
	if (!b.failed) {
		kv = proxy_keys_parse(b.p, b.len, err, sizeof(err));
		b.len -= sizeof(none);
	}
	for (i = 0; i < n && i < PK_CAS_MAX; i++) {
		pk_build_ca(state_dir, &src[i], kv, &cas, &counted);
		ncas += (size_t)counted;
	}
	proxy_keys_put(kv);
	pk_u32(&b, (uint32_t)ncas);
	pk_put(&b, cas.p, cas.len);
	if (cas.p != NULL)
		OPENSSL_clear_free(cas.p, cas.cap);
	if (b.failed || cas.failed) {
		if (b.p != NULL)
			OPENSSL_clear_free(b.p, b.cap);
		return -1;
	}
	/* Shrink so that the caller frees (and wipes) exactly len bytes. */
	if ((*out = malloc(b.len)) == NULL) {
		OPENSSL_clear_free(b.p, b.cap);
		return -1;
	}
	memcpy(*out, b.p, b.len);
	*outlen = b.len;
	OPENSSL_clear_free(b.p, b.cap);
	return 0;
}

/*
 * Parsing.
 */
struct pk_rd {
	const uint8_t	*p;
	size_t		 left;
	int		 bad;
};

static uint32_t
pk_get_u32(struct pk_rd *r)
{
	uint32_t v = 0;

	if (r->bad || r->left < sizeof(v)) {
		r->bad = 1;
		return 0;
	}
	memcpy(&v, r->p, sizeof(v));
	r->p += sizeof(v);
	r->left -= sizeof(v);
	return v;
}

/* The next blob (borrowed) and its length. */
static const uint8_t *
pk_get_blob(struct pk_rd *r, size_t *len)
{
	const uint8_t *p;
	uint32_t n = pk_get_u32(r);

	*len = 0;
	if (r->bad || n > r->left || n > PK_BLOB_MAX) {
		r->bad = 1;
		return NULL;
	}
	p = r->p;
	r->p += n;
	r->left -= n;
	*len = n;
	return p;
}

/* The next blob as a new NUL-terminated string (no NUL inside), or NULL. */
static char *
pk_get_str(struct pk_rd *r)
{
	const uint8_t *p;
	size_t n;
	char *s;

	if ((p = pk_get_blob(r, &n)) == NULL)
		return NULL;
	if (memchr(p, '\0', n) != NULL || (s = malloc(n + 1)) == NULL) {
		r->bad = 1;
		return NULL;
	}
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

static void
pk_secret_clear(struct proxy_secret *s)
{
	size_t i;

	free(s->ps_name);
	free(s->ps_placeholder);
	for (i = 0; i < s->ps_nhosts; i++)
		free(s->ps_hosts[i]);
	free(s->ps_hosts);
	if (s->ps_value != NULL)
		OPENSSL_clear_free(s->ps_value, s->ps_vlen);
	memset(s, 0, sizeof(*s));
}

static void
pk_free(struct proxy_keys *k)
{
	size_t i;

	if (k == NULL)
		return;
	for (i = 0; i < k->pk_nsecrets; i++)
		pk_secret_clear(&k->pk_secrets[i]);
	free(k->pk_secrets);
	for (i = 0; i < k->pk_nretired; i++)
		pk_secret_clear(&k->pk_retired[i]);
	free(k->pk_retired);
	for (i = 0; i < k->pk_ncas; i++) {
		free(k->pk_cas[i].pc_sandbox);
		ca_free(k->pk_cas[i].pc_ca);
		ca_leaf_cache_free(k->pk_cas[i].pc_cache);
	}
	free(k->pk_cas);
	for (i = 0; i < k->pk_nanchors; i++)
		X509_free(k->pk_anchors[i]);
	free(k->pk_anchors);
	scan_set_free(k->pk_ph_set);
	scan_set_free(k->pk_val_set);
	free(k);
}

static int
pk_anchor_add(struct proxy_keys *k, X509 *x)
{
	X509 **v;

	if ((v = reallocarray(k->pk_anchors, k->pk_nanchors + 1,
	    sizeof(*v))) == NULL)
		return -1;
	k->pk_anchors = v;
	if (X509_up_ref(x) != 1)
		return -1;
	v[k->pk_nanchors++] = x;
	return 0;
}

static int
pk_parse_secret(struct pk_rd *r, struct proxy_secret *s)
{
	const uint8_t *p;
	size_t n, i;
	uint32_t nh;

	if ((s->ps_name = pk_get_str(r)) == NULL ||
	    (s->ps_placeholder = pk_get_str(r)) == NULL)
		return -1;
	nh = pk_get_u32(r);
	if (r->bad || nh > VAULT_HOSTS_MAX ||
	    (s->ps_hosts = calloc(nh + 1, sizeof(char *))) == NULL)
		return -1;
	for (i = 0; i < nh; i++) {
		if ((s->ps_hosts[i] = pk_get_str(r)) == NULL)
			return -1;
		s->ps_nhosts++;
	}
	if ((p = pk_get_blob(r, &n)) == NULL || n == 0 ||
	    strlen(s->ps_placeholder) == 0)
		return -1;
	if ((s->ps_value = malloc(n)) == NULL)
		return -1;
	memcpy(s->ps_value, p, n);
	s->ps_vlen = n;
	return 0;
}

static int
pk_parse_ca(struct pk_rd *r, struct proxy_sbca *c)
{
	const uint8_t *key, *cert;
	size_t klen, clen;
	char *e;

	if ((c->pc_sandbox = pk_get_str(r)) == NULL ||
	    (e = pk_get_str(r)) == NULL)
		return -1;
	snprintf(c->pc_policy_hash, sizeof(c->pc_policy_hash), "%s", e);
	free(e);
	if (pk_get_u32(r) != 0) {
		if ((e = pk_get_str(r)) == NULL)
			return -1;
		snprintf(c->pc_error, sizeof(c->pc_error), "%s", e);
		free(e);
		return 0;
	}
	if ((e = pk_get_str(r)) == NULL)
		return -1;
	free(e);
	if ((key = pk_get_blob(r, &klen)) == NULL ||
	    (cert = pk_get_blob(r, &clen)) == NULL)
		return -1;
	c->pc_ca = ca_load_pem((const char *)key, klen, (const char *)cert, clen,
	    1, c->pc_error, sizeof(c->pc_error));
	if (c->pc_ca != NULL &&
	    (c->pc_cache = ca_leaf_cache_new(PK_LEAF_CACHE)) == NULL) {
		ca_free(c->pc_ca);
		c->pc_ca = NULL;
		snprintf(c->pc_error, sizeof(c->pc_error), "out of memory");
	}
	return 0;
}

/*
 * The scanners: every placeholder (to find and substitute), every value long enough
 * to be matched (to redact).  A value under SCAN_NEEDLE_MIN bytes cannot be told
 * apart from ordinary text: it is left out, and proxy_keys_check_policy() refuses
 * a policy that injects it.
 */
static int
pk_val_add(struct proxy_keys *k, struct scan_set *set, int id,
    const struct proxy_secret *s)
{
	if (s->ps_vlen < SCAN_NEEDLE_MIN)
		return 0;
	if (scan_set_add(set, id, s->ps_value, s->ps_vlen,
	    (const uint8_t *)s->ps_placeholder, strlen(s->ps_placeholder)) == -1)
		return -1;
	k->pk_nvals++;
	return 0;
}

/* The redaction set: k's values, then the retired ones (ids after k's secrets). */
static int
pk_val_build(struct proxy_keys *k)
{
	struct scan_set *set;
	size_t i;

	k->pk_nvals = 0;
	if ((set = scan_set_new()) == NULL)
		return -1;
	for (i = 0; i < k->pk_nsecrets; i++)
		if (pk_val_add(k, set, (int)i, &k->pk_secrets[i]) == -1)
			goto fail;
	for (i = 0; i < k->pk_nretired; i++)
		if (pk_val_add(k, set, (int)(k->pk_nsecrets + i),
		    &k->pk_retired[i]) == -1)
			goto fail;
	if (scan_set_build(set) == -1)
		goto fail;
	scan_set_free(k->pk_val_set);
	k->pk_val_set = set;
	return 0;
 fail:
	scan_set_free(set);
	return -1;
}

static int
pk_sets_build(struct proxy_keys *k)
{
	const struct proxy_secret *s;
	size_t i;

	if ((k->pk_ph_set = scan_set_new()) == NULL)
		return -1;
	for (i = 0; i < k->pk_nsecrets; i++) {
		s = &k->pk_secrets[i];
		if (scan_set_add(k->pk_ph_set, (int)i,
		    (const uint8_t *)s->ps_placeholder, strlen(s->ps_placeholder),
		    s->ps_value, s->ps_vlen) == -1)
			return -1;
	}
	if (scan_set_build(k->pk_ph_set) == -1)
		return -1;
	return pk_val_build(k);
}

struct proxy_keys *
proxy_keys_parse(const uint8_t *img, size_t len, char *err, size_t errlen)
{
	struct pk_rd r = { img, len, 0 };
	struct proxy_keys *k;
	const uint8_t *cert;
	size_t n, i;
	uint32_t st, cnt;
	char *e = NULL;
	X509 *x;
	BIO *bio;

	if ((k = calloc(1, sizeof(*k))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	k->pk_refs = 1;
	k->pk_gen = __atomic_add_fetch(&proxy_keys_gen, 1, __ATOMIC_RELAXED);
	if (len < 4 || memcmp(img, PK_MAGIC, 4) != 0)
		goto bad;
	r.p += 4;
	r.left -= 4;
	st = pk_get_u32(&r);
	if ((e = pk_get_str(&r)) == NULL)
		goto bad;
	k->pk_vault = st == 0 ? 1 : st == 1 ? 0 : -1;
	snprintf(k->pk_vault_error, sizeof(k->pk_vault_error), "%s", e);
	free(e);
	cnt = pk_get_u32(&r);
	if (r.bad || cnt > VAULT_SECRETS_MAX || (cnt > 0 && st != 0))
		goto bad;
	if (cnt > 0 && (k->pk_secrets = calloc(cnt, sizeof(*k->pk_secrets))) ==
	    NULL)
		goto nomem;
	for (i = 0; i < cnt; i++) {
		k->pk_nsecrets++;
		if (pk_parse_secret(&r, &k->pk_secrets[i]) == -1)
			goto bad;
	}
	if (pk_get_u32(&r) == 1) {
		if ((cert = pk_get_blob(&r, &n)) == NULL)
			goto bad;
		if ((bio = BIO_new_mem_buf(cert, (int)n)) == NULL)
			goto nomem;
		x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
		BIO_free(bio);
		if (x == NULL)
			goto bad;
		if (pk_anchor_add(k, x) == -1) {
			X509_free(x);
			goto nomem;
		}
		X509_free(x);
	}
	cnt = pk_get_u32(&r);
	if (r.bad || cnt > PK_CAS_MAX)
		goto bad;
	if (cnt > 0 && (k->pk_cas = calloc(cnt, sizeof(*k->pk_cas))) == NULL)
		goto nomem;
	for (i = 0; i < cnt; i++) {
		k->pk_ncas++;
		if (pk_parse_ca(&r, &k->pk_cas[i]) == -1)
			goto bad;
		if (k->pk_cas[i].pc_ca != NULL &&
		    pk_anchor_add(k, ca_cert(k->pk_cas[i].pc_ca)) == -1)
			goto nomem;
	}
	if (r.bad || r.left != 0)
		goto bad;
	if (pk_sets_build(k) == -1)
		goto nomem;
	return k;
 nomem:
	snprintf(err, errlen, "out of memory");
	pk_free(k);
	return NULL;
 bad:
	snprintf(err, errlen, "key material: malformed image");
	pk_free(k);
	return NULL;
}

void
proxy_keys_put(struct proxy_keys *k)
{
	struct proxy_keys **pp;

	if (k == NULL)
		return;
	if (__atomic_sub_fetch(&k->pk_refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	/* Unlinked under the lock: proxy_keys_set() may be reading it. */
	pthread_mutex_lock(&proxy_keys_lock);
	for (pp = &proxy_keys_live; *pp != NULL; pp = &(*pp)->pk_live)
		if (*pp == k) {
			*pp = k->pk_live;
			break;
		}
	pthread_mutex_unlock(&proxy_keys_lock);
	pk_free(k);
}

/* Does k hold a secret with this value (under any name)? */
static int
pk_has_value(const struct proxy_secret *v, size_t n, const struct proxy_secret *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].ps_vlen == s->ps_vlen &&
		    CRYPTO_memcmp(v[i].ps_value, s->ps_value, s->ps_vlen) == 0)
			return 1;
	return 0;
}

static int
pk_secret_copy(struct proxy_secret *d, const struct proxy_secret *s)
{
	memset(d, 0, sizeof(*d));
	if ((d->ps_name = strdup(s->ps_name)) == NULL ||
	    (d->ps_placeholder = strdup(s->ps_placeholder)) == NULL ||
	    (d->ps_hosts = calloc(1, sizeof(char *))) == NULL ||
	    (d->ps_value = malloc(s->ps_vlen)) == NULL) {
		pk_secret_clear(d);
		return -1;
	}
	memcpy(d->ps_value, s->ps_value, s->ps_vlen);
	d->ps_vlen = s->ps_vlen;
	return 0;
}

/*
 * k is about to replace the current image: the values of the current image and of
 * every older one still held by a connection, which k does not have itself (a
 * secret removed or rotated), join k's redaction set.  An origin that was sent a
 * value before the reload can still echo it, on any connection, while one that
 * may have sent it lives.  The current image counts whether or not a connection
 * holds it (one may take it until the swap); an older one only while it is
 * referenced.  They are never injected: only k's own secrets are.
 * Caller does not hold the lock; 0 or -1 (out of memory, k unchanged but for
 * what it had).
 */
static int
pk_retire(struct proxy_keys *k)
{
	struct proxy_keys *o;
	struct proxy_secret *v;
	size_t i;
	int rc = 0;

	pthread_mutex_lock(&proxy_keys_lock);
	for (o = proxy_keys_live; o != NULL && rc == 0; o = o->pk_live) {
		if (o == k)
			continue;
		for (i = 0; i < o->pk_nsecrets && rc == 0; i++) {
			if (pk_has_value(k->pk_secrets, k->pk_nsecrets,
			    &o->pk_secrets[i]) || pk_has_value(k->pk_retired,
			    k->pk_nretired, &o->pk_secrets[i]))
				continue;
			if ((v = reallocarray(k->pk_retired, k->pk_nretired + 1,
			    sizeof(*v))) == NULL) {
				rc = -1;
				break;
			}
			k->pk_retired = v;
			if (pk_secret_copy(&v[k->pk_nretired],
			    &o->pk_secrets[i]) == -1) {
				rc = -1;
				break;
			}
			k->pk_nretired++;
		}
	}
	pthread_mutex_unlock(&proxy_keys_lock);
	if (rc == 0 && k->pk_nretired > 0)
		rc = pk_val_build(k);
	return rc;
}

int
proxy_keys_set(struct proxy_keys *k)
{
	struct proxy_keys *old;

	pthread_mutex_lock(&proxy_keys_lock);
	if (k != NULL && k == proxy_keys_cur) {
		/* Installed already (a reload that kept it): drop the caller's ref. */
		pthread_mutex_unlock(&proxy_keys_lock);
		proxy_keys_put(k);
		return 0;
	}
	pthread_mutex_unlock(&proxy_keys_lock);
	if (k != NULL && pk_retire(k) == -1)
		return -1;
	pthread_mutex_lock(&proxy_keys_lock);
	old = proxy_keys_cur;
	proxy_keys_cur = k;
	if (k != NULL) {
		k->pk_live = proxy_keys_live;
		proxy_keys_live = k;
	}
	pthread_mutex_unlock(&proxy_keys_lock);
	proxy_keys_put(old);
	return 0;
}

const char *
proxy_keys_secret_name(const struct proxy_keys *k, int id)
{
	if (k == NULL || id < 0)
		return NULL;
	if ((size_t)id < k->pk_nsecrets)
		return k->pk_secrets[id].ps_name;
	if ((size_t)id - k->pk_nsecrets < k->pk_nretired)
		return k->pk_retired[(size_t)id - k->pk_nsecrets].ps_name;
	return NULL;
}

struct proxy_keys *
proxy_keys_get(void)
{
	struct proxy_keys *k;

	pthread_mutex_lock(&proxy_keys_lock);
	if ((k = proxy_keys_cur) != NULL)
		__atomic_add_fetch(&k->pk_refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&proxy_keys_lock);
	return k;
}

const struct proxy_secret *
proxy_keys_secret(const struct proxy_keys *k, const char *name)
{
	size_t i;

	if (k == NULL)
		return NULL;
	for (i = 0; i < k->pk_nsecrets; i++)
		if (strcmp(k->pk_secrets[i].ps_name, name) == 0)
			return &k->pk_secrets[i];
	return NULL;
}

int
proxy_secret_allows_host(const struct proxy_secret *s, const char *host)
{
	size_t i;

	for (i = 0; i < s->ps_nhosts; i++)
		if (hostname_match(s->ps_hosts[i], host))
			return 1;
	return 0;
}

struct proxy_sbca *
proxy_keys_ca(const struct proxy_keys *k, const char *sandbox)
{
	size_t i;

	if (k == NULL)
		return NULL;
	for (i = 0; i < k->pk_ncas; i++)
		if (strcmp(k->pk_cas[i].pc_sandbox, sandbox) == 0)
			return &k->pk_cas[i];
	return NULL;
}

/* Does vault pattern vp cover every name rule host rh (exact or "*.s") matches? */
static int
pk_covers(const char *vp, const char *rh)
{
	if (strncmp(rh, "*.", 2) != 0)
		return hostname_match(vp, rh);
	if (strncmp(vp, "*.", 2) != 0)
		return 0;	/* an exact binding never covers a wildcard rule */
	return strcmp(vp + 2, rh + 2) == 0 || hostname_match(vp, rh + 2);
}

int
proxy_keys_check_policy(const struct proxy_keys *k, const struct policy *p,
    char *err, size_t errlen)
{
	const struct policy_rule *r;
	const struct proxy_secret *s;
	size_t i, j, h;

	for (i = 0; i < p->p_nrules; i++) {
		r = &p->p_rules[i];
		for (j = 0; j < r->pr_ninject; j++) {
			const char *name = r->pr_inject[j].pi_secret;

			if (k == NULL || k->pk_vault != 1) {
				snprintf(err, errlen, "rule %s injects secret '%s' "
				    "but there is no usable vault (%s)", r->pr_id,
				    name, k != NULL ? k->pk_vault_error :
				    "not loaded");
				return -1;
			}
			if ((s = proxy_keys_secret(k, name)) == NULL) {
				snprintf(err, errlen, "rule %s injects secret '%s', "
				    "which is not in the vault", r->pr_id, name);
				return -1;
			}
			if (s->ps_vlen < SCAN_NEEDLE_MIN) {
				snprintf(err, errlen, "rule %s injects secret '%s', "
				    "whose value is too short (under %d bytes) to be "
				    "redacted from responses", r->pr_id, name,
				    SCAN_NEEDLE_MIN);
				return -1;
			}
			for (h = 0; h < s->ps_nhosts; h++)
				if (pk_covers(s->ps_hosts[h], r->pr_host))
					break;
			if (r->pr_is_cidr || h == s->ps_nhosts) {
				snprintf(err, errlen, "rule %s injects secret '%s' "
				    "to %s, a host the vault does not bind it to",
				    r->pr_id, name, r->pr_is_cidr ? "an address" :
				    r->pr_host);
				return -1;
			}
		}
	}
	return 0;
}

int
proxy_keys_for_policy(const struct proxy_keys *k, const char *sandbox,
    const struct policy *p, char *err, size_t errlen)
{
	const struct proxy_sbca *c;
	size_t i;

	for (i = 0; i < p->p_nrules; i++)
		if (!p->p_rules[i].pr_is_cidr &&
		    p->p_rules[i].pr_proto == POLICY_PROTO_TLS &&
		    p->p_rules[i].pr_tls == POLICY_TLS_INSPECT)
			break;
	if (i == p->p_nrules)
		return 0;	/* inspects nothing: needs no CA */
	if ((c = proxy_keys_ca(k, sandbox)) == NULL ||
	    strcmp(c->pc_policy_hash, p->p_hash) != 0) {
		snprintf(err, errlen, "no key material for this version of the "
		    "policy (the key material did not reload, or the file changed "
		    "during the reload)");
		return -1;
	}
	if (c->pc_ca == NULL) {
		snprintf(err, errlen, "no interception CA: %s", c->pc_error);
		return -1;
	}
	return 0;
}

static int
pk_is_anchor(const struct proxy_keys *k, X509 *x)
{
	EVP_PKEY *a, *b;
	size_t i;

	if (k == NULL || (a = X509_get0_pubkey(x)) == NULL)
		return 0;
	for (i = 0; i < k->pk_nanchors; i++) {
		if (X509_cmp(k->pk_anchors[i], x) == 0)
			return 1;
		/* The same key under another certificate is the same CA. */
		if ((b = X509_get0_pubkey(k->pk_anchors[i])) != NULL &&
		    EVP_PKEY_eq(a, b) == 1)
			return 1;
	}
	return 0;
}

/*
 * k's anchors, and the current image's: a connection may hold an older image (its
 * sandbox's policy was kept on a reload) that does not know a CA made since.
 */
int
proxy_keys_is_anchor(const struct proxy_keys *k, X509 *x)
{
	struct proxy_keys *cur;
	int rv;

	if (pk_is_anchor(k, x))
		return 1;
	if ((cur = proxy_keys_get()) == NULL)
		return 0;
	rv = cur != k && pk_is_anchor(cur, x);
	proxy_keys_put(cur);
	return rv;
}

static void
pk_leaf_key_init(void)
{
	proxy_leaf_key = ca_leaf_key_new();
}

EVP_PKEY *
proxy_keys_leaf_key(void)
{
	pthread_once(&proxy_leaf_once, pk_leaf_key_init);
	return proxy_leaf_key;
}
