/*
 * audit/audit_write.c: the writer.  One mutex serialises records: seq, prev and the
 * file offset must advance together, and each line goes out with one write(2) loop
 * so a reader never sees two records interleaved.
 *
 * Durability is group-committed: a writer that must wait for the disk (audit.fsync
 * "deny" for a denial, "always") appends under the mutex, notes its seq and waits
 * on lg_sync_cv outside it; one waiter at a time runs fdatasync() on a dup of the fd
 * for every record written so far, and wakes everyone it covered.  Other threads
 * keep appending meanwhile, so one fsync covers all that queued behind it.  A
 * writer that must not wait (an event loop) uses audit_write_nowait() and asks the
 * sync thread (audit_sync_start()) for its seq, which is a leader like any waiter
 * and calls a notification after each fdatasync().
 *
 * Denials with ar_aggregate are aggregated per (sandbox, reason, dst) and second
 * (audit_agg.c holds the table): the first is written, the others counted and
 * written as "suppressed":N with the key's next record, or by audit_flush() in a
 * record of their own ("aggregate":"flush") once their second is over.
 *
 * Checkpoints and rotation are the writer's own records.  A checkpoint is signed
 * under the mutex, by the signer the owner installed (audit_set_signer(); in
 * airlockd a request to its keys process), so that it follows the very head it
 * signs: writers wait for that one exchange.  A rotation ends the old file with a
 * checkpoint and starts the new one with a "rotate" record, both under the mutex,
 * so that no record lands between them.  The owner is told when one is due
 * (audit_watch()) and does it in its own time, never in a writer's.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "audit.h"
#include "audit_int.h"

#define TAIL_CHUNK	(64 * 1024)

struct audit_log {
	pthread_mutex_t	 lg_mtx;
	char		*lg_path;
	int		 lg_fd;
	off_t		 lg_size;	/* bytes in the file after our last write */
	enum audit_fsync lg_fsync;
	int		 lg_broken;	/* a torn write could not be undone */
	long long	 lg_seq;	/* last record's seq, 0 before the first */
	char		 lg_head[AUDIT_HASH_HEX + 1];
	unsigned char	 lg_key[AUDIT_KEY_MAX];
	size_t		 lg_keylen;
	int		 lg_err;	/* atomic: errno of the last failure, 0 after a good write */
	int		 lg_err_sync;	/* lg_err came from fdatasync: it stays */
	struct audit_agg_table *lg_agg;	/* denial aggregates */
	long long	 lg_agg_lost;	/* denials with no slot (set full, disk failing) */
	/* atomic, for metrics (audit_counts()) */
	long long	 lg_n_errors;	/* failed writes and syncs */
	long long	 lg_n_suppressed;	/* denials counted into an aggregate */
	/* Group commit (lg_sync_mtx; taken without lg_mtx held, or after it). */
	pthread_mutex_t	 lg_sync_mtx;
	pthread_cond_t	 lg_sync_cv;
	long long	 lg_synced;	/* records up to this seq are on disk */
	int		 lg_syncing;	/* a writer is in fdatasync() for the others */
	/* The sync thread (audit_sync_start()), for callers that do not wait. */
	long long	 lg_want;	/* fdatasync() wanted up to this seq */
	int		 lg_thr_on;
	int		 lg_thr_stop;
	pthread_t	 lg_thr;
	void		(*lg_notify)(void *);
	void		*lg_notify_arg;
	/* Checkpoints and rotation (lg_mtx). */
	long long	 lg_first_seq;	/* the file's first record (0: unknown) */
	long long	 lg_since_cp;	/* records since the last checkpoint */
	audit_sign_fn	 lg_sign;
	void		*lg_sign_arg;
	long long	 lg_cp_every;	/* audit_watch() */
	long long	 lg_max_bytes;
	void		(*lg_watch)(void *);
	void		*lg_watch_arg;
	int		 lg_watch_told;	/* lg_watch called, not yet answered */
	audit_tap_fn	 lg_tap;	/* every line written (lg_mtx) */
	void		*lg_tap_arg;
};

static int	log_checkpoint(struct audit_log *, const char *);
static int	log_rotate_record(struct audit_log *, const char *);

/* Slots of the aggregate table: every sandbox's few reasons and destinations. */
#define AUDIT_AGG_SLOTS	4096

static const char *const audit_events[] = {
	[AUDIT_EV_DNS] = "dns",
	[AUDIT_EV_CONNECT] = "connect",
	[AUDIT_EV_REQUEST] = "request",
	[AUDIT_EV_DENY] = "deny",
	[AUDIT_EV_EXFIL] = "exfil",
	[AUDIT_EV_SANDBOX] = "sandbox",
	[AUDIT_EV_CONFIG] = "config",
	[AUDIT_EV_ALARM] = "alarm",
	[AUDIT_EV_APPROVAL] = "approval",
	[AUDIT_EV_CHECKPOINT] = "checkpoint",
	[AUDIT_EV_ROTATE] = "rotate",
	[AUDIT_EV_SINK_OVERFLOW] = "sink_overflow",
};

/* Field names an extra key may not take: it would shadow or forge them. */
static const char *const audit_reserved[] = {
	"ts", "seq", "sandbox", "event", "src", "dst", "tls", "method", "path",
	"status", "decision", "rule", "rule_file", "reason", "would_deny", "inject",
	"bytes_up", "bytes_down", "ms", "suppressed", "prev", "hash",
};

const char *
audit_event_str(enum audit_event ev)
{
	if ((unsigned int)ev >= sizeof(audit_events) / sizeof(audit_events[0]))
		return NULL;
	return audit_events[ev];
}

int
audit_event_parse(const char *s, enum audit_event *ev)
{
	size_t i;

	for (i = 0; i < sizeof(audit_events) / sizeof(audit_events[0]); i++)
		if (strcmp(s, audit_events[i]) == 0) {
			*ev = (enum audit_event)i;
			return 0;
		}
	return -1;
}

/*
 * Reads and checks the last line of the file open on fd (size bytes): *seq and head
 * get its seq and hash.  An empty file gives seq 0 and the zero hash.  Returns 0, or
 * -1 with err for a torn last line, an unreadable or a bad record.
 */
