/*
 * proxy/proxy_keyd.c: the keys process, "keyd" (proxy_keyd.h).
 *
 * Why a process of its own.  airlockd's workers parse every byte the VMs send; a
 * memory-safety bug there must not hand over the interception CA keys, which would
 * let the attacker mint certificates its sandbox's VM (and, for the names it
 * inspects, nobody else's) accepts for as long as the CA lives -- ten years.  So the
 * keys live here, in a process that reads nothing from the network: it takes the
 * set from the root reader (the names each sandbox's policy inspects, which the
 * reader computed from the policy files itself) and signs a leaf for a worker only
 * when the sandbox, the policy generation (its hash) and the name agree with that
 * set.  A compromised airlockd can still get leaves for the names the sandboxes'
 * policies inspect, each under that sandbox's CA and valid for a day (connections
 * it terminates anyway); never a key, never a leaf for another name.  A worker
 * channel is not bound to one sandbox yet: the workers are threads of one process.
 *
 * keyd is forked as root at start-up (by the root reader, so that the reader talks
 * to it directly and airlockd's own children stay the reader and netwatch; by
 * airlockd when not started as root), before any other descriptor is open, and then
 * gives up everything it does not need: every descriptor but its two channels and
 * the standard three (its log), root (the airlockd user, for good), its dumpability
 * and core file, the right to gain privileges.  One thread, poll().  Each channel
 * takes one message at a time: it reads the header, checks the type is one its
 * channel takes and the length within that type's maximum, reads the body, decodes
 * it strictly (proxy_keymsg.c), handles it, and reads again only once the reply is
 * written, so a peer that stops reading holds at most one reply here.
 *
 * keyd also holds the audit log's signing key (audit.sign_key), which the reader
 * reads and sends once (SIGN_KEY, with the chain's head as the reader found it on
 * disk), and signs checkpoints of the chain for the workers (SIGN_CHECKPOINT):
 * only ever forward, each signature naming the one before (audit_signer_sign()),
 * so a compromised worker, which writes the log, cannot have an earlier span
 * signed again over records it rewrote.  keyd builds the signed bytes itself from
 * the seq, head and time it is given; it never sees a record.
 */
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "audit.h"
#include "ca.h"
#include "hostname.h"
#include "log.h"
#include "proxy_confine.h"
#include "proxy_globals.h"
#include "proxy_keyd.h"
#include "proxy_keymsg.h"
#include "proxy_proc.h"

#define KEYD_SET_MAX		4096	/* sandboxes in one set */
#define KEYD_CHANNELS_MAX	512	/* worker channels (the soft RLIMIT_NOFILE is 1024) */
#define KEYD_FDQ_MAX		4	/* descriptors received, not yet taken */

/* One sandbox's CA as keyd holds it. */
struct keyd_ent {
	char		 ke_sandbox[KEYMSG_SANDBOX_MAX + 1];
	char		 ke_hash[KEYMSG_HASH_LEN + 1];
	struct ca	*ke_ca;		/* with its key; NULL in a pending KEEP */
	ssize_t		 ke_keep;	/* pending KEEP: the entry in force, or -1 */
	char		**ke_names;	/* normalised inspected patterns */
	size_t		 ke_nnames;
};

struct keyd_set {
	struct keyd_ent	*ks_v;
	size_t		 ks_n;
};

struct keyd {
	struct keyd_set	 kd_set;	/* in force */
	struct keyd_set	 kd_pending;	/* LOAD_BEGIN .. LOAD_END */
	int		 kd_loading;
	uint32_t	 kd_received;	/* LOAD_CA and LOAD_KEEP of the load */
	char		 kd_load_err[KEYMSG_MESSAGE_MAX + 1];	/* "" or why */
	struct audit_signer *kd_signer;	/* the audit signing key, once given */
};

static void
keyd_ent_clear(struct keyd_ent *e)
{
	size_t i;

	ca_free(e->ke_ca);
	for (i = 0; i < e->ke_nnames; i++)
		free(e->ke_names[i]);
	free(e->ke_names);
	memset(e, 0, sizeof(*e));
}

static void
keyd_set_clear(struct keyd_set *s)
{
	size_t i;

	for (i = 0; i < s->ks_n; i++)
		keyd_ent_clear(&s->ks_v[i]);
	free(s->ks_v);
	s->ks_v = NULL;
	s->ks_n = 0;
}

struct keyd *
keyd_new(void)
{
	return calloc(1, sizeof(struct keyd));
}

