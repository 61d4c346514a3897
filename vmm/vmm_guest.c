/*
 * vmm/vmm_guest.c: what a sandbox's guest receives, and the per-VM initramfs of the
 * default image.
 *
 *	CA	the sandbox's own name-constrained CA when its policy inspects names
 *		(made or remade here from the current policy, as `airlock ca cert
 *		SANDBOX` does), else the host CA (`airlock ca init`), else none (a
 *		splice-only sandbox needs no CA; the VM is told on the console).
 *	env	for each secret the sandbox's policy injects: NAME=placeholder.  Only
 *		vault metadata is read (vault_info_get); no value is ever decrypted
 *		here, so no value can reach the guest.
 *	agent	the script given with --agent, run by the guest's /init at boot.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ca.h"
#include "file.h"
#include "policy.h"
#include "vault.h"
#include "vmm_int.h"

int
vmm_env_name(const char *secret, char *buf, size_t len)
{
	size_t i = 0;
	const char *s;

	if (len == 0 || secret[0] == '\0')
		return -1;
	if (secret[0] >= '0' && secret[0] <= '9')
		buf[i++] = '_';
	for (s = secret; *s != '\0'; s++) {
		char ch = *s;

		if (i + 1 >= len)
			return -1;
		if (ch >= 'a' && ch <= 'z')
			ch = (char)(ch - 'a' + 'A');
		else if (!((ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')))
			ch = '_';
		buf[i++] = ch;
	}
	buf[i] = '\0';
	return 0;
}

int
vmm_shell_quote(const char *s, char *buf, size_t len)
{
	size_t i = 0;

#define PUT(ch) do { if (i + 1 >= len) return -1; buf[i++] = (ch); } while (0)
	PUT('\'');
	for (; *s != '\0'; s++) {
		if (*s == '\'') {
			/* close, an escaped quote, reopen: '\'' */
			PUT('\'');
			PUT('\\');
			PUT('\'');
			PUT('\'');
		} else
			PUT(*s);
	}
	PUT('\'');
#undef PUT
	buf[i] = '\0';
	return 0;
}

/* Reads a whole small file (file_read()); a message in err on failure.  0 or -1. */
static int
vmm_file_read(const char *path, size_t max, char **out, size_t *outlen,
    char *err, size_t errlen)
{
	if (file_read(path, max, out, outlen) == 0)
		return 0;
	if (errno == EISDIR || errno == EINVAL || errno == EFBIG)
		snprintf(err, errlen, "%s: not a regular file of at most %zu "
		    "bytes", path, max);
	else if (errno == ENOMEM)
		snprintf(err, errlen, "out of memory");
	else
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	return -1;
}

/* The CA PEM for the guest (see the top of this file). */
static int
vmm_guest_ca(const struct airlock_config *cfg, const struct sandbox *sb,
    const struct policy *p, struct vmm_guest *g, char *err, size_t errlen)
{
	const char **names = NULL;
	struct ca *ca = NULL;
	char cerr[512], *buf = NULL;
	size_t i, n = 0, len = 0;
	FILE *f = NULL;
	int rv = -1, reissued, crv;

	if ((names = calloc(p->p_nrules + 1, sizeof(*names))) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < p->p_nrules; i++)
		if (!p->p_rules[i].pr_is_cidr &&
		    p->p_rules[i].pr_tls == POLICY_TLS_INSPECT)
			names[n++] = p->p_rules[i].pr_host;
	if (n > 0) {
		if (ca_sandbox_sync(cfg->state_dir, sb->sb_name, names, n,
		    &reissued, cerr, sizeof(cerr)) != CA_OK) {
			snprintf(err, errlen, "sandbox CA: %s", cerr);
			goto out;
		}
		g->g_ca_reissued = reissued;
		ca = ca_load(cfg->state_dir, sb->sb_name, NULL, cerr,
		    sizeof(cerr));
		g->g_ca_kind = "sandbox";
	} else {
		ca = ca_load(cfg->state_dir, NULL, &crv, cerr, sizeof(cerr));
		g->g_ca_kind = "host";
		if (ca == NULL && crv == CA_ERR_ABSENT) {
			/* Splice-only and no host CA: nothing to trust. */
			g->g_ca_kind = "none";
			if ((g->g_ca_pem = strdup("")) == NULL)
				goto out;
			rv = 0;
			goto out;
		}
	}
	if (ca == NULL) {
		snprintf(err, errlen, "%s", cerr);
		goto out;
	}
	if ((f = open_memstream(&buf, &len)) == NULL ||
	    ca_cert_write_pem(ca, f) == -1) {
		snprintf(err, errlen, "cannot write the CA certificate");
		goto out;
	}
	if (fclose(f) == EOF) {
		f = NULL;
		snprintf(err, errlen, "cannot write the CA certificate");
		goto out;
	}
	f = NULL;
	g->g_ca_pem = buf;
	buf = NULL;
	rv = 0;
 out:
	if (f != NULL)
		fclose(f);
	free(buf);
	ca_free(ca);
	free(names);
	return rv;
}

