/*
 * proxy/proxy_ctl.c: the control socket (a Unix stream socket, JSON lines).  One
 * request line and one reply line per connection; see include/control.h for the
 * commands.  Every client is hostile until proven otherwise: only root and the
 * daemon's own uid may talk (SO_PEERCRED, on top of the socket's 0600), a line is at
 * most CONTROL_REQUEST_MAX bytes, the JSON is parsed strictly (no duplicate or
 * unknown keys), and a handful of clients at a time, each with a deadline.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <jansson.h>

#include "control.h"
#include "log.h"
#include "proxy_ctl.h"
#include "proxy_globals.h"
#include "sandbox.h"

#define PROXY_CTL_CLIENTS_MAX	16
#define PROXY_CTL_TIMEOUT_SEC	10

struct proxy_ctl_conn {
	TAILQ_ENTRY(proxy_ctl_conn) cc_entry;
	struct proxy_ctl *cc_ctl;
	struct bufferevent *cc_bev;
	uid_t		 cc_uid;
	int		 cc_closing;	/* reply queued: free once written */
};

struct proxy_ctl {
	struct evconnlistener *pc_lev;
	TAILQ_HEAD(, proxy_ctl_conn) pc_conns;
	unsigned int	 pc_nconns;
	const struct proxy_ctl_cmd *pc_cmds;	/* borrowed */
};

int
proxy_ctl_open(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	struct stat sb;
	char dirbuf[PATH_MAX], *dir;
	mode_t old;
	int fd = -1, probe = -1, saved;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path) || strlen(path) >= sizeof(dirbuf)) {
		proxy_fmt(err, errlen, "control socket %s: path too long", path);
		return -1;
	}
	strncpy(sun.sun_path, path, sizeof(sun.sun_path) - 1);
	proxy_fmt(dirbuf, sizeof(dirbuf), "%s", path);
	dir = dirname(dirbuf);
	if (stat(dir, &sb) == -1) {
		if (errno != ENOENT || mkdir(dir, 0700) == -1) {
			proxy_fmt(err, errlen, "control socket directory %s: %s", dir,
			    strerror(errno));
			return -1;
		}
	} else if (!S_ISDIR(sb.st_mode)) {
		proxy_fmt(err, errlen, "control socket directory %s: not a directory",
		    dir);
		return -1;
	}
	if (lstat(path, &sb) == 0) {
		if (!S_ISSOCK(sb.st_mode)) {
			proxy_fmt(err, errlen, "control socket %s: exists and is not "
			    "a socket", path);
			return -1;
		}
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe == -1)
			goto error;
		if (connect(probe, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
			close(probe);
			proxy_fmt(err, errlen, "control socket %s: another airlockd "
			    "is running", path);
			return -1;
		}
		saved = errno;
		close(probe);
		if (saved != ECONNREFUSED) {
			errno = saved;
			goto error;
		}
		/* Stale: left by a daemon that is gone. */
		if (unlink(path) == -1)
			goto error;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		goto error;
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		saved = errno;
		umask(old);
		errno = saved;
		goto error;
	}
	umask(old);
	if (chmod(path, 0600) == -1 || listen(fd, PROXY_CTL_CLIENTS_MAX) == -1)
		goto error;
	return fd;
 error:
	saved = errno;
	proxy_fmt(err, errlen, "control socket %s: %s", path, strerror(saved));
	if (fd != -1)
		close(fd);
	errno = saved;
	return -1;
}

static void
proxy_ctl_conn_free(struct proxy_ctl_conn *cc)
{
	TAILQ_REMOVE(&cc->cc_ctl->pc_conns, cc, cc_entry);
	cc->cc_ctl->pc_nconns--;
	bufferevent_free(cc->cc_bev);
	free(cc);
}