void
keyd_free(struct keyd *kd)
{
	if (kd == NULL)
		return;
	keyd_set_clear(&kd->kd_set);
	keyd_set_clear(&kd->kd_pending);
	audit_signer_free(kd->kd_signer);
	free(kd);
}

int
keyd_signing(const struct keyd *kd)
{
	return kd->kd_signer != NULL;
}

size_t
keyd_count(const struct keyd *kd)
{
	return kd->kd_set.ks_n;
}

int
keyd_entry(const struct keyd *kd, size_t i, struct keyd_entry_view *v)
{
	const struct keyd_ent *e;

	if (i >= kd->kd_set.ks_n)
		return -1;
	e = &kd->kd_set.ks_v[i];
	v->kv_sandbox = e->ke_sandbox;
	v->kv_hash = e->ke_hash;
	v->kv_ca = e->ke_ca;
	v->kv_names = e->ke_names;
	v->kv_nnames = e->ke_nnames;
	return 0;
}

/* The value as a string (the codec allows no NUL in text fields). */
static void
keyd_str(const struct keymsg_val *v, char *out, size_t outlen)
{
	size_t n = v->len < outlen - 1 ? v->len : outlen - 1;

	memcpy(out, v->v, n);
	out[n] = '\0';
}

static struct keyd_ent *
keyd_find(const struct keyd_set *s, const char *sandbox)
{
	size_t i;

	for (i = 0; i < s->ks_n; i++)
		if (strcmp(s->ks_v[i].ke_sandbox, sandbox) == 0)
			return &s->ks_v[i];
	return NULL;
}

/* The first failure of a load is the one LOAD_END reports. */
static void
keyd_load_fail(struct keyd *kd, const char *sandbox, const char *why)
{
	if (kd->kd_load_err[0] == '\0')
		proxy_fmt(kd->kd_load_err, sizeof(kd->kd_load_err), "sandbox %s: %s",
		    sandbox, why);
}

/* The next pending entry, with sandbox and hash filled in, or NULL (load failed). */
static struct keyd_ent *
keyd_pending_add(struct keyd *kd, const struct keymsg *m)
{
	struct keyd_set *s = &kd->kd_pending;
	char sandbox[KEYMSG_SANDBOX_MAX + 1];
	struct keyd_ent *v, *e;

	keyd_str(&m->km_sandbox, sandbox, sizeof(sandbox));
	if (keyd_find(s, sandbox) != NULL) {
		keyd_load_fail(kd, sandbox, "twice in one set");
		return NULL;
	}
	if (s->ks_n >= KEYD_SET_MAX) {
		keyd_load_fail(kd, sandbox, "too many sandboxes in one set");
		return NULL;
	}
	if ((v = reallocarray(s->ks_v, s->ks_n + 1, sizeof(*v))) == NULL) {
		keyd_load_fail(kd, sandbox, "out of memory");
		return NULL;
	}
	s->ks_v = v;
	e = &v[s->ks_n++];
	memset(e, 0, sizeof(*e));
	e->ke_keep = -1;
	proxy_fmt(e->ke_sandbox, sizeof(e->ke_sandbox), "%s", sandbox);
	keyd_str(&m->km_hash, e->ke_hash, sizeof(e->ke_hash));
	return e;
}

/* LOAD_CA: a sandbox's CA, key and inspected patterns. */
static void
keyd_load_ca(struct keyd *kd, const struct keymsg *m)
{
	struct keymsg_val v;
	struct keyd_ent *e;
	char name[HOSTNAME_MAX + 2], err[200];
	size_t pos = 0;
	int hr;

	if ((e = keyd_pending_add(kd, m)) == NULL)
		return;
	if ((e->ke_ca = ca_load_der(m->km_cert.v, m->km_cert.len, m->km_key.v,
	    m->km_key.len, 1, err, sizeof(err))) == NULL) {
		keyd_load_fail(kd, e->ke_sandbox, err);
		return;
	}
	if ((e->ke_names = calloc(m->km_nnames, sizeof(*e->ke_names))) == NULL) {
		keyd_load_fail(kd, e->ke_sandbox, "out of memory");
		return;
	}
	while (keymsg_next_name(m, &pos, &v)) {
		keyd_str(&v, name, sizeof(name));
		if ((hr = hostname_pattern_normalize(name, strlen(name),
		    name)) != HOSTNAME_OK) {
			proxy_fmt(err, sizeof(err), "inspected name: %s",
			    hostname_strerror(hr));
			keyd_load_fail(kd, e->ke_sandbox, err);
			return;
		}
		if ((e->ke_names[e->ke_nnames] = strdup(name)) == NULL) {
			keyd_load_fail(kd, e->ke_sandbox, "out of memory");
			return;
		}
		e->ke_nnames++;
	}
}

