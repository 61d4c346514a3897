/*
 * tests/fuzz/fuzz_keymsg.c: the keys process's messages (proxy/proxy_keymsg.c) and
 * what keyd makes of them (keyd_handle(), proxy/proxy_keyd.c), over any bytes.
 *
 * Input: records, each one byte and one message as it would come on a channel:
 *	byte	bits 0-1 the channel: 0 the reader's, 1 control, 2 a worker's, 3 none
 *		(the decoder only); bits 2-3 which of four worker channels
 *	message	the 10-byte header, then as many body bytes as its length says (or
 *		what is left of the input: a truncated message)
 * Each message is decoded as keyd's loop does (the header first: type known, length
 * within its type's maximum, a type the channel takes; then the whole message,
 * strictly); one that decodes is encoded again field by field and must decode to the
 * same values.  A message refused, on its channel or by keyd_handle(), closes that
 * channel: its later records are skipped, the others go on.
 *
 * keyd starts every input with the set LLVMFuzzerInitialize() made: sandbox "sba"
 * (policy hash "a" x 64) inspecting api.a.test and *.files.a.test, "sbb" ("b" x 64)
 * inspecting api.b.test, each with its own CA, constrained to those names and one
 * more (ca-only.a.test, ca-only.b.test: keyd's own check must refuse those).  The fuzzer cannot
 * forge a CA key that matches a certificate, so any set it loads (LOAD_KEEP, empty
 * sets) holds those two entries at most.  Every CERT keyd answers is checked
 * against that fixed table, not against keyd's own state: the request's (sandbox,
 * hash) is one of the two, the leaf's one name is the request's name normalised and
 * matches one of that sandbox's patterns (hostname_match, as the policies use them),
 * and it verifies under that sandbox's CA for that name.  Anything else aborts.
 *
 * keyd also starts every input with the audit signing key LLVMFuzzerInitialize()
 * made (SIGN_KEY, the chain empty), so a SIGN_KEY the fuzzer sends must be refused,
 * and every SIGNATURE keyd answers is checked against the harness's own record of
 * what it signed before in this input (not keyd's state): the request was a
 * SIGN_CHECKPOINT of a seq greater than the last one signed, the link is that last
 * one (seq and head; 0 and zeros at first), the key id is the key's, and the
 * signature verifies with the public key over the canonical form
 * (audit_checkpoint_canon()) of the request's seq, head and time.
 * And no leak: keyd and its set are freed after each input.
 */
#include <err.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "../../proxy/proxy_keyd.h"
#include "../../proxy/proxy_keymsg.h"
#include "audit.h"
#include "ca.h"
#include "hostname.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FZ_WORKERS	4

/*
 * Each CA is constrained to one name more than keyd is told the policy inspects
 * (ca-only.*): so the name check of keyd's own is tested, not only the CA's.
 */
static const struct fz_sb {
	const char	*sb;
	char		 hash_c;	/* the hash is this character 64 times */
	const char	*names[4];	/* what keyd gets; then the CA's extra */
	const char	*ca_extra;
} fz_sbs[2] = {
	{ "sba", 'a', { "api.a.test", "*.files.a.test", NULL }, "ca-only.a.test" },
	{ "sbb", 'b', { "api.b.test", NULL }, "ca-only.b.test" },
};

static X509 *fz_cacert[2];
static struct keymsg_buf fz_load;	/* the initial set: BEGIN, CA, CA, END, SIGN_KEY */
static struct audit_pubkey *fz_pub;	/* the signing key's public half */
/* What keyd signed last in this input (the oracle's own record). */
static long long fz_signed_seq;
static char fz_signed_head[KEYMSG_HASH_LEN + 1];

