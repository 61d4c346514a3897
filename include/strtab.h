/*
 * include/strtab.h: tables of names for the values of an enum, so that parsing a
 * name and printing a value read one table.  Implemented in lib/strtab.c.
 */
#ifndef AIRLOCK_STRTAB_H
#define AIRLOCK_STRTAB_H

/* One name and its value; a table ends with a NULL st_name. */
struct strtab {
	const char	*st_name;
	int		 st_value;
};

/* The value of name in t into *value.  Returns 0, or -1 (*value untouched) if t has no name. */
int		 strtab_value(const struct strtab *t, const char *name, int *value);
/* The (static) name of value in t, or NULL if t has no such value. */
const char	*strtab_name(const struct strtab *t, int value);

#endif
