/*
 * proxy/proxy_keymsg.c: the keys process's message format (proxy_keymsg.h,
 * README.md, "The keys process").  Two tables say everything the decoder checks: what each
 * tag's value must look like, and which tags each type carries how often.  The
 * encoder writes what the decoder reads; it is not trusted to: every receiver
 * decodes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "ca.h"
#include "proxy_keymsg.h"

enum keymsg_kind {
	KK_BYTES,	/* anything */
	KK_TEXT,	/* printable ASCII, no space */
	KK_PHRASE,	/* printable ASCII and spaces */
	KK_HEX,		/* lower-case hex digits */
	KK_U16,
	KK_U32,
	KK_U64,
};

struct keymsg_tagdef {
	uint16_t	 kt_tag;
	enum keymsg_kind kt_kind;
	size_t		 kt_min;
	size_t		 kt_max;
};

static const struct keymsg_tagdef keymsg_tags[] = {
	{ KEYTAG_SANDBOX, KK_TEXT, 1, KEYMSG_SANDBOX_MAX },
	{ KEYTAG_HASH, KK_HEX, KEYMSG_HASH_LEN, KEYMSG_HASH_LEN },
	{ KEYTAG_CERT, KK_BYTES, 1, KEYMSG_BODY_MAX },
	{ KEYTAG_KEY, KK_BYTES, 1, 8192 },
	{ KEYTAG_NAME, KK_TEXT, 1, 254 },	/* HOSTNAME_MAX and a trailing dot */
	{ KEYTAG_SPKI, KK_BYTES, 1, 2048 },
	{ KEYTAG_COUNT, KK_U32, 4, 4 },
	{ KEYTAG_LABEL, KK_PHRASE, 1, KEYMSG_LABEL_MAX },
	{ KEYTAG_CODE, KK_U16, 2, 2 },
	{ KEYTAG_MESSAGE, KK_PHRASE, 0, KEYMSG_MESSAGE_MAX },
	{ KEYTAG_SEQ, KK_U64, 8, 8 },
	{ KEYTAG_TS, KK_U64, 8, 8 },
	{ KEYTAG_SIG, KK_HEX, KEYMSG_SIG_HEX, KEYMSG_SIG_HEX },
	{ KEYTAG_KEYID, KK_HEX, KEYMSG_KEYID_HEX, KEYMSG_KEYID_HEX },
};

#define KEYMSG_RULES_MAX	5

struct keymsg_rule {
	uint16_t	 kr_tag;	/* 0 ends the list */
	uint16_t	 kr_min;
	uint16_t	 kr_max;
};

struct keymsg_typedef {
	uint16_t	 ky_type;
	const char	*ky_name;
	size_t		 ky_body_max;
	struct keymsg_rule ky_rules[KEYMSG_RULES_MAX];
};

static const struct keymsg_typedef keymsg_types[] = {
	{ KEYMSG_LOAD_BEGIN, "LOAD_BEGIN", 0, { { 0, 0, 0 } } },
	{ KEYMSG_LOAD_CA, "LOAD_CA", KEYMSG_BODY_MAX, {
		{ KEYTAG_SANDBOX, 1, 1 }, { KEYTAG_HASH, 1, 1 },
		{ KEYTAG_CERT, 1, 1 }, { KEYTAG_KEY, 1, 1 },
		{ KEYTAG_NAME, 1, CA_NAMES_MAX } } },
	{ KEYMSG_LOAD_KEEP, "LOAD_KEEP", 256, {
		{ KEYTAG_SANDBOX, 1, 1 }, { KEYTAG_HASH, 1, 1 } } },
	{ KEYMSG_LOAD_END, "LOAD_END", 16, { { KEYTAG_COUNT, 1, 1 } } },
	{ KEYMSG_SIGN_KEY, "SIGN_KEY", 8448, {
		{ KEYTAG_KEY, 1, 1 }, { KEYTAG_SEQ, 1, 1 },
		{ KEYTAG_HASH, 1, 1 } } },
	{ KEYMSG_ADD_CHANNEL, "ADD_CHANNEL", 128, { { KEYTAG_LABEL, 1, 1 } } },
	{ KEYMSG_MINT, "MINT", 4096, {
		{ KEYTAG_SANDBOX, 1, 1 }, { KEYTAG_NAME, 1, 1 },
		{ KEYTAG_HASH, 1, 1 }, { KEYTAG_SPKI, 1, 1 } } },
	{ KEYMSG_SIGN_CHECKPOINT, "SIGN_CHECKPOINT", 128, {
		{ KEYTAG_SEQ, 1, 1 }, { KEYTAG_HASH, 1, 1 },
		{ KEYTAG_TS, 1, 1 } } },
	{ KEYMSG_OK, "OK", 0, { { 0, 0, 0 } } },
	{ KEYMSG_CERT, "CERT", 16384, { { KEYTAG_CERT, 1, 1 } } },
	{ KEYMSG_ERR, "ERR", 256, {
		{ KEYTAG_CODE, 1, 1 }, { KEYTAG_MESSAGE, 1, 1 } } },
	{ KEYMSG_SIGNATURE, "SIGNATURE", 256, {
		{ KEYTAG_SIG, 1, 1 }, { KEYTAG_KEYID, 1, 1 },
		{ KEYTAG_SEQ, 1, 1 }, { KEYTAG_HASH, 1, 1 } } },
};

