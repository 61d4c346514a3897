/*
 * proxy/proxy_supervise.c: the supervisor, airlockd's first process.
 *
 * It forks the worker, which is the rest of airlockd (proxy.c's start-up and event
 * loop; the worker forks the reader, keyd and netwatch), and stays behind with a
 * signal descriptor, the worker's readiness pipe and, as root, the kernel log.
 * When the worker ends without being asked to (a crash, its seccomp filter killing
 * it, SIGKILL, or one of its helpers dying, which makes it exit: proxy.c), the
 * supervisor says once how: the signal, and for a seccomp kill the process and the
 * system call, read from the kernel's audit line (type 1326) in /dev/kmsg.  Then it
 * starts a new worker, after a pause that doubles (0.1 s to 10 s) while workers
 * keep dying within a minute of their start.
 *
 * Fail closed meanwhile: the listening sockets are the worker's, so while none runs
 * nothing listens on the proxy and DNS ports.  A VM's redirected connection is
 * reset and its query unanswered; nothing is passed.  The new worker reads every
 * record and policy afresh (as a first start does) and continues the audit chain
 * from the file's last record.
 *
 * The supervisor is the one process without a seccomp filter of its own: a filter
 * is inherited across fork and cannot be lifted, so one fitted to the supervisor
 * would be the worker's too before the worker's start-up (files, sockets, the
 * privilege drop).  What it takes in is a wait status, one byte from its child
 * and kernel log lines only root can write; it parses no byte of a VM or an origin.
 * It is a child subreaper, so the old worker's helpers, orphaned, are its children:
 * any still alive when the next worker starts is ended (by PID, never reaped
 * before, so never another process).
 */
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <seccomp.h>

#include "log.h"
#include "proxy_proc.h"
#include "proxy_supervise.h"

#define SUP_TREE_MAX	16	/* the worker and its helpers, recorded when ready */
#define SUP_PAUSE_MIN	100	/* ms before the first restart */
#define SUP_PAUSE_MAX	10000
#define SUP_STABLE_MS	60000	/* a worker that lived this long resets the pause */
#define SUP_KMSG_WAIT	300	/* ms to wait for a seccomp kill's kernel line */

static pid_t sup_pid = -1;	/* the supervisor, as the worker checks it */

struct sup {
	proxy_worker_fn	 fn;
	void		*arg;
	sigset_t	 oldmask;
	int		 sigfd;
	int		 kmsg;		/* /dev/kmsg, or -1 */
	int		 up;		/* not in the foreground: to the first process */
	pid_t		 worker;
	int		 ready_fd;	/* the worker's readiness pipe, or -1 */
	int		 ready;		/* the current worker said it serves */
	int		 ever_ready;
	int		 stopping;
	long long	 started;	/* ms, monotonic */
	long long	 restart_at;	/* ms, or 0 */
	int		 pause;		/* ms */
	pid_t		 tree[SUP_TREE_MAX];	/* the worker's helpers when ready */
	size_t		 ntree;
};

static long long
sup_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The worker's helpers as it is ready: its children and theirs (the reader, keyd,
 * netwatch), so that a seccomp line of one of them is known as ours.
 */
static void
sup_tree_add(struct sup *s, pid_t pid, int depth)
{
	char path[64], buf[512], *p, *end;
	FILE *f;
	long c;

	if (depth > 3)
		return;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
	    (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return;
	if (fgets(buf, sizeof(buf), f) == NULL)
		buf[0] = '\0';
	fclose(f);
	for (p = buf; *p != '\0'; p = end) {
		errno = 0;
		c = strtol(p, &end, 10);
		if (end == p || errno != 0 || c <= 0)
			break;
		if (s->ntree < SUP_TREE_MAX)
			s->tree[s->ntree++] = (pid_t)c;
		sup_tree_add(s, (pid_t)c, depth + 1);
	}
}

static const char *
sup_role(const struct sup *s, pid_t pid)
{
	size_t i;

	if (pid == s->worker)
		return "worker";
	for (i = 0; i < s->ntree; i++)
		if (s->tree[i] == pid)
			return "helper";
	return NULL;
}

/*
 * The kernel log since the last read: each seccomp line (audit type 1326) of a
 * process of this worker's tree is logged, once (the log is read on).  Waits up to
 * wait_ms for one about pid.  1 if a line about pid was seen, else 0.
 */
static int
sup_kmsg_scan(struct sup *s, pid_t want, int wait_ms)
{
	char rec[2048], *p, *comm, name_buf[32];
	const char *role;
	long long deadline = sup_now() + wait_ms;
	ssize_t n;
	long pid, nr;
	char *name;
	int seen = 0;

	if (s->kmsg == -1)
		return 0;
	for (;;) {
		n = read(s->kmsg, rec, sizeof(rec) - 1);
		if (n == -1 && errno == EPIPE)
			continue;	/* records overwritten: go on with the next */
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (seen || sup_now() >= deadline)
				break;
			poll(NULL, 0, 10);
			continue;
		}
		rec[n] = '\0';
		if (strstr(rec, "type=1326") == NULL ||
		    (p = strstr(rec, " pid=")) == NULL)
			continue;
		pid = strtol(p + 5, NULL, 10);
		if ((role = sup_role(s, (pid_t)pid)) == NULL ||
		    (p = strstr(rec, " syscall=")) == NULL)
			continue;
		nr = strtol(p + 9, NULL, 10);
		name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, (int)nr);
		name_buf[0] = '\0';
		if ((comm = strstr(rec, " comm=\"")) != NULL)
			sscanf(comm + 7, "%31[^\"]", name_buf);
		log_warnx("seccomp: %s pid %ld (%s) killed on system call %ld (%s)",
		    role, pid, name_buf[0] != '\0' ? name_buf : "?", nr,
		    name != NULL ? name : "unknown");
		free(name);
		if ((pid_t)pid == want)
			seen = 1;
	}
	return seen;
}

