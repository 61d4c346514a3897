/*
 * audit/audit_index.c: the index of `airlock audit serve` (include/audit.h).
 *
 * Each record costs one struct ix_rec: where its line is, its time, and the ids of
 * the names filters compare (sandbox, event, decision, reason, host), which live
 * once each in a table of names.  A filter then runs over these structs and reads
 * lines only for a free-text part, in large sequential reads.  The chain and the
 * summary are the verifier's and audit summary's own code, fed line by line as the
 * index reads, so the view can never judge a log otherwise than the commands do.
 *
 * The lines are attacker-influenced (a VM chose hosts, paths, SNI), and a file
 * handed to the view may have been edited by anyone: nothing here trusts a line
 * beyond what the verifier says of it, and every table is sized by what was read,
 * not by what a line claims.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "audit.h"
#include "audit_int.h"
#include "siphash.h"

#define WINDOW_MIN	(1024 * 1024)	/* a free-text scan reads this much at once */

/* Names, each stored once; id 0 is "none". */
struct ix_names {
	char		**in_str;	/* in_str[id - 1] */
	uint32_t	 in_n;
	uint32_t	 in_cap;
	uint32_t	*in_slot;	/* ids; 0 free; in_nslot is a power of two */
	uint32_t	 in_nslot;
	uint8_t		 in_key[16];	/* the names come from the log: keyed hash */
};

struct ix_rec {
	off_t		 ir_off;
	long long	 ir_ts_ms;	/* -1: none */
	uint32_t	 ir_len;
	uint32_t	 ir_sandbox;
	uint32_t	 ir_event;
	uint32_t	 ir_decision;
	uint32_t	 ir_reason;
	uint32_t	 ir_host;
	uint32_t	 ir_file;
};

struct ix_file {
	char		*if_path;
	int		 if_fd;
	int		 if_error;	/* errno of the last open or read, 0 */
	dev_t		 if_dev;
	ino_t		 if_ino;
	off_t		 if_end;	/* end of the last complete line indexed */
	off_t		 if_seen;	/* size at the last look */
	struct timespec	 if_mtime;
	long long	 if_first;	/* its records: ix_recs[if_first..] */
	long long	 if_count;
	int		 if_stuck;	/* a line over AUDIT_LINE_MAX: read no further */
};

struct audit_index {
	struct ix_file	*ix_files;
	int		 ix_nfiles;
	struct ix_rec	*ix_recs;
	size_t		 ix_n;
	size_t		 ix_cap;
	struct ix_names	 ix_names;
	unsigned char	 ix_key[AUDIT_KEY_MAX];
	size_t		 ix_keylen;
	struct audit_chain ix_chain;
	int		 ix_bad;	/* the chain broke (or a file is unreadable) */
	long long	 ix_bad_n;	/* record number of the first bad line */
	int		 ix_bad_file;
	long long	 ix_bad_line;
	char		 ix_why[256];
	long long	 ix_first_seq;
	char		 ix_first_prev[AUDIT_HASH_HEX + 1];
	json_t		*ix_summary;
	int		 ix_oom;
	int		 ix_built;
	long long	 ix_generation;
	long long	 ix_rereads;
	long long	 ix_pending;
	char		*ix_last;	/* the last file's last indexed line */
	size_t		 ix_lastlen;
	/* The window a free-text scan reads through. */
	char		*ix_win;
	size_t		 ix_wincap;
	uint32_t	 ix_winfile;
	off_t		 ix_winoff;
	size_t		 ix_winlen;
};

/* Names */

static void
names_free(struct ix_names *t)
{
	uint32_t i;

	for (i = 0; i < t->in_n; i++)
		free(t->in_str[i]);
	free(t->in_str);
	free(t->in_slot);
	memset(t, 0, sizeof(*t));
}

static uint32_t
names_hash(const struct ix_names *t, const char *s)
{
	return (uint32_t)siphash24(t->in_key, s, strlen(s)) & (t->in_nslot - 1);
}