static int
log_tail(int fd, off_t size, const char *path, const unsigned char *key,
    size_t keylen, long long *seq, char head[AUDIT_HASH_HEX + 1], char *err,
    size_t errlen)
{
	struct audit_line al;
	char why[256], *buf = NULL, *line;
	size_t want, got, len;
	ssize_t n;
	int rv = -1;

	*seq = 0;
	memcpy(head, AUDIT_ZERO_HASH, AUDIT_HASH_HEX + 1);
	if (size == 0)
		return 0;
	/* Most records are far below TAIL_CHUNK; a longer last line is read whole. */
	want = (size_t)size < TAIL_CHUNK ? (size_t)size : TAIL_CHUNK;
	for (;;) {
		free(buf);
		if ((buf = malloc(want)) == NULL) {
			snprintf(err, errlen, "%s: out of memory", path);
			goto out;
		}
		for (got = 0; got < want; got += (size_t)n) {
			n = pread(fd, buf + got, want - got,
			    size - (off_t)want + (off_t)got);
			if (n == -1 && errno == EINTR) {
				n = 0;
				continue;
			}
			if (n == -1 || n == 0) {
				snprintf(err, errlen, "%s: read: %s", path,
				    n == 0 ? "file shrank" : strerror(errno));
				goto out;
			}
		}
		if (buf[want - 1] != '\n') {
			snprintf(err, errlen, "%s: the last line is torn (no "
			    "newline at the end): refusing to append after it; "
			    "check the file with `airlock audit verify` and move "
			    "it aside", path);
			goto out;
		}
		line = memrchr(buf, '\n', want - 1);
		if (line != NULL || want == (size_t)size)
			break;
		if (want > AUDIT_LINE_MAX) {
			snprintf(err, errlen, "%s: the last line is longer than "
			    "%d bytes: not an audit log?", path, AUDIT_LINE_MAX);
			goto out;
		}
		want = (size_t)size < AUDIT_LINE_MAX + 2 ? (size_t)size :
		    AUDIT_LINE_MAX + 2;
	}
	line = line != NULL ? line + 1 : buf;
	len = (size_t)(buf + want - 1 - line);
	if (audit_line_parse(line, len, key, keylen, &al, why, sizeof(why)) == -1) {
		snprintf(err, errlen, "%s: the last record does not verify (%s): "
		    "refusing to continue the chain; check the file with "
		    "`airlock audit verify` and move it aside", path, why);
		goto out;
	}
	*seq = al.al_seq;
	memcpy(head, al.al_hash, AUDIT_HASH_HEX + 1);
	rv = 0;
 out:
	free(buf);
	return rv;
}

/*
 * The seq of the first record of the file open on fd (size bytes), checked; 0 when
 * the file is empty or its first line does not verify (a checkpoint then leaves
 * first_seq out: the tail is what the writer vouches for).
 */
static long long
log_first(int fd, off_t size, const unsigned char *key, size_t keylen)
{
	struct audit_line al;
	char why[256], *buf = NULL, *nl = NULL;
	size_t want, got;
	long long seq = 0;
	ssize_t n;

	want = (size_t)size < TAIL_CHUNK ? (size_t)size : TAIL_CHUNK;
	while (want > 0 && nl == NULL) {
		free(buf);
		if ((buf = malloc(want)) == NULL)
			return 0;
		for (got = 0; got < want; got += (size_t)n)
			if ((n = pread(fd, buf + got, want - got, (off_t)got)) <= 0) {
				if (n == -1 && errno == EINTR) {
					n = 0;
					continue;
				}
				goto out;
			}
		if ((nl = memchr(buf, '\n', want)) == NULL) {
			if (want == (size_t)size || want > AUDIT_LINE_MAX)
				goto out;
			want = (size_t)size < AUDIT_LINE_MAX + 1 ? (size_t)size :
			    AUDIT_LINE_MAX + 1;
		}
	}
	if (nl != NULL && audit_line_parse(buf, (size_t)(nl - buf), key, keylen,
	    &al, why, sizeof(why)) == 0)
		seq = al.al_seq;
 out:
	free(buf);
	return seq;
}

int
audit_path_open(const char *path, int oflags, int *fdp, int *rfdp, char *err,
    size_t errlen)
{
	char rotated[4096];
	struct stat st;
	int fd;

	*fdp = *rfdp = -1;
	if ((size_t)snprintf(rotated, sizeof(rotated), "%s.1", path) >=
	    sizeof(rotated)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	if ((fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY |
	    oflags, 0600)) == -1 || fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	/* Empty: the chain may go on from the file it was rotated to. */
	if (st.st_size == 0 && (*rfdp = open(rotated, O_RDONLY | O_CLOEXEC |
	    O_NOCTTY | oflags)) == -1 && errno != ENOENT) {
		snprintf(err, errlen, "%s: %s", rotated, strerror(errno));
		close(fd);
		return -1;
	}
	*fdp = fd;
	return 0;
}

/*
 * Takes the log file open on fd (audit_path_open()) for writing and finds where its
 * chain ends: in that file itself, or if it is empty in rfd's (path.1, the file it
 * was rotated to; -1: none, a new chain).  Locks fd.  Returns 0 with *sizep, *seq
 * and head set, or -1 with err; the caller closes fd and rfd either way.
 */
static int
log_take_fd(const char *path, int fd, int rfd, const unsigned char *key,
    size_t keylen, off_t *sizep, long long *seq, char head[AUDIT_HASH_HEX + 1],
    char *err, size_t errlen)
{
	char rotated[4096];
	struct stat st, rst;

	snprintf(rotated, sizeof(rotated), "%s.1", path);
	if (fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		return -1;
	}
	/* Two writers would fork the chain; the lock goes with the fd. */
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		snprintf(err, errlen, "%s: %s", path, errno == EWOULDBLOCK ?
		    "another process is writing this audit log" :
		    strerror(errno));
		return -1;
	}
	*sizep = st.st_size;
	if (st.st_size > 0)
		return log_tail(fd, st.st_size, path, key, keylen, seq, head, err,
		    errlen);
	if (rfd == -1) {
		*seq = 0;
		memcpy(head, AUDIT_ZERO_HASH, AUDIT_HASH_HEX + 1);
		return 0;
	}
	if (fstat(rfd, &rst) == -1) {
		snprintf(err, errlen, "%s: %s", rotated, strerror(errno));
		return -1;
	}
	return log_tail(rfd, rst.st_size, rotated, key, keylen, seq, head, err,
	    errlen);
}

int
audit_path_head(const char *path, const unsigned char *key, size_t keylen,
    long long *seq, char head[AUDIT_HASH_HEX + 1], char *err, size_t errlen)
{
	char rotated[4096];
	const char *which = path;
	struct stat st;
	int fd, rv;

	if ((size_t)snprintf(rotated, sizeof(rotated), "%s.1", path) >=
	    sizeof(rotated)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	/* No file is an empty one (as audit_open() would make it). */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW)) == -1 &&
	    errno != ENOENT)
		goto syserr;
	if (fd != -1 && fstat(fd, &st) == -1)
		goto syserr;
	if (fd == -1 || st.st_size == 0) {
		if (fd != -1)
			close(fd);
		which = rotated;
		if ((fd = open(rotated, O_RDONLY | O_CLOEXEC | O_NOCTTY |
		    O_NOFOLLOW)) == -1 && errno == ENOENT) {
			*seq = 0;
			memcpy(head, AUDIT_ZERO_HASH, AUDIT_HASH_HEX + 1);
			return 0;
		}
		if (fd == -1 || fstat(fd, &st) == -1)
			goto syserr;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", which);
		close(fd);
		return -1;
	}
	rv = log_tail(fd, st.st_size, which, key, keylen, seq, head, err, errlen);
	close(fd);
	return rv;
 syserr:
	snprintf(err, errlen, "%s: %s", which, strerror(errno));
	if (fd != -1)
		close(fd);
	return -1;
}