/* The worker ended: how, once; a restart after the pause, or 1 to stop here. */
static int
sup_worker_gone(struct sup *s, int status)
{
	long long now = sup_now();
	pid_t pid = s->worker;

	if (s->ready_fd != -1) {
		close(s->ready_fd);
		s->ready_fd = -1;
	}
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) {
		log_warnx("worker (pid %d) killed by its seccomp filter", (int)pid);
		if (!sup_kmsg_scan(s, pid, SUP_KMSG_WAIT))
			log_warnx("seccomp: the system call is not known (no kernel "
			    "audit line: %s)", s->kmsg == -1 ?
			    "/dev/kmsg not readable" : "none written");
	} else {
		if (WIFSIGNALED(status))
			log_warnx("worker (pid %d) killed by signal %d (%s)", (int)pid,
			    WTERMSIG(status), strsignal(WTERMSIG(status)));
		else if (s->ever_ready &&
		    (!s->stopping || WEXITSTATUS(status) != 0))
			/* a first start that failed has said why */
			log_warnx("worker (pid %d) exited with status %d", (int)pid,
			    WEXITSTATUS(status));
		/* a helper killed by its filter makes the worker exit */
		(void)sup_kmsg_scan(s, -1, 100);
	}
	s->worker = -1;		/* known as the worker's until the log is read */
	if (s->stopping || !s->ever_ready)
		return 1;
	if (!s->ready || now - s->started < SUP_STABLE_MS)
		s->pause = s->pause == 0 ? SUP_PAUSE_MIN : s->pause * 2;
	else
		s->pause = SUP_PAUSE_MIN;
	if (s->pause > SUP_PAUSE_MAX)
		s->pause = SUP_PAUSE_MAX;
	s->restart_at = now + s->pause;
	log_warnx("no worker: the proxy and DNS ports are closed (connections are "
	    "refused) until a new one starts in %d ms", s->pause);
	return 0;
}

/* The old worker's helpers that outlived it (our children now): ended. */
static void
sup_tree_end(struct sup *s)
{
	size_t i;

	for (i = 0; i < s->ntree; i++) {
		if (waitpid(s->tree[i], NULL, WNOHANG) == 0) {
			log_warnx("helper pid %d outlived its worker: ending it",
			    (int)s->tree[i]);
			kill(s->tree[i], SIGKILL);
			while (waitpid(s->tree[i], NULL, 0) == -1 && errno == EINTR)
				;
		}
	}
	s->ntree = 0;
}

static int
sup_spawn(struct sup *s)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) == -1) {
		log_warn("pipe");
		return -1;
	}
	fflush(NULL);
	if ((pid = fork()) == -1) {
		log_warn("fork");
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		close(s->sigfd);
		if (s->kmsg != -1)
			close(s->kmsg);
		if (s->up != -1)
			close(s->up);
		sigprocmask(SIG_SETMASK, &s->oldmask, NULL);
		exit(s->fn(s->arg, p[1]));
	}
	close(p[1]);
	s->worker = pid;
	s->ready_fd = p[0];
	s->ready = 0;
	s->started = sup_now();
	s->restart_at = 0;
	return 0;
}

