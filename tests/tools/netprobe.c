/*
 * tests/tools/netprobe.c: the listeners and probes of the netctl namespace tests, in C
 * so that CI needs no python, nc or ping.
 *
 *	netprobe listen-tcp PORT	accepts forever; per connection prints
 *					"tcp ORIGDST_IP:PORT from SRC_IP" (SO_ORIGINAL_DST)
 *	netprobe listen-tcp6 PORT	the same on IPv6 (no SO_ORIGINAL_DST): "tcp6 from SRC"
 *	netprobe listen-udp PORT	per datagram prints "udp from SRC_IP", echoes it
 *	netprobe tcp ADDR PORT [SRC]	exit 0 if a connection is made within 2 s
 *	netprobe udp ADDR PORT [SRC]	exit 0 if a reply arrives within 2 s
 *	netprobe ping ADDR		exit 0 if an ICMP echo reply arrives within 2 s
 *	netprobe stream ADDR PORT N MS	N times, every MS ms: one UDP datagram and one
 *					TCP SYN (a non-blocking connect, never waited
 *					for) to ADDR:PORT; prints "sent N"
 *
 * Exit 1 means "no" (timeout, refused), 2 a usage or setup error.
 */
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <linux/netfilter_ipv4.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
addr_parse(const char *s, uint16_t port, struct sockaddr_storage *ss,
    socklen_t *len)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		*len = sizeof(*sin);
		return 0;
	}
	if (inet_pton(AF_INET6, s, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		*len = sizeof(*sin6);
		return 0;
	}
	return -1;
}

static int
listen_tcp(uint16_t port)
{
	struct sockaddr_in sin, orig, peer;
	socklen_t len;
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
	int fd, c, one = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return 2;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 64) == -1) {
		perror("netprobe: listen");
		return 2;
	}
	printf("listening tcp %u\n", port);
	fflush(stdout);
	for (;;) {
		len = sizeof(peer);
		if ((c = accept(fd, (struct sockaddr *)&peer, &len)) == -1)
			continue;
		len = sizeof(orig);
		if (getsockopt(c, SOL_IP, SO_ORIGINAL_DST, &orig, &len) == -1)
			printf("tcp (no original destination) from %s\n",
			    inet_ntop(AF_INET, &peer.sin_addr, b, sizeof(b)));
		else
			printf("tcp %s:%u from %s\n",
			    inet_ntop(AF_INET, &orig.sin_addr, a, sizeof(a)),
			    ntohs(orig.sin_port),
			    inet_ntop(AF_INET, &peer.sin_addr, b, sizeof(b)));
		fflush(stdout);
		close(c);
	}
}

static int
listen_tcp6(uint16_t port)
{
	struct sockaddr_in6 sin6, peer;
	socklen_t len;
	char b[INET6_ADDRSTRLEN];
	int fd, c, one = 1;

	if ((fd = socket(AF_INET6, SOCK_STREAM, 0)) == -1)
		return 2;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	sin6.sin6_port = htons(port);
	if (bind(fd, (struct sockaddr *)&sin6, sizeof(sin6)) == -1 ||
	    listen(fd, 64) == -1) {
		perror("netprobe: listen");
		return 2;
	}
	printf("listening tcp6 %u\n", port);
	fflush(stdout);
	for (;;) {
		len = sizeof(peer);
		if ((c = accept(fd, (struct sockaddr *)&peer, &len)) == -1)
			continue;
		printf("tcp6 from %s\n", inet_ntop(AF_INET6, &peer.sin6_addr, b,
		    sizeof(b)));
		fflush(stdout);
		close(c);
	}
}

static int
listen_udp(uint16_t port)
{
	struct sockaddr_in sin, peer;
	socklen_t len;
	char buf[2048], b[INET_ADDRSTRLEN];
	ssize_t n;
	int fd;

	if ((fd = socket(AF_INET, SOCK_DGRAM, 0)) == -1)
		return 2;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		perror("netprobe: bind");
		return 2;
	}
	printf("listening udp %u\n", port);
	fflush(stdout);
	for (;;) {
		len = sizeof(peer);
		n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&peer,
		    &len);
		if (n == -1)
			continue;
		printf("udp from %s\n", inet_ntop(AF_INET, &peer.sin_addr, b,
		    sizeof(b)));
		fflush(stdout);
		(void)sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&peer, len);
	}
}

static int
bind_src(int fd, int family, const char *src)
{
	struct sockaddr_storage ss;
	socklen_t len;

	if (src == NULL)
		return 0;
	if (addr_parse(src, 0, &ss, &len) == -1 || ss.ss_family != family)
		return -1;
	return bind(fd, (struct sockaddr *)&ss, len);
}