struct audit_log *
audit_open_keyed(const char *path, enum audit_fsync fs, const unsigned char *key,
    size_t keylen, char *err, size_t errlen)
{
	struct audit_log *log = NULL;
	int rfd = -1, rv;

	if (key != NULL && (keylen == 0 || keylen > AUDIT_KEY_MAX)) {
		snprintf(err, errlen, "%s: the audit key must be 1 to %d bytes",
		    path, AUDIT_KEY_MAX);
		goto error;
	}
	if ((log = calloc(1, sizeof(*log))) == NULL ||
	    (log->lg_path = strdup(path)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto error;
	}
	log->lg_fd = -1;
	log->lg_fsync = fs;
	if (key != NULL) {
		memcpy(log->lg_key, key, keylen);
		log->lg_keylen = keylen;
	}
	if (audit_path_open(path, 0, &log->lg_fd, &rfd, err, errlen) == -1)
		goto error;
	rv = log_take_fd(path, log->lg_fd, rfd, log->lg_keylen ? log->lg_key : NULL,
	    log->lg_keylen, &log->lg_size, &log->lg_seq, log->lg_head, err, errlen);
	if (rfd != -1)
		close(rfd);
	if (rv == -1) {
		close(log->lg_fd);
		goto error;
	}
	log->lg_synced = log->lg_seq;
	log->lg_first_seq = log->lg_size > 0 ? log_first(log->lg_fd, log->lg_size,
	    log->lg_keylen ? log->lg_key : NULL, log->lg_keylen) : log->lg_seq + 1;
	if ((log->lg_agg = audit_agg_new(AUDIT_AGG_SLOTS)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		close(log->lg_fd);
		goto error;
	}
	if ((errno = pthread_mutex_init(&log->lg_mtx, NULL)) != 0)
		goto sync_error;
	if ((errno = pthread_mutex_init(&log->lg_sync_mtx, NULL)) != 0) {
		pthread_mutex_destroy(&log->lg_mtx);
		goto sync_error;
	}
	if ((errno = pthread_cond_init(&log->lg_sync_cv, NULL)) != 0) {
		pthread_mutex_destroy(&log->lg_sync_mtx);
		pthread_mutex_destroy(&log->lg_mtx);
		goto sync_error;
	}
	return log;
 sync_error:
	snprintf(err, errlen, "%s: %s", path, strerror(errno));
	close(log->lg_fd);
 error:
	if (log != NULL) {
		audit_agg_free(log->lg_agg);
		OPENSSL_cleanse(log->lg_key, sizeof(log->lg_key));
		free(log->lg_path);
		free(log);
	}
	return NULL;
}

struct audit_log *
audit_open(const char *path, enum audit_fsync fs, char *err, size_t errlen)
{
	return audit_open_keyed(path, fs, NULL, 0, err, errlen);
}

int
audit_reopen(struct audit_log *log, char *err, size_t errlen)
{
	int fd, rfd;

	if (audit_path_open(log->lg_path, 0, &fd, &rfd, err, errlen) == -1)
		return -1;
	return audit_reopen_fd(log, fd, rfd, err, errlen);
}

/*
 * The log goes on in fd (size bytes, locked; first: its first record's seq, 0 for
 * the next one): the old file is made durable and closed.  Locked.
 */
static void
log_switch(struct audit_log *log, int fd, off_t size, long long first)
{
	/*
	 * Records on the old file count as synced once a later fdatasync() of the new
	 * one returns: make them durable before the fd goes.
	 */
	if (log->lg_fsync != AUDIT_FSYNC_NEVER && fdatasync(log->lg_fd) == -1) {
		__atomic_store_n(&log->lg_err, errno, __ATOMIC_RELAXED);
		log->lg_err_sync = 1;
	}
	close(log->lg_fd);
	log->lg_fd = fd;
	log->lg_size = size;
	log->lg_broken = 0;
	log->lg_first_seq = first > 0 ? first : log->lg_seq + 1;
	log->lg_watch_told = 0;
}

int
audit_reopen_fd(struct audit_log *log, int fd, int rfd, char *err, size_t errlen)
{
	char head[AUDIT_HASH_HEX + 1];
	struct stat st, cur;
	long long seq;
	off_t size;
	int rv = -1;

	pthread_mutex_lock(&log->lg_mtx);
	/* Not rotated: keep the fd (a second one would fail our own flock). */
	if (fstat(fd, &st) == 0 && fstat(log->lg_fd, &cur) == 0 &&
	    st.st_dev == cur.st_dev && st.st_ino == cur.st_ino) {
		rv = 0;
		goto out;
	}
	if (log_take_fd(log->lg_path, fd, rfd, log->lg_keylen ? log->lg_key : NULL,
	    log->lg_keylen, &size, &seq, head, err, errlen) == -1)
		goto out;
	if (seq != log->lg_seq || strcmp(head, log->lg_head) != 0) {
		snprintf(err, errlen, "%s: the chain on disk ends at seq %lld, "
		    "this log's at seq %lld: keeping the old file", log->lg_path,
		    seq, log->lg_seq);
		goto out;
	}
	/*
	 * A new file: the old one ends with a checkpoint (a failure to write it is
	 * the old file's, audit_error() says it; the new file may do better).
	 */
	if (size == 0 && log->lg_sign != NULL && !log->lg_broken)
		(void)log_checkpoint(log, "sighup");
	log_switch(log, fd, size, size > 0 ? log_first(fd, size,
	    log->lg_keylen ? log->lg_key : NULL, log->lg_keylen) : 0);
	fd = -1;	/* transferred */
	if (size == 0)
		(void)log_rotate_record(log, "sighup");
	rv = 0;
 out:
	pthread_mutex_unlock(&log->lg_mtx);
	if (fd != -1)
		close(fd);
	if (rfd != -1)
		close(rfd);
	return rv;
}

int
audit_rotate_fd(struct audit_log *log, int fd, char *err, size_t errlen)
{
	struct stat st;
	int rv = -1;

	pthread_mutex_lock(&log->lg_mtx);
	if (fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", log->lg_path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size != 0) {
		snprintf(err, errlen, "%s: the new file is not an empty regular file",
		    log->lg_path);
		goto out;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		snprintf(err, errlen, "%s: %s", log->lg_path, errno == EWOULDBLOCK ?
		    "another process is writing this audit log" : strerror(errno));
		goto out;
	}
	if (log->lg_sign != NULL && !log->lg_broken)
		(void)log_checkpoint(log, "max_bytes");
	log_switch(log, fd, 0, 0);
	fd = -1;
	(void)log_rotate_record(log, "max_bytes");
	rv = 0;
 out:
	pthread_mutex_unlock(&log->lg_mtx);
	if (fd != -1)
		close(fd);
	return rv;
}

long long
audit_head(struct audit_log *log, char hash[AUDIT_HASH_HEX + 1])
{
	long long seq;

	pthread_mutex_lock(&log->lg_mtx);
	seq = log->lg_seq;
	memcpy(hash, log->lg_head, AUDIT_HASH_HEX + 1);
	pthread_mutex_unlock(&log->lg_mtx);
	return seq;
}

void
audit_close(struct audit_log *log)
{
	if (log == NULL)
		return;
	if (log->lg_thr_on) {
		pthread_mutex_lock(&log->lg_sync_mtx);
		log->lg_thr_stop = 1;
		pthread_cond_broadcast(&log->lg_sync_cv);
		pthread_mutex_unlock(&log->lg_sync_mtx);
		pthread_join(log->lg_thr, NULL);
	}
	/* Every pending count goes out (a failure was already reported by writes). */
	(void)audit_flush(log, 1);
	if (log->lg_fd != -1)
		close(log->lg_fd);
	audit_agg_free(log->lg_agg);
	pthread_cond_destroy(&log->lg_sync_cv);
	pthread_mutex_destroy(&log->lg_sync_mtx);
	pthread_mutex_destroy(&log->lg_mtx);
	OPENSSL_cleanse(log->lg_key, sizeof(log->lg_key));
	free(log->lg_path);
	free(log);
}

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 if invalid. */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;	/* overlong */
		else if (c == 0xed)
			hi = 0x9f;	/* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;	/* overlong */
		else if (c == 0xf4)
			hi = 0x8f;	/* above U+10FFFF */
	} else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/*
 * The line is written by hand, not through jansson objects (a json_t per field
 * and json_dumps were ~8% of an inspected keep-alive request's CPU, issue 7).  The
 * bytes are jansson's for JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII
 * (tests/unit/audit_write.c parses lines and compares them with json_dumps of the
 * result): fields in this order, strings escaped as jansson does (\\ \" \b \f \n
 * \r \t; other control characters and every code point above 0x7F as \\uXXXX,
 * upper-case hex, UTF-16 surrogate pairs above the BMP; 0x7F as it is).
 */
struct line_buf {
	char	*lb_buf;
	size_t	 lb_len;
	size_t	 lb_cap;
	int	 lb_err;	/* ENOMEM seen: the line is void */
};

static void
lb_add(struct line_buf *lb, const void *p, size_t n)
{
	char *nb;
	size_t cap;

	if (lb->lb_err)
		return;
	if (lb->lb_len + n + 1 > lb->lb_cap) {
		cap = lb->lb_cap != 0 ? lb->lb_cap : 512;
		while (lb->lb_len + n + 1 > cap)
			cap *= 2;
		if ((nb = realloc(lb->lb_buf, cap)) == NULL) {
			lb->lb_err = 1;
			return;
		}
		lb->lb_buf = nb;
		lb->lb_cap = cap;
	}
	memcpy(lb->lb_buf + lb->lb_len, p, n);
	lb->lb_len += n;
	lb->lb_buf[lb->lb_len] = '\0';
}

static void
lb_str(struct line_buf *lb, const char *s)
{
	lb_add(lb, s, strlen(s));
}

/* n bytes of valid UTF-8 at p as a JSON string, escaped as jansson's ENSURE_ASCII. */
static void
lb_json_str(struct line_buf *lb, const unsigned char *p, size_t n)
{
	char seq[16];
	size_t i = 0, run, cl;
	unsigned long cp;

	lb_add(lb, "\"", 1);
	while (i < n) {
		for (run = i; run < n && p[run] >= 0x20 && p[run] < 0x80 &&
		    p[run] != '"' && p[run] != '\\'; run++)
			;
		lb_add(lb, p + i, run - i);
		if ((i = run) >= n)
			break;
		switch (p[i]) {
		case '"':
			lb_add(lb, "\\\"", 2);
			i++;
			continue;
		case '\\':
			lb_add(lb, "\\\\", 2);
			i++;
			continue;
		case '\b':
			lb_add(lb, "\\b", 2);
			i++;
			continue;
		case '\f':
			lb_add(lb, "\\f", 2);
			i++;
			continue;
		case '\n':
			lb_add(lb, "\\n", 2);
			i++;
			continue;
		case '\r':
			lb_add(lb, "\\r", 2);
			i++;
			continue;
		case '\t':
			lb_add(lb, "\\t", 2);
			i++;
			continue;
		}
		if (p[i] < 0x80) {
			cp = p[i];
			cl = 1;
		} else {
			/* Valid by construction (str_clean()); decode. */
			cl = utf8_len(p + i, n - i);
			if (cl == 2)
				cp = (p[i] & 0x1fUL) << 6 | (p[i + 1] & 0x3fUL);
			else if (cl == 3)
				cp = (p[i] & 0x0fUL) << 12 |
				    (p[i + 1] & 0x3fUL) << 6 | (p[i + 2] & 0x3fUL);
			else if (cl == 4)
				cp = (p[i] & 0x07UL) << 18 |
				    (p[i + 1] & 0x3fUL) << 12 |
				    (p[i + 2] & 0x3fUL) << 6 | (p[i + 3] & 0x3fUL);
			else {
				lb->lb_err = 1;	/* cannot happen */
				return;
			}
		}
		if (cp < 0x10000)
			snprintf(seq, sizeof(seq), "\\u%04lX", cp);
		else {
			cp -= 0x10000;
			snprintf(seq, sizeof(seq), "\\u%04lX\\u%04lX",
			    0xd800UL | (cp >> 10), 0xdc00UL | (cp & 0x3ffUL));
		}
		lb_str(lb, seq);
		i += cl;
	}
	lb_add(lb, "\"", 1);
}

/*
 * At most max bytes of UTF-8 from s, in buf (max + 1 bytes): invalid UTF-8 becomes
 * U+FFFD, and a longer string is cut at a character boundary and ends in
 * AUDIT_TRUNC_MARK.  Returns the length.
 */
static size_t
str_clean(const char *s, size_t max, char *buf)
{
	static const char repl[] = "\xef\xbf\xbd";
	const size_t marklen = sizeof(AUDIT_TRUNC_MARK) - 1;
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, o = 0, cut = 0, cl;

	while (i < n) {
		const void *src;
		size_t adv;

		if ((cl = utf8_len(p + i, n - i)) == 0) {
			src = repl;
			cl = 3;
			adv = 1;
		} else {
			src = p + i;
			adv = cl;
		}
		if (o + cl > max) {
			memcpy(buf + cut, AUDIT_TRUNC_MARK, marklen);
			o = cut + marklen;
			break;
		}
		memcpy(buf + o, src, cl);
		o += cl;
		i += adv;
		if (o + marklen <= max)
			cut = o;
	}
	return o;
}

/* ,"key": and s cleaned to max bytes (nothing if s is NULL). */
static void
lb_field_str(struct line_buf *lb, const char *key, const char *s, size_t max)
{
	char *buf;
	size_t n;

	if (s == NULL)
		return;
	if ((buf = malloc(max + 1)) == NULL) {
		lb->lb_err = 1;
		return;
	}
	n = str_clean(s, max, buf);
	lb_add(lb, ",", 1);
	lb_json_str(lb, (const unsigned char *)key, strlen(key));
	lb_add(lb, ":", 1);
	lb_json_str(lb, (const unsigned char *)buf, n);
	free(buf);
}

/* ,"key":v (any v; lb_field_num() leaves out negative ones). */
static void
lb_field_int(struct line_buf *lb, const char *key, long long v)
{
	char num[32];

	snprintf(num, sizeof(num), "%lld", v);
	lb_add(lb, ",", 1);
	lb_json_str(lb, (const unsigned char *)key, strlen(key));
	lb_add(lb, ":", 1);
	lb_str(lb, num);
}

static void
lb_field_num(struct line_buf *lb, const char *key, long long v)
{
	if (v >= 0)
		lb_field_int(lb, key, v);
}

static int
extra_key_is_valid(const char *k)
{
	size_t i, n;

	if (k == NULL || (n = strlen(k)) == 0 || n > 32)
		return 0;
	for (i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') ||
		    k[i] == '_'))
			return 0;
	for (i = 0; i < sizeof(audit_reserved) / sizeof(audit_reserved[0]); i++)
		if (strcmp(k, audit_reserved[i]) == 0)
			return 0;
	return 1;
}

