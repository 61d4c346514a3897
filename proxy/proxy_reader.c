/*
 * proxy/proxy_reader.c: the root state reader, and reading the state and the key
 * material through it.
 *
 * Sandbox records (0600) and policy files stay root-readable only, so before
 * dropping privileges (proxy.c), airlockd forks a small reader that keeps root and
 * does exactly one thing: on a one-byte request it reads every sandbox record and the
 * policy file each record names, with every base that file names (the worker has no
 * file system view to read them from), and sends the bytes back ('R'), or builds the key
 * material for them ('K'; 'A' and a sandbox name for an attach, proxy_keys.h).  It
 * takes no other argument from the unprivileged side, so a compromised worker can
 * learn nothing but what a reload shows anyway.  Parsing happens in the unprivileged
 * process.  Without the reader (not started as root, or -n) the same reading
 * happens in this process.
 *
 * The keys process (proxy_keyd.c) is the reader's child: forked by it first thing,
 * so that the reader sends it the CA keys over a socketpair of their own, and
 * airlockd never holds them.  Its control channel goes to airlockd (socketpairs made
 * here, before the reader's fork; each process closes the ends not its own).
 * The reader is always forked (as root or not), so keyd is always its child; the
 * reader-less branch of proxy_keys_load() only runs where no reader was started
 * (no keyd either: every CA entry then says so, and nothing is signed).
 *
 * The worker opens no file once it is confined (proxy_confine.c), so the reader
 * also opens the audit log for it after a rotation ('L': the configured path, with
 * O_NOFOLLOW, and path.1 when the new file is empty; both passed back with
 * SCM_RIGHTS for audit_reopen_fd()), rotates it when it reached audit.max_bytes
 * ('T': PATH.N shifted up to audit.keep, PATH to PATH.1, a new PATH passed back;
 * refused while PATH is smaller, so a worker cannot shift the history out with
 * requests alone), gives keyd the audit signing key once ('S': audit.sign_key and
 * the chain's head as the log on disk ends, read here, so that keyd's signatures
 * begin where the file does and not where a worker says), and removes the control
 * socket at exit ('U').
 * The reader itself runs under its own filter (PROXY_ROLE_READER, applied once keyd
 * is forked): files, yes; sockets, no other than its own.  It is forked even when
 * airlockd does not start as root (then with the same rights), so that the worker is
 * the same either way.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "audit.h"
#include "log.h"
#include "proxy_confine.h"
#include "proxy_core.h"
#include "proxy_keyd.h"
#include "proxy_keys.h"
#include "proxy_proc.h"

#define PROXY_RECORDS_MAX	4096
#define PROXY_READER_TIMEOUT_MS	10000

/* The daemon's user, who gets the audit log files opened after a rotation. */
static uid_t proxy_reader_uid = (uid_t)-1;
static gid_t proxy_reader_gid = (gid_t)-1;
#define PROXY_KEYS_IMAGE_MAX	(256 * 1024 * 1024)

int proxy_reader_fd = -1;		/* socket to the root reader */
static pid_t proxy_reader_pid = -1;

/*
 * Reading the state: sandbox records and the policy files they name.
 */

struct policy *
proxy_rec_load(const struct proxy_rec *r, struct policy_errors *errs)
{
	const struct policy_bundle *b = &r->pr_bundle;
	const char *files[2];
	char path[PATH_MAX];
	size_t i;

	if (b->pb_n < 2 || sandbox_approvals_path(proxy_cfg.state_dir,
	    r->pr_sb.sb_name, path, sizeof(path)) == -1)
		return policy_load_bundle(b, errs);
	for (i = 1; i < b->pb_n; i++)
		if (strcmp(b->pb_v[i].pt_file, path) == 0)
			break;
	if (i == b->pb_n)
		return policy_load_bundle(b, errs);
	files[0] = b->pb_v[0].pt_file;
	files[1] = b->pb_v[i].pt_file;
	return policy_load_layers(b, files, 2, errs);
}

void
proxy_state_free(struct proxy_state *st)
{
	size_t i;

	for (i = 0; i < st->st_n; i++)
		policy_bundle_free(&st->st_v[i].pr_bundle);
	free(st->st_v);
	st->st_v = NULL;
	st->st_n = 0;
}

/*
 * Reads every record and its policy's files here, with this process's rights.  A
 * bundle left empty (out of memory) is a policy that does not load.
 */