static int
names_grow(struct ix_names *t)
{
	uint32_t *slot, nslot = t->in_nslot == 0 ? 256 : t->in_nslot * 2, i, h;

	if (nslot == 0 || (slot = calloc(nslot, sizeof(*slot))) == NULL)
		return -1;
	free(t->in_slot);
	t->in_slot = slot;
	t->in_nslot = nslot;
	for (i = 0; i < t->in_n; i++) {
		for (h = names_hash(t, t->in_str[i]); slot[h] != 0;
		    h = (h + 1) & (nslot - 1))
			;
		slot[h] = i + 1;
	}
	return 0;
}

/* The id of s (0 for NULL), added when new.  Returns 0, or -1 on ENOMEM. */
static int
names_id(struct ix_names *t, const char *s, uint32_t *id)
{
	char **nstr;
	uint32_t h, ncap;

	*id = 0;
	if (s == NULL)
		return 0;
	/* At most half full, so that a probe always ends. */
	if ((t->in_n + 1) * 2 > t->in_nslot && names_grow(t) == -1)
		return -1;
	for (h = names_hash(t, s); t->in_slot[h] != 0; h = (h + 1) &
	    (t->in_nslot - 1))
		if (strcmp(t->in_str[t->in_slot[h] - 1], s) == 0) {
			*id = t->in_slot[h];
			return 0;
		}
	if (t->in_n == t->in_cap) {
		ncap = t->in_cap == 0 ? 64 : t->in_cap * 2;
		if ((nstr = reallocarray(t->in_str, ncap, sizeof(*nstr))) == NULL)
			return -1;
		t->in_str = nstr;
		t->in_cap = ncap;
	}
	if ((t->in_str[t->in_n] = strdup(s)) == NULL)
		return -1;
	t->in_slot[h] = ++t->in_n;
	*id = t->in_n;
	return 0;
}

static const char *
names_str(const struct ix_names *t, uint32_t id)
{
	return id == 0 || id > t->in_n ? NULL : t->in_str[id - 1];
}

/* The index */

struct audit_index *
audit_index_new(char *const *paths, int n, const unsigned char *key,
    size_t keylen)
{
	struct audit_index *ix;
	int i;

	if (n < 1 || keylen > AUDIT_KEY_MAX || (ix = calloc(1, sizeof(*ix))) == NULL)
		return NULL;
	if ((ix->ix_files = calloc((size_t)n, sizeof(*ix->ix_files))) == NULL)
		goto fail;
	ix->ix_nfiles = n;
	for (i = 0; i < n; i++) {
		ix->ix_files[i].if_fd = -1;
		if ((ix->ix_files[i].if_path = strdup(paths[i])) == NULL)
			goto fail;
	}
	if (key != NULL && keylen > 0) {
		memcpy(ix->ix_key, key, keylen);
		ix->ix_keylen = keylen;
	}
	if (RAND_bytes(ix->ix_names.in_key, sizeof(ix->ix_names.in_key)) != 1)
		goto fail;
	return ix;
 fail:
	audit_index_free(ix);
	return NULL;
}

/* Forgets every record; the files are opened again by the next read. */
static void
index_reset(struct audit_index *ix)
{
	uint8_t key[16];
	int i;

	for (i = 0; i < ix->ix_nfiles; i++) {
		struct ix_file *f = &ix->ix_files[i];
		char *path = f->if_path;

		if (f->if_fd != -1)
			close(f->if_fd);
		memset(f, 0, sizeof(*f));
		f->if_path = path;
		f->if_fd = -1;
	}
	free(ix->ix_recs);
	ix->ix_recs = NULL;
	ix->ix_n = ix->ix_cap = 0;
	memcpy(key, ix->ix_names.in_key, sizeof(key));
	names_free(&ix->ix_names);
	memcpy(ix->ix_names.in_key, key, sizeof(key));
	audit_chain_init(&ix->ix_chain, ix->ix_keylen > 0 ? ix->ix_key : NULL,
	    ix->ix_keylen);
	ix->ix_bad = 0;
	ix->ix_bad_n = ix->ix_bad_line = 0;
	ix->ix_bad_file = 0;
	ix->ix_why[0] = '\0';
	ix->ix_first_seq = 0;
	ix->ix_first_prev[0] = '\0';
	json_decref(ix->ix_summary);
	ix->ix_summary = NULL;
	ix->ix_oom = 0;
	ix->ix_pending = 0;
	free(ix->ix_last);
	ix->ix_last = NULL;
	ix->ix_lastlen = 0;
	ix->ix_winlen = 0;
}

