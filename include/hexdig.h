/*
 * include/hexdig.h: the value of one hexadecimal digit, for the decoders of %XX
 * escapes, chunk sizes and \uXXXX.  A table lookup (lib/hexdig.c holds the table),
 * inline: the scanner calls it for every escape byte it decodes.
 */
#ifndef AIRLOCK_HEXDIG_H
#define AIRLOCK_HEXDIG_H

/* The value of each byte as a hex digit, -1 for a byte that is not one. */
extern const signed char hexdig_tab[256];

/* The value (0..15) of the digit c ('0'-'9', 'a'-'f', 'A'-'F'), or -1 for any other c. */
static inline int
hexdig_val(int c)
{
	return c >= 0 && c < 256 ? hexdig_tab[c] : -1;
}

#endif