int
proxy_state_read_local(struct proxy_state *st, char *err, size_t errlen)
{
	struct sandbox *sbs = NULL;
	struct stat sb;
	char path[PATH_MAX];
	int n, i, tries, ret = -1;

	memset(st, 0, sizeof(*st));
	if (stat(proxy_cfg.state_dir, &sb) == -1) {
		proxy_fmt(err, errlen, "state directory %s: %s", proxy_cfg.state_dir,
		    strerror(errno));
		goto out;
	}
	if (!S_ISDIR(sb.st_mode)) {
		proxy_fmt(err, errlen, "state directory %s: not a directory",
		    proxy_cfg.state_dir);
		goto out;
	}
	/*
	 * No sandboxes/ folder lists as 0 records.  ENOENT here is a record removed
	 * while we listed (a concurrent destroy): list again, never read it as "none".
	 */
	for (tries = 0; (n = sandbox_list(proxy_cfg.state_dir, &sbs)) == -1 &&
	    errno == ENOENT && tries < 3; tries++)
		;
	if (n == -1) {
		proxy_fmt(err, errlen, "sandbox records in %s: %s",
		    proxy_cfg.state_dir, strerror(errno));
		goto out;
	}
	if (n > PROXY_RECORDS_MAX) {
		proxy_fmt(err, errlen, "more than %d sandbox records", PROXY_RECORDS_MAX);
		goto out;
	}
	if (n > 0 && (st->st_v = calloc((size_t)n, sizeof(*st->st_v))) == NULL) {
		proxy_fmt(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		struct proxy_rec *r = &st->st_v[i];

		r->pr_sb = sbs[i];
		if (policy_bundle_read(&r->pr_bundle, r->pr_sb.sb_policy) == -1)
			policy_bundle_free(&r->pr_bundle);
		/* Its approvals file, when there is one: an extra layer. */
		else if (sandbox_approvals_path(proxy_cfg.state_dir,
		    r->pr_sb.sb_name, path, sizeof(path)) == 0 &&
		    stat(path, &sb) == 0 &&
		    policy_bundle_read(&r->pr_bundle, path) == -1)
			policy_bundle_free(&r->pr_bundle);
		st->st_n++;
	}
	ret = 0;
 out:
	free(sbs);
	if (ret == -1)
		proxy_state_free(st);
	return ret;
}

/*
 * The reader's reply: int32 status, uint32 errlen, err bytes; then (status 0)
 * uint32 n, and per record: struct sandbox, uint32 nfiles, and per file (its
 * bundle's texts): a blob of its path, int32 1 and a blob of its bytes, or int32 0
 * and a blob of its error text.  A blob is a uint32 length and the bytes.  The two
 * ends are the same binary, so struct sandbox travels as it is.
 */
#define PROXY_BUNDLE_TEXTS	(POLICY_FILES_MAX * (POLICY_BASES_MAX + 1))
#define PROXY_TEXT_ERROR_MAX	1024

static int
proxy_blob_write(int fd, const void *p, size_t len)
{
	uint32_t u = (uint32_t)len;

	return proxy_fd_write_full(fd, &u, sizeof(u)) == -1 ||
	    proxy_fd_write_full(fd, p, len) == -1 ? -1 : 0;
}

static int
proxy_bundle_write(int fd, const struct policy_bundle *b)
{
	const struct policy_text *t;
	uint32_t u = (uint32_t)b->pb_n;
	int32_t has;
	size_t i;

	if (proxy_fd_write_full(fd, &u, sizeof(u)) == -1)
		return -1;
	for (i = 0; i < b->pb_n; i++) {
		t = &b->pb_v[i];
		has = t->pt_buf != NULL;
		if (proxy_blob_write(fd, t->pt_file, strlen(t->pt_file)) == -1 ||
		    proxy_fd_write_full(fd, &has, sizeof(has)) == -1 ||
		    (has ? proxy_blob_write(fd, t->pt_buf, t->pt_len) :
		    proxy_blob_write(fd, t->pt_error, strlen(t->pt_error))) == -1)
			return -1;
	}
	return 0;
}

static int
proxy_reader_reply(int fd)
{
	struct proxy_state st;
	char err[512] = "";
	int32_t status;
	uint32_t u;
	size_t i;

	status = proxy_state_read_local(&st, err, sizeof(err)) == -1 ? 1 : 0;
	u = (uint32_t)strlen(err);
	if (proxy_fd_write_full(fd, &status, sizeof(status)) == -1 ||
	    proxy_fd_write_full(fd, &u, sizeof(u)) == -1 ||
	    proxy_fd_write_full(fd, err, u) == -1)
		goto error;
	if (status != 0)
		return 0;
	u = (uint32_t)st.st_n;
	if (proxy_fd_write_full(fd, &u, sizeof(u)) == -1)
		goto error;
	for (i = 0; i < st.st_n; i++)
		if (proxy_fd_write_full(fd, &st.st_v[i].pr_sb,
		    sizeof(st.st_v[i].pr_sb)) == -1 ||
		    proxy_bundle_write(fd, &st.st_v[i].pr_bundle) == -1)
			goto error;
	proxy_state_free(&st);
	return 0;
 error:
	proxy_state_free(&st);
	return -1;
}

/*
 * The key material (proxy_keys.h), built here with this process's rights: the
 * vault's secrets and the CAs, synced to the names the recorded policies inspect.
 * The CAs' keys go to keyd (proxy_keyd_load(); only: an attach, see there), the rest
 * is the image in *img, whose CA entries say whether keyd took them.  The keys are
 * wiped before this returns.  0, or -1 (out of memory).
 */
static int
proxy_keys_make(const char *only, uint8_t **img, size_t *len)
{
	struct proxy_state st;
	struct proxy_keys_src *src = NULL;
	struct proxy_keys_build *kb;
	char err[512], kerr[256];
	size_t i;
	int rv = -1, kd;

	*img = NULL;
	*len = 0;
	if (proxy_state_read_local(&st, err, sizeof(err)) == -1)
		memset(&st, 0, sizeof(st));	/* no records: vault and host CA only */
	if (st.st_n > 0 && (src = calloc(st.st_n, sizeof(*src))) == NULL)
		st.st_n = 0;
	for (i = 0; i < st.st_n; i++) {
		src[i].ks_sandbox = st.st_v[i].pr_sb.sb_name;
		src[i].ks_bundle = &st.st_v[i].pr_bundle;
	}
	if ((kb = proxy_keys_collect(proxy_cfg.state_dir, src, st.st_n)) != NULL) {
		kd = proxy_keyd_load(kb, only, kerr, sizeof(kerr));
		rv = proxy_keys_image(kb, kd == -1 ? kerr : NULL, img, len);
		proxy_keys_build_free(kb);
	}
	free(src);
	proxy_state_free(&st);
	return rv;
}

/* 'K' / 'A': the reply is uint32 len and the image (len 0: out of memory). */
static int
proxy_reader_keys(int fd, const char *only)
{
	uint8_t *img = NULL;
	size_t len = 0;
	uint32_t u;
	int ret;

	if (proxy_keys_make(only, &img, &len) == -1)
		len = 0;
	u = (uint32_t)len;
	ret = proxy_fd_write_full(fd, &u, sizeof(u)) == -1 ||
	    proxy_fd_write_full(fd, img, len) == -1 ? -1 : 0;
	proxy_keys_image_free(img, len);
	return ret;
}

/* 'A' is followed by one length byte and a sandbox name. */
static int
proxy_reader_name(int fd, char *name, size_t namelen)
{
	unsigned char n;

	if (proxy_fd_read_full(fd, &n, 1, proxy_deadline(PROXY_READER_TIMEOUT_MS)) ==
	    -1 || n == 0 || n >= namelen ||
	    proxy_fd_read_full(fd, name, n, proxy_deadline(
	    PROXY_READER_TIMEOUT_MS)) == -1)
		return -1;
	name[n] = '\0';
	return sandbox_name_is_valid(name) ? 0 : -1;
}

/*
 * Descriptors over the reader's socket.  A stream socket: the descriptors travel
 * with the first byte of the message they are sent with, so the receiver takes them
 * from the recvmsg() that reads that byte.
 */
#define PROXY_READER_FDS	PROXY_FDS_MAX

/* Writes len bytes of p with the nfd descriptors fds attached.  0 or -1. */
static int
proxy_send_fds(int fd, const void *p, size_t len, const int *fds, int nfd)
{
	ssize_t n;

	if ((n = proxy_fd_send_fds(fd, p, len, fds, nfd)) == -1)
		return -1;
	return proxy_fd_write_full(fd, (const char *)p + n, len - (size_t)n);
}
/*
 * Reads exactly len bytes within the deadline and up to PROXY_READER_FDS
 * descriptors that came with them into fds (*nfd of them, close-on-exec).  0, or
 * -1 with none left open.
 */
static int
proxy_recv_fds(int fd, void *p, size_t len, int *fds, int *nfd,
    long long deadline)
{
	union {
		struct cmsghdr	 hdr;
		char		 buf[CMSG_SPACE(sizeof(int) * PROXY_READER_FDS)];
	} cm;
	struct cmsghdr *c;
	struct msghdr msg;
	struct iovec iov;
	struct pollfd pfd;
	ssize_t n;
	int k, bad = 0;

	*nfd = 0;
	for (;;) {
		long long left = deadline - proxy_deadline(0);

		pfd.fd = fd;
		pfd.events = POLLIN;
		if (left <= 0 || poll(&pfd, 1, (int)left) == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		memset(&msg, 0, sizeof(msg));
		iov.iov_base = p;
		iov.iov_len = len;
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cm.buf;
		msg.msg_controllen = sizeof(cm.buf);
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		break;
	}
	if (n == 0)
		errno = EPIPE;
	for (c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL; c != NULL;
	    c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (k = 0; (size_t)k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		    k++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
			if (*nfd < PROXY_READER_FDS)
				fds[(*nfd)++] = got;
			else {
				close(got);
				bad = 1;
			}
		}
	}
	if (n > 0 && (msg.msg_flags & MSG_CTRUNC))
		bad = 1;
	if (n > 0 && !bad && proxy_fd_read_full(fd, (char *)p + n, len - (size_t)n,
	    deadline) == 0)
		return 0;
	if (bad)
		errno = EPROTO;
	for (k = 0; k < *nfd; k++)
		close(fds[k]);
	*nfd = 0;
	return -1;
}

/* Regular, one link, ours or the daemon's user's: a file the log may go on in. */
static int
proxy_reader_audit_check(int fd, const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st) == -1) {
		proxy_fmt(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    (st.st_uid != geteuid() && st.st_uid != proxy_reader_uid)) {
		proxy_fmt(err, errlen, "%s: not a regular file with one link owned "
		    "by root or the daemon's user: not continuing the log in it",
		    path);
		return -1;
	}
	return 0;
}

/*
 * 'L': the configured audit log (and, if it is empty, path.1) opened for the
 * worker, given to the daemon's user as at start-up.  The reply: int32 status,
 * int32 number of descriptors (attached), uint32 errlen, err bytes.
 */
static int
proxy_reader_audit(int fd)
{
	char err[512] = "", rotated[PATH_MAX + 2];
	int32_t hdr[3];
	int fds[2] = { -1, -1 }, nfd = 0, status = 0, rv;

	snprintf(rotated, sizeof(rotated), "%s.1", proxy_cfg.audit_path);
	if (audit_path_open(proxy_cfg.audit_path, O_NOFOLLOW, &fds[0], &fds[1], err,
	    sizeof(err)) == -1 ||
	    proxy_reader_audit_check(fds[0], proxy_cfg.audit_path, err,
	    sizeof(err)) == -1 ||
	    (fds[1] != -1 && proxy_reader_audit_check(fds[1], rotated, err,
	    sizeof(err)) == -1))
		status = 1;
	else {
		nfd = fds[1] != -1 ? 2 : 1;
		if (proxy_reader_uid != (uid_t)-1 && fchown(fds[0],
		    proxy_reader_uid, proxy_reader_gid) == -1)
			log_warn("%s: chown (a rotated log could not be continued)",
			    proxy_cfg.audit_path);
	}
	hdr[0] = status;
	hdr[1] = nfd;
	hdr[2] = (int32_t)strlen(err);
	rv = proxy_send_fds(fd, hdr, sizeof(hdr), fds, nfd) == -1 ||
	    proxy_fd_write_full(fd, err, strlen(err)) == -1 ? -1 : 0;
	if (fds[0] != -1)
		close(fds[0]);
	if (fds[1] != -1)
		close(fds[1]);
	return rv;
}

/*
 * 'T': the audit log rotated, once it is at audit.max_bytes: PATH.K-1 .. PATH.1
 * shifted up one (PATH.K, the oldest, replaced), PATH renamed to PATH.1 (the worker
 * goes on writing it through its descriptor until it takes the new one), and a new
 * empty PATH made for the daemon's user and passed back.  The reply is 'L''s.
 */
static int
proxy_reader_rotate(int fd)
{
	char err[512] = "", from[PATH_MAX + 16], to[PATH_MAX + 16];
	const char *path = proxy_cfg.audit_path;
	struct stat st;
	int32_t hdr[3];
	int cur = -1, nfd = -1, status = 1, rv;
	unsigned int k;

	if (proxy_cfg.audit_max_bytes == 0)
		proxy_fmt(err, sizeof(err), "%s: audit.max_bytes is not set: not "
		    "rotating", path);
	else if ((cur = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY)) ==
	    -1 || fstat(cur, &st) == -1)
		proxy_fmt(err, sizeof(err), "%s: %s", path, strerror(errno));
	else if (proxy_reader_audit_check(cur, path, err, sizeof(err)) == -1)
		;
	else if (st.st_size < proxy_cfg.audit_max_bytes)
		proxy_fmt(err, sizeof(err), "%s: %lld bytes, not at audit.max_bytes "
		    "(%lld): not rotating", path, (long long)st.st_size,
		    proxy_cfg.audit_max_bytes);
	else {
		status = 0;
		for (k = proxy_cfg.audit_keep; k >= 1 && status == 0; k--) {
			if (k == 1)
				snprintf(from, sizeof(from), "%s", path);
			else
				snprintf(from, sizeof(from), "%s.%u", path, k - 1);
			snprintf(to, sizeof(to), "%s.%u", path, k);
			if (rename(from, to) == -1 && (errno != ENOENT || k == 1)) {
				proxy_fmt(err, sizeof(err), "rename %s to %s: %s", from,
				    to, strerror(errno));
				status = 1;
			}
		}
		if (status == 0 && (nfd = open(path, O_RDWR | O_APPEND | O_CREAT |
		    O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600)) == -1) {
			proxy_fmt(err, sizeof(err), "%s: %s (the log goes on in "
			    "%s.1)", path, strerror(errno), path);
			status = 1;
		}
		if (status == 0 && proxy_reader_uid != (uid_t)-1 && fchown(nfd,
		    proxy_reader_uid, proxy_reader_gid) == -1)
			log_warn("%s: chown", path);
	}
	if (cur != -1)
		close(cur);
	hdr[0] = status;
	hdr[1] = status == 0 ? 1 : 0;
	hdr[2] = (int32_t)strlen(err);
	rv = proxy_send_fds(fd, hdr, sizeof(hdr), &nfd, hdr[1]) == -1 ||
	    proxy_fd_write_full(fd, err, strlen(err)) == -1 ? -1 : 0;
	if (nfd != -1)
		close(nfd);
	return rv;
}