void
audit_index_free(struct audit_index *ix)
{
	int i;

	if (ix == NULL)
		return;
	index_reset(ix);
	for (i = 0; i < ix->ix_nfiles; i++)
		free(ix->ix_files[i].if_path);
	free(ix->ix_files);
	free(ix->ix_win);
	OPENSSL_cleanse(ix->ix_key, sizeof(ix->ix_key));
	free(ix);
}

/* The first bad line: the chain stops there; later records are still indexed. */
static void
index_bad(struct audit_index *ix, int file, long long line, long long n,
    const char *why)
{
	if (ix->ix_bad)
		return;
	ix->ix_bad = 1;
	ix->ix_bad_file = file;
	ix->ix_bad_line = line;
	ix->ix_bad_n = n;
	snprintf(ix->ix_why, sizeof(ix->ix_why), "%s", why);
}

/* One line of file fi at off.  Returns 0, or -1 on ENOMEM. */
static int
index_line(struct audit_index *ix, int fi, off_t off, const char *line,
    size_t len, int complete)
{
	struct ix_file *f = &ix->ix_files[fi];
	struct audit_view v;
	struct ix_rec *r, *nrecs;
	char why[256];
	size_t ncap;
	long long n = (long long)ix->ix_n + 1;
	int parsed;

	if (ix->ix_n == ix->ix_cap) {
		ncap = ix->ix_cap == 0 ? 1024 : ix->ix_cap * 2;
		if ((nrecs = reallocarray(ix->ix_recs, ncap, sizeof(*nrecs))) == NULL)
			return -1;
		ix->ix_recs = nrecs;
		ix->ix_cap = ncap;
	}
	if (!ix->ix_bad) {
		if (!complete)
			index_bad(ix, fi, f->if_count + 1, n, "torn last line (no "
			    "newline at the end: an interrupted write or a cut file)");
		else if (audit_chain_add(&ix->ix_chain, line, len, why,
		    sizeof(why)) == -1)
			index_bad(ix, fi, f->if_count + 1, n, why);
		else if (ix->ix_first_seq == 0) {
			ix->ix_first_seq = ix->ix_chain.ac_first_seq;
			memcpy(ix->ix_first_prev, ix->ix_chain.ac_first_prev,
			    sizeof(ix->ix_first_prev));
		}
	}
	r = &ix->ix_recs[ix->ix_n];
	memset(r, 0, sizeof(*r));
	r->ir_off = off;
	r->ir_len = (uint32_t)len;
	r->ir_file = (uint32_t)fi;
	r->ir_ts_ms = -1;
	parsed = audit_view_parse(&v, line, len) == 0;
	if (parsed) {
		r->ir_ts_ms = v.av_ts_ms;
		if (names_id(&ix->ix_names, v.av_sandbox, &r->ir_sandbox) == -1 ||
		    names_id(&ix->ix_names, v.av_event, &r->ir_event) == -1 ||
		    names_id(&ix->ix_names, v.av_decision, &r->ir_decision) == -1 ||
		    names_id(&ix->ix_names, v.av_reason, &r->ir_reason) == -1 ||
		    names_id(&ix->ix_names, v.av_host[0] != '\0' ? v.av_host : NULL,
		    &r->ir_host) == -1) {
			audit_view_clear(&v);
			return -1;
		}
		audit_summary_add(ix->ix_summary, &v, &ix->ix_oom);
		audit_view_clear(&v);
		if (ix->ix_oom)
			return -1;
	}
	ix->ix_n++;
	f->if_count++;
	return 0;
}

