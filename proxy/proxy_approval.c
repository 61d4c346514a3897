/*
 * proxy/proxy_approval.c: one sandbox's pending approvals and in-memory grants
 * (proxy_approval.h).  Small fixed tables under one mutex: a refusal is noted
 * from a worker thread (DNS, a connection, a request), the control socket lists
 * and changes them on the main thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "proxy_approval.h"
#include "sandbox.h"

struct approval_pending {
	char		 ap_id[APPROVAL_ID_LEN + 1];
	char		 ap_name[HOSTNAME_MAX + 1];
	uint16_t	 ap_port;
	char		 ap_method[APPROVAL_METHOD_MAX + 1];	/* "" unknown */
	char		 ap_path[APPROVAL_PATH_MAX + 1];
	char		 ap_last_method[APPROVAL_METHOD_MAX + 1];
	char		 ap_last_path[APPROVAL_PATH_MAX + 1];
	uint64_t	 ap_first_ms;	/* wall clock */
	uint64_t	 ap_last_ms;
	uint64_t	 ap_count;
};

struct approval_grant {
	char		 ag_name[HOSTNAME_MAX + 1];
	uint16_t	 ag_port;
	int		 ag_once;
	uint64_t	 ag_until_ms;	/* monotonic; --once: 0 (no expiry) */
};

struct proxy_approvals {
	pthread_mutex_t	 pa_mtx;
	struct approval_pending pa_pending[APPROVAL_PENDING_MAX];	/* oldest first */
	size_t		 pa_npending;
	uint64_t	 pa_dropped;
	struct approval_grant pa_grants[APPROVAL_GRANTS_MAX];
	size_t		 pa_ngrants;
};

struct proxy_approvals *
proxy_approvals_new(void)
{
	struct proxy_approvals *a;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	if (pthread_mutex_init(&a->pa_mtx, NULL) != 0) {
		free(a);
		return NULL;
	}
	return a;
}

void
proxy_approvals_free(struct proxy_approvals *a)
{
	if (a == NULL)
		return;
	pthread_mutex_destroy(&a->pa_mtx);
	free(a);
}

/*
 * Copies s (NULL: "") into dst[len], marking a cut with "...".  A method and a
 * path are the VM's bytes, and `approve ls` prints them to an operator's
 * terminal: anything but printable ASCII (a control character, an escape
 * sequence, a UTF-8 C1 control such as CSI) becomes '?'.
 */
static void
approval_copy(char *dst, size_t len, const char *s)
{
	size_t n, i;

	if (s == NULL)
		s = "";
	n = strlen(s);
	if (n < len)
		memcpy(dst, s, n + 1);
	else {
		memcpy(dst, s, len - 4);
		memcpy(dst + len - 4, "...", 4);
		n = len - 1;
	}
	for (i = 0; i < n; i++)
		if ((unsigned char)dst[i] < 0x20 || (unsigned char)dst[i] > 0x7e)
			dst[i] = '?';
}

