/*
 * include/control.h: a small blocking client for airlockd's control socket (JSON
 * lines: one request line, one reply line).  Used by `airlock reload|stats` and by
 * netctl's commands to tell a running airlockd about a sandbox.  Implemented in
 * lib/control.c.
 *
 * Requests (the daemon refuses anything else):
 *	{"cmd":"ping"}  {"cmd":"stats"}  {"cmd":"reload"}
 *	{"cmd":"sandbox_add","name":"NAME"}	re-read STATE_DIR/sandboxes/NAME.json
 *	{"cmd":"sandbox_remove","name":"NAME"}	close its connections, forget it
 *	{"cmd":"metrics"}
 *	{"cmd":"approve_ls"[,"sandbox":"NAME"]}	pending approvals and live grants
 *	{"cmd":"approve","action":"allow"|"deny","sandbox":S,"name":N,"port":P,
 *	 "scope":"once"|"for"|"always"|"pending"[,"seconds":T]}	root only
 * Replies: {"ok":true,...} or {"ok":false,"error":"..."}.
 */
#ifndef AIRLOCK_CONTROL_H
#define AIRLOCK_CONTROL_H

#include <stddef.h>

#define CONTROL_REQUEST_MAX	4096		/* the daemon refuses longer lines */
#define CONTROL_REPLY_MAX	(4 * 1024 * 1024)	/* the client refuses longer */
#define CONTROL_TIMEOUT_MS	10000

/*
 * Sends request (one JSON object, no newline) to the control socket at path and reads
 * one reply line, waiting at most timeout_ms in all.  Returns 0 and the reply (without
 * its '\n', NUL-terminated) in *reply, to be released with free(); or -1 with a
 * message in err and errno set: ENOENT or ECONNREFUSED when no airlockd listens at
 * path (see control_is_not_running()), ETIMEDOUT, EPROTO for a reply that is too long
 * or cut off.
 */
int	control_request(const char *path, const char *request, int timeout_ms,
	    char **reply, char *err, size_t errlen);

/* 1 if errno, after a failed control_request(), means that airlockd is not running. */
int	control_is_not_running(int errnum);

/*
 * Judges a reply line: returns 1 if it says "ok":true, 0 if "ok":false (the daemon's
 * "error" copied to err), -1 if it is not a reply at all (a message in err).
 */
int	control_reply_ok(const char *reply, char *err, size_t errlen);

/*
 * For netctl: tells a running airlockd that sandbox name was created or changed
 * (cmd "sandbox_add") or destroyed ("sandbox_remove").  Returns 1 if the daemon
 * answered ok; 0 if it answered an error (in err; e.g. the sandbox's policy failed to
 * load there, so it is registered with nothing allowed); -1 if it could not be asked
 * (err; control_is_not_running(errno) tells "not running", which is no failure: a
 * starting airlockd reads every record).
 */
int	control_sandbox_notify(const char *path, const char *cmd, const char *name,
	    char *err, size_t errlen);

#endif
