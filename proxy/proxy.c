/*
 * proxy/proxy.c: airlockd's start-up and life.  The configuration, the audit log,
 * listeners, the control socket, the privilege drop, signals, and -n (check and
 * exit).  The folder, top-down (each file calls only into files below it, and has a
 * header of its own name; what the core's files share is proxy_core.h):
 *	the core	reload and the control commands (proxy_reload.c), the
 *			worker threads (proxy_threads.c), the root state reader
 *			(proxy_reader.c) and keyd's loading end (proxy_keyd_load.c),
 *			the audit log's checkpoints and rotation (proxy_checkpoint.c)
 *	the path	accept, sandbox, peek, decide (proxy_conn.c); the modes:
 *			inspect (proxy_inspect.c, HTTP/1.1), h2 (proxy_h2.c), both
 *			over one request's checks (proxy_request.c), splice and the
 *			relay (proxy_conn_relay.c); dial (proxy_conn_dial.c); limits
 *			(proxy_conn_limit.c); the current policy, close and audit
 *			(proxy_conn_close.c) -- proxy_path.h
 *	DNS		proxy_dns.c, per sandbox proxy_dns_sb.c, answers
 *			proxy_dns_answer.c, the codec proxy_dns_codec.c
 *	beneath		the registry (proxy_registry.c), TLS contexts
 *			(proxy_tls.c), key material (proxy_keys.c) and its minting
 *			end (proxy_keyd_client.c), the keys process (proxy_keyd.c),
 *			the scanner, the HTTP and ClientHello parsers, netwatch,
 *			the control socket, the audit side, the supervisor
 *			(proxy_supervise.c), the processes' plumbing (proxy_proc.c),
 *			the key messages, the reason table, globals
 *
 * Workers are threads, not SO_REUSEPORT processes.  The connection path and DNS need
 * the same registry (sandbox -> policy, mapped-address tables) and the one hash-chained
 * audit log; in one process they share them under locks, and a reload swaps a
 * policy pointer once instead of shipping policies to N processes over IPC and
 * waiting for each to apply them.  Each thread runs its own event_base and its own
 * evdns_base; nothing on the per-connection path takes a lock other than the short
 * registry read lock (lookup, policy reference) and the map's and audit log's own.
 * All workers accept on the one listening socket (and read the one pair of DNS
 * sockets): the kernel hands each connection to one of them, and a busy worker
 * simply wins fewer accepts.  SO_REUSEPORT would pin connections to a worker by
 * hash, and would let any later socket of the same uid join our port group; one
 * socket keeps "port in use" an honest error.
 *
 * Processes.  proxy_main() checks the configuration and hands over to the
 * supervisor (proxy_supervise.c), which forks the worker, proxy_worker() below, and
 * starts a new one whenever it dies.  The worker binds, opens the audit log and the
 * control socket as root, then drops to config.user.  Before any of that it forks
 * the root state reader (proxy_reader.c), which alone keeps root to read the
 * records and policy files, and which forks the keys process (proxy_keyd.c), the
 * one holder of the CA keys.  The processes, and what each holds:
 *	supervisor (root)	the worker's wait status; nothing else
 *	  worker (config.user)	threads, DNS, control socket; the vault's values,
 *				the CA certificates, its own leaf key and leaves
 *	    reader (root)	reads records, policies, vault, CAs, the audit
 *				signing key; opens and rotates the audit log
 *	      keyd (config.user) the sandbox CAs' private keys, the audit signing
 *				key; signs leaves and audit checkpoints
 *	    netwatch (root)	reinstalls airlock's nftables tables
 * The worker does not run on without a helper: the reader exits when keyd does,
 * and the worker when the reader or netwatch does, so that all start again.
 * Then airlockd confines itself for good (proxy_confine.c): no capability, no file
 * system view (before its threads start) and a seccomp allowlist (once they run);
 * what it still needs from the file system after that comes from the reader as
 * descriptors.  Every other process has a filter of its own.
 */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <malloc.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <jansson.h>
#include <openssl/crypto.h>

#include "hostname.h"
#include "log.h"
#include "proxy.h"
#include "proxy_audit.h"
#include "proxy_confine.h"
#include "proxy_path.h"
#include "proxy_core.h"
#include "proxy_dns.h"
#include "proxy_keyd.h"
#include "proxy_netwatch.h"
#include "proxy_keys.h"
#include "proxy_metrics.h"
#include "proxy_syslog.h"
#include "proxy_proc.h"
#include "proxy_supervise.h"
#include "vault.h"

