/*
 * audit/audit_verify.c: the verifier.  Checks each line on its own (the hash over its
 * exact bytes, then its JSON, and the fields of the writer's own records), then
 * against the chain (seq one more than the last, prev equal to the last hash),
 * carrying the chain from one file to the next; and, with a public key, every
 * checkpoint's signature and its link to the signature before.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "audit.h"
#include "audit_int.h"

#define SEP_LEN		(sizeof(AUDIT_HASH_SEP) - 1)
#define END_LEN		(sizeof(AUDIT_HASH_END) - 1)
#define SUFFIX_LEN	(SEP_LEN + AUDIT_HASH_HEX + END_LEN)

int
audit_hash_is_hex(const char *s)
{
	size_t i;

	for (i = 0; i < AUDIT_HASH_HEX; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

int
audit_hash_compute(const char *b, size_t blen, const unsigned char *key,
    size_t keylen, char hex[AUDIT_HASH_HEX + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	OSSL_PARAM params[2];
	EVP_MD_CTX *md_ctx = NULL;
	EVP_MAC_CTX *mac_ctx = NULL;
	EVP_MAC *mac = NULL;
	size_t mdlen = 0, i;
	unsigned int dlen = 0;
	int rv = -1;

	/* Both over two pieces, so the line needs no copy with '}' appended. */
	if (keylen > 0) {
		params[0] = OSSL_PARAM_construct_utf8_string("digest",
		    (char *)(uintptr_t)"SHA256", 0);
		params[1] = OSSL_PARAM_construct_end();
		if ((mac = EVP_MAC_fetch(NULL, "HMAC", NULL)) == NULL ||
		    (mac_ctx = EVP_MAC_CTX_new(mac)) == NULL ||
		    EVP_MAC_init(mac_ctx, key, keylen, params) != 1 ||
		    EVP_MAC_update(mac_ctx, (const unsigned char *)b, blen) != 1 ||
		    EVP_MAC_update(mac_ctx, (const unsigned char *)"}", 1) != 1 ||
		    EVP_MAC_final(mac_ctx, md, &mdlen, sizeof(md)) != 1)
			goto out;
	} else {
		if ((md_ctx = EVP_MD_CTX_new()) == NULL ||
		    EVP_DigestInit_ex(md_ctx, EVP_sha256(), NULL) != 1 ||
		    EVP_DigestUpdate(md_ctx, b, blen) != 1 ||
		    EVP_DigestUpdate(md_ctx, "}", 1) != 1 ||
		    EVP_DigestFinal_ex(md_ctx, md, &dlen) != 1)
			goto out;
		mdlen = dlen;
	}
	if (mdlen * 2 != AUDIT_HASH_HEX)
		goto out;
	for (i = 0; i < mdlen; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0xf];
	}
	hex[AUDIT_HASH_HEX] = '\0';
	rv = 0;
 out:
	EVP_MD_CTX_free(md_ctx);
	EVP_MAC_CTX_free(mac_ctx);
	EVP_MAC_free(mac);
	return rv;
}

static const char *
line_str(json_t *o, const char *key)
{
	json_t *v;

	if ((v = json_object_get(o, key)) == NULL || !json_is_string(v))
		return NULL;
	return json_string_value(v);
}

/* The integer field key of o into *v: 0, or -1 when it is missing or not one. */
static int
line_int(json_t *o, const char *key, long long *v)
{
	json_t *j;

	if ((j = json_object_get(o, key)) == NULL || !json_is_integer(j))
		return -1;
	*v = (long long)json_integer_value(j);
	return 0;
}

/*
 * The writer's own records, beyond what every record has: a checkpoint names the
 * record before it (last_seq, head: this record's seq - 1 and prev) and says why
 * it is there, and is either signed (link_seq, link_head, key, sig) or says why not
 * (unsigned); a rotate record names the previous file's last record the same way.
 * Fills al.  0, or -1 with why.
 */
