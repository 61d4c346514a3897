/*
 * lib/strtab.c: see include/strtab.h.
 */
#include <stddef.h>
#include <string.h>

#include "strtab.h"

int
strtab_value(const struct strtab *t, const char *name, int *value)
{
	for (; t->st_name != NULL; t++)
		if (strcmp(t->st_name, name) == 0) {
			*value = t->st_value;
			return 0;
		}
	return -1;
}

const char *
strtab_name(const struct strtab *t, int value)
{
	for (; t->st_name != NULL; t++)
		if (t->st_value == value)
			return t->st_name;
	return NULL;
}