/*
 * Sockets and privileges.
 */

/* A bound IPv4 socket on 0.0.0.0:port (listening if TCP).  fd, or -1 with err. */
static int
proxy_bind(int type, uint16_t port, const char *what, char *err, size_t errlen)
{
	struct sockaddr_in sin;
	int fd, one = 1, saved;

	fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		goto error;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1)
		goto error;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1)
		goto error;
	if (type == SOCK_STREAM && listen(fd, SOMAXCONN) == -1)
		goto error;
	return fd;
 error:
	saved = errno;
	proxy_fmt(err, errlen, "%s %u: %s", what, port, strerror(saved));
	if (fd != -1)
		close(fd);
	errno = saved;
	return -1;
}

/*
 * Two sockets per proxied connection: the usual soft limit of 1024 open files
 * would refuse connections past about 500.  As root (before the drop) the hard
 * limit is first raised to PROXY_NOFILE when lower, then the soft one to the hard.
 */
#define PROXY_NOFILE	65536
static void
proxy_raise_nofile(void)
{
	struct rlimit rl, want = { PROXY_NOFILE, PROXY_NOFILE };

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return;
	if (rl.rlim_max < PROXY_NOFILE && setrlimit(RLIMIT_NOFILE, &want) == 0)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
		log_warn("raising the open-files limit");
}

/*
 * Threads.
 */

static void
proxy_event_log(int severity, const char *msg)
{
	switch (severity) {
	case EVENT_LOG_DEBUG:
		log_debug("libevent: %s", msg);
		break;
	case EVENT_LOG_MSG:
		log_info("libevent: %s", msg);
		break;
	default:
		log_warnx("libevent: %s", msg);
		break;
	}
}

/*
 * glibc's malloc: at most 8 arenas per CPU, its own default, but counted now (an
 * allocator without arenas, ASan's, ignores it).
 */
static void
proxy_arena_max(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		n = 1;
	(void)mallopt(M_ARENA_MAX, (int)(n > 1024 ? 8192 : 8 * n));
}

/*
 * The main thread: signals and the control socket.
 */

/*
 * SIGHUP: after logrotate renamed the audit log away, continue the chain in a new
 * file at the same path; then reload.  The worker opens no file by now: the root
 * reader opens the configured path (created, or as logrotate's "create" made it)
 * and the renamed one, gives the new file to the daemon's user and passes both
 * over (proxy_audit_reopen()).  If that fails, the old file stays in use and the
 * reason is logged.
 */
static void
proxy_sighup_cb(evutil_socket_t sig, short what, void *arg)
{
	json_t *reply;
	char err[512];

	log_info("SIGHUP: reopening the audit log, reloading");
	proxy_checkpoint_reopening();
	if (proxy_audit_reopen(proxy_log, err, sizeof(err)) == -1)
		log_warnx("audit log: %s", err);
	else
		proxy_checkpoint_reopened();
	reply = proxy_cmd_reload("sighup");
	json_decref(reply);
}

/*
 * SIGCHLD: the reader (and so keyd: the reader exits when keyd does) or netwatch
 * ended on its own.  The worker does not run on without them: it exits with
 * PROXY_EXIT_HELPER and the supervisor starts everything again.
 */
#define PROXY_EXIT_HELPER	3
static int proxy_exit_status;

static void
proxy_sigchld_cb(evutil_socket_t sig, short what, void *arg)
{
	struct event_base *base = arg;
	const char *who = NULL;

	if (proxy_reader_gone())
		who = "the root reader";
	else if (proxy_netwatch_gone())
		who = "netwatch";
	if (who == NULL)
		return;
	log_warnx("%s ended: the worker exits so that the supervisor restarts all",
	    who);
	proxy_exit_status = PROXY_EXIT_HELPER;
	event_base_loopbreak(base);
}

static void
proxy_sigterm_cb(evutil_socket_t sig, short what, void *arg)
{
	struct event_base *base = arg;

	log_info("signal %d: exiting", (int)sig);
	event_base_loopbreak(base);
}

/*
 * Opens the audit log (keyed when audit.key_file is set: the key is read here, as
 * root, and wiped; audit_close() wipes the log's copy).  As root, the file is then
 * given to the user airlockd drops to (pw), as the reader gives it every later file
 * of the log after a rotation: the log is the daemon's.
 */
