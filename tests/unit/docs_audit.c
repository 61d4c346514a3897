/*
 * tests/unit/docs_audit.c: docs/AUDIT.md against the audit writer.  Every record type
 * the writer can write (audit_event_str(), the one table of them; audit_write()
 * refuses any other) is in the reference's "Record types" table, and every type there
 * is one; every field of real lines -- a record with every standard field set, and
 * the writer's own aggregation fields (a denial with "suppressed", a flush record) --
 * is in its "Fields" table; the example lines verify as a chain, hold every record
 * type and only documented fields, and their checkpoints verify with the public
 * key the example gives (and not with another).  The fields each part of airlockd adds are checked
 * by tests/integration/docs_audit.t (they are literals in proxy/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "audit_test.h"
#include "../tap.h"

#define NAMES_MAX	256
#define LINES_MAX	64

struct names {
	char	*n_v[NAMES_MAX];
	size_t	 n_n;
};

static struct names	 doc_types;	/* "## Record types" */
static struct names	 doc_fields;	/* "## Fields" */
static struct names	 doc_type_fields; /* the tables of "## Fields of each record type" */
static char		*example[LINES_MAX];	/* the ```jsonl block of "## Example" */
static size_t		 nexample;
static char		 example_pem[1024];	/* its ```pem block: the public key */

static int
names_has(const struct names *n, const char *s)
{
	size_t i;

	for (i = 0; i < n->n_n; i++)
		if (strcmp(n->n_v[i], s) == 0)
			return 1;
	return 0;
}

static void
names_free(struct names *n)
{
	size_t i;

	for (i = 0; i < n->n_n; i++)
		free(n->n_v[i]);
	n->n_n = 0;
}

/* The `name` of a table row's first cell ("| `name` | ..."), into n. */
static void
row_name(const char *line, struct names *n)
{
	const char *end;

	if (strncmp(line, "| `", 3) != 0 || (end = strchr(line + 3, '`')) == NULL ||
	    n->n_n >= NAMES_MAX)
		return;
	if ((n->n_v[n->n_n] = strndup(line + 3, (size_t)(end - line - 3))) != NULL)
		n->n_n++;
}

static int
doc_load(const char *path)
{
	enum { S_OTHER, S_TYPES, S_FIELDS, S_TYPE_FIELDS, S_EXAMPLE } sec = S_OTHER;
	char line[16384];
	FILE *f;
	int in_block = 0, in_pem = 0;

	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "## ", 3) == 0) {
			sec = strcmp(line, "## Record types\n") == 0 ? S_TYPES :
			    strcmp(line, "## Fields\n") == 0 ? S_FIELDS :
			    strcmp(line, "## Fields of each record type\n") == 0 ?
			    S_TYPE_FIELDS : strcmp(line, "## Example\n") == 0 ?
			    S_EXAMPLE : S_OTHER;
			continue;
		}
		switch (sec) {
		case S_TYPES:
			row_name(line, &doc_types);
			break;
		case S_FIELDS:
			row_name(line, &doc_fields);
			break;
		case S_TYPE_FIELDS:
			row_name(line, &doc_type_fields);
			break;
		case S_EXAMPLE:
			if (!in_block && !in_pem && strcmp(line, "```pem\n") == 0)
				in_pem = 1;
			else if (in_pem && strcmp(line, "```\n") == 0)
				in_pem = 0;
			else if (in_pem && strlen(example_pem) + strlen(line) <
			    sizeof(example_pem))
				strcat(example_pem, line);
			else if (!in_block && strcmp(line, "```jsonl\n") == 0)
				in_block = 1;
			else if (in_block && strcmp(line, "```\n") == 0)
				in_block = 0;
			else if (in_block && nexample < LINES_MAX) {
				line[strcspn(line, "\n")] = '\0';
				example[nexample++] = strdup(line);
			}
			break;
		case S_OTHER:
			break;
		}
	}
	fclose(f);
	return 0;
}

/* Adds the keys of every line of the file at path to n (once each). */
static int
file_keys(const char *path, struct names *n)
{
	char line[16384];
	const char *k;
	json_t *o, *v;
	FILE *f;
	int lines = 0;

	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if ((o = json_loads(line, 0, NULL)) == NULL)
			continue;
		lines++;
		json_object_foreach(o, k, v) {
			if (!names_has(n, k) && n->n_n < NAMES_MAX)
				n->n_v[n->n_n++] = strdup(k);
		}
		json_decref(o);
	}
	fclose(f);
	return lines;
}