/*
 * 'S': the audit signing key to keyd, with the chain's head as the log's files
 * end (checked with audit.key_file's key when there is one).  Once: a second
 * would let the worker move keyd's start to a file it cut.  The reply: int32
 * status, uint32 len, then the key id (status 0) or why not.
 */
static int proxy_reader_signed;

static int
proxy_reader_sign(int fd)
{
	unsigned char hkey[AUDIT_KEY_MAX], *der = NULL;
	char err[512] = "", kerr[256], head[AUDIT_HASH_HEX + 1];
	char keyid[AUDIT_KEYID_HEX + 1];
	size_t hkeylen = 0, derlen = 0;
	long long seq;
	int32_t status = 1;
	uint32_t u;

	if (proxy_reader_signed)
		proxy_fmt(err, sizeof(err), "the signing key was given already");
	else if (proxy_cfg.audit_sign_key[0] == '\0')
		proxy_fmt(err, sizeof(err), "audit.sign_key is not set");
	else if (proxy_cfg.audit_key_file[0] != '\0' &&
	    audit_key_load(proxy_cfg.audit_key_file, hkey, &hkeylen, err,
	    sizeof(err)) == -1)
		;
	else if (audit_path_head(proxy_cfg.audit_path, hkeylen > 0 ? hkey : NULL,
	    hkeylen, &seq, head, err, sizeof(err)) == -1)
		;
	else if (audit_sign_key_load(proxy_cfg.audit_sign_key, &der, &derlen,
	    keyid, err, sizeof(err)) == -1)
		;
	else if (proxy_keyd_sign_key(der, derlen, seq, head, kerr,
	    sizeof(kerr)) == -1)
		proxy_fmt(err, sizeof(err), "keys process: %s", kerr);
	else {
		status = 0;
		proxy_fmt(err, sizeof(err), "%s", keyid);
	}
	proxy_reader_signed = 1;
	OPENSSL_cleanse(hkey, sizeof(hkey));
	if (der != NULL)
		OPENSSL_clear_free(der, derlen);
	u = (uint32_t)strlen(err);
	return proxy_fd_write_full(fd, &status, sizeof(status)) == -1 ||
	    proxy_fd_write_full(fd, &u, sizeof(u)) == -1 ||
	    proxy_fd_write_full(fd, err, u) == -1 ? -1 : 0;
}

