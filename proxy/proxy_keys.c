/*
 * proxy/proxy_keys.c: the key material of airlockd (see proxy_keys.h): collected as
 * root by the state reader, parsed and held by the unprivileged process.
 *
 * The image (both ends are the same binary; integers are native uint32_t):
 *	"AKM3"
 *	vault status (0 loaded, 1 absent, 2 error), blob error text
 *	nsecrets, per secret: blob name, blob placeholder, nhosts, blob host...,
 *	    blob value (empty: withheld, see below)
 *	host CA present (0/1) [, blob certificate DER]
 *	ncas, per sandbox: blob name, blob policy hash, status (0 ok), blob error,
 *	    [blob certificate DER when ok]
 * A blob is a uint32_t length and the bytes.  Buffers that held values are wiped
 * before they are freed.  No CA private key is in it (AKM2 carried them): the
 * reader gives those to the keys process alone (proxy_keyd.c), before it writes the
 * image, and an entry is "ok" only once the keys process took its key.
 *
 * A sandbox's CA goes in together with its policy or not at all (issue 11: a refused
 * reload used to leave the sandbox's old policy without a CA).  So each CA entry
 * names the policy it was synced for (its hash: of the file's bytes, or of its
 * files' with bases; the reader loads the same bundle the worker gets), and the
 * unprivileged side accepts a policy only with the key image whose entry carries its
 * hash (proxy_keys_for_policy()); a policy it refuses keeps the image it came in
 * with.  The reader makes (or reissues) a CA on disk only for a policy that will be
 * accepted as far as it can tell: one that loads and passes the vault binding check
 * (proxy_keys_check_policy) against the vault in this same image, so a typo or a bad
 * binding never rotates the CA the VM trusts.  The keys process follows the same
 * rule: the reader has it keep a sandbox's entry for the policy kept
 * (proxy_keyd_client.c), so the kept policy still gets leaves.
 *
 * Values are sent only for the secrets a recorded policy binds: one that a rule of
 * a policy that loads (and passes the binding check) injects, or the credential of
 * the upstream proxy such a policy goes through.  Every other secret is in the
 * image with its name, placeholder and hosts (a placeholder is no secret, and the
 * VM sending one is still exfiltration) and an empty value: withheld.  A withheld
 * value is never injected (proxy_secret_allows_host() says no) nor redacted (it was
 * never sent anywhere by this process).  While a recorded policy does not load or
 * fails the check, the policy in force for that sandbox is its previous one, whose
 * secrets the reader cannot know: then every value is sent, as before.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "ca.h"
#include "hostname.h"
#include "log.h"
#include "policy.h"
#include "proxy_globals.h"
#include "proxy_keyd.h"
#include "proxy_keymsg.h"
#include "proxy_keys.h"
#include "proxy_scan.h"
#include "vault.h"

#define PK_MAGIC	"AKM3"
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
 * The image is built in proxy_keymsg.c's growing buffer, which wipes what it
 * leaves behind (struct keymsg_buf, keymsg_buf_put()).
 */
static void
pk_u32(struct keymsg_buf *b, uint32_t v)
{
	keymsg_buf_put(b, &v, sizeof(v));
}

static void
pk_blob(struct keymsg_buf *b, const void *d, size_t n)
{
	pk_u32(b, (uint32_t)n);
	keymsg_buf_put(b, d, n);
}

static void
pk_str(struct keymsg_buf *b, const char *s)
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

/* Is name one of keep[0..nkeep-1]? */
static int
pk_kept(const char *name, char *const *keep, size_t nkeep)
{
	size_t i;

	for (i = 0; i < nkeep; i++)
		if (strcmp(keep[i], name) == 0)
			return 1;
	return 0;
}

static void
pk_build_vault(const char *state_dir, struct keymsg_buf *b)
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
pk_build_hostca(const char *state_dir, struct keymsg_buf *b)
{
	struct ca *ca;
	uint8_t *cert = NULL;
	size_t clen = 0;
	char err[256];

	/* The certificate only: the host CA's key never leaves its file here. */
	if ((ca = ca_load(state_dir, NULL, NULL, err, sizeof(err))) == NULL ||
	    ca_export_der(ca, NULL, NULL, &cert, &clen) == -1) {
		pk_u32(b, 0);
		ca_free(ca);
		return;
	}
	pk_u32(b, 1);
	pk_blob(b, cert, clen);
	OPENSSL_free(cert);
	ca_free(ca);
}

