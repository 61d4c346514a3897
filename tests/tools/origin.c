/*
 * tests/tools/origin.c: a tiny origin server for the proxy's integration tests, run
 * inside the test's "internet" namespace.  One process, a child per connection.
 *
 *	origin tls ADDR PORT CERT KEY NAME	TLS, then HTTP/1.1 (below)
 *	origin http ADDR PORT NAME		plain HTTP/1.1
 *	origin banner ADDR PORT NAME		raw TCP: says "NAME ready\n" first, then
 *						echoes each line back
 *
 * HTTP: "GET /size/N" answers N bytes of 'x'; any other request answers
 * "origin NAME\n".  One request per connection (Connection: close), except under
 * /ka ("/ka", "/ka/size/N"): keep-alive, for request-rate measurements.
 * "/echo..." reflects the request: the answer's body is the request head as received
 * and its Content-Length body (or its chunked body as it came, framing included,
 * up to the last chunk and an empty trailer); "/echo-chunked" sends it chunked in 7-byte chunks (so
 * a value is split across chunks), "/echo-gzip" labels it Content-Encoding: gzip,
 * "/echo-ce2" with two fields, "identity" then "gzip", "/echo-hex" in lower-case hex
 * (an origin that echoes what it got hex-encoded).
 * "GET /ws" answers 101 (websocket) and then echoes raw bytes, like banner.
 * "GET /reflect/reason/TEXT" answers with TEXT as its reason phrase,
 * "GET /reflect/field/TEXT" with a field named TEXT (TEXT: up to 200 bytes of the
 * path): an origin that puts what it was sent where no value is scanned.
 * "/smuggle-cl", "/smuggle-chunked", "/smuggle-204" (GET or HEAD) answer "first\n"
 * (Content-Length, chunked, or a 204 without body) and, in the same write, a
 * second, unasked-for response with the body "SMUGGLED\n"; then keep-alive.
 * "/conn..." (any method; a Content-Length body is read and dropped) are for the
 * upstream connection pool: keep-alive, the body "origin NAME conn N req M\n", N
 * the origin's count of TCP connections (from 1) and M the request's on that
 * connection, so a test sees which connection served it.  "/conn-echo" answers
 * "conn N req M\n" and then the request head as received.  Origins that mean it
 * less: "/conn-close" says Connection: close and "/conn-http10" answers HTTP/1.0
 * without keep-alive, and both go on serving the connection anyway (a proxy must
 * not take them at their word's opposite); "/conn-stall" declares 1000000 bytes,
 * sends 1000 and waits for the peer to go; after "/conn-drop-next" the next
 * request on that connection is read and the connection closed unanswered
 * ("dropped METHOD" on stderr); after "/conn-idle-close" the connection closes
 * once the file $ORIGIN_CLOSE_FLAG exists (while idle; a request first is served).
 * Malformed answers: "/bad-clte" has both Content-Length and Transfer-Encoding,
 * "/bad-chunk" a chunk size that is no hex, "/bad-extra" a Content-Length body
 * followed by bytes nobody asked for (all keep-alive).
 * Prints "ready" on stdout once listening.
 *
 * With $ORIGIN_PEERS set, each "accept" line names the peer: "accept ADDR" (so a
 * test can tell who connected: a proxy, or airlockd directly).
 * With $ORIGIN_RECORD set, every byte a connection receives (after TLS: the HTTP
 * bytes) is appended to that file, so a test can prove what reached the origin.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

static SSL *ssl;
static int cfd = -1;
static int recfd = -1;
static unsigned long conn_no;	/* this connection's number (from 1) */
static unsigned long req_no;	/* requests on it so far */
static int drop_next;		/* /conn-drop-next: drop the next request */

/* SIGTERM to the listener ends its connection children too (its own group). */
static void
on_term(int sig)
{
	signal(SIGTERM, SIG_DFL);
	kill(0, SIGTERM);
	_exit(0);
}

static int
io_read(void *buf, size_t len)
{
	int n;

	if (ssl != NULL)
		n = SSL_read(ssl, buf, (int)len);
	else
		n = (int)read(cfd, buf, len);
	if (n > 0 && recfd != -1 && write(recfd, buf, (size_t)n) != n)
		perror("origin: record");
	return n;
}

