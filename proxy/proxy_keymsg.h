/*
 * proxy/proxy_keymsg.h: the messages between airlockd and its keys process
 * (proxy_keyd.c), encoded and decoded.  Pure code: no I/O, no state, so that
 * tests/fuzz/fuzz_keymsg.c can run the decoder over any bytes.  The format is in
 * README.md ("The keys process"); in short:
 *
 *	header	u32 body length (big-endian), u16 type, u32 request id
 *	body	fields: u16 tag, u32 length, the bytes; nothing after the last
 *
 * Strict: a known type, a body no longer than that type's maximum, only the tags
 * the type carries, each as often as it must (a required field exactly once, NAME
 * in LOAD_CA 1 to CA_NAMES_MAX times), each value of its tag's length and kind,
 * fields that end exactly where the body does.  Anything else is malformed: the
 * receiver ends the channel it came on.
 */
#ifndef AIRLOCK_PROXY_KEYMSG_H
#define AIRLOCK_PROXY_KEYMSG_H

#include <stddef.h>
#include <stdint.h>

#define KEYMSG_HDR_LEN		10
#define KEYMSG_FIELD_HDR_LEN	6
#define KEYMSG_BODY_MAX		(1024 * 1024)	/* LOAD_CA; the others far less */
#define KEYMSG_HASH_LEN		64		/* a policy hash: SHA-256, hex */
#define KEYMSG_SANDBOX_MAX	63
#define KEYMSG_LABEL_MAX	64
#define KEYMSG_MESSAGE_MAX	200
#define KEYMSG_SIG_HEX		128		/* AUDIT_SIG_HEX */
#define KEYMSG_KEYID_HEX	32		/* AUDIT_KEYID_HEX */

enum keymsg_type {
	/* the reader channel: one set, BEGIN, CA or KEEP per sandbox, END */
	KEYMSG_LOAD_BEGIN = 1,
	KEYMSG_LOAD_CA = 2,
	KEYMSG_LOAD_KEEP = 3,
	KEYMSG_LOAD_END = 4,
	KEYMSG_SIGN_KEY = 7,		/* the audit signing key, once */
	/* the control channel */
	KEYMSG_ADD_CHANNEL = 5,		/* + one descriptor (SCM_RIGHTS) */
	/* worker channels */
	KEYMSG_MINT = 6,
	KEYMSG_SIGN_CHECKPOINT = 8,	/* an audit checkpoint's head */
	/* replies */
	KEYMSG_OK = 16,
	KEYMSG_CERT = 17,
	KEYMSG_ERR = 18,
	KEYMSG_SIGNATURE = 19,
};

enum keymsg_tag {
	KEYTAG_SANDBOX = 1,	/* sandbox name */
	KEYTAG_HASH = 2,	/* the policy hash a CA entry was synced for */
	KEYTAG_CERT = 3,	/* a certificate, DER */
	KEYTAG_KEY = 4,		/* a CA private key, PKCS#8 DER */
	KEYTAG_NAME = 5,	/* a host name or an inspected pattern */
	KEYTAG_SPKI = 6,	/* a leaf public key, SubjectPublicKeyInfo DER */
	KEYTAG_COUNT = 7,	/* u32 */
	KEYTAG_LABEL = 8,	/* a channel's name in keyd's log */
	KEYTAG_CODE = 9,	/* u16, enum keymsg_err */
	KEYTAG_MESSAGE = 10,	/* short text, never key bytes */
	KEYTAG_SEQ = 11,	/* u64: an audit record's seq */
	KEYTAG_TS = 12,		/* u64: ms since the epoch */
	KEYTAG_SIG = 13,	/* an Ed25519 signature, 128 lower-case hex */
	KEYTAG_KEYID = 14,	/* the signing key's id, 32 lower-case hex */
};

/* ERR codes. */
enum keymsg_err {
	KEYERR_BAD_REQUEST = 1,		/* well-formed, but not a usable request */
	KEYERR_UNKNOWN_SANDBOX = 2,	/* no CA loaded for this sandbox */
	KEYERR_STALE_POLICY = 3,	/* not the policy hash in force */
	KEYERR_NOT_INSPECTED = 4,	/* the sandbox's policy does not inspect it */
	KEYERR_MINT_FAILED = 5,		/* the CA refused it, or signing failed */
	KEYERR_LOAD_REFUSED = 6,	/* LOAD_END: the set was not installed */
	KEYERR_LIMIT = 7,		/* too many channels */
	KEYERR_NO_SIGN_KEY = 8,		/* SIGN_CHECKPOINT: no signing key loaded */
	KEYERR_NOT_AFTER = 9,		/* ... a head not after the last signed */
	KEYERR_SIGN_FAILED = 10,	/* ... refused or failed otherwise */
};

