/*
 * cli/cmd_vault.c: airlock vault put|ls|rm|rotate-key (secrets: include/vault.h).
 *
 *	airlock vault put NAME --host H [--host H2 ...] [--placeholder P] < value
 *	airlock vault ls [--json]
 *	airlock vault rm NAME
 *	airlock vault rotate-key
 *
 * The value is read from stdin with read(2) (no stdio buffer keeps a copy) into one
 * buffer that is wiped before exit; nothing here ever prints it.  The process is made
 * non-dumpable with no core limit before the vault is opened.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "cli.h"
#include "vault.h"

static void
vault_usage(void)
{
	cli_group_usage(&cli_vault_group, stderr);
}

/* Exit status for an enum vault_err: bad input and unusable vaults are 2. */
static int
vault_exit(int rv)
{
	switch (rv) {
	case VAULT_OK:
		return 0;
	case VAULT_ERR_NOT_FOUND:
	case VAULT_ERR_SYS:
	case VAULT_ERR_CRYPTO:
		return 1;
	default:
		return 2;
	}
}

static int
vault_cli_open(const struct cli_ctx *ctx, int flags, struct vault **v)
{
	struct airlock_config cfg;
	char err[1024];
	int rv;

	if (vault_process_harden() == -1) {
		fprintf(stderr, "airlock: vault: cannot disable core dumps: %s\n",
		    strerror(errno));
		return VAULT_ERR_SYS;
	}
	if (cli_config(ctx, &cfg) == -1)
		return VAULT_ERR_INVALID;
	if ((rv = vault_open(cfg.state_dir, flags, v, err, sizeof(err))) !=
	    VAULT_OK)
		fprintf(stderr, "airlock: %s\n", err);
	return rv;
}

/*
 * Reads the value from stdin into *s: at most VAULT_VALUE_MAX bytes after one
 * trailing newline ("\n" or "\r\n") is stripped.  Returns 0 or -1 (message printed).
 */
static int
vault_value_read(struct secret *s)
{
	size_t cap = VAULT_VALUE_MAX + 3, n = 0;
	uint8_t *buf;
	ssize_t r;

	s->p = NULL;
	s->n = 0;
	if (isatty(STDIN_FILENO)) {
		fprintf(stderr, "airlock: vault put reads the value from stdin: "
		    "redirect or pipe it (a terminal would echo it)\n");
		return -1;
	}
	if ((buf = malloc(cap)) == NULL) {
		fprintf(stderr, "airlock: %s\n", strerror(errno));
		return -1;
	}
	for (;;) {
		r = read(STDIN_FILENO, buf + n, cap - n);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			fprintf(stderr, "airlock: reading stdin: %s\n",
			    strerror(errno));
			goto error;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == cap)
			break;	/* too long in any case */
	}
	if (n > 0 && buf[n - 1] == '\n') {
		n--;
		if (n > 0 && buf[n - 1] == '\r')
			n--;
	}
	if (n == 0) {
		fprintf(stderr, "airlock: vault put: empty value on stdin\n");
		goto error;
	}
	if (n > VAULT_VALUE_MAX) {
		fprintf(stderr, "airlock: vault put: value longer than %d bytes\n",
		    VAULT_VALUE_MAX);
		goto error;
	}
	s->p = buf;
	s->n = n;
	/* The unused tail (and any stripped newline) is wiped with s by cap. */
	OPENSSL_cleanse(buf + n, cap - n);
	return 0;
 error:
	OPENSSL_clear_free(buf, cap);
	return -1;
}

static int
vault_put(const struct cli_ctx *ctx, int argc, char **argv)
{
	const char *hosts[VAULT_HOSTS_MAX], *name = NULL, *ph = NULL;
	struct secret value = { NULL, 0 };
	struct vault *v = NULL;
	struct vault_info vi;
	size_t nhosts = 0;
	char err[1024];
	int i, rv = VAULT_ERR_INVALID;

	for (i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--host") == 0 && i + 1 < argc) {
			if (nhosts == VAULT_HOSTS_MAX) {
				fprintf(stderr, "airlock: at most %d --host\n",
				    VAULT_HOSTS_MAX);
				goto out;
			}
			hosts[nhosts++] = argv[++i];
		} else if (strcmp(argv[i], "--placeholder") == 0 && i + 1 < argc)
			ph = argv[++i];
		else if (argv[i][0] != '-' && name == NULL)
			name = argv[i];
		else {
			fprintf(stderr, "airlock: vault put: unexpected argument "
			    "'%s'\n", argv[i]);
			vault_usage();
			goto out;
		}
	}
	if (name == NULL || nhosts == 0) {
		fprintf(stderr, "airlock: vault put needs NAME and at least one "
		    "--host\n");
		vault_usage();
		goto out;
	}
	if (!vault_name_is_valid(name)) {
		fprintf(stderr, "airlock: invalid secret name '%.80s' (1-%d of "
		    "A-Z a-z 0-9 _ . -, starting with a letter or digit)\n", name,
		    VAULT_NAME_MAX);
		goto out;
	}
	if (ph != NULL && !vault_placeholder_is_valid(ph)) {
		fprintf(stderr, "airlock: a placeholder must be %d-%d printable "
		    "ASCII characters without spaces\n", VAULT_PLACEHOLDER_MIN,
		    VAULT_PLACEHOLDER_MAX);
		goto out;
	}
	if ((rv = vault_cli_open(ctx, VAULT_OPEN_WRITE | VAULT_OPEN_CREATE,
	    &v)) != VAULT_OK)
		goto out;
	rv = VAULT_ERR_INVALID;
	if (vault_value_read(&value) == -1)
		goto out;
	if ((rv = vault_secret_put(v, name, hosts, nhosts, ph, &value, err,
	    sizeof(err))) != VAULT_OK ||
	    (rv = vault_commit(v, err, sizeof(err))) != VAULT_OK) {
		fprintf(stderr, "airlock: %s\n", err);
		goto out;
	}
	vault_info_get(v, (size_t)vault_secret_find(v, name), &vi);
	printf("stored secret %s, placeholder %s\n", name, vi.vi_placeholder);
 out:
	secret_free(&value);
	vault_close(v);
	return vault_exit(rv);
}

