/*
 * tests/unit/ca_mint.c: the interception CAs and their leaves.  ca init (modes,
 * --force), the CA's fields, per-sandbox name-constrained CAs (sync, reissue), leaf
 * fields, X509_verify_cert with the expected host, refusals, the leaf cache (hits,
 * LRU eviction, expiry, threads), and the name-constraints experiment: leaves the
 * same sandbox key signs for names outside the constraints must fail verification.
 */
#include <sys/stat.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "../tap.h"
#include "ca.h"

static char err[512];

static int
mode_of(const char *dir, const char *name)
{
	char p[1200];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (stat(p, &st) == -1)
		return -1;
	return st.st_mode & 07777;
}

/* Verifies leaf against ca as a TLS server for host; returns the X509_V_ code. */
static int
verify(X509 *cacert, X509 *leaf, const char *host)
{
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509_VERIFY_PARAM *vp;
	int rv;

	X509_STORE_add_cert(st, cacert);
	X509_STORE_CTX_init(ctx, st, leaf, NULL);
	vp = X509_STORE_CTX_get0_param(ctx);
	X509_VERIFY_PARAM_set_purpose(vp, X509_PURPOSE_SSL_SERVER);
	if (host != NULL)
		X509_VERIFY_PARAM_set1_host(vp, host, 0);
	rv = X509_verify_cert(ctx) == 1 ? X509_V_OK :
	    X509_STORE_CTX_get_error(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	return rv;
}

/* What a thief holding the sandbox CA key could sign: any extensions at all. */
static X509 *
forge(X509 *cacert, EVP_PKEY *cakey, EVP_PKEY *leafkey, const char *cn,
    const char *san)
{
	X509 *x = X509_new();
	X509V3_CTX c;
	X509_EXTENSION *e;

	X509_set_version(x, X509_VERSION_3);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 4242);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
	    (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(cacert));
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, leafkey);
	X509V3_set_ctx_nodb(&c);
	X509V3_set_ctx(&c, cacert, x, NULL, NULL, 0);
	if (san != NULL) {
		e = X509V3_EXT_conf_nid(NULL, &c, NID_subject_alt_name, san);
		X509_add_ext(x, e, -1);
		X509_EXTENSION_free(e);
	}
	e = X509V3_EXT_conf_nid(NULL, &c, NID_ext_key_usage, "serverAuth");
	X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	X509_sign(x, cakey, EVP_sha256());
	return x;
}

static long long
asn1_time_delta(const ASN1_TIME *t)
{
	int day, sec;

	ASN1_TIME_diff(&day, &sec, NULL, t);	/* t - now */
	return (long long)day * 86400 + sec;
}

