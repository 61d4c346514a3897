/*
 * proxy/proxy_keyd_client.c: the ends that talk to the keys process (proxy_keyd.h).
 *
 * The request/reply exchange both ends use (the loading end, proxy_keyd_load.c,
 * is above the key material; this file is beneath it).
 *
 * airlockd's end: the control channel (one, under a lock) and a channel per worker
 * thread, opened at the thread's start; a MINT is a synchronous request and reply on
 * it with a deadline, made on a leaf cache miss only.  A stream that may be out of
 * step (a timeout, a malformed reply, EOF) is never read again: the thread closes its
 * channel and opens a new one for its next request, and the loading end reports keyd
 * gone.  Everything that went wrong fails closed: no leaf, no inspected connection.
 *
 * A checkpoint's signature (SIGN_CHECKPOINT) is the same kind of request, made by
 * the audit log's writer under its lock (proxy_checkpoint.c, the main thread only),
 * with a shorter deadline: writers wait for it.  What goes wrong there is said in
 * the record (written unsigned), never hidden.
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

#include "audit.h"
#include "ca.h"
#include "proxy_globals.h"
#include "proxy_keyd.h"
#include "proxy_keymsg.h"
#include "proxy_proc.h"

#define KEYD_MINT_TIMEOUT_MS	2000
#define KEYD_SIGN_TIMEOUT_MS	500	/* the audit log's writers wait for it */

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
	if (type != KEYMSG_OK && type != KEYMSG_CERT && type != KEYMSG_ERR &&
	    type != KEYMSG_SIGNATURE) {
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
int
proxy_keyd_exchange(int fd, const struct keymsg_buf *b, size_t sent, uint32_t id,
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
void
proxy_keyd_err_text(const struct keymsg *m, char *err, size_t errlen)
{
	proxy_fmt(err, errlen, "%s: %.*s", keymsg_err_name(m->km_code),
	    (int)m->km_message.len, (const char *)m->km_message.v);
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
	if ((n = proxy_fd_send_fds(keyd_ctl_fd, b.kb_p, b.kb_len, &fd, 1)) == -1) {
		proxy_fmt(err, errlen, "%s", keyd_io_str(errno));
		goto broken;
	}
	/* The rest, if any, and the answer. */
	if (proxy_keyd_exchange(keyd_ctl_fd, &b, (size_t)n, id, KEYD_MINT_TIMEOUT_MS,
	    &rbuf, &m, err, errlen) == -1)
		goto broken;
	if (m.km_type != KEYMSG_OK) {
		proxy_keyd_err_text(&m, err, errlen);
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
proxy_keyd_chan_ready(const char *label, char *err, size_t errlen)
{
	return keyd_chan_fd >= 0 ? 0 : proxy_keyd_chan_open(label, err, errlen);
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
	if (proxy_keyd_exchange(keyd_chan_fd, &b, 0, id, KEYD_MINT_TIMEOUT_MS, &rbuf,
	    &m, why, sizeof(why)) == -1) {
		proxy_fmt(err, errlen, "keys process: %s", why);
		proxy_keyd_chan_close();	/* a late reply must never be read */
		goto out;
	}
	if (m.km_type == KEYMSG_CERT)
		rv = keyd_leaf(&m, ca, leaf_key, out, err, errlen);
	else if (m.km_type == KEYMSG_ERR) {
		proxy_keyd_err_text(&m, why, sizeof(why));
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

int
proxy_keyd_sign(long long seq, const char *head, long long ts_ms,
    struct audit_signature *out, char *err, size_t errlen)
{
	struct keymsg_buf b = { 0 };
	struct keymsg m;
	uint8_t *rbuf = NULL;
	char why[256];
	uint32_t id;
	int rv = -1;

	memset(out, 0, sizeof(*out));
	/* Not opened here: the writer's lock is held (proxy_keyd_chan_ready()). */
	if (keyd_chan_fd < 0) {
		proxy_fmt(err, errlen, "no channel to it (it could not be opened)");
		return -1;
	}
	id = ++keyd_chan_id;
	keymsg_start(&b, KEYMSG_SIGN_CHECKPOINT, id);
	keymsg_field_u64(&b, KEYTAG_SEQ, (uint64_t)seq);
	keymsg_field_str(&b, KEYTAG_HASH, head);
	keymsg_field_u64(&b, KEYTAG_TS, (uint64_t)ts_ms);
	if (keymsg_finish(&b) == -1) {
		proxy_fmt(err, errlen, "request not encodable");
		goto out;
	}
	if (proxy_keyd_exchange(keyd_chan_fd, &b, 0, id, KEYD_SIGN_TIMEOUT_MS,
	    &rbuf, &m, why, sizeof(why)) == -1) {
		proxy_fmt(err, errlen, "%s", why);
		proxy_keyd_chan_close();	/* a late reply must never be read */
		goto out;
	}
	if (m.km_type == KEYMSG_ERR) {
		proxy_keyd_err_text(&m, why, sizeof(why));
		proxy_fmt(err, errlen, "refused: %s", why);
		goto out;
	}
	if (m.km_type != KEYMSG_SIGNATURE || m.km_seq > (uint64_t)seq) {
		proxy_fmt(err, errlen, "protocol error (%s to SIGN_CHECKPOINT)",
		    keymsg_type_name(m.km_type));
		proxy_keyd_chan_close();
		goto out;
	}
	/* The codec checked each value's length and hex digits. */
	memcpy(out->as_sig, m.km_sig.v, m.km_sig.len);
	memcpy(out->as_key, m.km_keyid.v, m.km_keyid.len);
	memcpy(out->as_link_head, m.km_hash.v, m.km_hash.len);
	out->as_link_seq = (long long)m.km_seq;
	rv = 0;
 out:
	keymsg_buf_free(&b);
	free(rbuf);
	return rv;
}