static int
io_write(const void *buf, size_t len)
{
	const char *p = buf;
	int n;

	while (len > 0) {
		n = ssl != NULL ? SSL_write(ssl, p, (int)len) :
		    (int)write(cfd, p, len);
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reflects the request (head, and a Content-Length body) back.  0: close. */
static int
serve_echo(char *req, size_t headlen, size_t *have, size_t reqlen)
{
	char hdr[256], *cl, *body = NULL;
	unsigned long long blen = 0;
	size_t got, total, off, k;
	int n, chunked, gzip, hex, te;

	chunked = strncmp(strchr(req, '/'), "/echo-chunked", 13) == 0;
	gzip = strncmp(strchr(req, '/'), "/echo-gzip", 10) == 0 ? 1 :
	    strncmp(strchr(req, '/'), "/echo-ce2", 9) == 0 ? 2 : 0;
	hex = strncmp(strchr(req, '/'), "/echo-hex", 9) == 0;
	req[headlen - 2] = '\0';
	if ((cl = strcasestr(req, "\r\ncontent-length:")) != NULL)
		blen = strtoull(cl + 17, NULL, 10);
	te = strcasestr(req, "\r\ntransfer-encoding: chunked") != NULL;
	req[headlen - 2] = '\r';
	if (te) {
		/* Until "0\r\n\r\n" ends it (a test tool: no extensions, trailers). */
		char *end;

		for (;;) {
			req[*have] = '\0';
			if (*have >= headlen + 3 && (strncmp(req + headlen, "0\r\n\r\n",
			    5) == 0 || (end = strstr(req + headlen, "\r\n0\r\n\r\n")) !=
			    NULL)) {
				blen = strncmp(req + headlen, "0\r\n\r\n", 5) == 0 ? 5 :
				    (size_t)(end - (req + headlen)) + 7;
				break;
			}
			if (*have >= reqlen - 1 || (n = io_read(req + *have,
			    reqlen - 1 - *have)) <= 0)
				return 0;
			*have += (size_t)n;
		}
	}
	if (blen > 1024 * 1024)
		return 0;
	total = headlen + (size_t)blen;
	if ((body = malloc(total + 1)) == NULL)
		return 0;
	memcpy(body, req, *have < total ? *have : total);
	got = *have < total ? *have : total;
	while (got < total) {
		if ((n = io_read(body + got, total - got)) <= 0) {
			free(body);
			return 0;
		}
		got += (size_t)n;
	}
	*have = 0;
	(void)reqlen;
	if (hex) {
		snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 OK\r\nContent-Length: %zu"
		    "\r\nConnection: close\r\n\r\n", 2 * total);
		if (io_write(hdr, strlen(hdr)) == -1)
			goto out;
		for (off = 0; off < total; off++) {
			snprintf(hdr, sizeof(hdr), "%02x", (unsigned char)body[off]);
			if (io_write(hdr, 2) == -1)
				goto out;
		}
		goto out;
	}
	if (chunked) {
		snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
		    "chunked\r\nX-Echo: %.100s\r\nConnection: close\r\n\r\n",
		    cl != NULL ? "with-body" : "head-only");
		if (io_write(hdr, strlen(hdr)) == -1)
			goto out;
		for (off = 0; off < total; off += k) {
			k = total - off < 7 ? total - off : 7;
			snprintf(hdr, sizeof(hdr), "%zx\r\n", k);
			if (io_write(hdr, strlen(hdr)) == -1 ||
			    io_write(body + off, k) == -1 || io_write("\r\n", 2) == -1)
				goto out;
		}
		(void)io_write("0\r\n\r\n", 5);
	} else {
		snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 OK\r\nContent-Length: %zu"
		    "\r\n%sConnection: close\r\n\r\n", total, gzip == 1 ?
		    "Content-Encoding: gzip\r\n" : gzip == 2 ? "Content-Encoding: "
		    "identity\r\nContent-Encoding: gzip\r\n" : "");
		if (io_write(hdr, strlen(hdr)) == 0)
			(void)io_write(body, total);
	}
 out:
	free(body);
	return 0;
}

