/*
 * proxy/proxy_conn_tunnel.c: an allowed connection's way out through an upstream
 * (corporate) HTTP proxy, airlock.json's or its policy's "upstream_proxy" (issue
 * 17).  The dial (proxy_conn_dial.c) decided nothing new: the policy had decided the
 * name, port, rule and limits before, exactly as without a proxy; it resolved and
 * checked the proxy's address.  Here:
 *	1. a plain TCP connection to the proxy, and in it "CONNECT NAME:PORT
 *	   HTTP/1.1" with "Host: NAME:PORT", NAME the connection's decided name (the
 *	   mapped name the SNI or Host had to equal; for a connection decided on its
 *	   address, that address), plus "Proxy-Authorization: Basic" of the vault
 *	   secret the route names, which must be bound to the proxy's host name;
 *	2. the proxy's answer, parsed by the fuzzed response parser
 *	   (http_connect_reply(), at most PROXY_TUNNEL_REPLY_MAX bytes); bytes
 *	   behind a 2xx head are the tunnel's and stay in the input buffer;
 *	3. on a 2xx the mode takes the tunnel as it would take a connected socket
 *	   (pm_server_bev over it: inspect puts its TLS client on it, so the origin's
 *	   certificate is verified end to end against NAME, as without a proxy).
 * Every failure is the mode's (pm_server_event with pc_dial_why), as a failed
 * connect is: upstream_proxy_unreachable (no TCP connection), _refused (any other
 * answer, none, or a malformed one), _auth (407).  Nothing ever falls back to a
 * direct connection, and the credential goes only into the CONNECT: never into a
 * log line, an audit record or an error (they name the secret and the proxy).
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "log.h"
#include "proxy_http.h"
#include "proxy_keys.h"
#include "proxy_path.h"
#include "proxy_reason.h"

/* The proxy's answer, all its heads; and a credential's length, before base64. */
#define PROXY_TUNNEL_REPLY_MAX	(16 * 1024)
#define PROXY_TUNNEL_AUTH_MAX	1024

/* A failure the mode ends c with (the tunnel's socket is still pc_server). */
static void
proxy_tunnel_fail(struct proxy_conn *c, const char *why, const char *what)
{
	log_info("connection %llu: upstream proxy %s: %s",
	    (unsigned long long)c->pc_id, c->pc_via, what);
	c->pc_dial_why = why;
	c->pc_mode->pm_server_event(c, BEV_EVENT_ERROR);
}

/* The event of the mode's own bufferevent over the tunnel (inspect: TLS). */
static void
proxy_tunnel_mode_event(struct bufferevent *bev, short what, void *arg)
{
	struct proxy_conn *c = arg;

	c->pc_mode->pm_server_event(c, what);
}

/* The tunnel is up: c's mode takes it, as a connected socket of its own. */
static void
proxy_tunnel_up(struct proxy_conn *c)
{
	struct bufferevent *under = c->pc_server, *bev = under;

	c->pc_tunnel = PROXY_TUNNEL_UP;
	bufferevent_setcb(under, NULL, NULL, NULL, NULL);
	if (c->pc_mode->pm_server_bev != NULL &&
	    (bev = c->pc_mode->pm_server_bev(c, under)) == NULL) {
		proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
		return;
	}
	c->pc_server = bev;
	if (bev == under) {
		c->pc_mode->pm_server_event(c, BEV_EVENT_CONNECTED);
		return;
	}
	/* A bufferevent of the mode's over the tunnel: it says when it is up. */
	bufferevent_setcb(bev, NULL, NULL, proxy_tunnel_mode_event, c);
}

static void
proxy_tunnel_read(struct bufferevent *bev, void *arg)
{
	struct proxy_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in), used;
	const uint8_t *buf;
	const char *why;
	char what[96];
	int status;

	if ((buf = evbuffer_pullup(in, (ev_ssize_t)(len < PROXY_TUNNEL_REPLY_MAX ?
	    len : PROXY_TUNNEL_REPLY_MAX))) == NULL) {
		proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
		return;
	}
	switch (http_connect_reply(buf, len, PROXY_TUNNEL_REPLY_MAX, &status, &used,
	    &why)) {
	case HTTP_NEED_MORE:
		return;
	case HTTP_OK:
		break;
	default:
		proxy_fmt(what, sizeof(what), "a malformed answer (%s)", why);
		proxy_tunnel_fail(c, PR_STR(UPSTREAM_PROXY_REFUSED), what);
		return;
	}
	if (status == 407) {
		proxy_tunnel_fail(c, PR_STR(UPSTREAM_PROXY_AUTH),
		    "407: credentials missing or refused");
		return;
	}
	if (status < 200 || status > 299) {
		proxy_fmt(what, sizeof(what), "%d: no tunnel", status);
		proxy_tunnel_fail(c, PR_STR(UPSTREAM_PROXY_REFUSED), what);
		return;
	}
	/* What follows the head is the origin's: it stays for the mode. */
	(void)evbuffer_drain(in, used);
	proxy_tunnel_up(c);
}

