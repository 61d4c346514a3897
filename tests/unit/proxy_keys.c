/*
 * tests/unit/proxy_keys.c: airlockd's key material (proxy/proxy_keys.c) without a
 * daemon: the image the root reader builds from a state directory (vault, host CA,
 * sandbox CAs synced to the inspected names), parsed back; the policy/vault binding
 * check (exact, wildcard coverage, refusals; an upstream proxy's credential, the
 * policy's own or airlock.json's); airlock's own CAs recognised; a
 * malformed or truncated image refused; an unusable vault reported.
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../proxy/proxy_globals.h"
#include "../../proxy/proxy_keys.h"
#include "../../proxy/proxy_scan.h"
#include "../tap.h"
#include "ca.h"
#include "policy.h"

#include "vault.h"

#define VALUE	"unit-CANARY-value-0123456789"

static char err[512];

static void
put(struct vault *v, const char *name, const char *host, const char *value)
{
	const char *hosts[1] = { host };
	struct secret s = { (uint8_t *)(uintptr_t)value, strlen(value) };

	if (vault_secret_put(v, name, hosts, 1, NULL, &s, err, sizeof(err)) != VAULT_OK)
		bail("put %s: %s", name, err);
}

static struct policy *
pol(const char *json)
{
	struct policy *p;

	if ((p = policy_load_buf(json, strlen(json), "t.json", NULL)) == NULL)
		bail("policy does not load: %s", json);
	return p;
}

static int
check(const struct proxy_keys *k, const char *json)
{
	struct policy *p = pol(json);
	int rv;

	err[0] = '\0';
	rv = proxy_keys_check_policy(k, p, err, sizeof(err));
	policy_free(p);
	return rv;
}

/* b holds one file, json, and nothing else. */
static void
bset(struct policy_bundle *b, const char *json)
{
	policy_bundle_free(b);
	if (policy_bundle_add(b, "sb.json", json, strlen(json), NULL) == -1)
		bail("out of memory");
}

static struct proxy_keys *
load(const char *dir, const struct proxy_keys_src *src, size_t n)
{
	struct proxy_keys *k;
	uint8_t *img;
	size_t len;

	if (proxy_keys_build(dir, src, n, &img, &len) == -1)
		bail("build");
	k = proxy_keys_parse(img, len, err, sizeof(err));
	proxy_keys_image_free(img, len);
	return k;
}

