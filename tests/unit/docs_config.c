/*
 * tests/unit/docs_config.c: docs/CONFIGURATION.md against lib/config.c, as
 * tests/unit/reasons.c holds README's reason table to proxy_reason.h.  Every key
 * config_load() accepts (config_key_name(), which reads the loader's own tables) is in
 * the reference's "Keys" table, and every key there is accepted; each key's documented
 * default, loaded on its own, gives exactly config_defaults(); an undocumented key is
 * refused; the example file loads and names every key; and etc/airlock.json (what
 * `make install` installs) names every key, each at its default.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "../tap.h"

#define KEYS_MAX	64

struct doc_key {
	char	*dk_name;	/* "proxy_port", "audit.path" */
	char	*dk_default;	/* the default cell's JSON text */
};

static struct doc_key	 doc[KEYS_MAX];
static size_t		 ndoc;
static char		*example;	/* the ```json block of "## Example" */
static char		 cfgpath[PATH_MAX];

/* The text between the first and the last backtick of cell, as a new string. */
static char *
cell_code(const char *cell)
{
	const char *a, *b;

	if ((a = strchr(cell, '`')) == NULL || (b = strrchr(cell, '`')) == a)
		return NULL;
	return strndup(a + 1, (size_t)(b - a - 1));
}

/*
 * The rows of the "## Keys" table (key in the first cell, default in the third) and
 * the example of "## Example".
 */
static int
doc_load(const char *path)
{
	char line[8192], *cells[5], *p;
	size_t n, exlen = 0;
	FILE *f;
	int in_keys = 0, in_example = 0, in_block = 0;

	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "## ", 3) == 0) {
			in_keys = strcmp(line, "## Keys\n") == 0;
			in_example = strcmp(line, "## Example\n") == 0;
			continue;
		}
		if (in_example) {
			if (!in_block && strcmp(line, "```json\n") == 0) {
				in_block = 1;
				example = strdup("");
			} else if (in_block && strcmp(line, "```\n") == 0) {
				in_block = 0;
				in_example = 0;
			} else if (in_block && example != NULL) {
				n = strlen(line);
				if ((p = realloc(example, exlen + n + 1)) == NULL)
					bail("out of memory");
				example = p;
				memcpy(example + exlen, line, n + 1);
				exlen += n;
			}
			continue;
		}
		if (!in_keys || strncmp(line, "| `", 3) != 0 || ndoc >= KEYS_MAX)
			continue;
		/* | key | type | default | meaning | */
		for (n = 0, p = line; n < 5 && (p = strchr(p, '|')) != NULL; p++)
			cells[n++] = p + 1;
		if (n < 5)
			continue;
		cells[1][-1] = cells[2][-1] = cells[3][-1] = cells[4][-1] = '\0';
		doc[ndoc].dk_name = cell_code(cells[0]);
		doc[ndoc].dk_default = cell_code(cells[2]);
		if (doc[ndoc].dk_name != NULL && doc[ndoc].dk_default != NULL)
			ndoc++;
	}
	fclose(f);
	return 0;
}

static int
in_doc(const char *key)
{
	size_t i;

	for (i = 0; i < ndoc; i++)
		if (strcmp(doc[i].dk_name, key) == 0)
			return 1;
	return 0;
}

static int
in_loader(const char *key)
{
	char buf[128];
	size_t i;

	for (i = 0; config_key_name(i, buf, sizeof(buf)) == 0; i++)
		if (strcmp(buf, key) == 0)
			return 1;
	return 0;
}

static void
write_file(const char *text)
{
	FILE *f;

	if ((f = fopen(cfgpath, "w")) == NULL || fputs(text, f) == EOF ||
	    fclose(f) == EOF)
		bail("cannot write %s", cfgpath);
}

/* config_load() of text; err gets its message. */
static int
load(const char *text, struct airlock_config *c, char *err, size_t errlen)
{
	write_file(text);
	return config_load(c, cfgpath, NULL, err, errlen);
}

/* Every field of a and b alike. */
static int
config_same(const struct airlock_config *a, const struct airlock_config *b)
{
	return strcmp(a->state_dir, b->state_dir) == 0 &&
	    strcmp(a->control_socket, b->control_socket) == 0 &&
	    a->proxy_port == b->proxy_port && a->dns_port == b->dns_port &&
	    a->workers == b->workers &&
	    netaddr_equal(&a->address_pool.nc_addr, &b->address_pool.nc_addr) &&
	    a->address_pool.nc_prefix == b->address_pool.nc_prefix &&
	    netaddr_equal(&a->mapped_pool.nc_addr, &b->mapped_pool.nc_addr) &&
	    a->mapped_pool.nc_prefix == b->mapped_pool.nc_prefix &&
	    strcmp(a->upstream_ca_file, b->upstream_ca_file) == 0 &&
	    strcmp(a->audit_path, b->audit_path) == 0 &&
	    a->audit_fsync == b->audit_fsync &&
	    a->audit_log_query == b->audit_log_query &&
	    strcmp(a->audit_key_file, b->audit_key_file) == 0 &&
	    a->syslog_on == b->syslog_on &&
	    a->syslog_queue == b->syslog_queue &&
	    a->syslog_facility == b->syslog_facility &&
	    strcmp(a->syslog_app, b->syslog_app) == 0 &&
	    strcmp(a->syslog_ca, b->syslog_ca) == 0 &&
	    strcmp(a->libvirt_uri, b->libvirt_uri) == 0 &&
	    strcmp(a->user, b->user) == 0 &&
	    a->upstream_proxy_on == b->upstream_proxy_on &&
	    memcmp(&a->upstream_proxy, &b->upstream_proxy,
	    sizeof(a->upstream_proxy)) == 0;
}