/* 'U': the control socket, if it still is one (airlockd is on its way out). */
static void
proxy_reader_ctl_gone(void)
{
	struct stat st;

	if (lstat(proxy_cfg.control_socket, &st) == 0 && S_ISSOCK(st.st_mode) &&
	    unlink(proxy_cfg.control_socket) == -1)
		log_warn("%s", proxy_cfg.control_socket);
}

/*
 * keyd ended on its own: so does the reader, which makes the worker exit and the
 * supervisor start them all again (proxy_supervise.c), rather than run on without
 * a signer.  Unless the worker is on its way out: it ends keyd's channel first and
 * then the reader's (after a last 'U', still served), so an end of the reader's
 * channel within a second of keyd's is that.  SIGCHLD is blocked but while the
 * reader waits for its next request (ppoll), so that wait alone sees it.
 */
#define PROXY_READER_KEYD_GRACE	1000	/* ms */
static volatile sig_atomic_t proxy_reader_chld;
static long long proxy_reader_gone_by;	/* ms: when keyd's end ends the reader */

static void
proxy_reader_sigchld(int sig)
{
	(void)sig;
	proxy_reader_chld = 1;
}

/* Until fd has a request (or its end): 0, or -1 with errno. */
static int
proxy_reader_wait(int fd, const sigset_t *waitmask)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	long long gone_by, now;
	struct timespec ts;
	int n;

	for (;;) {
		if (proxy_reader_chld) {
			proxy_reader_chld = 0;
			if (proxy_reader_gone_by == 0 && proxy_keyd_gone())
				proxy_reader_gone_by = proxy_deadline(
				    PROXY_READER_KEYD_GRACE);
		}
		gone_by = proxy_reader_gone_by;
		if (gone_by != 0) {
			now = proxy_deadline(0);
			if (now >= gone_by) {
				log_warnx("the keys process ended: restarting");
				_exit(3);
			}
			ts.tv_sec = (gone_by - now) / 1000;
			ts.tv_nsec = (long)((gone_by - now) % 1000) * 1000000;
		}
		n = ppoll(&pfd, 1, gone_by != 0 ? &ts : NULL, waitmask);
		if (n > 0)
			return 0;
		if (n == -1 && errno != EINTR)
			return -1;
	}
}

