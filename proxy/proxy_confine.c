/*
 * proxy/proxy_confine.c: the seccomp-bpf allowlists of airlockd's processes, and the
 * worker's empty file system view (Landlock).
 *
 * Every process is confined once its start-up is over, for good, with libseccomp:
 * the default action is SCMP_ACT_KILL_PROCESS (a system call that is not listed ends
 * the whole process with SIGSYS: no errno for an attacker to probe with, and no
 * thread left running half-confined), a foreign architecture (i386 or x32 entry
 * points) kills too, and the filter goes to every thread at once (TSYNC).  The
 * worker closes its file system view before it starts its threads (Landlock binds
 * only the calling thread and its later children) and loads its filter once they
 * run, so that its list needs no clone().  The lists were taken from what each
 * process really calls (strace -f of every integration test that starts airlockd,
 * then the same tests, both builds, with SCMP_ACT_LOG as the default and the
 * kernel's log read for what it would have refused: nothing); a comment says why
 * each entry that is not obvious is there.
 *
 * What no role has: execve/execveat, fork, clone and clone3 (the worker's threads
 * exist by then), ptrace and process_vm_*, mount, chroot and pivot_root, the setuid
 * family, bpf, kexec, init/finit_module, keyctl and add_key, perf_event_open,
 * userfaultfd, io_uring, reboot, swapon, ...: anything not listed.  mmap and
 * mprotect are refused PROT_EXEC (no new code after start-up: dlopen() would need
 * it, and nothing is loaded that late).
 *
 * The worker (airlockd after the privilege drop, with its worker threads) opens no
 * file at all: open/openat/openat2/creat are not listed, and on top of the filter a
 * Landlock domain that handles every file system right and grants none (where the
 * kernel has Landlock; an old kernel gets a line in the log and the filter alone).
 * What it still needs from the file system comes as file descriptors from the root
 * reader (the audit log after a rotation: proxy_reader.c) or was read before (the
 * trust store, resolv.conf and /etc/hosts, the public suffix list).  Its sockets are
 * AF_INET, AF_INET6 and AF_UNIX (syslog's reconnect to /dev/log) only: no netlink, no
 * packet sockets.
 *
 * AIRLOCK_SAN (make SAN=1) adds what ASan, UBSan and LSan call themselves: reading
 * /proc/self/maps and the binary for a report, LSan's tracer thread at exit (clone,
 * ptrace, prctl), and a read-only Landlock rule for the whole tree to let those
 * reads through.  Only that build has it; the production lists are the same with
 * or without it.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include <linux/capability.h>
#include <linux/landlock.h>
#include <linux/netlink.h>

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <seccomp.h>

#include "log.h"
#include "proxy_confine.h"
#include "strtab.h"

/* What the kernel's headers on an older build machine may not name yet. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE		(1ULL << 14)	/* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV		(1ULL << 15)	/* ABI 5 */
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET	(1ULL << 0)	/* ABI 6 */
#define LANDLOCK_SCOPE_SIGNAL			(1ULL << 1)
#endif
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset	444
#define __NR_landlock_add_rule		445
#define __NR_landlock_restrict_self	446
#endif

/* struct landlock_ruleset_attr as of ABI 6 (older kernels take it with zeros). */
struct confine_ll_attr {
	uint64_t	 ll_fs;
	uint64_t	 ll_net;
	uint64_t	 ll_scoped;
};

/* One allowlist entry: a system call, with up to two argument conditions. */
struct confine_rule {
	int		 cr_nr;
	unsigned int	 cr_argc;
	struct scmp_arg_cmp cr_arg[2];
};

#define SYS(name)	{ SCMP_SYS(name), 0, { { 0, 0, 0, 0 } } }
/* Argument a equal to v. */
#define SYS_EQ(name, a, v) \
	{ SCMP_SYS(name), 1, { { (a), SCMP_CMP_EQ, (v), 0 } } }
/* Argument a with the bits of mask m equal to v. */
#define SYS_MASK(name, a, m, v) \
	{ SCMP_SYS(name), 1, { { (a), SCMP_CMP_MASKED_EQ, (m), (v) } } }
#define SYS_EQ2(name, a, v, b, w) \
	{ SCMP_SYS(name), 2, { { (a), SCMP_CMP_EQ, (v), 0 }, \
	    { (b), SCMP_CMP_EQ, (w), 0 } } }
#define NRULES(v)	(sizeof(v) / sizeof((v)[0]))

/*
 * The least any of them needs: the keys process's whole list (a single-threaded
 * poll() loop over socketpairs that signs with OpenSSL and passes descriptors).
 */
