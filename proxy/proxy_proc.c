/*
 * proxy/proxy_proc.c: the plumbing of airlockd's processes, beneath all of them:
 * the privilege drop and the hardening every process takes (proxy.c for the
 * workers, proxy_keyd.c for the keys process), closing what a child must not
 * inherit and ending a child, and whole-buffer I/O with descriptor passing on the
 * sockets between the processes (the reader, keyd and their clients).
 */
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proxy_globals.h"
#include "proxy_proc.h"

/*
 * Becomes pw for good: groups, gid, uid (real, effective, saved), then checks that
 * root cannot be regained.  Returns 0, or -1 with err.
 */
int
proxy_privdrop(const struct passwd *pw, char *err, size_t errlen)
{
	uid_t r, e, s;
	gid_t gid = pw->pw_gid;

	if (setgroups(1, &gid) == -1 ||
	    setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) == -1 ||
	    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) == -1) {
		proxy_fmt(err, errlen, "dropping privileges to %s: %s", pw->pw_name,
		    strerror(errno));
		return -1;
	}
	if (getresuid(&r, &e, &s) == -1 || r != pw->pw_uid || e != pw->pw_uid ||
	    s != pw->pw_uid) {
		proxy_fmt(err, errlen, "dropping privileges: uid not changed");
		return -1;
	}
	if (setuid(0) != -1 || seteuid(0) != -1 || setgroups(0, NULL) != -1) {
		proxy_fmt(err, errlen, "dropping privileges: root could be regained");
		return -1;
	}
	return 0;
}

/* No core dumps, no ptrace by the same uid, no new privileges through exec. */
int
proxy_harden(char *err, size_t errlen)
{
	struct rlimit rl = { 0, 0 };

	if (setrlimit(RLIMIT_CORE, &rl) == -1 ||
	    prctl(PR_SET_DUMPABLE, 0) == -1 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		proxy_fmt(err, errlen, "hardening: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int
proxy_close_fds_except(const int *keep, size_t n)
{
	unsigned int lo = 3, next;
	size_t i;

	for (;;) {
		/* The lowest kept descriptor at or above lo. */
		next = UINT_MAX;
		for (i = 0; i < n; i++)
			if (keep[i] >= 0 && (unsigned int)keep[i] >= lo &&
			    (unsigned int)keep[i] < next)
				next = (unsigned int)keep[i];
		/* close_range(2): Linux 5.9, glibc 2.34 (Debian 12 has both). */
		if (next > lo && close_range(lo, next - 1, 0) == -1)
			return -1;
		if (next == UINT_MAX)
			return 0;
		lo = next + 1;
	}
}

void
proxy_child_stop(int *fd, pid_t *pid)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	if (*pid != -1)
		while (waitpid(*pid, NULL, 0) == -1 && errno == EINTR)
			;
	*pid = -1;
}

int
proxy_child_reap(pid_t *pid)
{
	if (*pid == -1 || waitpid(*pid, NULL, WNOHANG) != *pid)
		return 0;
	*pid = -1;
	return 1;
}

int
proxy_fd_write_full(int fd, const void *p, size_t len)
{
	const char *b = p;
	ssize_t n;

	while (len > 0) {
		n = send(fd, b, len, MSG_NOSIGNAL);
		if (n == -1 && errno == ENOTSOCK)
			n = write(fd, b, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t
proxy_fd_send_fds(int sock, const void *p, size_t len, const int *fds, int nfd)
{
	union {
		struct cmsghdr	h;
		char		b[CMSG_SPACE(sizeof(int) * PROXY_FDS_MAX)];
	} cm;
	struct iovec iov = { (void *)(uintptr_t)p, len };
	struct cmsghdr *h;
	struct msghdr msg;
	ssize_t n;

	if (nfd < 0 || nfd > PROXY_FDS_MAX) {
		errno = EINVAL;
		return -1;
	}
	memset(&msg, 0, sizeof(msg));
	memset(&cm, 0, sizeof(cm));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (nfd > 0) {
		msg.msg_control = cm.b;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfd);
		h = CMSG_FIRSTHDR(&msg);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int) * nfd);
		memcpy(CMSG_DATA(h), fds, sizeof(int) * nfd);
	}
	while ((n = sendmsg(sock, &msg, MSG_NOSIGNAL)) == -1 && errno == EINTR)
		;
	return n;
}

long long
proxy_deadline(int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + ms;
}

int
proxy_fd_read_full(int fd, void *p, size_t len, long long deadline)
{
	struct pollfd pfd;
	char *b = p;
	long long now;
	ssize_t n;

	while (len > 0) {
		now = proxy_deadline(0);
		if (now >= deadline) {
			errno = ETIMEDOUT;
			return -1;
		}
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, (int)(deadline - now)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (pfd.revents == 0)
			continue;
		n = read(fd, b, len);
		if (n == -1) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -1;
		}
		if (n == 0) {
			errno = EPIPE;
			return -1;
		}
		b += n;
		len -= (size_t)n;
	}
	return 0;
}
