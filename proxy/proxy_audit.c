/*
 * proxy/proxy_audit.c: the daemon's side of the audit log's aggregates and health.
 * A one-second timer on the main loop writes the counts of denials whose second is
 * over (audit_flush(); the rest go out at audit_close()), and the connection path
 * asks proxy_audit_is_writable() before it lets a new connection in: while the log
 * cannot be written (a full disk, an I/O error) new connections are refused with
 * audit_unavailable, and their denials are counted until it can.  Each change of
 * state is said once in airlockd's log.
 */
#include <sys/queue.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "audit.h"
#include "config.h"
#include "log.h"
#include "proxy_audit.h"
#include "proxy_globals.h"
#include "proxy_reason.h"

static int proxy_audit_down;	/* atomic: the state last reported */

int
proxy_audit_is_writable(void)
{
	struct audit_log *log = proxy_audit();
	int err, was;

	if (log == NULL)
		return 1;
	err = audit_error(log);
	was = __atomic_exchange_n(&proxy_audit_down, err != 0, __ATOMIC_RELAXED);
	if (err != 0 && !was)
		log_warnx("audit log %s: %s: refusing new connections "
		    "(audit_unavailable) while it fails", proxy_config()->audit_path,
		    strerror(err));
	else if (err == 0 && was)
		log_warnx("audit log %s: writable again: accepting new connections",
		    proxy_config()->audit_path);
	return err == 0;
}

static void
proxy_audit_tick(evutil_socket_t fd, short what, void *arg)
{
	if (proxy_audit() != NULL)
		(void)audit_flush(proxy_audit(), 0);
	(void)proxy_audit_is_writable();
}

struct event *
proxy_audit_timer_new(struct event_base *base)
{
	struct timeval tv = { 1, 0 };
	struct event *ev;

	if ((ev = event_new(base, -1, EV_PERSIST, proxy_audit_tick, NULL)) == NULL)
		return NULL;
	if (event_add(ev, &tv) == -1) {
		event_free(ev);
		return NULL;
	}
	return ev;
}

enum audit_agg
proxy_audit_agg(const char *reason)
{
	static const enum proxy_reason by_sandbox[] = {
		PR_CONNECTION_LIMIT, PR_RATE_LIMITED, PR_AUDIT_UNAVAILABLE,
		PR_UNKNOWN_SANDBOX,
	};
	size_t i;

	for (i = 0; i < sizeof(by_sandbox) / sizeof(by_sandbox[0]); i++)
		if (reason != NULL &&
		    strcmp(reason, proxy_reasons[by_sandbox[i]].ri_code) == 0)
			return AUDIT_AGG_SANDBOX;
	return AUDIT_AGG_DST;
}

/*
 * Parked resets.  With audit.fsync "deny" a denial must be on disk before the VM
 * sees its reset, but a worker must not wait for the disk: proxy_audit_park() keeps
 * a dup of the client's socket (SO_LINGER 0 already set, so its last close sends
 * the RST) until the audit sync thread says the record's seq is on disk, and that
 * worker's event (one per event base, made on its first park) closes it.
 */
struct proxy_park_fd {
	int			 pf_fd;
	long long		 pf_seq;
	TAILQ_ENTRY(proxy_park_fd) pf_entry;
};
TAILQ_HEAD(proxy_park_fds, proxy_park_fd);

struct proxy_park {
	struct event_base	*pk_base;
	struct event		*pk_ev;		/* activated by the sync thread */
	struct proxy_park_fds	 pk_fds;	/* this worker's thread only */
	struct proxy_park	*pk_next;
};

static pthread_mutex_t	 proxy_park_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct proxy_park *proxy_parks;	/* under proxy_park_mtx */
static int		 proxy_park_on;	/* the sync thread runs */

/* In the worker's thread: closes the fds whose record is on disk. */
static void
proxy_park_cb(evutil_socket_t unused, short what, void *arg)
{
	struct proxy_park *pk = arg;
	struct proxy_park_fd *pf, *next;
	long long synced = audit_synced(proxy_audit());
	int failed = audit_error(proxy_audit()) != 0;

	for (pf = TAILQ_FIRST(&pk->pk_fds); pf != NULL; pf = next) {
		next = TAILQ_NEXT(pf, pf_entry);
		/* A failed sync: the VM still gets its reset (new ones are refused). */
		if (pf->pf_seq <= synced || failed) {
			TAILQ_REMOVE(&pk->pk_fds, pf, pf_entry);
			close(pf->pf_fd);
			free(pf);
		}
	}
}

/* The sync thread's notification: every worker looks at its parked fds. */
static void
proxy_park_notify(void *arg)
{
	struct proxy_park *pk;

	pthread_mutex_lock(&proxy_park_mtx);
	for (pk = proxy_parks; pk != NULL; pk = pk->pk_next)
		event_active(pk->pk_ev, EV_READ, 0);
	pthread_mutex_unlock(&proxy_park_mtx);
}

int
proxy_audit_sync_start(void)
{
	if (proxy_audit() == NULL)
		return 0;
	if (audit_sync_start(proxy_audit(), proxy_park_notify, NULL) == -1)
		return -1;
	proxy_park_on = 1;
	return 0;
}

int
proxy_audit_park(struct event_base *base, int fd, long long seq)
{
	struct proxy_park *pk;
	struct proxy_park_fd *pf = NULL;

	if (!proxy_park_on || proxy_audit() == NULL)
		return -1;
	pthread_mutex_lock(&proxy_park_mtx);
	for (pk = proxy_parks; pk != NULL && pk->pk_base != base; pk = pk->pk_next)
		;
	if (pk == NULL && (pk = calloc(1, sizeof(*pk))) != NULL) {
		pk->pk_base = base;
		TAILQ_INIT(&pk->pk_fds);
		if ((pk->pk_ev = event_new(base, -1, 0, proxy_park_cb, pk)) == NULL) {
			free(pk);
			pk = NULL;
		} else {
			pk->pk_next = proxy_parks;
			proxy_parks = pk;
		}
	}
	pthread_mutex_unlock(&proxy_park_mtx);
	if (pk == NULL || (pf = calloc(1, sizeof(*pf))) == NULL ||
	    (pf->pf_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) == -1) {
		free(pf);
		return -1;
	}
	pf->pf_seq = seq;
	TAILQ_INSERT_TAIL(&pk->pk_fds, pf, pf_entry);
	audit_sync_request(proxy_audit(), seq);
	/* Synced meanwhile (the notification may have gone before the insert). */
	if (audit_synced(proxy_audit()) >= seq)
		event_active(pk->pk_ev, EV_READ, 0);
	return 0;
}

void
proxy_audit_park_free(struct event_base *base)
{
	struct proxy_park **pp, *pk;
	struct proxy_park_fd *pf;

	pthread_mutex_lock(&proxy_park_mtx);
	for (pp = &proxy_parks; (pk = *pp) != NULL; pp = &pk->pk_next)
		if (pk->pk_base == base)
			break;
	if (pk != NULL)
		*pp = pk->pk_next;
	pthread_mutex_unlock(&proxy_park_mtx);
	if (pk == NULL)
		return;
	while ((pf = TAILQ_FIRST(&pk->pk_fds)) != NULL) {
		TAILQ_REMOVE(&pk->pk_fds, pf, pf_entry);
		close(pf->pf_fd);
		free(pf);
	}
	event_free(pk->pk_ev);
	free(pk);
}