/* The audit signing key: its SIGN_KEY (an empty chain) into fz_load, fz_pub. */
static void
fz_sign_key(void)
{
	PKCS8_PRIV_KEY_INFO *p8;
	unsigned char *der = NULL;
	EVP_PKEY *k;
	char err[256], *pem;
	BIO *b;
	long n;
	int dl;

	if ((k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519")) == NULL ||
	    (p8 = EVP_PKEY2PKCS8(k)) == NULL ||
	    (dl = i2d_PKCS8_PRIV_KEY_INFO(p8, &der)) <= 0 ||
	    (b = BIO_new(BIO_s_mem())) == NULL || PEM_write_bio_PUBKEY(b, k) != 1 ||
	    (n = BIO_get_mem_data(b, &pem)) <= 0 ||
	    (fz_pub = audit_pubkey_from_pem(pem, (size_t)n, err,
	    sizeof(err))) == NULL)
		errx(1, "signing key");
	keymsg_start(&fz_load, KEYMSG_SIGN_KEY, 1);
	keymsg_field(&fz_load, KEYTAG_KEY, der, (size_t)dl);
	keymsg_field_u64(&fz_load, KEYTAG_SEQ, 0);
	keymsg_field_str(&fz_load, KEYTAG_HASH, AUDIT_ZERO_HASH);
	if (keymsg_finish(&fz_load) == -1)
		errx(1, "SIGN_KEY: encoding");
	OPENSSL_clear_free(der, (size_t)dl);
	PKCS8_PRIV_KEY_INFO_free(p8);
	BIO_free(b);
	EVP_PKEY_free(k);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char dir[] = "/tmp/fuzz_keymsg.XXXXXX", msg[512], hash[65], path[256];
	uint8_t *key, *cert;
	size_t klen, clen, n, j;
	struct ca *ca;
	int reissued, i;

	if (mkdtemp(dir) == NULL)
		err(1, "mkdtemp");
	keymsg_start(&fz_load, KEYMSG_LOAD_BEGIN, 1);
	(void)keymsg_finish(&fz_load);
	for (i = 0; i < 2; i++) {
		const char *canames[4];

		for (n = 0; fz_sbs[i].names[n] != NULL; n++)
			canames[n] = fz_sbs[i].names[n];
		canames[n] = fz_sbs[i].ca_extra;
		if (ca_sandbox_sync(dir, fz_sbs[i].sb, canames, n + 1,
		    &reissued, msg, sizeof(msg)) != CA_OK ||
		    (ca = ca_load(dir, fz_sbs[i].sb, NULL, msg, sizeof(msg))) ==
		    NULL)
			errx(1, "CA: %s", msg);
		if (ca_export_der(ca, &key, &klen, &cert, &clen) == -1)
			errx(1, "CA: export");
		fz_cacert[i] = ca_cert(ca);
		X509_up_ref(fz_cacert[i]);
		ca_free(ca);
		memset(hash, fz_sbs[i].hash_c, 64);
		hash[64] = '\0';
		keymsg_start(&fz_load, KEYMSG_LOAD_CA, 1);
		keymsg_field_str(&fz_load, KEYTAG_SANDBOX, fz_sbs[i].sb);
		keymsg_field_str(&fz_load, KEYTAG_HASH, hash);
		keymsg_field(&fz_load, KEYTAG_CERT, cert, clen);
		keymsg_field(&fz_load, KEYTAG_KEY, key, klen);
		for (j = 0; j < n; j++)
			keymsg_field_str(&fz_load, KEYTAG_NAME, fz_sbs[i].names[j]);
		(void)keymsg_finish(&fz_load);
		OPENSSL_clear_free(key, klen);
		OPENSSL_free(cert);
	}
	keymsg_start(&fz_load, KEYMSG_LOAD_END, 1);
	keymsg_field_u32(&fz_load, KEYTAG_COUNT, 2);
	if (keymsg_finish(&fz_load) == -1)
		errx(1, "initial set: encoding");
	fz_sign_key();
	/* The files are not needed again: the set is in fz_load. */
	for (i = 0; i < 2; i++)
		for (n = 0; n < 2; n++) {
			snprintf(path, sizeof(path), "%s/ca/%s.%s", dir,
			    fz_sbs[i].sb, n == 0 ? "key" : "pem");
			(void)unlink(path);
		}
	snprintf(path, sizeof(path), "%s/ca", dir);
	(void)rmdir(path);
	(void)rmdir(dir);
	return 0;
}

/* The message's values, encoded again in a fixed order. */
static void
fz_reencode(const struct keymsg *m, struct keymsg_buf *b)
{
	struct keymsg_val v;
	size_t pos = 0;

	keymsg_start(b, m->km_type, m->km_id);
	if (m->km_sandbox.v != NULL)
		keymsg_field(b, KEYTAG_SANDBOX, m->km_sandbox.v, m->km_sandbox.len);
	if (m->km_hash.v != NULL)
		keymsg_field(b, KEYTAG_HASH, m->km_hash.v, m->km_hash.len);
	if (m->km_cert.v != NULL)
		keymsg_field(b, KEYTAG_CERT, m->km_cert.v, m->km_cert.len);
	if (m->km_key.v != NULL)
		keymsg_field(b, KEYTAG_KEY, m->km_key.v, m->km_key.len);
	while (keymsg_next_name(m, &pos, &v))
		keymsg_field(b, KEYTAG_NAME, v.v, v.len);
	if (m->km_spki.v != NULL)
		keymsg_field(b, KEYTAG_SPKI, m->km_spki.v, m->km_spki.len);
	if (m->km_type == KEYMSG_LOAD_END)
		keymsg_field_u32(b, KEYTAG_COUNT, m->km_count);
	if (m->km_label.v != NULL)
		keymsg_field(b, KEYTAG_LABEL, m->km_label.v, m->km_label.len);
	if (m->km_type == KEYMSG_ERR) {
		keymsg_field_u16(b, KEYTAG_CODE, m->km_code);
		keymsg_field(b, KEYTAG_MESSAGE, m->km_message.v,
		    m->km_message.len);
	}
	if (m->km_type == KEYMSG_SIGN_KEY || m->km_type == KEYMSG_SIGN_CHECKPOINT ||
	    m->km_type == KEYMSG_SIGNATURE)
		keymsg_field_u64(b, KEYTAG_SEQ, m->km_seq);
	if (m->km_type == KEYMSG_SIGN_CHECKPOINT)
		keymsg_field_u64(b, KEYTAG_TS, m->km_ts);
	if (m->km_sig.v != NULL)
		keymsg_field(b, KEYTAG_SIG, m->km_sig.v, m->km_sig.len);
	if (m->km_keyid.v != NULL)
		keymsg_field(b, KEYTAG_KEYID, m->km_keyid.v, m->km_keyid.len);
	if (keymsg_finish(b) == -1)
		abort();
}

static int
fz_val_eq(const struct keymsg_val *a, const struct keymsg_val *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->v, b->v, a->len) == 0);
}