int
proxy_approvals_note(struct proxy_approvals *a, const char *sandbox,
    const char *name, uint16_t port, const char *method, const char *path,
    uint64_t wall_ms, char id[APPROVAL_ID_LEN + 1])
{
	struct approval_pending *e;
	size_t i;
	int fresh = 0;

	sandbox_approval_id(sandbox, name, port, id);
	pthread_mutex_lock(&a->pa_mtx);
	for (i = 0; i < a->pa_npending; i++)
		if (a->pa_pending[i].ap_port == port &&
		    strcmp(a->pa_pending[i].ap_name, name) == 0)
			break;
	if (i == a->pa_npending) {
		if (a->pa_npending == APPROVAL_PENDING_MAX) {
			/* The oldest goes; the count says how many did. */
			memmove(&a->pa_pending[0], &a->pa_pending[1],
			    (APPROVAL_PENDING_MAX - 1) * sizeof(a->pa_pending[0]));
			a->pa_npending--;
			a->pa_dropped++;
		}
		e = &a->pa_pending[a->pa_npending++];
		memset(e, 0, sizeof(*e));
		memcpy(e->ap_id, id, APPROVAL_ID_LEN + 1);
		approval_copy(e->ap_name, sizeof(e->ap_name), name);
		e->ap_port = port;
		approval_copy(e->ap_method, sizeof(e->ap_method), method);
		approval_copy(e->ap_path, sizeof(e->ap_path), path);
		e->ap_first_ms = wall_ms;
		fresh = 1;
	} else
		e = &a->pa_pending[i];
	if (method != NULL) {
		approval_copy(e->ap_last_method, sizeof(e->ap_last_method), method);
		approval_copy(e->ap_last_path, sizeof(e->ap_last_path), path);
		if (e->ap_method[0] == '\0') {
			approval_copy(e->ap_method, sizeof(e->ap_method), method);
			approval_copy(e->ap_path, sizeof(e->ap_path), path);
		}
	}
	e->ap_last_ms = wall_ms;
	e->ap_count++;
	pthread_mutex_unlock(&a->pa_mtx);
	return fresh;
}

/* Drops expired grants.  Lock held. */
static void
approval_prune(struct proxy_approvals *a, uint64_t now_ms)
{
	size_t i = 0;

	while (i < a->pa_ngrants) {
		const struct approval_grant *g = &a->pa_grants[i];

		if (!g->ag_once && g->ag_until_ms <= now_ms) {
			a->pa_grants[i] = a->pa_grants[--a->pa_ngrants];
			continue;
		}
		i++;
	}
}

int
proxy_approvals_grant(struct proxy_approvals *a, const char *name, uint16_t port,
    int once, uint64_t until_ms, uint64_t now_ms)
{
	struct approval_grant *g = NULL;
	size_t i;
	int rv = 0;

	pthread_mutex_lock(&a->pa_mtx);
	approval_prune(a, now_ms);
	for (i = 0; i < a->pa_ngrants; i++)
		if (a->pa_grants[i].ag_port == port &&
		    strcmp(a->pa_grants[i].ag_name, name) == 0)
			g = &a->pa_grants[i];
	if (g == NULL && a->pa_ngrants < APPROVAL_GRANTS_MAX)
		g = &a->pa_grants[a->pa_ngrants++];
	if (g == NULL)
		rv = -1;
	else {
		memset(g, 0, sizeof(*g));
		approval_copy(g->ag_name, sizeof(g->ag_name), name);
		g->ag_port = port;
		g->ag_once = once;
		g->ag_until_ms = once ? 0 : until_ms;
	}
	pthread_mutex_unlock(&a->pa_mtx);
	return rv;
}

int
proxy_approvals_take(struct proxy_approvals *a, const char *name, uint16_t port,
    uint64_t now_ms, int consume)
{
	size_t i;
	int rv = 0;

	pthread_mutex_lock(&a->pa_mtx);
	approval_prune(a, now_ms);
	for (i = 0; i < a->pa_ngrants; i++) {
		const struct approval_grant *g = &a->pa_grants[i];

		if (g->ag_port != port || strcmp(g->ag_name, name) != 0)
			continue;
		rv = 1;
		if (consume && g->ag_once)
			a->pa_grants[i] = a->pa_grants[--a->pa_ngrants];
		break;
	}
	pthread_mutex_unlock(&a->pa_mtx);
	return rv;
}

int
proxy_approvals_has_name(struct proxy_approvals *a, const char *name,
    uint64_t now_ms)
{
	size_t i;
	int rv = 0;

	pthread_mutex_lock(&a->pa_mtx);
	approval_prune(a, now_ms);
	for (i = 0; i < a->pa_ngrants && !rv; i++)
		rv = strcmp(a->pa_grants[i].ag_name, name) == 0;
	pthread_mutex_unlock(&a->pa_mtx);
	return rv;
}