/* Whether r is a record we can write (see audit_write() for the rules). */
static int
record_is_valid(const struct audit_record *r)
{
	size_t i, j;

	/* The writer's own records have fields it alone may set. */
	if (audit_event_str(r->ar_event) == NULL ||
	    r->ar_event == AUDIT_EV_CHECKPOINT || r->ar_event == AUDIT_EV_ROTATE)
		return 0;
	if (r->ar_decision != NULL && strcmp(r->ar_decision, "allow") != 0 &&
	    strcmp(r->ar_decision, "deny") != 0)
		return 0;
	if (r->ar_nextra > AUDIT_EXTRA_MAX || (r->ar_nextra > 0 &&
	    r->ar_extra == NULL))
		return 0;
	for (i = 0; i < r->ar_nextra; i++) {
		if (!extra_key_is_valid(r->ar_extra[i].ak_key))
			return 0;
		for (j = 0; j < i; j++)
			if (strcmp(r->ar_extra[i].ak_key,
			    r->ar_extra[j].ak_key) == 0)
				return 0;
	}
	if (r->ar_inject != NULL) {
		for (i = 0; r->ar_inject[i] != NULL; i++)
			if (i >= AUDIT_INJECT_MAX)
				return 0;
	}
	return 1;
}

/*
 * The record's line up to and including prev (no closing brace yet), as a new
 * string to free(); NULL on ENOMEM.
 */