static void
fz_roundtrip(const struct keymsg *m)
{
	struct keymsg_buf b = { 0 };
	struct keymsg m2;
	struct keymsg_val v1, v2;
	size_t p1 = 0, p2 = 0;
	const char *why;

	fz_reencode(m, &b);
	if (keymsg_decode(b.kb_p, b.kb_len, &m2, &why) == -1)
		abort();
	if (m2.km_type != m->km_type || m2.km_id != m->km_id ||
	    m2.km_count != m->km_count || m2.km_code != m->km_code ||
	    m2.km_seq != m->km_seq || m2.km_ts != m->km_ts ||
	    m2.km_nnames != m->km_nnames ||
	    !fz_val_eq(&m2.km_sig, &m->km_sig) ||
	    !fz_val_eq(&m2.km_keyid, &m->km_keyid) ||
	    !fz_val_eq(&m2.km_sandbox, &m->km_sandbox) ||
	    !fz_val_eq(&m2.km_hash, &m->km_hash) ||
	    !fz_val_eq(&m2.km_cert, &m->km_cert) ||
	    !fz_val_eq(&m2.km_key, &m->km_key) ||
	    !fz_val_eq(&m2.km_spki, &m->km_spki) ||
	    !fz_val_eq(&m2.km_label, &m->km_label) ||
	    !fz_val_eq(&m2.km_message, &m->km_message))
		abort();
	while (keymsg_next_name(m, &p1, &v1)) {
		if (!keymsg_next_name(&m2, &p2, &v2) || !fz_val_eq(&v1, &v2))
			abort();
	}
	keymsg_buf_free(&b);
}

