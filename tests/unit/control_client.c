/*
 * tests/unit/control_client.c: lib/control.c against a fake daemon (a forked child
 * on a Unix socket in a temp dir) that replies with canned bytes: a good reply, an
 * error reply, no reply, a reply without its newline, an endless reply, silence
 * (timeout); "not running" for a missing and a dead socket; control_reply_ok() on
 * malformed replies; control_sandbox_notify() refusing bad input before any I/O.
 */
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control.h"
#include "../tap.h"

enum fake_mode {
	FAKE_OK = 0,		/* echo a fixed good reply after reading a line */
	FAKE_ERROR,		/* {"ok":false,"error":"nope"} */
	FAKE_CLOSE,		/* read the line, close without a reply */
	FAKE_NO_NEWLINE,	/* a reply, then close without '\n' */
	FAKE_ENDLESS,		/* more than CONTROL_REPLY_MAX bytes, no '\n' */
	FAKE_SILENT,		/* read, say nothing, wait */
};

static char sockpath[100];
static char lastreq[CONTROL_REQUEST_MAX + 2];

/* Forks a server for one connection; returns its pid.  The request goes to reqfile. */
static pid_t
fake_start(enum fake_mode mode, const char *reqfile)
{
	struct sockaddr_un sun;
	pid_t pid;
	int lfd, fd;

	unlink(sockpath);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, sockpath, strlen(sockpath) + 1);
	if ((lfd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
	    bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(lfd, 1) == -1)
		bail("fake server: %s", strerror(errno));
	if ((pid = fork()) == -1)
		bail("fork: %s", strerror(errno));
	if (pid == 0) {
		char buf[8192];
		size_t used = 0;
		ssize_t n;
		FILE *f;

		signal(SIGPIPE, SIG_IGN);
		if ((fd = accept(lfd, NULL, NULL)) == -1)
			_exit(1);
		while (used < sizeof(buf) - 1 &&
		    (n = read(fd, buf + used, sizeof(buf) - 1 - used)) > 0) {
			used += (size_t)n;
			if (memchr(buf, '\n', used) != NULL)
				break;
		}
		buf[used] = '\0';
		if ((f = fopen(reqfile, "w")) != NULL) {
			fputs(buf, f);
			fclose(f);
		}
		switch (mode) {
		case FAKE_OK:
			(void)!write(fd, "{\"ok\":true,\"x\":1}\n", 18);
			break;
		case FAKE_ERROR:
			(void)!write(fd, "{\"ok\":false,\"error\":\"nope\"}\n", 28);
			break;
		case FAKE_CLOSE:
			break;
		case FAKE_NO_NEWLINE:
			(void)!write(fd, "{\"ok\":true}", 11);
			break;
		case FAKE_ENDLESS:
			memset(buf, 'x', sizeof(buf));
			for (used = 0; used <= CONTROL_REPLY_MAX + sizeof(buf);
			    used += sizeof(buf))
				if (write(fd, buf, sizeof(buf)) == -1)
					break;
			break;
		case FAKE_SILENT:
			sleep(5);
			break;
		}
		close(fd);
		_exit(0);
	}
	close(lfd);
	return pid;
}

static void
fake_stop(pid_t pid, const char *reqfile)
{
	FILE *f;
	size_t n = 0;

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	lastreq[0] = '\0';
	if ((f = fopen(reqfile, "r")) != NULL) {
		n = fread(lastreq, 1, sizeof(lastreq) - 1, f);
		fclose(f);
	}
	lastreq[n] = '\0';
	unlink(reqfile);
}