static void __attribute__((noreturn))
proxy_reader_main(int fd)
{
	char c, name[SANDBOX_NAME_MAX + 1];
	sigset_t chld, waitmask;
	ssize_t n;

	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	(void)sigprocmask(SIG_BLOCK, &chld, &waitmask);
	sigdelset(&waitmask, SIGCHLD);
	for (;;) {
		if (proxy_reader_wait(fd, &waitmask) == -1)
			break;
		n = read(fd, &c, 1);
		if (n == 0) {
			/* airlockd is gone; keyd follows (its channels close). */
			proxy_keyd_unlink();
			_exit(0);
		}
		if (n == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (c == 'K' || c == 'A') {
			if ((c == 'A' && proxy_reader_name(fd, name,
			    sizeof(name)) == -1) ||
			    proxy_reader_keys(fd, c == 'A' ? name : NULL) == -1)
				break;
			continue;
		}
		if (c == 'L' || c == 'T') {
			if ((c == 'L' ? proxy_reader_audit(fd) :
			    proxy_reader_rotate(fd)) == -1)
				break;
			continue;
		}
		if (c == 'S') {
			if (proxy_reader_sign(fd) == -1)
				break;
			continue;
		}
		if (c == 'U') {
			proxy_reader_ctl_gone();
			continue;
		}
		if (c != 'R') {
			log_warnx("unexpected request from airlockd");
			break;
		}
		if (proxy_reader_reply(fd) == -1)
			break;
	}
	proxy_keyd_unlink();
	_exit(1);
}

/*
 * Forks the root reader, which forks keyd (see the top of this file): the reader
 * gets sv[1] and kd[0], keyd kd[1] and ctl[1], airlockd sv[0] and ctl[0].  0, or -1
 * with err.
 */
int
proxy_reader_start(const struct passwd *pw, char *err, size_t errlen)
{
	int sv[2] = { -1, -1 }, ctl[2] = { -1, -1 }, kd[2] = { -1, -1 };
	char kerr[256], cerr[512];
	pid_t pid, kpid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) == -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, kd) == -1) {
		proxy_fmt(err, errlen, "socketpair: %s", strerror(errno));
		goto fail;
	}
	fflush(NULL);
	if ((pid = fork()) == -1) {
		proxy_fmt(err, errlen, "fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		close(sv[0]);
		close(ctl[0]);
		if (prctl(PR_SET_DUMPABLE, 0) == -1)
			_exit(1);
		/* Without keyd every load says so, and nothing is signed. */
		if ((kpid = proxy_keyd_start(pw, kd[1], ctl[1], kerr,
		    sizeof(kerr))) == -1)
			log_warnx("%s", kerr);
		close(kd[1]);
		close(ctl[1]);
		if (kpid != -1)
			proxy_keyd_link(kd[0], kpid);
		else
			close(kd[0]);
		if (pw != NULL) {
			proxy_reader_uid = pw->pw_uid;
			proxy_reader_gid = pw->pw_gid;
		}
		log_procinit("reader");
		{
			struct sigaction sa;

			/* no SA_RESTART: the wait for the next request is woken */
			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = proxy_reader_sigchld;
			sigemptyset(&sa.sa_mask);
			(void)sigaction(SIGCHLD, &sa, NULL);
		}
		/* keyd forked (the filter allows no fork): nothing after is unconfined. */
		if (proxy_confine(PROXY_ROLE_READER, cerr, sizeof(cerr)) == -1) {
			log_warnx("%s", cerr);
			proxy_keyd_unlink();
			_exit(1);
		}
		proxy_reader_main(sv[1]);
	}
	close(sv[1]);
	close(ctl[1]);
	close(kd[0]);
	close(kd[1]);
	proxy_reader_fd = sv[0];
	proxy_reader_pid = pid;
	proxy_keyd_client_init(ctl[0]);
	return 0;
 fail:
	for (pid = 0; pid < 2; pid++) {
		if (sv[pid] != -1)
			close(sv[pid]);
		if (ctl[pid] != -1)
			close(ctl[pid]);
		if (kd[pid] != -1)
			close(kd[pid]);
	}
	return -1;
}