static void
pk_kb_ca_clear(struct proxy_kb_ca *c)
{
	size_t i;

	free(c->kc_sandbox);
	OPENSSL_free(c->kc_cert);
	if (c->kc_key != NULL)
		OPENSSL_clear_free(c->kc_key, c->kc_keylen);
	for (i = 0; i < c->kc_nnames; i++)
		free(c->kc_names[i]);
	free(c->kc_names);
	memset(c, 0, sizeof(*c));
}

/*
 * The secrets whose values the image carries: those the recorded policies bind,
 * or all of them (pk_all) once one record's policy is refused.
 */
struct pk_keep {
	char		**pk_names;
	size_t		  pk_n;
	int		  pk_all;
	int		  pk_failed;	/* out of memory: all too */
};

static void
pk_keep_add(struct pk_keep *kp, const char *name)
{
	char **v;

	if (kp->pk_failed || pk_kept(name, kp->pk_names, kp->pk_n))
		return;
	if ((v = reallocarray(kp->pk_names, kp->pk_n + 1, sizeof(*v))) == NULL) {
		kp->pk_failed = 1;
		return;
	}
	kp->pk_names = v;
	if ((v[kp->pk_n] = strdup(name)) == NULL) {
		kp->pk_failed = 1;
		return;
	}
	kp->pk_n++;
}

static void
pk_keep_free(struct pk_keep *kp)
{
	size_t i;

	for (i = 0; i < kp->pk_n; i++)
		free(kp->pk_names[i]);
	free(kp->pk_names);
	memset(kp, 0, sizeof(*kp));
}

/* What policy p binds (it loads and passes the check): into kp. */
static void
pk_keep_policy(struct pk_keep *kp, const struct policy *p)
{
	const struct upstream_proxy *up = proxy_upstream_route(p);
	size_t i, j;

	for (i = 0; i < p->p_nrules; i++)
		for (j = 0; j < p->p_rules[i].pr_ninject; j++)
			pk_keep_add(kp, p->p_rules[i].pr_inject[j].pi_secret);
	if (up != NULL && up->up_auth[0] != '\0')
		pk_keep_add(kp, up->up_auth);
}

/*
 * The image's head from kv, the vault and host CA as read once for the binding
 * check: every secret, the value of each in kp (of all, when kp says all).
 */
static void
pk_build_head(struct keymsg_buf *b, const struct proxy_keys *kv,
    const struct pk_keep *kp)
{
	const struct proxy_secret *sc;
	int all = kp->pk_all || kp->pk_failed, dl;
	unsigned char *der = NULL;
	size_t i, j;

	keymsg_buf_put(b, PK_MAGIC, 4);
	pk_u32(b, kv->pk_vault == 1 ? 0 : kv->pk_vault == 0 ? 1 : 2);
	pk_str(b, kv->pk_vault_error);
	pk_u32(b, (uint32_t)kv->pk_nsecrets);
	for (i = 0; i < kv->pk_nsecrets; i++) {
		sc = &kv->pk_secrets[i];
		pk_str(b, sc->ps_name);
		pk_str(b, sc->ps_placeholder);
		pk_u32(b, (uint32_t)sc->ps_nhosts);
		for (j = 0; j < sc->ps_nhosts; j++)
			pk_str(b, sc->ps_hosts[j]);
		if (all || pk_kept(sc->ps_name, kp->pk_names, kp->pk_n))
			pk_blob(b, sc->ps_value, sc->ps_vlen);
		else
			pk_blob(b, NULL, 0);	/* withheld */
	}
	/* kv's one anchor is the host CA (it was parsed without sandbox CAs). */
	if (kv->pk_nanchors == 0) {
		pk_u32(b, 0);
		return;
	}
	if ((dl = i2d_X509(kv->pk_anchors[0], &der)) <= 0) {
		b->kb_failed = 1;
		return;
	}
	pk_u32(b, 1);
	pk_blob(b, der, (size_t)dl);
	OPENSSL_free(der);
}

/*
 * One record: what becomes of its policy (enum proxy_kb_state), and for a policy
 * that inspects, its CA synced to the names (as root: this may write a new CA);
 * the secrets it binds into kp (all of them, for a policy refused).  -1 only when
 * out of memory.
 */
