/*
 * tests/unit/keyd.c: the keys process (proxy/proxy_keyd.c) without privileges: its
 * service loop forked on two socketpairs, loaded through the loading end the reader
 * uses (proxy_keyd_load() over a proxy_keys_collect() of two sandboxes' policies),
 * asked through the worker end airlockd uses (proxy_keyd_mint()) and through raw
 * channels for what no client of ours sends.
 *
 * Covers: an inspected name of A (exact and under a wildcard) is signed and the leaf
 * verifies against A's CA only; a name A does not inspect, B's name asked as A, the
 * wildcard's own suffix, an unknown sandbox, a stale policy hash are refused, and so
 * is a name the CA permits but the loaded policy does not inspect; a
 * reload that changes A's policy makes the old hash stale, one that the proxy will
 * refuse keeps A's entry (LOAD_KEEP), an attach keeps the others'; a set with a key
 * that does not match its certificate is refused whole and the previous one stays;
 * malformed messages of each kind end their channel and keyd answers on another; a
 * descriptor on a worker channel, MINT on the reader channel and on the control
 * channel end those channels, not keyd; keyd ends when airlockd's control channel
 * closes.  The audit signing key: before it is given nothing is signed; given
 * once (a second SIGN_KEY refused); the head it began at signed once, a later one
 * linked to it, anything not after the last refused, each signature good under
 * the public key.
 */
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "../../proxy/proxy_keyd.h"
#include "../../proxy/proxy_keymsg.h"
#include "../../proxy/proxy_keys.h"
#include "../../proxy/proxy_proc.h"
#include "../tap.h"
#include "audit.h"
#include "ca.h"

#define POL_A	"{\"policy\":\"pa\",\"rules\":[" \
	"{\"id\":\"a\",\"host\":\"api.a.test\",\"tls\":\"inspect\"}," \
	"{\"id\":\"b\",\"host\":\"*.files.a.test\",\"tls\":\"inspect\"}," \
	"{\"id\":\"c\",\"host\":\"splice.a.test\"}]}"
#define POL_A2	"{\"policy\":\"pa2\",\"rules\":[" \
	"{\"id\":\"a\",\"host\":\"api.a.test\",\"tls\":\"inspect\"}," \
	"{\"id\":\"b\",\"host\":\"*.files.a.test\",\"tls\":\"inspect\"}]}"
#define POL_B	"{\"policy\":\"pb\",\"rules\":[" \
	"{\"id\":\"a\",\"host\":\"api.b.test\",\"tls\":\"inspect\"}]}"
#define POL_BAD	"{\"policy\":\"pa\",\"rules\":[{\"id\":"

static const char *dir;
static char err[512];
static char hash_a[65], hash_a2[65], hash_b[65];
static X509 *cert_a, *cert_b;
static EVP_PKEY *leaf_key;
static int ctl = -1;

/* Collects the two sandboxes with policies pa and pb (NULL: unreadable). */
static struct proxy_keys_build *
collect(const char *pa, const char *pb)
{
	struct policy_bundle ba = { NULL, 0 }, bb = { NULL, 0 };
	struct proxy_keys_src src[2] = {
		{ "sba", &ba },
		{ "sbb", &bb },
	};
	struct proxy_keys_build *kb;

	if (policy_bundle_add(&ba, "pa.json", pa, pa != NULL ? strlen(pa) : 0,
	    "cannot open: No such file or directory") == -1 ||
	    policy_bundle_add(&bb, "pb.json", pb, pb != NULL ? strlen(pb) : 0,
	    "cannot open: No such file or directory") == -1)
		bail("out of memory");
	if ((kb = proxy_keys_collect(dir, src, 2)) == NULL)
		bail("collect");
	policy_bundle_free(&ba);
	policy_bundle_free(&bb);
	return kb;
}

static int
load(const char *pa, const char *pb, const char *only, char *hash)
{
	struct proxy_keys_build *kb = collect(pa, pb);
	int rv;

	err[0] = '\0';
	if (hash != NULL)
		snprintf(hash, 65, "%s", proxy_keys_build_ca(kb, 0)->kc_hash);
	rv = proxy_keyd_load(kb, only, err, sizeof(err));
	proxy_keys_build_free(kb);
	return rv;
}