/*
 * LOAD_KEEP: the entry in force for this sandbox and policy hash stays.  Without
 * one (keyd never had it) the sandbox simply gets none: its kept policy cannot
 * have new leaves, which fails closed; said once here.
 */
static void
keyd_load_keep(struct keyd *kd, const struct keymsg *m)
{
	const struct keyd_ent *cur;
	struct keyd_ent *e;

	if ((e = keyd_pending_add(kd, m)) == NULL)
		return;
	if ((cur = keyd_find(&kd->kd_set, e->ke_sandbox)) == NULL ||
	    strcmp(cur->ke_hash, e->ke_hash) != 0) {
		log_warnx("sandbox %s: no CA in force for the policy kept: its "
		    "inspected connections get no new leaf", e->ke_sandbox);
		kd->kd_pending.ks_n--;
		return;
	}
	e->ke_keep = cur - kd->kd_set.ks_v;
}

/* LOAD_END: the pending set replaces the one in force, or nothing changes. */
static void
keyd_load_end(struct keyd *kd, const struct keymsg *m, struct keymsg_buf *reply)
{
	struct keyd_set *p = &kd->kd_pending, *s = &kd->kd_set;
	struct keyd_ent *e;
	ssize_t k;
	size_t i;

	if (kd->kd_load_err[0] == '\0' && m->km_count != kd->kd_received)
		proxy_fmt(kd->kd_load_err, sizeof(kd->kd_load_err), "LOAD_END "
		    "counts %u entries, %u came", m->km_count, kd->kd_received);
	if (kd->kd_load_err[0] != '\0') {
		log_warnx("load refused, the previous set stays: %s",
		    kd->kd_load_err);
		keymsg_err(reply, m->km_id, KEYERR_LOAD_REFUSED, kd->kd_load_err);
		keyd_set_clear(p);
		return;
	}
	/* A kept entry moves over whole; what nothing kept goes, wiped. */
	for (i = 0; i < p->ks_n; i++) {
		e = &p->ks_v[i];
		if ((k = e->ke_keep) < 0)
			continue;
		*e = s->ks_v[k];
		memset(&s->ks_v[k], 0, sizeof(s->ks_v[k]));
	}
	keyd_set_clear(s);
	*s = *p;
	memset(p, 0, sizeof(*p));
	log_debug("loaded the CAs of %zu sandbox(es)", s->ks_n);
	keymsg_start(reply, KEYMSG_OK, m->km_id);
	(void)keymsg_finish(reply);
}

static int
keyd_allowed(enum keyd_chan kind, uint16_t type)
{
	switch (type) {
	case KEYMSG_LOAD_BEGIN:
	case KEYMSG_LOAD_CA:
	case KEYMSG_LOAD_KEEP:
	case KEYMSG_LOAD_END:
	case KEYMSG_SIGN_KEY:
		return kind == KEYD_CHAN_READER;
	case KEYMSG_ADD_CHANNEL:
		return kind == KEYD_CHAN_CONTROL;
	case KEYMSG_MINT:
	case KEYMSG_SIGN_CHECKPOINT:
		return kind == KEYD_CHAN_WORKER;
	}
	return 0;	/* replies never come to keyd */
}

