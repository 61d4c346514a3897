/*
 * lib/hexdig.c: see include/hexdig.h.
 */
#include "hexdig.h"

#define HEX_ROW16(v)	v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v

const signed char hexdig_tab[256] = {
	HEX_ROW16(-1), HEX_ROW16(-1), HEX_ROW16(-1),
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, -1, -1, -1, -1, -1, -1,		/* 0x30 */
	-1, 10, 11, 12, 13, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1,	/* 0x40 */
	HEX_ROW16(-1),							/* 0x50 */
	-1, 10, 11, 12, 13, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1,	/* 0x60 */
	HEX_ROW16(-1),							/* 0x70 */
	HEX_ROW16(-1), HEX_ROW16(-1), HEX_ROW16(-1), HEX_ROW16(-1),
	HEX_ROW16(-1), HEX_ROW16(-1), HEX_ROW16(-1), HEX_ROW16(-1),
};
