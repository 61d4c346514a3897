/*
 * proxy/proxy_tls.c: the TLS contexts of inspect mode, one pair per worker.
 *
 * Towards the VM (server side): TLS 1.2 and 1.3 only; on TLS 1.2 only ECDHE with an
 * AEAD (AES-GCM, CHACHA20-POLY1305), and only with the extended master secret (RFC
 * 7627: without it a man in the middle can synchronise two sessions' keys, the
 * triple handshake); TLS 1.3's suites are AEAD anyway (CCM left out).  No
 * renegotiation; no 0-RTT (max early data 0); no session cache and no session ids.
 * Session tickets (stateless, TLS 1.3 and 1.2), so a reconnecting client skips the
 * full handshake, but no session made for one name is resumed under another: a
 * server SSL issues tickets only once bound (proxy_tls_server_bind(), from
 * proxy_inspect.c) to its sandbox, the verified name, the policy's hash and the
 * sandbox CA, and that binding is stored in the ticket (its app data): a ticket
 * resumes only on a connection with exactly the same binding (the session ticket
 * callback; anything else: a full handshake with the leaf for the connection's own
 * name).  The handshake is reached only once the policy in force decided to inspect
 * the name, so a ticket resumes only while a policy of that hash still inspects it.
 * Tickets are sealed (AES-256-CBC + HMAC-SHA256, OpenSSL's format) with keys per
 * sandbox: random, held only in this process's memory (never written, never
 * logged), shared by the workers (a client may reconnect to another one), a new key
 * each PROXY_TLS_TK_PERIOD and the previous one accepted for one period more; a
 * binding with another policy hash or CA starts a new generation (the old keys are
 * wiped, so an older ticket does not even decrypt), and another sandbox's key name
 * is never tried.  Connections of the old and the new policy handshaking at once
 * after a reload may restart the generation again: full handshakes, nothing
 * resumes across.  Session lifetime: one period.  ALPN: http/1.1 is what airlock
 * speaks; a hello without ALPN speaks it
 * implicitly.  h2 is chosen (over http/1.1) only on a connection whose SSL was
 * marked for it (proxy_tls_server_allow_h2): the upstream of that connection
 * verified before the VM's handshake ran, so the HTTP/2 engine (proxy_h2.c) has an
 * origin to speak to (over HTTP/2 if it chose h2, else over HTTP/1.1).  Any other offer without
 * http/1.1 (h2 where it is not allowed, h3, anything) gets the fatal
 * no_application_protocol alert (RFC 7301 3.2), not a silent fallback.  The
 * certificate and key are set per connection (proxy_inspect.c).
 *
 * OpenSSL 3.0 has no option that requires EMS on a server (SSL_get_extms_support
 * answers only once the handshake is over), so the ClientHello callback decides
 * it: a hello that cannot negotiate TLS 1.3 (no 0x0304 in supported_versions) and
 * does not offer the extended_master_secret extension is refused with a
 * handshake_failure alert before any server message.
 *
 * Towards the origin (client side): TLS 1.2+, forward secrecy on TLS 1.2 (no RSA key
 * exchange), SSL_VERIFY_PEER against the system store or upstream_ca_file (either
 * read whole into memory when the context is made: the worker opens no file once it
 * is confined, proxy_tls_load_system()), the host
 * name checked with SSL_set1_host (set per connection, with SNI) against the
 * subjectAltName DNS names only: a certificate's subject CN is never read as a host
 * name (X509_CHECK_FLAG_NEVER_CHECK_SUBJECT; RFC 9525 6.3, as browsers do), so a
 * certificate without a subjectAltName matches no name.  ALPN http/1.1, or h2 and
 * http/1.1 for a VM that offered h2 (proxy_tls_client_offer_h2).  CBC suites
 * stay allowed upstream (the origin's choice; many still offer only them next to
 * TLS 1.3).  The verify callback also refuses any
 * certificate in the chain that is one of airlock's own CAs (the host CA of `ca
 * init` or a sandbox CA, compared by key): a trust store that happens to contain one
 * (a test file, an operator's mistake) must not let airlock trust itself, or a
 * sandbox could route an "upstream" through anything that holds a leaf we minted.
 * No request byte is written upstream before the handshake completed, which with
 * SSL_VERIFY_PEER means the chain and the name verified (proxy_inspect.c).
 *
 * Upstream session resumption (issue 7: a full handshake parses and verifies the
 * origin's chain, a third of a new connection's CPU): the client context keeps one
 * SSL_SESSION per (sandbox, host, port), in a small table hung on the context (one
 * context per worker thread, so no lock).  A resumed session skips the chain, so
 * only sessions from handshakes that verified are stored: the new-session callback
 * takes one only when the verify result is X509_V_OK and the callback saw neither an
 * error nor one of airlock's own CAs, and it is filed under the name that
 * SSL_set1_host checked on that handshake.  It is offered again only for the same
 * sandbox, name and port, and only while the key image (airlock's own CAs) is the
 * one it was verified under; a server that declines the ticket gets a full,
 * verified handshake.  A failed connection drops the entry.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "log.h"
#include "proxy_keys.h"
#include "proxy_tls.h"
#include "sandbox.h"

/* Sessions kept per worker context: enough for the hosts a worker talks to. */
#define PROXY_TLS_SESS_N	256