int
main(void)
{
	const char *dir = tap_tmpdir();
	static const char inspect[] = "{\"policy\":\"p\",\"rules\":["
	    "{\"id\":\"a\",\"host\":\"api.example.com\",\"tls\":\"inspect\"},"
	    "{\"id\":\"b\",\"host\":\"*.files.example.com\",\"tls\":\"inspect\"},"
	    "{\"id\":\"c\",\"host\":\"splice.example.com\"}]}";
	static const char none[] = "{\"policy\":\"q\",\"rules\":[]}";
	static const char broken[] = "{\"policy\":";
	struct policy_bundle b1 = { NULL, 0 }, b2 = { NULL, 0 }, b9 = { NULL, 0 };
	/*
	 * sb9's policy does not load: the one in force is its previous one, which the
	 * reader cannot know, so the images that count it carry every value.
	 */
	struct proxy_keys_src src[3] = {
		{ "sb1", &b1 },
		{ "sb2", &b2 },
		{ "sb9", &b9 },
	};
	struct proxy_keys *k;
	const struct proxy_secret *s;
	struct proxy_sbca *ca;
	struct vault *v;
	struct ca *host;
	uint8_t *img;
	size_t len, cut;
	char path[1200];
	const char *why;
	int rv;

	plan_lazy();
	if (policy_bundle_add(&b1, "sb1.json", inspect, sizeof(inspect) - 1,
	    NULL) == -1 || policy_bundle_add(&b2, "sb2.json", none,
	    sizeof(none) - 1, NULL) == -1 || policy_bundle_add(&b9, "sb9.json",
	    broken, sizeof(broken) - 1, NULL) == -1)
		bail("out of memory");

	/* No vault, no CA yet: an image that says so; injecting policies refused. */
	k = load(dir, src, 2);
	ok(k != NULL && k->pk_vault == 0, "no vault: image parses, vault absent");
	ok(k != NULL && k->pk_nanchors == 1 && proxy_keys_ca(k, "sb2") == NULL,
	    "sandbox CA made for the inspecting policy only");
	rv = check(k, "{\"policy\":\"p\",\"rules\":[{\"id\":\"a\",\"host\":"
	    "\"api.example.com\",\"inject\":[{\"secret\":\"tok\",\"header\":"
	    "\"Authorization\"}]}]}");
	ok(rv == -1 && strstr(err, "no usable vault") != NULL,
	    "inject without a vault: refused (%s)", err);
	proxy_keys_put(k);

	/* A vault and the host CA. */
	if (vault_open(dir, VAULT_OPEN_WRITE | VAULT_OPEN_CREATE, &v, err,
	    sizeof(err)) != VAULT_OK)
		bail("vault: %s", err);
	put(v, "tok", "api.example.com", VALUE);
	put(v, "wild", "*.example.com", "wild-value-abcdefgh");
	put(v, "short", "api.example.com", "xyz");	/* not hex: a placeholder (hex) never holds it */
	if (vault_commit(v, err, sizeof(err)) != VAULT_OK)
		bail("commit: %s", err);
	vault_close(v);
	if (ca_init(dir, 0, err, sizeof(err)) != CA_OK)
		bail("ca init: %s", err);

	k = load(dir, src, 3);
	ok(k != NULL && k->pk_vault == 1 && k->pk_nsecrets == 3,
	    "vault loaded: 3 secrets");
	s = proxy_keys_secret(k, "tok");
	ok(s != NULL && s->ps_vlen == strlen(VALUE) &&
	    memcmp(s->ps_value, VALUE, s->ps_vlen) == 0, "value decrypted");
	ok(s != NULL && proxy_secret_allows_host(s, "api.example.com") &&
	    !proxy_secret_allows_host(s, "x.api.example.com"),
	    "binding: exact host only");
	ca = proxy_keys_ca(k, "sb1");
	ok(ca != NULL && ca->pc_ca != NULL && ca_is_constrained(ca->pc_ca),
	    "sandbox CA: loaded, name-constrained");
	ok(k->pk_nanchors == 2, "anchors: host CA and sandbox CA");
	ok(ca != NULL && ca->pc_ca != NULL &&
	    proxy_keys_is_anchor(k, ca_cert(ca->pc_ca)), "sandbox CA is an anchor");
	host = ca_load(dir, NULL, NULL, err, sizeof(err));
	ok(host != NULL && proxy_keys_is_anchor(k, ca_cert(host)),
	    "host CA is an anchor");
	ca_free(host);

	/* The policy goes in only with the CA synced for it (issue 11). */
	{
		struct policy *p1 = pol(inspect), *p2 = pol("{\"policy\":\"p\","
		    "\"rules\":[{\"id\":\"a\",\"host\":\"api.example.com\","
		    "\"tls\":\"inspect\"}]}"), *p3 = pol(none);

		ok(proxy_keys_for_policy(k, "sb1", p1, err, sizeof(err)) == 0,
		    "the policy the CA was synced for: accepted");
		ok(proxy_keys_for_policy(k, "sb1", p2, err, sizeof(err)) == -1,
		    "another version of it: refused (%s)", err);
		ok(proxy_keys_for_policy(k, "sb3", p1, err, sizeof(err)) == -1,
		    "a sandbox without a CA in the image: refused");
		ok(proxy_keys_for_policy(k, "sb2", p3, err, sizeof(err)) == 0,
		    "a policy that inspects nothing needs no CA");
		policy_free(p1);
		policy_free(p2);
		policy_free(p3);
	}

	/* The binding check. */
	ok(check(k, "{\"policy\":\"p\",\"rules\":[{\"id\":\"a\",\"host\":"
	    "\"api.example.com\",\"inject\":[{\"secret\":\"tok\",\"header\":"
	    "\"Authorization\"}]}]}") == 0, "exact host bound: accepted");
	rv = check(k, "{\"policy\":\"p\",\"rules\":[{\"id\":\"a\",\"host\":"
	    "\"evil.example.net\",\"inject\":[{\"secret\":\"tok\",\"header\":"
	    "\"Authorization\"}]}]}");
	ok(rv == -1 && strstr(err, "does not bind") != NULL,
	    "another host: refused (%s)", err);
	rv = check(k, "{\"policy\":\"p\",\"rules\":[{\"id\":\"a\",\"host\":"
	    "\"*.example.com\",\"inject\":[{\"secret\":\"tok\",\"header\":"
	    "\"Authorization\"}]}]}");
	ok(rv == -1, "wildcard rule, exact binding: refused");
	ok(check(k, "{\"policy\":\"p\",\"rules\":[{\"id\":\"a\",\"host\":"
	    "\"*.api.example.com\",\"inject\":[{\"secret\":\"wild\",\"header\":"
	    "\"Authorization\"}]}]}") == 0,
	    "wildcard rule below a wildcard binding: accepted");
	ok(check(k, "{\"policy\":\"p\",\"rules\":[{\"id\":\"a\",\"host\":"
	    "\"*.example.com\",\"inject\":[{\"secret\":\"wild\",\"header\":"
	    "\"Authorization\"}]}]}") == 0, "the same wildcard: accepted");
	rv = check(k, "{\"policy\":\"p\",\"rules\":[{\"id\":\"a\",\"host\":"
	    "\"*.com.example.net\",\"inject\":[{\"secret\":\"wild\",\"header\":"
	    "\"Authorization\"}]}]}");
	ok(rv == -1, "a wildcard the binding does not cover: refused");
	rv = check(k, "{\"policy\":\"p\",\"rules\":[{\"id\":\"a\",\"host\":"
	    "\"api.example.com\",\"inject\":[{\"secret\":\"nope\",\"header\":"
	    "\"Authorization\"}]}]}");
	ok(rv == -1 && strstr(err, "not in the vault") != NULL,
	    "unknown secret: refused (%s)", err);
	rv = check(k, "{\"policy\":\"p\",\"rules\":[{\"id\":\"a\",\"host\":"
	    "\"api.example.com\",\"inject\":[{\"secret\":\"short\",\"header\":"
	    "\"Authorization\"}]}]}");
	ok(rv == -1 && strstr(err, "too short") != NULL,
	    "a value too short to redact: refused (%s)", err);
	ok(check(k, inspect) == 0, "no inject: nothing to check");

	/* An upstream proxy's credential: in the vault, bound to the proxy's name. */
	ok(check(k, "{\"policy\":\"p\",\"rules\":[],\"upstream_proxy\":{\"url\":"
	    "\"http://api.example.com:3128\",\"auth\":\"tok\"}}") == 0,
	    "a policy's proxy, its secret bound to the proxy's name: accepted");
	ok(check(k, "{\"policy\":\"p\",\"rules\":[],\"upstream_proxy\":{\"url\":"
	    "\"http://proxy.example.com:3128\",\"auth\":\"wild\"}}") == 0,
	    "... bound by a wildcard: accepted");
	rv = check(k, "{\"policy\":\"p\",\"rules\":[],\"upstream_proxy\":{\"url\":"
	    "\"http://proxy.example.net:3128\",\"auth\":\"tok\"}}");
	ok(rv == -1 && strstr(err, "does not bind to proxy.example.net") != NULL &&
	    strstr(err, VALUE) == NULL, "a proxy the secret is not bound to: refused (%s)",
	    err);
	rv = check(k, "{\"policy\":\"p\",\"rules\":[],\"upstream_proxy\":{\"url\":"
	    "\"http://api.example.com:3128\",\"auth\":\"nope\"}}");
	ok(rv == -1 && strstr(err, "'nope', which is not in the vault") != NULL,
	    "a proxy secret not in the vault: refused (%s)", err);
	ok(check(k, "{\"policy\":\"p\",\"rules\":[],\"upstream_proxy\":{\"url\":"
	    "\"http://proxy.example.net:3128\"}}") == 0,
	    "a proxy without credentials: nothing to check");
	/* airlock.json's proxy counts for a policy that says nothing, not for "direct". */
	if (upstream_url_parse("http://proxy.example.net:8080", 29,
	    &proxy_cfg.upstream_proxy, &why) == -1)
		bail("upstream_url_parse: %s", why);
	memcpy(proxy_cfg.upstream_proxy.up_auth, "tok", 4);
	proxy_cfg.upstream_proxy_on = 1;
	rv = check(k, "{\"policy\":\"q\",\"rules\":[]}");
	ok(rv == -1 && strstr(err, "proxy.example.net:8080 takes secret 'tok'") != NULL,
	    "airlock.json's proxy, secret bound elsewhere: a policy that inherits it is "
	    "refused (%s)", err);
	ok(check(k, "{\"policy\":\"q\",\"rules\":[],\"upstream_proxy\":"
	    "\"direct\"}") == 0, "... one that goes direct is not");
	memset(&proxy_cfg.upstream_proxy, 0, sizeof(proxy_cfg.upstream_proxy));
	proxy_cfg.upstream_proxy_on = 0;
	proxy_keys_put(k);

	/*
	 * Only the values the recorded policies bind (an inject entry, the upstream
	 * proxy's credential) are in the image; the others are withheld: known by
	 * name and placeholder, never injected, not redacted.
	 */
	{
		static const char binds[] = "{\"policy\":\"b\",\"rules\":[{\"id\":"
		    "\"a\",\"host\":\"api.example.com\",\"inject\":[{\"secret\":"
		    "\"tok\",\"header\":\"Authorization\"}]}]}";
		static const char proxied[] = "{\"policy\":\"u\",\"rules\":[],"
		    "\"upstream_proxy\":{\"url\":\"http://proxy.example.com:3128\","
		    "\"auth\":\"wild\"}}";
		struct policy_bundle bb[3] = { { NULL, 0 }, { NULL, 0 }, { NULL, 0 } };
		struct proxy_keys_src bsrc[3] = {
			{ "sb1", &bb[0] },
			{ "sb2", &bb[1] },
			{ "sb9", &bb[2] },
		};
		const struct proxy_secret *w;
		struct scan_match m;

		bset(&bb[0], binds);
		bset(&bb[1], none);
		bset(&bb[2], broken);
		k = load(dir, bsrc, 2);
		s = proxy_keys_secret(k, "tok");
		w = proxy_keys_secret(k, "wild");
		ok(k != NULL && k->pk_nsecrets == 3 && s != NULL &&
		    s->ps_vlen == strlen(VALUE) && memcmp(s->ps_value, VALUE,
		    s->ps_vlen) == 0, "a secret a recorded policy injects: its value");
		ok(w != NULL && w->ps_value == NULL && w->ps_vlen == 0 &&
		    w->ps_placeholder[0] != '\0' && w->ps_nhosts == 1,
		    "one no policy binds: withheld (name, placeholder, hosts only)");
		ok(w != NULL && !proxy_secret_allows_host(w, "x.example.com") &&
		    proxy_secret_allows_host(s, "api.example.com"),
		    "a withheld value is never allowed to a host its binding names");
		ok(w != NULL && scan_find(k->pk_ph_set,
		    (const uint8_t *)w->ps_placeholder, strlen(w->ps_placeholder),
		    &m) && proxy_keys_secret_name(k, m.sm_id) != NULL &&
		    strcmp(proxy_keys_secret_name(k, m.sm_id), "wild") == 0,
		    "its placeholder is still found (exfiltration)");
		ok(k != NULL && k->pk_nvals == 1,
		    "only the value held is redacted (%zu)", k != NULL ? k->pk_nvals : 0);
		rv = check(k, "{\"policy\":\"p\",\"rules\":[{\"id\":\"a\","
		    "\"host\":\"x.example.com\",\"inject\":[{\"secret\":\"wild\","
		    "\"header\":\"Authorization\"}]}]}");
		ok(rv == -1 && strstr(err, "was not loaded") != NULL,
		    "a policy injecting a withheld secret: refused (%s)", err);
		proxy_keys_put(k);

		bset(&bb[1], proxied);
		k = load(dir, bsrc, 2);
		w = proxy_keys_secret(k, "wild");
		ok(w != NULL && w->ps_value != NULL && proxy_keys_secret(k,
		    "short")->ps_value == NULL,
		    "the credential of a policy's upstream proxy: its value, no other");
		ok(check(k, proxied) == 0, "... and that policy passes");
		proxy_keys_put(k);

		k = load(dir, bsrc, 3);
		ok(k != NULL && proxy_keys_secret(k, "short")->ps_value != NULL &&
		    proxy_keys_secret(k, "wild")->ps_value != NULL,
		    "a recorded policy that does not load: every value (its previous "
		    "policy may use any)");
		proxy_keys_put(k);
		bset(&bb[2], "{\"policy\":\"p\",\"rules\":[{\"id\":\"a\","
		    "\"host\":\"evil.example.net\",\"inject\":[{\"secret\":\"tok\","
		    "\"header\":\"Authorization\"}]}]}");
		k = load(dir, bsrc, 3);
		ok(k != NULL && proxy_keys_secret(k, "short")->ps_value != NULL,
		    "... nor one that fails the binding check");
		proxy_keys_put(k);
		policy_bundle_free(&bb[0]);	/* unreadable */
		if (policy_bundle_add(&bb[0], "sb.json", NULL, 0,
		    "cannot open: Permission denied") == -1)
			bail("out of memory");
		k = load(dir, bsrc, 1);
		ok(k != NULL && proxy_keys_secret(k, "tok")->ps_value != NULL,
		    "... nor one that cannot be read");
		proxy_keys_put(k);
		k = load(dir, bsrc + 1, 1);
		ok(k != NULL && proxy_keys_secret(k, "tok")->ps_value == NULL &&
		    proxy_keys_secret(k, "short")->ps_value == NULL,
		    "no policy injecting: every value withheld but the proxy's");
		proxy_keys_put(k);
		for (rv = 0; rv < 3; rv++)
			policy_bundle_free(&bb[rv]);
	}

	/* Malformed images. */
	if (proxy_keys_build(dir, src, 2, &img, &len) == -1)
		bail("build");
	for (cut = 0; cut < len; cut += len / 37 + 1) {
		k = proxy_keys_parse(img, cut, err, sizeof(err));
		if (k != NULL)
			break;
	}
	ok(cut >= len, "every truncated image refused");
	img[len / 2] ^= 0x55;	/* garbage in the middle: refused or still sane */
	k = proxy_keys_parse(img, len, err, sizeof(err));
	proxy_keys_put(k);
	ok(1, "a corrupted image does not crash the parser");
	img[0] = 'X';
	ok(proxy_keys_parse(img, len, err, sizeof(err)) == NULL, "bad magic refused");
	proxy_keys_image_free(img, len);

	/* An unusable vault (loose key mode) is reported as such, not as absent. */
	snprintf(path, sizeof(path), "%s/vault.key", dir);
	chmod(path, 0644);
	k = load(dir, src, 2);
	ok(k != NULL && k->pk_vault == -1 && k->pk_vault_error[0] != '\0',
	    "loose vault.key: vault unusable (%s)", k != NULL ? k->pk_vault_error : "");
	ok(k != NULL && k->pk_nsecrets == 0, "... and no secret handed over");
	proxy_keys_put(k);
	chmod(path, 0600);
	policy_bundle_free(&b1);
	policy_bundle_free(&b2);
	policy_bundle_free(&b9);
	return 0;
}
