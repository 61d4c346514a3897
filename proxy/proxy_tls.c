/*
 * proxy/proxy_tls.c: the TLS contexts of inspect mode, one pair per worker.
 *
 * Towards the VM (server side): TLS 1.2 and 1.3 only; no renegotiation; no 0-RTT
 * (max early data 0); no session tickets and no session cache, so no session made
 * for one name can be resumed under another (every handshake is a full one, with
 * the leaf minted for the connection's verified name); ALPN selects http/1.1 and
 * nothing else (a client offering only h2 gets no ALPN and speaks HTTP/1.1 or
 * leaves).  The certificate and key are set per connection (proxy_inspect.c).
 *
 * Towards the origin (client side): TLS 1.2+, SSL_VERIFY_PEER against the system
 * store or upstream_ca_file, the host name checked with SSL_set1_host (set per
 * connection, with SNI), ALPN http/1.1.  The verify callback also refuses any
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "log.h"
#include "proxy_inspect.h"
#include "proxy_tls.h"

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
static int proxy_tls_ctx_idx = -1;	/* SSL_CTX: its struct proxy_tls_cache */
static pthread_once_t proxy_tls_once = PTHREAD_ONCE_INIT;

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
proxy_tls_init(void)
{
	proxy_tls_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
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

static int
proxy_tls_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	unsigned int i = 0;

	while (i < inlen) {
		unsigned int n = in[i];

		if (n == 0 || i + 1 + n > inlen)
			break;
		if (n == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
			*out = in + i + 1;
			*outlen = 8;
			return SSL_TLSEXT_ERR_OK;
		}
		i += 1 + n;
	}
	return SSL_TLSEXT_ERR_NOACK;
}

SSL_CTX *
proxy_tls_server_ctx(void)
{
	SSL_CTX *ctx;

	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL)
		return NULL;
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET |
	    SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	(void)SSL_CTX_set_num_tickets(ctx, 0);
	(void)SSL_CTX_set_max_early_data(ctx, 0);
	(void)SSL_CTX_set_recv_max_early_data(ctx, 0);
	SSL_CTX_set_alpn_select_cb(ctx, proxy_tls_alpn_select, NULL);
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
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
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
	} else if (SSL_CTX_set_default_verify_paths(ctx) != 1)
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
	SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
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