struct proxy_tls_sess {
	char		 ts_peer[sizeof(((struct proxy_tls_check *)0)->tc_peer)];
	unsigned long long ts_gen;	/* the key image it was verified under */
	SSL_SESSION	*ts_sess;	/* owned; NULL: empty slot */
	unsigned long	 ts_used;	/* for eviction */
};

struct proxy_tls_cache {
	struct proxy_tls_sess tc_slot[PROXY_TLS_SESS_N];
	unsigned long	 tc_clock;
};

static int proxy_tls_idx = -1;		/* SSL: its struct proxy_tls_check */
static int proxy_tls_h2_idx = -1;	/* server SSL: h2 may be chosen */
static int proxy_tls_ctx_idx = -1;	/* SSL_CTX: its struct proxy_tls_cache */
static int proxy_tls_bind_idx = -1;	/* server SSL: its struct proxy_tls_bind */
static pthread_once_t proxy_tls_once = PTHREAD_ONCE_INIT;

/*
 * Tickets towards the VM (see the top of this file).  A key generation is one
 * sandbox's keys under one (policy hash, CA); the table is shared by the workers
 * (a client that reconnects may land on another one) under tk_mtx, and held only
 * here: never written, never logged.
 */
#define PROXY_TLS_TK_PERIOD	3600	/* seconds a key issues tickets */
#define PROXY_TLS_TK_N		1024	/* sandboxes with keys */
#define PROXY_TLS_TK_NAME	16

struct proxy_tls_tkey {
	unsigned char	 tk_name[PROXY_TLS_TK_NAME];
	unsigned char	 tk_aes[32];
	unsigned char	 tk_hmac[32];
};

struct proxy_tls_tkeys {
	char		 tt_sandbox[SANDBOX_NAME_MAX + 1];	/* "": empty slot */
	char		 tt_gen[2 * 65];	/* policy hash and CA digest, hex */
	struct proxy_tls_tkey tt_cur;
	struct proxy_tls_tkey tt_prev;
	int		 tt_have_prev;
	time_t		 tt_born;		/* tt_cur's, CLOCK_MONOTONIC */
	unsigned long	 tt_used;		/* for eviction */
};

/* What a server SSL is for: the data its tickets are bound to. */
struct proxy_tls_bind {
	char		 tb_sandbox[SANDBOX_NAME_MAX + 1];
	char		 tb_gen[2 * 65];
	size_t		 tb_len;
	unsigned char	 tb_data[];	/* sandbox NUL name NUL gen NUL */
};

static pthread_mutex_t proxy_tls_tk_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct proxy_tls_tkeys proxy_tls_tk[PROXY_TLS_TK_N];	/* under tk_mtx */
static unsigned long proxy_tls_tk_clock;			/* under tk_mtx */

static void
proxy_tls_cache_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx,
    long argl, void *argp)
{
	struct proxy_tls_cache *tcc = ptr;
	size_t i;

	(void)parent; (void)ad; (void)idx; (void)argl; (void)argp;
	if (tcc == NULL)
		return;
	for (i = 0; i < PROXY_TLS_SESS_N; i++)
		SSL_SESSION_free(tcc->tc_slot[i].ts_sess);
	free(tcc);
}

static void
proxy_tls_bind_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx,
    long argl, void *argp)
{
	(void)parent; (void)ad; (void)idx; (void)argl; (void)argp;
	free(ptr);
}

static void
proxy_tls_init(void)
{
	proxy_tls_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
	proxy_tls_h2_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
	proxy_tls_bind_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL,
	    proxy_tls_bind_free);
	proxy_tls_ctx_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL,
	    proxy_tls_cache_free);
}

/* The slot for peer, or NULL. */
static struct proxy_tls_sess *
proxy_tls_sess_find(struct proxy_tls_cache *tcc, const char *peer)
{
	size_t i;

	for (i = 0; i < PROXY_TLS_SESS_N; i++)
		if (tcc->tc_slot[i].ts_sess != NULL &&
		    strcmp(tcc->tc_slot[i].ts_peer, peer) == 0)
			return &tcc->tc_slot[i];
	return NULL;
}

