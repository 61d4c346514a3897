/*
 * include/hexdig.h: the value of one hexadecimal digit, for the decoders of %XX
 * escapes, chunk sizes and \uXXXX.  Implemented in lib/hexdig.c.
 */
#ifndef AIRLOCK_HEXDIG_H
#define AIRLOCK_HEXDIG_H

/* The value (0..15) of the digit c ('0'-'9', 'a'-'f', 'A'-'F'), or -1 for any other c. */
int	hexdig_val(int c);

#endif