static void
test_host_ca(const char *dir)
{
	char subj[256];
	struct ca *ca;
	X509 *x, *leaf;
	EVP_PKEY *lk;
	BIGNUM *bn;
	int rv, crit;
	BASIC_CONSTRAINTS *bc;
	ASN1_BIT_STRING *ku;
	long long d;

	ca = ca_load(dir, NULL, &rv, err, sizeof(err));
	ok(ca == NULL && rv == CA_ERR_ABSENT, "no CA yet: %s", err);
	is_int(CA_OK, ca_init(dir, 0, err, sizeof(err)), "ca init: %s", err);
	is_int(0600, mode_of(dir, "ca.key"), "ca.key 0600");
	is_int(0644, mode_of(dir, "ca.pem"), "ca.pem 0644");
	is_int(CA_ERR_EXISTS, ca_init(dir, 0, err, sizeof(err)),
	    "ca init again refused");
	ok(strstr(err, "--force") != NULL, "... message mentions --force: %s", err);
	if ((ca = ca_load(dir, NULL, &rv, err, sizeof(err))) == NULL)
		bail("load: %s", err);
	x = ca_cert(ca);
	ok(!ca_is_constrained(ca), "host CA: no name constraints");
	X509_NAME_oneline(X509_get_subject_name(x), subj, sizeof(subj));
	ok(strncmp(subj, "/CN=airlock interception CA (", 29) == 0, "subject %s",
	    subj);
	ok(X509_check_issued(x, x) == X509_V_OK, "self-signed");
	bc = X509_get_ext_d2i(x, NID_basic_constraints, &crit, NULL);
	ok(bc != NULL && bc->ca && crit == 1 && bc->pathlen != NULL &&
	    ASN1_INTEGER_get(bc->pathlen) == 0, "basicConstraints critical "
	    "CA:TRUE pathlen:0");
	BASIC_CONSTRAINTS_free(bc);
	ku = X509_get_ext_d2i(x, NID_key_usage, &crit, NULL);
	ok(ku != NULL && crit == 1 && ASN1_BIT_STRING_get_bit(ku, 5) &&
	    ASN1_BIT_STRING_get_bit(ku, 6) && !ASN1_BIT_STRING_get_bit(ku, 0),
	    "keyUsage critical keyCertSign+cRLSign only");
	ASN1_BIT_STRING_free(ku);
	ok(EVP_PKEY_is_a(X509_get0_pubkey(x), "EC") &&
	    EVP_PKEY_get_bits(X509_get0_pubkey(x)) == 256, "P-256 key");
	d = asn1_time_delta(X509_get0_notAfter(x));
	ok(d > 3649LL * 86400 && d <= 3650LL * 86400, "valid ~10 years");
	bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	ok(BN_num_bits(bn) <= 127 && BN_num_bits(bn) > 64 && !BN_is_negative(bn),
	    "random serial (%d bits)", BN_num_bits(bn));
	BN_free(bn);
	lk = ca_leaf_key_new();
	is_int(CA_OK, ca_leaf_mint(ca, "anything.example.net", lk, &leaf, err,
	    sizeof(err)), "host CA mints any name");
	is_int(X509_V_OK, verify(x, leaf, "anything.example.net"),
	    "... and it verifies");
	X509_free(leaf);
	EVP_PKEY_free(lk);
	ca_free(ca);

	is_int(CA_OK, ca_init(dir, 1, err, sizeof(err)), "ca init --force");
	{
		char p[1200];

		snprintf(p, sizeof(p), "%s/ca.key", dir);
		chmod(p, 0644);
		ca = ca_load(dir, NULL, &rv, err, sizeof(err));
		ok(ca == NULL && rv == CA_ERR_PERM, "ca.key 0644 refused");
		is_string("ca.key: mode 0644, must be 0600", err, "... message");
		chmod(p, 0640);
		ca = ca_load(dir, NULL, &rv, err, sizeof(err));
		ok(ca == NULL && rv == CA_ERR_PERM, "ca.key 0640 refused");
		chmod(p, 0600);
	}
}

struct thr {
	struct ca_leaf_cache *c;
	struct ca	*ca;
	EVP_PKEY	*k;
	int		 fails;
};

static void *
thr_run(void *arg)
{
	static const char *names[] = { "a.inspect.test", "b.inspect.test",
	    "c.inspect.test", "d.inspect.test", "e.inspect.test",
	    "api.example.com" };
	struct thr *t = arg;
	char e[256];
	X509 *x;
	int i;

	for (i = 0; i < 300; i++) {
		if (ca_leaf_get(t->c, t->ca, names[i % 6], t->k, &x, e,
		    sizeof(e)) != CA_OK || x == NULL)
			t->fails++;
		X509_free(x);
	}
	return NULL;
}