static int
line_writer_fields(json_t *o, const char *event, struct audit_line *al, char *why,
    size_t whylen)
{
	const char *at, *head, *lh, *key, *sig, *uns, *ts;
	long long first;

	if (strcmp(event, "checkpoint") != 0 && strcmp(event, "rotate") != 0)
		return 0;
	al->al_kind = event[0] == 'c' ? AL_CHECKPOINT : AL_ROTATE;
	if (line_int(o, "last_seq", &al->al_last_seq) == -1 ||
	    al->al_last_seq != al->al_seq - 1) {
		snprintf(why, whylen, "%s: \"last_seq\" is not the seq before it",
		    event);
		return -1;
	}
	if ((head = line_str(o, "head")) == NULL ||
	    strcmp(head, al->al_prev) != 0) {
		snprintf(why, whylen, "%s: \"head\" is not the previous record's "
		    "hash (prev)", event);
		return -1;
	}
	if (al->al_kind == AL_ROTATE) {
		if ((at = line_str(o, "source")) == NULL ||
		    !audit_source_is_valid(at)) {
			snprintf(why, whylen, "rotate: no \"source\" (max_bytes or "
			    "sighup)");
			return -1;
		}
		return 0;
	}
	if ((at = line_str(o, "at")) == NULL || !audit_at_is_valid(at)) {
		snprintf(why, whylen, "checkpoint: no \"at\" (start, count, "
		    "max_bytes, sighup or shutdown)");
		return -1;
	}
	snprintf(al->al_at, sizeof(al->al_at), "%s", at);
	if (al->al_last_seq < 1) {
		snprintf(why, whylen, "checkpoint: of an empty chain");
		return -1;
	}
	if (json_object_get(o, "first_seq") != NULL &&
	    (line_int(o, "first_seq", &first) == -1 || first < 1 ||
	    first > al->al_seq)) {
		snprintf(why, whylen, "checkpoint: \"first_seq\" is not a seq of "
		    "this file");
		return -1;
	}
	ts = line_str(o, "ts");
	if (strlen(ts) >= sizeof(al->al_ts)) {
		snprintf(why, whylen, "checkpoint: \"ts\" too long");
		return -1;
	}
	memcpy(al->al_ts, ts, strlen(ts) + 1);
	key = line_str(o, "key");
	sig = line_str(o, "sig");
	uns = line_str(o, "unsigned");
	if (uns != NULL && key == NULL && sig == NULL &&
	    json_object_get(o, "link_seq") == NULL &&
	    json_object_get(o, "link_head") == NULL) {
		snprintf(al->al_unsigned, sizeof(al->al_unsigned), "%s", uns);
		return 0;
	}
	if (uns != NULL || key == NULL || !audit_is_hex(key, AUDIT_KEYID_HEX) ||
	    sig == NULL || !audit_is_hex(sig, AUDIT_SIG_HEX) ||
	    line_int(o, "link_seq", &al->al_link_seq) == -1 ||
	    al->al_link_seq < 0 || al->al_link_seq > al->al_last_seq ||
	    (lh = line_str(o, "link_head")) == NULL ||
	    !audit_is_hex(lh, AUDIT_HASH_HEX) ||
	    (al->al_link_seq == 0 && strcmp(lh, AUDIT_ZERO_HASH) != 0)) {
		snprintf(why, whylen, "checkpoint: neither signed (\"key\", "
		    "\"sig\", \"link_seq\", \"link_head\") nor \"unsigned\"");
		return -1;
	}
	al->al_signed = 1;
	memcpy(al->al_key, key, sizeof(al->al_key));
	memcpy(al->al_sig, sig, sizeof(al->al_sig));
	memcpy(al->al_link_head, lh, sizeof(al->al_link_head));
	return 0;
}