static const struct confine_rule confine_base[] = {
	SYS(poll),
	SYS(ppoll),
	SYS(read),
	SYS(write),
	SYS(readv),
	SYS(writev),
	SYS(recvmsg),		/* SCM_RIGHTS */
	SYS(sendmsg),
	SYS(close),
	SYS(exit),
	SYS(exit_group),
	SYS(futex),		/* OpenSSL's and libc's locks */
	SYS_MASK(mmap, 2, PROT_EXEC, 0),	/* malloc; never executable */
	SYS(munmap),
	SYS(brk),
	SYS(mremap),		/* realloc of a large block */
	SYS(madvise),		/* free() giving pages back */
	SYS(getrandom),		/* OpenSSL's seed */
	SYS(clock_gettime),	/* when the vDSO cannot answer */
	SYS(rt_sigreturn),
	SYS(getpid),		/* OpenSSL's fork check */
};

/*
 * Every process of airlockd's own (worker, reader, netwatch) on top of that.  Where
 * a libc may spell one operation with either of two calls, both are listed.
 */
static const struct confine_rule confine_common[] = {
	SYS_MASK(mprotect, 2, PROT_EXEC, 0),	/* malloc's arenas grow in place */
	SYS(fstat),
	SYS(lseek),
	SYS(fcntl),		/* F_GETFL/F_SETFL, F_DUPFD_CLOEXEC */
	SYS(gettid),
	SYS(gettimeofday),
	SYS(restart_syscall),	/* a poll() resumed after a stop */
	SYS(rt_sigprocmask),
	SYS(rt_sigaction),	/* libevent's signals; restored at exit */
	SYS(sched_yield),
	SYS(sched_getaffinity),	/* glibc malloc: how many arenas */
	SYS(sysinfo),		/* glibc qsort(): sysconf(_SC_PHYS_PAGES) */
	/* A new thread's first calls, should one still be starting (TSYNC). */
	SYS(set_robust_list),
	SYS(rseq),
	SYS(getuid),
	SYS(geteuid),
};

/* The worker: sockets it already has and those it dials, and the audit log's fd. */
static const struct confine_rule confine_worker[] = {
	SYS(epoll_wait),
	SYS(epoll_pwait),
	SYS(epoll_ctl),
	/* Upstream TCP, evdns's UDP, SIOCGIFCONF; AF_UNIX: syslog reconnecting. */
	SYS_EQ(socket, 0, AF_INET),
	SYS_EQ(socket, 0, AF_INET6),
	SYS_EQ(socket, 0, AF_UNIX),
	/* A worker thread's channel to keyd, (re)opened at its first need. */
	SYS_EQ(socketpair, 0, AF_UNIX),
	SYS(connect),
	SYS(accept),
	SYS(accept4),
	SYS(getsockopt),	/* SO_ERROR, SO_ORIGINAL_DST, SO_PEERCRED */
	SYS(setsockopt),	/* TCP_NODELAY, SO_LINGER */
	SYS(getsockname),
	SYS(shutdown),
	SYS(sendto),
	SYS(recvfrom),
	SYS_EQ(ioctl, 1, FIONREAD),	/* libevent sizes its reads */
	SYS_EQ(ioctl, 1, SIOCGIFCONF),	/* the host's own addresses */
	/* glibc's fstat() is newfstatat(fd, "", AT_EMPTY_PATH): an fd only. */
	SYS_MASK(newfstatat, 3, AT_EMPTY_PATH, AT_EMPTY_PATH),
	/* The audit log: its lock and last record on a reopened fd, a torn record
	 * undone, group commit. */
	SYS(flock),
	SYS(pread64),
	SYS(ftruncate),
	SYS(fdatasync),
	SYS(wait4),		/* the root children, at exit */
};

/*
 * keyd on top of the base: its log lines on stderr (stdio's first write asks what
 * the stream is: fstat, which glibc spells newfstatat(fd, "", AT_EMPTY_PATH)).
 */
static const struct confine_rule confine_keyd[] = {
	SYS(fstat),
	SYS_MASK(newfstatat, 3, AT_EMPTY_PATH, AT_EMPTY_PATH),
	SYS(fcntl),		/* a passed channel made non-blocking, CLOEXEC */
	SYS(sendto),		/* send(MSG_NOSIGNAL) on its channels (no socket()) */
	SYS(getsockopt),	/* SO_TYPE, SO_DOMAIN of a passed channel */
};