/* MINT: the checks, in order, then the signature. */
static void
keyd_mint(struct keyd *kd, const struct keymsg *m, struct keymsg_buf *reply)
{
	char sandbox[KEYMSG_SANDBOX_MAX + 1], hash[KEYMSG_HASH_LEN + 1];
	char name[HOSTNAME_MAX + 2], err[KEYMSG_MESSAGE_MAX];
	const unsigned char *p;
	const struct keyd_ent *e;
	unsigned char *der = NULL;
	EVP_PKEY *pub = NULL;
	X509 *x = NULL;
	size_t i;
	int hr, n;

	keyd_str(&m->km_sandbox, sandbox, sizeof(sandbox));
	keyd_str(&m->km_hash, hash, sizeof(hash));
	keyd_str(&m->km_name, name, sizeof(name));
	if ((e = keyd_find(&kd->kd_set, sandbox)) == NULL) {
		keymsg_err(reply, m->km_id, KEYERR_UNKNOWN_SANDBOX,
		    "no CA is loaded for this sandbox");
		return;
	}
	if (strcmp(e->ke_hash, hash) != 0) {
		keymsg_err(reply, m->km_id, KEYERR_STALE_POLICY,
		    "not the policy generation in force");
		return;
	}
	if ((hr = hostname_normalize(name, strlen(name), name)) != HOSTNAME_OK) {
		proxy_fmt(err, sizeof(err), "host name: %s", hostname_strerror(hr));
		keymsg_err(reply, m->km_id, KEYERR_BAD_REQUEST, err);
		return;
	}
	/* The matcher of the policy's own rules (lib/hostname.c). */
	for (i = 0; i < e->ke_nnames; i++)
		if (hostname_match(e->ke_names[i], name))
			break;
	if (i == e->ke_nnames) {
		proxy_fmt(err, sizeof(err), "%.120s: not a name this sandbox's "
		    "policy inspects", name);
		keymsg_err(reply, m->km_id, KEYERR_NOT_INSPECTED, err);
		return;
	}
	p = m->km_spki.v;
	if ((pub = d2i_PUBKEY(NULL, &p, (long)m->km_spki.len)) == NULL ||
	    p != m->km_spki.v + m->km_spki.len ||
	    EVP_PKEY_get_base_id(pub) != EVP_PKEY_EC) {
		keymsg_err(reply, m->km_id, KEYERR_BAD_REQUEST,
		    "leaf key: not one EC SubjectPublicKeyInfo");
		goto out;
	}
	if (ca_leaf_mint(e->ke_ca, name, pub, &x, err, sizeof(err)) != CA_OK) {
		keymsg_err(reply, m->km_id, KEYERR_MINT_FAILED, err);
		goto out;
	}
	if ((n = i2d_X509(x, &der)) <= 0) {
		keymsg_err(reply, m->km_id, KEYERR_MINT_FAILED, "encoding failed");
		goto out;
	}
	keymsg_start(reply, KEYMSG_CERT, m->km_id);
	keymsg_field(reply, KEYTAG_CERT, der, (size_t)n);
	(void)keymsg_finish(reply);
 out:
	OPENSSL_free(der);
	X509_free(x);
	EVP_PKEY_free(pub);
}

/*
 * SIGN_KEY: the audit signing key and the chain's head on disk, where its
 * signatures begin.  Given once in keyd's life: a second would let whoever sent it
 * move the start back (the reader sends it once; this is the other lock).
 */
static void
keyd_sign_key(struct keyd *kd, const struct keymsg *m, struct keymsg_buf *reply)
{
	char head[KEYMSG_HASH_LEN + 1], err[KEYMSG_MESSAGE_MAX];

	if (kd->kd_signer != NULL) {
		keymsg_err(reply, m->km_id, KEYERR_LOAD_REFUSED, "a signing key is "
		    "loaded already: it is given once");
		return;
	}
	keyd_str(&m->km_hash, head, sizeof(head));
	if (m->km_seq > (uint64_t)LLONG_MAX || (kd->kd_signer = audit_signer_new(
	    m->km_key.v, m->km_key.len, (long long)m->km_seq, head, err,
	    sizeof(err))) == NULL) {
		keymsg_err(reply, m->km_id, KEYERR_LOAD_REFUSED,
		    m->km_seq > (uint64_t)LLONG_MAX ? "seq out of range" : err);
		return;
	}
	log_debug("audit signing key %s: signatures begin at seq %llu",
	    audit_signer_key_id(kd->kd_signer), (unsigned long long)m->km_seq);
	keymsg_start(reply, KEYMSG_OK, m->km_id);
	(void)keymsg_finish(reply);
}

/* SIGN_CHECKPOINT: the head, signed, and the link to the signature before. */
static void
keyd_sign(struct keyd *kd, const struct keymsg *m, struct keymsg_buf *reply)
{
	char head[KEYMSG_HASH_LEN + 1], lhead[KEYMSG_HASH_LEN + 1];
	char err[KEYMSG_MESSAGE_MAX];
	struct audit_signature sig;
	long long last;

	if (kd->kd_signer == NULL) {
		keymsg_err(reply, m->km_id, KEYERR_NO_SIGN_KEY, "no audit signing "
		    "key was loaded");
		return;
	}
	if (m->km_seq < 1 || m->km_seq > (uint64_t)LLONG_MAX ||
	    m->km_ts > (uint64_t)AUDIT_TS_MAX_MS) {
		keymsg_err(reply, m->km_id, KEYERR_BAD_REQUEST, "seq or time out of "
		    "range");
		return;
	}
	keyd_str(&m->km_hash, head, sizeof(head));
	last = audit_signer_last(kd->kd_signer, lhead);
	if (audit_signer_sign(kd->kd_signer, (long long)m->km_seq, head,
	    (long long)m->km_ts, &sig, err, sizeof(err)) == -1) {
		keymsg_err(reply, m->km_id, (long long)m->km_seq <= last ?
		    KEYERR_NOT_AFTER : KEYERR_SIGN_FAILED, err);
		return;
	}
	keymsg_start(reply, KEYMSG_SIGNATURE, m->km_id);
	keymsg_field_str(reply, KEYTAG_SIG, sig.as_sig);
	keymsg_field_str(reply, KEYTAG_KEYID, sig.as_key);
	keymsg_field_u64(reply, KEYTAG_SEQ, (uint64_t)sig.as_link_seq);
	keymsg_field_str(reply, KEYTAG_HASH, sig.as_link_head);
	(void)keymsg_finish(reply);
}

