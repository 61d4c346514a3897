/*
 * tests/unit/audit_sign.c: signed checkpoints (audit/audit_sign.c and the writer's
 * and the verifier's side of them).
 *
 * The canonical form, byte for byte, and what it refuses; the key files (keygen
 * refuses to overwrite either file, a key with group bits, through a symlink or not
 * Ed25519 is refused); the signer's one rule (only forward, each signature linked
 * to the one before; the head it began at signed once), each refusal beside its
 * positive control; the verifier with the public key alone: a signed log passes, a
 * wrong key, a changed signature, a checkpoint whose head is not the chain's, and a
 * signed checkpoint cut away and signed again over other records (what a
 * compromised writer could try) are refused; a restart (a new signer at the head on
 * disk) and an unsigned checkpoint are accepted and said.  The writer: audit_watch()
 * tells once per due checkpoint or rotation, audit_rotate_fd() ends the old file
 * with a checkpoint and starts the new one with a rotate record, audit_write()
 * refuses the writer's own events, audit_path_head() reads a file's head.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "audit.h"
#include "audit_test.h"
#include "../../audit/audit_int.h"
#include "../tap.h"

static const char H1[] =
    "1111111111111111111111111111111111111111111111111111111111111111";
static const char H2[] =
    "2222222222222222222222222222222222222222222222222222222222222222";
static const char KID[] = "0123456789abcdef0123456789abcdef";

static char keypath[512], pubpath[600];
static unsigned char *der;
static size_t derlen;
static struct audit_pubkey *pub;

static void
test_canon(void)
{
	char buf[AUDIT_CANON_MAX];
	size_t n;

	n = audit_checkpoint_canon(buf, sizeof(buf), KID, 42, H1,
	    "2026-12-01T23:07:17.012Z", 7, H2);
	is_string("airlock-audit-checkpoint-v1\n"
	    "key 0123456789abcdef0123456789abcdef\n"
	    "seq 42\n"
	    "head 1111111111111111111111111111111111111111111111111111111111111111\n"
	    "ts 2026-12-01T23:07:17.012Z\n"
	    "link 7 2222222222222222222222222222222222222222222222222222222222222222\n",
	    buf, "the canonical form, byte for byte");
	is_int((long long)strlen(buf), (long long)n, "... and its length");
	ok(audit_checkpoint_canon(buf, sizeof(buf), KID, 0, H1, "t", 0, H2) == 0,
	    "refused: seq 0 (nothing to sign)");
	ok(audit_checkpoint_canon(buf, sizeof(buf), KID, 1, H1, "t", -1, H2) == 0,
	    "refused: a negative link");
	ok(audit_checkpoint_canon(buf, sizeof(buf), KID, 1,
	    "111111111111111111111111111111111111111111111111111111111111111A", "t",
	    0, H2) == 0, "refused: a head with an upper-case digit");
	ok(audit_checkpoint_canon(buf, sizeof(buf), "0123", 1, H1, "t", 0, H2) == 0,
	    "refused: a short key id");
	ok(audit_checkpoint_canon(buf, sizeof(buf), KID, 1, H1, "a b", 0, H2) == 0,
	    "refused: a ts with a space (it would break the line)");
	ok(audit_checkpoint_canon(buf, sizeof(buf), KID, 1, H1,
	    "2026-12-01T23:07:17.012Z-and-more-bytes", 0, H2) == 0,
	    "refused: a ts over 31 bytes");
	ok(audit_checkpoint_canon(buf, sizeof(buf), KID, 1, H1, "t", 0, H2) > 0,
	    "control: the same with good values is built");
}

static void
test_keys(void)
{
	char id[AUDIT_KEYID_HEX + 1], id2[AUDIT_KEYID_HEX + 1], err[512];
	char p[512], q[600];
	unsigned char *d2;
	size_t l2;
	struct stat st;
	EVP_PKEY *ec;
	FILE *f;

	tpath(keypath, sizeof(keypath), "sign.key");
	snprintf(pubpath, sizeof(pubpath), "%s.pub", keypath);
	if (!ok(audit_sign_keygen(keypath, id, err, sizeof(err)) == 0,
	    "keygen: %s", err))
		bail("no key");
	ok(stat(keypath, &st) == 0 && (st.st_mode & 0777) == 0600,
	    "the key is 0600");
	ok(stat(pubpath, &st) == 0 && (st.st_mode & 0777) == 0644,
	    "its .pub is 0644");
	ok(audit_sign_keygen(keypath, id2, err, sizeof(err)) == -1 &&
	    strstr(err, "exists") != NULL, "keygen refuses an existing key: %s",
	    err);
	tpath(p, sizeof(p), "only-pub.key");
	snprintf(q, sizeof(q), "%s.pub", p);
	spit(q, "x", 1);
	ok(audit_sign_keygen(p, id2, err, sizeof(err)) == -1 &&
	    access(p, F_OK) == -1, "... and an existing .pub, making nothing");

	if (!ok(audit_sign_key_load(keypath, &der, &derlen, id2, err,
	    sizeof(err)) == 0, "the key loads: %s", err))
		bail("no key");
	is_string(id, id2, "... with keygen's id");
	if ((pub = audit_pubkey_load(pubpath, err, sizeof(err))) == NULL)
		bail("pubkey: %s", err);
	is_string(id, audit_pubkey_id(pub), "the public key has the same id");
	ok(audit_pubkey_load(keypath, err, sizeof(err)) == NULL,
	    "the private key file is not a public key: %s", err);
	ok(audit_sign_key_load(pubpath, &d2, &l2, id2, err, sizeof(err)) == -1,
	    "the public key file is not a signing key: %s", err);

	chmod(keypath, 0640);
	ok(audit_sign_key_load(keypath, &d2, &l2, id2, err, sizeof(err)) == -1 &&
	    strstr(err, "group or other permissions") != NULL,
	    "a key with group bits is refused: %s", err);
	chmod(keypath, 0600);
	tpath(p, sizeof(p), "link.key");
	if (symlink(keypath, p) == -1)
		bail("symlink");
	ok(audit_sign_key_load(p, &d2, &l2, id2, err, sizeof(err)) == -1,
	    "a key through a symlink is refused: %s", err);
	/* An EC key: a key, but not one that signs checkpoints. */
	tpath(p, sizeof(p), "ec.key");
	if ((ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")) == NULL ||
	    (f = fopen(p, "w")) == NULL ||
	    PEM_write_PKCS8PrivateKey(f, ec, NULL, NULL, 0, NULL, NULL) != 1 ||
	    fclose(f) != 0)
		bail("EC key");
	EVP_PKEY_free(ec);
	chmod(p, 0600);
	ok(audit_sign_key_load(p, &d2, &l2, id2, err, sizeof(err)) == -1 &&
	    strstr(err, "not an Ed25519 key") != NULL,
	    "an EC key is refused: %s", err);
}

