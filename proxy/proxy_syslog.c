/*
 * proxy/proxy_syslog.c: the audit log's syslog sink (audit.syslog): every record,
 * once its line is in the file, goes to a collector as an RFC 5424 message whose
 * MSG is that line (audit_syslog_header(); docs/AUDIT.md, "Shipping to syslog").
 *
 * The file stays the source of truth and the sink never holds anyone up: the
 * writer's tap (audit_set_tap(), called under the log's lock) only copies the
 * framed message into a bounded queue and wakes the sink's own thread, which has
 * an event loop of its own and does every connect and send non-blocking.  A full
 * queue drops the NEWEST record (what is queued is the oldest, in chain order, and
 * goes out first); the drops are counted and, once the sink is connected and the
 * queue has room again, written as a "sink_overflow" record (the count, the first
 * and last seq and ts dropped), itself part of the chain and shipped like any
 * record.  A connection that fails or breaks is tried again after 0.1 s, the pause
 * doubling up to 5 s; a record handed to a stream that then breaks may be lost (a
 * syslog stream has no acknowledgement): the file has it.
 *
 * Transports: "unix:/PATH" one datagram per record on a connected AF_UNIX socket;
 * "tcp:HOST:PORT" octet counting (RFC 6587); "tls:HOST:PORT" the same in TLS 1.2+,
 * the collector's chain verified against audit.syslog.ca and its name (or IPv4
 * address) checked, always.  A name is resolved once, at start (the worker reads
 * no file after it: resolv.conf and /etc/hosts are out of its reach), as root
 * before the drop; the CA file is read then too.
 *
 * The thread is started before the worker's seccomp filter (it has no clone) and
 * uses only calls the worker's list has: socket (AF_INET, AF_UNIX), connect,
 * sendto, getsockopt, epoll.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <netinet/in.h>

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "audit.h"
#include "log.h"
#include "proxy_audit.h"
#include "proxy_globals.h"
#include "proxy_syslog.h"

#define SL_OUT_HIGH	(256 * 1024)	/* bytes handed to a stream at most */
#define SL_OUT_LOW	(64 * 1024)	/* ... refilled below this */
#define SL_BACKOFF_MIN	100		/* ms */
#define SL_BACKOFF_MAX	5000
#define SL_DRAIN_MS	2000		/* at stop: what is queued, at most this long */

struct sl_frame {
	TAILQ_ENTRY(sl_frame) f_entry;
	long long	 f_seq, f_ts;	/* the record's */
	size_t		 f_len;
	char		 f_data[];
};
TAILQ_HEAD(sl_frames, sl_frame);

/* The queue: the tap (any thread, the log's lock held) and the sink's thread. */
static pthread_mutex_t	 sl_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct sl_frames	 sl_q = TAILQ_HEAD_INITIALIZER(sl_q);
static unsigned int	 sl_n;		/* frames in sl_q */
static long long	 sl_drop_n;	/* dropped since the last sink_overflow */
static long long	 sl_drop_seq[2], sl_drop_ts[2];	/* first, last */

/* Counters (atomic), for proxy_syslog_counts(). */
static long long	 sl_sent, sl_dropped, sl_failures;
static int		 sl_up;

/* The sink's thread only. */
static int		 sl_on;
static pthread_t	 sl_thr;
static int		 sl_thr_on;
static struct event_base *sl_base;
static struct event	*sl_wake, *sl_retry, *sl_unix_ev, *sl_stop_ev;
static struct bufferevent *sl_bev;
static int		 sl_fd = -1;	/* unix */
static int		 sl_connecting;
static int		 sl_backoff;
static int		 sl_stopping;
static int		 sl_said_down;	/* the log said the sink is down */
static struct sockaddr_storage sl_sa;
static socklen_t	 sl_salen;
static SSL_CTX		*sl_ctx;
static char		 sl_hostname[256];
static long		 sl_pid;
static char		 sl_target[300];

static void	sl_pump(void);
static void	sl_connect(void);

/* A record not sent: counted for the next sink_overflow.  sl_mtx held. */
static void
sl_drop(long long seq, long long ts_ms)
{
	if (sl_drop_n++ == 0) {
		sl_drop_seq[0] = seq;
		sl_drop_ts[0] = ts_ms;
	}
	sl_drop_seq[1] = seq;
	sl_drop_ts[1] = ts_ms;
	__atomic_fetch_add(&sl_dropped, 1, __ATOMIC_RELAXED);
}

