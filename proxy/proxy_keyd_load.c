/*
 * proxy/proxy_keyd_load.c: the loading end of the keys process (proxy_keyd.h): the
 * root reader (proxy_reader.c), or airlockd itself when it has none, sends keyd the
 * set of CAs the key material holds (proxy_keys_build) and waits for the answer.
 * It remembers which entry (sandbox, policy hash) keyd holds for each sandbox,
 * because a policy the unprivileged side refuses leaves the sandbox's previous
 * policy in force, and that one must still get leaves: its entry is sent again as
 * LOAD_KEEP, which keyd honours from its own copy (the key is not sent twice, nor
 * kept here).  Above the key material, which it reads; the exchange it uses is
 * proxy_keyd_client.c's, beneath.
 */
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "ca.h"
#include "proxy_globals.h"
#include "proxy_keyd.h"
#include "proxy_keymsg.h"
#include "proxy_keys.h"
#include "proxy_proc.h"

#define KEYD_LOAD_TIMEOUT_MS	10000


struct keyd_held {
	char		 kh_sandbox[KEYMSG_SANDBOX_MAX + 1];
	char		 kh_hash[KEYMSG_HASH_LEN + 1];
};

static int keyd_link_fd = -1;		/* -2 once broken */
static pid_t keyd_link_pid = -1;
static uint32_t keyd_link_id;
static struct keyd_held *keyd_held;	/* what keyd holds, as of its last OK */
static size_t keyd_nheld;

void
proxy_keyd_link(int fd, pid_t pid)
{
	keyd_link_fd = fd;
	keyd_link_pid = pid;
}

void
proxy_keyd_unlink(void)
{
	proxy_child_stop(&keyd_link_fd, &keyd_link_pid);
}

int
proxy_keyd_gone(void)
{
	return proxy_child_reap(&keyd_link_pid);
}

static const struct keyd_held *
keyd_held_find(const char *sandbox)
{
	size_t i;

	for (i = 0; i < keyd_nheld; i++)
		if (strcmp(keyd_held[i].kh_sandbox, sandbox) == 0)
			return &keyd_held[i];
	return NULL;
}

/* Appends the set for kb to b; *nh gets the entries it names (as keyd will). */
static void
keyd_load_msgs(struct keymsg_buf *b, uint32_t id,
    const struct proxy_keys_build *kb, const char *only, struct keyd_held *nh,
    size_t *nn)
{
	const struct proxy_kb_ca *c;
	const struct keyd_held *h;
	size_t i, j, n = proxy_keys_build_count(kb);
	int changing;

	*nn = 0;
	keymsg_start(b, KEYMSG_LOAD_BEGIN, id);
	(void)keymsg_finish(b);
	for (i = 0; i < n; i++) {
		c = proxy_keys_build_ca(kb, i);
		changing = only == NULL || strcmp(only, c->kc_sandbox) == 0;
		if (changing && c->kc_state == PK_FRESH) {
			keymsg_start(b, KEYMSG_LOAD_CA, id);
			keymsg_field_str(b, KEYTAG_SANDBOX, c->kc_sandbox);
			keymsg_field_str(b, KEYTAG_HASH, c->kc_hash);
			keymsg_field(b, KEYTAG_CERT, c->kc_cert, c->kc_certlen);
			keymsg_field(b, KEYTAG_KEY, c->kc_key, c->kc_keylen);
			for (j = 0; j < c->kc_nnames; j++)
				keymsg_field_str(b, KEYTAG_NAME, c->kc_names[j]);
			(void)keymsg_finish(b);
			proxy_fmt(nh[*nn].kh_sandbox, sizeof(nh[*nn].kh_sandbox),
			    "%s", c->kc_sandbox);
			proxy_fmt(nh[*nn].kh_hash, sizeof(nh[*nn].kh_hash), "%s",
			    c->kc_hash);
			(*nn)++;
			continue;
		}
		/* A new policy that inspects nothing goes in and needs no CA. */
		if ((changing && c->kc_state == PK_NONE) ||
		    (h = keyd_held_find(c->kc_sandbox)) == NULL)
			continue;
		/* The unprivileged side keeps this sandbox's policy: so does keyd. */
		keymsg_start(b, KEYMSG_LOAD_KEEP, id);
		keymsg_field_str(b, KEYTAG_SANDBOX, h->kh_sandbox);
		keymsg_field_str(b, KEYTAG_HASH, h->kh_hash);
		(void)keymsg_finish(b);
		nh[(*nn)++] = *h;
	}
	keymsg_start(b, KEYMSG_LOAD_END, id);
	keymsg_field_u32(b, KEYTAG_COUNT, (uint32_t)*nn);
	(void)keymsg_finish(b);
}

