/*
 * proxy/proxy_keyd.h: airlockd's keys process ("keyd", proxy_keyd.c) and the ends
 * that talk to it (proxy_keyd_client.c).  The messages are proxy_keymsg.h's; the
 * protocol is in README.md ("The keys process").
 *
 * keyd holds every sandbox CA's private key and signs leaves; nothing else in
 * airlockd does.  It has three kinds of channel, each a socketpair end and each
 * taking its own messages only:
 *	reader	LOAD_BEGIN, LOAD_CA / LOAD_KEEP per sandbox, LOAD_END -> OK | ERR:
 *		the whole set, installed at once (the root reader, or airlockd
 *		itself when not started as root)
 *	control	ADD_CHANNEL with a socketpair end (SCM_RIGHTS) -> OK | ERR: a new
 *		worker channel (airlockd's side)
 *	worker	MINT -> CERT | ERR (one per worker thread); SIGN_CHECKPOINT ->
 *		SIGNATURE | ERR (the audit log's checkpoints)
 * and the reader's SIGN_KEY -> OK | ERR (the audit signing key, once).
 * A malformed message, or one of a type its channel does not take, ends that
 * channel (logged once); keyd serves the others on.  It ends when airlockd's
 * control channel closes, or when no channel is left.
 */
#ifndef AIRLOCK_PROXY_KEYD_H
#define AIRLOCK_PROXY_KEYD_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

struct ca;
struct keymsg;
struct keymsg_buf;
struct passwd;
struct proxy_keys_build;

/*
 * proxy_keyd.c: the keys process.
 */
enum keyd_chan {
	KEYD_CHAN_READER,
	KEYD_CHAN_CONTROL,
	KEYD_CHAN_WORKER,
};

/* What keyd_handle() wants done with a message. */
enum keyd_action {
	KEYD_NOREPLY,	/* taken (a part of a load) */
	KEYD_REPLY,	/* taken: send what is in the reply buffer */
	KEYD_CLOSE,	/* not acceptable on this channel: end it (why says why) */
	KEYD_ADD,	/* ADD_CHANNEL: the caller adds the descriptor and replies */
};

struct keyd;

/* The service's state: the set of CAs in force (none yet), a load in progress. */
struct keyd *keyd_new(void);
void	keyd_free(struct keyd *kd);
/*
 * One decoded message m from a channel of kind.  A reply is appended to reply (a
 * whole message).  Pure but for the signing: no I/O (tests and the fuzzer feed it
 * directly).
 */
enum keyd_action keyd_handle(struct keyd *kd, enum keyd_chan kind,
	    const struct keymsg *m, struct keymsg_buf *reply, const char **why);

/* A read-only view of the set in force (tests, the fuzzer's oracle). */
struct keyd_entry_view {
	const char	*kv_sandbox;
	const char	*kv_hash;
	const struct ca	*kv_ca;
	char *const	*kv_names;	/* normalised patterns */
	size_t		 kv_nnames;
};
size_t	keyd_count(const struct keyd *kd);
/* 1 once an audit signing key was loaded (SIGN_KEY), else 0. */
int	keyd_signing(const struct keyd *kd);
int	keyd_entry(const struct keyd *kd, size_t i, struct keyd_entry_view *v);

/*
 * Serves the reader channel and the control channel (and every worker channel the
 * control channel adds) with poll() in this thread until the control channel's
 * peer goes or no channel is left; closes them.  Returns 0, or 1 on a failure of
 * its own (poll, memory).
 */
int	keyd_serve(struct keyd *kd, int reader_fd, int ctl_fd);
/*
 * Forks keyd on reader_fd and ctl_fd: the child closes every other descriptor
 * (stdin, stdout and stderr stay: its log), drops to pw if pw is not NULL (as
 * proxy_privdrop(): for good), turns non-dumpable, no_new_privs and core-less, and
 * serves.  Called where nothing else is open yet (start-up).  The child's pid, or
 * -1 with err.
 */
pid_t	proxy_keyd_start(const struct passwd *pw, int reader_fd, int ctl_fd,
	    char *err, size_t errlen);