/*
 * The root reader: the state directory, the vault and the CAs (read, and written
 * when a sandbox CA is issued: temporary file, fsync, rename), the audit log
 * opened for the worker and given to its user, the control socket removed at
 * exit; sockets, none but the one it was born with.
 */
static const struct confine_rule confine_reader[] = {
	SYS(openat),
	SYS(newfstatat),
	SYS(statx),
	SYS(getdents64),	/* the records in sandboxes/ */
	SYS(access),
	SYS(faccessat),
	SYS(mkdir),
	SYS(mkdirat),
	SYS(rename),
	SYS(renameat),
	SYS(unlink),
	SYS(unlinkat),
	SYS(fchmod),
	SYS(fchown),
	SYS(flock),		/* the vault's lock */
	SYS(pread64),		/* the audit log's last record (its head, for keyd) */
	SYS(fsync),
	SYS(uname),		/* OpenSSL, issuing a certificate */
	SYS(sendto),		/* send(MSG_NOSIGNAL) on its one socket (no socket()) */
	SYS(wait4),		/* keyd, its child, reaped at the end */
};

/*
 * netwatch: nftables over NETLINK_NETFILTER only, interfaces looked up by name
 * (glibc's if_nametoindex: an AF_UNIX datagram socket and SIOCGIFINDEX), the
 * state directory's records and its lock (made if missing).
 */
static const struct confine_rule confine_netwatch[] = {
	SYS_EQ2(socket, 0, AF_NETLINK, 2, NETLINK_NETFILTER),
	SYS_EQ(socket, 0, AF_UNIX),
	SYS(bind),		/* mnl_socket_bind */
	SYS(getsockname),
	SYS(setsockopt),	/* NETLINK_ADD_MEMBERSHIP, ..._ACK, SO_RCVBUF */
	SYS(sendto),
	SYS(recvfrom),
	SYS_EQ(ioctl, 1, SIOCGIFINDEX),
	SYS(openat),
	SYS(newfstatat),
	SYS(statx),
	SYS(getdents64),
	SYS(access),
	SYS(faccessat),
	SYS(mkdir),
	SYS(mkdirat),
	SYS(flock),
};

#ifdef AIRLOCK_SAN
/*
 * The sanitizers' own calls (make SAN=1 only).  A report reads /proc/self/maps and
 * the binary (open, readlink), runs on an alternate signal stack, and LSan's check
 * at exit makes the process dumpable for a moment and has a tracer (clone) ptrace
 * every thread (reading /proc/self/task) and wait for them.  Checked with an ASan
 * report, a UBSan one and a leak report, each made after the worker's confinement
 * and printed whole.
 */
static const struct confine_rule confine_san[] = {
	SYS(open),
	SYS(openat),
	SYS(readlink),
	SYS(readlinkat),
	SYS(getdents),		/* LSan's thread list */
	SYS(getdents64),
	SYS(newfstatat),
	SYS(fstat),
	SYS(lseek),
	SYS(sigaltstack),
	SYS_EQ(ioctl, 1, TCGETS),	/* isatty(2): a report in colour? */
	SYS(prctl),
	SYS(sched_yield),
	SYS(clone),
	SYS(ptrace),
	SYS(wait4),
	SYS(getppid),
	SYS(gettid),
	SYS(tgkill),
	SYS(kill),
	SYS(rt_sigaction),
	SYS(rt_sigprocmask),
	SYS(getrlimit),
	SYS(prlimit64),
	SYS(mprotect),
	SYS(sched_getaffinity),
};
#endif

static const struct strtab confine_roles[] = {
	{ "worker", PROXY_ROLE_WORKER },
	{ "reader", PROXY_ROLE_READER },
	{ "netwatch", PROXY_ROLE_NETWATCH },
	{ "keyd", PROXY_ROLE_KEYD },
	{ NULL, 0 }
};

const char *
proxy_role_name(enum proxy_role role)
{
	const char *s = strtab_name(confine_roles, (int)role);

	return s != NULL ? s : "?";
}

int
proxy_role_parse(const char *name, enum proxy_role *role)
{
	int v;

	if (strtab_value(confine_roles, name, &v) == -1)
		return -1;
	*role = (enum proxy_role)v;
	return 0;
}

int
proxy_confine_san(void)
{
#ifdef AIRLOCK_SAN
	return 1;
#else
	return 0;
#endif
}

/* Adds the n rules of v; libseccomp's -errno or 0. */
static int
confine_add(scmp_filter_ctx ctx, const struct confine_rule *v, size_t n)
{
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		rc = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, v[i].cr_nr,
		    v[i].cr_argc, v[i].cr_arg);
		if (rc < 0 && rc != -EEXIST)
			return rc;
	}
	return 0;
}

