/*
 * tests/tools/confine_probe.c: one system call under one of airlockd's filters.
 *
 *	confine_probe ROLE ACTION [PATH]
 *
 * Confines itself with proxy_confine(ROLE) -- the very code and lists airlockd
 * installs, the worker's Landlock domain included -- then makes ACTION's call once.
 * Exits 0 if the call was let through and worked, 3 if it was let through and
 * failed (errno printed), 1 if it could not confine itself, 2 for usage.  A call
 * the filter refuses does not return: the process dies of SIGSYS.  As root it
 * first drops to nobody (65534) for the worker and keyd roles, as airlockd drops
 * before it confines its worker (which refuses to run with capabilities).
 * tests/unit/confine.c runs it for every role.
 *
 * ACTION: getpid, inet, inet6, unix (a socket of that family), netlink (AF_NETLINK,
 * NETLINK_ROUTE), nfnetlink (NETLINK_NETFILTER), packet (AF_PACKET), open PATH,
 * execve (/bin/true), ptrace (PTRACE_TRACEME), fork (a bare clone), mmap_exec,
 * mprotect_exec, sendfd (SCM_RIGHTS over a socketpair made before), setuid, mount,
 * chroot, bpf, keyctl, perf_event_open, userfaultfd, io_uring, process_vm.  The
 * refused ones are made with arguments that would do nothing harmful if a filter
 * ever let them through.
 */
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <linux/netlink.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../proxy/proxy_confine.h"

static int probe_sv[2] = { -1, -1 };	/* for sendfd, made before confining */

static int
probe_socket(int family, int type, int proto)
{
	return socket(family, type | SOCK_CLOEXEC, proto);
}

static long
probe_sendfd(void)
{
	union {
		struct cmsghdr	 hdr;
		char		 buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct msghdr msg;
	struct iovec iov;
	char c = 'x';
	int fd = 0;

	memset(&msg, 0, sizeof(msg));
	memset(&cm, 0, sizeof(cm));
	iov.iov_base = &c;
	iov.iov_len = 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cm.buf;
	msg.msg_controllen = sizeof(cm.buf);
	cm.hdr.cmsg_level = SOL_SOCKET;
	cm.hdr.cmsg_type = SCM_RIGHTS;
	cm.hdr.cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(&cm.hdr), &fd, sizeof(int));
	if (sendmsg(probe_sv[0], &msg, 0) != 1)
		return -1;
	memset(cm.buf, 0, sizeof(cm.buf));
	msg.msg_controllen = sizeof(cm.buf);
	return recvmsg(probe_sv[1], &msg, 0) == 1 ? 0 : -1;
}

/*
 * A thread frees arena memory past the trim threshold: glibc then shrinks the
 * arena's heap, which the first time reads /proc/sys/vm/overcommit_memory unless
 * the worker's confinement did it first (proxy_confine_fs()).  The thread starts
 * before the filter, as the worker's do, and works when told to (probe_go).
 */
static int probe_go[2] = { -1, -1 };
static pthread_t probe_thread;

static void *
probe_shrink_main(void *arg)
{
	void *b[4];
	char c;
	int i;

	(void)arg;
	if (read(probe_go[0], &c, 1) != 1)
		return NULL;
	for (i = 0; i < 4; i++)
		if ((b[i] = malloc(100 * 1024)) != NULL)
			memset(b[i], 1, 100 * 1024);
	for (i = 3; i >= 0; i--)
		free(b[i]);
	return NULL;
}