static X509 *
cacert(const char *sb)
{
	struct ca *ca;
	X509 *x;

	if ((ca = ca_load(dir, sb, NULL, err, sizeof(err))) == NULL)
		bail("ca_load %s: %s", sb, err);
	x = ca_cert(ca);
	X509_up_ref(x);
	ca_free(ca);
	return x;
}

/* A certificate-only CA for sb (what airlockd holds). */
static struct ca *
certonly(X509 *x)
{
	unsigned char *der = NULL;
	struct ca *ca;
	int n = i2d_X509(x, &der);

	ca = ca_load_der(der, (size_t)n, NULL, 0, 1, err, sizeof(err));
	OPENSSL_free(der);
	if (ca == NULL)
		bail("certonly: %s", err);
	return ca;
}

/* 1 if leaf is signed by anchor's key and names host (its one SAN). */
static int
issued(X509 *anchor, X509 *leaf, const char *host)
{
	return X509_verify(leaf, X509_get0_pubkey(anchor)) == 1 &&
	    X509_check_host(leaf, host, strlen(host), X509_CHECK_FLAG_NO_WILDCARDS,
	    NULL) == 1;
}

/* MINT through the worker end (this thread's channel); CA_OK and *out or not. */
static int
mint(const char *sb, const char *hash, const char *name, X509 *anchor, X509 **out)
{
	struct ca *ca = certonly(anchor);
	X509 *x = NULL;
	int rv;

	err[0] = '\0';
	rv = proxy_keyd_mint(sb, hash, name, ca, leaf_key, &x, err, sizeof(err));
	ca_free(ca);
	if (out != NULL)
		*out = x;
	else
		X509_free(x);
	return rv;
}

/* Does keyd still answer on the worker end?  A good MINT for A. */
static int
alive(void)
{
	return mint("sba", hash_a2[0] != '\0' ? hash_a2 : hash_a, "api.a.test",
	    cert_a, NULL) == CA_OK;
}

/*
 * Raw channels.
 */

static int
raw_write(int fd, const void *p, size_t len)
{
	return proxy_fd_write_full(fd, p, len);
}

/* The reply on fd within 2 s: its type, or -1 (EOF, timeout, malformed). */
static int
raw_reply(int fd, struct keymsg *m, uint8_t *buf, size_t buflen)
{
	long long dl = proxy_deadline(2000);
	const char *why;
	uint32_t id, len;
	uint16_t type;

	if (proxy_fd_read_full(fd, buf, KEYMSG_HDR_LEN, dl) == -1 ||
	    keymsg_header(buf, &type, &id, &len, &why) == -1 ||
	    KEYMSG_HDR_LEN + len > buflen ||
	    proxy_fd_read_full(fd, buf + KEYMSG_HDR_LEN, len, dl) == -1 ||
	    keymsg_decode(buf, KEYMSG_HDR_LEN + len, m, &why) == -1)
		return -1;
	return m->km_type;
}

/* 1 if the peer of fd closed it within 2 s (nothing read before the EOF). */
static int
raw_closed(int fd)
{
	struct pollfd pfd = { fd, POLLIN, 0 };
	char c;

	if (poll(&pfd, 1, 2000) != 1)
		return 0;
	return read(fd, &c, 1) == 0 || errno == ECONNRESET;
}

/* ADD_CHANNEL with pass (-1: none) on fd (the control channel): reply type or -1. */
static int
raw_add(int fd, int pass, const char *label)
{
	struct keymsg_buf b = { 0 };
	struct keymsg m;
	uint8_t rb[512];
	int rv;

	keymsg_start(&b, KEYMSG_ADD_CHANNEL, 77);
	keymsg_field_str(&b, KEYTAG_LABEL, label);
	(void)keymsg_finish(&b);
	rv = proxy_fd_send_fds(fd, b.kb_p, b.kb_len, &pass, pass >= 0 ? 1 : 0) ==
	    (ssize_t)b.kb_len ?
	    raw_reply(fd, &m, rb, sizeof(rb)) : -1;
	keymsg_buf_free(&b);
	return rv;
}

/* A new worker channel of our own: the test's end, or -1. */
static int
raw_channel(const char *label)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1)
		bail("socketpair");
	if (raw_add(ctl, sv[1], label) != KEYMSG_OK) {
		close(sv[0]);
		sv[0] = -1;
	}
	close(sv[1]);
	return sv[0];
}