/* /reflect/reason/TEXT and /reflect/field/TEXT (see the top).  0: close. */
static int
serve_reflect(const char *req)
{
	char text[201], hdr[512];
	const char *p = req + 13, *e;
	int field;

	field = strncmp(p, "field/", 6) == 0;
	if (!field && strncmp(p, "reason/", 7) != 0)
		return 0;
	p += field ? 6 : 7;
	if ((e = strchr(p, ' ')) == NULL || e - p > 200 || e == p)
		return 0;
	memcpy(text, p, (size_t)(e - p));
	text[e - p] = '\0';
	if (field)
		snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 OK\r\n%s: 1\r\n"
		    "Content-Length: 3\r\nConnection: close\r\n\r\nok\n", text);
	else
		snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 %s\r\n"
		    "Content-Length: 3\r\nConnection: close\r\n\r\nok\n", text);
	(void)io_write(hdr, strlen(hdr));
	return 0;
}

/* The response smuggler (see the top).  Always 1: keep the connection. */
static int
serve_smuggle(const char *path, char *req, size_t used, size_t *have)
{
	static const char smug[] = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n"
	    "Connection: keep-alive\r\n\r\nSMUGGLED\n";
	char out[512];
	const char *first;

	if (strncmp(path, "/smuggle-chunked", 16) == 0)
		first = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "6\r\nfirst\n\r\n0\r\n\r\n";
	else if (strncmp(path, "/smuggle-204", 12) == 0)
		first = "HTTP/1.1 204 No Content\r\n\r\n";
	else		/* for HEAD too: then every byte after the head is extra */
		first = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nfirst\n";
	memmove(req, req + used, *have - used);
	*have -= used;
	/* One write, so the proxy gets both responses in one read. */
	snprintf(out, sizeof(out), "%s%s", first, smug);
	return io_write(out, strlen(out)) == 0;
}

/* Reads and drops the Content-Length body of the head req[used]; 0, or -1. */
static int
drain_body(char *req, size_t used, size_t *have)
{
	char buf[4096], *cl;
	unsigned long long left = 0;
	size_t take;
	int n;

	req[used - 2] = '\0';
	if ((cl = strcasestr(req, "\r\ncontent-length:")) != NULL)
		left = strtoull(cl + 17, NULL, 10);
	req[used - 2] = '\r';
	take = *have - used < left ? *have - used : (size_t)left;
	memmove(req + used, req + used + take, *have - used - take);
	*have -= take;
	left -= take;
	while (left > 0) {
		if ((n = io_read(buf, left < sizeof(buf) ? (size_t)left :
		    sizeof(buf))) <= 0)
			return -1;
		left -= (unsigned long long)n;
	}
	return 0;
}

/* Waits until the peer sends something (1), goes (0), or $ORIGIN_CLOSE_FLAG is there (0). */
static int
wait_idle_close(void)
{
	const char *flag = getenv("ORIGIN_CLOSE_FLAG");
	struct pollfd pfd = { cfd, POLLIN, 0 };
	int i;

	for (i = 0; i < 600; i++) {	/* a minute at most */
		if (flag != NULL && access(flag, F_OK) == 0)
			return 0;
		if ((ssl != NULL && SSL_pending(ssl) > 0) || poll(&pfd, 1, 100) > 0)
			return 1;
	}
	return 0;
}