static const struct keymsg_typedef *
keymsg_typedef(uint16_t type)
{
	size_t i;

	for (i = 0; i < sizeof(keymsg_types) / sizeof(keymsg_types[0]); i++)
		if (keymsg_types[i].ky_type == type)
			return &keymsg_types[i];
	return NULL;
}

static const struct keymsg_tagdef *
keymsg_tagdef(uint16_t tag)
{
	size_t i;

	for (i = 0; i < sizeof(keymsg_tags) / sizeof(keymsg_tags[0]); i++)
		if (keymsg_tags[i].kt_tag == tag)
			return &keymsg_tags[i];
	return NULL;
}

static uint16_t
keymsg_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
keymsg_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
	    p[3];
}

static uint64_t
keymsg_get64(const uint8_t *p)
{
	return (uint64_t)keymsg_get32(p) << 32 | keymsg_get32(p + 4);
}

size_t
keymsg_body_max(uint16_t type)
{
	const struct keymsg_typedef *t = keymsg_typedef(type);

	return t != NULL ? t->ky_body_max : 0;
}

const char *
keymsg_type_name(uint16_t type)
{
	const struct keymsg_typedef *t = keymsg_typedef(type);

	return t != NULL ? t->ky_name : "unknown";
}

const char *
keymsg_err_name(uint16_t code)
{
	switch (code) {
	case KEYERR_BAD_REQUEST:
		return "bad request";
	case KEYERR_UNKNOWN_SANDBOX:
		return "unknown sandbox";
	case KEYERR_STALE_POLICY:
		return "stale policy";
	case KEYERR_NOT_INSPECTED:
		return "name not inspected";
	case KEYERR_MINT_FAILED:
		return "mint failed";
	case KEYERR_LOAD_REFUSED:
		return "load refused";
	case KEYERR_LIMIT:
		return "limit";
	case KEYERR_NO_SIGN_KEY:
		return "no signing key";
	case KEYERR_NOT_AFTER:
		return "not after the last signed";
	case KEYERR_SIGN_FAILED:
		return "signing failed";
	}
	return "unknown error";
}

int
keymsg_header(const uint8_t *hdr, uint16_t *type, uint32_t *id, uint32_t *len,
    const char **why)
{
	const struct keymsg_typedef *t;

	*len = keymsg_get32(hdr);
	*type = keymsg_get16(hdr + 4);
	*id = keymsg_get32(hdr + 6);
	if ((t = keymsg_typedef(*type)) == NULL) {
		*why = "unknown message type";
		return -1;
	}
	if (*len > t->ky_body_max) {
		*why = "message longer than its type allows";
		return -1;
	}
	return 0;
}

/* Is v a valid value for tag d?  The length is checked by the caller. */
static int
keymsg_value_ok(const struct keymsg_tagdef *d, const uint8_t *v, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		switch (d->kt_kind) {
		case KK_TEXT:
			if (v[i] <= 0x20 || v[i] >= 0x7f)
				return 0;
			break;
		case KK_PHRASE:
			if (v[i] < 0x20 || v[i] >= 0x7f)
				return 0;
			break;
		case KK_HEX:
			if (!((v[i] >= '0' && v[i] <= '9') ||
			    (v[i] >= 'a' && v[i] <= 'f')))
				return 0;
			break;
		default:
			return 1;
		}
	return 1;
}

/* Where the decoded value of tag goes in m (NAME: the first one). */
static struct keymsg_val *
keymsg_slot(struct keymsg *m, uint16_t tag)
{
	switch (tag) {
	case KEYTAG_SANDBOX:
		return &m->km_sandbox;
	case KEYTAG_HASH:
		return &m->km_hash;
	case KEYTAG_CERT:
		return &m->km_cert;
	case KEYTAG_KEY:
		return &m->km_key;
	case KEYTAG_NAME:
		return &m->km_name;
	case KEYTAG_SPKI:
		return &m->km_spki;
	case KEYTAG_LABEL:
		return &m->km_label;
	case KEYTAG_MESSAGE:
		return &m->km_message;
	case KEYTAG_SIG:
		return &m->km_sig;
	case KEYTAG_KEYID:
		return &m->km_keyid;
	}
	return NULL;
}