static void
proxy_tls_sess_drop(struct proxy_tls_sess *ts)
{
	SSL_SESSION_free(ts->ts_sess);
	ts->ts_sess = NULL;
	ts->ts_peer[0] = '\0';
}

/*
 * New-session callback: keeps a copy of sess for tc_peer if this connection's chain
 * and name verified.  A copy, and a copy again for each connection that resumes it:
 * OpenSSL marks the session an SSL ends with not resumable when that SSL is freed
 * without a close_notify sent (ssl_clear_bad_session), which is how most upstream
 * connections end here.  Returns 0: OpenSSL keeps its own reference.
 */
static int
proxy_tls_sess_new(SSL *ssl, SSL_SESSION *sess)
{
	struct proxy_tls_cache *tcc;
	struct proxy_tls_check *tc;
	struct proxy_tls_sess *ts, *old;
	SSL_SESSION *copy;
	size_t i;

	tc = proxy_tls_idx != -1 ? SSL_get_ex_data(ssl, proxy_tls_idx) : NULL;
	tcc = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), proxy_tls_ctx_idx);
	if (tc == NULL || tcc == NULL || tc->tc_peer[0] == '\0' ||
	    tc->tc_keys == NULL || tc->tc_own_ca || tc->tc_verify_err != 0 ||
	    SSL_get_verify_result(ssl) != X509_V_OK ||
	    SSL_get0_peer_certificate(ssl) == NULL ||
	    !SSL_SESSION_is_resumable(sess))
		return 0;
	if ((copy = SSL_SESSION_dup(sess)) == NULL) {
		ERR_clear_error();
		return 0;
	}
	if ((ts = proxy_tls_sess_find(tcc, tc->tc_peer)) == NULL) {
		/* An empty slot, else the least recently used one. */
		old = &tcc->tc_slot[0];
		for (i = 0; i < PROXY_TLS_SESS_N; i++) {
			ts = &tcc->tc_slot[i];
			if (ts->ts_sess == NULL)
				break;
			if (ts->ts_used < old->ts_used)
				old = ts;
		}
		if (i == PROXY_TLS_SESS_N)
			ts = old;
		proxy_tls_sess_drop(ts);
		memcpy(ts->ts_peer, tc->tc_peer, sizeof(ts->ts_peer));
	} else
		SSL_SESSION_free(ts->ts_sess);
	ts->ts_sess = copy;
	ts->ts_gen = tc->tc_keys->pk_gen;
	ts->ts_used = ++tcc->tc_clock;
	return 0;
}

/* The protocol name p[n] in the ALPN list in[inlen], or NULL. */
static const unsigned char *
proxy_tls_alpn_find(const unsigned char *in, unsigned int inlen, const char *p,
    unsigned int n)
{
	unsigned int i = 0;

	while (i < inlen) {
		unsigned int k = in[i];

		if (k == 0 || i + 1 + k > inlen)
			return NULL;
		if (k == n && memcmp(in + i + 1, p, n) == 0)
			return in + i + 1;
		i += 1 + k;
	}
	return NULL;
}

/* Called only for a hello with ALPN: h2 where allowed, http/1.1, or the alert. */
static int
proxy_tls_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	const unsigned char *p;

	if (proxy_tls_h2_idx != -1 && SSL_get_ex_data(ssl, proxy_tls_h2_idx) != NULL &&
	    (p = proxy_tls_alpn_find(in, inlen, "h2", 2)) != NULL) {
		*out = p;
		*outlen = 2;
		return SSL_TLSEXT_ERR_OK;
	}
	if ((p = proxy_tls_alpn_find(in, inlen, "http/1.1", 8)) != NULL) {
		*out = p;
		*outlen = 8;
		return SSL_TLSEXT_ERR_OK;
	}
	/* OpenSSL answers this with no_application_protocol (120). */
	return SSL_TLSEXT_ERR_ALERT_FATAL;
}

/* 1 if the hello's supported_versions extension lists TLS 1.3. */
static int
proxy_tls_hello_has_tls13(SSL *ssl)
{
	const unsigned char *p;
	size_t len, i;

	if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_supported_versions, &p,
	    &len) != 1 || len < 1 || p[0] != len - 1 || (len - 1) % 2 != 0)
		return 0;
	for (i = 1; i + 1 < len; i += 2)
		if (p[i] == 0x03 && p[i + 1] == 0x04)
			return 1;
	return 0;
}

/*
 * The ClientHello callback: a hello that would negotiate TLS 1.2 must offer the
 * extended master secret (see the top of this file).
 */
