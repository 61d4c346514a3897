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
 */
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "log.h"
#include "proxy_inspect.h"
#include "proxy_tls.h"

static int proxy_tls_idx = -1;
static pthread_once_t proxy_tls_once = PTHREAD_ONCE_INIT;

static void
proxy_tls_init(void)
{
	proxy_tls_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
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
	SSL_CTX *ctx;
	unsigned long e;

	pthread_once(&proxy_tls_once, proxy_tls_init);
	if (proxy_tls_idx == -1) {
		snprintf(err, errlen, "TLS: no ex_data index");
		return NULL;
	}
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		snprintf(err, errlen, "TLS: SSL_CTX_new failed");
		return NULL;
	}
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
		goto ssl_error;
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET |
	    SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
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
	return ssl;
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
