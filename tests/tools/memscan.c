/*
 * tests/tools/memscan.c: does a process's memory hold a private key?  For
 * tests/integration/keyd_isolation.t (run as root: a process that is not dumpable
 * lets only CAP_SYS_PTRACE read its memory).
 *
 *	memscan PID KEYFILE... [-r FILE...]
 *
 * After -r each FILE is taken as it is, its bytes one needle (form "bytes"): a
 * secret's value, the vault's key (tests/integration/keyd_isolation.t).
 *
 * Each KEYFILE is a PEM private key: an EC key, as `airlock` writes its CAs, or an
 * Ed25519 key, as `airlock audit keygen` writes the audit signing key.  The forms
 * looked for, each in every readable mapping of /proc/PID/mem (the list from
 * /proc/PID/maps; a mapping over 1 GiB is skipped: a sanitizer's shadow, never
 * heap):
 *	pem	the PEM text's second line (the first is half fixed ASN.1 prefix;
 *		an Ed25519 key's PEM has one line of base64, whose last 32
 *		characters are taken: they are the key's own bytes)
 *	pkcs8	the PKCS#8 DER (what airlockd's keys process is sent)
 *	sec1	the SEC1 ECPrivateKey DER (inside the PKCS#8; EC only)
 *	d-be	the private scalar, big-endian (inside both DERs; EC only)
 *	d-le	the private scalar as a BIGNUM holds it on a little-endian machine:
 *		the same bytes reversed (what a process using the key keeps; EC)
 *	raw	an Ed25519 key's 32 private bytes (inside the DER; what OpenSSL
 *		keeps)
 * Output: a line "KEYFILE FORM found|absent" per key and form, then "scanned N
 * bytes in M mappings (K skipped, U unreadable)".  Exit 0, or 2 if the scan could
 * not be made (no such process, not permitted, a key that does not parse).
 */
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#define MS_FORMS	5
#define MS_CHUNK	(1024 * 1024)
#define MS_MAP_MAX	(1024ULL * 1024 * 1024)

struct ms_needle {
	const char	*n_key;
	const char	*n_form;
	unsigned char	*n_p;
	size_t		 n_len;
	int		 n_found;
};

static struct ms_needle *needles;
static size_t nneedles, maxlen;

static void
ms_add(const char *key, const char *form, const void *p, size_t len)
{
	struct ms_needle *n;

	if ((needles = reallocarray(needles, nneedles + 1,
	    sizeof(*needles))) == NULL || (n = &needles[nneedles],
	    n->n_p = malloc(len)) == NULL) {
		fprintf(stderr, "memscan: out of memory\n");
		exit(2);
	}
	n->n_key = key;
	n->n_form = form;
	memcpy(n->n_p, p, len);
	n->n_len = len;
	n->n_found = 0;
	if (len > maxlen)
		maxlen = len;
	nneedles++;
}

/* An Ed25519 key's forms: the PEM's tail, the PKCS#8 DER, the raw key. */
static void
ms_ed25519(const char *path, EVP_PKEY *k, const char *pemtail)
{
	unsigned char raw[32], *der = NULL;
	size_t rl = sizeof(raw);
	PKCS8_PRIV_KEY_INFO *p8;
	int n;

	if (EVP_PKEY_get_raw_private_key(k, raw, &rl) != 1 || rl != sizeof(raw) ||
	    (p8 = EVP_PKEY2PKCS8(k)) == NULL ||
	    (n = i2d_PKCS8_PRIV_KEY_INFO(p8, &der)) <= 0) {
		fprintf(stderr, "memscan: %s: cannot encode\n", path);
		exit(2);
	}
	ms_add(path, "pem", pemtail, 32);
	ms_add(path, "pkcs8", der, (size_t)n);
	ms_add(path, "raw", raw, sizeof(raw));
	OPENSSL_free(der);
	PKCS8_PRIV_KEY_INFO_free(p8);
}

