/*
 * tests/unit/confine.c: the seccomp allowlists of proxy/proxy_confine.c, through
 * tests/tools/confine_probe (the same module, the same lists airlockd installs):
 * for the worker and the keys process, and the root reader and netwatch, each
 * refused call ends the probe with SIGSYS (the filter's SCMP_ACT_KILL_PROCESS),
 * and each positive control exits 0.  No root needed.  Under make SAN=1 the
 * filters let the sanitizers' own calls through (open, ptrace, clone, mprotect):
 * those cases are skipped there, every other one still holds.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../proxy/proxy_confine.h"
#include "../tap.h"

enum want { DIES, RUNS, DIES_BUT_SAN };

struct probe_case {
	const char	*pc_role;
	const char	*pc_action;
	enum want	 pc_want;
};

static const struct probe_case cases[] = {
	{ "worker", "getpid", RUNS },
	/* glibc shrinking a thread's arena after a burst (once: a file read) */
	{ "worker", "shrink", RUNS },
	{ "worker", "inet", RUNS },
	{ "worker", "inet6", RUNS },
	{ "worker", "unix", RUNS },
	{ "worker", "execve", DIES },
	{ "worker", "open", DIES_BUT_SAN },
	{ "worker", "ptrace", DIES_BUT_SAN },
	{ "worker", "netlink", DIES },
	{ "worker", "nfnetlink", DIES },
	{ "worker", "packet", DIES },
	{ "worker", "fork", DIES_BUT_SAN },
	{ "worker", "mmap_exec", DIES },
	{ "worker", "mprotect_exec", DIES_BUT_SAN },
	{ "worker", "setuid", DIES },
	{ "worker", "mount", DIES },
	{ "worker", "chroot", DIES },
	{ "worker", "bpf", DIES },
	{ "worker", "keyctl", DIES },
	{ "worker", "perf_event_open", DIES },
	{ "worker", "userfaultfd", DIES },
	{ "worker", "io_uring", DIES },
	{ "worker", "process_vm", DIES },
	{ "keyd", "getpid", RUNS },
	{ "keyd", "sendfd", RUNS },
	{ "keyd", "execve", DIES },
	{ "keyd", "open", DIES_BUT_SAN },
	{ "keyd", "ptrace", DIES_BUT_SAN },
	{ "keyd", "netlink", DIES },
	{ "keyd", "inet", DIES },
	{ "keyd", "unix", DIES },
	{ "keyd", "fork", DIES_BUT_SAN },
	{ "keyd", "mprotect_exec", DIES_BUT_SAN },
	{ "keyd", "setuid", DIES },
	{ "keyd", "bpf", DIES },
	{ "reader", "open", RUNS },
	{ "reader", "getpid", RUNS },
	{ "reader", "execve", DIES },
	{ "reader", "ptrace", DIES_BUT_SAN },
	{ "reader", "inet", DIES },
	{ "reader", "unix", DIES },
	{ "reader", "netlink", DIES },
	{ "reader", "setuid", DIES },
	{ "reader", "mount", DIES },
	{ "netwatch", "nfnetlink", RUNS },
	{ "netwatch", "getpid", RUNS },
	{ "netwatch", "execve", DIES },
	{ "netwatch", "ptrace", DIES_BUT_SAN },
	{ "netwatch", "packet", DIES },
	{ "netwatch", "inet6", DIES },
	{ "netwatch", "setuid", DIES },
	{ "netwatch", "mount", DIES },
};

/* The probe beside this test's build: build/tests/unit/X.t -> ../tools/. */
static int
probe_path(char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n;

	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) == -1)
		return -1;
	self[n] = '\0';
	if ((size_t)snprintf(out, len, "%s/../tools/confine_probe",
	    dirname(self)) >= len)
		return -1;
	return access(out, X_OK);
}

/* Runs the probe; its wait status, or -1. */
static int
probe_run(const char *probe, const char *role, const char *action,
    const char *file)
{
	int status;
	pid_t pid;

	fflush(NULL);
	if ((pid = fork()) == -1)
		return -1;
	if (pid == 0) {
		execl(probe, probe, role, action, file, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			return -1;
	return status;
}

static const char *
status_str(int st, char *buf, size_t len)
{
	if (WIFSIGNALED(st))
		snprintf(buf, len, "signal %d", WTERMSIG(st));
	else if (WIFEXITED(st))
		snprintf(buf, len, "exit %d", WEXITSTATUS(st));
	else
		snprintf(buf, len, "status %#x", st);
	return buf;
}

int
main(void)
{
	char probe[PATH_MAX], file[PATH_MAX], buf[64];
	const struct probe_case *c;
	size_t i;
	int st, fd;

	if (probe_path(probe, sizeof(probe)) == -1)
		skip_all("tests/tools/confine_probe not built");
	/* Readable by whoever the probe is (as root it is nobody for the worker). */
	snprintf(file, sizeof(file), "%s/readme", tap_tmpdir());
	if ((fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1 ||
	    write(fd, "x\n", 2) != 2 || close(fd) == -1)
		bail("%s", file);
	plan_lazy();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		c = &cases[i];
		if (c->pc_want == DIES_BUT_SAN && proxy_confine_san()) {
			skip("%s %s: the SAN build lets it through for the "
			    "sanitizers", c->pc_role, c->pc_action);
			continue;
		}
		st = probe_run(probe, c->pc_role, c->pc_action, file);
		if (c->pc_want == RUNS)
			ok(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
			    "%s: %s is allowed (%s)", c->pc_role, c->pc_action,
			    status_str(st, buf, sizeof(buf)));
		else
			ok(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS,
			    "%s: %s dies of SIGSYS (%s)", c->pc_role,
			    c->pc_action, status_str(st, buf, sizeof(buf)));
	}
	/* A name the probe does not know is its usage error, not a filter's. */
	st = probe_run(probe, "nosuchrole", "getpid", file);
	ok(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 2,
	    "an unknown role is refused before anything is installed");
	return 0;
}