void
proxy_reader_stop(void)
{
	proxy_child_stop(&proxy_reader_fd, &proxy_reader_pid);
}

int
proxy_reader_gone(void)
{
	return proxy_child_reap(&proxy_reader_pid);
}

/*
 * One blob of at most max bytes into *p (malloc'd, NUL-terminated; *len bytes).
 * 0; -1 (errno), -2 longer than max, -3 out of memory.
 */
static int
proxy_blob_read(int fd, char **p, size_t *len, size_t max, long long deadline)
{
	uint32_t u;

	*p = NULL;
	if (proxy_fd_read_full(fd, &u, sizeof(u), deadline) == -1)
		return -1;
	if (u > max)
		return -2;
	if ((*p = malloc((size_t)u + 1)) == NULL)
		return -3;
	if (proxy_fd_read_full(fd, *p, u, deadline) == -1) {
		free(*p);
		*p = NULL;
		return -1;
	}
	(*p)[u] = '\0';
	*len = u;
	return 0;
}

/* A record's bundle as proxy_bundle_write() sent it, into b.  As proxy_blob_read(). */
static int
proxy_bundle_read(int fd, struct policy_bundle *b, long long deadline)
{
	char *file = NULL, *data = NULL;
	size_t flen, dlen;
	uint32_t n, i;
	int32_t has;
	int rv;

	if (proxy_fd_read_full(fd, &n, sizeof(n), deadline) == -1)
		return -1;
	if (n > PROXY_BUNDLE_TEXTS)
		return -2;
	for (i = 0; i < n; i++) {
		if ((rv = proxy_blob_read(fd, &file, &flen, PATH_MAX, deadline)) != 0)
			return rv;
		if (proxy_fd_read_full(fd, &has, sizeof(has), deadline) == -1) {
			free(file);
			return -1;
		}
		if ((rv = proxy_blob_read(fd, &data, &dlen, has ? POLICY_FILE_MAX :
		    PROXY_TEXT_ERROR_MAX, deadline)) == 0 && (strlen(file) != flen ||
		    (!has && strlen(data) != dlen)))
			rv = -2;	/* a NUL inside: not what the reader sends */
		if (rv == 0 && policy_bundle_add(b, file, has ? data : NULL, dlen,
		    has ? NULL : data) == -1)
			rv = -3;
		free(file);
		free(data);
		if (rv != 0)
			return rv;
	}
	return 0;
}