/* The canonical bytes of sig over (seq, head, ts), verified under pub. */
static int
sig_verifies(const struct audit_signature *sig, long long seq, const char *head,
    const char *ts)
{
	char buf[AUDIT_CANON_MAX];
	size_t n;

	n = audit_checkpoint_canon(buf, sizeof(buf), sig->as_key, seq, head, ts,
	    sig->as_link_seq, sig->as_link_head);
	return n > 0 && audit_pubkey_verify(pub, buf, n, sig->as_sig);
}

static void
test_signer(void)
{
	struct audit_signature s1, s2, s3;
	struct audit_signer *sg;
	char err[256], ts[32], bad[AUDIT_SIG_HEX + 1];
	const long long t = 1796040000123LL;

	audit_time_format(t, ts, sizeof(ts));
	if ((sg = audit_signer_new(der, derlen, 0, NULL, err, sizeof(err))) == NULL)
		bail("signer: %s", err);
	is_string(audit_pubkey_id(pub), audit_signer_key_id(sg), "the signer's key id");
	ok(audit_signer_sign(sg, 5, H1, t, &s1, err, sizeof(err)) == 0,
	    "a first head signed");
	ok(s1.as_link_seq == 0 && strcmp(s1.as_link_head, AUDIT_ZERO_HASH) == 0,
	    "... linked to nothing (an empty chain)");
	ok(sig_verifies(&s1, 5, H1, ts), "... and verifies under the public key");
	ok(!sig_verifies(&s1, 5, H2, ts), "not over another head");
	ok(!sig_verifies(&s1, 6, H1, ts), "not at another seq");
	ok(!sig_verifies(&s1, 5, H1, "2026-11-30T12:00:00.124Z"), "not at another ts");
	memcpy(bad, s1.as_sig, sizeof(bad));
	bad[10] = bad[10] == '0' ? '1' : '0';
	memcpy(s3.as_key, s1.as_key, sizeof(s3.as_key));
	memcpy(s3.as_sig, bad, sizeof(bad));
	s3.as_link_seq = 0;
	memcpy(s3.as_link_head, AUDIT_ZERO_HASH, sizeof(s3.as_link_head));
	ok(!sig_verifies(&s3, 5, H1, ts), "a changed signature does not verify");

	ok(audit_signer_sign(sg, 5, H2, t, &s2, err, sizeof(err)) == -1,
	    "the same seq again, another head: refused (%s)", err);
	ok(audit_signer_sign(sg, 5, H1, t, &s2, err, sizeof(err)) == -1,
	    "the same seq again, the same head: refused");
	ok(audit_signer_sign(sg, 4, H2, t, &s2, err, sizeof(err)) == -1,
	    "an earlier seq: refused");
	ok(audit_signer_sign(sg, 9, H2, t, &s2, err, sizeof(err)) == 0 &&
	    s2.as_link_seq == 5 && strcmp(s2.as_link_head, H1) == 0,
	    "a later one: signed, linked to the one before");
	ok(sig_verifies(&s2, 9, H2, ts), "... and verifies");
	ok(audit_signer_sign(sg, 0, H2, t, &s2, err, sizeof(err)) == -1 &&
	    audit_signer_sign(sg, 10, "nothex", t, &s2, err, sizeof(err)) == -1 &&
	    audit_signer_sign(sg, 10, H2, -1, &s2, err, sizeof(err)) == -1,
	    "refused: seq 0, a head that is not hex, a negative ts");
	audit_signer_free(sg);

	/* Begun at a head (a restart): that head may be signed once, first. */
	if ((sg = audit_signer_new(der, derlen, 7, H1, err, sizeof(err))) == NULL)
		bail("signer: %s", err);
	ok(audit_signer_sign(sg, 7, H2, t, &s1, err, sizeof(err)) == -1,
	    "begun at seq 7: seq 7 with another head is refused");
	ok(audit_signer_sign(sg, 6, H1, t, &s1, err, sizeof(err)) == -1,
	    "... and seq 6");
	ok(audit_signer_sign(sg, 7, H1, t, &s1, err, sizeof(err)) == 0 &&
	    s1.as_link_seq == 7 && strcmp(s1.as_link_head, H1) == 0,
	    "... its own head is signed, linked to itself");
	ok(audit_signer_sign(sg, 7, H1, t, &s1, err, sizeof(err)) == -1,
	    "... once");
	audit_signer_free(sg);
	ok(audit_signer_new(der, derlen, 0, H1, err, sizeof(err)) == NULL &&
	    audit_signer_new(der, derlen, 3, NULL, err, sizeof(err)) == NULL &&
	    audit_signer_new(der, derlen / 2, 0, NULL, err, sizeof(err)) == NULL,
	    "refused: seq 0 with a head, a seq without one, half a key");
}