/* The role's allowlist, installed on every thread.  0, or -1 with err. */
static int
confine_seccomp(enum proxy_role role, char *err, size_t errlen)
{
	struct scmp_arg_cmp self = { 0, SCMP_CMP_EQ, 0, 0 };
	scmp_filter_ctx ctx;
	int rc;

	if ((ctx = seccomp_init(SCMP_ACT_KILL_PROCESS)) == NULL) {
		snprintf(err, errlen, "seccomp: cannot make a filter");
		return -1;
	}
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (rc == 0)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (rc == 0)
		rc = confine_add(ctx, confine_base, NRULES(confine_base));
	if (rc == 0 && role != PROXY_ROLE_KEYD) {
		rc = confine_add(ctx, confine_common, NRULES(confine_common));
		/*
		 * abort() (a failed assertion, OPENSSL_die) signals its own thread:
		 * let it end with SIGABRT, not with a SIGSYS that points elsewhere.
		 * Only towards this process.
		 */
		self.datum_a = (scmp_datum_t)getpid();
		if (rc == 0)
			rc = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW,
			    SCMP_SYS(tgkill), 1, &self);
	}
	if (rc == 0) {
		switch (role) {
		case PROXY_ROLE_WORKER:
			rc = confine_add(ctx, confine_worker, NRULES(confine_worker));
			break;
		case PROXY_ROLE_READER:
			rc = confine_add(ctx, confine_reader, NRULES(confine_reader));
			break;
		case PROXY_ROLE_NETWATCH:
			rc = confine_add(ctx, confine_netwatch,
			    NRULES(confine_netwatch));
			break;
		case PROXY_ROLE_KEYD:
			rc = confine_add(ctx, confine_keyd, NRULES(confine_keyd));
			break;
		}
	}
#ifdef AIRLOCK_SAN
	if (rc == 0)
		rc = confine_add(ctx, confine_san, NRULES(confine_san));
#endif
	if (rc == 0)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc != 0) {
		snprintf(err, errlen, "seccomp filter (%s): %s", proxy_role_name(role),
		    strerror(rc < 0 ? -rc : EINVAL));
		return -1;
	}
	return 0;
}

/* The worker holds no capability, effective or permitted.  0, or -1 with err. */
static int
confine_nocaps(char *err, size_t errlen)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) == -1) {
		snprintf(err, errlen, "capget: %s", strerror(errno));
		return -1;
	}
	if (data[0].effective != 0 || data[1].effective != 0 ||
	    data[0].permitted != 0 || data[1].permitted != 0) {
		snprintf(err, errlen, "refusing to run: capabilities left after the "
		    "privilege drop (effective %08x%08x, permitted %08x%08x)",
		    data[1].effective, data[0].effective, data[1].permitted,
		    data[0].permitted);
		return -1;
	}
	return 0;
}

/*
 * Landlock: a domain that handles every file system right this kernel knows and
 * grants none, so no path can be opened, created, removed or executed, whatever
 * the filter lets through; with ABI 6 also no abstract Unix socket and no signal
 * out of the domain.  Descriptors opened before stay usable.  It binds the calling
 * thread and the threads it starts afterwards, not threads already running (there
 * is no TSYNC for it): proxy_confine_fs() comes before the first thread.  A kernel
 * without Landlock (ENOSYS, or EOPNOTSUPP when it is off) is said once and is not
 * an error.
 */
