/*
 * bench/idleconn.c: holds many idle TLS connections open, to measure what one idle
 * connection costs the proxy they pass through (bench/run.sh, the "idle" run).
 *
 *	idleconn ADDR PORT SNI COUNT [PARALLEL [HOLD]]
 *
 * Opens COUNT TCP connections to ADDR:PORT (an IPv4 literal), at most PARALLEL of
 * them connecting or handshaking at a time, and completes a TLS handshake on each
 * with server name SNI.  The certificate is not verified: what is measured is the
 * proxy's memory, not the origin.  Once a handshake is done the TLS state is freed
 * and only the socket is kept, so the connection stays open and silent on both ends
 * (the proxy holds a live, idle, spliced connection; this tool holds a bare fd).
 *
 * Prints "ready OK FAILED" on stdout once every connection is either up or has
 * failed (or after 120 s), then holds them for HOLD seconds (default 120) or until
 * it is killed.  Exit 0 if at least one connection was made, 1 otherwise.
 */
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#define IDLE_SETUP_SECONDS	120
#define IDLE_ERRORS_SHOWN	5

enum idle_state {
	IDLE_NONE = 0,		/* not started */
	IDLE_CONNECTING,	/* TCP connect outstanding */
	IDLE_HANDSHAKE,		/* TLS handshake outstanding */
	IDLE_UP,		/* handshake done, TLS state freed, fd kept */
	IDLE_FAILED,
};

struct idle_conn {
	int		 ic_fd;
	SSL		*ic_ssl;	/* owned while handshaking */
	enum idle_state	 ic_state;
};

struct idle_run {
	SSL_CTX			*ir_ctx;
	int			 ir_ep;
	struct sockaddr_in	 ir_sin;
	const char		*ir_sni;
	struct idle_conn	*ir_conns;
	size_t			 ir_count;
	size_t			 ir_next;	/* next connection to start */
	size_t			 ir_busy;	/* connecting or handshaking */
	size_t			 ir_up;
	size_t			 ir_failed;
};

static void
idle_conn_fail(struct idle_run *r, struct idle_conn *ic, const char *what)
{
	unsigned long e;

	if (r->ir_failed < IDLE_ERRORS_SHOWN) {
		e = ERR_peek_last_error();
		fprintf(stderr, "idleconn: connection %zu: %s%s%s\n",
		    (size_t)(ic - r->ir_conns), what, e != 0 ? ": " : "",
		    e != 0 ? ERR_reason_error_string(e) : "");
	}
	ERR_clear_error();
	SSL_free(ic->ic_ssl);
	ic->ic_ssl = NULL;
	if (ic->ic_fd != -1)
		(void)close(ic->ic_fd);	/* also drops it from the epoll set */
	ic->ic_fd = -1;
	ic->ic_state = IDLE_FAILED;
	r->ir_busy--;
	r->ir_failed++;
}

/* Waits for what the handshake wants next, or finishes the connection. */
static void
idle_conn_handshake(struct idle_run *r, struct idle_conn *ic)
{
	struct epoll_event ev;
	int rv, err;

	if ((rv = SSL_do_handshake(ic->ic_ssl)) == 1) {
		/* Up: keep the socket only (SSL_set_fd leaves the fd open). */
		SSL_free(ic->ic_ssl);
		ic->ic_ssl = NULL;
		if (epoll_ctl(r->ir_ep, EPOLL_CTL_DEL, ic->ic_fd, NULL) == -1) {
			idle_conn_fail(r, ic, "epoll_ctl del");
			return;
		}
		ic->ic_state = IDLE_UP;
		r->ir_busy--;
		r->ir_up++;
		return;
	}
	err = SSL_get_error(ic->ic_ssl, rv);
	memset(&ev, 0, sizeof(ev));
	ev.data.u64 = (uint64_t)(ic - r->ir_conns);
	if (err == SSL_ERROR_WANT_READ)
		ev.events = EPOLLIN;
	else if (err == SSL_ERROR_WANT_WRITE)
		ev.events = EPOLLOUT;
	else {
		idle_conn_fail(r, ic, "TLS handshake");
		return;
	}
	if (epoll_ctl(r->ir_ep, EPOLL_CTL_MOD, ic->ic_fd, &ev) == -1)
		idle_conn_fail(r, ic, "epoll_ctl mod");
}

/* The TCP connect finished (or failed): start TLS. */
static void
idle_conn_connected(struct idle_run *r, struct idle_conn *ic)
{
	int soerr = 0;
	socklen_t len = sizeof(soerr);

	if (getsockopt(ic->ic_fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == -1 ||
	    soerr != 0) {
		errno = soerr;
		idle_conn_fail(r, ic, soerr != 0 ? strerror(soerr) : "SO_ERROR");
		return;
	}
	if ((ic->ic_ssl = SSL_new(r->ir_ctx)) == NULL ||
	    SSL_set_fd(ic->ic_ssl, ic->ic_fd) != 1 ||
	    SSL_set_tlsext_host_name(ic->ic_ssl, r->ir_sni) != 1) {
		idle_conn_fail(r, ic, "SSL_new");
		return;
	}
	SSL_set_connect_state(ic->ic_ssl);
	ic->ic_state = IDLE_HANDSHAKE;
	idle_conn_handshake(r, ic);
}

static void
idle_conn_start(struct idle_run *r, struct idle_conn *ic)
{
	struct epoll_event ev;

	r->ir_busy++;
	ic->ic_state = IDLE_CONNECTING;
	ic->ic_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ic->ic_fd == -1) {
		idle_conn_fail(r, ic, strerror(errno));
		return;
	}
	if (connect(ic->ic_fd, (struct sockaddr *)&r->ir_sin,
	    sizeof(r->ir_sin)) == -1 && errno != EINPROGRESS) {
		idle_conn_fail(r, ic, strerror(errno));
		return;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLOUT;
	ev.data.u64 = (uint64_t)(ic - r->ir_conns);
	if (epoll_ctl(r->ir_ep, EPOLL_CTL_ADD, ic->ic_fd, &ev) == -1)
		idle_conn_fail(r, ic, "epoll_ctl add");
}

static long
idle_arg_num(const char *s, long min, long max, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "idleconn: bad %s: %s\n", what, s);
		exit(2);
	}
	return v;
}