/* The writer's tap: frame the line, queue it or count it dropped. */
static void
sl_tap(void *arg, enum audit_event ev, long long seq, long long ts_ms,
    const char *line, size_t len)
{
	char hdr[AUDIT_SYSLOG_HDR_MAX];
	struct sl_frame *f = NULL;
	size_t hlen;

	hlen = audit_syslog_header(hdr, sizeof(hdr), proxy_cfg.syslog_facility, ev,
	    ts_ms, sl_hostname, proxy_cfg.syslog_app, sl_pid, len,
	    proxy_cfg.syslog_proto != AUDIT_SYSLOG_UNIX);
	pthread_mutex_lock(&sl_mtx);
	if (hlen > 0 && sl_n < proxy_cfg.syslog_queue &&
	    (f = malloc(sizeof(*f) + hlen + len)) != NULL) {
		memcpy(f->f_data, hdr, hlen);
		memcpy(f->f_data + hlen, line, len);
		f->f_len = hlen + len;
		f->f_seq = seq;
		f->f_ts = ts_ms;
		TAILQ_INSERT_TAIL(&sl_q, f, f_entry);
		sl_n++;
	} else
		sl_drop(seq, ts_ms);
	pthread_mutex_unlock(&sl_mtx);
	/* Before the thread starts (the records of the start) they only queue. */
	if (f != NULL && __atomic_load_n(&sl_thr_on, __ATOMIC_ACQUIRE))
		event_active(sl_wake, EV_READ, 0);
}

static void
sl_set_up(int up, const char *why)
{
	__atomic_store_n(&sl_up, up, __ATOMIC_RELAXED);
	if (up) {
		log_info("audit syslog sink %s: connected", sl_target);
		sl_said_down = 0;
		sl_backoff = 0;
	} else {
		__atomic_fetch_add(&sl_failures, 1, __ATOMIC_RELAXED);
		if (!sl_said_down)
			log_warnx("audit syslog sink %s: %s (records queue, at most "
			    "%u, then are dropped and counted; tried again, said "
			    "once until it connects)", sl_target, why,
			    proxy_cfg.syslog_queue);
		sl_said_down = 1;
	}
}

/* After a failure: close what there is, try again after the backoff. */
static void
sl_down(const char *why)
{
	struct timeval tv;

	sl_set_up(0, why);
	if (sl_bev != NULL)
		bufferevent_free(sl_bev);
	sl_bev = NULL;
	if (sl_unix_ev != NULL)
		event_free(sl_unix_ev);
	sl_unix_ev = NULL;
	if (sl_fd != -1)
		close(sl_fd);
	sl_fd = -1;
	sl_connecting = 0;
	if (sl_stopping) {
		event_base_loopexit(sl_base, NULL);
		return;
	}
	sl_backoff = sl_backoff == 0 ? SL_BACKOFF_MIN :
	    sl_backoff * 2 > SL_BACKOFF_MAX ? SL_BACKOFF_MAX : sl_backoff * 2;
	tv.tv_sec = sl_backoff / 1000;
	tv.tv_usec = (sl_backoff % 1000) * 1000;
	event_add(sl_retry, &tv);
}