/*
 * proxy_keyd_client.c: the exchange (both ends), and airlockd's end.
 */
struct keymsg;
struct keymsg_buf;
/*
 * Sends what b holds from sent on to fd and waits up to ms for keyd's reply to
 * request id: *m points into *rbuf (free() it).  0, or -1 with err when the stream
 * is no longer usable (an I/O error, a timeout, a malformed reply).
 */
int	proxy_keyd_exchange(int fd, const struct keymsg_buf *b, size_t sent,
	    uint32_t id, int ms, uint8_t **rbuf, struct keymsg *m, char *err,
	    size_t errlen);
/* An ERR reply as text: its code and keyd's short message. */
void	proxy_keyd_err_text(const struct keymsg *m, char *err, size_t errlen);

/*
 * proxy_keyd_load.c: the loading end (the root reader; airlockd itself without one).
 * link: this process's reader channel to keyd and keyd's pid (its parent reaps it).
 */
void	proxy_keyd_link(int fd, pid_t pid);
/*
 * Sends keyd the set for kb and waits for its answer (up to 10 s): per record, its
 * fresh CA (LOAD_CA), or, when the unprivileged side will keep the record's previous
 * policy (its new one refused, or its CA not made), the entry keyd already holds for
 * that sandbox (LOAD_KEEP).  only non-NULL (an attach): only that sandbox may change,
 * every other keeps its entry.  0, or -1 with err (keyd refused the set and keeps
 * its previous one, or keyd is gone).
 */
int	proxy_keyd_load(const struct proxy_keys_build *kb, const char *only,
	    char *err, size_t errlen);
/* Closes the link and waits for keyd (the loading end's exit). */
void	proxy_keyd_unlink(void);
/*
 * Gives keyd the audit signing key (PKCS#8 DER) and the chain's head on disk
 * (seq, head), where its signatures begin; waits for its answer.  0, or -1 with
 * err (keyd refused it, or is gone).
 */
int	proxy_keyd_sign_key(const unsigned char *der, size_t derlen, long long seq,
	    const char *head, char *err, size_t errlen);
/* 1 once keyd has ended on its own (reaped), else 0. */
int	proxy_keyd_gone(void);

/*
 * airlockd's end: the control channel, and one worker channel per thread.
 */
void	proxy_keyd_client_init(int ctl_fd);
/* Closes the control channel (keyd then ends). */
void	proxy_keyd_client_stop(void);
/*
 * Opens this thread's channel: a socketpair, one end to keyd by ADD_CHANNEL (under
 * the control channel's lock).  label names it in keyd's log.  0, or -1 with err.
 */
int	proxy_keyd_chan_open(const char *label, char *err, size_t errlen);
/* The same only when this thread has no channel (or it broke).  0 or -1. */
int	proxy_keyd_chan_ready(const char *label, char *err, size_t errlen);
void	proxy_keyd_chan_close(void);
/*
 * Asks keyd, on this thread's channel (opened again if it broke), for a leaf for
 * name (normalised) under sandbox's CA synced for policy hash, with leaf_key's
 * public half; waits up to 2 s.  The leaf must verify under ca's certificate and
 * carry leaf_key.  CA_OK and *out, or an enum ca_err with err: keyd refused (its
 * code and message), or it is gone or too slow (the channel is then closed).
 */
int	proxy_keyd_mint(const char *sandbox, const char *hash, const char *name,
	    const struct ca *ca, EVP_PKEY *leaf_key, X509 **out, char *err,
	    size_t errlen);
/*
 * Asks keyd, on this thread's channel (not opened again here: the caller holds the
 * audit log's lock; proxy_keyd_chan_ready() first), to sign the audit chain's head
 * (seq, head) for a checkpoint at ts_ms; waits up to 0.5 s.
 * 0 with *out (the signature, key id and link), or -1 with err: keyd refused (its
 * code and message), or it is gone or too slow (the channel is then closed).
 */
struct audit_signature;
int	proxy_keyd_sign(long long seq, const char *head, long long ts_ms,
	    struct audit_signature *out, char *err, size_t errlen);

#endif