static int
pk_build_ca(const char *state_dir, const struct proxy_keys_src *s,
    const struct proxy_keys *kv, struct proxy_kb_ca *c, struct pk_keep *kp)
{
	struct policy *p = NULL;
	struct ca *ca = NULL;
	const char **names = NULL;
	char err[256];
	size_t n, i;
	int reissued = 0, rv = -1;

	memset(c, 0, sizeof(*c));
	c->kc_state = PK_REFUSED;
	if ((c->kc_sandbox = strdup(s->ks_sandbox)) == NULL)
		return -1;
	/*
	 * Refused: the unprivileged side keeps the previous one, whose secrets are
	 * not known here, so every value goes into the image.
	 */
	if (s->ks_bundle == NULL ||
	    (p = policy_load_bundle(s->ks_bundle, NULL)) == NULL) {
		kp->pk_all = 1;
		return 0;
	}
	snprintf(c->kc_hash, sizeof(c->kc_hash), "%s", p->p_hash);
	/* The unprivileged side refuses it for this: leave its CA as it is. */
	if (proxy_keys_check_policy(kv, p, err, sizeof(err)) == -1) {
		kp->pk_all = 1;
		rv = 0;
		goto out;
	}
	pk_keep_policy(kp, p);
	if ((names = calloc(p->p_nrules + 1, sizeof(*names))) == NULL)
		goto out;
	if ((n = pk_inspect_names(p, names)) == 0) {
		c->kc_state = PK_NONE;
		rv = 0;
		goto out;
	}
	c->kc_state = PK_CAFAIL;
	if (ca_sandbox_sync(state_dir, s->ks_sandbox, names, n, &reissued, err,
	    sizeof(err)) != CA_OK ||
	    (ca = ca_load(state_dir, s->ks_sandbox, NULL, err, sizeof(err))) == NULL) {
		snprintf(c->kc_error, sizeof(c->kc_error), "%s", err);
		rv = 0;
		goto out;
	}
	if (ca_export_der(ca, &c->kc_key, &c->kc_keylen, &c->kc_cert,
	    &c->kc_certlen) == -1) {
		snprintf(c->kc_error, sizeof(c->kc_error), "cannot export the CA");
		rv = 0;
		goto out;
	}
	if ((c->kc_names = calloc(n, sizeof(*c->kc_names))) == NULL)
		goto out;
	for (i = 0; i < n; i++) {
		if ((c->kc_names[i] = strdup(names[i])) == NULL)
			goto out;
		c->kc_nnames++;
	}
	if (reissued)
		log_warnx("sandbox %s: the names its policy inspects changed: made a "
		    "new CA; give the VM `airlock ca cert %s`", s->ks_sandbox,
		    s->ks_sandbox);
	c->kc_state = PK_FRESH;
	rv = 0;
 out:
	ca_free(ca);
	free(names);
	policy_free(p);
	return rv;
}

struct proxy_keys_build {
	struct keymsg_buf	 kb_head;	/* the image up to its CA entries */
	struct proxy_kb_ca *kb_cas;	/* one per record */
	size_t		 kb_ncas;
};

void
proxy_keys_build_free(struct proxy_keys_build *kb)
{
	size_t i;

	if (kb == NULL)
		return;
	for (i = 0; i < kb->kb_ncas; i++)
		pk_kb_ca_clear(&kb->kb_cas[i]);
	free(kb->kb_cas);
	keymsg_buf_free(&kb->kb_head);
	free(kb);
}

struct proxy_keys_build *
proxy_keys_collect(const char *state_dir, const struct proxy_keys_src *src,
    size_t n)
{
	struct proxy_keys_build *kb;
	struct proxy_keys *kv = NULL;
	struct keymsg_buf full = { 0 };
	struct pk_keep keep = { 0 };
	uint32_t none = 0;
	char err[256];
	size_t i;

	if ((kb = calloc(1, sizeof(*kb))) == NULL)
		return NULL;
	if (n > PK_CAS_MAX)
		n = PK_CAS_MAX;
	if (n > 0 && (kb->kb_cas = calloc(n, sizeof(*kb->kb_cas))) == NULL)
		goto fail;
	/*
	 * The vault and host CA, read once: as the unprivileged side would see them
	 * whole, for the binding check; the image's head is written from that.
	 */
	keymsg_buf_put(&full, PK_MAGIC, 4);
	pk_build_vault(state_dir, &full);
	pk_build_hostca(state_dir, &full);
	keymsg_buf_put(&full, &none, sizeof(none));
	if (!full.kb_failed)
		kv = proxy_keys_parse(full.kb_p, full.kb_len, err, sizeof(err));
	keymsg_buf_free(&full);
	if (kv == NULL)
		goto fail;	/* out of memory */
	for (i = 0; i < n; i++) {
		kb->kb_ncas++;
		if (pk_build_ca(state_dir, &src[i], kv, &kb->kb_cas[i], &keep) == -1)
			goto fail;
	}
	/* The values of the secrets the records bind (all: pk_build_head()). */
	pk_build_head(&kb->kb_head, kv, &keep);
	proxy_keys_put(kv);
	kv = NULL;
	pk_keep_free(&keep);
	if (kb->kb_head.kb_failed)
		goto fail;
	return kb;
 fail:
	pk_keep_free(&keep);
	proxy_keys_put(kv);
	proxy_keys_build_free(kb);
	return NULL;
}