/* The /conn paths (see the top).  1: serve another request, 0: close. */
static int
serve_conn(const char *name, char *req, size_t used, size_t *have)
{
	char hdr[256], body[8192 + 64], line[64];
	const char *path = strchr(req, ' ') + 1;
	size_t blen;
	int echo, stall;

	req_no++;
	snprintf(line, sizeof(line), "conn %lu req %lu\n", conn_no, req_no);
	echo = strncmp(path, "/conn-echo", 10) == 0;
	stall = strncmp(path, "/conn-stall", 11) == 0;
	if (echo)
		blen = (size_t)snprintf(body, sizeof(body), "%s%.*s", line,
		    (int)used, req);
	else
		blen = (size_t)snprintf(body, sizeof(body), "origin %s %s", name,
		    line);
	if (blen >= sizeof(body))
		blen = sizeof(body) - 1;
	if (drain_body(req, used, have) == -1)
		return 0;
	memmove(req, req + used, *have - used);
	*have -= used;
	if (stall) {
		snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 OK\r\nContent-Length: "
		    "1000000\r\n\r\n");
		memset(body, 'x', 1000);
		if (io_write(hdr, strlen(hdr)) == 0 && io_write(body, 1000) == 0)
			while (io_read(body, sizeof(body)) > 0)
				;
		return 0;
	}
	if (strncmp(path, "/conn-close", 11) == 0)
		snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 OK\r\nContent-Length: %zu"
		    "\r\nConnection: close\r\n\r\n", blen);
	else if (strncmp(path, "/conn-http10", 12) == 0)
		snprintf(hdr, sizeof(hdr), "HTTP/1.0 200 OK\r\nContent-Length: %zu"
		    "\r\n\r\n", blen);
	else
		snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 OK\r\nContent-Length: %zu"
		    "\r\n\r\n", blen);
	if (io_write(hdr, strlen(hdr)) == -1 || io_write(body, blen) == -1)
		return 0;
	if (strncmp(path, "/conn-drop-next", 15) == 0)
		drop_next = 1;
	if (strncmp(path, "/conn-idle-close", 16) == 0 && *have == 0)
		return wait_idle_close();
	return 1;
}

/*
 * One request from req[*have] (bytes of a next request stay there).  Returns 1 to
 * serve another on the same connection (a path under /ka: keep-alive, for request
 * rate measurements), 0 to close.
 */
static int
serve_http(const char *name, char *req, size_t reqlen, size_t *have)
{
	char hdr[256], chunk[65536], *end;
	unsigned long long size = 0, left;
	size_t used;
	int n, sized = 0, ka;

	req[*have] = '\0';
	while ((end = strstr(req, "\r\n\r\n")) == NULL) {
		if (*have >= reqlen - 1 ||
		    (n = io_read(req + *have, reqlen - 1 - *have)) <= 0)
			return 0;
		*have += (size_t)n;
		req[*have] = '\0';
	}
	used = (size_t)(end + 4 - req);
	if (drop_next) {
		fprintf(stderr, "dropped %.*s\n", (int)strcspn(req, " "), req);
		return 0;
	}
	if (strchr(req, ' ') != NULL &&
	    strncmp(strchr(req, ' ') + 1, "/conn", 5) == 0)
		return serve_conn(name, req, used, have);
	if (strchr(req, '/') != NULL && strncmp(strchr(req, '/'), "/echo", 5) == 0)
		return serve_echo(req, used, have, reqlen);
	if (strncmp(req, "GET /reflect/", 13) == 0)
		return serve_reflect(req);
	if (strncmp(req, "GET /bad-", 9) == 0) {
		const char *bad = strncmp(req, "GET /bad-clte", 13) == 0 ?
		    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: "
		    "chunked\r\n\r\n0\r\n\r\n" :
		    strncmp(req, "GET /bad-chunk", 14) == 0 ?
		    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "5\r\nfirst\r\nzz\r\nnot a chunk\r\n" :
		    "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nfirst\n"
		    "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nSMUGGLED\n";

		memmove(req, req + used, *have - used);
		*have -= used;
		return io_write(bad, strlen(bad)) == 0;
	}
	if (strchr(req, ' ') != NULL &&
	    strncmp(strchr(req, ' ') + 1, "/smuggle", 8) == 0)
		return serve_smuggle(strchr(req, ' ') + 1, req, used, have);
	if (strncmp(req, "GET /ws ", 8) == 0) {
		static const char sw[] = "HTTP/1.1 101 Switching Protocols\r\n"
		    "Upgrade: websocket\r\nConnection: Upgrade\r\n"
		    "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";

		if (io_write(sw, sizeof(sw) - 1) == -1 ||
		    (*have > used && io_write(req + used, *have - used) == -1))
			return 0;
		while ((n = io_read(chunk, sizeof(chunk))) > 0)
			if (io_write(chunk, (size_t)n) == -1)
				break;
		return 0;
	}
	ka = strncmp(req, "GET /ka", 7) == 0;
	if (sscanf(req, "GET /size/%llu", &size) == 1 ||
	    sscanf(req, "GET /ka/size/%llu", &size) == 1)
		sized = 1;
	memmove(req, req + used, *have - used);
	*have -= used;
	if (!sized) {
		snprintf(chunk, sizeof(chunk), "origin %s\n", name);
		size = strlen(chunk);
	}
	snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 OK\r\nContent-Length: %llu\r\n"
	    "Connection: %s\r\n\r\n", size, ka ? "keep-alive" : "close");
	if (io_write(hdr, strlen(hdr)) == -1)
		return 0;
	if (!sized)
		return io_write(chunk, strlen(chunk)) == 0 && ka;
	memset(chunk, 'x', sizeof(chunk));
	for (left = size; left > 0; ) {
		n = left > sizeof(chunk) ? (int)sizeof(chunk) : (int)left;
		if (io_write(chunk, (size_t)n) == -1)
			return 0;
		left -= (unsigned long long)n;
	}
	return ka;
}