int
audit_line_parse(const char *line, size_t len, const unsigned char *key,
    size_t keylen, struct audit_line *al, char *why, size_t whylen)
{
	char hex[AUDIT_HASH_HEX + 1];
	const char *suffix, *prev, *hash, *event;
	json_error_t jerr;
	json_t *o = NULL, *seq;
	size_t blen;
	int rv = -1;

	if (len > AUDIT_LINE_MAX) {
		snprintf(why, whylen, "line longer than %d bytes", AUDIT_LINE_MAX);
		goto out;
	}
	if (len < 1 + SUFFIX_LEN || line[0] != '{') {
		snprintf(why, whylen, "not a record (no JSON object with a hash)");
		goto out;
	}
	blen = len - SUFFIX_LEN;
	suffix = line + blen;
	if (memcmp(suffix, AUDIT_HASH_SEP, SEP_LEN) != 0 ||
	    !audit_hash_is_hex(suffix + SEP_LEN) ||
	    memcmp(suffix + SEP_LEN + AUDIT_HASH_HEX, AUDIT_HASH_END,
	    END_LEN) != 0) {
		snprintf(why, whylen, "not a record (the line does not end with "
		    "\"hash\":\"<64 lowercase hex>\"})");
		goto out;
	}
	if (audit_hash_compute(line, blen, key, keylen, hex) == -1) {
		snprintf(why, whylen, "cannot compute the hash (OpenSSL)");
		goto out;
	}
	/* Constant time: with a key, the hash is a MAC. */
	if (CRYPTO_memcmp(hex, suffix + SEP_LEN, AUDIT_HASH_HEX) != 0) {
		snprintf(why, whylen, "hash mismatch: the line was changed%s",
		    keylen > 0 ? " (or the key is wrong)" :
		    " (or the log is keyed: give --key-file)");
		goto out;
	}
	/*
	 * The hash is good, so these bytes are what the writer wrote, unless the
	 * writer is not ours: still check the JSON before trusting seq and prev.
	 */
	if ((o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr)) == NULL) {
		snprintf(why, whylen, "bad JSON at column %d: %s", jerr.column,
		    jerr.text);
		goto out;
	}
	if (!json_is_object(o)) {
		snprintf(why, whylen, "bad JSON: not an object");
		goto out;
	}
	seq = json_object_get(o, "seq");
	if (seq == NULL || !json_is_integer(seq) || json_integer_value(seq) < 1) {
		snprintf(why, whylen, "no \"seq\" (a positive integer)");
		goto out;
	}
	if ((prev = line_str(o, "prev")) == NULL || strlen(prev) != AUDIT_HASH_HEX ||
	    !audit_hash_is_hex(prev)) {
		snprintf(why, whylen, "no \"prev\" (64 lowercase hex)");
		goto out;
	}
	if ((hash = line_str(o, "hash")) == NULL ||
	    strncmp(hash, hex, sizeof(hex)) != 0) {
		snprintf(why, whylen, "\"hash\" is not the hash at the line's end");
		goto out;
	}
	if (line_str(o, "ts") == NULL || (event = line_str(o, "event")) == NULL) {
		snprintf(why, whylen, "no \"ts\" or \"event\"");
		goto out;
	}
	memset(al, 0, sizeof(*al));
	al->al_seq = json_integer_value(seq);
	memcpy(al->al_prev, prev, sizeof(al->al_prev));
	memcpy(al->al_hash, hex, sizeof(al->al_hash));
	if (line_writer_fields(o, event, al, why, whylen) == -1)
		goto out;
	rv = 0;
 out:
	json_decref(o);
	return rv;
}