/* "export NAME='placeholder'" for every secret the policy injects. */
static int
vmm_guest_env(const struct airlock_config *cfg, const struct policy *p,
    struct vmm_guest *g, char *err, size_t errlen)
{
	struct vault *v = NULL;
	struct vault_info vi;
	char verr[512], ename[VAULT_NAME_MAX + 2];
	char q[2 * VAULT_PLACEHOLDER_MAX + 8], *buf = NULL;
	const char **seen = NULL;
	size_t i, j, k, nseen = 0, total = 0, len = 0;
	FILE *f = NULL;
	int rv = -1, vrv, idx;

	for (i = 0; i < p->p_nrules; i++)
		total += p->p_rules[i].pr_ninject;
	if (total == 0) {
		g->g_env = strdup("");
		return g->g_env == NULL ? -1 : 0;
	}
	if ((seen = calloc(total, sizeof(*seen))) == NULL ||
	    (f = open_memstream(&buf, &len)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if ((vrv = vault_open(cfg->state_dir, 0, &v, verr, sizeof(verr))) !=
	    VAULT_OK) {
		snprintf(err, errlen, "vault: %s", verr);
		goto out;
	}
	for (i = 0; i < p->p_nrules; i++) {
		for (j = 0; j < p->p_rules[i].pr_ninject; j++) {
			const char *name = p->p_rules[i].pr_inject[j].pi_secret;

			for (k = 0; k < nseen; k++)
				if (strcmp(seen[k], name) == 0)
					break;
			if (k < nseen)
				continue;
			seen[nseen++] = name;
			if ((idx = vault_secret_find(v, name)) == -1 ||
			    vault_info_get(v, (size_t)idx, &vi) == -1) {
				snprintf(err, errlen, "the policy injects secret "
				    "'%s', which is not in the vault", name);
				goto out;
			}
			if (vmm_env_name(name, ename, sizeof(ename)) == -1 ||
			    vmm_shell_quote(vi.vi_placeholder, q,
			    sizeof(q)) == -1) {
				snprintf(err, errlen, "secret '%s': no "
				    "environment name for it", name);
				goto out;
			}
			/* Two names that map to one variable: refuse. */
			for (k = 0; k + 1 < nseen; k++) {
				char other[VAULT_NAME_MAX + 2];

				if (vmm_env_name(seen[k], other,
				    sizeof(other)) == 0 &&
				    strcmp(other, ename) == 0) {
					snprintf(err, errlen, "secrets '%s' "
					    "and '%s' would both be $%s",
					    seen[k], name, ename);
					goto out;
				}
			}
			fprintf(f, "export %s=%s\n", ename, q);
			g->g_nenv++;
		}
	}
	if (fclose(f) == EOF) {
		f = NULL;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	f = NULL;
	g->g_env = buf;
	buf = NULL;
	rv = 0;
 out:
	if (f != NULL)
		fclose(f);
	free(buf);
	free(seen);
	vault_close(v);
	return rv;
}

int
vmm_guest_collect(const struct airlock_config *cfg, const struct sandbox *sb,
    const char *agent, struct vmm_guest *g, char *err, size_t errlen)
{
	struct policy_errors errs = { NULL, 0 };
	struct policy *p = NULL;
	char perr[512];
	int rv = -1;

	memset(g, 0, sizeof(*g));
	if ((p = policy_load_file(sb->sb_policy, &errs)) == NULL) {
		if (errs.n > 0 && policy_error_fmt(&errs.v[0], perr,
		    sizeof(perr)) >= 0)
			snprintf(err, errlen, "%s", perr);
		else
			snprintf(err, errlen, "cannot load %s", sb->sb_policy);
		goto out;
	}
	if (vmm_guest_ca(cfg, sb, p, g, err, errlen) == -1 ||
	    vmm_guest_env(cfg, p, g, err, errlen) == -1)
		goto out;
	if (agent != NULL && vmm_file_read(agent, VMM_AGENT_MAX, &g->g_agent,
	    &g->g_agent_len, err, errlen) == -1)
		goto out;
	rv = 0;
 out:
	if (rv == -1)
		vmm_guest_free(g);
	policy_free(p);
	policy_errors_free(&errs);
	return rv;
}

void
vmm_guest_free(struct vmm_guest *g)
{
	free(g->g_ca_pem);
	free(g->g_env);
	free(g->g_agent);
	memset(g, 0, sizeof(*g));
}

int
vmm_guest_overlay(const struct sandbox *sb, const struct vmm_guest *g,
    struct vmm_cpio *c)
{
	char host[NETADDR_STRLEN], guest[NETADDR_STRLEN], net[512], dns[128];
	char hn[SANDBOX_NAME_MAX + 2];
	int n;

	netaddr_fmt(&sb->sb_host_ip, host, sizeof(host));
	netaddr_fmt(&sb->sb_guest_ip, guest, sizeof(guest));
	n = snprintf(net, sizeof(net), "AIRLOCK_IP=%s\nAIRLOCK_PREFIX=%u\n"
	    "AIRLOCK_GW=%s\nAIRLOCK_HOSTNAME=%s\nAIRLOCK_CA=%s\n", guest,
	    sb->sb_prefix, host, sb->sb_name, g->g_ca_kind);
	if (n < 0 || (size_t)n >= sizeof(net))
		return -1;
	snprintf(dns, sizeof(dns), "nameserver %s\n", host);
	snprintf(hn, sizeof(hn), "%s\n", sb->sb_name);
	vmm_cpio_dir(c, "etc", 0755);
	vmm_cpio_dir(c, "etc/airlock", 0755);
	vmm_cpio_file(c, "etc/airlock/net", 0644, net, strlen(net));
	vmm_cpio_file(c, "etc/airlock/env", 0644, g->g_env, strlen(g->g_env));
	vmm_cpio_file(c, "etc/airlock/ca.pem", 0644, g->g_ca_pem,
	    strlen(g->g_ca_pem));
	vmm_cpio_file(c, "etc/resolv.conf", 0644, dns, strlen(dns));
	vmm_cpio_file(c, "etc/hostname", 0644, hn, strlen(hn));
	if (g->g_agent != NULL)
		vmm_cpio_file(c, "etc/airlock/agent", 0755, g->g_agent,
		    g->g_agent_len);
	return vmm_cpio_finish(c);
}

int
vmm_initrd_write(const char *base, const struct vmm_cpio *overlay,
    const char *dst, char *err, size_t errlen)
{
	char tmp[PATH_MAX];
	struct stat st;
	loff_t left;
	ssize_t r;
	size_t off;
	int in = -1, out = -1, rv = -1;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", dst) >= (int)sizeof(tmp)) {
		snprintf(err, errlen, "%s: path too long", dst);
		return -1;
	}
	if ((in = open(base, O_RDONLY | O_CLOEXEC)) == -1 ||
	    fstat(in, &st) == -1) {
		snprintf(err, errlen, "guest image %s: %s (run `make guest`)",
		    base, strerror(errno));
		goto out;
	}
	if ((out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644)) == -1) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	/* In-kernel copy (a reflink where the file system can): the base is ~20 MB. */
	for (left = st.st_size; left > 0; left -= r) {
		r = copy_file_range(in, NULL, out, NULL, (size_t)left, 0);
		if (r == -1 && errno == EINTR) {
			r = 0;
			continue;
		}
		if (r <= 0) {
			snprintf(err, errlen, "copying %s: %s", base,
			    r == 0 ? "short copy" : strerror(errno));
			goto out;
		}
	}
	/* The next archive's header must start 4-byte aligned (GNU cpio pads
	 * to 512 anyway). */
	if (st.st_size % 4 != 0) {
		static const uint8_t zero[4];

		if (write(out, zero, 4 - (size_t)(st.st_size % 4)) == -1) {
			snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
			goto out;
		}
	}
	for (off = 0; off < overlay->c_n; off += (size_t)r) {
		if ((r = write(out, overlay->c_p + off, overlay->c_n - off)) ==
		    -1) {
			if (errno == EINTR) {
				r = 0;
				continue;
			}
			snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
			goto out;
		}
	}
	if (close(out) == -1) {
		out = -1;
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	out = -1;
	if (rename(tmp, dst) == -1) {
		snprintf(err, errlen, "%s: %s", dst, strerror(errno));
		goto out;
	}
	rv = 0;
 out:
	if (out != -1)
		close(out);
	if (in != -1)
		close(in);
	if (rv == -1)
		unlink(tmp);
	return rv;
}