static json_t *
proxy_ctl_error(const char *msg)
{
	return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

/* Parses one request line and runs its command of cmds.  Returns the reply object. */
static json_t *
proxy_ctl_handle(const struct proxy_ctl_cmd *cmds, const char *line, size_t len,
    uid_t uid)
{
	const struct proxy_ctl_cmd *c;
	json_error_t jerr;
	json_t *req, *jcmd, *jname = NULL, *reply = NULL, *v;
	const char *cmd, *key, *name = NULL;
	int wants_name;

	req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (req == NULL || !json_is_object(req)) {
		reply = proxy_ctl_error("malformed request: not a JSON object");
		goto out;
	}
	jcmd = json_object_get(req, "cmd");
	if (!json_is_string(jcmd)) {
		reply = proxy_ctl_error("malformed request: no \"cmd\" string");
		goto out;
	}
	cmd = json_string_value(jcmd);
	for (c = cmds; c->cm_name != NULL; c++)
		if (strcmp(c->cm_name, cmd) == 0)
			break;
	if (c->cm_name != NULL && c->cm_req_fn != NULL) {
		reply = c->cm_req_fn(req, uid);
		goto out;
	}
	wants_name = c->cm_name != NULL && c->cm_wants_name;
	json_object_foreach(req, key, v) {
		if (strcmp(key, "cmd") == 0)
			continue;
		if (wants_name && strcmp(key, "name") == 0) {
			jname = v;
			continue;
		}
		reply = proxy_ctl_error("malformed request: unknown key");
		goto out;
	}
	if (wants_name) {
		if (!json_is_string(jname) ||
		    !sandbox_name_is_valid(json_string_value(jname))) {
			reply = proxy_ctl_error("malformed request: \"name\" must be "
			    "a sandbox name");
			goto out;
		}
		name = json_string_value(jname);
	}
	if (c->cm_name == NULL) {
		reply = proxy_ctl_error("unknown command");
		goto out;
	}
	if (c->cm_log && name != NULL)
		log_info("control: %s %s (uid %u)", cmd, name, (unsigned int)uid);
	else if (c->cm_log)
		log_info("control: %s (uid %u)", cmd, (unsigned int)uid);
	reply = c->cm_fn(name);
 out:
	json_decref(req);
	if (reply == NULL)
		reply = proxy_ctl_error("out of memory");
	return reply;
}

static void
proxy_ctl_reply(struct proxy_ctl_conn *cc, json_t *reply)
{
	struct evbuffer *out = bufferevent_get_output(cc->cc_bev);
	char *s;

	s = json_dumps(reply, JSON_COMPACT);
	if (s == NULL || evbuffer_add(out, s, strlen(s)) == -1 ||
	    evbuffer_add(out, "\n", 1) == -1) {
		free(s);
		proxy_ctl_conn_free(cc);
		return;
	}
	free(s);
	cc->cc_closing = 1;
	bufferevent_disable(cc->cc_bev, EV_READ);
}

static void
proxy_ctl_read_cb(struct bufferevent *bev, void *arg)
{
	struct proxy_ctl_conn *cc = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	json_t *reply;
	size_t len;
	char *line;

	if (cc->cc_closing)
		return;
	line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF);
	if (line == NULL) {
		if (evbuffer_get_length(in) >= CONTROL_REQUEST_MAX) {
			log_warnx("control: request line too long (uid %u)",
			    (unsigned int)cc->cc_uid);
			reply = proxy_ctl_error("request line too long");
			proxy_ctl_reply(cc, reply);
			json_decref(reply);
		}
		return;
	}
	if (len >= CONTROL_REQUEST_MAX)
		reply = proxy_ctl_error("request line too long");
	else
		reply = proxy_ctl_handle(cc->cc_ctl->pc_cmds, line, len,
		    cc->cc_uid);
	free(line);
	proxy_ctl_reply(cc, reply);
	json_decref(reply);
}

static void
proxy_ctl_write_cb(struct bufferevent *bev, void *arg)
{
	struct proxy_ctl_conn *cc = arg;

	if (cc->cc_closing &&
	    evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		proxy_ctl_conn_free(cc);
}

static void
proxy_ctl_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct proxy_ctl_conn *cc = arg;

	/* EOF, error or timeout: nothing more to say to this client. */
	proxy_ctl_conn_free(cc);
}

static void
proxy_ctl_accept_cb(struct evconnlistener *lev, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct proxy_ctl *pc = arg;
	struct proxy_ctl_conn *cc = NULL;
	struct timeval tv = { PROXY_CTL_TIMEOUT_SEC, 0 };
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1 ||
	    len != sizeof(cred)) {
		log_warn("control: SO_PEERCRED");
		goto error;
	}
	if (cred.uid != 0 && cred.uid != geteuid()) {
		log_warnx("control: refused a client with uid %u",
		    (unsigned int)cred.uid);
		goto error;
	}
	if (pc->pc_nconns >= PROXY_CTL_CLIENTS_MAX) {
		log_warnx("control: too many clients");
		goto error;
	}
	if ((cc = calloc(1, sizeof(*cc))) == NULL)
		goto error;
	cc->cc_ctl = pc;
	cc->cc_uid = cred.uid;
	cc->cc_bev = bufferevent_socket_new(evconnlistener_get_base(lev), fd,
	    BEV_OPT_CLOSE_ON_FREE);
	fd = -1;	/* transferred, even on failure */
	if (cc->cc_bev == NULL)
		goto error;
	bufferevent_setcb(cc->cc_bev, proxy_ctl_read_cb, proxy_ctl_write_cb,
	    proxy_ctl_event_cb, cc);
	/* Stop reading once a line could only be too long. */
	bufferevent_setwatermark(cc->cc_bev, EV_READ, 0, CONTROL_REQUEST_MAX);
	bufferevent_set_timeouts(cc->cc_bev, &tv, &tv);
	if (bufferevent_enable(cc->cc_bev, EV_READ) == -1) {
		bufferevent_free(cc->cc_bev);
		goto error;
	}
	TAILQ_INSERT_TAIL(&pc->pc_conns, cc, cc_entry);
	pc->pc_nconns++;
	return;
 error:
	free(cc);
	if (fd != -1)
		close(fd);
}

static void
proxy_ctl_error_cb(struct evconnlistener *lev, void *arg)
{
	log_warn("control: accept");
}

struct proxy_ctl *
proxy_ctl_new(struct event_base *base, int fd, const struct proxy_ctl_cmd *cmds)
{
	struct proxy_ctl *pc;

	if ((pc = calloc(1, sizeof(*pc))) == NULL) {
		close(fd);
		return NULL;
	}
	TAILQ_INIT(&pc->pc_conns);
	pc->pc_cmds = cmds;
	pc->pc_lev = evconnlistener_new(base, proxy_ctl_accept_cb, pc,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
	if (pc->pc_lev == NULL) {
		close(fd);
		free(pc);
		return NULL;
	}
	evconnlistener_set_error_cb(pc->pc_lev, proxy_ctl_error_cb);
	return pc;
}

void
proxy_ctl_free(struct proxy_ctl *pc)
{
	struct proxy_ctl_conn *cc;

	if (pc == NULL)
		return;
	while ((cc = TAILQ_FIRST(&pc->pc_conns)) != NULL)
		proxy_ctl_conn_free(cc);
	evconnlistener_free(pc->pc_lev);
	free(pc);
}