static int
proxy_tls_hello_cb(SSL *ssl, int *al, void *arg)
{
	const unsigned char *p;
	size_t len;

	(void)arg;
	if (proxy_tls_hello_has_tls13(ssl) ||
	    SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_extended_master_secret, &p,
	    &len) == 1)
		return SSL_CLIENT_HELLO_SUCCESS;
	*al = SSL_AD_HANDSHAKE_FAILURE;
	return SSL_CLIENT_HELLO_ERROR;
}

/* Fresh random key material into k.  0 or -1. */
static int
proxy_tls_tk_fill(struct proxy_tls_tkey *k)
{
	if (RAND_bytes(k->tk_name, sizeof(k->tk_name)) != 1 ||
	    RAND_bytes(k->tk_aes, sizeof(k->tk_aes)) != 1 ||
	    RAND_bytes(k->tk_hmac, sizeof(k->tk_hmac)) != 1) {
		OPENSSL_cleanse(k, sizeof(*k));
		ERR_clear_error();
		return -1;
	}
	return 0;
}

/*
 * The current key (and the previous one, if *have_prev) of tb's sandbox under tb's
 * generation, copied out: a sandbox seen for the first time, or under another
 * policy hash or CA, starts a new generation (the old keys are wiped, so no ticket
 * they sealed opens again); a key older than PROXY_TLS_TK_PERIOD becomes the
 * previous one, accepted for one more period.  0 or -1.
 */
static int
proxy_tls_tk_get_at(const struct proxy_tls_bind *tb, time_t now,
    struct proxy_tls_tkey *cur, struct proxy_tls_tkey *prev, int *have_prev)
{
	struct proxy_tls_tkeys *table = proxy_tls_tk, *tt = NULL, *old;
	size_t i;
	int rv = -1;

	pthread_mutex_lock(&proxy_tls_tk_mtx);
	for (i = 0; i < PROXY_TLS_TK_N; i++)
		if (strcmp(table[i].tt_sandbox, tb->tb_sandbox) == 0) {
			tt = &table[i];
			break;
		}
	if (tt == NULL) {
		/* An empty slot, else the least recently used one. */
		old = &table[0];
		for (i = 0; i < PROXY_TLS_TK_N; i++) {
			if (table[i].tt_sandbox[0] == '\0')
				break;
			if (table[i].tt_used < old->tt_used)
				old = &table[i];
		}
		tt = i < PROXY_TLS_TK_N ? &table[i] : old;
		OPENSSL_cleanse(tt, sizeof(*tt));
	}
	if (tt->tt_sandbox[0] == '\0' || strcmp(tt->tt_gen, tb->tb_gen) != 0) {
		/* A new generation. */
		OPENSSL_cleanse(tt, sizeof(*tt));
		if (proxy_tls_tk_fill(&tt->tt_cur) == -1)
			goto out;
		(void)snprintf(tt->tt_sandbox, sizeof(tt->tt_sandbox), "%s",
		    tb->tb_sandbox);
		(void)snprintf(tt->tt_gen, sizeof(tt->tt_gen), "%s", tb->tb_gen);
		tt->tt_born = now;
	} else if (now - tt->tt_born >= PROXY_TLS_TK_PERIOD) {
		/* Rotation; a previous key older than one more period goes. */
		tt->tt_prev = tt->tt_cur;
		tt->tt_have_prev = now - tt->tt_born < 2 * PROXY_TLS_TK_PERIOD;
		if (proxy_tls_tk_fill(&tt->tt_cur) == -1) {
			OPENSSL_cleanse(tt, sizeof(*tt));
			goto out;
		}
		tt->tt_born = now;
	}
	tt->tt_used = ++proxy_tls_tk_clock;
	*cur = tt->tt_cur;
	*prev = tt->tt_prev;
	*have_prev = tt->tt_have_prev;
	rv = 0;
 out:
	pthread_mutex_unlock(&proxy_tls_tk_mtx);
	return rv;
}

/* proxy_tls_tk_get_at() now (CLOCK_MONOTONIC). */
static int
proxy_tls_tk_get(const struct proxy_tls_bind *tb, struct proxy_tls_tkey *cur,
    struct proxy_tls_tkey *prev, int *have_prev)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) == -1)
		return -1;
	return proxy_tls_tk_get_at(tb, ts.tv_sec, cur, prev, have_prev);
}