/*
 * Sends the request b (id) on the link and waits for keyd's answer.  0 for OK; -1
 * with err for an ERR (keyd keeps what it had), or when the link broke (nothing
 * more goes to keyd then).
 */
static int
keyd_link_ask(const struct keymsg_buf *b, uint32_t id, char *err, size_t errlen)
{
	struct keymsg m;
	uint8_t *rbuf = NULL;
	int rv = -1;

	if (keyd_link_fd < 0) {
		proxy_fmt(err, errlen, "%s", keyd_link_fd == -1 ? "not running" :
		    "gone after an earlier error (restart airlockd)");
		return -1;
	}
	if (b->kb_failed) {
		proxy_fmt(err, errlen, "out of memory, or a key too large to send");
		return -1;
	}
	if (proxy_keyd_exchange(keyd_link_fd, b, 0, id, KEYD_LOAD_TIMEOUT_MS, &rbuf,
	    &m, err, errlen) == -1) {
		/* Out of step, or keyd is gone. */
		close(keyd_link_fd);
		keyd_link_fd = -2;
		if (keyd_link_pid != -1 && waitpid(keyd_link_pid, NULL, WNOHANG) ==
		    keyd_link_pid)
			keyd_link_pid = -1;
	} else if (m.km_type != KEYMSG_OK)
		proxy_keyd_err_text(&m, err, errlen);
	else
		rv = 0;
	free(rbuf);
	return rv;
}

int
proxy_keyd_load(const struct proxy_keys_build *kb, const char *only, char *err,
    size_t errlen)
{
	struct keymsg_buf b = { 0 };
	struct keyd_held *nh = NULL;
	size_t n = proxy_keys_build_count(kb), nn;
	uint32_t id;
	int rv = -1;

	if (keyd_link_fd < 0)
		return keyd_link_ask(&b, 0, err, errlen);	/* says why */
	if ((nh = calloc(n + 1, sizeof(*nh))) == NULL) {
		proxy_fmt(err, errlen, "out of memory");
		return -1;
	}
	id = ++keyd_link_id;
	keyd_load_msgs(&b, id, kb, only, nh, &nn);
	/* On an ERR keyd keeps its previous set; so does our record of it. */
	if (keyd_link_ask(&b, id, err, errlen) == 0) {
		free(keyd_held);
		keyd_held = nh;
		keyd_nheld = nn;
		nh = NULL;
		rv = 0;
	}
	keymsg_buf_free(&b);	/* wipes the keys */
	free(nh);
	return rv;
}

int
proxy_keyd_sign_key(const unsigned char *der, size_t derlen, long long seq,
    const char *head, char *err, size_t errlen)
{
	struct keymsg_buf b = { 0 };
	uint32_t id = ++keyd_link_id;
	int rv;

	keymsg_start(&b, KEYMSG_SIGN_KEY, id);
	keymsg_field(&b, KEYTAG_KEY, der, derlen);
	keymsg_field_u64(&b, KEYTAG_SEQ, (uint64_t)seq);
	keymsg_field_str(&b, KEYTAG_HASH, head);
	(void)keymsg_finish(&b);
	rv = keyd_link_ask(&b, id, err, errlen);
	keymsg_buf_free(&b);	/* wipes the key */
	return rv;
}