static char *
record_build(const struct audit_record *r, long long ts_ms, long long seq,
    const char *prev)
{
	struct line_buf lb = { NULL, 0, 0, 0 };
	char ts[32], *buf;
	size_t i, n;

	audit_time_format(ts_ms, ts, sizeof(ts));
	lb_str(&lb, "{\"ts\":");
	lb_json_str(&lb, (const unsigned char *)ts, strlen(ts));
	lb_field_int(&lb, "seq", seq);
	lb_field_str(&lb, "sandbox", r->ar_sandbox, AUDIT_STR_MAX);
	lb_str(&lb, ",\"event\":");
	lb_json_str(&lb, (const unsigned char *)audit_event_str(r->ar_event),
	    strlen(audit_event_str(r->ar_event)));
	lb_field_str(&lb, "src", r->ar_src, AUDIT_STR_MAX);
	lb_field_str(&lb, "dst", r->ar_dst, AUDIT_STR_MAX);
	lb_field_str(&lb, "tls", r->ar_tls, AUDIT_STR_MAX);
	lb_field_str(&lb, "method", r->ar_method, AUDIT_STR_MAX);
	lb_field_str(&lb, "path", r->ar_path, AUDIT_PATH_MAX);
	lb_field_num(&lb, "status", r->ar_status);
	lb_field_str(&lb, "decision", r->ar_decision, AUDIT_STR_MAX);
	lb_field_str(&lb, "rule", r->ar_rule, AUDIT_STR_MAX);
	lb_field_str(&lb, "rule_file", r->ar_rule_file, AUDIT_STR_MAX);
	lb_field_str(&lb, "reason", r->ar_reason, AUDIT_STR_MAX);
	if (r->ar_would_deny)
		lb_str(&lb, ",\"would_deny\":true");
	if (r->ar_inject != NULL) {
		lb_str(&lb, ",\"inject\":[");
		for (i = 0; r->ar_inject[i] != NULL; i++) {
			if ((buf = malloc(AUDIT_STR_MAX + 1)) == NULL) {
				lb.lb_err = 1;
				break;
			}
			n = str_clean(r->ar_inject[i], AUDIT_STR_MAX, buf);
			if (i > 0)
				lb_add(&lb, ",", 1);
			lb_json_str(&lb, (const unsigned char *)buf, n);
			free(buf);
		}
		lb_add(&lb, "]", 1);
	}
	lb_field_num(&lb, "bytes_up", r->ar_bytes_up);
	lb_field_num(&lb, "bytes_down", r->ar_bytes_down);
	lb_field_num(&lb, "ms", r->ar_ms);
	for (i = 0; i < r->ar_nextra; i++) {
		const struct audit_kv *kv = &r->ar_extra[i];

		if (kv->ak_str != NULL)
			lb_field_str(&lb, kv->ak_key, kv->ak_str,
			    AUDIT_EXTRA_STR_MAX);
		else
			lb_field_int(&lb, kv->ak_key, kv->ak_num);
	}
	lb_str(&lb, ",\"prev\":");
	lb_json_str(&lb, (const unsigned char *)prev, strlen(prev));
	lb_add(&lb, "}", 1);
	if (lb.lb_err) {
		free(lb.lb_buf);
		return NULL;
	}
	return lb.lb_buf;
}

static int
record_needs_fsync(const struct audit_log *log, const struct audit_record *r)
{
	switch (log->lg_fsync) {
	case AUDIT_FSYNC_ALWAYS:
		return 1;
	case AUDIT_FSYNC_DENY:
		return r->ar_event == AUDIT_EV_DENY || r->ar_event == AUDIT_EV_EXFIL ||
		    (r->ar_decision != NULL && strcmp(r->ar_decision, "deny") == 0);
	default:
		return 0;
	}
}


static void
log_fail(struct audit_log *log, int err, int from_sync)
{
	__atomic_fetch_add(&log->lg_n_errors, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&log->lg_err, err, __ATOMIC_RELAXED);
	if (from_sync)
		log->lg_err_sync = 1;
}