/* keyd answered req with a certificate: was it allowed to?  Aborts if not. */
static void
fz_check_cert(const struct keymsg *req, const uint8_t *reply, size_t len)
{
	char sb[KEYMSG_SANDBOX_MAX + 1], name[HOSTNAME_MAX + 2];
	const unsigned char *p;
	struct keymsg r;
	const char *why;
	X509 *x;
	size_t i, k;

	if (req->km_type != KEYMSG_MINT ||
	    keymsg_decode(reply, len, &r, &why) == -1 || r.km_id != req->km_id)
		abort();
	memcpy(sb, req->km_sandbox.v, req->km_sandbox.len);
	sb[req->km_sandbox.len] = '\0';
	for (i = 0; i < 2; i++)
		if (strcmp(sb, fz_sbs[i].sb) == 0)
			break;
	if (i == 2)
		abort();	/* a sandbox keyd was never loaded with */
	for (k = 0; k < KEYMSG_HASH_LEN; k++)
		if (req->km_hash.v[k] != (uint8_t)fz_sbs[i].hash_c)
			abort();	/* not the policy generation loaded */
	memcpy(name, req->km_name.v, req->km_name.len);
	name[req->km_name.len] = '\0';
	if (hostname_normalize(name, strlen(name), name) != HOSTNAME_OK)
		abort();
	for (k = 0; fz_sbs[i].names[k] != NULL; k++)
		if (hostname_match(fz_sbs[i].names[k], name))
			break;
	if (fz_sbs[i].names[k] == NULL)
		abort();	/* a name the sandbox does not inspect */
	p = r.km_cert.v;
	if ((x = d2i_X509(NULL, &p, (long)r.km_cert.len)) == NULL ||
	    X509_verify(x, X509_get0_pubkey(fz_cacert[i])) != 1 ||
	    X509_check_host(x, name, strlen(name), X509_CHECK_FLAG_NO_WILDCARDS,
	    NULL) != 1)
		abort();
	X509_free(x);
}

/* keyd answered req with a signature: was it allowed to, and is it good? */
static void
fz_check_sig(const struct keymsg *req, const uint8_t *reply, size_t len)
{
	char head[KEYMSG_HASH_LEN + 1], lhead[KEYMSG_HASH_LEN + 1], ts[32];
	char sig[KEYMSG_SIG_HEX + 1], key[KEYMSG_KEYID_HEX + 1];
	char canon[AUDIT_CANON_MAX];
	struct keymsg r;
	const char *why;
	size_t n;

	if (req->km_type != KEYMSG_SIGN_CHECKPOINT ||
	    keymsg_decode(reply, len, &r, &why) == -1 || r.km_id != req->km_id ||
	    req->km_seq > (uint64_t)LLONG_MAX ||
	    (long long)req->km_seq <= fz_signed_seq)
		abort();	/* not a request to sign, or not after the last */
	memcpy(head, req->km_hash.v, KEYMSG_HASH_LEN);
	head[KEYMSG_HASH_LEN] = '\0';
	memcpy(lhead, r.km_hash.v, KEYMSG_HASH_LEN);
	lhead[KEYMSG_HASH_LEN] = '\0';
	memcpy(sig, r.km_sig.v, KEYMSG_SIG_HEX);
	sig[KEYMSG_SIG_HEX] = '\0';
	memcpy(key, r.km_keyid.v, KEYMSG_KEYID_HEX);
	key[KEYMSG_KEYID_HEX] = '\0';
	if ((long long)r.km_seq != fz_signed_seq ||
	    strcmp(lhead, fz_signed_head) != 0 ||
	    strcmp(key, audit_pubkey_id(fz_pub)) != 0)
		abort();	/* a link to anything but the last signature */
	audit_time_format((long long)req->km_ts, ts, sizeof(ts));
	if ((n = audit_checkpoint_canon(canon, sizeof(canon), key,
	    (long long)req->km_seq, head, ts, fz_signed_seq, fz_signed_head)) == 0 ||
	    !audit_pubkey_verify(fz_pub, canon, n, sig))
		abort();
	fz_signed_seq = (long long)req->km_seq;
	memcpy(fz_signed_head, head, sizeof(fz_signed_head));
}

