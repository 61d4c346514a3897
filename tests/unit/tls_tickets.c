/*
 * tests/unit/tls_tickets.c: the rotation of the session-ticket keys towards the VM
 * (proxy/proxy_tls.c, through proxy_tls_tk_test() with the clock given).  A key
 * seals tickets for one hour (PROXY_TLS_TK_PERIOD) and is accepted one hour more as
 * the previous key, then never again; another policy hash or CA (a new generation)
 * drops both at once; each sandbox has keys of its own.  tests/integration/
 * inspect_resume.t shows the same rules through real handshakes (a ticket of one
 * sandbox or name never resumes on another).
 */
#include <string.h>

#include "../tap.h"
#include "../../proxy/proxy_tls.h"

#define P	3600		/* PROXY_TLS_TK_PERIOD */
#define T0	100000LL	/* any monotonic second */

struct keys {
	unsigned char	cur[16], prev[16];
	int		have_prev;
};

static struct keys
get(const char *sb, const char *gen, long long now)
{
	struct keys k;

	memset(&k, 0, sizeof(k));
	if (proxy_tls_tk_test(sb, gen, now, k.cur, k.prev, &k.have_prev) == -1)
		bail("proxy_tls_tk_test failed");
	return k;
}

static int
same(const unsigned char *a, const unsigned char *b)
{
	return memcmp(a, b, 16) == 0;
}

int
main(void)
{
	struct keys a, b, c, d, e, f, g, h;
	static const unsigned char zero[16];

	plan_lazy();
	a = get("s1", "genA", T0);
	ok(!same(a.cur, zero) && !a.have_prev, "a new sandbox: a key, no previous");
	b = get("s1", "genA", T0 + P - 1);
	ok(same(b.cur, a.cur) && !b.have_prev, "the same key until the hour is over");
	c = get("s1", "genA", T0 + P);
	ok(!same(c.cur, a.cur), "after an hour: a new current key");
	ok(c.have_prev && same(c.prev, a.cur),
	    "... the old one accepted as the previous (tickets it sealed still open)");
	d = get("s1", "genA", T0 + 2 * P - 1);
	ok(same(d.cur, c.cur) && d.have_prev && same(d.prev, a.cur),
	    "... through the second hour");
	e = get("s1", "genA", T0 + 2 * P);
	ok(!same(e.cur, c.cur) && e.have_prev && same(e.prev, c.cur) &&
	    !same(e.prev, a.cur), "two hours on: the first key is gone");
	/* Idle for three hours: the previous key would be older than an hour more. */
	f = get("s1", "genA", T0 + 5 * P);
	ok(!same(f.cur, e.cur) && !f.have_prev,
	    "after a long idle time: a new key, no previous (all old tickets are dead)");
	/* The policy's hash (or the CA) changed: a new generation, no previous. */
	g = get("s1", "genB", T0 + 5 * P + 1);
	ok(!same(g.cur, f.cur) && !g.have_prev,
	    "a new generation drops both keys at once");
	h = get("s2", "genB", T0 + 5 * P + 1);
	ok(!same(h.cur, g.cur), "another sandbox has keys of its own");
	ok(same(get("s1", "genB", T0 + 5 * P + 2).cur, g.cur),
	    "... and the first one keeps its (positive control)");
	return tap_failures() != 0;
}