/* Every record and its policy: through the root reader if there is one. */
int
proxy_state_read(struct proxy_state *st, char *err, size_t errlen)
{
	long long deadline;
	int32_t status;
	uint32_t u, n, i;
	char c = 'R';
	int rv;

	if (proxy_reader_fd == -1)
		return proxy_state_read_local(st, err, errlen);
	memset(st, 0, sizeof(*st));
	if (proxy_reader_fd < 0) {
		proxy_fmt(err, errlen, "state reader: gone after an earlier error "
		    "(restart airlockd)");
		return -1;
	}
	deadline = proxy_deadline(PROXY_READER_TIMEOUT_MS);
	if (proxy_fd_write_full(proxy_reader_fd, &c, 1) == -1 ||
	    proxy_fd_read_full(proxy_reader_fd, &status, sizeof(status),
	    deadline) == -1 ||
	    proxy_fd_read_full(proxy_reader_fd, &u, sizeof(u), deadline) == -1)
		goto ioerr;
	if (u >= errlen || u > 4096)
		goto proto;
	if (proxy_fd_read_full(proxy_reader_fd, err, u, deadline) == -1)
		goto ioerr;
	err[u] = '\0';
	if (status != 0)
		goto error;
	if (proxy_fd_read_full(proxy_reader_fd, &n, sizeof(n), deadline) == -1)
		goto ioerr;
	if (n > PROXY_RECORDS_MAX)
		goto proto;
	if (n > 0 && (st->st_v = calloc(n, sizeof(*st->st_v))) == NULL) {
		proxy_fmt(err, errlen, "out of memory");
		goto error;
	}
	for (i = 0; i < n; i++) {
		struct proxy_rec *r = &st->st_v[i];

		if (proxy_fd_read_full(proxy_reader_fd, &r->pr_sb, sizeof(r->pr_sb),
		    deadline) == -1)
			goto ioerr;
		st->st_n++;
		rv = proxy_bundle_read(proxy_reader_fd, &r->pr_bundle, deadline);
		if (rv == -1)
			goto ioerr;
		if (rv == -2)
			goto proto;
		if (rv == -3) {
			/* The rest of the reply is still in the pipe. */
			proxy_fmt(err, errlen, "state reader: out of memory");
			goto broken;
		}
		/* The strings must end inside their arrays. */
		r->pr_sb.sb_name[sizeof(r->pr_sb.sb_name) - 1] = '\0';
		r->pr_sb.sb_iface[sizeof(r->pr_sb.sb_iface) - 1] = '\0';
		r->pr_sb.sb_mac[sizeof(r->pr_sb.sb_mac) - 1] = '\0';
		r->pr_sb.sb_policy[sizeof(r->pr_sb.sb_policy) - 1] = '\0';
		r->pr_sb.sb_policy_hash[sizeof(r->pr_sb.sb_policy_hash) - 1] = '\0';
	}
	return 0;
 proto:
	proxy_fmt(err, errlen, "state reader: protocol error");
	goto broken;
 ioerr:
	proxy_fmt(err, errlen, "state reader: %s", strerror(errno));
 broken:
	/* The stream is out of step now: no further reload can trust it. */
	close(proxy_reader_fd);
	proxy_reader_fd = -2;
 error:
	proxy_state_free(st);
	return -1;
}

/*
 * The key material: through the root reader if there is one, else read here, into
 * *out (one reference; not installed: the caller gives it to the policies that go
 * in with it, then makes it current).  A vault that exists but cannot be used
 * (tampered, wrong key, loose permissions) is an error: at start airlockd exits, on
 * a reload the previous key material stays.  No vault is not an error: nothing can
 * be injected, and a policy that injects does not load.  only: an attach of that
 * sandbox (keyd keeps every other sandbox's CA as it is, proxy_keyd_load()).
 */
int
proxy_keys_load(struct proxy_keys **out, const char *only, char *err,
    size_t errlen)
{
	struct proxy_keys *k = NULL;
	long long deadline;
	uint8_t *img = NULL, req[2 + SANDBOX_NAME_MAX];
	size_t len = 0, i, reqlen = 1;
	uint32_t u;

	*out = NULL;
	if (proxy_reader_fd == -1) {
		if (proxy_keys_make(only, &img, &len) == -1)
			len = 0;
	} else {
		if (proxy_reader_fd < 0) {
			proxy_fmt(err, errlen, "state reader: gone after an earlier "
			    "error (restart airlockd)");
			return -1;
		}
		/* A name the reader would refuse (it ends on one) asks for all. */
		req[0] = 'K';
		if (only != NULL && sandbox_name_is_valid(only)) {
			len = strlen(only);
			req[0] = 'A';
			req[1] = (uint8_t)len;
			memcpy(req + 2, only, len);
			reqlen = 2 + len;
		}
		len = 0;
		deadline = proxy_deadline(PROXY_READER_TIMEOUT_MS);
		if (proxy_fd_write_full(proxy_reader_fd, req, reqlen) == -1 ||
		    proxy_fd_read_full(proxy_reader_fd, &u, sizeof(u), deadline) == -1) {
			proxy_fmt(err, errlen, "state reader: %s", strerror(errno));
			goto broken;
		}
		if (u > PROXY_KEYS_IMAGE_MAX) {
			proxy_fmt(err, errlen, "state reader: protocol error");
			goto broken;
		}
		len = u;
		if (len > 0 && (img = malloc(len)) == NULL) {
			proxy_fmt(err, errlen, "out of memory");
			goto broken;	/* the image is still in the pipe */
		}
		if (len > 0 && proxy_fd_read_full(proxy_reader_fd, img, len,
		    deadline) == -1) {
			proxy_fmt(err, errlen, "state reader: %s", strerror(errno));
			goto broken;
		}
	}
	if (len == 0) {
		proxy_fmt(err, errlen, "key material: out of memory");
		return -1;
	}
	k = proxy_keys_parse(img, len, err, errlen);
	proxy_keys_image_free(img, len);
	if (k == NULL)
		return -1;
	if (k->pk_vault == -1) {
		proxy_fmt(err, errlen, "vault: %s", k->pk_vault_error);
		proxy_keys_put(k);
		return -1;
	}
	for (i = 0; i < k->pk_ncas; i++)
		if (k->pk_cas[i].pc_ca == NULL)
			log_warnx("sandbox %s: no interception CA (%s): its inspect "
			    "rules refuse connections", k->pk_cas[i].pc_sandbox,
			    k->pk_cas[i].pc_error);
	*out = k;
	return 0;
 broken:
	proxy_keys_image_free(img, len);
	close(proxy_reader_fd);
	proxy_reader_fd = -2;
	return -1;
}