int
proxy_tls_tk_test(const char *sandbox, const char *gen, long long now,
    unsigned char cur[16], unsigned char prev[16], int *have_prev)
{
	struct proxy_tls_bind tb;
	struct proxy_tls_tkey c, p;
	int rv;

	memset(&tb, 0, sizeof(tb));
	(void)snprintf(tb.tb_sandbox, sizeof(tb.tb_sandbox), "%s", sandbox);
	(void)snprintf(tb.tb_gen, sizeof(tb.tb_gen), "%s", gen);
	memset(&p, 0, sizeof(p));
	if ((rv = proxy_tls_tk_get_at(&tb, (time_t)now, &c, &p, have_prev)) == 0) {
		memcpy(cur, c.tk_name, PROXY_TLS_TK_NAME);
		memcpy(prev, p.tk_name, PROXY_TLS_TK_NAME);
	}
	OPENSSL_cleanse(&c, sizeof(c));
	OPENSSL_cleanse(&p, sizeof(p));
	return rv;
}

/*
 * The ticket key callback: seals with the current key of the connection's sandbox,
 * opens only with that sandbox's current or previous key (2: opened, renew).  A key
 * name that is neither, or a connection not bound: 0 (no ticket; a full handshake).
 */
static int
proxy_tls_tk_cb(SSL *ssl, unsigned char *name, unsigned char *iv,
    EVP_CIPHER_CTX *cctx, EVP_MAC_CTX *hctx, int enc)
{
	const struct proxy_tls_bind *tb;
	struct proxy_tls_tkey cur, prev, *k;
	OSSL_PARAM params[3];
	int have_prev, ivlen, rv = 1;

	tb = proxy_tls_bind_idx != -1 ? SSL_get_ex_data(ssl, proxy_tls_bind_idx) :
	    NULL;
	if (tb == NULL || proxy_tls_tk_get(tb, &cur, &prev, &have_prev) == -1)
		return enc ? -1 : 0;
	if (enc) {
		k = &cur;
		ivlen = EVP_CIPHER_get_iv_length(EVP_aes_256_cbc());
		if (ivlen <= 0 || RAND_bytes(iv, ivlen) != 1) {
			rv = -1;
			goto out;
		}
		memcpy(name, k->tk_name, PROXY_TLS_TK_NAME);
	} else if (memcmp(name, cur.tk_name, PROXY_TLS_TK_NAME) == 0)
		k = &cur;
	else if (have_prev && memcmp(name, prev.tk_name, PROXY_TLS_TK_NAME) == 0) {
		k = &prev;
		rv = 2;
	} else {
		rv = 0;
		goto out;
	}
	params[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY,
	    k->tk_hmac, sizeof(k->tk_hmac));
	params[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    (char *)"SHA256", 0);
	params[2] = OSSL_PARAM_construct_end();
	if (EVP_MAC_CTX_set_params(hctx, params) != 1 ||
	    (enc ? EVP_EncryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k->tk_aes, iv) :
	    EVP_DecryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k->tk_aes, iv)) != 1)
		rv = -1;
 out:
	OPENSSL_cleanse(&cur, sizeof(cur));
	OPENSSL_cleanse(&prev, sizeof(prev));
	return rv;
}

/* A new ticket carries what its connection was bound to. */
static int
proxy_tls_tk_gen(SSL *ssl, void *arg)
{
	const struct proxy_tls_bind *tb;
	SSL_SESSION *sess;

	(void)arg;
	tb = proxy_tls_bind_idx != -1 ? SSL_get_ex_data(ssl, proxy_tls_bind_idx) :
	    NULL;
	if (tb == NULL || (sess = SSL_get_session(ssl)) == NULL)
		return 1;	/* no binding data: it resumes nowhere */
	if (SSL_SESSION_set1_ticket_appdata(sess, tb->tb_data, tb->tb_len) != 1) {
		ERR_clear_error();
		return 0;
	}
	return 1;
}

/*
 * A ticket that opened resumes only on a connection bound to exactly the same
 * sandbox, name, policy hash and CA; anything else is a full handshake (and a new
 * ticket for this connection's binding).
 */
static SSL_TICKET_RETURN
proxy_tls_tk_dec(SSL *ssl, SSL_SESSION *sess, const unsigned char *keyname,
    size_t keyname_len, SSL_TICKET_STATUS status, void *arg)
{
	const struct proxy_tls_bind *tb;
	void *data;
	size_t len;

	(void)keyname; (void)keyname_len; (void)arg;
	switch (status) {
	case SSL_TICKET_SUCCESS:
	case SSL_TICKET_SUCCESS_RENEW:
		break;
	case SSL_TICKET_NONE:
	case SSL_TICKET_EMPTY:
	case SSL_TICKET_NO_DECRYPT:
		return SSL_TICKET_RETURN_IGNORE_RENEW;
	default:
		return SSL_TICKET_RETURN_ABORT;
	}
	tb = proxy_tls_bind_idx != -1 ? SSL_get_ex_data(ssl, proxy_tls_bind_idx) :
	    NULL;
	if (tb == NULL || sess == NULL ||
	    SSL_SESSION_get0_ticket_appdata(sess, &data, &len) != 1 ||
	    len != tb->tb_len || memcmp(data, tb->tb_data, len) != 0)
		return SSL_TICKET_RETURN_IGNORE_RENEW;
	return status == SSL_TICKET_SUCCESS_RENEW ? SSL_TICKET_RETURN_USE_RENEW :
	    SSL_TICKET_RETURN_USE;
}