/* The count of records dropped, as a record of the chain (the sink is back). */
static void
sl_overflow_record(void)
{
	struct audit_record r = AUDIT_RECORD_INIT;
	char ts0[40], ts1[40];
	struct audit_kv kv[5];
	long long n, seq[2], ts[2], sync;

	pthread_mutex_lock(&sl_mtx);
	if (sl_drop_n == 0 || sl_n >= proxy_cfg.syslog_queue) {
		pthread_mutex_unlock(&sl_mtx);
		return;
	}
	n = sl_drop_n;
	memcpy(seq, sl_drop_seq, sizeof(seq));
	memcpy(ts, sl_drop_ts, sizeof(ts));
	sl_drop_n = 0;
	pthread_mutex_unlock(&sl_mtx);
	audit_time_format(ts[0], ts0, sizeof(ts0));
	audit_time_format(ts[1], ts1, sizeof(ts1));
	kv[0] = (struct audit_kv){ .ak_key = "dropped", .ak_num = n };
	kv[1] = (struct audit_kv){ .ak_key = "first_seq", .ak_num = seq[0] };
	kv[2] = (struct audit_kv){ .ak_key = "last_seq", .ak_num = seq[1] };
	kv[3] = (struct audit_kv){ .ak_key = "first_ts", .ak_str = ts0 };
	kv[4] = (struct audit_kv){ .ak_key = "last_ts", .ak_str = ts1 };
	r.ar_event = AUDIT_EV_SINK_OVERFLOW;
	r.ar_extra = kv;
	r.ar_nextra = 5;
	log_warnx("audit syslog sink %s: %lld record(s) were dropped (seq %lld.."
	    "%lld): a sink_overflow record says so", sl_target, n, seq[0], seq[1]);
	if (audit_write_nowait(proxy_audit(), &r, &sync) == -1) {
		/* Counted again: said with the next one. */
		pthread_mutex_lock(&sl_mtx);
		if (sl_drop_n == 0) {
			sl_drop_seq[1] = seq[1];
			sl_drop_ts[1] = ts[1];
		} else {
			if (sl_drop_seq[1] < seq[1])
				sl_drop_seq[1] = seq[1];
		}
		sl_drop_seq[0] = seq[0];
		sl_drop_ts[0] = ts[0];
		sl_drop_n += n;
		pthread_mutex_unlock(&sl_mtx);
		return;
	}
	if (sync > 0)
		audit_sync_request(proxy_audit(), sync);
}

static struct sl_frame *
sl_head(void)
{
	struct sl_frame *f;

	pthread_mutex_lock(&sl_mtx);
	f = TAILQ_FIRST(&sl_q);
	pthread_mutex_unlock(&sl_mtx);
	return f;
}

static void
sl_pop(struct sl_frame *f)
{
	pthread_mutex_lock(&sl_mtx);
	TAILQ_REMOVE(&sl_q, f, f_entry);
	sl_n--;
	pthread_mutex_unlock(&sl_mtx);
	free(f);
	__atomic_fetch_add(&sl_sent, 1, __ATOMIC_RELAXED);
}

static void
sl_unix_cb(evutil_socket_t fd, short what, void *arg)
{
	sl_pump();
}

/* Sends what is queued, as far as the socket takes it. */
static void
sl_pump(void)
{
	struct sl_frame *f;
	struct evbuffer *out;
	char why[128];
	ssize_t n;

	if (sl_connecting || (sl_fd == -1 && sl_bev == NULL))
		return;
	if (sl_fd != -1) {
		while ((f = sl_head()) != NULL) {
			n = send(sl_fd, f->f_data, f->f_len, MSG_DONTWAIT |
			    MSG_NOSIGNAL);
			if (n == -1 && errno == EINTR)
				continue;
			if (n == -1 && (errno == EAGAIN || errno == ENOBUFS)) {
				event_add(sl_unix_ev, NULL);
				break;
			}
			if (n == -1 && errno == EMSGSIZE) {
				log_warnx("audit syslog sink %s: the record of seq "
				    "%lld (%zu bytes) is too long for a datagram: "
				    "dropped", sl_target, f->f_seq, f->f_len);
				pthread_mutex_lock(&sl_mtx);
				TAILQ_REMOVE(&sl_q, f, f_entry);
				sl_n--;
				sl_drop(f->f_seq, f->f_ts);
				pthread_mutex_unlock(&sl_mtx);
				free(f);
				continue;
			}
			if (n == -1) {
				snprintf(why, sizeof(why), "send: %s",
				    strerror(errno));
				sl_down(why);
				return;
			}
			sl_pop(f);
		}
	} else {
		out = bufferevent_get_output(sl_bev);
		while (evbuffer_get_length(out) < SL_OUT_HIGH &&
		    (f = sl_head()) != NULL) {
			if (bufferevent_write(sl_bev, f->f_data, f->f_len) == -1)
				break;
			sl_pop(f);
		}
	}
	if (!sl_stopping)
		sl_overflow_record();
	else if (sl_head() == NULL && (sl_bev == NULL ||
	    evbuffer_get_length(bufferevent_get_output(sl_bev)) == 0))
		event_base_loopexit(sl_base, NULL);
}