/* A field's value: borrowed from the decoded buffer. */
struct keymsg_val {
	const uint8_t	*v;
	size_t		 len;
};

/* One decoded message.  Fields the type does not carry are { NULL, 0 }. */
struct keymsg {
	uint16_t	 km_type;
	uint32_t	 km_id;
	struct keymsg_val km_sandbox;
	struct keymsg_val km_hash;
	struct keymsg_val km_cert;
	struct keymsg_val km_key;
	struct keymsg_val km_name;	/* the first NAME */
	struct keymsg_val km_spki;
	struct keymsg_val km_label;
	struct keymsg_val km_message;
	struct keymsg_val km_sig;
	struct keymsg_val km_keyid;
	uint64_t	 km_seq;
	uint64_t	 km_ts;
	uint32_t	 km_count;
	uint16_t	 km_code;
	size_t		 km_nnames;	/* NAME fields: keymsg_next_name() */
	const uint8_t	*km_body;
	size_t		 km_bodylen;
};

/*
 * A message header (KEYMSG_HDR_LEN bytes).  0 with *type, *id and *len (the body's
 * length), or -1 with *why: an unknown type, or a body longer than its maximum.
 * The receiver checks this before it reads (or allocates for) the body.
 */
int	keymsg_header(const uint8_t *hdr, uint16_t *type, uint32_t *id,
	    uint32_t *len, const char **why);
/* The longest body a message of type may have; 0 for an unknown type. */
size_t	keymsg_body_max(uint16_t type);
/* The name of type, for the log ("MINT", ...); "unknown" if none. */
const char *keymsg_type_name(uint16_t type);
/* Short text for an ERR code. */
const char *keymsg_err_name(uint16_t code);
/*
 * Decodes one whole message (header and body, exactly len bytes) into *m, whose
 * values point into buf.  0, or -1 with *why (a static string) when it is malformed.
 */
int	keymsg_decode(const uint8_t *buf, size_t len, struct keymsg *m,
	    const char **why);
/*
 * The NAME fields of a decoded message in order: call with *pos 0; 1 and *v for
 * each, then 0.
 */
int	keymsg_next_name(const struct keymsg *m, size_t *pos, struct keymsg_val *v);

/*
 * Encoding into a growing buffer that wipes what it leaves behind (CA keys go
 * through it).  One buffer may hold several messages: keymsg_start() opens one,
 * keymsg_field*() add to it, keymsg_finish() closes it.  An error (out of memory,
 * a body over its maximum) sticks: keymsg_finish() returns -1 then, and so does
 * every later call's keymsg_finish().
 */
struct keymsg_buf {
	uint8_t		*kb_p;
	size_t		 kb_len;
	size_t		 kb_cap;
	size_t		 kb_start;	/* the open message's header */
	int		 kb_failed;
};

/* Raw bytes at the end (the key image of proxy_keys.c is built this way too). */
void	keymsg_buf_put(struct keymsg_buf *b, const void *d, size_t n);
void	keymsg_start(struct keymsg_buf *b, uint16_t type, uint32_t id);
void	keymsg_field(struct keymsg_buf *b, uint16_t tag, const void *v, size_t len);
void	keymsg_field_str(struct keymsg_buf *b, uint16_t tag, const char *s);
void	keymsg_field_u16(struct keymsg_buf *b, uint16_t tag, uint16_t v);
void	keymsg_field_u32(struct keymsg_buf *b, uint16_t tag, uint32_t v);
void	keymsg_field_u64(struct keymsg_buf *b, uint16_t tag, uint64_t v);
int	keymsg_finish(struct keymsg_buf *b);
/* Wipes and frees what b holds; b is empty (and usable) again. */
void	keymsg_buf_free(struct keymsg_buf *b);
/* An ERR reply: code and a short message (cut, and anything unprintable dropped). */
void	keymsg_err(struct keymsg_buf *b, uint32_t id, uint16_t code,
	    const char *msg);

#endif
