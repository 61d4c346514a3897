/*
 * lib/jsonpath.c: the JSON path of a position in JSON text (jsonpath.h).  A small
 * walk over the tokens up to the position, keeping one frame per open object (its
 * last key) or array (the element's index); strings are skipped with their escapes.
 */
#include <stdio.h>
#include <string.h>

#include "jsonpath.h"

#define JP_DEPTH	32	/* frames kept; deeper ones are left out of the path */
#define JP_KEY		96	/* bytes of a key kept */

struct jp_frame {
	int	jf_obj;		/* an object (key), else an array (index) */
	int	jf_want_key;	/* object: the next string is a key */
	size_t	jf_idx;
	char	jf_key[JP_KEY + 1];
	int	jf_have_key;
};

int
json_key_is_ident(const char *k)
{
	size_t i;

	if (k[0] == '\0')
		return 0;
	for (i = 0; k[i] != '\0'; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') ||
		    (k[i] >= '0' && k[i] <= '9') || k[i] == '_' || k[i] == '-'))
			return 0;
	return 1;
}

/* The value of the hex digit c, or -1. */
static int
jp_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * The string at text[i] (a '"'), decoded into key when not NULL (an escape of a
 * character above U+007F as '?'): its end (past the closing quote, or len).
 */
static size_t
jp_string(const char *text, size_t len, size_t i, char *key, size_t keylen)
{
	size_t k = 0, h;
	int v, x;
	char c;

	for (i++; i < len && text[i] != '"'; i++) {
		c = text[i];
		if (c == '\\' && i + 1 < len) {
			c = text[++i];
			if (c == 'n')
				c = '\n';
			else if (c == 't')
				c = '\t';
			else if (c == 'r')
				c = '\r';
			else if (c == 'b')
				c = '\b';
			else if (c == 'f')
				c = '\f';
			else if (c == 'u') {
				for (v = 0, h = 1; h <= 4 && i + h < len &&
				    (x = jp_hex(text[i + h])) >= 0; h++)
					v = v * 16 + x;
				i += h - 1;
				c = h == 5 && v < 0x80 ? (char)v : '?';
			}
		}
		if (key != NULL && k < keylen)
			key[k++] = c;
	}
	if (key != NULL)
		key[k] = '\0';
	return i < len ? i + 1 : len;
}

const char *
json_path_at(const char *text, size_t len, size_t off, char *out, size_t outlen)
{
	struct jp_frame f[JP_DEPTH];
	size_t i = 0, o, d = 0, k;
	char c;

	if (off > len)
		off = len;
	while (i < off) {
		c = text[i];
		if (c == '{' || c == '[') {
			if (d < JP_DEPTH) {
				memset(&f[d], 0, sizeof(f[d]));
				f[d].jf_obj = c == '{';
				f[d].jf_want_key = c == '{';
			}
			d++;
			i++;
		} else if (c == '}' || c == ']') {
			if (d > 0)
				d--;
			i++;
		} else if (c == ',') {
			if (d > 0 && d <= JP_DEPTH) {
				if (f[d - 1].jf_obj)
					f[d - 1].jf_want_key = 1;
				else
					f[d - 1].jf_idx++;
			}
			i++;
		} else if (c == '"') {
			if (d > 0 && d <= JP_DEPTH && f[d - 1].jf_obj &&
			    f[d - 1].jf_want_key) {
				i = jp_string(text, len, i, f[d - 1].jf_key, JP_KEY);
				f[d - 1].jf_want_key = 0;
				f[d - 1].jf_have_key = 1;
			} else
				i = jp_string(text, len, i, NULL, 0);
		} else
			i++;	/* blanks, ':', numbers, literals */
	}
	o = (size_t)snprintf(out, outlen, "$");
	for (i = 0; i < d && i < JP_DEPTH && o < outlen; i++) {
		if (!f[i].jf_obj) {
			o += (size_t)snprintf(out + o, outlen - o, "[%zu]", f[i].jf_idx);
			continue;
		}
		if (!f[i].jf_have_key)
			break;
		if (json_key_is_ident(f[i].jf_key)) {
			o += (size_t)snprintf(out + o, outlen - o, ".%s", f[i].jf_key);
			continue;
		}
		o += (size_t)snprintf(out + o, outlen - o, "[\"");
		for (k = 0; f[i].jf_key[k] != '\0' && o < outlen; k++) {
			unsigned char b = (unsigned char)f[i].jf_key[k];

			if (b < 0x20 || b >= 0x7f || b == '"' || b == '\\')
				o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", b);
			else
				o += (size_t)snprintf(out + o, outlen - o, "%c", b);
		}
		if (o < outlen)
			o += (size_t)snprintf(out + o, outlen - o, "\"]");
	}
	return out;
}
