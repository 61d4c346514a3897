/*
 * tests/tools/keymsg_seed.c: writes the seed corpus of tests/fuzz/fuzz_keymsg.c.
 *
 *	keymsg_seed DIR
 *
 * One file per seed, in fuzz_keymsg's input format (a channel byte, a message;
 * again): valid messages of every type on their channels, the refusals keyd must
 * make (a name not inspected, another sandbox's name, a stale hash, an unknown
 * sandbox), loads that keep, empty or break the set, audit checkpoints signed in
 * order and out of it (keyd was given its signing key already: a second SIGN_KEY
 * is refused), and a few malformed ones.  The
 * sandboxes and hashes are fuzz_keymsg's fixed table ("sba" / "a" x 64, "sbb" /
 * "b" x 64); the leaf key is a fresh P-256 key (any will do).  The corpus is
 * committed; this program is how it was made (run it again to change it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "../../proxy/proxy_keymsg.h"
#include "ca.h"

#define CH_READER	0
#define CH_CONTROL	1
#define CH_WORKER	2
#define CH_DECODE	3

static const char *dir;
static unsigned char *spki;
static int spkilen;
static char hash_a[65], hash_b[65];

static struct keymsg_buf seed;

static void
rec(int ch, struct keymsg_buf *m)
{
	uint8_t c = (uint8_t)ch;

	keymsg_buf_put(&seed, &c, 1);
	keymsg_buf_put(&seed, m->kb_p, m->kb_len);
	keymsg_buf_free(m);
}

static void
save(const char *name)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (seed.kb_failed || (f = fopen(path, "wb")) == NULL ||
	    fwrite(seed.kb_p, 1, seed.kb_len, f) != seed.kb_len || fclose(f) != 0) {
		fprintf(stderr, "keymsg_seed: %s: cannot write\n", path);
		exit(1);
	}
	keymsg_buf_free(&seed);
}

static void
mint(int ch, const char *sb, const char *name, const char *hash)
{
	struct keymsg_buf m = { 0 };

	keymsg_start(&m, KEYMSG_MINT, 7);
	keymsg_field_str(&m, KEYTAG_SANDBOX, sb);
	keymsg_field_str(&m, KEYTAG_NAME, name);
	keymsg_field_str(&m, KEYTAG_HASH, hash);
	keymsg_field(&m, KEYTAG_SPKI, spki, (size_t)spkilen);
	(void)keymsg_finish(&m);
	rec(ch, &m);
}

static void
simple(int ch, uint16_t type)
{
	struct keymsg_buf m = { 0 };

	keymsg_start(&m, type, 3);
	(void)keymsg_finish(&m);
	rec(ch, &m);
}

static void
keep(const char *sb, const char *hash)
{
	struct keymsg_buf m = { 0 };

	keymsg_start(&m, KEYMSG_LOAD_KEEP, 3);
	keymsg_field_str(&m, KEYTAG_SANDBOX, sb);
	keymsg_field_str(&m, KEYTAG_HASH, hash);
	(void)keymsg_finish(&m);
	rec(CH_READER, &m);
}

static void
sign(int ch, uint64_t seq, const char *head, uint64_t ts)
{
	struct keymsg_buf m = { 0 };

	keymsg_start(&m, KEYMSG_SIGN_CHECKPOINT, 9);
	keymsg_field_u64(&m, KEYTAG_SEQ, seq);
	keymsg_field_str(&m, KEYTAG_HASH, head);
	keymsg_field_u64(&m, KEYTAG_TS, ts);
	(void)keymsg_finish(&m);
	rec(ch, &m);
}

/* A SIGN_KEY (keyd has one already: the fuzzer's keyd is given its own first). */
static void
sign_key(int ch, const unsigned char *der, size_t len)
{
	struct keymsg_buf m = { 0 };

	keymsg_start(&m, KEYMSG_SIGN_KEY, 3);
	keymsg_field(&m, KEYTAG_KEY, der, len);
	keymsg_field_u64(&m, KEYTAG_SEQ, 0);
	keymsg_field_str(&m, KEYTAG_HASH, hash_a);
	(void)keymsg_finish(&m);
	rec(ch, &m);
}