static void
vault_time_fmt(long long t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (gmtime_r(&tt, &tm) == NULL ||
	    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, len, "%lld", t);
}

static int
vault_ls(const struct cli_ctx *ctx, int argc, char **argv)
{
	char created[32], rotated[32];
	json_t *arr = NULL, *o, *h;
	struct vault_info vi;
	struct vault *v = NULL;
	size_t i, j;
	int a, json = ctx->json, rv;

	for (a = 2; a < argc; a++) {
		if (strcmp(argv[a], "--json") == 0)
			json = 1;
		else {
			fprintf(stderr, "airlock: vault ls: unexpected argument "
			    "'%s'\n", argv[a]);
			vault_usage();
			return 2;
		}
	}
	if ((rv = vault_cli_open(ctx, 0, &v)) != VAULT_OK)
		return vault_exit(rv);
	if (json && (arr = json_array()) == NULL)
		goto nomem;
	if (!json)
		printf("%-24s %-40s %-48s %-20s %s\n", "NAME", "HOSTS",
		    "PLACEHOLDER", "CREATED", "ROTATED");
	for (i = 0; i < vault_count(v); i++) {
		vault_info_get(v, i, &vi);
		vault_time_fmt(vi.vi_created, created, sizeof(created));
		vault_time_fmt(vi.vi_rotated, rotated, sizeof(rotated));
		if (!json) {
			char hl[VAULT_HOSTS_MAX * 256];
			size_t off = 0;

			hl[0] = '\0';
			for (j = 0; j < vi.vi_nhosts && off < sizeof(hl); j++)
				off += (size_t)snprintf(hl + off, sizeof(hl) - off,
				    "%s%s", j ? "," : "", vi.vi_hosts[j]);
			printf("%-24s %-40s %-48s %-20s %s\n", vi.vi_name, hl,
			    vi.vi_placeholder, created, rotated);
			continue;
		}
		if ((h = json_array()) == NULL)
			goto nomem;
		for (j = 0; j < vi.vi_nhosts; j++)
			if (json_array_append_new(h, json_string(vi.vi_hosts[j])) ==
			    -1) {
				json_decref(h);
				goto nomem;
			}
		if ((o = json_pack("{s:s, s:o, s:s, s:s, s:s}", "name",
		    vi.vi_name, "hosts", h, "placeholder", vi.vi_placeholder,
		    "created", created, "rotated", rotated)) == NULL ||
		    json_array_append_new(arr, o) == -1)
			goto nomem;
	}
	if (json) {
		if (json_dumpf(arr, stdout, JSON_INDENT(2)) == -1)
			goto nomem;
		putchar('\n');
	}
	json_decref(arr);
	vault_close(v);
	return 0;
 nomem:
	fprintf(stderr, "airlock: vault ls: out of memory\n");
	json_decref(arr);
	vault_close(v);
	return 1;
}

static int
vault_rm(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct vault *v = NULL;
	char err[1024];
	int rv;

	if (argc != 3 || argv[2][0] == '-') {
		if (argc > 2)
			cli_arg_refused(argv, argv[2][0] == '-' || argc == 3 ?
			    argv[2] : argv[3]);
		vault_usage();
		return 2;
	}
	if ((rv = vault_cli_open(ctx, VAULT_OPEN_WRITE, &v)) != VAULT_OK)
		return vault_exit(rv);
	if ((rv = vault_secret_remove(v, argv[2], err, sizeof(err))) !=
	    VAULT_OK || (rv = vault_commit(v, err, sizeof(err))) != VAULT_OK)
		fprintf(stderr, "airlock: %s\n", err);
	else
		printf("removed secret %s\n", argv[2]);
	vault_close(v);
	return vault_exit(rv);
}

static int
vault_rotate(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct vault *v = NULL;
	char err[1024];
	int rv;

	if (argc != 2) {
		cli_arg_refused(argv, argv[2]);
		vault_usage();
		return 2;
	}
	if ((rv = vault_cli_open(ctx, VAULT_OPEN_WRITE, &v)) != VAULT_OK)
		return vault_exit(rv);
	if ((rv = vault_rotate_key(v, err, sizeof(err))) != VAULT_OK)
		fprintf(stderr, "airlock: vault rotate-key: %s\n", err);
	else
		printf("re-encrypted %zu secrets under a new vault key\n",
		    vault_count(v));
	vault_close(v);
	return vault_exit(rv);
}

static const struct cli_sub vault_subs[] = {
	{ "put", vault_put, "NAME --host HOST [--host HOST...] [--placeholder P] "
	  "< value" },
	{ "ls", vault_ls, "[--json]" },
	{ "rm", vault_rm, "NAME" },
	{ "rotate-key", vault_rotate, "" },
	{ NULL, NULL, NULL }
};
const struct cli_group cli_vault_group = { "vault", vault_subs,
    CLI_UNKNOWN_COMMAND, NULL };