enum keyd_action
keyd_handle(struct keyd *kd, enum keyd_chan kind, const struct keymsg *m,
    struct keymsg_buf *reply, const char **why)
{
	if (!keyd_allowed(kind, m->km_type)) {
		*why = "a message type this channel does not take";
		return KEYD_CLOSE;
	}
	switch (m->km_type) {
	case KEYMSG_LOAD_BEGIN:
		if (kd->kd_loading) {
			*why = "LOAD_BEGIN inside a load";
			return KEYD_CLOSE;
		}
		keyd_set_clear(&kd->kd_pending);
		kd->kd_loading = 1;
		kd->kd_received = 0;
		kd->kd_load_err[0] = '\0';
		return KEYD_NOREPLY;
	case KEYMSG_LOAD_CA:
	case KEYMSG_LOAD_KEEP:
		if (!kd->kd_loading) {
			*why = "a set entry outside LOAD_BEGIN .. LOAD_END";
			return KEYD_CLOSE;
		}
		kd->kd_received++;
		if (kd->kd_load_err[0] != '\0')
			return KEYD_NOREPLY;	/* refused already */
		if (m->km_type == KEYMSG_LOAD_CA)
			keyd_load_ca(kd, m);
		else
			keyd_load_keep(kd, m);
		return KEYD_NOREPLY;
	case KEYMSG_LOAD_END:
		if (!kd->kd_loading) {
			*why = "LOAD_END without LOAD_BEGIN";
			return KEYD_CLOSE;
		}
		kd->kd_loading = 0;
		keyd_load_end(kd, m, reply);
		return KEYD_REPLY;
	case KEYMSG_ADD_CHANNEL:
		return KEYD_ADD;
	case KEYMSG_SIGN_KEY:
		keyd_sign_key(kd, m, reply);
		return KEYD_REPLY;
	case KEYMSG_SIGN_CHECKPOINT:
		keyd_sign(kd, m, reply);
		return KEYD_REPLY;
	default:
		keyd_mint(kd, m, reply);
		return KEYD_REPLY;
	}
}

/*
 * The service loop.
 */

struct keyd_conn {
	int		 cn_fd;		/* -1: closed (compacted away) */
	enum keyd_chan	 cn_kind;
	char		 cn_label[KEYMSG_LABEL_MAX + 1];
	uint8_t		*cn_in;		/* the message coming in */
	size_t		 cn_incap;
	size_t		 cn_inlen;
	size_t		 cn_inneed;	/* KEYMSG_HDR_LEN, then header + body */
	struct keymsg_buf cn_out;	/* the reply going out */
	size_t		 cn_outoff;
	int		 cn_fdq[KEYD_FDQ_MAX];	/* control: descriptors received */
	size_t		 cn_nfdq;
};

struct keyd_loop {
	struct keyd	*kl_kd;
	struct keyd_conn *kl_v;
	size_t		 kl_n;
	size_t		 kl_workers;
	int		 kl_done;	/* airlockd's control channel went */
};

static int
keyd_conn_add(struct keyd_loop *l, int fd, enum keyd_chan kind, const char *label)
{
	struct keyd_conn *v, *c;
	int fl;

	if ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1 ||
	    (v = reallocarray(l->kl_v, l->kl_n + 1, sizeof(*v))) == NULL)
		return -1;
	l->kl_v = v;
	c = &v[l->kl_n];
	memset(c, 0, sizeof(*c));
	if ((c->cn_in = malloc(KEYMSG_HDR_LEN)) == NULL)
		return -1;
	c->cn_incap = KEYMSG_HDR_LEN;
	c->cn_inneed = KEYMSG_HDR_LEN;
	c->cn_fd = fd;
	c->cn_kind = kind;
	proxy_fmt(c->cn_label, sizeof(c->cn_label), "%s", label);
	l->kl_n++;
	if (kind == KEYD_CHAN_WORKER)
		l->kl_workers++;
	return 0;
}