static void
end(uint32_t n)
{
	struct keymsg_buf m = { 0 };

	keymsg_start(&m, KEYMSG_LOAD_END, 3);
	keymsg_field_u32(&m, KEYTAG_COUNT, n);
	(void)keymsg_finish(&m);
	rec(CH_READER, &m);
}

int
main(int argc, char **argv)
{
	struct keymsg_buf m = { 0 };
	EVP_PKEY *k;

	if (argc != 2) {
		fprintf(stderr, "usage: keymsg_seed DIR\n");
		return 2;
	}
	dir = argv[1];
	memset(hash_a, 'a', 64);
	memset(hash_b, 'b', 64);
	if ((k = ca_leaf_key_new()) == NULL ||
	    (spkilen = i2d_PUBKEY(k, &spki)) <= 0)
		return 1;

	mint(CH_WORKER, "sba", "api.a.test", hash_a);
	save("mint-ok");
	mint(CH_WORKER, "sba", "x.files.a.test", hash_a);
	mint(CH_WORKER | 4, "sbb", "api.b.test", hash_b);
	save("mint-wildcard-and-b");
	mint(CH_WORKER, "sba", "evil.test", hash_a);
	mint(CH_WORKER, "sba", "files.a.test", hash_a);
	mint(CH_WORKER, "sba", "ca-only.a.test", hash_a);
	save("mint-not-inspected");
	mint(CH_WORKER, "sba", "api.b.test", hash_a);
	save("mint-b-name-as-a");
	mint(CH_WORKER, "sba", "api.a.test", hash_b);
	save("mint-stale-hash");
	mint(CH_WORKER, "sbc", "api.a.test", hash_a);
	save("mint-unknown-sandbox");
	mint(CH_WORKER, "sba", "API.A.TEST.", hash_a);
	mint(CH_WORKER, "sba", "a..test", hash_a);
	save("mint-names-normalised-or-bad");

	simple(CH_READER, KEYMSG_LOAD_BEGIN);
	keep("sba", hash_a);
	end(1);
	mint(CH_WORKER, "sba", "api.a.test", hash_a);
	mint(CH_WORKER, "sbb", "api.b.test", hash_b);
	save("load-keep-a-only");
	simple(CH_READER, KEYMSG_LOAD_BEGIN);
	keep("sba", hash_b);
	keep("sbb", hash_b);
	end(2);
	mint(CH_WORKER, "sbb", "api.b.test", hash_b);
	save("load-keep-wrong-hash");
	simple(CH_READER, KEYMSG_LOAD_BEGIN);
	end(0);
	mint(CH_WORKER, "sba", "api.a.test", hash_a);
	save("load-empty");
	simple(CH_READER, KEYMSG_LOAD_BEGIN);
	keymsg_start(&m, KEYMSG_LOAD_CA, 3);
	keymsg_field_str(&m, KEYTAG_SANDBOX, "sba");
	keymsg_field_str(&m, KEYTAG_HASH, hash_a);
	keymsg_field_str(&m, KEYTAG_CERT, "not a certificate");
	keymsg_field_str(&m, KEYTAG_KEY, "not a key");
	keymsg_field_str(&m, KEYTAG_NAME, "api.a.test");
	keymsg_field_str(&m, KEYTAG_NAME, "*.files.a.test");
	(void)keymsg_finish(&m);
	rec(CH_READER, &m);
	end(1);
	mint(CH_WORKER, "sba", "api.a.test", hash_a);
	save("load-ca-garbage");
	simple(CH_READER, KEYMSG_LOAD_BEGIN);
	keep("sba", hash_a);
	end(5);
	save("load-count-wrong");
	simple(CH_READER, KEYMSG_LOAD_END);
	mint(CH_WORKER, "sba", "api.a.test", hash_a);
	save("load-end-alone");

	keymsg_start(&m, KEYMSG_ADD_CHANNEL, 4);
	keymsg_field_str(&m, KEYTAG_LABEL, "worker 0");
	(void)keymsg_finish(&m);
	rec(CH_CONTROL, &m);
	save("add-channel");

	/* On channels that do not take them: each closes its channel. */
	mint(CH_READER, "sba", "api.a.test", hash_a);
	simple(CH_READER, KEYMSG_LOAD_BEGIN);
	mint(CH_CONTROL, "sba", "api.a.test", hash_a);
	simple(CH_WORKER, KEYMSG_LOAD_BEGIN);
	mint(CH_WORKER, "sba", "api.a.test", hash_a);
	mint(CH_WORKER | 8, "sba", "api.a.test", hash_a);
	save("wrong-channels");

	/* Replies, through the decoder. */
	simple(CH_DECODE, KEYMSG_OK);
	keymsg_start(&m, KEYMSG_CERT, 7);
	keymsg_field(&m, KEYTAG_CERT, spki, (size_t)spkilen);
	(void)keymsg_finish(&m);
	rec(CH_DECODE, &m);
	keymsg_err(&m, 7, KEYERR_NOT_INSPECTED, "evil.test: not inspected");
	rec(CH_DECODE, &m);
	save("replies");

	/* Audit checkpoints: forward only, each linked to the one before. */
	sign(CH_WORKER, 5, hash_a, 1796040000123ULL);
	save("sign-ok");
	sign(CH_WORKER, 5, hash_a, 1796040000123ULL);
	sign(CH_WORKER | 4, 9, hash_b, 1796040001000ULL);
	sign(CH_WORKER, 9, hash_a, 1796040002000ULL);
	sign(CH_WORKER, 7, hash_a, 1796040002000ULL);
	sign(CH_WORKER, 12, hash_a, 1796040003000ULL);
	save("sign-order");
	sign(CH_WORKER, 0, hash_a, 1796040000123ULL);
	sign(CH_WORKER, 3, hash_a, 253402300800000ULL);
	sign(CH_WORKER, 1ULL << 63, hash_a, 1);
	sign(CH_WORKER, 4, hash_a, 0);
	save("sign-out-of-range");
	sign(CH_READER, 5, hash_a, 1796040000123ULL);
	sign(CH_CONTROL, 5, hash_a, 1796040000123ULL);
	save("sign-wrong-channels");
	{
		PKCS8_PRIV_KEY_INFO *p8;
		unsigned char *der = NULL;
		EVP_PKEY *ed;
		int dl;

		if ((ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519")) == NULL ||
		    (p8 = EVP_PKEY2PKCS8(ed)) == NULL ||
		    (dl = i2d_PKCS8_PRIV_KEY_INFO(p8, &der)) <= 0)
			return 1;
		sign_key(CH_READER, der, (size_t)dl);
		sign(CH_WORKER, 2, hash_a, 1796040000123ULL);
		save("sign-key-again");
		sign_key(CH_WORKER, der, (size_t)dl);
		sign(CH_WORKER | 4, 2, hash_a, 1796040000123ULL);
		save("sign-key-on-a-worker");
		OPENSSL_clear_free(der, (size_t)dl);
		PKCS8_PRIV_KEY_INFO_free(p8);
		EVP_PKEY_free(ed);
	}
	keymsg_start(&m, KEYMSG_SIGNATURE, 9);
	keymsg_field_str(&m, KEYTAG_SIG, "00000000000000000000000000000000"
	    "00000000000000000000000000000000000000000000000000000000000000000000"
	    "0000000000000000000000000000");
	keymsg_field_str(&m, KEYTAG_KEYID, "0123456789abcdef0123456789abcdef");
	keymsg_field_u64(&m, KEYTAG_SEQ, 4);
	keymsg_field_str(&m, KEYTAG_HASH, hash_b);
	(void)keymsg_finish(&m);
	rec(CH_DECODE, &m);
	save("reply-signature");

	/* Malformed: a field running past the body, then a good MINT elsewhere. */
	keymsg_start(&m, KEYMSG_MINT, 7);
	keymsg_field_str(&m, KEYTAG_SANDBOX, "sba");
	(void)keymsg_finish(&m);
	m.kb_p[KEYMSG_HDR_LEN + 5] = 0x40;
	rec(CH_WORKER, &m);
	mint(CH_WORKER | 4, "sba", "api.a.test", hash_a);
	save("malformed-field");
	EVP_PKEY_free(k);
	OPENSSL_free(spki);
	return 0;
}