static int
proxy_audit_open(const struct passwd *pw, char *err, size_t errlen)
{
	unsigned char key[AUDIT_KEY_MAX];
	size_t keylen = 0;

	if (proxy_cfg.audit_key_file[0] != '\0') {
		if (audit_key_load(proxy_cfg.audit_key_file, key, &keylen, err,
		    errlen) == -1)
			return -1;
		proxy_log = audit_open_keyed(proxy_cfg.audit_path,
		    proxy_cfg.audit_fsync, key, keylen, err, errlen);
		OPENSSL_cleanse(key, sizeof(key));
	} else
		proxy_log = audit_open(proxy_cfg.audit_path, proxy_cfg.audit_fsync,
		    err, errlen);
	if (proxy_log == NULL)
		return -1;
	if (pw != NULL && chown(proxy_cfg.audit_path, pw->pw_uid, pw->pw_gid) == -1)
		log_warn("%s: chown to %s (a rotated log could not be continued)",
		    proxy_cfg.audit_path, pw->pw_name);
	return 0;
}

/* -n: the configuration and every recorded sandbox's policy.  Exit status. */
static int
proxy_check(void)
{
	struct proxy_state st;
	struct policy_errors errs = { 0 };
	struct passwd *pw;
	struct policy *p;
	char err[512], line[1024];
	size_t i, k;
	int bad = 0;

	if (proxy_state_read_local(&st, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		return 1;
	}
	for (i = 0; i < st.st_n; i++) {
		const struct proxy_rec *r = &st.st_v[i];

		p = proxy_rec_load(r, &errs);
		if (p == NULL) {
			for (k = 0; k < errs.n; k++) {
				policy_error_fmt(&errs.v[k], line, sizeof(line));
				printf("%s: %s\n", r->pr_sb.sb_name, line);
			}
			policy_errors_free(&errs);
			bad = 1;
			continue;
		}
		printf("%s: policy %s OK (%.12s)\n", r->pr_sb.sb_name, p->p_name,
		    p->p_hash);
		policy_free(p);
	}
	proxy_state_free(&st);
	/* What a start as root would refuse (proxy_main()). */
	errno = 0;
	if ((pw = getpwnam(proxy_cfg.user)) == NULL) {
		printf("user '%s' does not exist (make deps creates it)\n",
		    proxy_cfg.user);
		bad = 1;
	} else if (pw->pw_uid == 0) {
		printf("user '%s' is root: airlockd refuses to run as root\n",
		    proxy_cfg.user);
		bad = 1;
	}
	if (!bad)
		printf("configuration OK\n");
	return bad;
}

/* What proxy_main() hands the worker (proxy_supervise.c). */
struct proxy_worker_arg {
	const struct proxy_opts	*wa_opts;
	struct passwd		*wa_pw;		/* config.user, or NULL */
};

/* Not in the foreground: what daemon(3) would do here, but without the fork. */
static int
proxy_detach(void)
{
	int fd;

	if (chdir("/") == -1 || (fd = open("/dev/null", O_RDWR)) == -1)
		return -1;
	if (dup2(fd, STDIN_FILENO) == -1 || dup2(fd, STDOUT_FILENO) == -1 ||
	    dup2(fd, STDERR_FILENO) == -1) {
		close(fd);
		return -1;
	}
	if (fd > STDERR_FILENO)
		close(fd);
	return 0;
}

/*
 * The worker: everything of airlockd after the supervisor forked it.  Its exit
 * status; ready_fd is written once it serves.
 */
static int
proxy_worker(void *warg, int ready_fd)
{
	const struct proxy_worker_arg *wa = warg;
	const struct proxy_opts *o = wa->wa_opts;
	struct event_base *base = NULL;
	struct event *ev_hup = NULL, *ev_term = NULL, *ev_int = NULL;
	struct event *ev_audit = NULL, *ev_chld = NULL;
	struct proxy_ctl *ctl = NULL;
	struct passwd *pw = wa->wa_pw;
	json_t *reply;
	char err[1024] = "";
	int proxy_fd = -1, udp_fd = -1, tcp_fd = -1, ctl_fd = -1, ret = 1;
	int ctl_made = 0;
	int is_root = geteuid() == 0;
	/*
	 * Before any other fd is open: the reader, and keyd which it forks, inherit
	 * nothing else.  Without root too (with this process's rights, keyd then
	 * with the same uid): the confined worker opens no file, dropped or not.
	 */
	if (proxy_reader_start(pw, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		return 1;
	}
	if (is_root) {
		/* Root too: it reinstalls airlock's tables (proxy_netwatch.c). */
		if (proxy_netwatch_start(&proxy_cfg, err, sizeof(err)) == -1) {
			log_warnx("%s", err);
			proxy_keyd_client_stop();
			proxy_reader_stop();
			return 1;
		}
	}
	signal(SIGPIPE, SIG_IGN);

	if ((ctl_fd = proxy_ctl_open(proxy_cfg.control_socket, err,
	    sizeof(err))) == -1) {
		log_warnx("%s", err);
		goto out;
	}
	ctl_made = 1;
	if (proxy_audit_open(pw, err, sizeof(err)) == -1) {
		log_warnx("audit log: %s", err);	/* err names the file */
		goto out;
	}
	/* The syslog sink's CA file and collector's address, as root. */
	if (proxy_syslog_init(err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		goto out;
	}
	/* The signing key to keyd, and the first checkpoint. */
	if (proxy_checkpoint_init(err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		goto out;
	}
	if ((proxy_fd = proxy_bind(SOCK_STREAM, proxy_cfg.proxy_port,
	    "proxy port", err, sizeof(err))) == -1 ||
	    (udp_fd = proxy_bind(SOCK_DGRAM, proxy_cfg.dns_port, "dns port (udp)",
	    err, sizeof(err))) == -1 ||
	    (tcp_fd = proxy_bind(SOCK_STREAM, proxy_cfg.dns_port, "dns port (tcp)",
	    err, sizeof(err))) == -1 || proxy_metrics_bind(err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		goto out;
	}

	/* One leaf key for every minted certificate of this process. */
	if (proxy_keys_leaf_key() == NULL) {
		log_warnx("cannot make the leaf key");
		goto out;
	}
	/* Every recorded sandbox; a missing or unreadable state dir stops us here. */
	reply = proxy_cmd_reload("start");
	if (!json_is_true(json_object_get(reply, "ok"))) {
		log_warnx("%s", json_string_value(json_object_get(reply, "error")));
		json_decref(reply);
		goto out;
	}
	json_decref(reply);

	if (!o->po_foreground) {
		log_init("airlockd", 0, o->po_verbose);
		if (proxy_detach() == -1) {
			log_warn("detaching");
			goto out;
		}
	}
	proxy_raise_nofile();
	if (pw != NULL && proxy_privdrop(pw, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		goto out;
	}
	/* After the drop, which clears it: the worker dies with its supervisor. */
	if (proxy_supervise_bind() == -1) {
		log_warnx("the supervisor is gone");
		goto out;
	}
	if (proxy_harden(err, sizeof(err)) == -1 || vault_process_harden() == -1) {
		log_warnx("%s", err[0] != '\0' ? err : "hardening failed");
		goto out;
	}

	if (evthread_use_pthreads() == -1) {
		log_warnx("evthread_use_pthreads failed");
		goto out;
	}
	if ((base = event_base_new()) == NULL) {
		log_warnx("event_base_new failed");
		goto out;
	}
	if (proxy_threads_new(proxy_fd, udp_fd, tcp_fd, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		goto out;
	}
	if ((ctl = proxy_ctl_new(base, ctl_fd, proxy_ctl_cmds)) == NULL) {
		log_warnx("control socket: cannot serve it");
		goto out;
	}
	ctl_fd = -1;	/* transferred */
	if (proxy_metrics_serve(base) == -1) {
		log_warnx("metrics_listen: cannot serve it");
		goto out;
	}
	if (proxy_netwatch_listen(base) == -1) {
		log_warnx("netwatch: cannot listen to it");
		goto out;
	}
	if ((ev_hup = evsignal_new(base, SIGHUP, proxy_sighup_cb, NULL)) == NULL ||
	    (ev_term = evsignal_new(base, SIGTERM, proxy_sigterm_cb, base)) == NULL ||
	    (ev_int = evsignal_new(base, SIGINT, proxy_sigterm_cb, base)) == NULL ||
	    (ev_chld = evsignal_new(base, SIGCHLD, proxy_sigchld_cb, base)) ==
	    NULL || evsignal_add(ev_hup, NULL) == -1 ||
	    evsignal_add(ev_term, NULL) == -1 || evsignal_add(ev_int, NULL) == -1 ||
	    evsignal_add(ev_chld, NULL) == -1) {
		log_warnx("signal events failed");
		goto out;
	}
	if ((ev_audit = proxy_audit_timer_new(base)) == NULL ||
	    proxy_checkpoint_start(base) == -1) {
		log_warnx("audit flush timer failed");
		goto out;
	}
	/*
	 * Everything is open: from here on nothing of the file system is read.  What
	 * would still read a file lazily is read now: the time zone (syslog's
	 * timestamps), the public suffix list (wildcard rules of a policy loaded
	 * later), and the number of CPUs, which glibc's malloc reads from /sys the
	 * first time a thread would need a ninth arena unless M_ARENA_MAX says how
	 * many there may be (its own default, 8 per CPU); the trust store and
	 * resolv.conf were read whole above.  Then the file system view is closed
	 * while this is the only thread (Landlock binds the threads started after it,
	 * not those before), the threads start, and the seccomp filter goes onto all
	 * of them at once.
	 */
	tzset();
	hostname_preload();
	proxy_arena_max();
	if (proxy_confine_fs(err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		goto out;
	}
	/* After daemon(): a thread does not survive a fork. */
	if (proxy_audit_sync_start() == -1)
		log_warn("audit sync thread: denials wait in the workers");
	if (proxy_syslog_start() == -1) {
		log_warnx("audit.syslog: cannot start the sink's thread");
		goto out;
	}
	if (proxy_threads_run(err, sizeof(err)) == -1 ||
	    proxy_confine(PROXY_ROLE_WORKER, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		goto out;
	}
	log_info("ready: proxy port %u, dns port %u, %u worker(s), uid %u",
	    proxy_cfg.proxy_port, proxy_cfg.dns_port, proxy_threads_count(),
	    (unsigned int)geteuid());
	proxy_supervise_ready(ready_fd);
	ready_fd = -1;
	/* A helper that ended before the event was added. */
	proxy_sigchld_cb(SIGCHLD, 0, base);
	if (event_base_dispatch(base) == -1) {
		log_warnx("main event loop failed");
		goto out;
	}
	ret = proxy_exit_status;
 out:
	proxy_checkpoint_stop();
	if (ready_fd != -1)
		close(ready_fd);
	if (ev_chld != NULL)
		event_free(ev_chld);
	if (ev_hup != NULL)
		event_free(ev_hup);
	if (ev_term != NULL)
		event_free(ev_term);
	if (ev_int != NULL)
		event_free(ev_int);
	if (ev_audit != NULL)
		event_free(ev_audit);
	proxy_ctl_free(ctl);
	proxy_metrics_stop();
	proxy_threads_stop();
	proxy_netwatch_stop();
	if (base != NULL)
		event_base_free(base);
	proxy_reg_clear();
	(void)proxy_keys_set(NULL);
	if (proxy_fd != -1)
		close(proxy_fd);
	if (udp_fd != -1)
		close(udp_fd);
	if (tcp_fd != -1)
		close(tcp_fd);
	if (ctl_fd != -1)
		close(ctl_fd);
	/* Its directory is root's: the reader removes it (else the next start does). */
	if (ctl_made)
		proxy_reader_ctl_unlink();
	if (proxy_log != NULL) {
		proxy_checkpoint_shutdown();
		/* Every record the sink should have, then what it still has. */
		(void)audit_flush(proxy_log, 1);
		proxy_syslog_stop();
		audit_close(proxy_log);
	}
	proxy_log = NULL;
	/* keyd ends with its control channel (the reader waits for it). */
	proxy_keyd_client_stop();
	proxy_keyd_unlink();
	proxy_reader_stop();
	return ret;
}

int
proxy_main(const struct proxy_opts *o)
{
	struct proxy_worker_arg wa = { o, NULL };
	char err[1024] = "";

	log_init("airlockd", 1, o->po_verbose);
	event_set_log_callback(proxy_event_log);
	if (config_load(&proxy_cfg, o->po_config, o->po_state_dir, err,
	    sizeof(err)) == -1) {
		log_warnx("%s", err);
		return 1;
	}
	if (o->po_check)
		return proxy_check();

	if (geteuid() == 0) {
		errno = 0;
		if ((wa.wa_pw = getpwnam(proxy_cfg.user)) == NULL) {
			log_warnx("user '%s' does not exist (make deps creates it)",
			    proxy_cfg.user);
			return 1;
		}
		if (wa.wa_pw->pw_uid == 0) {
			log_warnx("user '%s' is root: refusing to run as root",
			    proxy_cfg.user);
			return 1;
		}
	} else
		log_warnx("not started as root: running as uid %u without "
		    "dropping privileges", (unsigned int)geteuid());
	return proxy_supervise(o->po_foreground, o->po_verbose, proxy_worker, &wa);
}