/* Whether a checkpoint or a rotation is due (audit_watch()).  Locked. */
static int
log_cp_due(const struct audit_log *log)
{
	return log->lg_cp_every > 0 && log->lg_since_cp >= log->lg_cp_every;
}

static int
log_rotate_due(const struct audit_log *log)
{
	return log->lg_max_bytes > 0 && log->lg_size >= log->lg_max_bytes;
}

/* Tells the owner, once, that one is due.  Locked. */
static void
log_watch_check(struct audit_log *log)
{
	if (log->lg_watch == NULL || log->lg_watch_told ||
	    (!log_cp_due(log) && !log_rotate_due(log)))
		return;
	log->lg_watch_told = 1;
	log->lg_watch(log->lg_watch_arg);
}

/*
 * Appends r (valid) at ts_ms to the file and advances the chain.  Called with
 * lg_mtx held.  Returns 0, or -1 with errno (and lg_err set): the file and the chain
 * are then as they were.
 */
static int
log_append(struct audit_log *log, const struct audit_record *r, long long ts_ms)
{
	char hash[AUDIT_HASH_HEX + 1];
	char *body = NULL, *line = NULL;
	size_t blen, len, done = 0;
	ssize_t n;
	int saved, rv = -1;

	if ((body = record_build(r, ts_ms, log->lg_seq + 1, log->lg_head)) == NULL) {
		errno = ENOMEM;
		goto out;
	}
	/* The line ends the object with '}': the hash covers body exactly. */
	blen = strlen(body);
	if (blen < 2 || body[blen - 1] != '}') {
		errno = EINVAL;
		goto out;
	}
	blen--;
	if (audit_hash_compute(body, blen, log->lg_keylen ? log->lg_key : NULL,
	    log->lg_keylen, hash) == -1) {
		errno = ENOMEM;
		goto out;
	}
	len = blen + sizeof(AUDIT_HASH_SEP) - 1 + AUDIT_HASH_HEX +
	    sizeof(AUDIT_HASH_END) - 1 + 1;
	if ((line = malloc(len + 1)) == NULL)
		goto out;
	snprintf(line, len + 1, "%.*s%s%s%s\n", (int)blen, body, AUDIT_HASH_SEP,
	    hash, AUDIT_HASH_END);
	while (done < len) {
		if ((n = write(log->lg_fd, line + done, len - done)) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		done += (size_t)n;
	}
	if (done < len) {
		/* Undo a partial line, so the next record does not follow garbage. */
		saved = errno;
		if (done > 0 && ftruncate(log->lg_fd, log->lg_size) == -1)
			log->lg_broken = 1;
		errno = saved;
		log_fail(log, errno, 0);
		goto out;
	}
	/* The line is in the file: the chain advances even if fsync fails. */
	log->lg_size += (off_t)len;
	log->lg_seq++;
	memcpy(log->lg_head, hash, sizeof(log->lg_head));
	if (!log->lg_err_sync)
		__atomic_store_n(&log->lg_err, 0, __ATOMIC_RELAXED);
	log->lg_since_cp++;
	if (log->lg_tap != NULL)
		log->lg_tap(log->lg_tap_arg, r->ar_event, log->lg_seq, ts_ms, line,
		    len - 1);
	log_watch_check(log);
	rv = 0;
 out:
	saved = errno;
	free(body);
	free(line);
	errno = saved;
	return rv;
}

/*
 * Waits until every record up to seq is on disk (group commit, see the top).  Called
 * without lg_mtx.  Returns 0, or -1 with errno (lg_err set, and kept: after a
 * failed fdatasync() nothing says what reached the disk).
 */
static int
log_sync(struct audit_log *log, long long seq)
{
	long long target;
	int fd, rc, err = 0;

	pthread_mutex_lock(&log->lg_sync_mtx);
	while (log->lg_synced < seq && err == 0) {
		if (log->lg_syncing) {
			pthread_cond_wait(&log->lg_sync_cv, &log->lg_sync_mtx);
			continue;
		}
		log->lg_syncing = 1;
		pthread_mutex_unlock(&log->lg_sync_mtx);
		/* A dup: audit_reopen() may close lg_fd while we sync. */
		pthread_mutex_lock(&log->lg_mtx);
		target = log->lg_seq;
		fd = fcntl(log->lg_fd, F_DUPFD_CLOEXEC, 0);
		pthread_mutex_unlock(&log->lg_mtx);
		/* fdatasync: the data and the new size, which is all a reader needs. */
		if ((rc = fd == -1 ? -1 : fdatasync(fd)) == -1)
			err = errno;
		if (fd != -1)
			close(fd);
		pthread_mutex_lock(&log->lg_sync_mtx);
		log->lg_syncing = 0;
		if (rc == 0 && target > log->lg_synced)
			log->lg_synced = target;
		pthread_cond_broadcast(&log->lg_sync_cv);
	}
	pthread_mutex_unlock(&log->lg_sync_mtx);
	if (err != 0) {
		pthread_mutex_lock(&log->lg_mtx);
		log_fail(log, err, 1);
		pthread_mutex_unlock(&log->lg_mtx);
		errno = err;
		return -1;
	}
	return 0;
}

/*
 * The pending count of s as a record of its own ("suppressed":N,
 * "aggregate":"flush"; not a denial itself).  Locked.  Returns 0 (s emptied) or -1.
 */
static int
log_agg_emit(struct audit_log *log, struct audit_agg_slot *s, long long ts_ms)
{
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_kv kv[2] = {
		{ .ak_key = "suppressed", .ak_num = s->as_pending },
		{ .ak_key = "aggregate", .ak_str = "flush" },
	};

	r.ar_event = AUDIT_EV_DENY;
	r.ar_sandbox = s->as_sandbox[0] != '\0' ? s->as_sandbox : NULL;
	r.ar_dst = s->as_dst[0] != '\0' ? s->as_dst : NULL;
	r.ar_decision = "deny";
	r.ar_reason = s->as_reason;
	r.ar_extra = kv;
	r.ar_nextra = 2;
	if (log_append(log, &r, ts_ms) == -1)
		return -1;
	s->as_pending = 0;
	return 0;
}

/* Whether audit_write() aggregates r. */
static int
record_is_aggregated(const struct audit_record *r)
{
	return r->ar_aggregate != AUDIT_AGG_NONE && r->ar_reason != NULL && r->ar_decision != NULL &&
	    strcmp(r->ar_decision, "deny") == 0;
}

/*
 * r, a denial to aggregate, at ts_ms: written (with "suppressed":N, the denials of
 * its key not written since its last record) if it is the first of its key in its
 * second, else counted.  A record that cannot be written is counted as well and
 * goes out later: a denial is never dropped.  Locked.  Returns *seq: the seq to
 * sync, 0 when nothing was written.
 */
static void
log_append_agg(struct audit_log *log, const struct audit_record *r, long long ts_ms,
    long long *seq)
{
	struct audit_kv kv[AUDIT_EXTRA_MAX + 1];
	struct audit_agg_slot *s, *victim;
	struct audit_record cp = *r;
	const char *sb = r->ar_sandbox != NULL ? r->ar_sandbox : "";
	const char *dst = r->ar_dst != NULL && r->ar_aggregate == AUDIT_AGG_DST ?
	    r->ar_dst : "";
	long long sec = ts_ms / 1000 + 1;	/* never 0, a new slot's */

	*seq = 0;
	if ((s = audit_agg_find(log->lg_agg, sb, r->ar_reason, dst,
	    &victim)) == NULL) {
		/* Its set is full: the oldest aggregate goes out first. */
		if (victim->as_pending > 0 && log_agg_emit(log, victim, ts_ms) == -1) {
			log->lg_agg_lost++;
			return;
		}
		audit_agg_slot_take(victim, sb, r->ar_reason, dst);
		s = victim;
		*seq = log->lg_seq;
	}
	if (s->as_sec == sec) {
		s->as_pending++;
		__atomic_fetch_add(&log->lg_n_suppressed, 1, __ATOMIC_RELAXED);
		return;
	}
	s->as_sec = sec;
	if (r->ar_nextra > 0)
		memcpy(kv, r->ar_extra, r->ar_nextra * sizeof(kv[0]));
	if (s->as_pending > 0) {
		kv[cp.ar_nextra++] = (struct audit_kv){ .ak_key = "suppressed",
		    .ak_num = s->as_pending };
	}
	cp.ar_extra = kv;
	if (log_append(log, &cp, ts_ms) == -1) {
		s->as_pending++;
		return;
	}
	s->as_pending = 0;
	*seq = log->lg_seq;
}

/* Now, in ms since the epoch (0 if the clock fails). */
static long long
log_now_ms(void)
{
	struct timespec now;

	if (clock_gettime(CLOCK_REALTIME, &now) == -1)
		return 0;
	return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* What a signer answered, as the record will carry it: 1 if it is well formed. */
static int
sig_is_valid(const struct audit_signature *sig, long long seq)
{
	return audit_is_hex(sig->as_key, AUDIT_KEYID_HEX) &&
	    audit_is_hex(sig->as_sig, AUDIT_SIG_HEX) &&
	    audit_is_hex(sig->as_link_head, AUDIT_HASH_HEX) &&
	    sig->as_link_seq >= 0 && sig->as_link_seq <= seq;
}

/*
 * A checkpoint of the head as it is now (at: why it is written), signed by
 * lg_sign when there is one, else written unsigned.  Locked.  0 (and nothing for
 * an empty chain), or -1 with errno.
 */
static int
log_checkpoint(struct audit_log *log, const char *at)
{
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_signature sig;
	struct audit_kv kv[8];
	long long ts_ms;
	size_t n = 0;
	int rc = -1;

	if (log->lg_seq == 0)
		return 0;
	if ((ts_ms = log_now_ms()) == 0)
		return -1;
	memset(&sig, 0, sizeof(sig));
	if (log->lg_sign != NULL)
		rc = log->lg_sign(log->lg_sign_arg, log->lg_seq, log->lg_head, ts_ms,
		    &sig);
	else
		snprintf(sig.as_unsigned, sizeof(sig.as_unsigned), "no signer");
	if (rc == 0 && !sig_is_valid(&sig, log->lg_seq)) {
		rc = -1;
		snprintf(sig.as_unsigned, sizeof(sig.as_unsigned), "the signer's "
		    "answer is malformed");
	}
	kv[n++] = (struct audit_kv){ .ak_key = "at", .ak_str = at };
	if (log->lg_first_seq > 0)
		kv[n++] = (struct audit_kv){ .ak_key = "first_seq",
		    .ak_num = log->lg_first_seq };
	kv[n++] = (struct audit_kv){ .ak_key = "last_seq", .ak_num = log->lg_seq };
	kv[n++] = (struct audit_kv){ .ak_key = "head", .ak_str = log->lg_head };
	if (rc == 0) {
		kv[n++] = (struct audit_kv){ .ak_key = "link_seq",
		    .ak_num = sig.as_link_seq };
		kv[n++] = (struct audit_kv){ .ak_key = "link_head",
		    .ak_str = sig.as_link_head };
		kv[n++] = (struct audit_kv){ .ak_key = "key", .ak_str = sig.as_key };
		kv[n++] = (struct audit_kv){ .ak_key = "sig", .ak_str = sig.as_sig };
	} else {
		sig.as_unsigned[sizeof(sig.as_unsigned) - 1] = '\0';
		kv[n++] = (struct audit_kv){ .ak_key = "unsigned",
		    .ak_str = sig.as_unsigned[0] != '\0' ? sig.as_unsigned :
		    "not signed" };
	}
	r.ar_event = AUDIT_EV_CHECKPOINT;
	r.ar_extra = kv;
	r.ar_nextra = n;
	if (log_append(log, &r, ts_ms) == -1)
		return -1;
	log->lg_since_cp = 0;
	log->lg_watch_told = 0;
	return 0;
}

/*
 * The first record of a new file (source: why there is one): the previous file's
 * last seq and hash, which are also the chain's prev.  Locked.  0 or -1.
 */
static int
log_rotate_record(struct audit_log *log, const char *source)
{
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_kv kv[3] = {
		{ .ak_key = "source", .ak_str = source },
		{ .ak_key = "last_seq", .ak_num = log->lg_seq },
		{ .ak_key = "head", .ak_str = log->lg_head },
	};
	long long ts_ms;

	if ((ts_ms = log_now_ms()) == 0)
		return -1;
	r.ar_event = AUDIT_EV_ROTATE;
	r.ar_extra = kv;
	r.ar_nextra = 3;
	return log_append(log, &r, ts_ms);
}

int
audit_checkpoint(struct audit_log *log, const char *at)
{
	long long seq;
	int rv, saved;

	if (at == NULL || !audit_at_is_valid(at)) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&log->lg_mtx);
	if (log->lg_broken) {
		pthread_mutex_unlock(&log->lg_mtx);
		errno = EIO;
		return -1;
	}
	rv = log_checkpoint(log, at);
	saved = errno;
	seq = log->lg_seq;
	pthread_mutex_unlock(&log->lg_mtx);
	/* What it vouches for is worth the disk: synced unless nothing is. */
	if (rv == 0 && log->lg_fsync != AUDIT_FSYNC_NEVER)
		return log_sync(log, seq);
	errno = saved;
	return rv;
}

void
audit_set_signer(struct audit_log *log, audit_sign_fn fn, void *arg)
{
	pthread_mutex_lock(&log->lg_mtx);
	log->lg_sign = fn;
	log->lg_sign_arg = arg;
	pthread_mutex_unlock(&log->lg_mtx);
}

void
audit_set_tap(struct audit_log *log, audit_tap_fn fn, void *arg)
{
	pthread_mutex_lock(&log->lg_mtx);
	log->lg_tap = fn;
	log->lg_tap_arg = arg;
	pthread_mutex_unlock(&log->lg_mtx);
}

void
audit_watch(struct audit_log *log, long long every, long long max_bytes,
    void (*cb)(void *), void *arg)
{
	pthread_mutex_lock(&log->lg_mtx);
	log->lg_cp_every = every > 0 ? every : 0;
	log->lg_max_bytes = max_bytes > 0 ? max_bytes : 0;
	log->lg_watch = cb;
	log->lg_watch_arg = arg;
	log->lg_watch_told = 0;
	log_watch_check(log);
	pthread_mutex_unlock(&log->lg_mtx);
}

void
audit_due(struct audit_log *log, int *checkpoint, int *rotate)
{
	pthread_mutex_lock(&log->lg_mtx);
	*checkpoint = log_cp_due(log);
	*rotate = log_rotate_due(log);
	pthread_mutex_unlock(&log->lg_mtx);
}

int
audit_write_nowait(struct audit_log *log, const struct audit_record *r,
    long long *seq)
{
	long long ts_ms, wrote = 0;
	int saved, rv = -1;

	*seq = 0;
	if (!record_is_valid(r)) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&log->lg_mtx);
	if (log->lg_broken) {
		errno = EIO;
		goto out;
	}
	/* Taken under the lock so that ts never goes back as seq goes up. */
	if ((ts_ms = r->ar_ts_ms) <= 0 && (ts_ms = log_now_ms()) == 0)
		goto out;
	if (record_is_aggregated(r)) {
		log_append_agg(log, r, ts_ms, &wrote);
		rv = 0;
	} else if ((rv = log_append(log, r, ts_ms)) == 0)
		wrote = log->lg_seq;
 out:
	saved = errno;
	pthread_mutex_unlock(&log->lg_mtx);
	if (rv == 0 && wrote > 0 && record_needs_fsync(log, r))
		*seq = wrote;
	errno = saved;
	return rv;
}