size_t
proxy_keys_build_count(const struct proxy_keys_build *kb)
{
	return kb->kb_ncas;
}

const struct proxy_kb_ca *
proxy_keys_build_ca(const struct proxy_keys_build *kb, size_t i)
{
	return i < kb->kb_ncas ? &kb->kb_cas[i] : NULL;
}

int
proxy_keys_image(const struct proxy_keys_build *kb, const char *keyd_err,
    uint8_t **out, size_t *outlen)
{
	struct keymsg_buf b = { 0 };
	const struct proxy_kb_ca *c;
	char err[256];
	uint32_t ncas = 0;
	size_t i;

	*out = NULL;
	*outlen = 0;
	for (i = 0; i < kb->kb_ncas; i++)
		if (kb->kb_cas[i].kc_state == PK_FRESH ||
		    kb->kb_cas[i].kc_state == PK_CAFAIL)
			ncas++;
	keymsg_buf_put(&b, kb->kb_head.kb_p, kb->kb_head.kb_len);
	pk_u32(&b, ncas);
	for (i = 0; i < kb->kb_ncas; i++) {
		c = &kb->kb_cas[i];
		if (c->kc_state != PK_FRESH && c->kc_state != PK_CAFAIL)
			continue;
		pk_str(&b, c->kc_sandbox);
		pk_str(&b, c->kc_hash);
		if (c->kc_state == PK_CAFAIL || keyd_err != NULL) {
			/* Without the keys process nothing can be signed. */
			if (c->kc_state == PK_FRESH)
				snprintf(err, sizeof(err), "keys process: %s",
				    keyd_err);
			pk_u32(&b, 1);
			pk_str(&b, c->kc_state == PK_FRESH ? err : c->kc_error);
			continue;
		}
		pk_u32(&b, 0);
		pk_str(&b, "");
		pk_blob(&b, c->kc_cert, c->kc_certlen);	/* never the key */
	}
	/* Shrink so that the caller frees (and wipes) exactly len bytes. */
	if (b.kb_failed || (*out = malloc(b.kb_len)) == NULL) {
		keymsg_buf_free(&b);
		return -1;
	}
	memcpy(*out, b.kb_p, b.kb_len);
	*outlen = b.kb_len;
	keymsg_buf_free(&b);
	return 0;
}

int
proxy_keys_build(const char *state_dir, const struct proxy_keys_src *src, size_t n,
    uint8_t **out, size_t *outlen)
{
	struct proxy_keys_build *kb;
	int rv;

	*out = NULL;
	*outlen = 0;
	if ((kb = proxy_keys_collect(state_dir, src, n)) == NULL)
		return -1;
	rv = proxy_keys_image(kb, NULL, out, outlen);
	proxy_keys_build_free(kb);
	return rv;
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
	if ((p = pk_get_blob(r, &n)) == NULL || strlen(s->ps_placeholder) == 0)
		return -1;
	if (n == 0)
		return 0;	/* withheld: no policy here binds it */
	if ((s->ps_value = malloc(n)) == NULL)
		return -1;
	memcpy(s->ps_value, p, n);
	s->ps_vlen = n;
	return 0;
}