/* Ends channel i; why (a malformed message, an error) is logged, once. */
static void
keyd_conn_close(struct keyd_loop *l, size_t i, const char *why)
{
	struct keyd_conn *c = &l->kl_v[i];
	size_t k;

	if (c->cn_fd == -1)
		return;
	if (why != NULL)
		log_warnx("channel %s: %s: closed", c->cn_label, why);
	else
		log_debug("channel %s: closed by its peer", c->cn_label);
	close(c->cn_fd);
	c->cn_fd = -1;
	for (k = 0; k < c->cn_nfdq; k++)
		close(c->cn_fdq[k]);
	c->cn_nfdq = 0;
	OPENSSL_clear_free(c->cn_in, c->cn_incap);	/* a LOAD_CA holds a key */
	c->cn_in = NULL;
	keymsg_buf_free(&c->cn_out);
	if (c->cn_kind == KEYD_CHAN_WORKER)
		l->kl_workers--;
}

/*
 * recvmsg(): descriptors may come on the control channel only, a few at a time
 * (one per ADD_CHANNEL).  -1 with *why (errno EPROTO) for any elsewhere.
 */
static ssize_t
keyd_recv(struct keyd_conn *c, void *p, size_t len, const char **why)
{
	union {
		struct cmsghdr	h;
		char		b[CMSG_SPACE(KEYD_FDQ_MAX * sizeof(int))];
	} cm;
	struct iovec iov = { p, len };
	struct msghdr msg;
	struct cmsghdr *h;
	size_t k, nfd;
	int fd, bad = 0;
	ssize_t n;

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cm.b;
	msg.msg_controllen = sizeof(cm.b);
	if ((n = recvmsg(c->cn_fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC)) <= 0)
		return n;
	for (h = CMSG_FIRSTHDR(&msg); h != NULL; h = CMSG_NXTHDR(&msg, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) {
			bad = 1;
			continue;
		}
		nfd = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < nfd; k++) {
			memcpy(&fd, CMSG_DATA(h) + k * sizeof(int), sizeof(int));
			if (c->cn_kind != KEYD_CHAN_CONTROL ||
			    c->cn_nfdq == KEYD_FDQ_MAX) {
				close(fd);
				bad = 1;
			} else
				c->cn_fdq[c->cn_nfdq++] = fd;
		}
	}
	if (bad || (msg.msg_flags & MSG_CTRUNC)) {
		*why = "descriptors where none may come";
		errno = EPROTO;
		return -1;
	}
	return n;
}

/* ADD_CHANNEL: the one descriptor that came with it becomes a worker channel. */
static void
keyd_add(struct keyd_loop *l, size_t i, const struct keymsg *m)
{
	char label[KEYMSG_LABEL_MAX + 1];
	struct keymsg_buf reply = { 0 };
	socklen_t sl;
	int fd, type = 0, dom = 0;

	if (l->kl_v[i].cn_nfdq != 1) {
		keyd_conn_close(l, i, "ADD_CHANNEL without exactly one descriptor");
		return;
	}
	fd = l->kl_v[i].cn_fdq[0];
	l->kl_v[i].cn_nfdq = 0;
	keyd_str(&m->km_label, label, sizeof(label));
	sl = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &sl) == -1 ||
	    type != SOCK_STREAM ||
	    (sl = sizeof(dom), getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom,
	    &sl)) == -1 || dom != AF_UNIX) {
		close(fd);
		keymsg_err(&reply, m->km_id, KEYERR_BAD_REQUEST,
		    "not a local stream socket");
	} else if (l->kl_workers >= KEYD_CHANNELS_MAX ||
	    keyd_conn_add(l, fd, KEYD_CHAN_WORKER, label) == -1) {
		close(fd);
		keymsg_err(&reply, m->km_id, KEYERR_LIMIT, "no room for a channel");
	} else {
		log_debug("channel %s: added", label);
		keymsg_start(&reply, KEYMSG_OK, m->km_id);
		(void)keymsg_finish(&reply);
	}
	l->kl_v[i].cn_out = reply;	/* kl_v may have moved */
}