/* The test's signer for the writer (what airlockd asks keyd for). */
static struct audit_signer *signer;
static int signer_down;

static int
test_sign(void *arg, long long seq, const char *head, long long ts_ms,
    struct audit_signature *out)
{
	char err[128];

	if (signer_down || signer == NULL) {
		snprintf(out->as_unsigned, sizeof(out->as_unsigned), "keys process: "
		    "it is gone");
		return -1;
	}
	if (audit_signer_sign(signer, seq, head, ts_ms, out, err,
	    sizeof(err)) == -1) {
		snprintf(out->as_unsigned, sizeof(out->as_unsigned), "refused: %s",
		    err);
		return -1;
	}
	return 0;
}

/* A new signer that begins where the log at path ends (a start of airlockd). */
static void
new_signer(const char *p)
{
	char head[AUDIT_HASH_HEX + 1], err[512];
	long long seq;

	audit_signer_free(signer);
	if (audit_path_head(p, NULL, 0, &seq, head, err, sizeof(err)) == -1 ||
	    (signer = audit_signer_new(der, derlen, seq, head, err,
	    sizeof(err))) == NULL)
		bail("signer: %s", err);
}

static void
put(struct audit_log *log, int n)
{
	struct audit_record r = AUDIT_RECORD_INIT;
	int i;

	r.ar_event = AUDIT_EV_CONNECT;
	r.ar_sandbox = "demo";
	r.ar_dst = "api.github.com:443";
	r.ar_decision = "allow";
	for (i = 0; i < n; i++)
		if (audit_write(log, &r) == -1)
			bail("audit_write");
}

