/*
 * include/jsonpath.h: the JSON path of a position in JSON text (lib/jsonpath.c),
 * for errors that jansson reports by position only (a duplicate key).
 */
#ifndef AIRLOCK_JSONPATH_H
#define AIRLOCK_JSONPATH_H

#include <stddef.h>

/*
 * The path of the value or key that text[0..off-1] ends in or just after, e.g.
 * "$.rules[2].host" for an offset right after the key "host" of the third rule:
 * keys that are identifiers as .key, others as ["key"] (control, quote, backslash
 * and non-ASCII bytes as \xNN), array elements as [N].  The text need not be valid
 * past off.  Writes "$" when off is at the top.  Returns out.
 */
/* 1 if key is written .key in a path (letters, digits, '_', '-'), else 0. */
int	json_key_is_ident(const char *key);
const char *json_path_at(const char *text, size_t len, size_t off, char *out,
	    size_t outlen);

#endif