static int
pk_parse_ca(struct pk_rd *r, struct proxy_sbca *c)
{
	const uint8_t *cert;
	size_t clen;
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
	if ((cert = pk_get_blob(r, &clen)) == NULL)
		return -1;
	/* The certificate only: the keys process (proxy_keyd.c) signs. */
	c->pc_ca = ca_load_der(cert, clen, NULL, 0, 1, c->pc_error,
	    sizeof(c->pc_error));
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
	const unsigned char *p;
	size_t n, i;
	uint32_t st, cnt;
	char *e = NULL;
	X509 *x;

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
		p = cert;
		if ((x = d2i_X509(NULL, &p, (long)n)) == NULL)
			goto bad;
		if (p != cert + n) {
			X509_free(x);
			goto bad;
		}
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
			if (o->pk_secrets[i].ps_value == NULL)
				continue;	/* withheld: never sent */
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

/* Does the vault bind s to host (whether or not its value is held here)? */
static int
pk_binds_host(const struct proxy_secret *s, const char *host)
{
	size_t i;

	for (i = 0; i < s->ps_nhosts; i++)
		if (hostname_match(s->ps_hosts[i], host))
			return 1;
	return 0;
}

int
proxy_secret_allows_host(const struct proxy_secret *s, const char *host)
{
	/* A withheld value is never injected. */
	return s->ps_value != NULL && pk_binds_host(s, host);
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

/*
 * The credential of p's upstream proxy (its own or airlock.json's): in the vault,
 * bound to the proxy's host name.  0, or -1 with err.
 */
static int
pk_check_upstream(const struct proxy_keys *k, const struct policy *p, char *err,
    size_t errlen)
{
	const struct upstream_proxy *up = proxy_upstream_route(p);
	const struct proxy_secret *s;

	if (up == NULL || up->up_auth[0] == '\0')
		return 0;
	if (k == NULL || k->pk_vault != 1) {
		snprintf(err, errlen, "the upstream proxy %s:%u takes secret '%s' "
		    "but there is no usable vault (%s)", up->up_host, up->up_port,
		    up->up_auth, k != NULL ? k->pk_vault_error : "not loaded");
		return -1;
	}
	if ((s = proxy_keys_secret(k, up->up_auth)) == NULL) {
		snprintf(err, errlen, "the upstream proxy %s:%u takes secret '%s', "
		    "which is not in the vault", up->up_host, up->up_port,
		    up->up_auth);
		return -1;
	}
	if (up->up_is_addr || !pk_binds_host(s, up->up_host)) {
		snprintf(err, errlen, "the upstream proxy %s:%u takes secret '%s', "
		    "which the vault does not bind to %s", up->up_host, up->up_port,
		    up->up_auth, up->up_host);
		return -1;
	}
	if (s->ps_value == NULL) {
		snprintf(err, errlen, "the upstream proxy %s:%u takes secret '%s', "
		    "whose value was not loaded with this policy (the file changed "
		    "during the reload? reload again)", up->up_host, up->up_port,
		    up->up_auth);
		return -1;
	}
	return 0;
}

int
proxy_keys_check_policy(const struct proxy_keys *k, const struct policy *p,
    char *err, size_t errlen)
{
	const struct policy_rule *r;
	const struct proxy_secret *s;
	size_t i, j, h;

	if (pk_check_upstream(k, p, err, errlen) == -1)
		return -1;

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
			if (s->ps_value == NULL) {
				snprintf(err, errlen, "rule %s injects secret '%s', "
				    "whose value was not loaded with this policy (the "
				    "file changed during the reload? reload again)",
				    r->pr_id, name);
				return -1;
			}
			if (s->ps_vlen < SCAN_NEEDLE_MIN) {
				snprintf(err, errlen, "rule %s injects secret '%s', "
				    "whose value is too short (under %d bytes) to be "
				    "redacted from responses", r->pr_id, name,
				    SCAN_NEEDLE_MIN);
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

/* proxy_keys_leaf()'s minter: the keys process signs, for c's policy. */
static int
pk_mint(void *arg, const char *name, X509 **out, char *err, size_t errlen)
{
	const struct proxy_sbca *c = arg;

	return proxy_keyd_mint(c->pc_sandbox, c->pc_policy_hash, name, c->pc_ca,
	    proxy_keys_leaf_key(), out, err, errlen);
}

int
proxy_keys_leaf(const struct proxy_sbca *c, const char *name, X509 **out,
    char *err, size_t errlen)
{
	*out = NULL;
	if (c->pc_ca == NULL || c->pc_cache == NULL) {
		snprintf(err, errlen, "no interception CA: %s", c->pc_error);
		return CA_ERR;
	}
	return ca_leaf_get_fn(c->pc_cache, name, pk_mint, (void *)(uintptr_t)c,
	    out, err, errlen);
}