int
keymsg_decode(const uint8_t *buf, size_t len, struct keymsg *m, const char **why)
{
	const struct keymsg_typedef *t;
	const struct keymsg_tagdef *d;
	const struct keymsg_rule *r;
	struct keymsg_val *slot;
	unsigned int seen[KEYMSG_RULES_MAX] = { 0 };
	uint32_t blen, flen;
	uint16_t tag;
	size_t off, i;

	memset(m, 0, sizeof(*m));
	if (len < KEYMSG_HDR_LEN) {
		*why = "truncated header";
		return -1;
	}
	if (keymsg_header(buf, &m->km_type, &m->km_id, &blen, why) == -1)
		return -1;
	if (len - KEYMSG_HDR_LEN != blen) {
		*why = len - KEYMSG_HDR_LEN < blen ? "truncated body" :
		    "bytes after the body";
		return -1;
	}
	t = keymsg_typedef(m->km_type);
	m->km_body = buf + KEYMSG_HDR_LEN;
	m->km_bodylen = blen;
	for (off = 0; off < blen; off += KEYMSG_FIELD_HDR_LEN + flen) {
		if (blen - off < KEYMSG_FIELD_HDR_LEN) {
			*why = "truncated field header";
			return -1;
		}
		tag = keymsg_get16(m->km_body + off);
		flen = keymsg_get32(m->km_body + off + 2);
		if (flen > blen - off - KEYMSG_FIELD_HDR_LEN) {
			*why = "field longer than the body";
			return -1;
		}
		for (i = 0, r = t->ky_rules; i < KEYMSG_RULES_MAX &&
		    r->kr_tag != 0; i++, r++)
			if (r->kr_tag == tag)
				break;
		if (i == KEYMSG_RULES_MAX || r->kr_tag == 0) {
			*why = "field not carried by this message type";
			return -1;
		}
		if (++seen[i] > r->kr_max) {
			*why = "field repeated";
			return -1;
		}
		d = keymsg_tagdef(tag);
		if (flen < d->kt_min || flen > d->kt_max) {
			*why = "field of the wrong length";
			return -1;
		}
		if (!keymsg_value_ok(d, m->km_body + off + KEYMSG_FIELD_HDR_LEN,
		    flen)) {
			*why = "field with a byte its kind does not allow";
			return -1;
		}
		if (tag == KEYTAG_COUNT)
			m->km_count = keymsg_get32(m->km_body + off +
			    KEYMSG_FIELD_HDR_LEN);
		else if (tag == KEYTAG_CODE)
			m->km_code = keymsg_get16(m->km_body + off +
			    KEYMSG_FIELD_HDR_LEN);
		else if (tag == KEYTAG_SEQ || tag == KEYTAG_TS)
			*(tag == KEYTAG_SEQ ? &m->km_seq : &m->km_ts) =
			    keymsg_get64(m->km_body + off + KEYMSG_FIELD_HDR_LEN);
		else if ((slot = keymsg_slot(m, tag)) != NULL &&
		    slot->v == NULL) {
			slot->v = m->km_body + off + KEYMSG_FIELD_HDR_LEN;
			slot->len = flen;
		}
		if (tag == KEYTAG_NAME)
			m->km_nnames++;
	}
	for (i = 0, r = t->ky_rules; i < KEYMSG_RULES_MAX && r->kr_tag != 0;
	    i++, r++)
		if (seen[i] < r->kr_min) {
			*why = "required field missing";
			return -1;
		}
	return 0;
}

int
keymsg_next_name(const struct keymsg *m, size_t *pos, struct keymsg_val *v)
{
	uint32_t flen;
	uint16_t tag;

	/* The body was checked by keymsg_decode(): its fields are well formed. */
	while (*pos + KEYMSG_FIELD_HDR_LEN <= m->km_bodylen) {
		tag = keymsg_get16(m->km_body + *pos);
		flen = keymsg_get32(m->km_body + *pos + 2);
		v->v = m->km_body + *pos + KEYMSG_FIELD_HDR_LEN;
		v->len = flen;
		*pos += KEYMSG_FIELD_HDR_LEN + flen;
		if (tag == KEYTAG_NAME)
			return 1;
	}
	return 0;
}