/*
 * Reads file fi from f->if_end on.  A last line without '\n' is indexed only in a
 * file that is not the last (there it is torn); in the last one it may be a write
 * in progress, left for the next read.  Returns 0, or -1 on ENOMEM.
 */
static int
index_file(struct audit_index *ix, int fi)
{
	struct ix_file *f = &ix->ix_files[fi];
	struct audit_reader *rd;
	const char *line;
	size_t len;
	off_t off;
	int complete, rc, last = fi == ix->ix_nfiles - 1;

	if (f->if_fd == -1 || f->if_stuck)
		return 0;
	if (lseek(f->if_fd, f->if_end, SEEK_SET) == -1) {
		f->if_error = errno;
		return 0;
	}
	if ((rd = audit_reader_fdopen(f->if_fd)) == NULL)
		return -1;
	off = f->if_end;
	ix->ix_pending = 0;
	while ((rc = audit_reader_next(rd, &line, &len, &complete)) == 1) {
		if (!complete && last) {
			ix->ix_pending = (long long)len;
			break;
		}
		if (index_line(ix, fi, off, line, len, complete) == -1) {
			audit_reader_close(rd);
			return -1;
		}
		off += (off_t)len + (complete ? 1 : 0);
		f->if_end = off;
		if (last && complete) {
			char *copy = malloc(len + 1);

			if (copy == NULL) {
				audit_reader_close(rd);
				return -1;
			}
			memcpy(copy, line, len);
			free(ix->ix_last);
			ix->ix_last = copy;
			ix->ix_lastlen = len;
		}
	}
	if (rc == -1) {
		if (errno == E2BIG) {
			index_bad(ix, fi, f->if_count + 1, (long long)ix->ix_n + 1,
			    "line longer than 1 MiB (the view reads this file no "
			    "further)");
			f->if_stuck = 1;
		} else if (errno == ENOMEM) {
			audit_reader_close(rd);
			return -1;
		} else
			f->if_error = errno;
	}
	audit_reader_close(rd);
	return 0;
}

/* Opens file f (a regular file only) and notes what it is. */
static void
file_open(struct ix_file *f)
{
	struct stat st;

	if ((f->if_fd = open(f->if_path, O_RDONLY | O_CLOEXEC | O_NOCTTY |
	    O_NONBLOCK)) == -1) {
		f->if_error = errno;
		return;
	}
	if (fstat(f->if_fd, &st) == -1)
		f->if_error = errno;
	else if (!S_ISREG(st.st_mode))
		f->if_error = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
	if (f->if_error != 0) {
		close(f->if_fd);
		f->if_fd = -1;
		return;
	}
	f->if_dev = st.st_dev;
	f->if_ino = st.st_ino;
	f->if_seen = st.st_size;
	f->if_mtime = st.st_mtim;
}

/* Everything from the start.  Returns 0, or -1 on ENOMEM. */
static int
index_build(struct audit_index *ix)
{
	int i;

	index_reset(ix);
	if ((ix->ix_summary = audit_summary_new()) == NULL)
		return -1;
	for (i = 0; i < ix->ix_nfiles; i++) {
		struct ix_file *f = &ix->ix_files[i];

		file_open(f);
		f->if_first = (long long)ix->ix_n;
		if (index_file(ix, i) == -1)
			return -1;
	}
	ix->ix_built = 1;
	return 0;
}