static void
test_sandbox_ca(const char *dir)
{
	const char *names[] = { "api.example.com", "*.inspect.test",
	    "API.Example.COM." };
	const char *names2[] = { "api.example.com" };
	const char *bad[] = { "*.com" };
	char p[1200], subj[256];
	struct ca *ca;
	X509 *x, *leaf, *leaf2, *f;
	EVP_PKEY *lk, *cakey;
	ASN1_INTEGER *serial1;
	GENERAL_NAMES *gens;
	GENERAL_NAME *g;
	EXTENDED_KEY_USAGE *eku;
	ASN1_BIT_STRING *ku;
	BIGNUM *bn;
	FILE *fp;
	int rv, re, crit;
	long long d;

	is_int(CA_ERR_NAME, ca_sandbox_sync(dir, "../x", names, 3, &re, err,
	    sizeof(err)), "invalid sandbox name refused");
	is_int(CA_ERR_NAME, ca_sandbox_sync(dir, "demo", bad, 1, &re, err,
	    sizeof(err)), "*.com refused: %s", err);
	is_int(CA_ERR_NAME, ca_sandbox_sync(dir, "demo", names, 0, &re, err,
	    sizeof(err)), "no names refused: %s", err);
	ca = ca_load(dir, "demo", &rv, err, sizeof(err));
	ok(ca == NULL && rv == CA_ERR_ABSENT, "no sandbox CA yet: %s", err);
	is_int(CA_OK, ca_sandbox_sync(dir, "demo", names, 3, &re, err,
	    sizeof(err)), "sandbox CA made: %s", err);
	is_int(0, re, "... not a reissue");
	is_int(0600, mode_of(dir, "ca/demo.key"), "ca/demo.key 0600");
	is_int(0700, mode_of(dir, "ca"), "ca/ 0700");
	if ((ca = ca_load(dir, "demo", &rv, err, sizeof(err))) == NULL)
		bail("load demo: %s", err);
	ok(ca_is_constrained(ca), "sandbox CA is constrained");
	x = ca_cert(ca);
	X509_NAME_oneline(X509_get_subject_name(x), subj, sizeof(subj));
	ok(strncmp(subj, "/CN=airlock sandbox demo CA (", 29) == 0, "subject %s",
	    subj);
	serial1 = ASN1_INTEGER_dup(X509_get0_serialNumber(x));
	{
		NAME_CONSTRAINTS *nc = X509_get_ext_d2i(x, NID_name_constraints,
		    &crit, NULL);

		ok(nc != NULL && crit == 1, "nameConstraints critical");
		/* api.example.com, .inspect.test */
		is_int(2, nc ? sk_GENERAL_SUBTREE_num(nc->permittedSubtrees) : -1,
		    "two permitted subtrees (duplicate name folded)");
		/* .api.example.com, 0.0.0.0/0, ::/0 */
		is_int(3, nc ? sk_GENERAL_SUBTREE_num(nc->excludedSubtrees) : -1,
		    "three excluded subtrees");
		NAME_CONSTRAINTS_free(nc);
	}
	ca_free(ca);
	is_int(CA_OK, ca_sandbox_sync(dir, "demo", names, 3, &re, err,
	    sizeof(err)), "sync with the same names");
	is_int(0, re, "... keeps the CA");
	ca = ca_load(dir, "demo", &rv, err, sizeof(err));
	ok(ca != NULL && ASN1_INTEGER_cmp(serial1,
	    X509_get0_serialNumber(ca_cert(ca))) == 0, "... same certificate");
	ca_free(ca);
	is_int(CA_OK, ca_sandbox_sync(dir, "demo", names2, 1, &re, err,
	    sizeof(err)), "sync with other names");
	is_int(1, re, "... reissues");
	is_int(CA_OK, ca_sandbox_sync(dir, "demo", names, 3, &re, err,
	    sizeof(err)), "and back");
	ASN1_INTEGER_free(serial1);

	if ((ca = ca_load(dir, "demo", &rv, err, sizeof(err))) == NULL)
		bail("load demo: %s", err);
	x = ca_cert(ca);
	lk = ca_leaf_key_new();
	is_int(CA_OK, ca_leaf_mint(ca, "API.example.com", lk, &leaf, err,
	    sizeof(err)), "mint api.example.com: %s", err);
	is_int(CA_OK, ca_leaf_mint(ca, "api.example.com", lk, &leaf2, err,
	    sizeof(err)), "mint it again");
	ok(ASN1_INTEGER_cmp(X509_get0_serialNumber(leaf),
	    X509_get0_serialNumber(leaf2)) != 0, "two mints, two serials");
	X509_free(leaf2);
	bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(leaf), NULL);
	ok(BN_num_bits(bn) <= 127 && BN_num_bits(bn) > 64 && !BN_is_negative(bn),
	    "leaf serial: positive, <= 127 bits (%d)", BN_num_bits(bn));
	ok(ASN1_STRING_length(X509_get0_serialNumber(leaf)) <= 16,
	    "serial fits 16 bytes");
	BN_free(bn);
	gens = X509_get_ext_d2i(leaf, NID_subject_alt_name, &crit, NULL);
	ok(gens != NULL && sk_GENERAL_NAME_num(gens) == 1, "exactly one SAN");
	g = gens ? sk_GENERAL_NAME_value(gens, 0) : NULL;
	ok(g != NULL && g->type == GEN_DNS && ASN1_STRING_length(g->d.dNSName) ==
	    15 && memcmp(ASN1_STRING_get0_data(g->d.dNSName), "api.example.com",
	    15) == 0, "SAN dNSName = normalised name");
	GENERAL_NAMES_free(gens);
	eku = X509_get_ext_d2i(leaf, NID_ext_key_usage, &crit, NULL);
	ok(eku != NULL && sk_ASN1_OBJECT_num(eku) == 1 &&
	    OBJ_obj2nid(sk_ASN1_OBJECT_value(eku, 0)) == NID_server_auth,
	    "EKU serverAuth only");
	EXTENDED_KEY_USAGE_free(eku);
	ku = X509_get_ext_d2i(leaf, NID_key_usage, &crit, NULL);
	ok(ku != NULL && crit == 1 && ASN1_BIT_STRING_get_bit(ku, 0) &&
	    !ASN1_BIT_STRING_get_bit(ku, 5), "keyUsage digitalSignature");
	ASN1_BIT_STRING_free(ku);
	ok(!X509_check_ca(leaf), "leaf is not a CA");
	d = asn1_time_delta(X509_get0_notBefore(leaf));
	ok(d <= -3600 && d > -3600 - 60, "notBefore = now - 1 h (%lld)", d);
	d = asn1_time_delta(X509_get0_notAfter(leaf));
	ok(d <= 86400 && d > 86400 - 60, "notAfter = now + 24 h (%lld)", d);
	ok(X509_get0_authority_key_id(leaf) != NULL &&
	    ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(leaf),
	    X509_get0_subject_key_id(x)) == 0, "AKI = CA's SKI");
	ok(X509_get0_subject_key_id(leaf) != NULL, "leaf has an SKI");
	is_int(X509_V_OK, verify(x, leaf, "api.example.com"),
	    "X509_verify_cert with set1_host(api.example.com)");
	is_int(X509_V_ERR_HOSTNAME_MISMATCH, verify(x, leaf, "other.example.com"),
	    "... and not for another host");
	X509_free(leaf);
	is_int(CA_OK, ca_leaf_mint(ca, "deep.x.inspect.test", lk, &leaf, err,
	    sizeof(err)), "mint deep.x.inspect.test (under *.inspect.test)");
	is_int(X509_V_OK, verify(x, leaf, "deep.x.inspect.test"), "... verifies");
	X509_free(leaf);

	/* Refusals, before any signing. */
	is_int(CA_ERR_NAME, ca_leaf_mint(ca, "evil.test", lk, &leaf, err,
	    sizeof(err)), "evil.test: outside the constraints");
	ok(leaf == NULL && strstr(err, "outside") != NULL, "... %s", err);
	is_int(CA_ERR_NAME, ca_leaf_mint(ca, "inspect.test", lk, &leaf, err,
	    sizeof(err)), "inspect.test itself: outside *.inspect.test");
	is_int(CA_ERR_NAME, ca_leaf_mint(ca, "x.api.example.com", lk, &leaf, err,
	    sizeof(err)), "below an exact name: outside");
	is_int(CA_ERR_NAME, ca_leaf_mint(ca, "*.inspect.test", lk, &leaf, err,
	    sizeof(err)), "wildcard refused: %s", err);
	is_int(CA_ERR_NAME, ca_leaf_mint(ca, "127.0.0.1", lk, &leaf, err,
	    sizeof(err)), "IPv4 literal refused: %s", err);
	is_int(CA_ERR_NAME, ca_leaf_mint(ca, "::1", lk, &leaf, err, sizeof(err)),
	    "IPv6 literal refused");
	is_int(CA_ERR_NAME, ca_leaf_mint(ca, "a b.inspect.test", lk, &leaf, err,
	    sizeof(err)), "space refused");
	ok(ca_name_is_permitted(ca, "api.example.com") &&
	    ca_name_is_permitted(ca, "z.inspect.test") &&
	    !ca_name_is_permitted(ca, "inspect.test") &&
	    !ca_name_is_permitted(ca, "evil.test") &&
	    !ca_name_is_permitted(ca, "1.2.3.4"), "ca_name_is_permitted");

	/* The experiment: what a stolen sandbox key can sign does not verify. */
	snprintf(p, sizeof(p), "%s/ca/demo.key", dir);
	fp = fopen(p, "r");
	cakey = PEM_read_PrivateKey(fp, NULL, NULL, NULL);
	fclose(fp);
	ok(cakey != NULL, "read the sandbox key as a thief would");
	f = forge(x, cakey, lk, "api.example.com", "DNS:api.example.com");
	is_int(X509_V_OK, verify(x, f, "api.example.com"),
	    "control: a forged leaf for a permitted name verifies");
	X509_free(f);
	f = forge(x, cakey, lk, "evil.test", "DNS:evil.test");
	is_int(X509_V_ERR_PERMITTED_VIOLATION, verify(x, f, "evil.test"),
	    "forged leaf for evil.test: permitted subtree violation");
	X509_free(f);
	f = forge(x, cakey, lk, "x.api.example.com", "DNS:x.api.example.com");
	is_int(X509_V_ERR_EXCLUDED_VIOLATION, verify(x, f, "x.api.example.com"),
	    "forged leaf below an exact name: excluded subtree violation");
	X509_free(f);
	f = forge(x, cakey, lk, "ip", "IP:127.0.0.1");
	{
		X509_STORE *st = X509_STORE_new();
		X509_STORE_CTX *ctx = X509_STORE_CTX_new();

		X509_STORE_add_cert(st, x);
		X509_STORE_CTX_init(ctx, st, f, NULL);
		X509_VERIFY_PARAM_set1_ip_asc(X509_STORE_CTX_get0_param(ctx),
		    "127.0.0.1");
		is_int(0, X509_verify_cert(ctx), "forged leaf for IP 127.0.0.1 "
		    "refused");
		is_int(X509_V_ERR_EXCLUDED_VIOLATION, X509_STORE_CTX_get_error(ctx),
		    "... excluded subtree violation");
		X509_STORE_CTX_free(ctx);
		X509_STORE_free(st);
	}
	X509_free(f);
	f = forge(x, cakey, lk, "evil.test", NULL);
	ok(verify(x, f, "evil.test") != X509_V_OK,
	    "forged CN-only leaf for evil.test refused (%d)",
	    verify(x, f, "evil.test"));
	X509_free(f);
	EVP_PKEY_free(cakey);

	/* The cache. */
	{
		struct ca_leaf_cache *c = ca_leaf_cache_new(2);
		X509 *a1, *a2, *b, *cc;
		struct thr t[4];
		pthread_t th[4];
		int i, fails = 0;

		ok(c != NULL, "cache of 2");
		is_int(CA_OK, ca_leaf_get(c, ca, "a.inspect.test", lk, &a1, err,
		    sizeof(err)), "get a (mint)");
		is_int(CA_OK, ca_leaf_get(c, ca, "A.inspect.test.", lk, &a2, err,
		    sizeof(err)), "get A. (normalised: hit)");
		ok(a1 == a2, "cache hit returns the same certificate");
		X509_free(a2);
		is_int(CA_OK, ca_leaf_get(c, ca, "b.inspect.test", lk, &b, err,
		    sizeof(err)), "get b");
		a2 = ca_leaf_cache_get(c, "a.inspect.test", time(NULL));
		ok(a2 == a1, "a still cached, now most recent");
		X509_free(a2);
		is_int(CA_OK, ca_leaf_get(c, ca, "c.inspect.test", lk, &cc, err,
		    sizeof(err)), "get c");
		is_int(2, (long long)ca_leaf_cache_count(c), "bounded at 2");
		ok(ca_leaf_cache_get(c, "b.inspect.test", time(NULL)) == NULL,
		    "b (least recently used) evicted");
		a2 = ca_leaf_cache_get(c, "a.inspect.test", time(NULL));
		ok(a2 == a1, "a kept");
		X509_free(a2);
		ok(ca_leaf_cache_get(c, "a.inspect.test", time(NULL) + 86400 -
		    3600) == NULL, "a expired 1 h before notAfter");
		is_int(1, (long long)ca_leaf_cache_count(c), "... and dropped");
		X509_free(b);
		is_int(CA_ERR_NAME, ca_leaf_get(c, ca, "evil.test", lk, &b, err,
		    sizeof(err)), "get of a refused name fails");
		X509_free(a1);
		X509_free(cc);
		X509_free(b);
		ca_leaf_cache_free(c);

		c = ca_leaf_cache_new(4);
		for (i = 0; i < 4; i++) {
			t[i] = (struct thr){ c, ca, lk, 0 };
			pthread_create(&th[i], NULL, thr_run, &t[i]);
		}
		for (i = 0; i < 4; i++) {
			pthread_join(th[i], NULL);
			fails += t[i].fails;
		}
		is_int(0, fails, "4 threads x 300 gets over 6 names, cache of 4");
		is_int(4, (long long)ca_leaf_cache_count(c), "cache full at 4");
		ca_leaf_cache_free(c);
		ok(ca_leaf_cache_new(0) == NULL, "a cache of 0 is refused");
	}
	EVP_PKEY_free(lk);
	ca_free(ca);

	snprintf(p, sizeof(p), "%s/ca/demo.key", dir);
	chmod(p, 0604);
	ca = ca_load(dir, "demo", &rv, err, sizeof(err));
	ok(ca == NULL && rv == CA_ERR_PERM, "demo.key 0604 refused: %s", err);
	is_int(CA_ERR_PERM, ca_sandbox_sync(dir, "demo", names2, 1, &re, err,
	    sizeof(err)), "sync refuses to replace a loose key silently");
	chmod(p, 0600);
}

int
main(void)
{
	char dir[1024];

	plan_lazy();
	snprintf(dir, sizeof(dir), "%s/state", tap_tmpdir());
	test_host_ca(dir);
	test_sandbox_ca(dir);
	return 0;
}