/* A MINT's bytes for A under its policy in force; the malformed cases edit it. */
static void
mint_msg(struct keymsg_buf *b, const char *name)
{
	unsigned char *spki = NULL;
	int n = i2d_PUBKEY(leaf_key, &spki);

	keymsg_start(b, KEYMSG_MINT, 9);
	keymsg_field_str(b, KEYTAG_SANDBOX, "sba");
	keymsg_field_str(b, KEYTAG_NAME, name);
	keymsg_field_str(b, KEYTAG_HASH, hash_a2);
	keymsg_field(b, KEYTAG_SPKI, spki, (size_t)n);
	(void)keymsg_finish(b);
	OPENSSL_free(spki);
}

/* Sends bytes on a fresh channel: 1 if keyd closed it, and still answers. */
static int
malformed(const void *p, size_t len, const char *what)
{
	int fd = raw_channel(what), closed;

	if (fd == -1)
		return ok(0, "%s: a channel to try it on", what);
	closed = raw_write(fd, p, len) == 0 && raw_closed(fd);
	close(fd);
	return ok(closed && alive(), "%s: its channel is closed, keyd answers "
	    "on another", what);
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* SIGN_KEY through the loading end, SIGN_CHECKPOINT through the worker end. */
static void
test_sign(void)
{
	static const char h3[] =
	    "3333333333333333333333333333333333333333333333333333333333333333";
	static const char h7[] =
	    "7777777777777777777777777777777777777777777777777777777777777777";
	char path[600], id[AUDIT_KEYID_HEX + 1], ts[32], canon[AUDIT_CANON_MAX];
	struct audit_signature sig, sig2;
	struct audit_pubkey *pk;
	unsigned char *der;
	size_t derlen, n;
	const long long t = 1796040000123LL;

	snprintf(path, sizeof(path), "%s/sign.key", dir);
	if (audit_sign_keygen(path, id, err, sizeof(err)) == -1 ||
	    audit_sign_key_load(path, &der, &derlen, id, err, sizeof(err)) == -1)
		bail("sign key: %s", err);
	strcat(path, ".pub");
	if ((pk = audit_pubkey_load(path, err, sizeof(err))) == NULL)
		bail("pubkey: %s", err);
	ok(proxy_keyd_sign(3, h3, t, &sig, err, sizeof(err)) == -1 &&
	    strstr(err, "no signing key") != NULL,
	    "before SIGN_KEY: nothing is signed (%s)", err);
	ok(proxy_keyd_sign_key(der, derlen, 3, h3, err, sizeof(err)) == 0,
	    "SIGN_KEY, the chain at seq 3: OK (%s)", err);
	ok(proxy_keyd_sign_key(der, derlen, 0, AUDIT_ZERO_HASH, err,
	    sizeof(err)) == -1 && strstr(err, "given once") != NULL,
	    "a second SIGN_KEY is refused (%s)", err);
	ok(proxy_keyd_sign(3, h7, t, &sig, err, sizeof(err)) == -1 &&
	    strstr(err, "not after") != NULL,
	    "seq 3 with another head than the start's: refused (%s)", err);
	ok(proxy_keyd_sign(3, h3, t, &sig, err, sizeof(err)) == 0 &&
	    sig.as_link_seq == 3 && strcmp(sig.as_link_head, h3) == 0 &&
	    strcmp(sig.as_key, id) == 0,
	    "the head it began at: signed, linked to itself, with the key's id");
	audit_time_format(t, ts, sizeof(ts));
	n = audit_checkpoint_canon(canon, sizeof(canon), sig.as_key, 3, h3, ts, 3,
	    h3);
	ok(n > 0 && audit_pubkey_verify(pk, canon, n, sig.as_sig),
	    "... and the signature verifies under the public key");
	ok(proxy_keyd_sign(3, h3, t, &sig2, err, sizeof(err)) == -1 &&
	    proxy_keyd_sign(2, h3, t, &sig2, err, sizeof(err)) == -1,
	    "that head again, or an earlier one: refused (%s)", err);
	ok(proxy_keyd_sign(7, h7, t + 1, &sig2, err, sizeof(err)) == 0 &&
	    sig2.as_link_seq == 3 && strcmp(sig2.as_link_head, h3) == 0,
	    "a later head: signed, linked to the one before");
	ok(proxy_keyd_sign(0, h7, t, &sig2, err, sizeof(err)) == -1 &&
	    strstr(err, "bad request") != NULL && alive(),
	    "seq 0: refused, keyd goes on (%s)", err);
	OPENSSL_clear_free(der, derlen);
	audit_pubkey_free(pk);
}

static void
test_malformed(void)
{
	struct keymsg_buf b = { 0 }, c = { 0 };
	uint8_t m[512];
	unsigned char *spki = NULL;
	size_t n;
	int sl;

	mint_msg(&b, "api.a.test");
	n = b.kb_len;
	if (n > sizeof(m) - 64)
		bail("mint message too long");
	{
		/* The valid message on a raw channel first: the harness works. */
		struct keymsg r;
		uint8_t rb[4096];
		int fd = raw_channel("raw-good");

		ok(fd != -1 && raw_write(fd, b.kb_p, n) == 0 &&
		    raw_reply(fd, &r, rb, sizeof(rb)) == KEYMSG_CERT,
		    "a raw MINT as ours: a certificate");
		close(fd);
	}
	memcpy(m, b.kb_p, n);
	put32(m, 4097);
	malformed(m, n, "a MINT longer than MINT's maximum");
	memcpy(m, b.kb_p, n);
	put32(m, 0xffffffffU);
	malformed(m, n, "a length of 4 GiB");
	memcpy(m, b.kb_p, n);
	m[4] = 0x7f;
	m[5] = 0x00;
	malformed(m, n, "an unknown type");
	memcpy(m, b.kb_p, n);
	put32(m + KEYMSG_HDR_LEN + 2, 65536);	/* the first field's length */
	malformed(m, n, "a field longer than the body");
	memcpy(m, b.kb_p, n);
	m[n] = 0;
	m[n + 1] = 0;
	m[n + 2] = 0;
	put32(m, (uint32_t)(n - KEYMSG_HDR_LEN + 3));
	malformed(m, n + 3, "bytes after the last field (a truncated field header)");
	/* Whole messages the encoder would write but the decoder refuses. */
	sl = i2d_PUBKEY(leaf_key, &spki);
	keymsg_start(&c, KEYMSG_MINT, 1);
	keymsg_field_str(&c, KEYTAG_SANDBOX, "sba");
	keymsg_field_str(&c, KEYTAG_NAME, "api.a.test");
	keymsg_field_str(&c, KEYTAG_HASH, hash_a);
	(void)keymsg_finish(&c);
	malformed(c.kb_p, c.kb_len, "a required field missing (SPKI)");
	keymsg_buf_free(&c);
	keymsg_start(&c, KEYMSG_MINT, 1);
	keymsg_field_str(&c, KEYTAG_SANDBOX, "sba");
	keymsg_field_str(&c, KEYTAG_NAME, "api.a.test");
	keymsg_field_str(&c, KEYTAG_NAME, "api.a.test");
	keymsg_field_str(&c, KEYTAG_HASH, hash_a);
	keymsg_field(&c, KEYTAG_SPKI, spki, (size_t)sl);
	(void)keymsg_finish(&c);
	malformed(c.kb_p, c.kb_len, "a field repeated (NAME twice)");
	keymsg_buf_free(&c);
	keymsg_start(&c, KEYMSG_MINT, 1);
	keymsg_field_str(&c, KEYTAG_SANDBOX, "sba");
	keymsg_field_str(&c, KEYTAG_NAME, "api.a.test");
	keymsg_field_str(&c, KEYTAG_HASH, hash_a);
	keymsg_field(&c, KEYTAG_SPKI, spki, (size_t)sl);
	keymsg_field_str(&c, 99, "x");
	(void)keymsg_finish(&c);
	malformed(c.kb_p, c.kb_len, "an unknown tag");
	keymsg_buf_free(&c);
	keymsg_start(&c, KEYMSG_MINT, 1);
	keymsg_field_str(&c, KEYTAG_SANDBOX, "sba");
	keymsg_field_str(&c, KEYTAG_NAME, "api.a.test");
	keymsg_field_str(&c, KEYTAG_HASH, "0123");
	keymsg_field(&c, KEYTAG_SPKI, spki, (size_t)sl);
	(void)keymsg_finish(&c);
	malformed(c.kb_p, c.kb_len, "a hash field of the wrong length");
	keymsg_buf_free(&c);
	keymsg_start(&c, KEYMSG_MINT, 1);
	keymsg_field_str(&c, KEYTAG_SANDBOX, "sba");
	keymsg_field(&c, KEYTAG_NAME, "api\0a.test", 10);
	keymsg_field_str(&c, KEYTAG_HASH, hash_a);
	keymsg_field(&c, KEYTAG_SPKI, spki, (size_t)sl);
	(void)keymsg_finish(&c);
	malformed(c.kb_p, c.kb_len, "a NUL inside a name");
	keymsg_buf_free(&c);
	keymsg_start(&c, KEYMSG_LOAD_BEGIN, 1);
	(void)keymsg_finish(&c);
	malformed(c.kb_p, c.kb_len, "LOAD_BEGIN on a worker channel");
	keymsg_buf_free(&c);
	keymsg_start(&c, KEYMSG_OK, 1);
	(void)keymsg_finish(&c);
	malformed(c.kb_p, c.kb_len, "a reply sent to keyd");
	keymsg_buf_free(&c);
	OPENSSL_free(spki);
	keymsg_buf_free(&b);
}

/* A descriptor passed on a worker channel ends that channel. */
static void
test_fd_on_worker(void)
{
	struct keymsg_buf b = { 0 };
	int fd = raw_channel("raw-fd"), closed = 0;

	mint_msg(&b, "api.a.test");
	if (fd != -1 && proxy_fd_send_fds(fd, b.kb_p, b.kb_len, &fd, 1) ==
	    (ssize_t)b.kb_len)
		closed = raw_closed(fd);
	ok(closed && alive(), "a descriptor on a worker channel: that channel "
	    "is closed, keyd answers on another");
	if (fd != -1)
		close(fd);
	keymsg_buf_free(&b);
}

/* keyd's service loop in a child on two new socketpairs: our ends in *rd, *ct. */
static pid_t
spawn(int *rdp, int *ctp)
{
	int rd[2], ct[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, rd) == -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ct) == -1)
		bail("socketpair");
	fflush(NULL);
	if ((pid = fork()) == -1)
		bail("fork");
	if (pid == 0) {
		struct keyd *kd = keyd_new();

		close(rd[0]);
		close(ct[0]);
		_exit(kd == NULL ? 1 : keyd_serve(kd, rd[1], ct[1]));
	}
	close(rd[1]);
	close(ct[1]);
	*rdp = rd[0];
	*ctp = ct[0];
	return pid;
}