/* Not in the foreground, once the first worker serves: detached for good. */
static void
sup_detached(struct sup *s, int verbose)
{
	int fd;
	char c = 'R';

	if (s->up == -1)
		return;
	if ((fd = open("/dev/null", O_RDWR)) != -1) {
		(void)dup2(fd, STDIN_FILENO);
		(void)dup2(fd, STDOUT_FILENO);
		(void)dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	if (chdir("/") == -1)
		log_warn("chdir /");
	log_init("airlockd", 0, verbose);
	log_procinit("supervisor");
	if (write(s->up, &c, 1) != 1)
		log_warn("telling the first process");
	close(s->up);
	s->up = -1;
}

static int
sup_loop(struct sup *s, int verbose)
{
	struct signalfd_siginfo si;
	struct pollfd pfd[2];
	int status, timeout, rv;
	nfds_t n;
	pid_t pid;
	char c;

	for (;;) {
		if (s->worker == -1 && s->restart_at != 0 &&
		    sup_now() >= s->restart_at) {
			sup_tree_end(s);
			if (sup_spawn(s) == -1)
				s->restart_at = sup_now() + SUP_PAUSE_MAX;
			else
				log_info("worker restarted: pid %d", (int)s->worker);
		}
		pfd[0].fd = s->sigfd;
		pfd[0].events = POLLIN;
		n = 1;
		if (s->ready_fd != -1) {
			pfd[1].fd = s->ready_fd;
			pfd[1].events = POLLIN;
			n = 2;
		}
		timeout = -1;
		if (s->worker == -1 && s->restart_at != 0) {
			long long d = s->restart_at - sup_now();

			timeout = d < 0 ? 0 : (int)d;
		}
		if (poll(pfd, n, timeout) == -1) {
			if (errno == EINTR)
				continue;
			log_warn("poll");
			return 1;
		}
		if (n == 2 && pfd[1].revents != 0) {
			ssize_t r = read(s->ready_fd, &c, 1);

			if (r == 1 && c == 'R') {
				s->ready = 1;
				s->ever_ready = 1;
				s->ntree = 0;
				sup_tree_add(s, s->worker, 0);
				sup_detached(s, verbose);
			}
			if (r != -1 || errno != EINTR) {
				close(s->ready_fd);
				s->ready_fd = -1;
			}
		}
		if (!(pfd[0].revents & POLLIN))
			continue;
		if (read(s->sigfd, &si, sizeof(si)) != sizeof(si))
			continue;
		switch (si.ssi_signo) {
		case SIGHUP:
			/*
			 * Not before it serves (it would die of it): a worker still
			 * starting opens the log and reads every policy anyway.
			 */
			if (s->worker != -1 && s->ready)
				kill(s->worker, SIGHUP);
			break;
		case SIGTERM:
		case SIGINT:
			s->stopping = 1;
			if (s->worker == -1)
				return 0;
			kill(s->worker, SIGTERM);
			break;
		case SIGCHLD:
			while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
				if (pid != s->worker)
					continue;	/* an orphaned helper */
				if (sup_worker_gone(s, status)) {
					rv = WIFEXITED(status) ? WEXITSTATUS(status) :
					    128 + WTERMSIG(status);
					return s->stopping && WIFEXITED(status) ? rv :
					    (rv == 0 ? 1 : rv);
				}
			}
			break;
		}
	}
}

int
proxy_supervise(int foreground, int verbose, proxy_worker_fn fn, void *arg)
{
	struct sup s;
	sigset_t set;
	int up[2], rv;
	pid_t pid;
	char c, herr[256];

	memset(&s, 0, sizeof(s));
	s.fn = fn;
	s.arg = arg;
	s.up = s.ready_fd = s.kmsg = -1;
	s.worker = -1;
	if (!foreground) {
		/* The first process waits for the first worker's word, then exits. */
		if (pipe2(up, O_CLOEXEC) == -1) {
			log_warn("pipe");
			return 1;
		}
		fflush(NULL);
		if ((pid = fork()) == -1) {
			log_warn("fork");
			return 1;
		}
		if (pid > 0) {
			close(up[1]);
			while ((rv = (int)read(up[0], &c, 1)) == -1 && errno == EINTR)
				;
			return rv == 1 && c == 'R' ? 0 : 1;
		}
		close(up[0]);
		s.up = up[1];
		(void)setsid();
	}
	sup_pid = getpid();
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
		log_warn("PR_SET_CHILD_SUBREAPER");
	/* No core, not dumpable, no_new_privs: the worker inherits them too. */
	if (proxy_harden(herr, sizeof(herr)) == -1) {
		log_warnx("%s", herr);
		return 1;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, &s.oldmask) == -1 ||
	    (s.sigfd = signalfd(-1, &set, SFD_CLOEXEC)) == -1) {
		log_warn("signalfd");
		return 1;
	}
	/* Root only (dmesg_restrict); read from here on. */
	if ((s.kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC)) != -1 &&
	    lseek(s.kmsg, 0, SEEK_END) == -1) {
		close(s.kmsg);
		s.kmsg = -1;
	}
	if (sup_spawn(&s) == -1)
		return 1;
	rv = sup_loop(&s, verbose);
	if (s.kmsg != -1)
		close(s.kmsg);
	close(s.sigfd);
	return rv;
}

int
proxy_supervise_bind(void)
{
	if (sup_pid == -1)
		return 0;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != sup_pid)
		return -1;
	return 0;
}

pid_t
proxy_supervisor_pid(void)
{
	return sup_pid;
}

void
proxy_supervise_ready(int ready_fd)
{
	char c = 'R';

	if (ready_fd == -1)
		return;
	if (write(ready_fd, &c, 1) != 1)
		log_warn("telling the supervisor");
	close(ready_fd);
}