size_t
proxy_approvals_forget(struct proxy_approvals *a, const char *name, uint16_t port,
    int grants_too)
{
	size_t i = 0, n = 0;

	pthread_mutex_lock(&a->pa_mtx);
	while (i < a->pa_npending) {
		const struct approval_pending *e = &a->pa_pending[i];

		if ((e->ap_port == port || e->ap_port == 0) &&
		    strcmp(e->ap_name, name) == 0) {
			memmove(&a->pa_pending[i], &a->pa_pending[i + 1],
			    (a->pa_npending - i - 1) * sizeof(a->pa_pending[0]));
			a->pa_npending--;
			n++;
			continue;
		}
		i++;
	}
	i = 0;
	while (grants_too && i < a->pa_ngrants) {
		if (a->pa_grants[i].ag_port == port &&
		    strcmp(a->pa_grants[i].ag_name, name) == 0) {
			a->pa_grants[i] = a->pa_grants[--a->pa_ngrants];
			continue;
		}
		i++;
	}
	pthread_mutex_unlock(&a->pa_mtx);
	return n;
}

void
proxy_approvals_counts(struct proxy_approvals *a, uint64_t now_ms,
    size_t *npending, uint64_t *dropped, size_t *ngrants)
{
	pthread_mutex_lock(&a->pa_mtx);
	approval_prune(a, now_ms);
	*npending = a->pa_npending;
	*dropped = a->pa_dropped;
	*ngrants = a->pa_ngrants;
	pthread_mutex_unlock(&a->pa_mtx);
}

static void
approval_time(uint64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ",
	    &tm) == 0)
		snprintf(buf, len, "-");
}

json_t *
proxy_approvals_json(struct proxy_approvals *a, uint64_t now_ms)
{
	json_t *o, *pend, *grants, *e;
	char first[32], last[32];
	size_t i;

	pend = json_array();
	grants = json_array();
	o = json_object();
	if (pend == NULL || grants == NULL || o == NULL) {
		json_decref(pend);
		json_decref(grants);
		json_decref(o);
		return NULL;
	}
	pthread_mutex_lock(&a->pa_mtx);
	approval_prune(a, now_ms);
	for (i = 0; i < a->pa_npending; i++) {
		const struct approval_pending *p = &a->pa_pending[i];

		approval_time(p->ap_first_ms, first, sizeof(first));
		approval_time(p->ap_last_ms, last, sizeof(last));
		e = json_pack("{s:s, s:s, s:i, s:s, s:s, s:I}", "id", p->ap_id,
		    "name", p->ap_name, "port", (int)p->ap_port, "first_seen",
		    first, "last_seen", last, "count", (json_int_t)p->ap_count);
		if (e != NULL && p->ap_method[0] != '\0') {
			json_object_set_new(e, "method", json_string(p->ap_method));
			json_object_set_new(e, "path", json_string(p->ap_path));
			json_object_set_new(e, "last_method",
			    json_string(p->ap_last_method));
			json_object_set_new(e, "last_path",
			    json_string(p->ap_last_path));
		}
		json_array_append_new(pend, e);
	}
	for (i = 0; i < a->pa_ngrants; i++) {
		const struct approval_grant *g = &a->pa_grants[i];

		e = json_pack("{s:s, s:i, s:b}", "name", g->ag_name, "port",
		    (int)g->ag_port, "once", g->ag_once);
		if (e != NULL && !g->ag_once)
			json_object_set_new(e, "expires_in", json_integer(
			    (json_int_t)((g->ag_until_ms - now_ms + 999) / 1000)));
		json_array_append_new(grants, e);
	}
	json_object_set_new(o, "dropped", json_integer((json_int_t)a->pa_dropped));
	pthread_mutex_unlock(&a->pa_mtx);
	json_object_set_new(o, "pending", pend);
	json_object_set_new(o, "grants", grants);
	return o;
}