/* A documented key at its documented default: loads, and changes nothing. */
static void
test_default(const struct doc_key *k)
{
	struct airlock_config want, got;
	char text[1024], err[512];
	const char *dot = strchr(k->dk_name, '.');

	if (dot != NULL)
		snprintf(text, sizeof(text), "{\"%.*s\": {\"%s\": %s}}\n",
		    (int)(dot - k->dk_name), k->dk_name, dot + 1, k->dk_default);
	else
		snprintf(text, sizeof(text), "{\"%s\": %s}\n", k->dk_name,
		    k->dk_default);
	config_defaults(&want);
	if (!ok(load(text, &got, err, sizeof(err)) == 0,
	    "documented %s (default %s) is accepted", k->dk_name, k->dk_default))
		diag("%s", err);
	else
		ok(config_same(&want, &got), "%s's documented default is its default",
		    k->dk_name);
}

/* The value at key ("a" or "a.b") of the example, or NULL. */
static json_t *
example_get(json_t *root, const char *key)
{
	const char *dot = strchr(key, '.');
	char top[64];

	if (dot == NULL)
		return json_object_get(root, key);
	snprintf(top, sizeof(top), "%.*s", (int)(dot - key), key);
	return json_object_get(json_object_get(root, top), dot + 1);
}

/*
 * etc/airlock.json, the file `make install` puts at /etc/airlock/airlock.json: it
 * names every key and each at its default (it loads into exactly config_defaults()).
 */
static void
test_installed(const char *top)
{
	struct airlock_config c, d;
	char path[1024], buf[128], err[512], *text = NULL;
	json_t *root;
	size_t i, n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/etc/airlock.json", top);
	if ((f = fopen(path, "re")) != NULL) {
		text = calloc(1, 65536);
		n = text != NULL ? fread(text, 1, 65535, f) : 0;
		if (text != NULL)
			text[n] = '\0';
		fclose(f);
	}
	if (!ok(text != NULL, "read %s", path))
		return;
	if (!ok(load(text, &c, err, sizeof(err)) == 0, "the installed file loads"))
		diag("%s", err);
	config_defaults(&d);
	ok(memcmp(&c, &d, sizeof(c)) == 0,
	    "... to exactly the defaults (every key at its default)");
	root = json_loads(text, 0, NULL);
	for (i = 0; config_key_name(i, buf, sizeof(buf)) == 0; i++)
		ok(root != NULL && example_get(root, buf) != NULL,
		    "the installed file sets %s", buf);
	json_decref(root);
	free(text);
}

int
main(void)
{
	const char *top = getenv("AIRLOCK_SRCDIR");
	struct airlock_config c;
	char path[1024], buf[128], err[512];
	json_t *root;
	size_t i, nkeys;

	plan_lazy();
	unsetenv("AIRLOCK_CONFIG");
	unsetenv("AIRLOCK_STATE_DIR");
	snprintf(cfgpath, sizeof(cfgpath), "%s/airlock.json", tap_tmpdir());
	snprintf(path, sizeof(path), "%s/docs/CONFIGURATION.md", top != NULL ? top :
	    ".");
	if (!ok(doc_load(path) == 0, "read %s", path))
		bail("no reference to check");
	for (nkeys = 0; config_key_name(nkeys, buf, sizeof(buf)) == 0; nkeys++)
		;
	ok(nkeys >= 15, "the loader lists %zu keys", nkeys);
	ok(ndoc >= 15, "the reference's table lists %zu keys", ndoc);

	/* Every key the loader takes is documented. */
	for (i = 0; config_key_name(i, buf, sizeof(buf)) == 0; i++)
		ok(in_doc(buf), "accepted key %s is in the reference", buf);
	ok(i == nkeys, "every key of the loader looked at");

	/* Every documented key is accepted, and its default is true. */
	for (i = 0; i < ndoc; i++) {
		ok(in_loader(doc[i].dk_name), "documented key %s is accepted",
		    doc[i].dk_name);
		test_default(&doc[i]);
	}

	/* The checks can refuse. */
	ok(!in_doc("no_such_key") && !in_loader("no_such_key"),
	    "control: an unknown key is in neither list");
	ok(load("{\"no_such_key\": 1}", &c, err, sizeof(err)) == -1 &&
	    strstr(err, "no_such_key: unknown key") != NULL,
	    "an undocumented key is refused: %s", err);
	ok(load("{\"audit\": {\"no_such_key\": 1}}", &c, err, sizeof(err)) == -1 &&
	    strstr(err, "audit.no_such_key: unknown key") != NULL,
	    "an undocumented audit key is refused: %s", err);
	ok(config_key_name(0, buf, 3) == -1, "config_key_name: short buffer refused");
	ok(config_key_name(nkeys, buf, sizeof(buf)) == -1,
	    "config_key_name: -1 past the last key");

	/* The example loads and shows every key. */
	if (ok(example != NULL, "the reference has an example")) {
		if (!ok(load(example, &c, err, sizeof(err)) == 0, "the example loads"))
			diag("%s", err);
		root = json_loads(example, 0, NULL);
		for (i = 0; config_key_name(i, buf, sizeof(buf)) == 0; i++)
			ok(root != NULL && example_get(root, buf) != NULL,
			    "the example sets %s", buf);
		json_decref(root);
	}

	test_installed(top != NULL ? top : ".");

	for (i = 0; i < ndoc; i++) {
		free(doc[i].dk_name);
		free(doc[i].dk_default);
	}
	free(example);
	return tap_failures() != 0;
}
