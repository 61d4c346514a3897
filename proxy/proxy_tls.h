/*
 * proxy/proxy_tls.h: inspect mode's TLS contexts (proxy_tls.c).  Private to proxy/.
 */
#ifndef AIRLOCK_PROXY_TLS_H
#define AIRLOCK_PROXY_TLS_H

#include <pthread.h>
#include <stddef.h>

#include <openssl/ssl.h>

struct proxy_keys;

/* What the upstream verify callback learnt about one connection. */
struct proxy_tls_check {
	const struct proxy_keys *tc_keys;	/* airlock's own CAs to refuse */
	int		 tc_own_ca;		/* a chain certificate was ours */
	int		 tc_verify_err;		/* first X509_V_ERR_*, or 0 */
	/* the session cache's key: "sandbox host:port" ("" = no resumption) */
	char		 tc_peer[400];
};

/* The VM-facing context (see proxy_tls.c).  NULL on failure. */
SSL_CTX	*proxy_tls_server_ctx(void);
/* The origin-facing context: trust from ca_file ("" or NULL: the system store). */
SSL_CTX	*proxy_tls_client_ctx(const char *ca_file, char *err, size_t errlen);
/*
 * An upstream SSL for name (SNI, SSL_set1_host), reporting to tc (kept alive by the
 * caller), resuming the session kept for tc->tc_peer if there is one.
 */
SSL	*proxy_tls_client_new(SSL_CTX *ctx, const char *name,
	    struct proxy_tls_check *tc);
/* Drops the session kept for tc's peer (its connection failed). */
void	 proxy_tls_client_forget(SSL_CTX *ctx, const struct proxy_tls_check *tc);
/* Sets the minted leaf and the process's leaf key on a server-side SSL.  0 or -1. */
int	 proxy_tls_server_set_leaf(SSL *ssl, X509 *leaf, EVP_PKEY *key);
/*
 * Binds a server SSL (before its handshake) to what the policy decided to inspect:
 * its sandbox, the verified name, the policy's hash and the sandbox CA that signs
 * the leaf; only then does it issue session tickets, and it resumes only a ticket
 * issued under exactly the same binding (proxy_tls.c).  0, or -1: no tickets.
 */
int	 proxy_tls_server_bind(SSL *ssl, const char *sandbox, const char *name,
	    const char *policy_hash, X509 *ca);
/*
 * HTTP/2 (proxy_h2.c).  A server SSL may choose h2 from the VM's offer only once
 * marked so (before its handshake); an upstream SSL offers h2 and http/1.1
 * (before its handshake); whether an SSL's handshake chose h2 (NULL: no); the check
 * struct an upstream SSL reports to moves (the engine that owns it changed).
 */
void	 proxy_tls_server_allow_h2(SSL *ssl, int on);
int	 proxy_tls_client_offer_h2(SSL *ssl);
int	 proxy_tls_alpn_is_h2(SSL *ssl);
int	 proxy_tls_client_rebind(SSL *ssl, struct proxy_tls_check *tc);
/*
 * Test seam (tests/unit/tls_tickets.c; the daemon never calls it): the names of
 * the ticket keys of sandbox under generation gen at time now (seconds), as the
 * ticket callback would get them: the current one, and the previous one when
 * *have_prev.  0 or -1.
 */
int	 proxy_tls_tk_test(const char *sandbox, const char *gen, long long now,
	    unsigned char cur[16], unsigned char prev[16], int *have_prev);
/* Why the upstream was refused, for logs (never secret). */
const char *proxy_tls_verify_str(const struct proxy_tls_check *tc);

#endif
