/*
 * tests/unit/jsonpath.c: json_path_at() (lib/jsonpath.c), the path of a position in
 * JSON text, as the configuration and policy loaders name a duplicate key with it.
 */
#include <string.h>

#include "../tap.h"
#include "jsonpath.h"

/* The path at the end of the first occurrence of mark in text (its last byte). */
static void
at(const char *text, const char *mark, const char *want)
{
	const char *m = strstr(text, mark);
	char out[256];

	if (m == NULL)
		bail("no %s in %s", mark, text);
	is_string(want, json_path_at(text, strlen(text), (size_t)(m - text) +
	    strlen(mark), out, sizeof(out)), "%s after %s", want, mark);
}

int
main(void)
{
	char out[8];

	plan_lazy();
	at("{\"a\":1}", "{", "$");
	at("{\"a\":1,\"a\":2}", ",\"a\"", "$.a");
	at("{\"x\":{\"y\":[1,2,{\"z\":3,\"z\"", "3,\"z\"", "$.x.y[2].z");
	at("{\"rules\":[{\"id\":\"a\"},{\"id\":\"b\",\"host\":\"h\",\"host\"",
	    "\"h\",\"host\"", "$.rules[1].host");
	/* A string value with a quote, a comma and a brace in it is no token. */
	at("{\"s\":\"a\\\",},{[\",\"k\":1,\"k\"", "1,\"k\"", "$.k");
	at("{\"a b\\n\":{\"c\":1,\"c\"", "1,\"c\"", "$[\"a b\\x0a\"].c");
	at("{\"\\u0041\\u00e9\":{\"c\":1,\"c\"", "1,\"c\"", "$[\"A?\"].c");
	at("[[0,1],[2,{\"q\":1,\"q\"", "1,\"q\"", "$[1][1].q");
	/* Deeper than the frames kept: the path stops, it is never wrong. */
	ok(strncmp(json_path_at("{\"k\":1}", 7, 100, out, sizeof(out)), "$", 1) == 0,
	    "an offset past the end: a path, not a crash");
	ok(strlen(json_path_at("{\"verylongkey\":{\"verylongkey\":1,\"x\"", 36, 36, out,
	    sizeof(out))) < sizeof(out), "a short buffer: cut, NUL-ended");
	return tap_failures() != 0;
}