static void
sl_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	sl_pump();
}

static void
sl_write_cb(struct bufferevent *bev, void *arg)
{
	sl_pump();
}

static void
sl_read_cb(struct bufferevent *bev, void *arg)
{
	/* A collector says nothing: whatever comes is dropped. */
	evbuffer_drain(bufferevent_get_input(bev),
	    evbuffer_get_length(bufferevent_get_input(bev)));
}

static void
sl_event_cb(struct bufferevent *bev, short what, void *arg)
{
	char why[256];
	unsigned long e;
	SSL *ssl;
	long vr;

	if (what & BEV_EVENT_CONNECTED) {
		sl_connecting = 0;
		sl_set_up(1, NULL);
		sl_pump();
		return;
	}
	if (what & BEV_EVENT_TIMEOUT)
		snprintf(why, sizeof(why), "%s", sl_connecting ? "connect: timed "
		    "out" : "the collector takes nothing (10 s)");
	else if (what & BEV_EVENT_EOF)
		snprintf(why, sizeof(why), "the collector closed the connection");
	else if ((ssl = bufferevent_openssl_get_ssl(bev)) != NULL &&
	    (vr = SSL_get_verify_result(ssl)) != X509_V_OK)
		snprintf(why, sizeof(why), "TLS: the collector's certificate is "
		    "refused: %s", X509_verify_cert_error_string(vr));
	else if ((e = bufferevent_get_openssl_error(bev)) != 0) {
		snprintf(why, sizeof(why), "TLS: ");
		ERR_error_string_n(e, why + 5, sizeof(why) - 5);
	} else
		snprintf(why, sizeof(why), "%s: %s", sl_connecting ? "connect" :
		    "send", evutil_socket_error_to_string(
		    evutil_socket_geterror(bufferevent_getfd(bev))));
	while (ERR_get_error() != 0)
		;
	sl_down(why);
}

static void
sl_connect_unix(void)
{
	struct sockaddr_un *sun = (struct sockaddr_un *)&sl_sa;
	char why[160];

	if ((sl_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1 || connect(sl_fd, (struct sockaddr *)sun, sl_salen) == -1) {
		snprintf(why, sizeof(why), "%s: %s", sl_fd == -1 ? "socket" :
		    "connect", strerror(errno));
		sl_down(why);
		return;
	}
	if ((sl_unix_ev = event_new(sl_base, sl_fd, EV_WRITE, sl_unix_cb,
	    NULL)) == NULL) {
		sl_down("out of memory");
		return;
	}
	sl_set_up(1, NULL);
	sl_pump();
}

static void
sl_connect(void)
{
	struct timeval tmo = { 10, 0 };
	SSL *ssl = NULL;

	if (proxy_cfg.syslog_proto == AUDIT_SYSLOG_UNIX) {
		sl_connect_unix();
		return;
	}
	if (sl_salen == 0) {
		sl_down("the collector's name did not resolve at start");
		return;
	}
	if (proxy_cfg.syslog_proto == AUDIT_SYSLOG_TLS) {
		if ((ssl = SSL_new(sl_ctx)) == NULL)
			goto fail;
		if (proxy_cfg.syslog_host_is_addr) {
			if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl),
			    proxy_cfg.syslog_host) != 1)
				goto fail;
		} else if (SSL_set1_host(ssl, proxy_cfg.syslog_host) != 1 ||
		    SSL_set_tlsext_host_name(ssl, proxy_cfg.syslog_host) != 1)
			goto fail;
		sl_bev = bufferevent_openssl_socket_new(sl_base, -1, ssl,
		    BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
		if (sl_bev == NULL)
			goto fail;
		ssl = NULL;	/* the bufferevent's */
	} else if ((sl_bev = bufferevent_socket_new(sl_base, -1,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL)
		goto fail;
	bufferevent_setcb(sl_bev, sl_read_cb, sl_write_cb, sl_event_cb, NULL);
	bufferevent_setwatermark(sl_bev, EV_WRITE, SL_OUT_LOW, 0);
	bufferevent_set_timeouts(sl_bev, NULL, &tmo);
	sl_connecting = 1;
	if (bufferevent_enable(sl_bev, EV_READ | EV_WRITE) == -1 ||
	    bufferevent_socket_connect(sl_bev, (struct sockaddr *)&sl_sa,
	    (int)sl_salen) == -1) {
		if (sl_bev != NULL)	/* the connect failed at once */
			sl_down("connect failed");
		return;
	}
	return;
 fail:
	SSL_free(ssl);
	sl_down("cannot set up the connection (out of memory?)");
}

static void
sl_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	sl_connect();
}