/*
 * Encoding.
 */

void
keymsg_buf_put(struct keymsg_buf *b, const void *d, size_t n)
{
	uint8_t *np;
	size_t cap;

	if (b->kb_failed)
		return;
	if (n > b->kb_cap - b->kb_len) {
		cap = b->kb_cap != 0 ? b->kb_cap : 1024;
		while (cap - b->kb_len < n) {
			if (cap > SIZE_MAX / 2) {
				b->kb_failed = 1;
				return;
			}
			cap *= 2;
		}
		/* Not realloc: the old buffer may hold a key, and is wiped. */
		if ((np = malloc(cap)) == NULL) {
			b->kb_failed = 1;
			return;
		}
		if (b->kb_len > 0)
			memcpy(np, b->kb_p, b->kb_len);
		if (b->kb_p != NULL)
			OPENSSL_clear_free(b->kb_p, b->kb_cap);
		b->kb_p = np;
		b->kb_cap = cap;
	}
	if (n > 0)
		memcpy(b->kb_p + b->kb_len, d, n);
	b->kb_len += n;
}

static void
keymsg_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
keymsg_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void
keymsg_put16(struct keymsg_buf *b, uint16_t v)
{
	uint8_t p[2];

	keymsg_be16(p, v);
	keymsg_buf_put(b, p, sizeof(p));
}

static void
keymsg_put32(struct keymsg_buf *b, uint32_t v)
{
	uint8_t p[4];

	keymsg_be32(p, v);
	keymsg_buf_put(b, p, sizeof(p));
}

void
keymsg_start(struct keymsg_buf *b, uint16_t type, uint32_t id)
{
	b->kb_start = b->kb_len;
	keymsg_put32(b, 0);	/* the length: keymsg_finish() */
	keymsg_put16(b, type);
	keymsg_put32(b, id);
}

void
keymsg_field(struct keymsg_buf *b, uint16_t tag, const void *v, size_t len)
{
	if (len > KEYMSG_BODY_MAX) {
		b->kb_failed = 1;
		return;
	}
	keymsg_put16(b, tag);
	keymsg_put32(b, (uint32_t)len);
	keymsg_buf_put(b, v, len);
}

void
keymsg_field_str(struct keymsg_buf *b, uint16_t tag, const char *s)
{
	keymsg_field(b, tag, s, strlen(s));
}

void
keymsg_field_u16(struct keymsg_buf *b, uint16_t tag, uint16_t v)
{
	uint8_t p[2];

	keymsg_be16(p, v);
	keymsg_field(b, tag, p, sizeof(p));
}

void
keymsg_field_u32(struct keymsg_buf *b, uint16_t tag, uint32_t v)
{
	uint8_t p[4];

	keymsg_be32(p, v);
	keymsg_field(b, tag, p, sizeof(p));
}

void
keymsg_field_u64(struct keymsg_buf *b, uint16_t tag, uint64_t v)
{
	uint8_t p[8];

	keymsg_be32(p, (uint32_t)(v >> 32));
	keymsg_be32(p + 4, (uint32_t)v);
	keymsg_field(b, tag, p, sizeof(p));
}

int
keymsg_finish(struct keymsg_buf *b)
{
	size_t blen;
	uint8_t *h;

	if (b->kb_failed || b->kb_len - b->kb_start < KEYMSG_HDR_LEN)
		return -1;
	blen = b->kb_len - b->kb_start - KEYMSG_HDR_LEN;
	h = b->kb_p + b->kb_start;
	if (blen > keymsg_body_max(keymsg_get16(h + 4))) {
		b->kb_failed = 1;
		return -1;
	}
	keymsg_be32(h, (uint32_t)blen);
	return 0;
}

void
keymsg_buf_free(struct keymsg_buf *b)
{
	if (b->kb_p != NULL)
		OPENSSL_clear_free(b->kb_p, b->kb_cap);
	memset(b, 0, sizeof(*b));
}

void
keymsg_err(struct keymsg_buf *b, uint32_t id, uint16_t code, const char *msg)
{
	char clean[KEYMSG_MESSAGE_MAX + 1];
	size_t i, n = 0;

	for (i = 0; msg[i] != '\0' && n < KEYMSG_MESSAGE_MAX; i++)
		if (msg[i] >= 0x20 && msg[i] < 0x7f)
			clean[n++] = msg[i];
	clean[n] = '\0';
	keymsg_start(b, KEYMSG_ERR, id);
	keymsg_field_u16(b, KEYTAG_CODE, code);
	keymsg_field_str(b, KEYTAG_MESSAGE, clean);
	(void)keymsg_finish(b);
}