/* 1 if the last indexed line of the last file is still on disk as it was. */
static int
last_line_same(struct audit_index *ix)
{
	struct ix_file *f = &ix->ix_files[ix->ix_nfiles - 1];
	char *buf;
	ssize_t got;
	int same;

	if (ix->ix_last == NULL)
		return 1;
	if ((buf = malloc(ix->ix_lastlen + 1)) == NULL)
		return 0;
	got = pread(f->if_fd, buf, ix->ix_lastlen + 1, f->if_end -
	    (off_t)ix->ix_lastlen - 1);
	same = got == (ssize_t)ix->ix_lastlen + 1 &&
	    memcmp(buf, ix->ix_last, ix->ix_lastlen) == 0 &&
	    buf[ix->ix_lastlen] == '\n';
	free(buf);
	return same;
}

/*
 * What the files are now against what was read: 0 nothing changed, 1 the last
 * one grew, 2 read everything again.
 */
static int
index_look(struct audit_index *ix)
{
	struct stat st;
	int i, grew = 0;

	for (i = 0; i < ix->ix_nfiles; i++) {
		struct ix_file *f = &ix->ix_files[i];

		if (stat(f->if_path, &st) == -1) {
			if (f->if_fd != -1 || f->if_error != errno)
				return 2;
			continue;
		}
		if (f->if_fd == -1 || st.st_dev != f->if_dev ||
		    st.st_ino != f->if_ino || st.st_size < f->if_seen)
			return 2;
		if (st.st_size == f->if_seen) {
			if (st.st_mtim.tv_sec != f->if_mtime.tv_sec ||
			    st.st_mtim.tv_nsec != f->if_mtime.tv_nsec)
				return 2;
			continue;
		}
		if (i != ix->ix_nfiles - 1)
			return 2;
		f->if_seen = st.st_size;
		f->if_mtime = st.st_mtim;
		grew = 1;
	}
	return grew;
}

int
audit_index_update(struct audit_index *ix, int *changed, char *err,
    size_t errlen)
{

	long long n0 = (long long)ix->ix_n, pending0 = ix->ix_pending;
	int what, bad0 = ix->ix_bad, rc;

	*changed = 0;
	what = ix->ix_built ? index_look(ix) : 2;
	if (what == 1 && !last_line_same(ix))
		what = 2;
	if (what == 0)
		return 0;
	*changed = 1;
	ix->ix_generation++;
	if (what == 2) {
		if (ix->ix_built)
			ix->ix_rereads++;
		rc = index_build(ix);
	} else
		rc = index_file(ix, ix->ix_nfiles - 1);
	if (rc == -1) {
		index_reset(ix);
		ix->ix_built = 0;
		snprintf(err, errlen, "out of memory indexing the audit files");
		return -1;
	}
	if (what == 1 && (long long)ix->ix_n == n0 && ix->ix_pending == pending0 &&
	    ix->ix_bad == bad0) {
		*changed = 0;
		ix->ix_generation--;
	}
	return 0;
}

void
audit_index_status(const struct audit_index *ix, struct audit_index_status *st)
{
	int i;

	memset(st, 0, sizeof(*st));
	st->ais_records = (long long)ix->ix_n;
	st->ais_generation = ix->ix_generation;
	st->ais_rereads = ix->ix_rereads;
	st->ais_pending = ix->ix_pending;
	st->ais_first_seq = ix->ix_first_seq;
	memcpy(st->ais_first_prev, ix->ix_first_prev, sizeof(st->ais_first_prev));
	for (i = 0; i < ix->ix_nfiles; i++)
		if (ix->ix_files[i].if_error != 0) {
			st->ais_state = AUDIT_INDEX_UNREADABLE;
			st->ais_bad_path = ix->ix_files[i].if_path;
			snprintf(st->ais_why, sizeof(st->ais_why), "%s",
			    strerror(ix->ix_files[i].if_error));
			return;
		}
	if (ix->ix_bad) {
		st->ais_state = AUDIT_INDEX_TAMPERED;
		st->ais_bad_path = ix->ix_files[ix->ix_bad_file].if_path;
		st->ais_bad_line = ix->ix_bad_line;
		st->ais_bad_n = ix->ix_bad_n;
		snprintf(st->ais_why, sizeof(st->ais_why), "%s", ix->ix_why);
	} else if (ix->ix_n == 0)
		st->ais_state = AUDIT_INDEX_EMPTY;
	if (ix->ix_chain.ac_started) {
		st->ais_last_seq = ix->ix_chain.ac_seq;
		memcpy(st->ais_head, ix->ix_chain.ac_head, sizeof(st->ais_head));
	}
}