static void
sl_stop_cb(evutil_socket_t fd, short what, void *arg)
{
	struct timeval tv = { SL_DRAIN_MS / 1000, (SL_DRAIN_MS % 1000) * 1000 };

	sl_stopping = 1;
	/* Down: nothing will go; up: what is queued, for SL_DRAIN_MS at most. */
	if (!__atomic_load_n(&sl_up, __ATOMIC_RELAXED)) {
		event_base_loopexit(sl_base, NULL);
		return;
	}
	event_base_loopexit(sl_base, &tv);
	sl_pump();
}

static void *
sl_main(void *arg)
{
	sl_connect();
	/* A connected datagram socket has no event pending: the loop waits. */
	(void)event_base_loop(sl_base, EVLOOP_NO_EXIT_ON_EMPTY);
	return NULL;
}

int
proxy_syslog_init(char *err, size_t errlen)
{
	struct sockaddr_un *sun = (struct sockaddr_un *)&sl_sa;
	struct addrinfo hints, *res = NULL;
	char port[8];
	int rc;

	if (!proxy_cfg.syslog_on || proxy_audit() == NULL)
		return 0;
	sl_pid = (long)getpid();
	if (gethostname(sl_hostname, sizeof(sl_hostname) - 1) == -1 ||
	    !audit_syslog_name_is_valid(sl_hostname, 255))
		snprintf(sl_hostname, sizeof(sl_hostname), "-");
	memset(&sl_sa, 0, sizeof(sl_sa));
	if (proxy_cfg.syslog_proto == AUDIT_SYSLOG_UNIX) {
		snprintf(sl_target, sizeof(sl_target), "unix:%s",
		    proxy_cfg.syslog_path);
		sun->sun_family = AF_UNIX;
		memcpy(sun->sun_path, proxy_cfg.syslog_path,
		    strlen(proxy_cfg.syslog_path) + 1);
		sl_salen = sizeof(*sun);
		goto on;
	}
	snprintf(sl_target, sizeof(sl_target), "%s:%s:%u",
	    proxy_cfg.syslog_proto == AUDIT_SYSLOG_TLS ? "tls" : "tcp",
	    proxy_cfg.syslog_host, (unsigned int)proxy_cfg.syslog_port);
	if (proxy_cfg.syslog_proto == AUDIT_SYSLOG_TLS) {
		if ((sl_ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
		    SSL_CTX_set_min_proto_version(sl_ctx, TLS1_2_VERSION) != 1) {
			snprintf(err, errlen, "audit.syslog: cannot make a TLS "
			    "context");
			return -1;
		}
		if (SSL_CTX_load_verify_locations(sl_ctx, proxy_cfg.syslog_ca,
		    NULL) != 1) {
			snprintf(err, errlen, "audit.syslog.ca: %s: cannot load "
			    "its certificates", proxy_cfg.syslog_ca);
			while (ERR_get_error() != 0)
				;
			return -1;
		}
		SSL_CTX_set_verify(sl_ctx, SSL_VERIFY_PEER, NULL);
	}
	snprintf(port, sizeof(port), "%u", (unsigned int)proxy_cfg.syslog_port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	if (proxy_cfg.syslog_host_is_addr)
		hints.ai_flags = AI_NUMERICHOST;
	if ((rc = getaddrinfo(proxy_cfg.syslog_host, port, &hints, &res)) != 0 ||
	    res == NULL) {
		/* Not fatal: the file is the log; the sink stays down, says so. */
		log_warnx("audit syslog sink %s: %s does not resolve (%s): every "
		    "record is counted dropped", sl_target, proxy_cfg.syslog_host,
		    gai_strerror(rc));
	} else {
		struct netaddr a;
		const char *why;

		if (netaddr_from_sockaddr(res->ai_addr, &a, NULL) == 0 &&
		    (netaddr_classify(&a, &why) == NETADDR_FLOOR ||
		    netaddr_cidr_contains(&proxy_cfg.address_pool, &a) ||
		    netaddr_cidr_contains(&proxy_cfg.mapped_pool, &a)))
			log_warnx("audit syslog sink %s: %s resolves to an "
			    "address airlockd may not reach (%s): every record "
			    "is counted dropped", sl_target, proxy_cfg.syslog_host,
			    netaddr_classify(&a, &why) == NETADDR_FLOOR ? why :
			    "a pool");
		else {
			memcpy(&sl_sa, res->ai_addr, res->ai_addrlen);
			sl_salen = res->ai_addrlen;
		}
	}
	if (res != NULL)
		freeaddrinfo(res);
 on:
	/* From the first record on: the start's records queue until the thread. */
	sl_on = 1;
	audit_set_tap(proxy_audit(), sl_tap, NULL);
	return 0;
}

int
proxy_syslog_start(void)
{
	if (!sl_on)
		return 0;
	if ((sl_base = event_base_new()) == NULL ||
	    (sl_wake = event_new(sl_base, -1, 0, sl_wake_cb, NULL)) == NULL ||
	    (sl_retry = evtimer_new(sl_base, sl_retry_cb, NULL)) == NULL ||
	    (sl_stop_ev = event_new(sl_base, -1, 0, sl_stop_cb, NULL)) == NULL)
		return -1;
	if (pthread_create(&sl_thr, NULL, sl_main, NULL) != 0)
		return -1;
	__atomic_store_n(&sl_thr_on, 1, __ATOMIC_RELEASE);
	/* What the start wrote is queued already. */
	event_active(sl_wake, EV_READ, 0);
	log_info("audit records go to syslog %s too (queue %u)", sl_target,
	    proxy_cfg.syslog_queue);
	return 0;
}

void
proxy_syslog_stop(void)
{
	struct sl_frame *f;
	long long left;

	if (!sl_on)
		return;
	if (proxy_audit() != NULL)
		audit_set_tap(proxy_audit(), NULL, NULL);
	if (sl_thr_on) {
		event_active(sl_stop_ev, EV_READ, 0);
		pthread_join(sl_thr, NULL);
		__atomic_store_n(&sl_thr_on, 0, __ATOMIC_RELEASE);
	}
	pthread_mutex_lock(&sl_mtx);
	left = sl_n + sl_drop_n;
	while ((f = TAILQ_FIRST(&sl_q)) != NULL) {
		TAILQ_REMOVE(&sl_q, f, f_entry);
		free(f);
	}
	sl_n = 0;
	pthread_mutex_unlock(&sl_mtx);
	if (left > 0)
		log_warnx("audit syslog sink %s: %lld record(s) not sent at "
		    "shutdown (the file has them)", sl_target, left);
	if (sl_bev != NULL)
		bufferevent_free(sl_bev);
	if (sl_unix_ev != NULL)
		event_free(sl_unix_ev);
	if (sl_fd != -1)
		close(sl_fd);
	if (sl_wake != NULL)
		event_free(sl_wake);
	if (sl_retry != NULL)
		event_free(sl_retry);
	if (sl_stop_ev != NULL)
		event_free(sl_stop_ev);
	if (sl_base != NULL)
		event_base_free(sl_base);
	SSL_CTX_free(sl_ctx);
	sl_bev = NULL;
	sl_unix_ev = sl_wake = sl_retry = sl_stop_ev = NULL;
	sl_base = NULL;
	sl_ctx = NULL;
	sl_fd = -1;
	sl_on = 0;
}

int
proxy_syslog_counts(struct proxy_syslog_counts *c)
{
	if (!sl_on)
		return -1;
	c->sc_sent = __atomic_load_n(&sl_sent, __ATOMIC_RELAXED);
	c->sc_dropped = __atomic_load_n(&sl_dropped, __ATOMIC_RELAXED);
	c->sc_failures = __atomic_load_n(&sl_failures, __ATOMIC_RELAXED);
	c->sc_up = __atomic_load_n(&sl_up, __ATOMIC_RELAXED);
	pthread_mutex_lock(&sl_mtx);
	c->sc_queued = sl_n;
	pthread_mutex_unlock(&sl_mtx);
	return 0;
}