int
audit_write(struct audit_log *log, const struct audit_record *r)
{
	long long seq;

	if (audit_write_nowait(log, r, &seq) == -1)
		return -1;
	return seq > 0 ? log_sync(log, seq) : 0;
}

int
audit_sync_wait(struct audit_log *log, long long seq)
{
	return seq > 0 ? log_sync(log, seq) : 0;
}

/*
 * The sync thread: a leader (see log_sync()) whenever a seq is wanted that is not
 * on disk and no writer is syncing; tells lg_notify after each fdatasync().
 */
static void *
log_sync_main(void *arg)
{
	struct audit_log *log = arg;
	long long want;
	int err;

	pthread_mutex_lock(&log->lg_sync_mtx);
	while (!log->lg_thr_stop) {
		if (log->lg_want <= log->lg_synced || log->lg_syncing) {
			pthread_cond_wait(&log->lg_sync_cv, &log->lg_sync_mtx);
			continue;
		}
		want = log->lg_want;
		pthread_mutex_unlock(&log->lg_sync_mtx);
		err = log_sync(log, want) == -1;
		if (log->lg_notify != NULL)
			log->lg_notify(log->lg_notify_arg);
		pthread_mutex_lock(&log->lg_sync_mtx);
		/* A failed sync is not retried for this seq: audit_error() says it. */
		if (err && log->lg_want <= want)
			log->lg_want = log->lg_synced;
	}
	pthread_mutex_unlock(&log->lg_sync_mtx);
	return NULL;
}