int
main(void)
{
	char err[512], reqfile[300], *reply = NULL;
	pid_t pid;
	int r;

	plan_lazy();
	snprintf(sockpath, sizeof(sockpath), "%s/ctl.sock", tap_tmpdir());
	snprintf(reqfile, sizeof(reqfile), "%s/req", tap_tmpdir());

	/* Not running: no socket, then a socket nobody listens on. */
	r = control_request(sockpath, "{\"cmd\":\"ping\"}", 1000, &reply, err,
	    sizeof(err));
	ok(r == -1 && control_is_not_running(errno), "no socket: not running");
	ok(strstr(err, "airlockd is not running") != NULL, "... and says so: %s", err);
	ok(reply == NULL, "... no reply");
	pid = fake_start(FAKE_CLOSE, reqfile);
	fake_stop(pid, reqfile);	/* the socket file stays, nobody listens */
	r = control_request(sockpath, "{\"cmd\":\"ping\"}", 1000, &reply, err,
	    sizeof(err));
	ok(r == -1 && errno == ECONNREFUSED && control_is_not_running(errno),
	    "stale socket: not running (ECONNREFUSED)");

	/* A good reply: the line without its newline; the request as sent. */
	pid = fake_start(FAKE_OK, reqfile);
	r = control_request(sockpath, "{\"cmd\":\"stats\"}", 2000, &reply, err,
	    sizeof(err));
	fake_stop(pid, reqfile);
	ok(r == 0, "good reply: 0");
	is_string("{\"ok\":true,\"x\":1}", reply, "good reply: the line");
	is_string("{\"cmd\":\"stats\"}\n", lastreq, "the request went as one line");
	ok(control_reply_ok(reply, err, sizeof(err)) == 1, "control_reply_ok: 1");
	free(reply);
	reply = NULL;

	pid = fake_start(FAKE_ERROR, reqfile);
	r = control_sandbox_notify(sockpath, "sandbox_add", "demo", err, sizeof(err));
	fake_stop(pid, reqfile);
	is_int(0, r, "notify: the daemon's refusal is 0");
	is_string("nope", err, "notify: the daemon's error");
	is_string("{\"cmd\":\"sandbox_add\",\"name\":\"demo\"}\n", lastreq,
	    "notify: the request");

	pid = fake_start(FAKE_OK, reqfile);
	r = control_sandbox_notify(sockpath, "sandbox_remove", "d-1", err,
	    sizeof(err));
	fake_stop(pid, reqfile);
	is_int(1, r, "notify: ok is 1");

	pid = fake_start(FAKE_CLOSE, reqfile);
	r = control_request(sockpath, "{\"cmd\":\"ping\"}", 2000, &reply, err,
	    sizeof(err));
	fake_stop(pid, reqfile);
	ok(r == -1 && errno == EPROTO && !control_is_not_running(errno),
	    "closed without a reply: EPROTO, not 'not running'");
	ok(strstr(err, "without a reply") != NULL, "... %s", err);

	pid = fake_start(FAKE_NO_NEWLINE, reqfile);
	r = control_request(sockpath, "{\"cmd\":\"ping\"}", 2000, &reply, err,
	    sizeof(err));
	fake_stop(pid, reqfile);
	ok(r == -1 && errno == EPROTO, "a reply cut off before its newline: refused");

	pid = fake_start(FAKE_ENDLESS, reqfile);
	r = control_request(sockpath, "{\"cmd\":\"ping\"}", 10000, &reply, err,
	    sizeof(err));
	fake_stop(pid, reqfile);
	ok(r == -1 && errno == EPROTO && reply == NULL,
	    "an endless reply: refused at CONTROL_REPLY_MAX");

	pid = fake_start(FAKE_SILENT, reqfile);
	r = control_request(sockpath, "{\"cmd\":\"ping\"}", 300, &reply, err,
	    sizeof(err));
	fake_stop(pid, reqfile);
	ok(r == -1 && errno == ETIMEDOUT, "a silent daemon: ETIMEDOUT");

	/* Refused before any I/O. */
	ok(control_request(sockpath, "{\"cmd\":\"ping\"}\n{\"cmd\":\"reload\"}", 300,
	    &reply, err, sizeof(err)) == -1 && errno == EINVAL,
	    "a request with a newline inside: refused");
	ok(control_request(sockpath, "", 300, &reply, err, sizeof(err)) == -1 &&
	    errno == EINVAL, "an empty request: refused");
	ok(control_sandbox_notify(sockpath, "sandbox_add", "../etc", err,
	    sizeof(err)) == -1 && errno == EINVAL, "notify: a bad name: refused");
	ok(control_sandbox_notify(sockpath, "reload", "demo", err,
	    sizeof(err)) == -1 && errno == EINVAL, "notify: another command: refused");

	/* Judging replies. */
	ok(control_reply_ok("{\"ok\":false}", err, sizeof(err)) == 0,
	    "ok:false without error: 0");
	ok(control_reply_ok("{\"ok\":\"yes\"}", err, sizeof(err)) == -1,
	    "ok not a boolean: malformed");
	ok(control_reply_ok("[true]", err, sizeof(err)) == -1, "an array: malformed");
	ok(control_reply_ok("{\"ok\":true,\"ok\":false}", err, sizeof(err)) == -1,
	    "duplicate ok: malformed");
	ok(control_reply_ok("garbage", err, sizeof(err)) == -1, "garbage: malformed");
	return 0;
}