static void
serve_banner(const char *name)
{
	char buf[4096];
	int n;

	snprintf(buf, sizeof(buf), "%s ready\n", name);
	if (io_write(buf, strlen(buf)) == -1)
		return;
	while ((n = io_read(buf, sizeof(buf))) > 0)
		if (io_write(buf, (size_t)n) == -1)
			return;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in sin;
	SSL_CTX *ctx = NULL;
	const char *mode, *name;
	int lfd, one = 1;

	if (argc < 5) {
		fprintf(stderr, "usage: origin tls|http|banner ADDR PORT "
		    "[CERT KEY] NAME\n");
		return 2;
	}
	mode = argv[1];
	if (strcmp(mode, "tls") == 0) {
		if (argc != 7)
			return 2;
		name = argv[6];
		if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL ||
		    SSL_CTX_use_certificate_chain_file(ctx, argv[4]) != 1 ||
		    SSL_CTX_use_PrivateKey_file(ctx, argv[5], SSL_FILETYPE_PEM) != 1) {
			ERR_print_errors_fp(stderr);
			return 1;
		}
	} else
		name = argv[4];
	if (setpgid(0, 0) == -1)
		perror("origin: setpgid");
	if (getenv("ORIGIN_RECORD") != NULL && (recfd = open(getenv("ORIGIN_RECORD"),
	    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) == -1) {
		perror("origin: ORIGIN_RECORD");
		return 1;
	}
	signal(SIGTERM, on_term);
	signal(SIGCHLD, SIG_IGN);	/* no zombies */
	signal(SIGPIPE, SIG_IGN);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((unsigned short)atoi(argv[3]));
	if (inet_pton(AF_INET, argv[2], &sin.sin_addr) != 1)
		return 2;
	if ((lfd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(lfd, 128) == -1) {
		perror("origin: listen");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		pid_t pid;

		struct sockaddr_in peer;
		socklen_t plen = sizeof(peer);
		char pbuf[INET_ADDRSTRLEN];

		if ((cfd = accept(lfd, (struct sockaddr *)&peer, &plen)) == -1)
			continue;
		conn_no++;
		/* tests count connections */
		if (getenv("ORIGIN_PEERS") != NULL &&
		    inet_ntop(AF_INET, &peer.sin_addr, pbuf, sizeof(pbuf)) != NULL)
			fprintf(stderr, "accept %s\n", pbuf);
		else
			fprintf(stderr, "accept\n");
		/* Header and body go out in separate writes: no delayed-ACK stall. */
		(void)setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if ((pid = fork()) == -1) {
			close(cfd);
			continue;
		}
		if (pid > 0) {
			close(cfd);
			continue;
		}
		signal(SIGTERM, SIG_DFL);
		close(lfd);
		if (ctx != NULL) {
			if ((ssl = SSL_new(ctx)) == NULL || SSL_set_fd(ssl, cfd) != 1 ||
			    SSL_accept(ssl) != 1)
				_exit(1);
		}
		if (strcmp(mode, "banner") == 0)
			serve_banner(name);
		else {
			char req[8192];
			size_t have = 0;

			while (serve_http(name, req, sizeof(req), &have))
				;
		}
		if (ssl != NULL)
			(void)SSL_shutdown(ssl);
		shutdown(cfd, SHUT_WR);
		_exit(0);
	}
}