int
audit_sync_start(struct audit_log *log, void (*notify)(void *), void *arg)
{
	if (log->lg_thr_on)
		return 0;
	log->lg_notify = notify;
	log->lg_notify_arg = arg;
	if ((errno = pthread_create(&log->lg_thr, NULL, log_sync_main, log)) != 0)
		return -1;
	log->lg_thr_on = 1;
	return 0;
}

void
audit_sync_request(struct audit_log *log, long long seq)
{
	pthread_mutex_lock(&log->lg_sync_mtx);
	if (seq > log->lg_want)
		log->lg_want = seq;
	pthread_cond_broadcast(&log->lg_sync_cv);
	pthread_mutex_unlock(&log->lg_sync_mtx);
}

long long
audit_synced(struct audit_log *log)
{
	long long seq;

	pthread_mutex_lock(&log->lg_sync_mtx);
	seq = log->lg_synced;
	pthread_mutex_unlock(&log->lg_sync_mtx);
	return seq;
}

int
audit_flush(struct audit_log *log, int all)
{
	struct audit_record lost = AUDIT_RECORD_INIT;
	struct audit_kv kv[2] = {
		{ .ak_key = "suppressed" },
		{ .ak_key = "aggregate", .ak_str = "flush" },
	};
	struct audit_agg_slot *s;
	long long ts_ms, sec, seq = 0;
	size_t i = 0;
	int rv = 0;

	ts_ms = log_now_ms();
	sec = ts_ms / 1000 + 1;		/* as log_append_agg() counts */
	pthread_mutex_lock(&log->lg_mtx);
	while ((s = audit_agg_next(log->lg_agg, &i)) != NULL) {
		if (s->as_pending > 0 && (all || s->as_sec < sec)) {
			if (log->lg_broken || log_agg_emit(log, s, ts_ms) == -1) {
				rv = -1;
				break;
			}
			seq = log->lg_seq;
		}
		/* Idle for a while: the slot is free again. */
		if (s->as_pending == 0 && s->as_sec < sec - 2)
			s->as_used = 0;
	}
	if (rv == 0 && log->lg_agg_lost > 0) {
		lost.ar_event = AUDIT_EV_DENY;
		lost.ar_decision = "deny";
		lost.ar_reason = "aggregate_overflow";
		kv[0].ak_num = log->lg_agg_lost;
		lost.ar_extra = kv;
		lost.ar_nextra = 2;
		if (log_append(log, &lost, ts_ms) == 0) {
			log->lg_agg_lost = 0;
			seq = log->lg_seq;
		} else
			rv = -1;
	}
	pthread_mutex_unlock(&log->lg_mtx);
	if (seq > 0 && log->lg_fsync != AUDIT_FSYNC_NEVER && log_sync(log, seq) == -1)
		rv = -1;
	return rv;
}

void
audit_counts(struct audit_log *log, struct audit_counts *out)
{
	char head[AUDIT_HASH_HEX + 1];

	out->ac_seq = audit_head(log, head);
	out->ac_errors = __atomic_load_n(&log->lg_n_errors, __ATOMIC_RELAXED);
	out->ac_suppressed = __atomic_load_n(&log->lg_n_suppressed,
	    __ATOMIC_RELAXED);
}

int
audit_error(struct audit_log *log)
{
	return __atomic_load_n(&log->lg_err, __ATOMIC_RELAXED);
}
