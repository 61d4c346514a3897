/*
 * proxy/proxy_netwatch.c: the root "netwatch" child that keeps airlock's nftables
 * tables in place (netctl_guard_*), and the unprivileged side that hears about it.
 *
 * Reinstalling the tables needs CAP_NET_ADMIN, which the workers must never hold.
 * So airlockd forks this child before it drops privileges; the child keeps root,
 * takes no input at all from the unprivileged side (the socket only tells it that
 * airlockd is gone) and does one thing: at start and on every nftables event of the
 * namespace (NFNLGRP_NFTABLES; also every PROXY_NETWATCH_PERIOD_MS, in case events
 * were lost), netctl_guard_check(), which compares both tables with the records and
 * reinstalls them in one batch when anything differs.  When it found something it
 * sends one fixed-size report; airlockd writes it as an "alarm" audit record and
 * counts it in `airlock stats` (rules_reinstalled, alarms).  It runs under its own
 * seccomp filter (PROXY_ROLE_NETWATCH, proxy_confine.c): netlink for nftables, the
 * state directory, no exec.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "netctl.h"
#include "proxy_confine.h"
#include "proxy_globals.h"
#include "proxy_netwatch.h"
#include "proxy_proc.h"

#define PROXY_NETWATCH_PERIOD_MS	10000
#define PROXY_NETWATCH_SETTLE_MS	20	/* quiet time after an event burst */
#define PROXY_NETWATCH_SETTLE_MAX	10	/* at most this many settle rounds */

/* The child's report, one SOCK_SEQPACKET message. */
struct proxy_nw_report {
	int32_t		nw_reinstalled;	/* 1: tables installed again */
	int32_t		nw_drift;	/* differences found */
	int32_t		nw_sandboxes;
	char		nw_found[200];
	char		nw_error[256];	/* "" or why the check or reinstall failed */
};

static int proxy_nw_fd = -1;
static pid_t proxy_nw_pid = -1;
static struct event *proxy_nw_ev;
static uint64_t proxy_nw_reinstalled;	/* atomic */
static uint64_t proxy_nw_alarms;	/* atomic */

/* The child: one check, and a report if it found or failed anything new. */
static void
proxy_nw_check(int fd, const struct airlock_config *cfg, char *lasterr,
    size_t lastlen)
{
	struct proxy_nw_report rep;
	struct netctl_restore r;
	char err[256] = "";
	int rv;

	rv = netctl_guard_check(cfg, &r, err, sizeof(err));
	if (rv == 0 && r.nr_drift == 0) {
		lasterr[0] = '\0';
		return;
	}
	/* The same failure again and again (say, a missing interface): once. */
	if (rv == -1 && r.nr_drift == 0 && strcmp(err, lasterr) == 0)
		return;
	snprintf(lasterr, lastlen, "%s", rv == -1 ? err : "");
	memset(&rep, 0, sizeof(rep));
	rep.nw_reinstalled = r.nr_reinstalled;
	rep.nw_drift = r.nr_drift;
	rep.nw_sandboxes = r.nr_sandboxes;
	snprintf(rep.nw_found, sizeof(rep.nw_found), "%s", r.nr_found);
	if (rv == -1)
		snprintf(rep.nw_error, sizeof(rep.nw_error), "%s", err);
	if (rv == 0)
		log_warnx("airlock's nftables tables were not as installed (%s): "
		    "reinstalled", r.nr_found);
	else
		log_warnx("checking airlock's nftables tables: %s", err);
	/* Never blocks: the next check must not wait for airlockd to read. */
	if (send(fd, &rep, sizeof(rep), MSG_NOSIGNAL | MSG_DONTWAIT) == -1) {
		if (errno != EAGAIN)
			_exit(0);	/* airlockd is gone */
		log_warnx("airlockd is not reading: this alarm is not audited");
	}
}