/* Raises the soft limit on open files to the hard one; COUNT needs that many. */
static int
idle_nofile_raise(size_t need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return -1;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
		return -1;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need + 16) {
		fprintf(stderr, "idleconn: RLIMIT_NOFILE %llu is below %zu\n",
		    (unsigned long long)rl.rlim_cur, need + 16);
		return -1;
	}
	return 0;
}

int
main(int argc, char *argv[])
{
	struct idle_run r;
	struct epoll_event evs[256];
	struct timespec t0, now;
	long parallel = 64, hold = 120;
	int i, n;

	if (argc < 5 || argc > 7) {
		fprintf(stderr, "usage: idleconn ADDR PORT SNI COUNT "
		    "[PARALLEL [HOLD]]\n");
		return 2;
	}
	memset(&r, 0, sizeof(r));
	r.ir_ep = -1;
	r.ir_sin.sin_family = AF_INET;
	if (inet_pton(AF_INET, argv[1], &r.ir_sin.sin_addr) != 1) {
		fprintf(stderr, "idleconn: not an IPv4 address: %s\n", argv[1]);
		return 2;
	}
	r.ir_sin.sin_port = htons((uint16_t)idle_arg_num(argv[2], 1, 65535,
	    "port"));
	r.ir_sni = argv[3];
	r.ir_count = (size_t)idle_arg_num(argv[4], 1, 1000000, "count");
	if (argc > 5)
		parallel = idle_arg_num(argv[5], 1, 10000, "parallel");
	if (argc > 6)
		hold = idle_arg_num(argv[6], 0, 86400, "hold");
	if (idle_nofile_raise(r.ir_count) == -1) {
		perror("idleconn: RLIMIT_NOFILE");
		return 1;
	}
	if ((r.ir_conns = calloc(r.ir_count, sizeof(*r.ir_conns))) == NULL) {
		perror("idleconn: calloc");
		return 1;
	}
	for (size_t k = 0; k < r.ir_count; k++)
		r.ir_conns[k].ic_fd = -1;
	if ((r.ir_ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		fprintf(stderr, "idleconn: SSL_CTX_new failed\n");
		return 1;
	}
	/* Measure full handshakes: no session cache on this side. */
	SSL_CTX_set_session_cache_mode(r.ir_ctx, SSL_SESS_CACHE_OFF);
	/*
	 * The load client only holds connections open to measure airlockd's memory;
	 * it sends nothing that matters, so it does not verify the origin (the VM
	 * side of a splice; airlock's own upstream TLS always verifies).
	 */
	SSL_CTX_set_verify(r.ir_ctx, SSL_VERIFY_NONE, NULL);
	if ((r.ir_ep = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		perror("idleconn: epoll_create1");
		return 1;
	}
	if (clock_gettime(CLOCK_MONOTONIC, &t0) == -1) {
		perror("idleconn: clock_gettime");
		return 1;
	}
	while (r.ir_up + r.ir_failed < r.ir_count) {
		while (r.ir_next < r.ir_count && r.ir_busy < (size_t)parallel)
			idle_conn_start(&r, &r.ir_conns[r.ir_next++]);
		if (r.ir_busy == 0)
			continue;
		if ((n = epoll_wait(r.ir_ep, evs, 256, 1000)) == -1) {
			if (errno == EINTR)
				continue;
			perror("idleconn: epoll_wait");
			return 1;
		}
		for (i = 0; i < n; i++) {
			struct idle_conn *ic = &r.ir_conns[evs[i].data.u64];

			if (ic->ic_state == IDLE_CONNECTING)
				idle_conn_connected(&r, ic);
			else if (ic->ic_state == IDLE_HANDSHAKE)
				idle_conn_handshake(&r, ic);
		}
		if (clock_gettime(CLOCK_MONOTONIC, &now) == -1)
			return 1;
		if (now.tv_sec - t0.tv_sec > IDLE_SETUP_SECONDS) {
			fprintf(stderr, "idleconn: gave up after %d s\n",
			    IDLE_SETUP_SECONDS);
			r.ir_failed = r.ir_count - r.ir_up;
			break;
		}
	}
	printf("ready %zu %zu\n", r.ir_up, r.ir_failed);
	if (fflush(stdout) == EOF)
		return 1;
	/* Hold: sleep(3) may return early on a signal; the deadline is what counts. */
	if (clock_gettime(CLOCK_MONOTONIC, &t0) == -1)
		return 1;
	do {
		(void)sleep(1);
		if (clock_gettime(CLOCK_MONOTONIC, &now) == -1)
			return 1;
	} while (now.tv_sec - t0.tv_sec < hold);
	return r.ir_up > 0 ? 0 : 1;
}
