/*
 * tests/tools/holdproxy.c: a one-connection TCP relay that holds a connection in
 * the middle of its first bytes, for the tests of what airlockd decides about a
 * connection that started under one policy and finishes under another.
 *
 *	holdproxy PORT DST_IP DST_PORT N GATE
 *
 * Listens on 127.0.0.1:PORT (in the namespace it runs in) and prints "ready";
 * accepts one connection (a real client: curl, openssl), connects to
 * DST_IP:DST_PORT, relays the client's first N bytes only and prints "held"; then
 * waits until the file GATE exists and relays both ways until either side ends.
 * Gives up after 30 s.  Exit 0 when the relay ran to its end, 1 when the upstream
 * refused or reset, 2 on a usage or setup error.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static time_t deadline;

static int
expired(void)
{
	return time(NULL) > deadline;
}

static int
listen_on(unsigned int port)
{
	struct sockaddr_in sin;
	int fd, one = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 1) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
connect_to(const char *ip, unsigned int port)
{
	struct sockaddr_in sin;
	int fd;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1)
		return -1;
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Copies what is readable on from to to (at most max bytes).  Bytes, 0 EOF, -1. */
static ssize_t
pass(int from, int to, size_t max)
{
	char buf[16384];
	ssize_t n, w, off = 0;

	if (max > sizeof(buf))
		max = sizeof(buf);
	if ((n = read(from, buf, max)) <= 0)
		return n;
	while (off < n) {
		if ((w = write(to, buf + off, (size_t)(n - off))) == -1)
			return -1;
		off += w;
	}
	return n;
}

int
main(int argc, char **argv)
{
	struct pollfd pf[2];
	struct stat st;
	unsigned long left;
	int lfd, cfd, sfd;
	ssize_t n;

	if (argc != 6) {
		fprintf(stderr, "usage: holdproxy PORT DST_IP DST_PORT N GATE\n");
		return 2;
	}
	deadline = time(NULL) + 30;
	left = strtoul(argv[4], NULL, 10);
	if ((lfd = listen_on((unsigned int)atoi(argv[1]))) == -1) {
		perror("holdproxy: listen");
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	if ((cfd = accept(lfd, NULL, NULL)) == -1) {
		perror("holdproxy: accept");
		return 2;
	}
	if ((sfd = connect_to(argv[2], (unsigned int)atoi(argv[3]))) == -1) {
		perror("holdproxy: connect");
		return 1;
	}
	/* The first N bytes of the client, and nothing more. */
	while (left > 0 && !expired()) {
		if ((n = pass(cfd, sfd, left)) <= 0)
			return 1;
		left -= (unsigned long)n;
	}
	printf("held\n");
	fflush(stdout);
	while (stat(argv[5], &st) == -1) {
		if (expired())
			return 1;
		usleep(20000);
	}
	pf[0].fd = cfd;
	pf[1].fd = sfd;
	pf[0].events = pf[1].events = POLLIN;
	while (!expired()) {
		if (poll(pf, 2, 200) == -1) {
			if (errno == EINTR)
				continue;
			return 2;
		}
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			if ((n = pass(cfd, sfd, SIZE_MAX)) == 0)
				return 0;
			if (n == -1)
				return 1;
		}
		if (pf[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			if ((n = pass(sfd, cfd, SIZE_MAX)) == 0)
				return 0;
			if (n == -1)
				return 1;
		}
	}
	return 1;
}
