/*
 * proxy/proxy_keyd_client.c: the ends that talk to the keys process (proxy_keyd.h).
 *
 * The loading end is the root reader (proxy_reader.c), or airlockd itself when it
 * has none: it sends keyd the set of CAs and waits for the answer.  It remembers
 * which entry (sandbox, policy hash) keyd holds for each sandbox, because a policy
 * the unprivileged side refuses leaves the sandbox's previous policy in force, and
 * that one must still get leaves: its entry is sent again as LOAD_KEEP, which keyd
 * honours from its own copy (the key is not sent twice, nor kept here).
 *
 * airlockd's end: the control channel (one, under a lock) and a channel per worker
 * thread, opened at the thread's start; a MINT is a synchronous request and reply on
 * it with a deadline, made on a leaf cache miss only.  A stream that may be out of
 * step (a timeout, a malformed reply, EOF) is never read again: the thread closes its
 * channel and opens a new one for its next request, and the loading end reports keyd
 * gone.  Everything that went wrong fails closed: no leaf, no inspected connection.
 */
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "ca.h"
#include "proxy.h"
#include "proxy_keyd.h"
#include "proxy_keymsg.h"
#include "proxy_keys.h"

#define KEYD_LOAD_TIMEOUT_MS	10000
#define KEYD_MINT_TIMEOUT_MS	2000

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
proxy_fd_send_fd(int sock, const void *p, size_t len, int fd)
{
	union {
		struct cmsghdr	h;
		char		b[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = { (void *)(uintptr_t)p, len };
	struct cmsghdr *h;
	struct msghdr msg;
	ssize_t n;

	memset(&msg, 0, sizeof(msg));
	memset(&cm, 0, sizeof(cm));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (fd >= 0) {
		msg.msg_control = cm.b;
		msg.msg_controllen = sizeof(cm.b);
		h = CMSG_FIRSTHDR(&msg);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &fd, sizeof(int));
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

/* An I/O error on a channel, said plainly. */
static const char *
keyd_io_str(int e)
{
	if (e == ETIMEDOUT)
		return "no answer in time";
	if (e == EPIPE || e == ECONNRESET)
		return "it is gone";
	return strerror(e);
}

/*
 * keyd's reply to request id on fd, by the deadline: *m points into *buf (free()
 * it).  0, or -1 with err: an I/O error or timeout, or a malformed reply (the
 * stream is then out of step: the caller closes it).
 */
static int
keyd_reply(int fd, uint32_t id, long long deadline, uint8_t **buf,
    struct keymsg *m, char *err, size_t errlen)
{
	uint8_t hdr[KEYMSG_HDR_LEN];
	const char *why;
	uint32_t rid, len;
	uint16_t type;

	*buf = NULL;
	if (proxy_fd_read_full(fd, hdr, sizeof(hdr), deadline) == -1)
		goto ioerr;
	if (keymsg_header(hdr, &type, &rid, &len, &why) == -1)
		goto proto;
	if (type != KEYMSG_OK && type != KEYMSG_CERT && type != KEYMSG_ERR) {
		why = "not a reply";
		goto proto;
	}
	if (rid != id) {
		why = "a reply to another request";
		goto proto;
	}
	if ((*buf = malloc(sizeof(hdr) + len)) == NULL) {
		proxy_fmt(err, errlen, "out of memory");
		return -1;
	}
	memcpy(*buf, hdr, sizeof(hdr));
	if (proxy_fd_read_full(fd, *buf + sizeof(hdr), len, deadline) == -1)
		goto ioerr;
	if (keymsg_decode(*buf, sizeof(hdr) + len, m, &why) == -1)
		goto proto;
	return 0;
 ioerr:
	proxy_fmt(err, errlen, "%s", keyd_io_str(errno));
	goto fail;
 proto:
	proxy_fmt(err, errlen, "protocol error (%s)", why);
 fail:
	free(*buf);
	*buf = NULL;
	return -1;
}

/*
 * Sends what b holds from sent on and waits up to ms for the reply to id (as
 * keyd_reply()).  -1 with err when the stream is no longer usable.
 */
static int
keyd_exchange(int fd, const struct keymsg_buf *b, size_t sent, uint32_t id,
    int ms, uint8_t **rbuf, struct keymsg *m, char *err, size_t errlen)
{
	*rbuf = NULL;
	if (sent < b->kb_len && proxy_fd_write_full(fd, b->kb_p + sent,
	    b->kb_len - sent) == -1) {
		proxy_fmt(err, errlen, "%s", keyd_io_str(errno));
		return -1;
	}
	return keyd_reply(fd, id, proxy_deadline(ms), rbuf, m, err, errlen);
}

/* An ERR reply as text: its code and keyd's short message. */
static void
keyd_err_text(const struct keymsg *m, char *err, size_t errlen)
{
	proxy_fmt(err, errlen, "%s: %.*s", keymsg_err_name(m->km_code),
	    (int)m->km_message.len, (const char *)m->km_message.v);
}

/*
 * The loading end.
 */

struct keyd_held {
	char		 kh_sandbox[KEYMSG_SANDBOX_MAX + 1];
	char		 kh_hash[KEYMSG_HASH_LEN + 1];
};

static int keyd_link_fd = -1;		/* -2 once broken */
static pid_t keyd_link_pid = -1;
static uint32_t keyd_link_id;
static struct keyd_held *keyd_held;	/* what keyd holds, as of its last OK */
static size_t keyd_nheld;

void
proxy_keyd_link(int fd, pid_t pid)
{
	keyd_link_fd = fd;
	keyd_link_pid = pid;
}

void
proxy_keyd_unlink(void)
{
	proxy_child_stop(&keyd_link_fd, &keyd_link_pid);
}

static const struct keyd_held *
keyd_held_find(const char *sandbox)
{
	size_t i;

	for (i = 0; i < keyd_nheld; i++)
		if (strcmp(keyd_held[i].kh_sandbox, sandbox) == 0)
			return &keyd_held[i];
	return NULL;
}

/* Appends the set for kb to b; *nh gets the entries it names (as keyd will). */
static void
keyd_load_msgs(struct keymsg_buf *b, uint32_t id,
    const struct proxy_keys_build *kb, const char *only, struct keyd_held *nh,
    size_t *nn)
{
	const struct proxy_kb_ca *c;
	const struct keyd_held *h;
	size_t i, j, n = proxy_keys_build_count(kb);
	int changing;

	*nn = 0;
	keymsg_start(b, KEYMSG_LOAD_BEGIN, id);
	(void)keymsg_finish(b);
	for (i = 0; i < n; i++) {
		c = proxy_keys_build_ca(kb, i);
		changing = only == NULL || strcmp(only, c->kc_sandbox) == 0;
		if (changing && c->kc_state == PK_FRESH) {
			keymsg_start(b, KEYMSG_LOAD_CA, id);
			keymsg_field_str(b, KEYTAG_SANDBOX, c->kc_sandbox);
			keymsg_field_str(b, KEYTAG_HASH, c->kc_hash);
			keymsg_field(b, KEYTAG_CERT, c->kc_cert, c->kc_certlen);
			keymsg_field(b, KEYTAG_KEY, c->kc_key, c->kc_keylen);
			for (j = 0; j < c->kc_nnames; j++)
				keymsg_field_str(b, KEYTAG_NAME, c->kc_names[j]);
			(void)keymsg_finish(b);
			proxy_fmt(nh[*nn].kh_sandbox, sizeof(nh[*nn].kh_sandbox),
			    "%s", c->kc_sandbox);
			proxy_fmt(nh[*nn].kh_hash, sizeof(nh[*nn].kh_hash), "%s",
			    c->kc_hash);
			(*nn)++;
			continue;
		}
		/* A new policy that inspects nothing goes in and needs no CA. */
		if ((changing && c->kc_state == PK_NONE) ||
		    (h = keyd_held_find(c->kc_sandbox)) == NULL)
			continue;
		/* The unprivileged side keeps this sandbox's policy: so does keyd. */
		keymsg_start(b, KEYMSG_LOAD_KEEP, id);
		keymsg_field_str(b, KEYTAG_SANDBOX, h->kh_sandbox);
		keymsg_field_str(b, KEYTAG_HASH, h->kh_hash);
		(void)keymsg_finish(b);
		nh[(*nn)++] = *h;
	}
	keymsg_start(b, KEYMSG_LOAD_END, id);
	keymsg_field_u32(b, KEYTAG_COUNT, (uint32_t)*nn);
	(void)keymsg_finish(b);
}

int
proxy_keyd_load(const struct proxy_keys_build *kb, const char *only, char *err,
    size_t errlen)
{
	struct keymsg_buf b = { 0 };
	struct keyd_held *nh = NULL;
	struct keymsg m;
	uint8_t *rbuf = NULL;
	size_t n = proxy_keys_build_count(kb), nn;
	uint32_t id;
	int rv = -1;

	if (keyd_link_fd < 0) {
		proxy_fmt(err, errlen, "%s", keyd_link_fd == -1 ? "not running" :
		    "gone after an earlier error (restart airlockd)");
		return -1;
	}
	if ((nh = calloc(n + 1, sizeof(*nh))) == NULL) {
		proxy_fmt(err, errlen, "out of memory");
		return -1;
	}
	id = ++keyd_link_id;
	keyd_load_msgs(&b, id, kb, only, nh, &nn);
	if (b.kb_failed) {
		proxy_fmt(err, errlen, "out of memory, or a CA too large to send");
		goto out;
	}
	if (keyd_exchange(keyd_link_fd, &b, 0, id, KEYD_LOAD_TIMEOUT_MS, &rbuf,
	    &m, err, errlen) == -1)
		goto broken;
	if (m.km_type != KEYMSG_OK) {
		/* keyd keeps its previous set; so does our record of it. */
		keyd_err_text(&m, err, errlen);
		goto out;
	}
	free(keyd_held);
	keyd_held = nh;
	keyd_nheld = nn;
	nh = NULL;
	rv = 0;
	goto out;
 broken:
	/* The stream is out of step, or keyd is gone: nothing more goes to it. */
	close(keyd_link_fd);
	keyd_link_fd = -2;
	if (keyd_link_pid != -1 && waitpid(keyd_link_pid, NULL, WNOHANG) ==
	    keyd_link_pid)
		keyd_link_pid = -1;
 out:
	keymsg_buf_free(&b);	/* wipes the keys */
	free(rbuf);
	free(nh);
	return rv;
}

/*
 * airlockd's end.
 */

static int keyd_ctl_fd = -1;		/* -2 once broken */
static uint32_t keyd_ctl_id;
static pthread_mutex_t keyd_ctl_mtx = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int keyd_chan_fd = -1;
static _Thread_local uint32_t keyd_chan_id;
static _Thread_local char keyd_chan_label[KEYMSG_LABEL_MAX + 1];

void
proxy_keyd_client_init(int ctl_fd)
{
	keyd_ctl_fd = ctl_fd;
}

void
proxy_keyd_client_stop(void)
{
	pthread_mutex_lock(&keyd_ctl_mtx);
	if (keyd_ctl_fd >= 0)
		close(keyd_ctl_fd);
	keyd_ctl_fd = -1;
	pthread_mutex_unlock(&keyd_ctl_mtx);
}

void
proxy_keyd_chan_close(void)
{
	if (keyd_chan_fd >= 0)
		close(keyd_chan_fd);
	keyd_chan_fd = -1;
}

/* ADD_CHANNEL with fd on the control channel, and keyd's answer.  Lock held. */
static int
keyd_ctl_add(int fd, const char *label, char *err, size_t errlen)
{
	struct keymsg_buf b = { 0 };
	struct keymsg m;
	uint8_t *rbuf = NULL;
	ssize_t n;
	uint32_t id = ++keyd_ctl_id;
	int rv = -1;

	if (keyd_ctl_fd < 0) {
		proxy_fmt(err, errlen, "%s", keyd_ctl_fd == -1 ? "not running" :
		    "gone after an earlier error");
		return -1;
	}
	keymsg_start(&b, KEYMSG_ADD_CHANNEL, id);
	keymsg_field_str(&b, KEYTAG_LABEL, label);
	if (keymsg_finish(&b) == -1) {
		proxy_fmt(err, errlen, "out of memory");
		goto out;
	}
	if ((n = proxy_fd_send_fd(keyd_ctl_fd, b.kb_p, b.kb_len, fd)) == -1) {
		proxy_fmt(err, errlen, "%s", keyd_io_str(errno));
		goto broken;
	}
	/* The rest, if any, and the answer. */
	if (keyd_exchange(keyd_ctl_fd, &b, (size_t)n, id, KEYD_MINT_TIMEOUT_MS,
	    &rbuf, &m, err, errlen) == -1)
		goto broken;
	if (m.km_type != KEYMSG_OK) {
		keyd_err_text(&m, err, errlen);
		goto out;
	}
	rv = 0;
	goto out;
 broken:
	close(keyd_ctl_fd);
	keyd_ctl_fd = -2;
 out:
	keymsg_buf_free(&b);
	free(rbuf);
	return rv;
}

int
proxy_keyd_chan_open(const char *label, char *err, size_t errlen)
{
	int sv[2], rv;

	if (label != NULL)
		proxy_fmt(keyd_chan_label, sizeof(keyd_chan_label), "%s", label);
	else if (keyd_chan_label[0] == '\0')
		proxy_fmt(keyd_chan_label, sizeof(keyd_chan_label), "worker");
	proxy_keyd_chan_close();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1) {
		proxy_fmt(err, errlen, "socketpair: %s", strerror(errno));
		return -1;
	}
	pthread_mutex_lock(&keyd_ctl_mtx);
	rv = keyd_ctl_add(sv[1], keyd_chan_label, err, errlen);
	pthread_mutex_unlock(&keyd_ctl_mtx);
	close(sv[1]);		/* keyd has its own copy now */
	if (rv == -1) {
		close(sv[0]);
		return -1;
	}
	keyd_chan_fd = sv[0];
	return 0;
}

/* The leaf keyd sent, checked: one DER certificate, ca's, for leaf_key. */
static int
keyd_leaf(const struct keymsg *m, const struct ca *ca, EVP_PKEY *leaf_key,
    X509 **out, char *err, size_t errlen)
{
	const unsigned char *p = m->km_cert.v;
	EVP_PKEY *capub;
	X509 *x;

	if ((x = d2i_X509(NULL, &p, (long)m->km_cert.len)) == NULL ||
	    p != m->km_cert.v + m->km_cert.len ||
	    (capub = X509_get0_pubkey(ca_cert(ca))) == NULL ||
	    X509_verify(x, capub) != 1 ||
	    X509_check_private_key(x, leaf_key) != 1) {
		X509_free(x);
		proxy_fmt(err, errlen, "keys process: a leaf that is not the CA's, "
		    "or not for this process's key");
		return CA_ERR;
	}
	*out = x;
	return CA_OK;
}

int
proxy_keyd_mint(const char *sandbox, const char *hash, const char *name,
    const struct ca *ca, EVP_PKEY *leaf_key, X509 **out, char *err,
    size_t errlen)
{
	struct keymsg_buf b = { 0 };
	struct keymsg m;
	unsigned char *spki = NULL;
	uint8_t *rbuf = NULL;
	char why[256];
	uint32_t id;
	int sn, rv = CA_ERR;

	*out = NULL;
	if (keyd_chan_fd < 0 && proxy_keyd_chan_open(NULL, why,
	    sizeof(why)) == -1) {
		proxy_fmt(err, errlen, "keys process: %s", why);
		return CA_ERR;
	}
	if ((sn = i2d_PUBKEY(leaf_key, &spki)) <= 0) {
		proxy_fmt(err, errlen, "leaf key: cannot encode it");
		return CA_ERR;
	}
	id = ++keyd_chan_id;
	keymsg_start(&b, KEYMSG_MINT, id);
	keymsg_field_str(&b, KEYTAG_SANDBOX, sandbox);
	keymsg_field_str(&b, KEYTAG_NAME, name);
	keymsg_field_str(&b, KEYTAG_HASH, hash);
	keymsg_field(&b, KEYTAG_SPKI, spki, (size_t)sn);
	if (keymsg_finish(&b) == -1) {
		proxy_fmt(err, errlen, "keys process: request not encodable");
		goto out;
	}
	if (keyd_exchange(keyd_chan_fd, &b, 0, id, KEYD_MINT_TIMEOUT_MS, &rbuf,
	    &m, why, sizeof(why)) == -1) {
		proxy_fmt(err, errlen, "keys process: %s", why);
		proxy_keyd_chan_close();	/* a late reply must never be read */
		goto out;
	}
	if (m.km_type == KEYMSG_CERT)
		rv = keyd_leaf(&m, ca, leaf_key, out, err, errlen);
	else if (m.km_type == KEYMSG_ERR) {
		keyd_err_text(&m, why, sizeof(why));
		proxy_fmt(err, errlen, "keys process refused: %s", why);
	} else {
		proxy_fmt(err, errlen, "keys process: protocol error (OK to MINT)");
		proxy_keyd_chan_close();
	}
 out:
	keymsg_buf_free(&b);
	OPENSSL_free(spki);
	free(rbuf);
	return rv;
}