/* TLS 1.2 towards the VM: ECDHE and an AEAD, nothing else. */
#define PROXY_TLS_SERVER_CIPHERS \
	"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:" \
	"ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:" \
	"ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
#define PROXY_TLS_SERVER_SUITES \
	"TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
/* TLS 1.2 towards origins: OpenSSL's default list without RSA key exchange. */
#define PROXY_TLS_CLIENT_CIPHERS	"DEFAULT:!kRSA:!aNULL:!eNULL"

SSL_CTX *
proxy_tls_server_ctx(void)
{
	SSL_CTX *ctx;

	pthread_once(&proxy_tls_once, proxy_tls_init);
	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL)
		return NULL;
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set_cipher_list(ctx, PROXY_TLS_SERVER_CIPHERS) != 1 ||
	    SSL_CTX_set_ciphersuites(ctx, PROXY_TLS_SERVER_SUITES) != 1) {
		ERR_clear_error();
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET |
	    SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_client_hello_cb(ctx, proxy_tls_hello_cb, NULL);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	(void)SSL_CTX_set_num_tickets(ctx, 0);
	(void)SSL_CTX_set_max_early_data(ctx, 0);
	(void)SSL_CTX_set_recv_max_early_data(ctx, 0);
	SSL_CTX_set_alpn_select_cb(ctx, proxy_tls_alpn_select, NULL);
	/* Tickets: off here, on for a connection once bound (proxy_tls_server_bind). */
	(void)SSL_CTX_set_timeout(ctx, PROXY_TLS_TK_PERIOD);
	if (SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, proxy_tls_tk_cb) != 1 ||
	    SSL_CTX_set_session_ticket_cb(ctx, proxy_tls_tk_gen, proxy_tls_tk_dec,
	    NULL) != 1) {
		ERR_clear_error();
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

/* Refuses airlock's own CAs anywhere in the chain; records why for the audit. */
static int
proxy_tls_verify_cb(int preverify, X509_STORE_CTX *xs)
{
	struct proxy_tls_check *tc;
	SSL *ssl;
	X509 *x;

	ssl = X509_STORE_CTX_get_ex_data(xs, SSL_get_ex_data_X509_STORE_CTX_idx());
	tc = ssl != NULL && proxy_tls_idx != -1 ?
	    SSL_get_ex_data(ssl, proxy_tls_idx) : NULL;
	if (tc == NULL)
		return 0;	/* not ours: refuse */
	if (!preverify) {
		if (tc->tc_verify_err == 0)
			tc->tc_verify_err = X509_STORE_CTX_get_error(xs);
		return 0;
	}
	if ((x = X509_STORE_CTX_get_current_cert(xs)) != NULL &&
	    proxy_keys_is_anchor(tc->tc_keys, x)) {
		tc->tc_own_ca = 1;
		X509_STORE_CTX_set_error(xs, X509_V_ERR_CERT_REJECTED);
		return 0;
	}
	return 1;
}

/* 1 for a name the hashed-directory lookup reads: 8 hex digits, '.', digits. */
static int
proxy_tls_hash_name(const char *n)
{
	size_t i;

	for (i = 0; i < 8; i++)
		if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f')))
			return 0;
	if (n[8] != '.' || n[9] == '\0')
		return 0;
	for (i = 9; n[i] != '\0'; i++)
		if (n[i] < '0' || n[i] > '9')
			return 0;
	return 1;
}

/*
 * The system trust store into st, read whole now: OpenSSL's default file
 * (SSL_CERT_FILE) and every certificate of its hashed directories (SSL_CERT_DIR,
 * ':'-separated).  SSL_CTX_set_default_verify_paths() would add the directories as
 * a lookup that opens HASH.N files at each verification, lazily, which the confined
 * worker cannot do (proxy_confine.c).  The files read are those that lookup could
 * find (proxy_tls_hash_name()), so the anchors are the same.  Like that call, a
 * missing file or directory is not an error; -1 only when out of memory.
 */
static int
proxy_tls_load_system(X509_STORE *st)
{
	X509_LOOKUP *lu;
	struct dirent *de;
	const char *file, *dirs;
	char path[4096], *list, *dir, *save = NULL;
	DIR *d;

	if ((lu = X509_STORE_add_lookup(st, X509_LOOKUP_file())) == NULL)
		return -1;
	if ((file = secure_getenv(X509_get_default_cert_file_env())) == NULL)
		file = X509_get_default_cert_file();
	if (X509_LOOKUP_load_file(lu, file, X509_FILETYPE_PEM) != 1)
		ERR_clear_error();
	if ((dirs = secure_getenv(X509_get_default_cert_dir_env())) == NULL)
		dirs = X509_get_default_cert_dir();
	if ((list = strdup(dirs)) == NULL)
		return -1;
	for (dir = strtok_r(list, ":", &save); dir != NULL;
	    dir = strtok_r(NULL, ":", &save)) {
		if ((d = opendir(dir)) == NULL)
			continue;
		while ((de = readdir(d)) != NULL) {
			if (!proxy_tls_hash_name(de->d_name) ||
			    (size_t)snprintf(path, sizeof(path), "%s/%s", dir,
			    de->d_name) >= sizeof(path))
				continue;
			if (X509_load_cert_file(lu, path, X509_FILETYPE_PEM) == 0)
				ERR_clear_error();
		}
		closedir(d);
	}
	free(list);
	return 0;
}

SSL_CTX *
proxy_tls_client_ctx(const char *ca_file, char *err, size_t errlen)
{
	static const unsigned char alpn[] = "\x08http/1.1";
	struct proxy_tls_cache *tcc;
	SSL_CTX *ctx;
	unsigned long e;

	pthread_once(&proxy_tls_once, proxy_tls_init);
	if (proxy_tls_idx == -1 || proxy_tls_ctx_idx == -1) {
		snprintf(err, errlen, "TLS: no ex_data index");
		return NULL;
	}
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		snprintf(err, errlen, "TLS: SSL_CTX_new failed");
		return NULL;
	}
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set_cipher_list(ctx, PROXY_TLS_CLIENT_CIPHERS) != 1)
		goto ssl_error;
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	/* Sessions go to proxy_tls_sess_new() only, never to OpenSSL's own store. */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT |
	    SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, proxy_tls_sess_new);
	if ((tcc = calloc(1, sizeof(*tcc))) == NULL ||
	    SSL_CTX_set_ex_data(ctx, proxy_tls_ctx_idx, tcc) != 1) {
		free(tcc);
		goto ssl_error;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, proxy_tls_verify_cb);
	if (ca_file != NULL && *ca_file != '\0') {
		if (SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1) {
			e = ERR_peek_last_error();
			snprintf(err, errlen, "upstream_ca_file %s: %s", ca_file,
			    ERR_reason_error_string(e) != NULL ?
			    ERR_reason_error_string(e) : "unreadable");
			ERR_clear_error();
			SSL_CTX_free(ctx);
			return NULL;
		}
	} else if (proxy_tls_load_system(SSL_CTX_get_cert_store(ctx)) == -1)
		goto ssl_error;
	if (SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1) != 0)
		goto ssl_error;
	return ctx;
 ssl_error:
	snprintf(err, errlen, "TLS: client context set-up failed");
	ERR_clear_error();
	SSL_CTX_free(ctx);
	return NULL;
}

