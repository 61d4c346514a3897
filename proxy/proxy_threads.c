/*
 * proxy/proxy_threads.c: the worker threads.  Each has its own event base, resolver,
 * connection worker (proxy_conn.c) and DNS responder (proxy_dns.c) on the shared
 * listening sockets, and an event that reload (proxy_reload.c) fires to have the
 * thread re-check its own live connections.  Below start-up and reload, which both
 * use it; it calls only down into the connection path and DNS.
 */
#include <sys/types.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/dns.h>
#include <event2/event.h>

#include "log.h"
#include "proxy_path.h"
#include "proxy_core.h"
#include "proxy_dns.h"
#include "proxy_keyd.h"

#define PROXY_WORKERS_MAX	CONFIG_WORKERS_MAX

struct proxy_thread {
	pthread_t	 pt_thread;
	int		 pt_started;
	unsigned int	 pt_id;
	struct event_base *pt_base;
	struct evdns_base *pt_evdns;
	struct proxy_worker *pt_worker;
	struct proxy_dns *pt_dns;
	struct event	*pt_recheck;
};

static struct proxy_thread *proxy_threads;
static unsigned int proxy_nthreads;

static void
proxy_recheck_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_thread *pt = arg;

	if (pt->pt_worker != NULL)
		proxy_worker_recheck(pt->pt_worker);
}

static void *
proxy_thread_main(void *arg)
{
	struct proxy_thread *pt = arg;
	char label[32], err[256];

	/* Its own channel to keyd for leaves; tried again at the first need. */
	snprintf(label, sizeof(label), "worker %u", pt->pt_id);
	if (proxy_keyd_chan_open(label, err, sizeof(err)) == -1)
		log_warnx("worker %u: keys process: %s", pt->pt_id, err);
	if (event_base_loop(pt->pt_base, EVLOOP_NO_EXIT_ON_EMPTY) == -1)
		log_warnx("worker %u: event loop failed", pt->pt_id);
	proxy_keyd_chan_close();
	return NULL;
}

static unsigned int
proxy_nworkers(void)
{
	long n;

	if (proxy_cfg.workers > 0)
		return proxy_cfg.workers > PROXY_WORKERS_MAX ? PROXY_WORKERS_MAX :
		    proxy_cfg.workers;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	return n > PROXY_WORKERS_MAX ? PROXY_WORKERS_MAX : (unsigned int)n;
}

int
proxy_threads_new(int proxy_fd, int udp_fd, int tcp_fd, char *err, size_t errlen)
{
	struct proxy_thread *pt;
	unsigned int i, n;
	int rc;

	n = proxy_nworkers();
	if ((proxy_threads = calloc(n, sizeof(*proxy_threads))) == NULL) {
		proxy_fmt(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		pt = &proxy_threads[i];
		pt->pt_id = i;
		proxy_nthreads = i + 1;
		if ((pt->pt_base = event_base_new()) == NULL) {
			proxy_fmt(err, errlen, "worker %u: event_base_new failed", i);
			return -1;
		}
		if ((pt->pt_evdns = evdns_base_new(pt->pt_base, 0)) == NULL) {
			proxy_fmt(err, errlen, "worker %u: evdns_base_new failed", i);
			return -1;
		}
		/*
		 * The host's resolver: /etc/hosts (DNS_OPTION_HOSTSFILE) and
		 * resolv.conf, both read whole here; evdns opens neither again.
		 */
		rc = evdns_base_resolv_conf_parse(pt->pt_evdns, DNS_OPTIONS_ALL,
		    "/etc/resolv.conf");
		if (rc != 0 && i == 0)
			log_warnx("/etc/resolv.conf: not fully usable (libevent "
			    "error %d); upstream names may not resolve", rc);
		if ((pt->pt_worker = proxy_worker_new(pt->pt_base, proxy_fd,
		    pt->pt_evdns)) == NULL) {
			proxy_fmt(err, errlen, "worker %u: proxy worker failed", i);
			return -1;
		}
		if ((pt->pt_dns = proxy_dns_new(pt->pt_base, udp_fd,
		    tcp_fd)) == NULL) {
			proxy_fmt(err, errlen, "worker %u: DNS responder failed", i);
			return -1;
		}
		if ((pt->pt_recheck = event_new(pt->pt_base, -1, 0,
		    proxy_recheck_cb, pt)) == NULL) {
			proxy_fmt(err, errlen, "worker %u: event_new failed", i);
			return -1;
		}
	}
	return 0;
}

/* Starts the worker threads proxy_threads_new() made.  0, or -1 with err. */
int
proxy_threads_run(char *err, size_t errlen)
{
	struct proxy_thread *pt;
	unsigned int i;
	int rc;

	for (i = 0; i < proxy_nthreads; i++) {
		pt = &proxy_threads[i];
		if ((rc = pthread_create(&pt->pt_thread, NULL, proxy_thread_main,
		    pt)) != 0) {
			proxy_fmt(err, errlen, "worker %u: %s", i, strerror(rc));
			return -1;
		}
		pt->pt_started = 1;
	}
	return 0;
}

void
proxy_threads_stop(void)
{
	struct proxy_thread *pt;
	unsigned int i;

	for (i = 0; i < proxy_nthreads; i++) {
		pt = &proxy_threads[i];
		if (pt->pt_started) {
			event_base_loopexit(pt->pt_base, NULL);
			pthread_join(pt->pt_thread, NULL);
		}
	}
	for (i = 0; i < proxy_nthreads; i++) {
		pt = &proxy_threads[i];
		if (pt->pt_recheck != NULL)
			event_free(pt->pt_recheck);
		if (pt->pt_dns != NULL)
			proxy_dns_free(pt->pt_dns);
		if (pt->pt_worker != NULL)
			proxy_worker_free(pt->pt_worker);
		if (pt->pt_evdns != NULL)
			evdns_base_free(pt->pt_evdns, 1);
		if (pt->pt_base != NULL)
			event_base_free(pt->pt_base);
	}
	free(proxy_threads);
	proxy_threads = NULL;
	proxy_nthreads = 0;
}

void
proxy_threads_recheck(void)
{
	unsigned int i;

	for (i = 0; i < proxy_nthreads; i++)
		if (proxy_threads[i].pt_recheck != NULL)
			event_active(proxy_threads[i].pt_recheck, EV_TIMEOUT, 0);
}

unsigned int
proxy_threads_count(void)
{
	return proxy_nthreads;
}