/* 1 if pid exits 0 within 2 s. */
static int
exits(pid_t pid)
{
	int i, st;
	pid_t w = 0;

	for (i = 0; i < 40 && (w = waitpid(pid, &st, WNOHANG)) == 0; i++)
		usleep(50000);
	return w == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int
main(void)
{
	struct proxy_keys_build *kb;
	struct keymsg_buf b = { 0 };
	struct keymsg r;
	uint8_t rb[4096];
	int rd, st, fd, i;
	X509 *x = NULL;
	pid_t pid;

	plan_lazy();
	alarm(120);
	signal(SIGPIPE, SIG_IGN);
	dir = tap_tmpdir();
	if ((leaf_key = ca_leaf_key_new()) == NULL)
		bail("leaf key");
	/* Make the two CAs (ca_sandbox_sync as the reader would) before keyd runs. */
	kb = collect(POL_A, POL_B);
	snprintf(hash_a, sizeof(hash_a), "%s", proxy_keys_build_ca(kb, 0)->kc_hash);
	snprintf(hash_b, sizeof(hash_b), "%s", proxy_keys_build_ca(kb, 1)->kc_hash);
	ok(proxy_keys_build_ca(kb, 0)->kc_state == PK_FRESH &&
	    proxy_keys_build_ca(kb, 0)->kc_key != NULL &&
	    proxy_keys_build_ca(kb, 0)->kc_nnames == 2,
	    "collect: A's CA with its key and its two inspected names");
	proxy_keys_build_free(kb);
	cert_a = cacert("sba");
	cert_b = cacert("sbb");

	pid = spawn(&rd, &ctl);
	proxy_keyd_link(rd, pid);
	proxy_keyd_client_init(ctl);

	ok(mint("sba", hash_a, "api.a.test", cert_a, NULL) != CA_OK &&
	    strstr(err, "unknown sandbox") != NULL,
	    "before any load: nothing is signed (%s)", err);
	ok(load(POL_A, POL_B, NULL, NULL) == 0, "LOAD of A and B: OK (%s)",
	    err);

	/* What A's policy inspects. */
	ok(mint("sba", hash_a, "api.a.test", cert_a, &x) == CA_OK,
	    "MINT api.a.test as A: signed (%s)", err);
	ok(x != NULL && issued(cert_a, x, "api.a.test"),
	    "... the leaf verifies against A's CA for api.a.test");
	ok(x != NULL && !issued(cert_b, x, "api.a.test"),
	    "... and not against B's");
	ok(x != NULL && X509_check_private_key(x, leaf_key) == 1,
	    "... and carries the worker's public key");
	X509_free(x);
	ok(mint("sba", hash_a, "Deep.Files.A.Test.", cert_a, &x) == CA_OK &&
	    issued(cert_a, x, "deep.files.a.test"),
	    "MINT under A's wildcard (normalised): signed, verifies");
	X509_free(x);
	/* What it does not. */
	ok(mint("sba", hash_a, "evil.test", cert_a, NULL) != CA_OK &&
	    strstr(err, "name not inspected") != NULL,
	    "a name A does not inspect: refused (%s)", err);
	ok(mint("sba", hash_a, "splice.a.test", cert_a, NULL) != CA_OK,
	    "a name A splices: refused");
	ok(mint("sba", hash_a, "files.a.test", cert_a, NULL) != CA_OK,
	    "the wildcard's own suffix: refused (\"*.s\" is below s only)");
	ok(mint("sba", hash_a, "api.b.test", cert_a, NULL) != CA_OK &&
	    strstr(err, "name not inspected") != NULL,
	    "B's name asked as A: refused (%s)", err);
	ok(mint("sbb", hash_b, "api.b.test", cert_b, &x) == CA_OK &&
	    issued(cert_b, x, "api.b.test"),
	    "B's name asked as B: signed by B's CA");
	X509_free(x);
	ok(mint("sbb", hash_a, "api.b.test", cert_b, NULL) != CA_OK &&
	    strstr(err, "stale policy") != NULL,
	    "B with A's policy hash: refused (%s)", err);
	ok(mint("sbc", hash_a, "api.a.test", cert_a, NULL) != CA_OK &&
	    strstr(err, "unknown sandbox") != NULL,
	    "a sandbox keyd was not loaded with: refused (%s)", err);
	ok(mint("sba", hash_a, "1.2.3.4", cert_a, NULL) != CA_OK,
	    "an IP literal: refused");
	ok(mint("sbb", hash_b, "api.b.test", cert_a, NULL) != CA_OK &&
	    strstr(err, "not the CA's") != NULL,
	    "a leaf that does not verify under the CA the worker holds: refused "
	    "by the worker (%s)", err);

	/* Reloads: the policy generation in force. */
	ok(load(POL_A2, POL_B, NULL, hash_a2) == 0 && strcmp(hash_a, hash_a2) != 0,
	    "reload: A's policy changed (same names, so the same CA)");
	ok(mint("sba", hash_a, "api.a.test", cert_a, NULL) != CA_OK &&
	    strstr(err, "stale policy") != NULL,
	    "the old policy hash: stale, refused (%s)", err);
	ok(mint("sba", hash_a2, "api.a.test", cert_a, NULL) == CA_OK,
	    "the new one: signed");
	ok(load(POL_BAD, POL_B, NULL, NULL) == 0 &&
	    mint("sba", hash_a2, "api.a.test", cert_a, NULL) == CA_OK,
	    "reload with A's policy broken (the proxy keeps A's): A's entry kept");
	ok(load(NULL, POL_B, NULL, NULL) == 0 &&
	    mint("sba", hash_a2, "api.a.test", cert_a, NULL) == CA_OK,
	    "... and with A's policy unreadable: kept");
	ok(load(POL_A, POL_B, "sbb", NULL) == 0 &&
	    mint("sba", hash_a2, "api.a.test", cert_a, NULL) == CA_OK &&
	    mint("sba", hash_a, "api.a.test", cert_a, NULL) != CA_OK,
	    "an attach of B with A's file changed: A keeps its entry in force");
	ok(load(POL_A2, NULL, NULL, NULL) == 0 &&
	    mint("sbb", hash_b, "api.b.test", cert_b, NULL) == CA_OK,
	    "B's file unreadable: B keeps its entry");
	ok(load(POL_A2, "{\"policy\":\"none\",\"rules\":[]}", NULL, NULL) == 0 &&
	    mint("sbb", hash_b, "api.b.test", cert_b, NULL) != CA_OK &&
	    strstr(err, "unknown sandbox") != NULL,
	    "B's new policy inspects nothing: B's CA is gone from keyd (%s)", err);
	ok(load(POL_A2, POL_B, NULL, NULL) == 0 &&
	    mint("sbb", hash_b, "api.b.test", cert_b, NULL) == CA_OK,
	    "B inspecting again: signed");

	/*
	 * keyd's name check is its own, not only the CA's: a CA constrained to two
	 * names, loaded with one of them as what the policy inspects.
	 */
	{
		static const char *const wn[2] = { "api.w.test", "extra.w.test" };
		struct ca *ca;
		uint8_t *k = NULL, *c = NULL;
		size_t kl, cl;
		X509 *cw;
		int reissued, rv;

		if (ca_sandbox_sync(dir, "sbw", wn, 2, &reissued, err,
		    sizeof(err)) != CA_OK ||
		    (ca = ca_load(dir, "sbw", NULL, err, sizeof(err))) == NULL ||
		    ca_export_der(ca, &k, &kl, &c, &cl) == -1)
			bail("sbw: %s", err);
		cw = cacert("sbw");
		keymsg_start(&b, KEYMSG_LOAD_BEGIN, 4);
		(void)keymsg_finish(&b);
		keymsg_start(&b, KEYMSG_LOAD_KEEP, 4);
		keymsg_field_str(&b, KEYTAG_SANDBOX, "sba");
		keymsg_field_str(&b, KEYTAG_HASH, hash_a2);
		(void)keymsg_finish(&b);
		keymsg_start(&b, KEYMSG_LOAD_CA, 4);
		keymsg_field_str(&b, KEYTAG_SANDBOX, "sbw");
		keymsg_field_str(&b, KEYTAG_HASH, hash_b);
		keymsg_field(&b, KEYTAG_CERT, c, cl);
		keymsg_field(&b, KEYTAG_KEY, k, kl);
		keymsg_field_str(&b, KEYTAG_NAME, "api.w.test");
		(void)keymsg_finish(&b);
		keymsg_start(&b, KEYMSG_LOAD_END, 4);
		keymsg_field_u32(&b, KEYTAG_COUNT, 2);
		(void)keymsg_finish(&b);
		rv = raw_write(rd, b.kb_p, b.kb_len) == 0 ?
		    raw_reply(rd, &r, rb, sizeof(rb)) : -1;
		ok(rv == KEYMSG_OK, "a raw LOAD: A kept, W with one inspected name "
		    "under a CA for two");
		ok(mint("sbw", hash_b, "extra.w.test", cw, NULL) != CA_OK &&
		    strstr(err, "name not inspected") != NULL,
		    "a name W's CA permits but its policy does not inspect: "
		    "refused by keyd (%s)", err);
		ok(mint("sbw", hash_b, "api.w.test", cw, NULL) == CA_OK &&
		    mint("sba", hash_a2, "api.a.test", cert_a, NULL) == CA_OK,
		    "... its inspected name, and A's, signed");
		ok(mint("sbb", hash_b, "api.b.test", cert_b, NULL) != CA_OK,
		    "... B, in neither the set nor a KEEP, is gone");
		keymsg_buf_free(&b);
		OPENSSL_clear_free(k, kl);
		OPENSSL_free(c);
		X509_free(cw);
		ca_free(ca);
	}
	ok(load(POL_A2, POL_B, NULL, NULL) == 0 &&
	    mint("sbb", hash_b, "api.b.test", cert_b, NULL) == CA_OK,
	    "the reader's next load puts B back");

	/* A set keyd refuses leaves the previous one in force. */
	{
		struct ca *ca = ca_load(dir, "sbb", NULL, err, sizeof(err));
		uint8_t *k = NULL, *c = NULL;
		size_t kl, cl;
		int rv;

		if (ca == NULL || ca_export_der(ca, &k, &kl, &c, &cl) == -1)
			bail("export B");
		OPENSSL_free(c);
		c = NULL;
		i = i2d_X509(cert_a, &c);
		keymsg_start(&b, KEYMSG_LOAD_BEGIN, 5);
		(void)keymsg_finish(&b);
		keymsg_start(&b, KEYMSG_LOAD_CA, 5);
		keymsg_field_str(&b, KEYTAG_SANDBOX, "sba");
		keymsg_field_str(&b, KEYTAG_HASH, hash_a);
		keymsg_field(&b, KEYTAG_CERT, c, (size_t)i);
		keymsg_field(&b, KEYTAG_KEY, k, kl);
		keymsg_field_str(&b, KEYTAG_NAME, "api.a.test");
		(void)keymsg_finish(&b);
		keymsg_start(&b, KEYMSG_LOAD_END, 5);
		keymsg_field_u32(&b, KEYTAG_COUNT, 1);
		(void)keymsg_finish(&b);
		rv = raw_write(rd, b.kb_p, b.kb_len) == 0 ?
		    raw_reply(rd, &r, rb, sizeof(rb)) : -1;
		ok(rv == KEYMSG_ERR && r.km_code == KEYERR_LOAD_REFUSED,
		    "LOAD_CA with B's key under A's certificate: the set refused "
		    "(%.*s)", rv == KEYMSG_ERR ? (int)r.km_message.len : 0,
		    rv == KEYMSG_ERR ? (const char *)r.km_message.v : "");
		ok(mint("sba", hash_a2, "api.a.test", cert_a, NULL) == CA_OK &&
		    mint("sbb", hash_b, "api.b.test", cert_b, NULL) == CA_OK,
		    "... and the previous set is still in force");
		keymsg_buf_free(&b);
		OPENSSL_clear_free(k, kl);
		OPENSSL_free(c);
		ca_free(ca);
	}
	keymsg_start(&b, KEYMSG_LOAD_BEGIN, 6);
	(void)keymsg_finish(&b);
	keymsg_start(&b, KEYMSG_LOAD_END, 6);
	keymsg_field_u32(&b, KEYTAG_COUNT, 3);
	(void)keymsg_finish(&b);
	ok(raw_write(rd, b.kb_p, b.kb_len) == 0 &&
	    raw_reply(rd, &r, rb, sizeof(rb)) == KEYMSG_ERR && alive(),
	    "LOAD_END counting entries that never came: refused, set kept");
	keymsg_buf_free(&b);

	test_sign();
	test_malformed();
	test_fd_on_worker();
	ok(raw_add(ctl, -1, "no-fd") == -1 && raw_closed(ctl),
	    "ADD_CHANNEL without a descriptor: the control channel is closed");
	ok(alive(), "... keyd still answers on its worker channels");
	ctl = -1;

	/* A worker message on the reader channel ends that channel, not keyd. */
	mint_msg(&b, "api.a.test");
	ok(raw_write(rd, b.kb_p, b.kb_len) == 0 && raw_closed(rd),
	    "MINT on the reader channel: that channel is closed");
	keymsg_buf_free(&b);
	ok(alive(), "... and a worker channel still gets its leaf");
	ok(waitpid(pid, &st, WNOHANG) == 0, "keyd is still running");

	/*
	 * The control channel is gone (closed by keyd above), the reader's too:
	 * once the last worker channel closes keyd has nothing to serve and ends.
	 */
	proxy_keyd_chan_close();
	ok(exits(pid), "with no channel left keyd exits 0");

	/* airlockd gone (its control channel closed): keyd ends, reader or not. */
	pid = spawn(&rd, &fd);
	close(fd);
	ok(exits(pid), "the control channel's peer gone: keyd exits 0 (its reader "
	    "channel still open)");
	close(rd);
	X509_free(cert_a);
	X509_free(cert_b);
	EVP_PKEY_free(leaf_key);
	return 0;
}