static struct audit_log *
open_signed(const char *p)
{
	struct audit_log *log;
	char err[512];

	new_signer(p);
	if ((log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL)
		bail("%s", err);
	audit_set_signer(log, test_sign, NULL);
	return log;
}

static int notes;
static char last_note[512];

static void
note(void *arg, const char *msg)
{
	notes++;
	snprintf(last_note, sizeof(last_note), "%s", msg);
}

/* Verifies the files (NULL-terminated) with pk; 0 or -1 with why. */
static int
verify_files(const char *const *files, const struct audit_pubkey *pk,
    struct audit_chain *c, char *why, size_t whylen)
{
	struct audit_file_result res;
	long long bad;
	size_t i;

	audit_chain_init(c, NULL, 0);
	c->ac_pubkey = pk;
	c->ac_note = note;
	notes = 0;
	last_note[0] = '\0';
	for (i = 0; files[i] != NULL; i++)
		if (audit_verify_file(files[i], c, &res, &bad, why, whylen) == -1)
			return -1;
	return 0;
}

/*
 * The chain of p made good again after an edit, as anyone can without a key:
 * each line's prev is the hash before it (and a checkpoint's or rotate record's
 * head with it), its hash recomputed.  seq is left as it is.
 */
static void
rechain(const char *p)
{
	char prev[AUDIT_HASH_HEX + 1], hex[AUDIT_HASH_HEX + 1];
	char *buf, *line, *next, *f, *out, *o;
	size_t len, blen;
	int first = 1;

	buf = slurp(p, &len);
	if ((out = malloc(len + 1)) == NULL)
		bail("rechain");
	o = out;
	for (line = buf; *line != '\0'; line = next) {
		next = strchr(line, '\n') + 1;
		next[-1] = '\0';
		if (!first) {
			f = strstr(line, "\"prev\":\"") + 8;
			memcpy(f, prev, AUDIT_HASH_HEX);
			if ((strstr(line, "\"event\":\"checkpoint\"") != NULL ||
			    strstr(line, "\"event\":\"rotate\"") != NULL) &&
			    (f = strstr(line, ",\"head\":\"")) != NULL)
				memcpy(f + 9, prev, AUDIT_HASH_HEX);
		}
		first = 0;
		f = strstr(line, ",\"hash\":\"");
		blen = (size_t)(f - line);
		if (audit_hash_compute(line, blen, NULL, 0, hex) == -1)
			bail("hash");
		memcpy(f + 9, hex, AUDIT_HASH_HEX);
		memcpy(prev, hex, sizeof(prev));
		blen = strlen(line);
		memcpy(o, line, blen);
		o[blen] = '\n';
		o += blen + 1;
	}
	spit(p, out, (size_t)(o - out));
	free(out);
	free(buf);
}

/* Copies p to q and, in q's line lineno (1-based), the first from to to. */
static void
copy_edit(const char *p, const char *q, int lineno, const char *from,
    const char *to)
{
	char *buf, *l, *at, *out;
	size_t len, i, head, tail;
	int k = 1;

	buf = slurp(p, &len);
	for (l = buf, i = 0; i < len && k < lineno; i++)
		if (buf[i] == '\n') {
			k++;
			l = buf + i + 1;
		}
	if ((at = strstr(l, from)) == NULL ||
	    (out = malloc(len + strlen(to) + 1)) == NULL)
		bail("edit: %s not in line %d", from, lineno);
	head = (size_t)(at - buf);
	tail = len - head - strlen(from);
	memcpy(out, buf, head);
	memcpy(out + head, to, strlen(to));
	memcpy(out + head + strlen(to), at + strlen(from), tail);
	spit(q, out, head + strlen(to) + tail);
	free(out);
	free(buf);
}

/* The line of p that holds needle (1-based), 0 if none. */
static int
line_of(const char *p, const char *needle)
{
	char *buf, *at;
	size_t len;
	int n = 1;

	buf = slurp(p, &len);
	if ((at = strstr(buf, needle)) == NULL) {
		free(buf);
		return 0;
	}
	for (; at > buf; at--)
		n += at[-1] == '\n';
	free(buf);
	return n;
}

static void
test_verify(void)
{
	const char *files[2] = { NULL, NULL };
	char p[512], q[512], err[512], why[512], kid[AUDIT_KEYID_HEX + 1];
	struct audit_pubkey *other;
	struct audit_chain c;
	struct audit_log *log;
	char *buf;
	size_t len;
	int l;

	tpath(p, sizeof(p), "signed.jsonl");
	files[0] = p;
	log = open_signed(p);
	put(log, 3);
	ok(audit_checkpoint(log, "count") == 0, "a checkpoint");
	put(log, 2);
	ok(audit_checkpoint(log, "shutdown") == 0, "another");
	audit_close(log);
	buf = slurp(p, &len);
	ok(count_lines(buf, len) == 7 && strstr(buf, "\"seq\":4,\"event\":"
	    "\"checkpoint\",\"at\":\"count\",\"first_seq\":1,\"last_seq\":3,"
	    "\"head\":\"") != NULL && strstr(buf, "\"link_seq\":3,") != NULL,
	    "the records: 3, a checkpoint of seq 3, 2, one of seq 6 linked to 3");
	free(buf);
	ok(verify_files(files, pub, &c, why, sizeof(why)) == 0,
	    "verifies with the public key: %s", why);
	ok(c.ac_signed == 2 && c.ac_signed_last == 6 && c.ac_signed_cp_seq == 7 &&
	    c.ac_last_is_cp && notes == 0, "two signed, the last of seq 6, nothing "
	    "to note");

	tpath(q, sizeof(q), "other.key");
	if (audit_sign_keygen(q, kid, err, sizeof(err)) == -1)
		bail("%s", err);
	strcat(q, ".pub");
	if ((other = audit_pubkey_load(q, err, sizeof(err))) == NULL)
		bail("%s", err);
	ok(verify_files(files, other, &c, why, sizeof(why)) == -1 &&
	    strstr(why, "another key") != NULL, "refused with another key: %s", why);
	audit_pubkey_free(other);
	ok(verify_files(files, NULL, &c, why, sizeof(why)) == 0 && c.ac_cp == 2,
	    "without a key: the chain and the fields only");

	/* A record edited, the chain made good again: only the signature tells. */
	tpath(q, sizeof(q), "t-edit.jsonl");
	files[0] = q;
	copy_edit(p, q, 2, "api.github.com", "evil.example.c");
	rechain(q);
	ok(verify_files(files, NULL, &c, why, sizeof(why)) == 0,
	    "a record edited, the chain recomputed: a valid chain (%s)", why);
	ok(verify_files(files, pub, &c, why, sizeof(why)) == -1 &&
	    strstr(why, "bad signature") != NULL, "... refused by its signature: "
	    "%s", why);
	copy_edit(p, q, 2, "api.github.com", "api.github.com");
	rechain(q);
	ok(verify_files(files, pub, &c, why, sizeof(why)) == 0,
	    "control: the same copy unedited, rechained, verifies");

	/* A signature changed. */
	l = line_of(p, "\"at\":\"count\"");
	copy_edit(p, q, l, "\"sig\":\"", "\"sig\":\"0");
	{
		char *b2 = slurp(q, &len), *sg = strstr(b2, "\"sig\":\"") + 7;

		/* one digit more at the front: the last one goes */
		memmove(sg + AUDIT_SIG_HEX, sg + AUDIT_SIG_HEX + 1,
		    strlen(sg + AUDIT_SIG_HEX + 1) + 1);
		spit(q, b2, strlen(b2));
		free(b2);
	}
	rechain(q);
	ok(verify_files(files, NULL, &c, why, sizeof(why)) == 0 &&
	    verify_files(files, pub, &c, why, sizeof(why)) == -1 &&
	    strstr(why, "bad signature") != NULL, "a signature changed: refused "
	    "(%s)", why);

	/* A checkpoint whose head is not the chain's: refused without a key. */
	copy_edit(p, q, l, "\"head\":\"", "\"head\":\"0");
	{
		char *b2 = slurp(q, &len), *h = strstr(b2, "\"head\":\"") + 8;

		memmove(h + AUDIT_HASH_HEX, h + AUDIT_HASH_HEX + 1,
		    strlen(h + AUDIT_HASH_HEX + 1) + 1);
		spit(q, b2, strlen(b2));
		free(b2);
	}
	/* rehash lines but keep the edited head (rechain would restore it) */
	{
		char *b2 = slurp(q, &len), *ln = b2, *f, hex[AUDIT_HASH_HEX + 1];
		int k;

		for (k = 1; k < l; k++)
			ln = strchr(ln, '\n') + 1;
		f = strstr(ln, ",\"hash\":\"");
		if (audit_hash_compute(ln, (size_t)(f - ln), NULL, 0, hex) == -1)
			bail("hash");
		memcpy(f + 9, hex, AUDIT_HASH_HEX);
		spit(q, b2, len);
		free(b2);
	}
	ok(verify_files(files, NULL, &c, why, sizeof(why)) == -1 &&
	    strstr(why, "\"head\" is not the previous record's hash") != NULL,
	    "a checkpoint's head that is not its prev is refused: %s", why);
	files[0] = p;
}

/*
 * What a compromised writer could try: cut the log back before its last signed
 * checkpoint, write other records, and have the same signer sign a later head.
 * The signer links the new signature to the one cut away: refused.
 */
static void
test_link(void)
{
	const char *files[2] = { NULL, NULL };
	char p[512], why[512];
	struct audit_chain c;
	struct audit_log *log;
	struct stat st;
	off_t cut;
	int fd;

	tpath(p, sizeof(p), "link.jsonl");
	files[0] = p;
	log = open_signed(p);
	put(log, 2);
	ok(audit_checkpoint(log, "count") == 0, "link: seq 1-2, a checkpoint");
	put(log, 2);
	if (stat(p, &st) == -1)
		bail("stat");
	cut = st.st_size;
	ok(audit_checkpoint(log, "count") == 0, "link: seq 4-5, a checkpoint (6)");
	audit_close(log);
	ok(verify_files(files, pub, &c, why, sizeof(why)) == 0,
	    "control: the log verifies: %s", why);

	/* The same signer goes on (keyd's life); the file is cut before seq 6. */
	if ((fd = open(p, O_WRONLY)) == -1 || ftruncate(fd, cut) == -1)
		bail("truncate");
	close(fd);
	{
		char err[512];

		if ((log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err))) ==
		    NULL)
			bail("%s", err);
	}
	audit_set_signer(log, test_sign, NULL);
	put(log, 3);
	ok(audit_checkpoint(log, "count") == 0, "a rewritten tail signed by the "
	    "same signer");
	audit_close(log);
	ok(verify_files(files, NULL, &c, why, sizeof(why)) == 0,
	    "... which is a valid chain");
	ok(verify_files(files, pub, &c, why, sizeof(why)) == -1 &&
	    strstr(why, "a signed checkpoint is missing") != NULL,
	    "... but the signature links to the checkpoint cut away: %s", why);
}