/* A whole message is in channel i: decode it, handle it, queue the reply. */
static void
keyd_conn_message(struct keyd_loop *l, size_t i)
{
	struct keyd_conn *c = &l->kl_v[i];
	struct keymsg m;
	const char *why = NULL;

	if (keymsg_decode(c->cn_in, c->cn_inlen, &m, &why) == -1) {
		keyd_conn_close(l, i, why);
		return;
	}
	switch (keyd_handle(l->kl_kd, c->cn_kind, &m, &c->cn_out, &why)) {
	case KEYD_NOREPLY:
	case KEYD_REPLY:
		break;
	case KEYD_CLOSE:
		keyd_conn_close(l, i, why);
		return;
	case KEYD_ADD:
		keyd_add(l, i, &m);
		break;
	}
	c = &l->kl_v[i];
	if (c->cn_fd != -1 && c->cn_out.kb_failed)
		keyd_conn_close(l, i, "out of memory for the reply");
}

static void
keyd_conn_read(struct keyd_loop *l, size_t i)
{
	struct keyd_conn *c = &l->kl_v[i];
	const char *why = NULL;
	uint8_t *nb;
	uint32_t id, len;
	uint16_t type;
	ssize_t n;

	n = keyd_recv(c, c->cn_in + c->cn_inlen, c->cn_inneed - c->cn_inlen, &why);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		if (c->cn_kind == KEYD_CHAN_CONTROL && why == NULL)
			l->kl_done = 1;		/* airlockd is gone */
		keyd_conn_close(l, i, why != NULL ? why : n == 0 ? NULL :
		    strerror(errno));
		return;
	}
	c->cn_inlen += (size_t)n;
	if (c->cn_inlen < c->cn_inneed)
		return;
	if (c->cn_inneed == KEYMSG_HDR_LEN) {
		/* Before the body is read, or a byte allocated for it. */
		if (keymsg_header(c->cn_in, &type, &id, &len, &why) == -1) {
			keyd_conn_close(l, i, why);
			return;
		}
		if (!keyd_allowed(c->cn_kind, type)) {
			keyd_conn_close(l, i, "a message type this channel does not "
			    "take");
			return;
		}
		if (len > 0) {
			if ((nb = malloc(KEYMSG_HDR_LEN + len)) == NULL) {
				keyd_conn_close(l, i, "out of memory");
				return;
			}
			memcpy(nb, c->cn_in, KEYMSG_HDR_LEN);
			OPENSSL_clear_free(c->cn_in, c->cn_incap);
			c->cn_in = nb;
			c->cn_incap = KEYMSG_HDR_LEN + len;
			c->cn_inneed = KEYMSG_HDR_LEN + len;
			return;
		}
	}
	keyd_conn_message(l, i);
	c = &l->kl_v[i];
	if (c->cn_fd == -1)
		return;
	/* Ready for the next header; a body's buffer goes, wiped. */
	if (c->cn_incap > KEYMSG_HDR_LEN) {
		if ((nb = malloc(KEYMSG_HDR_LEN)) == NULL) {
			keyd_conn_close(l, i, "out of memory");
			return;
		}
		OPENSSL_clear_free(c->cn_in, c->cn_incap);
		c->cn_in = nb;
		c->cn_incap = KEYMSG_HDR_LEN;
	}
	c->cn_inlen = 0;
	c->cn_inneed = KEYMSG_HDR_LEN;
}

static void
keyd_conn_write(struct keyd_loop *l, size_t i)
{
	struct keyd_conn *c = &l->kl_v[i];
	ssize_t n;

	n = send(c->cn_fd, c->cn_out.kb_p + c->cn_outoff,
	    c->cn_out.kb_len - c->cn_outoff, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == -1) {
		if (c->cn_kind == KEYD_CHAN_CONTROL)
			l->kl_done = 1;
		keyd_conn_close(l, i, strerror(errno));
		return;
	}
	c->cn_outoff += (size_t)n;
	if (c->cn_outoff == c->cn_out.kb_len) {
		keymsg_buf_free(&c->cn_out);
		c->cn_outoff = 0;
	}
}