long long
audit_index_records(const struct audit_index *ix)
{
	return (long long)ix->ix_n;
}

int
audit_index_nfiles(const struct audit_index *ix)
{
	return ix->ix_nfiles;
}

const char *
audit_index_file(const struct audit_index *ix, int i, long long *records,
    int *error)
{
	*records = ix->ix_files[i].if_count;
	*error = ix->ix_files[i].if_error;
	return ix->ix_files[i].if_path;
}

/*
 * The bytes of record r, through the window: a read of at least WINDOW_MIN from
 * the record on when it is not in it.  Returns them, or NULL (errno).
 */
static const char *
index_bytes(struct audit_index *ix, const struct ix_rec *r)
{
	size_t want = r->ir_len > WINDOW_MIN ? r->ir_len : WINDOW_MIN, got = 0;
	char *nwin;
	ssize_t k;
	int fd = ix->ix_files[r->ir_file].if_fd;

	if (ix->ix_winlen > 0 && r->ir_file == ix->ix_winfile &&
	    r->ir_off >= ix->ix_winoff &&
	    r->ir_off + (off_t)r->ir_len <= ix->ix_winoff + (off_t)ix->ix_winlen)
		return ix->ix_win + (r->ir_off - ix->ix_winoff);
	if (want > ix->ix_wincap) {
		if ((nwin = realloc(ix->ix_win, want)) == NULL)
			return NULL;
		ix->ix_win = nwin;
		ix->ix_wincap = want;
	}
	ix->ix_winlen = 0;
	while (got < want) {
		k = pread(fd, ix->ix_win + got, want - got, r->ir_off + (off_t)got);
		if (k == -1) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	if (got < r->ir_len) {
		errno = EIO;		/* the file shrank: the next look rereads it */
		return NULL;
	}
	ix->ix_winfile = r->ir_file;
	ix->ix_winoff = r->ir_off;
	ix->ix_winlen = got;
	return ix->ix_win;
}

int
audit_index_find(struct audit_index *ix, const struct audit_filter *f,
    long long after, long long **out, size_t *n)
{
	struct audit_view v;
	const struct ix_rec *r;
	const char *bytes;
	long long *res = NULL, *nres;
	size_t i, cap = 0;

	*out = NULL;
	*n = 0;
	if (after < 0)
		after = 0;
	memset(&v, 0, sizeof(v));
	for (i = (size_t)after; i < ix->ix_n; i++) {
		r = &ix->ix_recs[i];
		v.av_sandbox = names_str(&ix->ix_names, r->ir_sandbox);
		v.av_event = names_str(&ix->ix_names, r->ir_event);
		v.av_decision = names_str(&ix->ix_names, r->ir_decision);
		v.av_reason = names_str(&ix->ix_names, r->ir_reason);
		v.av_host = r->ir_host != 0 ? names_str(&ix->ix_names, r->ir_host) :
		    "";
		v.av_ts_ms = r->ir_ts_ms;
		if (!audit_filter_match(f, &v))
			continue;
		if (f->af_text != NULL) {
			if ((bytes = index_bytes(ix, r)) == NULL)
				goto fail;
			if (!audit_filter_text(f, bytes, r->ir_len))
				continue;
		}
		if (*n == cap) {
			cap = cap == 0 ? 256 : cap * 2;
			if ((nres = reallocarray(res, cap, sizeof(*res))) == NULL)
				goto fail;
			res = nres;
		}
		res[(*n)++] = (long long)i + 1;
	}
	*out = res;
	return 0;
 fail:
	free(res);
	*n = 0;
	return -1;
}

int
audit_index_get(struct audit_index *ix, long long n, struct audit_index_rec *out)
{
	const struct ix_rec *r;
	const struct ix_file *f;
	const char *bytes;

	memset(out, 0, sizeof(*out));
	if (n < 1 || n > (long long)ix->ix_n) {
		errno = ENOENT;
		return -1;
	}
	r = &ix->ix_recs[n - 1];
	f = &ix->ix_files[r->ir_file];
	if ((bytes = index_bytes(ix, r)) == NULL ||
	    (out->air_text = malloc((size_t)r->ir_len + 1)) == NULL)
		return -1;
	memcpy(out->air_text, bytes, r->ir_len);
	out->air_text[r->ir_len] = '\0';
	out->air_len = r->ir_len;
	out->air_n = n;
	out->air_path = f->if_path;
	out->air_line = n - f->if_first;
	out->air_verified = !ix->ix_bad || n < ix->ix_bad_n;
	return 0;
}

void
audit_index_rec_free(struct audit_index_rec *r)
{
	free(r->air_text);
	memset(r, 0, sizeof(*r));
}

/* Adds to each sandbox of view its exfil records: a count and the last nexfil. */
static int
summary_exfil(struct audit_index *ix, json_t *view, size_t nexfil)
{
	struct audit_index_rec rec;
	json_t *sb, *list, *doc, *item, *v;
	const char *name, *k;
	size_t i, j;
	long long count, n;
	uint32_t ev = 0, id;
	static const char *const keep[] = { "ts", "dst", "reason", "secret",
	    "where", "method", "path" };

	for (i = 0; i < ix->ix_names.in_n; i++)
		if (strcmp(ix->ix_names.in_str[i], "exfil") == 0)
			ev = (uint32_t)i + 1;
	json_array_foreach(json_object_get(view, "sandboxes"), i, sb) {
		name = json_string_value(json_object_get(sb, "sandbox"));
		id = 0;
		for (j = 0; name != NULL && j < ix->ix_names.in_n; j++)
			if (strcmp(ix->ix_names.in_str[j], name) == 0)
				id = (uint32_t)j + 1;
		if ((list = json_array()) == NULL ||
		    json_object_set_new(sb, "exfil_recent", list) == -1)
			return -1;
		count = 0;
		for (n = (long long)ix->ix_n; ev != 0 && id != 0 && n >= 1; n--) {
			const struct ix_rec *r = &ix->ix_recs[n - 1];

			if (r->ir_event != ev || r->ir_sandbox != id)
				continue;
			if ((size_t)count++ >= nexfil)
				continue;
			if (audit_index_get(ix, n, &rec) == -1)
				return -1;
			doc = json_loadb(rec.air_text, rec.air_len, 0, NULL);
			audit_index_rec_free(&rec);
			if ((item = json_pack("{s:I}", "n", (json_int_t)n)) == NULL ||
			    json_array_append_new(list, item) == -1) {
				json_decref(doc);
				return -1;
			}
			for (j = 0; json_is_object(doc) &&
			    j < sizeof(keep) / sizeof(keep[0]); j++) {
				k = keep[j];
				if ((v = json_object_get(doc, k)) != NULL &&
				    json_is_string(v))
					json_object_set(item, k, v);
			}
			json_decref(doc);
		}
		if (json_object_set_new(sb, "exfil", json_integer(count)) == -1)
			return -1;
	}
	return 0;
}

char *
audit_index_summary(struct audit_index *ix, const char *sandbox, size_t top,
    size_t nexfil)
{
	json_t *root = ix->ix_summary, *view;
	char *text = NULL;

	if (root == NULL) {
		if ((root = audit_summary_new()) == NULL)
			return NULL;
		view = audit_summary_view(root, sandbox, top);
		json_decref(root);
	} else
		view = audit_summary_view(root, sandbox, top);
	if (view != NULL && summary_exfil(ix, view, nexfil) == 0)
		text = json_dumps(view, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(view);
	return text;
}