/* Tells the caller something worth saying about the line (not an error). */
static void __attribute__((format(printf, 2, 3)))
chain_note(struct audit_chain *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (c->ac_note == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->ac_note(c->ac_note_arg, msg);
}

/*
 * A checkpoint, once the chain took it: with a key, its signature and its link.
 * The link is the head its signer signed before: the previous signed checkpoint's
 * (a continuous series), or where a new signer began: its own head (a signed
 * "start"), the head of the unsigned "start" before it, or nothing (0, a chain
 * that begins in these files).  A link to anything else means a signed checkpoint
 * is missing or was re-made over other records.  0, or -1 with why.
 */
static int
chain_checkpoint(struct audit_chain *c, const struct audit_line *al, char *why,
    size_t whylen)
{
	char canon[AUDIT_CANON_MAX];
	size_t clen;
	int start = strcmp(al->al_at, "start") == 0;

	c->ac_cp++;
	if (start) {
		c->ac_restarts++;
		/* The run before it did not end with its checkpoint. */
		if (c->ac_started && !c->ac_last_is_cp && c->ac_cp > 1)
			chain_note(c, "airlockd restarted after seq %lld without its "
			    "final checkpoint (a crash or a kill, or records cut "
			    "off there): seq %lld..%lld were signed only at the "
			    "restart", al->al_last_seq, c->ac_last_cp_seq + 1,
			    al->al_last_seq);
	}
	if (!al->al_signed) {
		c->ac_cp_unsigned++;
		chain_note(c, "checkpoint at seq %lld (%s) is not signed: %s",
		    al->al_seq, al->al_at, al->al_unsigned);
		if (start) {
			c->ac_start_last = al->al_last_seq;
			memcpy(c->ac_start_head, al->al_prev,
			    sizeof(c->ac_start_head));
		}
		return 0;
	}
	/* Without the key the signature and its link are only data. */
	if (c->ac_pubkey == NULL)
		goto taken;
	if (strcmp(al->al_key, audit_pubkey_id(c->ac_pubkey)) != 0) {
		snprintf(why, whylen, "checkpoint signed with another key (key id "
		    "%s; the public key given is %s)", al->al_key,
		    audit_pubkey_id(c->ac_pubkey));
		return -1;
	}
	if ((clen = audit_checkpoint_canon(canon, sizeof(canon), al->al_key,
	    al->al_last_seq, al->al_prev, al->al_ts, al->al_link_seq,
	    al->al_link_head)) == 0 ||
	    !audit_pubkey_verify(c->ac_pubkey, canon, clen, al->al_sig)) {
		snprintf(why, whylen, "bad signature: the checkpoint, or the chain "
		    "it signs, was changed");
		return -1;
	}
	if (c->ac_signed > 0 && al->al_link_seq == c->ac_signed_last &&
	    strcmp(al->al_link_head, c->ac_signed_head) == 0)
		;	/* the series goes on */
	else if (start && al->al_link_seq == al->al_last_seq &&
	    strcmp(al->al_link_head, al->al_prev) == 0)
		;	/* a new signer's first: its own head */
	else if (c->ac_start_last > 0 && al->al_link_seq == c->ac_start_last &&
	    strcmp(al->al_link_head, c->ac_start_head) == 0)
		;	/* ... whose start checkpoint it could not sign */
	else if (c->ac_signed == 0 && al->al_link_seq == 0 &&
	    c->ac_first_seq == 1)
		;	/* the first signature of a chain that begins here */
	else if (c->ac_signed == 0 && al->al_link_seq < c->ac_first_seq)
		chain_note(c, "checkpoint at seq %lld follows a signature of seq "
		    "%lld, before the first record given: not checked",
		    al->al_seq, al->al_link_seq);
	else {
		if (c->ac_signed > 0)
			snprintf(why, whylen, "checkpoint follows a signature of seq "
			    "%lld, but the previous signed checkpoint here is of "
			    "seq %lld: a signed checkpoint is missing, or the "
			    "records before it were rewritten", al->al_link_seq,
			    c->ac_signed_last);
		else
			snprintf(why, whylen, "checkpoint follows a signature of seq "
			    "%lld that is not in the log: a signed checkpoint is "
			    "missing, or the records before it were rewritten",
			    al->al_link_seq);
		return -1;
	}
 taken:
	c->ac_signed++;
	c->ac_signed_cp_seq = al->al_seq;
	c->ac_signed_last = al->al_last_seq;
	memcpy(c->ac_signed_head, al->al_prev, sizeof(c->ac_signed_head));
	c->ac_signed_lineno = c->ac_lineno;
	c->ac_signed_fileno = c->ac_fileno;
	c->ac_start_last = 0;
	return 0;
}

void
audit_chain_init(struct audit_chain *c, const unsigned char *key, size_t keylen)
{
	memset(c, 0, sizeof(*c));
	c->ac_key = key;
	c->ac_keylen = key != NULL ? keylen : 0;
}

int
audit_chain_add(struct audit_chain *c, const char *line, size_t len, char *why,
    size_t whylen)
{
	struct audit_line al;
	int zero;

	if (audit_line_parse(line, len, c->ac_key, c->ac_keylen, &al, why,
	    whylen) == -1)
		return -1;
	zero = strcmp(al.al_prev, AUDIT_ZERO_HASH) == 0;
	if (!c->ac_started) {
		if (zero && al.al_seq != 1) {
			snprintf(why, whylen, "seq %lld starts a chain (prev is "
			    "zero); a chain starts at seq 1", al.al_seq);
			return -1;
		}
		if (!zero && al.al_seq == 1) {
			snprintf(why, whylen, "seq 1 with a non-zero prev");
			return -1;
		}
		c->ac_first_seq = al.al_seq;
		memcpy(c->ac_first_prev, al.al_prev, sizeof(c->ac_first_prev));
	} else {
		if (al.al_seq <= c->ac_seq) {
			snprintf(why, whylen, "seq %lld after seq %lld: a record "
			    "repeated or out of order", al.al_seq, c->ac_seq);
			return -1;
		}
		if (al.al_seq != c->ac_seq + 1) {
			/* One line cannot tell a cut from a swap: say both. */
			snprintf(why, whylen, "seq gap: expected %lld, got %lld "
			    "(%s)", c->ac_seq + 1, al.al_seq, c->ac_file_first ?
			    "a file of the chain is missing before this one, or "
			    "records were cut off the previous file" :
			    "records missing here, or out of order");
			return -1;
		}
		if (strcmp(al.al_prev, c->ac_head) != 0) {
			snprintf(why, whylen, "prev does not match the previous "
			    "record's hash (a record was replaced, inserted or "
			    "reordered)");
			return -1;
		}
	}
	if (al.al_kind == AL_CHECKPOINT && chain_checkpoint(c, &al, why,
	    whylen) == -1)
		return -1;
	if (c->ac_want_hash != NULL) {
		if (c->ac_want_seq > 0 && al.al_seq == c->ac_want_seq &&
		    strcmp(al.al_hash, c->ac_want_hash) != 0) {
			snprintf(why, whylen, "seq %lld has hash %s, not the "
			    "anchored %s", al.al_seq, al.al_hash, c->ac_want_hash);
			return -1;
		}
		if (strcmp(al.al_hash, c->ac_want_hash) == 0) {
			c->ac_anchor_found = 1;
			c->ac_anchor_seq = al.al_seq;
		}
	}
	c->ac_started = 1;
	c->ac_file_first = 0;
	c->ac_last_is_cp = al.al_kind == AL_CHECKPOINT;
	if (c->ac_last_is_cp)
		c->ac_last_cp_seq = al.al_seq;
	c->ac_seq = al.al_seq;
	memcpy(c->ac_head, al.al_hash, sizeof(c->ac_head));
	memcpy(c->ac_prev, al.al_prev, sizeof(c->ac_prev));
	return 0;
}

int
audit_verify_file(const char *path, struct audit_chain *c,
    struct audit_file_result *res, long long *bad_line, char *why, size_t whylen)
{
	struct audit_reader *r = NULL;
	const char *line;
	size_t len;
	long long lineno = 0;
	int complete, n, rv = -1;

	memset(res, 0, sizeof(*res));
	*bad_line = 0;
	if ((r = audit_reader_open(path)) == NULL) {
		snprintf(why, whylen, "%s", strerror(errno));
		goto out;
	}
	c->ac_file_first = 1;
	while ((n = audit_reader_next(r, &line, &len, &complete)) == 1) {
		lineno++;
		*bad_line = lineno;
		c->ac_lineno = lineno;
		if (!complete) {
			snprintf(why, whylen, "torn last line (no newline at the "
			    "end: an interrupted write or a cut file)");
			goto out;
		}
		if (audit_chain_add(c, line, len, why, whylen) == -1)
			goto out;
		if (res->afr_records++ == 0) {
			res->afr_first_seq = c->ac_seq;
			memcpy(res->afr_first_prev, c->ac_prev,
			    sizeof(res->afr_first_prev));
		}
		res->afr_last_seq = c->ac_seq;
		memcpy(res->afr_head, c->ac_head, sizeof(res->afr_head));
	}
	if (n == -1) {
		*bad_line = lineno + 1;
		snprintf(why, whylen, "%s", errno == E2BIG ?
		    "line longer than 1 MiB" : strerror(errno));
		goto out;
	}
	*bad_line = 0;
	rv = 0;
 out:
	audit_reader_close(r);
	return rv;
}

int
audit_verify(const char *path, long long *bad_line, char *why, size_t whylen)
{
	struct audit_chain c;
	struct audit_file_result res;

	audit_chain_init(&c, NULL, 0);
	return audit_verify_file(path, &c, &res, bad_line, why, whylen);
}

int
audit_verify_files(char *const *paths, int n, const unsigned char *key,
    size_t keylen, int *bad_file, long long *bad_line, char *why, size_t whylen)
{
	struct audit_file_result res;
	struct audit_chain c;
	int i;

	audit_chain_init(&c, keylen > 0 ? key : NULL, keylen);
	for (i = 0; i < n; i++)
		if (audit_verify_file(paths[i], &c, &res, bad_line, why,
		    whylen) == -1) {
			*bad_file = i;
			return -1;
		}
	return 0;
}