static int
probe_tcp(const char *addr, uint16_t port, const char *src)
{
	struct sockaddr_storage ss;
	struct pollfd pfd;
	socklen_t len;
	int fd, err = 0;

	if (addr_parse(addr, port, &ss, &len) == -1)
		return 2;
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0)) == -1 ||
	    bind_src(fd, ss.ss_family, src) == -1)
		return 2;
	if (connect(fd, (struct sockaddr *)&ss, len) == -1 &&
	    errno != EINPROGRESS)
		return 1;
	pfd.fd = fd;
	pfd.events = POLLOUT;
	if (poll(&pfd, 1, 2000) != 1)
		return 1;
	len = sizeof(err);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1 || err != 0)
		return 1;
	close(fd);
	return 0;
}

static int
probe_udp(const char *addr, uint16_t port, const char *src)
{
	struct sockaddr_storage ss;
	struct timeval tv = { 2, 0 };
	socklen_t len;
	char buf[64];
	int fd;

	if (addr_parse(addr, port, &ss, &len) == -1)
		return 2;
	if ((fd = socket(ss.ss_family, SOCK_DGRAM, 0)) == -1 ||
	    bind_src(fd, ss.ss_family, src) == -1)
		return 2;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(fd, "probe", 5, 0, (struct sockaddr *)&ss, len) == -1)
		return 1;
	return recv(fd, buf, sizeof(buf), 0) > 0 ? 0 : 1;
}

static uint16_t
icmp_sum(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t s = 0;
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (n & 1)
		s += (uint32_t)b[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return htons((uint16_t)~s);
}

static int
probe_ping(const char *addr)
{
	struct sockaddr_storage ss;
	struct icmphdr h;
	struct pollfd pfd;
	socklen_t len;
	uint8_t buf[1500];
	ssize_t n;
	int fd, tries;

	if (addr_parse(addr, 0, &ss, &len) == -1 || ss.ss_family != AF_INET)
		return 2;
	if ((fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP)) == -1)
		return 2;
	memset(&h, 0, sizeof(h));
	h.type = ICMP_ECHO;
	h.un.echo.id = htons((uint16_t)getpid());
	h.un.echo.sequence = htons(1);
	h.checksum = icmp_sum(&h, sizeof(h));
	if (sendto(fd, &h, sizeof(h), 0, (struct sockaddr *)&ss, len) == -1)
		return 1;
	pfd.fd = fd;
	pfd.events = POLLIN;
	for (tries = 0; tries < 20; tries++) {
		if (poll(&pfd, 1, 2000) != 1)
			return 1;
		if ((n = recv(fd, buf, sizeof(buf), 0)) < 28)
			continue;
		/* IPv4 header (ihl words), then the ICMP header. */
		if (buf[((buf[0] & 0xf) * 4)] == ICMP_ECHOREPLY)
			return 0;
	}
	return 1;
}

static int
probe_stream(const char *addr, uint16_t port, int count, int ms)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int *tcp, udp, i, sent = 0;

	if (addr_parse(addr, port, &ss, &len) == -1 || count <= 0 ||
	    count > 10000 || ms < 0)
		return 2;
	if ((tcp = calloc((size_t)count, sizeof(*tcp))) == NULL ||
	    (udp = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK, 0)) == -1)
		return 2;
	for (i = 0; i < count; i++) {
		/* Kept open to the end: a close could cut the SYN's retries short. */
		tcp[i] = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (tcp[i] != -1)
			(void)connect(tcp[i], (struct sockaddr *)&ss, len);
		(void)sendto(udp, "stream", 6, 0, (struct sockaddr *)&ss, len);
		sent++;
		poll(NULL, 0, ms);
	}
	for (i = 0; i < count; i++)
		if (tcp[i] != -1)
			close(tcp[i]);
	free(tcp);
	close(udp);
	printf("sent %d\n", sent);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "listen-tcp") == 0)
		return listen_tcp((uint16_t)atoi(argv[2]));
	if (argc == 3 && strcmp(argv[1], "listen-tcp6") == 0)
		return listen_tcp6((uint16_t)atoi(argv[2]));
	if (argc == 3 && strcmp(argv[1], "listen-udp") == 0)
		return listen_udp((uint16_t)atoi(argv[2]));
	if ((argc == 4 || argc == 5) && strcmp(argv[1], "tcp") == 0)
		return probe_tcp(argv[2], (uint16_t)atoi(argv[3]),
		    argc == 5 ? argv[4] : NULL);
	if ((argc == 4 || argc == 5) && strcmp(argv[1], "udp") == 0)
		return probe_udp(argv[2], (uint16_t)atoi(argv[3]),
		    argc == 5 ? argv[4] : NULL);
	if (argc == 3 && strcmp(argv[1], "ping") == 0)
		return probe_ping(argv[2]);
	if (argc == 6 && strcmp(argv[1], "stream") == 0)
		return probe_stream(argv[2], (uint16_t)atoi(argv[3]),
		    atoi(argv[4]), atoi(argv[5]));
	fprintf(stderr, "usage: netprobe listen-tcp PORT | listen-udp PORT | "
	    "tcp ADDR PORT [SRC] | udp ADDR PORT [SRC] | ping ADDR | "
	    "stream ADDR PORT N MS\n");
	return 2;
}