/* The call; its result (>= 0 worked, -1 failed with errno).  -2: no such action. */
static long
probe_action(const char *a, const char *path)
{
	char *const argv[] = { "true", NULL };
	void *p;

	if (strcmp(a, "getpid") == 0)
		return getpid();
	if (strcmp(a, "shrink") == 0) {
		if (probe_go[1] == -1 || write(probe_go[1], "x", 1) != 1 ||
		    pthread_join(probe_thread, NULL) != 0)
			return -1;
		return 0;
	}
	if (strcmp(a, "inet") == 0)
		return probe_socket(AF_INET, SOCK_STREAM, 0);
	if (strcmp(a, "inet6") == 0)
		return probe_socket(AF_INET6, SOCK_STREAM, 0);
	if (strcmp(a, "unix") == 0)
		return probe_socket(AF_UNIX, SOCK_STREAM, 0);
	if (strcmp(a, "netlink") == 0)
		return probe_socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
	if (strcmp(a, "nfnetlink") == 0)
		return probe_socket(AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER);
	if (strcmp(a, "packet") == 0)
		return probe_socket(AF_PACKET, SOCK_RAW, 0);
	if (strcmp(a, "open") == 0 && path != NULL)
		return open(path, O_RDONLY | O_CLOEXEC);
	if (strcmp(a, "execve") == 0)
		return execve("/bin/true", argv, argv + 1);
	if (strcmp(a, "ptrace") == 0)
		return ptrace(PTRACE_TRACEME, 0, NULL, NULL);
	if (strcmp(a, "fork") == 0) {
		long pid = syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, 0);

		if (pid == 0)
			_exit(0);
		return pid;
	}
	if (strcmp(a, "mmap_exec") == 0)
		return mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE |
		    MAP_ANONYMOUS, -1, 0) == MAP_FAILED ? -1 : 0;
	if (strcmp(a, "mprotect_exec") == 0) {
		if ((p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE |
		    MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)
			return -1;
		return mprotect(p, 4096, PROT_READ | PROT_EXEC);
	}
	if (strcmp(a, "sendfd") == 0)
		return probe_sendfd();
	if (strcmp(a, "setuid") == 0)
		return syscall(SYS_setuid, (uid_t)getuid());
	if (strcmp(a, "mount") == 0)
		return syscall(SYS_mount, NULL, NULL, NULL, 0UL, NULL);
	if (strcmp(a, "chroot") == 0)
		return syscall(SYS_chroot, "/nonexistent-confine-probe");
	if (strcmp(a, "bpf") == 0)
		return syscall(SYS_bpf, -1, NULL, 0);
	if (strcmp(a, "keyctl") == 0)
		return syscall(SYS_keyctl, -1, 0, 0, 0, 0);
	if (strcmp(a, "perf_event_open") == 0)
		return syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0);
	if (strcmp(a, "userfaultfd") == 0)
		return syscall(SYS_userfaultfd, -1);
	if (strcmp(a, "io_uring") == 0)
		return syscall(SYS_io_uring_setup, 0, NULL);
	if (strcmp(a, "process_vm") == 0)
		return syscall(SYS_process_vm_readv, getppid(), NULL, 0UL, NULL, 0UL,
		    0UL);
	return -2;
}

int
main(int argc, char **argv)
{
	enum proxy_role role;
	gid_t nobody = 65534;
	char err[512];
	long rv;

	if (argc < 3 || proxy_role_parse(argv[1], &role) == -1) {
		fprintf(stderr, "usage: confine_probe ROLE ACTION [PATH]\n");
		return 2;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, probe_sv) == -1) {
		perror("socketpair");
		return 1;
	}
	if (geteuid() == 0 && (role == PROXY_ROLE_WORKER || role == PROXY_ROLE_KEYD) &&
	    (setgroups(1, &nobody) == -1 || setresgid(nobody, nobody, nobody) == -1 ||
	    setresuid(65534, 65534, 65534) == -1)) {
		perror("dropping to nobody");
		return 1;
	}
	/* As the worker: its file system view closed, then its threads, then the filter. */
	if (strcmp(argv[2], "shrink") == 0 && role == PROXY_ROLE_WORKER &&
	    (proxy_confine_fs(err, sizeof(err)) == -1 || pipe(probe_go) == -1 ||
	    pthread_create(&probe_thread, NULL, probe_shrink_main, NULL) != 0)) {
		fprintf(stderr, "confine_probe: shrink: %s\n", err);
		return 1;
	}
	if (proxy_confine(role, err, sizeof(err)) == -1) {
		fprintf(stderr, "confine_probe: %s\n", err);
		return 1;
	}
	rv = probe_action(argv[2], argc > 3 ? argv[3] : NULL);
	if (rv == -2) {
		fprintf(stderr, "confine_probe: no action %s\n", argv[2]);
		_exit(2);
	}
	if (rv < 0) {
		fprintf(stderr, "confine_probe: %s %s: let through, failed: %s\n",
		    argv[1], argv[2], strerror(errno));
		_exit(3);
	}
	_exit(0);
}