/* Writes a record with every standard field and an aggregated run of denials. */
static void
write_records(const char *path)
{
	static const char *const inject[] = { "github_token", NULL };
	struct audit_record r;
	struct audit_log *log;
	char err[512];
	int i;

	if ((log = audit_open(path, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL)
		bail("%s", err);
	full_record(&r, inject);
	r.ar_reason = "path_not_allowed";	/* report mode: all the rest */
	r.ar_would_deny = 1;
	ok(audit_write(log, &r) == 0, "a record with every standard field");

	/*
	 * Four identical denials over two seconds: the first of each second is
	 * written (the second one with "suppressed":1), the last count goes out in a
	 * flush record.
	 */
	r = (struct audit_record)AUDIT_RECORD_INIT;
	r.ar_event = AUDIT_EV_DENY;
	r.ar_sandbox = "demo";
	r.ar_src = "10.233.0.2:40130";
	r.ar_dst = "198.18.0.77:443";
	r.ar_decision = "deny";
	r.ar_reason = "unmapped_address";
	r.ar_aggregate = AUDIT_AGG_DST;
	for (i = 0; i < 4; i++) {
		r.ar_ts_ms = 1796040001000LL + (i / 2) * 1000 + i;
		ok(audit_write(log, &r) == 0, "aggregated denial %d", i);
	}
	ok(audit_flush(log, 1) == 0, "audit_flush");
	audit_close(log);
}

/* The example's lines through a chain with pub: how many it took (why: the next). */
static size_t
example_signed(struct audit_chain *c, const struct audit_pubkey *pub, char *why,
    size_t whylen)
{
	size_t i;

	audit_chain_init(c, NULL, 0);
	c->ac_pubkey = pub;
	for (i = 0; i < nexample; i++)
		if (audit_chain_add(c, example[i], strlen(example[i]), why,
		    whylen) == -1)
			break;
	return i;
}

int
main(void)
{
	const char *top = getenv("AIRLOCK_SRCDIR");
	struct names written = { { NULL }, 0 }, seen = { { NULL }, 0 };
	struct audit_chain chain;
	struct audit_pubkey *pub;
	char keyid[AUDIT_KEYID_HEX + 1];
	enum audit_event ev;
	char path[1024], why[256];
	const char *name, *k;
	json_t *o, *v;
	size_t i, ntypes;
	int lines;

	plan_lazy();
	snprintf(path, sizeof(path), "%s/docs/AUDIT.md", top != NULL ? top : ".");
	if (!ok(doc_load(path) == 0, "read %s", path))
		bail("no reference to check");

	/* Record types: the writer's table against the reference's. */
	for (ntypes = 0; (name = audit_event_str((enum audit_event)ntypes)) != NULL;
	    ntypes++)
		ok(names_has(&doc_types, name), "record type %s is in the reference",
		    name);
	ok(ntypes >= 8, "the writer knows %zu record types", ntypes);
	ok(doc_types.n_n >= 8, "the reference lists %zu record types", doc_types.n_n);
	for (i = 0; i < doc_types.n_n; i++)
		ok(audit_event_parse(doc_types.n_v[i], &ev) == 0,
		    "documented type %s is one the writer knows", doc_types.n_v[i]);
	ok(!names_has(&doc_types, "no_such_type") &&
	    audit_event_parse("no_such_type", &ev) == -1,
	    "control: an unknown type is in neither");

	/* Fields: what real lines hold. */
	write_records(tpath(path, sizeof(path), "fields.jsonl"));
	lines = file_keys(path, &written);
	is_int(4, lines, "four lines written (one request, two denials, one flush)");
	ok(written.n_n >= 22, "the lines hold %zu distinct fields", written.n_n);
	ok(names_has(&written, "suppressed") && names_has(&written, "aggregate"),
	    "the aggregation fields were written");
	for (i = 0; i < written.n_n; i++)
		ok(names_has(&doc_fields, written.n_v[i]),
		    "written field %s is in the reference's Fields table",
		    written.n_v[i]);
	ok(!names_has(&doc_fields, "no_such_field"),
	    "control: an unknown field is not documented");

	/* The example: a valid chain of every type, with documented fields only. */
	ok(nexample >= ntypes, "the example has %zu lines", nexample);
	audit_chain_init(&chain, NULL, 0);
	for (i = 0; i < nexample; i++) {
		if (!ok(audit_chain_add(&chain, example[i], strlen(example[i]), why,
		    sizeof(why)) == 0, "example line %zu verifies", i + 1))
			diag("%s", why);
		if ((o = json_loads(example[i], 0, NULL)) == NULL)
			continue;
		if (json_is_string(v = json_object_get(o, "event")) &&
		    !names_has(&seen, json_string_value(v)))
			seen.n_v[seen.n_n++] = strdup(json_string_value(v));
		json_object_foreach(o, k, v)
			ok(names_has(&doc_fields, k) || names_has(&doc_type_fields, k),
			    "example line %zu: field %s is documented", i + 1, k);
		json_decref(o);
	}
	for (i = 0; i < ntypes; i++)
		ok(names_has(&seen, audit_event_str((enum audit_event)i)),
		    "the example has a %s record", audit_event_str((enum audit_event)i));

	/* Its checkpoints, with the key it gives; and not with another. */
	if ((pub = audit_pubkey_from_pem(example_pem, strlen(example_pem), why,
	    sizeof(why))) == NULL)
		bail("the example's public key: %s", why);
	i = example_signed(&chain, pub, why, sizeof(why));
	/*
	 * The last signed checkpoint is the shutdown's, followed by the one record
	 * the example says is not covered (the sink_overflow).
	 */
	if (!ok(i == nexample && chain.ac_signed == 2 && !chain.ac_last_is_cp &&
	    chain.ac_signed_cp_seq == chain.ac_seq - 1 && nexample > 0 &&
	    strstr(example[nexample - 1], "\"event\":\"sink_overflow\"") != NULL,
	    "the example's two checkpoints verify with its public key, the last "
	    "one followed by the sink_overflow record alone"))
		diag("line %zu: %s", i + 1, why);
	audit_pubkey_free(pub);
	if (audit_sign_keygen(tpath(path, sizeof(path), "other.key"), keyid, why,
	    sizeof(why)) == -1)
		bail("%s", why);
	strcat(path, ".pub");
	if ((pub = audit_pubkey_load(path, why, sizeof(why))) == NULL)
		bail("%s", why);
	i = example_signed(&chain, pub, why, sizeof(why));
	ok(i < nexample && strstr(why, "another key") != NULL,
	    "control: not with another key (%s)", why);
	audit_pubkey_free(pub);

	names_free(&doc_types);
	names_free(&doc_fields);
	names_free(&doc_type_fields);
	names_free(&written);
	names_free(&seen);
	for (i = 0; i < nexample; i++)
		free(example[i]);
	return tap_failures() != 0;
}