SSL *
proxy_tls_client_new(SSL_CTX *ctx, const char *name, struct proxy_tls_check *tc)
{
	struct proxy_tls_cache *tcc;
	struct proxy_tls_sess *ts;
	SSL_SESSION *copy;
	SSL *ssl;

	if ((ssl = SSL_new(ctx)) == NULL)
		return NULL;
	/* subjectAltName only: a CN is never a host name here (RFC 9525). */
	SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS |
	    X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
	if (SSL_set_tlsext_host_name(ssl, name) != 1 ||
	    SSL_set1_host(ssl, name) != 1 ||
	    SSL_set_ex_data(ssl, proxy_tls_idx, tc) != 1) {
		SSL_free(ssl);
		ERR_clear_error();
		return NULL;
	}
	/* A session verified for this sandbox, name and port under these keys. */
	if (tc->tc_peer[0] != '\0' && tc->tc_keys != NULL &&
	    (tcc = SSL_CTX_get_ex_data(ctx, proxy_tls_ctx_idx)) != NULL &&
	    (ts = proxy_tls_sess_find(tcc, tc->tc_peer)) != NULL) {
		if (ts->ts_gen != tc->tc_keys->pk_gen)
			proxy_tls_sess_drop(ts);
		else {
			/* Failing any of it: a full handshake. */
			if ((copy = SSL_SESSION_dup(ts->ts_sess)) == NULL ||
			    SSL_set_session(ssl, copy) != 1)
				ERR_clear_error();
			SSL_SESSION_free(copy);
			ts->ts_used = ++tcc->tc_clock;
		}
	}
	return ssl;
}