static void
ms_key(const char *path)
{
	unsigned char d[32], r[32], *der = NULL;
	char line[256], *second = NULL;
	PKCS8_PRIV_KEY_INFO *p8;
	EVP_PKEY *k;
	BIGNUM *bn = NULL;
	FILE *f;
	size_t i, lead;
	int n, ln = 0;

	if ((f = fopen(path, "re")) == NULL) {
		fprintf(stderr, "memscan: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	while (fgets(line, sizeof(line), f) != NULL)
		if (++ln == 2) {
			line[strcspn(line, "\r\n")] = '\0';
			second = strdup(line);
		}
	rewind(f);
	k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	if (k != NULL && second != NULL && strlen(second) >= 32 &&
	    EVP_PKEY_get_base_id(k) == EVP_PKEY_ED25519) {
		ms_ed25519(path, k, second + strlen(second) - 32);
		EVP_PKEY_free(k);
		free(second);
		return;
	}
	if (k == NULL || second == NULL || strlen(second) < 32 ||
	    EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_PRIV_KEY, &bn) != 1 ||
	    BN_bn2binpad(bn, d, sizeof(d)) != (int)sizeof(d)) {
		fprintf(stderr, "memscan: %s: not an EC private key in PEM\n", path);
		exit(2);
	}
	ms_add(path, "pem", second, strlen(second));
	if ((p8 = EVP_PKEY2PKCS8(k)) == NULL ||
	    (n = i2d_PKCS8_PRIV_KEY_INFO(p8, &der)) <= 0) {
		fprintf(stderr, "memscan: %s: cannot encode\n", path);
		exit(2);
	}
	ms_add(path, "pkcs8", der, (size_t)n);
	OPENSSL_free(der);
	PKCS8_PRIV_KEY_INFO_free(p8);
	der = NULL;
	if ((n = i2d_PrivateKey(k, &der)) <= 0) {
		fprintf(stderr, "memscan: %s: cannot encode\n", path);
		exit(2);
	}
	ms_add(path, "sec1", der, (size_t)n);
	OPENSSL_free(der);
	ms_add(path, "d-be", d, sizeof(d));
	/* A BIGNUM keeps no leading zero bytes: their reversal would trail. */
	for (lead = 0; lead < sizeof(d) - 1 && d[lead] == 0; lead++)
		;
	for (i = 0; i < sizeof(d) - lead; i++)
		r[i] = d[sizeof(d) - 1 - i];
	ms_add(path, "d-le", r, sizeof(d) - lead);
	BN_free(bn);
	EVP_PKEY_free(k);
	free(second);
}

/* A file's bytes as they are: one needle. */
static void
ms_bytes(const char *file)
{
	unsigned char b[8192];
	size_t n;
	FILE *f;

	if ((f = fopen(file, "rb")) == NULL) {
		fprintf(stderr, "memscan: %s: %s\n", file, strerror(errno));
		exit(2);
	}
	n = fread(b, 1, sizeof(b), f);
	fclose(f);
	if (n == 0 || n == sizeof(b)) {
		fprintf(stderr, "memscan: %s: empty or too long\n", file);
		exit(2);
	}
	ms_add(file, "bytes", b, n);
}

static void
ms_search(const unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < nneedles; i++)
		if (!needles[i].n_found && len >= needles[i].n_len &&
		    memmem(p, len, needles[i].n_p, needles[i].n_len) != NULL)
			needles[i].n_found = 1;
}

int
main(int argc, char **argv)
{
	unsigned long long lo, hi, total = 0, off, want;
	unsigned int maps = 0, skipped = 0, unreadable = 0;
	char path[64], line[1024], perms[8];
	unsigned char *buf;
	size_t keep = 0, i;
	ssize_t n;
	FILE *mf;
	int fd, a;

	if (argc < 3) {
		fprintf(stderr, "usage: memscan PID KEYFILE... [-r FILE...]\n");
		return 2;
	}
	for (a = 2; a < argc && strcmp(argv[a], "-r") != 0; a++)
		ms_key(argv[a]);
	for (a++; a < argc; a++)
		ms_bytes(argv[a]);
	snprintf(path, sizeof(path), "/proc/%s/maps", argv[1]);
	if ((mf = fopen(path, "re")) == NULL) {
		fprintf(stderr, "memscan: %s: %s\n", path, strerror(errno));
		return 2;
	}
	snprintf(path, sizeof(path), "/proc/%s/mem", argv[1]);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		fprintf(stderr, "memscan: %s: %s\n", path, strerror(errno));
		return 2;
	}
	if ((buf = malloc(MS_CHUNK + maxlen)) == NULL)
		return 2;
	while (fgets(line, sizeof(line), mf) != NULL) {
		if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3 ||
		    perms[0] != 'r')
			continue;
		if (hi - lo > MS_MAP_MAX) {
			skipped++;
			continue;
		}
		maps++;
		/* A needle may straddle two chunks: the last maxlen - 1 stay. */
		keep = 0;
		for (off = lo; off < hi; off += want) {
			want = hi - off < MS_CHUNK ? hi - off : MS_CHUNK;
			n = pread(fd, buf + keep, (size_t)want, (off_t)off);
			if (n <= 0) {
				unreadable++;
				break;
			}
			total += (unsigned long long)n;
			ms_search(buf, keep + (size_t)n);
			if (keep + (size_t)n > maxlen - 1) {
				memmove(buf, buf + keep + (size_t)n - (maxlen - 1),
				    maxlen - 1);
				keep = maxlen - 1;
			} else
				keep += (size_t)n;
			if ((unsigned long long)n < want)
				break;
		}
	}
	fclose(mf);
	close(fd);
	free(buf);
	for (i = 0; i < nneedles; i++) {
		printf("%s %s %s\n", needles[i].n_key, needles[i].n_form,
		    needles[i].n_found ? "found" : "absent");
		free(needles[i].n_p);
	}
	free(needles);
	printf("scanned %llu bytes in %u mappings (%u skipped, %u unreadable)\n",
	    total, maps, skipped, unreadable);
	if (total == 0) {
		fprintf(stderr, "memscan: nothing could be read\n");
		return 2;
	}
	return 0;
}
