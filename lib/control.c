/*
 * lib/control.c: see include/control.h.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "control.h"
#include "sandbox.h"

static long long
control_now_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) == -1)
		return 0;
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for events on fd until the deadline.  Returns 0, or -1 (errno ETIMEDOUT). */
static int
control_wait(int fd, short events, long long deadline)
{
	struct pollfd pfd;
	long long left;
	int n;

	for (;;) {
		left = deadline - control_now_ms();
		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		pfd.fd = fd;
		pfd.events = events;
		pfd.revents = 0;
		n = poll(&pfd, 1, left > 60000 ? 60000 : (int)left);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n > 0)
			return 0;
	}
}

int
control_is_not_running(int errnum)
{
	return errnum == ENOENT || errnum == ECONNREFUSED;
}

int
control_request(const char *path, const char *request, int timeout_ms,
    char **reply, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	long long deadline;
	char *buf = NULL, *nl, *grown;
	size_t len, off, cap = 0, used = 0;
	ssize_t n;
	int fd = -1, saved, ret = -1;

	*reply = NULL;
	deadline = control_now_ms() + (timeout_ms > 0 ? timeout_ms : CONTROL_TIMEOUT_MS);
	len = strlen(request);
	if (len == 0 || len >= CONTROL_REQUEST_MAX || memchr(request, '\n', len)) {
		snprintf(err, errlen, "control request malformed or too long");
		errno = EINVAL;
		goto out;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "control socket %s: path too long", path);
		errno = ENAMETOOLONG;
		goto out;
	}
	strncpy(sun.sun_path, path, sizeof(sun.sun_path) - 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		goto out;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		saved = errno;
		if (control_is_not_running(saved))
			snprintf(err, errlen, "airlockd is not running "
			    "(control socket %s: %s)", path, strerror(saved));
		else
			snprintf(err, errlen, "control socket %s: %s", path,
			    strerror(saved));
		errno = saved;
		goto out;
	}
	/* The request and its newline, whole (MSG_NOSIGNAL: a dead peer is an error). */
	for (off = 0; off <= len; off += (size_t)n) {
		const char *p = off < len ? request + off : "\n";
		size_t want = off < len ? len - off : 1;

		if (control_wait(fd, POLLOUT, deadline) == -1)
			goto ioerr;
		n = send(fd, p, want, MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EINTR || errno == EAGAIN)
				n = 0;
			else
				goto ioerr;
		}
	}
	for (;;) {
		if (cap - used < 4096) {
			if (cap >= CONTROL_REPLY_MAX) {
				errno = EPROTO;
				snprintf(err, errlen, "control reply too long");
				goto out;
			}
			cap = cap == 0 ? 8192 : cap * 2;
			if ((grown = realloc(buf, cap + 1)) == NULL) {
				snprintf(err, errlen, "out of memory");
				goto out;
			}
			buf = grown;
		}
		if (control_wait(fd, POLLIN, deadline) == -1)
			goto ioerr;
		n = recv(fd, buf + used, cap - used, 0);
		if (n == -1) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			goto ioerr;
		}
		if (n == 0) {
			errno = EPROTO;
			snprintf(err, errlen, "airlockd closed the control connection "
			    "without a reply");
			goto out;
		}
		used += (size_t)n;
		if ((nl = memchr(buf, '\n', used)) != NULL) {
			*nl = '\0';
			break;
		}
	}
	*reply = buf;
	buf = NULL;	/* transferred */
	ret = 0;
	goto out;
 ioerr:
	saved = errno;
	snprintf(err, errlen, "control socket %s: %s", path, strerror(saved));
	errno = saved;
 out:
	saved = errno;
	free(buf);
	if (fd != -1)
		close(fd);
	errno = saved;
	return ret;
}

int
control_reply_ok(const char *reply, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root, *ok, *e;
	int ret = -1;

	root = json_loads(reply, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL || !json_is_object(root) ||
	    (ok = json_object_get(root, "ok")) == NULL || !json_is_boolean(ok)) {
		snprintf(err, errlen, "airlockd sent a malformed reply");
		goto out;
	}
	if (json_is_true(ok)) {
		ret = 1;
		goto out;
	}
	e = json_object_get(root, "error");
	snprintf(err, errlen, "%s", json_is_string(e) ? json_string_value(e) :
	    "airlockd refused the request");
	ret = 0;
 out:
	json_decref(root);
	return ret;
}

int
control_sandbox_notify(const char *path, const char *cmd, const char *name,
    char *err, size_t errlen)
{
	char req[256], *reply = NULL;
	int ret = -1, n;

	if ((strcmp(cmd, "sandbox_add") != 0 && strcmp(cmd, "sandbox_remove") != 0) ||
	    !sandbox_name_is_valid(name)) {
		snprintf(err, errlen, "bad control command or sandbox name");
		errno = EINVAL;
		goto out;
	}
	/* A valid name is [a-z0-9-]: nothing to escape. */
	n = snprintf(req, sizeof(req), "{\"cmd\":\"%s\",\"name\":\"%s\"}", cmd, name);
	if (n < 0 || (size_t)n >= sizeof(req)) {
		snprintf(err, errlen, "control request too long");
		errno = EINVAL;
		goto out;
	}
	if (control_request(path, req, CONTROL_TIMEOUT_MS, &reply, err, errlen) == -1)
		goto out;
	ret = control_reply_ok(reply, err, errlen);
	if (ret == -1)
		errno = EPROTO;
 out:
	free(reply);
	return ret;
}