static void
proxy_tunnel_event(struct bufferevent *bev, short what, void *arg)
{
	struct proxy_conn *c = arg;

	if (what & BEV_EVENT_CONNECTED) {
		proxy_hist_since(PH_DIAL, c->pc_dial_t0);
		c->pc_tunnel = PROXY_TUNNEL_ASKED;
		return;
	}
	if (c->pc_tunnel == PROXY_TUNNEL_CONNECTING)
		proxy_tunnel_fail(c, PR_STR(UPSTREAM_PROXY_UNREACHABLE),
		    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	else
		proxy_tunnel_fail(c, PR_STR(UPSTREAM_PROXY_REFUSED),
		    "closed without an answer");
}

/*
 * "Proxy-Authorization: Basic ..." of the secret route names into out.  0, or -1
 * with *why: secret_unavailable when the vault in force does not hold it bound to
 * the proxy's name (the policy check at load refuses that too; the vault may have
 * changed since), internal_error.  Nothing of the value is logged.
 */
static int
proxy_tunnel_auth(struct proxy_conn *c, const struct upstream_proxy *route,
    struct http_buf *out, const char **why)
{
	unsigned char b64[4 * ((PROXY_TUNNEL_AUTH_MAX + 2) / 3) + 1];
	const struct proxy_secret *s;
	struct proxy_keys *k;
	int n, rc = -1;

	*why = PR_STR(SECRET_UNAVAILABLE);
	k = proxy_keys_get();
	s = proxy_keys_secret(k, route->up_auth);
	if (s == NULL || route->up_is_addr ||
	    !proxy_secret_allows_host(s, route->up_host)) {
		log_warnx("connection %llu: upstream proxy %s: secret %s is not in "
		    "the vault, or not bound to %s", (unsigned long long)c->pc_id,
		    c->pc_via, route->up_auth, route->up_host);
		goto out;
	}
	if (s->ps_vlen > PROXY_TUNNEL_AUTH_MAX) {
		log_warnx("connection %llu: upstream proxy %s: secret %s is longer "
		    "than %d bytes", (unsigned long long)c->pc_id, c->pc_via,
		    route->up_auth, PROXY_TUNNEL_AUTH_MAX);
		goto out;
	}
	*why = PR_STR(INTERNAL_ERROR);
	n = EVP_EncodeBlock(b64, s->ps_value, (int)s->ps_vlen);
	if (n > 0 && http_buf_add_str(out, "Proxy-Authorization: Basic ") == 0 &&
	    http_buf_add(out, b64, (size_t)n) == 0 &&
	    http_buf_add_str(out, "\r\n") == 0) {
		*why = NULL;
		rc = 0;
	}
	OPENSSL_cleanse(b64, sizeof(b64));
 out:
	proxy_keys_put(k);
	return rc;
}

/* The CONNECT request may hold the credential: wiped before it is freed. */
static void
proxy_tunnel_req_free(struct http_buf *req)
{
	if (req->hb_p != NULL)
		OPENSSL_cleanse(req->hb_p, req->hb_len);
	http_buf_free(req);
}

void
proxy_conn_tunnel(struct proxy_conn *c)
{
	const struct upstream_proxy *route = proxy_upstream_route(c->pc_policy->pp_policy);
	struct http_buf req = HTTP_BUF_INIT;
	struct sockaddr_in sin;
	char target[HOSTNAME_MAX + 16];
	const char *why = PR_STR(INTERNAL_ERROR);
	int one = 1;

	c->pc_state = PC_CONNECT;
	if (c->pc_by_addr)
		proxy_conn_addrport(&c->pc_dst, c->pc_dport, target, sizeof(target));
	else
		proxy_fmt(target, sizeof(target), "%s:%u", c->pc_name, c->pc_dport);
	/* proxy_conn_current() holds the route to pc_via: never NULL here. */
	if (route == NULL || http_buf_add_str(&req, "CONNECT ") == -1 ||
	    http_buf_add_str(&req, target) == -1 ||
	    http_buf_add_str(&req, " HTTP/1.1\r\nHost: ") == -1 ||
	    http_buf_add_str(&req, target) == -1 ||
	    http_buf_add_str(&req, "\r\n") == -1 ||
	    (route->up_auth[0] != '\0' && proxy_tunnel_auth(c, route, &req,
	    &why) == -1) || http_buf_add_str(&req, "\r\n") == -1 ||
	    (c->pc_server = bufferevent_socket_new(c->pc_worker->pw_base, -1,
	    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS)) == NULL ||
	    proxy_evbuffer_add_secret(bufferevent_get_output(c->pc_server), req.hb_p,
	    req.hb_len) == -1) {
		proxy_tunnel_req_free(&req);
		proxy_conn_close(c, why, 1);
		return;
	}
	proxy_tunnel_req_free(&req);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr = c->pc_upstream.na_u.v4;
	sin.sin_port = htons(c->pc_via_port);
	bufferevent_setcb(c->pc_server, proxy_tunnel_read, NULL, proxy_tunnel_event,
	    c);
	bufferevent_enable(c->pc_server, EV_READ | EV_WRITE);
	c->pc_tunnel = PROXY_TUNNEL_CONNECTING;
	c->pc_dial_t0 = proxy_stats_now_us();
	if (bufferevent_socket_connect(c->pc_server, (struct sockaddr *)&sin,
	    sizeof(sin)) == -1) {
		proxy_tunnel_fail(c, PR_STR(UPSTREAM_PROXY_UNREACHABLE),
		    "connect failed");
		return;
	}
	(void)setsockopt(bufferevent_getfd(c->pc_server), IPPROTO_TCP, TCP_NODELAY,
	    &one, sizeof(one));
}