/* The stream is out of step now: no further request can trust it. */
static void
proxy_reader_broken(void)
{
	close(proxy_reader_fd);
	proxy_reader_fd = -2;
}

/*
 * Sends request c to the reader; *deadline is when its whole reply must be in.
 * 0, or -1 with err (a reader gone after an earlier error, or gone now).
 */
static int
proxy_reader_ask(char c, long long *deadline, char *err, size_t errlen)
{
	if (proxy_reader_fd < 0) {
		proxy_fmt(err, errlen, "state reader: gone after an earlier error "
		    "(restart airlockd)");
		return -1;
	}
	*deadline = proxy_deadline(PROXY_READER_TIMEOUT_MS);
	if (proxy_fd_write_full(proxy_reader_fd, &c, 1) == -1) {
		proxy_fmt(err, errlen, "state reader: %s", strerror(errno));
		proxy_reader_broken();
		return -1;
	}
	return 0;
}

/*
 * After a rotation: the audit log at its configured path, opened by the root reader
 * (the worker opens no file), continues the chain (audit_reopen_fd()).  Without a
 * reader, audit_reopen() here.  0, or -1 with err (the old file stays in use).
 */
/*
 * The reader's answer to 'L' or 'T' (c): the descriptors it opened, at most max
 * (*nfd of them in fds).  0, or -1 with err (the reader refused: its reason; or it
 * broke).
 */
static int
proxy_reader_audit_fds(char c, int *fds, int max, int *nfd, char *err,
    size_t errlen)
{
	long long deadline;
	int32_t hdr[3];
	int k;

	if (proxy_reader_ask(c, &deadline, err, errlen) == -1)
		return -1;
	if (proxy_recv_fds(proxy_reader_fd, hdr, sizeof(hdr), fds, nfd,
	    deadline) == -1) {
		proxy_fmt(err, errlen, "state reader: %s", strerror(errno));
		goto broken;
	}
	if (hdr[2] < 0 || (size_t)hdr[2] >= errlen || hdr[1] != *nfd ||
	    *nfd > max || (hdr[0] == 0 && *nfd == 0) ||
	    (hdr[0] != 0 && *nfd != 0)) {
		proxy_fmt(err, errlen, "state reader: protocol error");
		goto close_broken;
	}
	if (proxy_fd_read_full(proxy_reader_fd, err, (size_t)hdr[2], deadline) == -1) {
		proxy_fmt(err, errlen, "state reader: %s", strerror(errno));
		goto close_broken;
	}
	err[hdr[2]] = '\0';
	return hdr[0] == 0 ? 0 : -1;
 close_broken:
	for (k = 0; k < *nfd; k++)
		close(fds[k]);
 broken:
	*nfd = 0;
	proxy_reader_broken();
	return -1;
}

int
proxy_audit_reopen(struct audit_log *log, char *err, size_t errlen)
{
	int fds[PROXY_READER_FDS], nfd;

	if (proxy_reader_fd == -1)
		return audit_reopen(log, err, errlen);
	if (proxy_reader_audit_fds('L', fds, 2, &nfd, err, errlen) == -1)
		return -1;
	return audit_reopen_fd(log, fds[0], nfd > 1 ? fds[1] : -1, err, errlen);
}

int
proxy_audit_rotate(struct audit_log *log, char *err, size_t errlen)
{
	int fds[PROXY_READER_FDS], nfd;

	if (proxy_reader_fd == -1) {
		proxy_fmt(err, errlen, "no state reader to rotate the log");
		return -1;
	}
	if (proxy_reader_audit_fds('T', fds, 1, &nfd, err, errlen) == -1)
		return -1;
	return audit_rotate_fd(log, fds[0], err, errlen);
}

int
proxy_audit_sign_load(char *keyid, size_t keyidlen, char *err, size_t errlen)
{
	long long deadline;
	int32_t status;
	uint32_t u;
	char buf[512];

	if (proxy_reader_fd == -1) {
		proxy_fmt(err, errlen, "no state reader to read audit.sign_key");
		return -1;
	}
	if (proxy_reader_ask('S', &deadline, err, errlen) == -1)
		return -1;
	if (proxy_fd_read_full(proxy_reader_fd, &status, sizeof(status),
	    deadline) == -1 ||
	    proxy_fd_read_full(proxy_reader_fd, &u, sizeof(u), deadline) == -1 ||
	    u >= sizeof(buf) ||
	    proxy_fd_read_full(proxy_reader_fd, buf, u, deadline) == -1) {
		proxy_fmt(err, errlen, "state reader: %s", u >= sizeof(buf) ?
		    "protocol error" : strerror(errno));
		proxy_reader_broken();
		return -1;
	}
	buf[u] = '\0';
	if (status != 0) {
		proxy_fmt(err, errlen, "%s", buf);
		return -1;
	}
	proxy_fmt(keyid, keyidlen, "%s", buf);
	return 0;
}

/* At exit: the reader removes the control socket (its directory is root's). */
void
proxy_reader_ctl_unlink(void)
{
	char c = 'U';

	if (proxy_reader_fd >= 0)
		(void)proxy_fd_write_full(proxy_reader_fd, &c, 1);
}