/* A restart: a new signer begins at the head on disk; the verifier follows it. */
static void
test_restart(void)
{
	const char *files[2] = { NULL, NULL };
	char p[512], why[512];
	struct audit_chain c;
	struct audit_log *log;

	tpath(p, sizeof(p), "restart.jsonl");
	files[0] = p;
	log = open_signed(p);
	put(log, 2);
	ok(audit_checkpoint(log, "count") == 0, "restart: a checkpoint");
	put(log, 2);	/* no final checkpoint: a crash */
	audit_close(log);
	log = open_signed(p);
	ok(audit_checkpoint(log, "start") == 0, "a new signer: its start checkpoint");
	put(log, 1);
	ok(audit_checkpoint(log, "shutdown") == 0, "... and a clean end");
	audit_close(log);
	ok(verify_files(files, pub, &c, why, sizeof(why)) == 0,
	    "the log verifies across the restart: %s", why);
	ok(c.ac_restarts == 1 && notes == 1 && strstr(last_note,
	    "without its final checkpoint") != NULL, "... and it is said that the "
	    "run before ended without its checkpoint: %s", last_note);

	/* The signer gone at the start: unsigned, and the next one links to it. */
	log = open_signed(p);
	signer_down = 1;
	ok(audit_checkpoint(log, "start") == 0, "a start checkpoint, keyd gone");
	signer_down = 0;
	put(log, 1);
	ok(audit_checkpoint(log, "count") == 0, "keyd back: a checkpoint");
	audit_close(log);
	ok(verify_files(files, pub, &c, why, sizeof(why)) == 0,
	    "the log verifies: %s", why);
	ok(c.ac_cp_unsigned == 1 && strstr(last_note, "not signed: keys process: "
	    "it is gone") != NULL && notes == 2, "... one checkpoint unsigned, "
	    "said (%d notes, the last: %s)", notes, last_note);
	ok(c.ac_last_is_cp && c.ac_signed_last == c.ac_seq - 1,
	    "... and the log ends covered");
}

