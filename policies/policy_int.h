/*
 * policies/policy_int.h: what the loader's two halves share, private to policies/.
 * policy_load.c parses and validates one document; policy_layers.c reads the files
 * of a policy, follows each "base" and merges the documents into one struct policy.
 */
#ifndef AIRLOCK_POLICY_INT_H
#define AIRLOCK_POLICY_INT_H

#include <stdarg.h>
#include <stddef.h>

#include "policy.h"

/* One document, as written: its rules in file order, what it names as bases. */
struct pl_doc {
	struct policy	*pd_pol;	/* p_hash: of its bytes; no p_files */
	char		**pd_base;	/* "base", as written */
	size_t		 pd_nbase;
	int		 pd_mode;	/* "mode" is there */
	int		 pd_unknown;	/* "unknown" is there */
};

/*
 * Parses and validates buf[len] as the file name (errors are reported under that
 * name) into *d.  Every error goes to errs (may be NULL), sorted by position, and is
 * counted in *nerr, which also bounds them (POLICY_ERRORS_MAX across the files of
 * one load).  0, or -1 (d empty).
 */
int	pl_doc_load(const char *buf, size_t len, const char *name,
	    struct policy_errors *errs, size_t *nerr, struct pl_doc *d);
void	pl_doc_free(struct pl_doc *d);

/*
 * An error at $.key (idx -1) or $.key[idx] of the document buf[len] of file name,
 * with that key's position; counted in *nerr as pl_doc_load() counts.
 */
void	pl_verr_at(struct policy_errors *errs, size_t *nerr, const char *name,
	    const char *buf, size_t len, const char *key, long idx, const char *fmt,
	    va_list ap);
/* An error without a position or a JSON path: "name: reason". */
void	pl_err_file(struct policy_errors *errs, size_t *nerr, const char *name,
	    const char *reason);

/* Printable form of s[slen] for a message (see policy_load.c). */
const char *pl_quote(char *dst, size_t dstlen, const char *s, size_t slen);
/* hex SHA-256 of buf[len] into hex[65].  0, or -1. */
int	pl_hash(const void *buf, size_t len, char *hex);

#endif