int
keyd_serve(struct keyd *kd, int reader_fd, int ctl_fd)
{
	struct keyd_loop l;
	struct pollfd *pfd = NULL, *np;
	size_t i, j, n;
	short re;
	int rv = 0;

	memset(&l, 0, sizeof(l));
	l.kl_kd = kd;
	if (keyd_conn_add(&l, reader_fd, KEYD_CHAN_READER, "reader") == -1 ||
	    keyd_conn_add(&l, ctl_fd, KEYD_CHAN_CONTROL, "control") == -1) {
		log_warn("keyd: its channels");
		rv = 1;
		goto out;
	}
	while (!l.kl_done) {
		/* Closed channels go; the rest keep their order. */
		for (i = j = 0; i < l.kl_n; i++)
			if (l.kl_v[i].cn_fd != -1)
				l.kl_v[j++] = l.kl_v[i];
		if ((l.kl_n = j) == 0)
			break;
		if ((np = reallocarray(pfd, l.kl_n, sizeof(*pfd))) == NULL) {
			log_warnx("keyd: out of memory");
			rv = 1;
			break;
		}
		pfd = np;
		n = l.kl_n;
		for (i = 0; i < n; i++) {
			pfd[i].fd = l.kl_v[i].cn_fd;
			pfd[i].events = l.kl_v[i].cn_out.kb_len > 0 ? POLLOUT :
			    POLLIN;
			pfd[i].revents = 0;
		}
		if (poll(pfd, n, -1) == -1) {
			if (errno == EINTR)
				continue;
			log_warn("keyd: poll");
			rv = 1;
			break;
		}
		/* Channels added meanwhile are at the end, past n. */
		for (i = 0; i < n && !l.kl_done; i++) {
			if ((re = pfd[i].revents) == 0 || l.kl_v[i].cn_fd == -1)
				continue;
			if (re & POLLNVAL)
				keyd_conn_close(&l, i, "not a descriptor");
			else if (l.kl_v[i].cn_out.kb_len > 0)
				keyd_conn_write(&l, i);
			else
				keyd_conn_read(&l, i);
		}
	}
 out:
	for (i = 0; i < l.kl_n; i++)
		keyd_conn_close(&l, i, NULL);
	free(l.kl_v);
	free(pfd);
	return rv;
}

/*
 * Start-up.
 */

/*
 * What OpenSSL reads lazily is read now, before the filter (which allows no open):
 * its configuration (at the first use of almost anything) and the tables of a
 * signature.  A throwaway key signs a throwaway certificate the way a leaf is
 * minted (EC key, its public half through DER, SHA-256), and a throwaway Ed25519
 * key signs the way a checkpoint is.  0, or -1.
 */
static int
keyd_warm(void)
{
	EVP_PKEY *k = NULL, *pub = NULL, *ed = NULL;
	EVP_MD_CTX *ctx = NULL;
	X509 *x = NULL;
	unsigned char *der = NULL, sig[64];
	const unsigned char *p;
	size_t siglen = sizeof(sig);
	int n, rv = -1;

	if (OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, NULL) != 1 ||
	    (k = ca_leaf_key_new()) == NULL ||
	    (n = i2d_PUBKEY(k, &der)) <= 0)
		goto out;
	p = der;
	if ((pub = d2i_PUBKEY(NULL, &p, n)) == NULL || (x = X509_new()) == NULL ||
	    X509_set_version(x, 2) != 1 || X509_set_pubkey(x, pub) != 1 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), 0) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(x), 60) == NULL ||
	    X509_sign(x, k, EVP_sha256()) <= 0)
		goto out;
	if ((ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519")) == NULL ||
	    (ctx = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestSignInit(ctx, NULL, NULL, NULL, ed) != 1 ||
	    EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)"warm", 4) != 1)
		goto out;
	rv = 0;
 out:
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(ed);
	OPENSSL_free(der);
	X509_free(x);
	EVP_PKEY_free(pub);
	EVP_PKEY_free(k);
	return rv;
}

pid_t
proxy_keyd_start(const struct passwd *pw, int reader_fd, int ctl_fd, char *err,
    size_t errlen)
{
	int keep[2] = { reader_fd, ctl_fd };
	struct keyd *kd;
	pid_t pid;
	int rv;

	fflush(NULL);
	if ((pid = fork()) == -1) {
		proxy_fmt(err, errlen, "keys process: fork: %s", strerror(errno));
		return -1;
	}
	if (pid != 0)
		return pid;
	log_procinit("keyd");
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if (proxy_close_fds_except(keep, 2) == -1) {
		log_warn("closing descriptors");
		_exit(1);
	}
	if ((pw != NULL && proxy_privdrop(pw, err, errlen) == -1) ||
	    proxy_harden(err, errlen) == -1) {
		log_warnx("%s", err);
		_exit(1);
	}
	if ((kd = keyd_new()) == NULL) {
		log_warnx("out of memory");
		_exit(1);
	}
	log_debug("ready: uid %u", (unsigned int)geteuid());
	/* Its own filter (proxy_confine.c) before the first message is read. */
	if (keyd_warm() == -1) {
		log_warnx("OpenSSL cannot sign");
		_exit(1);
	}
	if (proxy_confine(PROXY_ROLE_KEYD, err, errlen) == -1) {
		log_warnx("%s", err);
		_exit(1);
	}
	rv = keyd_serve(kd, reader_fd, ctl_fd);
	keyd_free(kd);
	_exit(rv);
}
