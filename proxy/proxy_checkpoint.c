/*
 * proxy/proxy_checkpoint.c: the audit log's signed checkpoints and its rotation by
 * size, the daemon's side (the records are audit/'s: audit_checkpoint(),
 * audit_rotate_fd()).
 *
 * The signing key (audit.sign_key) is never in this process: the root reader reads
 * it and gives it to keyd at start ('S', with the chain's head as the log on disk
 * ends), and each checkpoint is a SIGN_CHECKPOINT request to keyd.  The writer
 * makes that request under its lock, so that the checkpoint follows the head it
 * signs, and every writer waits for it; so it is made on the main thread only (the
 * one that serves signals and the control socket, never a connection), with a
 * deadline of 0.5 s (keyd answers in well under a millisecond: one Ed25519
 * signature, between leaves it signs in turn).  When keyd refuses, is gone or too
 * slow, the checkpoint is written unsigned with the reason, and airlockd's log says
 * so once (and once when signing works again).
 *
 * When: one at start (the head as found on disk: where keyd's signatures begin),
 * then once audit.sign_every records were written since the last (the writer
 * wakes the main loop, audit_watch()), at every rotation (the old file's last
 * record) and at shutdown.  Rotation: once the file is at audit.max_bytes the
 * reader renames the files and passes a new one ('T'); the chain goes on in it.
 */
#include <stdio.h>
#include <string.h>

#include <event2/event.h>

#include "audit.h"
#include "log.h"
#include "proxy_core.h"
#include "proxy_keyd.h"

static struct event *cp_ev;		/* on the main loop: one is due */
static int cp_signing;			/* audit.sign_key was loaded into keyd */
static int cp_down;			/* the last checkpoint was not signed */
static int cp_rotate_failed;		/* no rotation by size until a SIGHUP */
static int cp_failing;			/* a checkpoint could not be written */

/*
 * The main thread's channel to keyd, opened again (if it broke) before the log's
 * lock is taken for a checkpoint: the signature alone is asked under it.  A
 * failure here is the checkpoint's reason then (proxy_cp_sign()).
 */
static void
proxy_cp_ready(void)
{
	char why[256];

	if (cp_signing && proxy_keyd_chan_ready("audit", why, sizeof(why)) == -1)
		log_debug("audit checkpoints: keys process: %s", why);
}

/* audit_sign_fn: keyd signs, under the log's lock (the main thread only). */
static int
proxy_cp_sign(void *arg, long long seq, const char *head, long long ts_ms,
    struct audit_signature *out)
{
	char err[sizeof(out->as_unsigned) - 32];

	(void)arg;
	if (proxy_keyd_sign(seq, head, ts_ms, out, err, sizeof(err)) == 0) {
		if (cp_down)
			log_warnx("audit checkpoints are signed again (seq %lld)",
			    seq);
		cp_down = 0;
		return 0;
	}
	snprintf(out->as_unsigned, sizeof(out->as_unsigned), "keys process: %s",
	    err);
	if (!cp_down)
		log_warnx("audit checkpoint of seq %lld written unsigned: keys "
		    "process: %s (said once until one is signed again)", seq, err);
	cp_down = 1;
	return -1;
}

int
proxy_checkpoint_init(char *err, size_t errlen)
{
	char keyid[AUDIT_KEYID_HEX + 1], why[512];

	if (proxy_cfg.audit_sign_key[0] == '\0' || proxy_audit() == NULL)
		return 0;
	if (proxy_audit_sign_load(keyid, sizeof(keyid), why, sizeof(why)) == -1) {
		proxy_fmt(err, errlen, "audit.sign_key: %s", why);
		return -1;
	}
	/* The main thread's own channel, for the checkpoints alone. */
	if (proxy_keyd_chan_open("audit", why, sizeof(why)) == -1) {
		proxy_fmt(err, errlen, "audit.sign_key: keys process: %s", why);
		return -1;
	}
	cp_signing = 1;
	audit_set_signer(proxy_audit(), proxy_cp_sign, NULL);
	log_info("audit checkpoints signed by the keys process, key %s, every "
	    "%lld records", keyid, proxy_cfg.audit_sign_every);
	if (audit_checkpoint(proxy_audit(), "start") == -1)
		log_warn("audit log: the start checkpoint");
	return 0;
}

/* Called by the writer, its lock held: wake the main loop, nothing more. */
static void
proxy_cp_due(void *arg)
{
	event_active(arg, EV_READ, 0);
}

static void
proxy_cp_watch(void)
{
	audit_watch(proxy_audit(), cp_signing ? proxy_cfg.audit_sign_every : 0,
	    cp_rotate_failed ? 0 : proxy_cfg.audit_max_bytes, proxy_cp_due, cp_ev);
}

/* On the main loop: a rotation, or a checkpoint, is due. */
static void
proxy_cp_cb(evutil_socket_t fd, short what, void *arg)
{
	struct audit_log *log = proxy_audit();
	struct timeval retry = { 1, 0 };
	char err[512];
	int cp, rot;

	if (log == NULL)
		return;
	audit_due(log, &cp, &rot);
	proxy_cp_ready();
	if (!cp_rotate_failed && rot) {
		if (proxy_audit_rotate(log, err, sizeof(err)) == -1) {
			/* Not again for every record: a SIGHUP tries it again. */
			log_warnx("audit log: rotation failed: %s (the log goes on "
			    "in the file it writes; SIGHUP continues it at %s)",
			    err, proxy_cfg.audit_path);
			cp_rotate_failed = 1;
		}
	}
	audit_due(log, &cp, &rot);
	if (cp_signing && cp && audit_checkpoint(log, "count") == -1) {
		/*
		 * The log fails (audit_error() says it, new connections are
		 * refused): again in a second, not at once for every record.
		 */
		if (!cp_failing)
			log_warn("audit log: a checkpoint could not be written "
			    "(tried again each second)");
		cp_failing = 1;
		event_add(cp_ev, &retry);
		return;
	}
	cp_failing = 0;
	/* What came while this ran is told again. */
	proxy_cp_watch();
}

int
proxy_checkpoint_start(struct event_base *base)
{
	if (proxy_audit() == NULL ||
	    (!cp_signing && proxy_cfg.audit_max_bytes == 0))
		return 0;
	if ((cp_ev = event_new(base, -1, 0, proxy_cp_cb, NULL)) == NULL)
		return -1;
	proxy_cp_watch();
	return 0;
}

void
proxy_checkpoint_reopening(void)
{
	proxy_cp_ready();
}

void
proxy_checkpoint_reopened(void)
{
	cp_rotate_failed = 0;
	if (cp_ev != NULL)
		proxy_cp_watch();
}

void
proxy_checkpoint_stop(void)
{
	if (proxy_audit() != NULL)
		audit_watch(proxy_audit(), 0, 0, NULL, NULL);
	if (cp_ev != NULL)
		event_free(cp_ev);
	cp_ev = NULL;
}

void
proxy_checkpoint_shutdown(void)
{
	if (!cp_signing || proxy_audit() == NULL)
		return;
	/* The counts still pending go first: the checkpoint is the last record. */
	(void)audit_flush(proxy_audit(), 1);
	proxy_cp_ready();
	if (audit_checkpoint(proxy_audit(), "shutdown") == -1)
		log_warn("audit log: the shutdown checkpoint");
}