/* The initial set into a new keyd. */
static struct keyd *
fz_keyd(void)
{
	struct keymsg_buf reply = { 0 };
	struct keymsg m;
	struct keyd *kd;
	const char *why;
	uint32_t len;
	size_t off;

	if ((kd = keyd_new()) == NULL)
		abort();
	for (off = 0; off < fz_load.kb_len; off += KEYMSG_HDR_LEN + len) {
		len = (uint32_t)fz_load.kb_p[off] << 24 |
		    (uint32_t)fz_load.kb_p[off + 1] << 16 |
		    (uint32_t)fz_load.kb_p[off + 2] << 8 | fz_load.kb_p[off + 3];
		if (keymsg_decode(fz_load.kb_p + off, KEYMSG_HDR_LEN + len, &m,
		    &why) == -1 || keyd_handle(kd, KEYD_CHAN_READER, &m, &reply,
		    &why) == KEYD_CLOSE)
			abort();
	}
	if (keyd_count(kd) != 2 || !keyd_signing(kd))
		abort();
	keymsg_buf_free(&reply);
	fz_signed_seq = 0;
	memcpy(fz_signed_head, AUDIT_ZERO_HASH, sizeof(fz_signed_head));
	return kd;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum keyd_chan kinds[3] = { KEYD_CHAN_READER,
	    KEYD_CHAN_CONTROL, KEYD_CHAN_WORKER };
	int closed[3 + FZ_WORKERS] = { 0 };
	struct keymsg_buf reply;
	struct keymsg m;
	const char *why;
	uint32_t id, len;
	uint16_t type;
	size_t off = 0, mlen;
	int ch, slot, hdr_ok;
	struct keyd *kd = fz_keyd();
	uint8_t sel;

	while (off < size) {
		sel = data[off++];
		ch = sel & 3;
		slot = ch == 2 ? 3 + ((sel >> 2) & 3) : ch;
		if (size - off < KEYMSG_HDR_LEN) {
			/* A truncated header: a decode error, nothing more. */
			if (keymsg_decode(data + off, size - off, &m, &why) == 0)
				abort();
			break;
		}
		hdr_ok = keymsg_header(data + off, &type, &id, &len, &why) == 0;
		mlen = KEYMSG_HDR_LEN + (size - off - KEYMSG_HDR_LEN < len ?
		    size - off - KEYMSG_HDR_LEN : len);
		if (keymsg_decode(data + off, mlen, &m, &why) == 0) {
			if (!hdr_ok)
				abort();	/* the header check is the first step */
			fz_roundtrip(&m);
		} else
			hdr_ok = 0;
		if (ch != 3 && !closed[slot]) {
			memset(&reply, 0, sizeof(reply));
			if (!hdr_ok)
				closed[slot] = 1;
			else switch (keyd_handle(kd, kinds[ch], &m, &reply, &why)) {
			case KEYD_CLOSE:
				if (why == NULL || reply.kb_len != 0)
					abort();
				closed[slot] = 1;
				break;
			case KEYD_ADD:
				if (ch != 1 || reply.kb_len != 0)
					abort();
				break;
			case KEYD_NOREPLY:
				if (reply.kb_len != 0)
					abort();
				break;
			case KEYD_REPLY:
				if (reply.kb_failed || reply.kb_len < KEYMSG_HDR_LEN)
					abort();
				if (reply.kb_p[5] == KEYMSG_CERT)
					fz_check_cert(&m, reply.kb_p, reply.kb_len);
				else if (reply.kb_p[5] == KEYMSG_SIGNATURE)
					fz_check_sig(&m, reply.kb_p, reply.kb_len);
				else if (reply.kb_p[5] != KEYMSG_ERR &&
				    reply.kb_p[5] != KEYMSG_OK)
					abort();
				/* The key was given: a second is refused. */
				if (m.km_type == KEYMSG_SIGN_KEY &&
				    reply.kb_p[5] != KEYMSG_ERR)
					abort();
				break;
			}
			keymsg_buf_free(&reply);
		}
		off += mlen;
	}
	/* Whatever was loaded: at most the two entries of the fixed table. */
	if (keyd_count(kd) > 2)
		abort();
	keyd_free(kd);
	return 0;
}
