/*
 * tests/tools/ca_mint.c: mints one leaf the way airlockd will (ca_leaf_mint) and
 * writes it out, so integration tests can serve it with `openssl s_server` and
 * check it with curl.  Not part of airlock: the CLI has no command that exports a
 * leaf or its key.
 *
 *	ca_mint STATE_DIR SANDBOX|- NAME OUTDIR		writes OUTDIR/leaf.pem, leaf.key
 * Exit 0 minted, 1 refused (message on stderr), 2 usage or I/O error.
 */
#include <stdio.h>
#include <string.h>

#include <openssl/pem.h>

#include "ca.h"

int
main(int argc, char **argv)
{
	char err[512], path[4096];
	EVP_PKEY *key = NULL;
	X509 *leaf = NULL;
	struct ca *ca;
	FILE *f;
	int rv;

	if (argc != 5) {
		fprintf(stderr, "usage: ca_mint STATE_DIR SANDBOX|- NAME OUTDIR\n");
		return 2;
	}
	if ((ca = ca_load(argv[1], strcmp(argv[2], "-") == 0 ? NULL : argv[2],
	    NULL, err, sizeof(err))) == NULL) {
		fprintf(stderr, "ca_mint: %s\n", err);
		return 2;
	}
	if ((key = ca_leaf_key_new()) == NULL) {
		fprintf(stderr, "ca_mint: no key\n");
		return 2;
	}
	if ((rv = ca_leaf_mint(ca, argv[3], key, &leaf, err, sizeof(err))) !=
	    CA_OK) {
		fprintf(stderr, "ca_mint: %s\n", err);
		return rv == CA_ERR_NAME ? 1 : 2;
	}
	snprintf(path, sizeof(path), "%s/leaf.pem", argv[4]);
	if ((f = fopen(path, "w")) == NULL || PEM_write_X509(f, leaf) != 1 ||
	    fclose(f) != 0)
		return 2;
	snprintf(path, sizeof(path), "%s/leaf.key", argv[4]);
	if ((f = fopen(path, "w")) == NULL ||
	    PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) != 1 ||
	    fclose(f) != 0)
		return 2;
	X509_free(leaf);
	EVP_PKEY_free(key);
	ca_free(ca);
	return 0;
}