static int watched;

static void
watch_cb(void *arg)
{
	watched++;
}

static void
test_watch_rotate(void)
{
	const char *files[3] = { NULL, NULL, NULL };
	char p[512], p1[600], why[512], err[512];
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_chain c;
	struct audit_log *log;
	char *buf;
	size_t len;
	int fd, cp, rot;

	tpath(p, sizeof(p), "rot.jsonl");
	snprintf(p1, sizeof(p1), "%s.1", p);
	log = open_signed(p);
	audit_watch(log, 3, 0, watch_cb, NULL);
	put(log, 2);
	audit_due(log, &cp, &rot);
	ok(watched == 0 && !cp && !rot, "watch: 2 records, nothing due");
	put(log, 1);
	audit_due(log, &cp, &rot);
	ok(watched == 1 && cp && !rot, "the third: told once, a checkpoint due");
	put(log, 2);
	ok(watched == 1, "... and not again before the checkpoint");
	ok(audit_checkpoint(log, "count") == 0, "the checkpoint");
	audit_due(log, &cp, &rot);
	ok(!cp, "... nothing due");
	put(log, 3);
	ok(watched == 2, "three more: told again");
	audit_watch(log, 0, 1, watch_cb, NULL);
	audit_due(log, &cp, &rot);
	ok(watched == 3 && rot, "max_bytes 1: a rotation is due at once");
	audit_watch(log, 0, 0, NULL, NULL);

	if (rename(p, p1) == -1 || (fd = open(p, O_RDWR | O_APPEND | O_CREAT |
	    O_EXCL, 0600)) == -1)
		bail("rotate");
	ok(audit_rotate_fd(log, fd, err, sizeof(err)) == 0, "audit_rotate_fd: %s",
	    err);
	put(log, 1);
	ok(audit_checkpoint(log, "shutdown") == 0, "a checkpoint in the new file");
	audit_close(log);
	buf = slurp(p1, &len);
	ok(strstr(buf, "\"event\":\"checkpoint\",\"at\":\"max_bytes\"") != NULL &&
	    buf[len - 1] == '\n', "the old file ends with a checkpoint");
	free(buf);
	buf = slurp(p, &len);
	ok(strncmp(strchr(buf, ',') + 1, "\"seq\":", 6) == 0 &&
	    strstr(buf, "\"event\":\"rotate\",\"source\":\"max_bytes\",") ==
	    strchr(strchr(buf, ',') + 1, ',') + 1, "the new one starts with a "
	    "rotate record");
	free(buf);
	files[0] = p1;
	files[1] = p;
	ok(verify_files(files, pub, &c, why, sizeof(why)) == 0,
	    "both verify as one chain: %s", why);
	files[0] = p;
	files[1] = NULL;
	ok(verify_files(files, pub, &c, why, sizeof(why)) == 0 && notes == 1,
	    "the new file alone: its signature's link is before it, said (%s)",
	    last_note);

	/* A new file that is not empty is refused; the log stays where it is. */
	if ((log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL ||
	    (fd = open(p1, O_RDWR | O_APPEND)) == -1)
		bail("open");
	ok(audit_rotate_fd(log, fd, err, sizeof(err)) == -1, "rotate onto a file "
	    "that is not empty: refused (%s)", err);
	r.ar_event = AUDIT_EV_CHECKPOINT;
	ok(audit_write(log, &r) == -1 && errno == EINVAL,
	    "audit_write refuses a checkpoint record");
	r.ar_event = AUDIT_EV_ROTATE;
	ok(audit_write(log, &r) == -1 && errno == EINVAL, "... and a rotate record");
	ok(audit_checkpoint(log, "nonsense") == -1 && errno == EINVAL,
	    "audit_checkpoint refuses an unknown reason");
	audit_close(log);
}

static void
test_path_head(void)
{
	char p[512], p1[600], head[AUDIT_HASH_HEX + 1], h2[AUDIT_HASH_HEX + 1];
	char err[512];
	struct audit_log *log;
	long long seq;

	tpath(p, sizeof(p), "head.jsonl");
	snprintf(p1, sizeof(p1), "%s.1", p);
	gen_records(p, "demo", 3);
	if ((log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL)
		bail("%s", err);
	audit_head(log, h2);
	audit_close(log);
	ok(audit_path_head(p, NULL, 0, &seq, head, err, sizeof(err)) == 0 &&
	    seq == 3 && strcmp(head, h2) == 0, "audit_path_head: the last record");
	if (rename(p, p1) == -1)
		bail("rename");
	spit(p, "", 0);
	ok(audit_path_head(p, NULL, 0, &seq, head, err, sizeof(err)) == 0 &&
	    seq == 3 && strcmp(head, h2) == 0, "an empty file: path.1's");
	unlink(p1);
	ok(audit_path_head(p, NULL, 0, &seq, head, err, sizeof(err)) == 0 &&
	    seq == 0 && strcmp(head, AUDIT_ZERO_HASH) == 0, "nothing: an empty chain");
	spit(p, "{\"torn\":", 8);
	ok(audit_path_head(p, NULL, 0, &seq, head, err, sizeof(err)) == -1,
	    "a torn last line: refused (%s)", err);
}

int
main(void)
{
	plan_lazy();
	test_canon();
	test_keys();
	test_signer();
	test_verify();
	test_link();
	test_restart();
	test_watch_rotate();
	test_path_head();
	audit_signer_free(signer);
	audit_pubkey_free(pub);
	OPENSSL_clear_free(der, derlen);
	return tap_failures() != 0;
}