static int
confine_landlock(char *err, size_t errlen)
{
	static int said;
	struct confine_ll_attr attr;
	int abi, fd, saved;

	abi = (int)syscall(__NR_landlock_create_ruleset, NULL, 0,
	    LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 0) {
		if (errno != ENOSYS && errno != EOPNOTSUPP) {
			snprintf(err, errlen, "landlock: %s", strerror(errno));
			return -1;
		}
		if (!said)
			log_warnx("Landlock is not available (%s): the worker's file "
			    "system view is closed by its seccomp filter alone",
			    strerror(errno));
		said = 1;
		return 0;
	}
	memset(&attr, 0, sizeof(attr));
	attr.ll_fs = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;	/* ABI 1 */
	if (abi >= 2)
		attr.ll_fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		attr.ll_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		attr.ll_fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	if (abi >= 6)
		attr.ll_scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET |
		    LANDLOCK_SCOPE_SIGNAL;
	if ((fd = (int)syscall(__NR_landlock_create_ruleset, &attr, sizeof(attr),
	    0)) == -1) {
		snprintf(err, errlen, "landlock: ruleset: %s", strerror(errno));
		return -1;
	}
#ifdef AIRLOCK_SAN
	{
		/* The sanitizers read /proc/self/maps and the binary (see top). */
		struct landlock_path_beneath_attr pb;

		pb.allowed_access = LANDLOCK_ACCESS_FS_READ_FILE |
		    LANDLOCK_ACCESS_FS_READ_DIR;
		if ((pb.parent_fd = open("/", O_PATH | O_CLOEXEC)) == -1 ||
		    syscall(__NR_landlock_add_rule, fd, LANDLOCK_RULE_PATH_BENEATH,
		    &pb, 0) == -1) {
			saved = errno;
			snprintf(err, errlen, "landlock: rule: %s", strerror(saved));
			if (pb.parent_fd != -1)
				close(pb.parent_fd);
			close(fd);
			return -1;
		}
		close(pb.parent_fd);
	}
#endif
	if (syscall(__NR_landlock_restrict_self, fd, 0) == -1) {
		saved = errno;
		close(fd);
		snprintf(err, errlen, "landlock: restrict: %s", strerror(saved));
		return -1;
	}
	close(fd);
	return 0;
}

/* no_new_privs, for good: Landlock and an unprivileged filter need it. */
static int
confine_nnp(char *err, size_t errlen)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
		snprintf(err, errlen, "refusing to run: no_new_privs cannot be set");
		return -1;
	}
	return 0;
}

/* Set once the worker's file system view is closed (a second domain would nest). */
static int confine_fs_done;

#define CONFINE_WARM_BLOCK	(100 * 1024)	/* an arena's, not mmap's (128 KiB) */
#define CONFINE_WARM_BLOCKS	3
#define CONFINE_TRIM_THRESHOLD	(128 * 1024)	/* glibc's default, made fixed */

/*
 * glibc's malloc opens /proc/sys/vm/overcommit_memory the first time it shrinks
 * the heap of a thread's arena (check_may_shrink_heap(), once per process): after
 * a burst of connections closes, long after the filter is on, which then kills the
 * worker on that openat (seen after 2,000 idle connections went).  So a thread
 * does it now: it takes blocks from an arena of its own, below the mmap threshold,
 * and frees them, so the arena's top exceeds the trim threshold and is shrunk.
 * The trim threshold is fixed first at glibc's own default: left dynamic, a large
 * block freed earlier (the key image, a policy) raises it past what the warm-up
 * frees, and the read would wait for a later burst.  (An allocator without
 * arenas, ASan's, does nothing here.)
 */
static void *
confine_malloc_warm_main(void *arg)
{
	void *b[CONFINE_WARM_BLOCKS];
	int i;

	(void)arg;
	for (i = 0; i < CONFINE_WARM_BLOCKS; i++)
		if ((b[i] = malloc(CONFINE_WARM_BLOCK)) != NULL)
			memset(b[i], 0, CONFINE_WARM_BLOCK);
	for (i = CONFINE_WARM_BLOCKS - 1; i >= 0; i--)
		free(b[i]);
	return NULL;
}

static int
confine_malloc_warm(char *err, size_t errlen)
{
	pthread_t t;
	int rc;

	(void)mallopt(M_TRIM_THRESHOLD, CONFINE_TRIM_THRESHOLD);
	if ((rc = pthread_create(&t, NULL, confine_malloc_warm_main, NULL)) != 0 ||
	    (rc = pthread_join(t, NULL)) != 0) {
		snprintf(err, errlen, "confine: malloc warm-up: %s", strerror(rc));
		return -1;
	}
	return 0;
}

int
proxy_confine_fs(char *err, size_t errlen)
{
	if (confine_fs_done)
		return 0;
	if (confine_malloc_warm(err, errlen) == -1 ||
	    confine_nnp(err, errlen) == -1 || confine_nocaps(err, errlen) == -1 ||
	    confine_landlock(err, errlen) == -1)
		return -1;
	confine_fs_done = 1;
	return 0;
}

int
proxy_confine(enum proxy_role role, char *err, size_t errlen)
{
	if (strtab_name(confine_roles, (int)role) == NULL) {
		snprintf(err, errlen, "confine: no such role");
		return -1;
	}
	if (role == PROXY_ROLE_WORKER && proxy_confine_fs(err, errlen) == -1)
		return -1;
	/* The root children get it too (root could load a filter without it). */
	if (confine_nnp(err, errlen) == -1)
		return -1;
	return confine_seccomp(role, err, errlen);
}