static void __attribute__((noreturn))
proxy_nw_main(int fd, const struct airlock_config *daemon_cfg)
{
	static struct airlock_config cfg_copy;
	const struct airlock_config *cfg = &cfg_copy;
	struct netctl_guard *g;
	struct passwd *pw;
	struct pollfd pfd[2];
	char err[256], lasterr[256] = "", c;
	int i, n;

	log_procinit("netwatch");
	/*
	 * Every check matches airlockd's user in a rule: as a uid from here on, so no
	 * check needs the user database (NSS may load a module: not once confined).
	 */
	cfg_copy = *daemon_cfg;
	if ((pw = getpwnam(cfg_copy.user)) != NULL)
		snprintf(cfg_copy.user, sizeof(cfg_copy.user), "%u",
		    (unsigned int)pw->pw_uid);
	if (proxy_confine(PROXY_ROLE_NETWATCH, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		_exit(1);
	}
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if ((g = netctl_guard_new(err, sizeof(err))) == NULL)
		log_warnx("%s: checking every %d s only", err,
		    PROXY_NETWATCH_PERIOD_MS / 1000);
	/* Start-up: the tables may have gone while airlockd was down. */
	proxy_nw_check(fd, cfg, lasterr, sizeof(lasterr));
	for (;;) {
		pfd[0].fd = fd;
		pfd[0].events = POLLIN;
		pfd[1].fd = g != NULL ? netctl_guard_fd(g) : -1;
		pfd[1].events = POLLIN;
		n = poll(pfd, 2, PROXY_NETWATCH_PERIOD_MS);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if (pfd[0].revents != 0) {
			/* airlockd never writes: EOF or anything else ends us. */
			if (read(fd, &c, 1) != -1 || errno != EINTR)
				_exit(0);
		}
		if (n > 0 && (pfd[1].revents & POLLIN)) {
			/* Let a burst (nft -f, a flush) finish, then one check. */
			netctl_guard_drain(g);
			for (i = 0; i < PROXY_NETWATCH_SETTLE_MAX; i++) {
				if (poll(&pfd[1], 1, PROXY_NETWATCH_SETTLE_MS) != 1)
					break;
				netctl_guard_drain(g);
			}
		}
		proxy_nw_check(fd, cfg, lasterr, sizeof(lasterr));
	}
}

int
proxy_netwatch_start(const struct airlock_config *cfg, char *err, size_t errlen)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
		snprintf(err, errlen, "netwatch: socketpair: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	if ((pid = fork()) == -1) {
		snprintf(err, errlen, "netwatch: fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0) {
		/* airlockd's ends (the reader's, keyd's control channel) stay out. */
		if (proxy_close_fds_except(&sv[1], 1) == -1 ||
		    prctl(PR_SET_DUMPABLE, 0) == -1)
			_exit(1);
		proxy_nw_main(sv[1], cfg);
	}
	close(sv[1]);
	proxy_nw_fd = sv[0];
	proxy_nw_pid = pid;
	return 0;
}

/* A report: the alarm record and the counters. */
static void
proxy_nw_cb(evutil_socket_t fd, short what, void *arg)
{
	struct audit_record ar = AUDIT_RECORD_INIT;
	struct proxy_nw_report rep;
	struct audit_kv kv[6];
	size_t nkv = 0;
	ssize_t n;

	n = recv(fd, &rep, sizeof(rep), MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n != (ssize_t)sizeof(rep)) {
		/* Nothing guards the tables any more: say so, loudly, once. */
		log_warnx("netwatch: %s: airlock's nftables tables are no longer "
		    "watched", n == 0 ? "exited" : "protocol error");
		memset(&rep, 0, sizeof(rep));
		snprintf(rep.nw_found, sizeof(rep.nw_found), "netwatch stopped");
		event_del(proxy_nw_ev);
	}
	rep.nw_found[sizeof(rep.nw_found) - 1] = '\0';
	rep.nw_error[sizeof(rep.nw_error) - 1] = '\0';
	__atomic_fetch_add(&proxy_nw_alarms, 1, __ATOMIC_RELAXED);
	if (rep.nw_reinstalled)
		__atomic_fetch_add(&proxy_nw_reinstalled, 1, __ATOMIC_RELAXED);
	kv[nkv++] = (struct audit_kv){ .ak_key = "what", .ak_str = "nftables" };
	kv[nkv++] = (struct audit_kv){ .ak_key = "found",
	    .ak_str = rep.nw_found[0] != '\0' ? rep.nw_found : "check failed" };
	kv[nkv++] = (struct audit_kv){ .ak_key = "differences",
	    .ak_num = rep.nw_drift };
	kv[nkv++] = (struct audit_kv){ .ak_key = "sandboxes",
	    .ak_num = rep.nw_sandboxes };
	kv[nkv++] = (struct audit_kv){ .ak_key = "action", .ak_str =
	    rep.nw_reinstalled ? "reinstalled" : "none" };
	if (rep.nw_error[0] != '\0')
		kv[nkv++] = (struct audit_kv){ .ak_key = "error",
		    .ak_str = rep.nw_error };
	ar.ar_event = AUDIT_EV_ALARM;
	ar.ar_extra = kv;
	ar.ar_nextra = nkv;
	if (proxy_audit() != NULL && audit_write(proxy_audit(), &ar) == -1)
		log_warn("audit: alarm");
}

int
proxy_netwatch_listen(struct event_base *base)
{
	if (proxy_nw_fd == -1)
		return 0;
	if ((proxy_nw_ev = event_new(base, proxy_nw_fd, EV_READ | EV_PERSIST,
	    proxy_nw_cb, NULL)) == NULL || event_add(proxy_nw_ev, NULL) == -1)
		return -1;
	return 0;
}

void
proxy_netwatch_stop(void)
{
	if (proxy_nw_ev != NULL)
		event_free(proxy_nw_ev);
	proxy_nw_ev = NULL;
	proxy_child_stop(&proxy_nw_fd, &proxy_nw_pid);
}

int
proxy_netwatch_gone(void)
{
	return proxy_child_reap(&proxy_nw_pid);
}

uint64_t
proxy_netwatch_count(int reinstalled)
{
	return __atomic_load_n(reinstalled ? &proxy_nw_reinstalled :
	    &proxy_nw_alarms, __ATOMIC_RELAXED);
}