void
proxy_tls_client_forget(SSL_CTX *ctx, const struct proxy_tls_check *tc)
{
	struct proxy_tls_cache *tcc;
	struct proxy_tls_sess *ts;

	if (proxy_tls_ctx_idx == -1 || tc->tc_peer[0] == '\0' ||
	    (tcc = SSL_CTX_get_ex_data(ctx, proxy_tls_ctx_idx)) == NULL)
		return;
	if ((ts = proxy_tls_sess_find(tcc, tc->tc_peer)) != NULL)
		proxy_tls_sess_drop(ts);
}

int
proxy_tls_server_set_leaf(SSL *ssl, X509 *leaf, EVP_PKEY *key)
{
	if (SSL_use_certificate(ssl, leaf) != 1 || SSL_use_PrivateKey(ssl, key) != 1 ||
	    SSL_check_private_key(ssl) != 1) {
		ERR_clear_error();
		return -1;
	}
	return 0;
}

const char *
proxy_tls_verify_str(const struct proxy_tls_check *tc)
{
	if (tc->tc_own_ca)
		return "certificate from airlock's own CA";
	if (tc->tc_verify_err != 0)
		return X509_verify_cert_error_string(tc->tc_verify_err);
	return "handshake failed";
}

int
proxy_tls_server_bind(SSL *ssl, const char *sandbox, const char *name,
    const char *policy_hash, X509 *ca)
{
	struct proxy_tls_bind *tb;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen, i;
	size_t ls, ln, lg;
	char gen[sizeof(tb->tb_gen)];
	int n;

	if (proxy_tls_bind_idx == -1 || ca == NULL ||
	    X509_digest(ca, EVP_sha256(), md, &mdlen) != 1 || mdlen != 32) {
		ERR_clear_error();
		return -1;
	}
	n = snprintf(gen, sizeof(gen), "%s ", policy_hash);
	if (n < 0 || (size_t)n + 2 * mdlen >= sizeof(gen))
		return -1;
	for (i = 0; i < mdlen; i++)
		(void)snprintf(gen + n + 2 * i, 3, "%02x", md[i]);
	ls = strlen(sandbox);
	ln = strlen(name);
	lg = strlen(gen);
	if (ls == 0 || ls >= sizeof(tb->tb_sandbox) ||
	    (tb = malloc(sizeof(*tb) + ls + ln + lg + 3)) == NULL)
		return -1;
	memcpy(tb->tb_sandbox, sandbox, ls + 1);
	memcpy(tb->tb_gen, gen, lg + 1);
	memcpy(tb->tb_data, sandbox, ls + 1);
	memcpy(tb->tb_data + ls + 1, name, ln + 1);
	memcpy(tb->tb_data + ls + ln + 2, gen, lg + 1);
	tb->tb_len = ls + ln + lg + 3;
	if (SSL_set_ex_data(ssl, proxy_tls_bind_idx, tb) != 1) {
		free(tb);
		ERR_clear_error();
		return -1;
	}
	SSL_clear_options(ssl, SSL_OP_NO_TICKET);
	(void)SSL_set_num_tickets(ssl, 1);
	return 0;
}

void
proxy_tls_server_allow_h2(SSL *ssl, int on)
{
	static int yes = 1;

	if (proxy_tls_h2_idx != -1)
		(void)SSL_set_ex_data(ssl, proxy_tls_h2_idx, on ? &yes : NULL);
}

int
proxy_tls_client_offer_h2(SSL *ssl)
{
	static const unsigned char alpn[] = "\x02h2\x08http/1.1";

	return SSL_set_alpn_protos(ssl, alpn, sizeof(alpn) - 1) == 0 ? 0 : -1;
}

int
proxy_tls_alpn_is_h2(SSL *ssl)
{
	const unsigned char *p;
	unsigned int n;

	if (ssl == NULL)
		return 0;	/* not TLS (the test seams' in-memory streams) */
	SSL_get0_alpn_selected(ssl, &p, &n);
	return n == 2 && memcmp(p, "h2", 2) == 0;
}

int
proxy_tls_client_rebind(SSL *ssl, struct proxy_tls_check *tc)
{
	return SSL_set_ex_data(ssl, proxy_tls_idx, tc) == 1 ? 0 : -1;
}
