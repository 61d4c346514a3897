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
 * "origin NAME\n".  One request per connection (Connection: close).
 * Prints "ready" on stdout once listening.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

static SSL *ssl;
static int cfd = -1;

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
	if (ssl != NULL)
		return SSL_read(ssl, buf, (int)len);
	return (int)read(cfd, buf, len);
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

static void
serve_http(const char *name)
{
	char req[8192], hdr[256], chunk[65536];
	size_t have = 0;
	unsigned long long size = 0, left;
	int n, sized = 0;

	while (have < sizeof(req) - 1) {
		if ((n = io_read(req + have, sizeof(req) - 1 - have)) <= 0)
			return;
		have += (size_t)n;
		req[have] = '\0';
		if (strstr(req, "\r\n\r\n") != NULL)
			break;
	}
	if (sscanf(req, "GET /size/%llu", &size) == 1)
		sized = 1;
	if (!sized) {
		snprintf(chunk, sizeof(chunk), "origin %s\n", name);
		size = strlen(chunk);
	}
	snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 OK\r\nContent-Length: %llu\r\n"
	    "Connection: close\r\n\r\n", size);
	if (io_write(hdr, strlen(hdr)) == -1)
		return;
	if (!sized) {
		(void)io_write(chunk, strlen(chunk));
		return;
	}
	memset(chunk, 'x', sizeof(chunk));
	for (left = size; left > 0; ) {
		n = left > sizeof(chunk) ? (int)sizeof(chunk) : (int)left;
		if (io_write(chunk, (size_t)n) == -1)
			return;
		left -= (unsigned long long)n;
	}
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

		if ((cfd = accept(lfd, NULL, NULL)) == -1)
			continue;
		fprintf(stderr, "accept\n");	/* tests count connections */
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
		else
			serve_http(name);
		if (ssl != NULL)
			(void)SSL_shutdown(ssl);
		shutdown(cfd, SHUT_WR);
		_exit(0);
	}
}
