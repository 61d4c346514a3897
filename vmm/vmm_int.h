/*
 * vmm/vmm_int.h: private to vmm/ (and its unit tests).  Prototypes grouped by the file
 * that defines them.
 */
#ifndef AIRLOCK_VMM_INT_H
#define AIRLOCK_VMM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "sandbox.h"
#include "vmm.h"		/* the public API (include/vmm.h) */

/* The fast-boot kernel command line of the default image (measured under TCG). */
#define VMM_CMDLINE	"console=ttyS0 quiet panic=-1 mitigations=off nokaslr " \
			"tsc=reliable no_timer_check i8042.noaux i8042.nokbd " \
			"i8042.nopnp 8250.nr_uarts=1 audit=0 lsm= cryptomgr.notests"

/* vmm_xml.c: the domain XML, a pure function of this. */
struct vmm_domain_spec {
	const char	*ds_name;	/* domain name */
	const char	*ds_type;	/* "kvm" | "qemu" */
	unsigned int	 ds_memory;	/* MiB */
	unsigned int	 ds_vcpus;
	const char	*ds_kernel;	/* direct kernel boot, or NULL (disk boot) */
	const char	*ds_initrd;
	const char	*ds_cmdline;
	const char	*ds_disk;	/* qcow2 (boot disk), or NULL */
	const char	*ds_seed;	/* cloud-init seed ISO (with ds_disk), or NULL */
	const char	*ds_tap;	/* NULL: no NIC (the KVM probe) */
	const char	*ds_mac;	/* NULL or "": libvirt picks one */
	const char	*ds_console;	/* serial console file */
};
/* Returns the XML (free with free()), or NULL (errno EINVAL: a field is missing or
 * holds a control character; ENOMEM). */
char	*vmm_domain_xml(const struct vmm_domain_spec *ds);

/* vmm_cpio.c: an in-memory "newc" cpio archive (what the kernel unpacks). */
struct vmm_cpio {
	uint8_t		*c_p;
	size_t		 c_n;
	size_t		 c_cap;
	unsigned int	 c_ino;
	int		 c_failed;	/* sticky: an add failed (ENOMEM, bad path) */
};
/* Appends a directory / a regular file (path without a leading "/"). */
void	vmm_cpio_dir(struct vmm_cpio *c, const char *path, unsigned int mode);
void	vmm_cpio_file(struct vmm_cpio *c, const char *path, unsigned int mode,
	    const void *data, size_t len);
/* Appends the trailer.  Returns 0, or -1 if anything failed on the way. */
int	vmm_cpio_finish(struct vmm_cpio *c);
void	vmm_cpio_free(struct vmm_cpio *c);

/* vmm_guest.c: what the guest receives. */
/*
 * The environment variable for secret name: upper-cased, every character outside
 * [A-Z0-9_] becomes '_', a leading digit gets a '_' in front.  Returns 0 or -1
 * (does not fit).
 */
int	vmm_env_name(const char *secret, char *buf, size_t len);
/* Appends s to buf as one single-quoted shell word.  Returns 0 or -1. */
int	vmm_shell_quote(const char *s, char *buf, size_t len);

struct vmm_guest {
	char		*g_ca_pem;	/* the CA bundle (may be "") */
	const char	*g_ca_kind;	/* "sandbox" | "host" | "none" */
	int		 g_ca_reissued;	/* ca_sandbox_sync() made a new one */
	char		*g_env;		/* "export NAME='placeholder'\n"... */
	unsigned int	 g_nenv;
	char		*g_agent;	/* the agent script, or NULL */
	size_t		 g_agent_len;
};
/*
 * Collects the CA certificate and the placeholders for sandbox sb (its policy, the
 * vault of cfg->state_dir) and reads the agent file.  Never reads a secret value.
 * Returns 0 or -1; release with vmm_guest_free().
 */
int	vmm_guest_collect(const struct airlock_config *cfg,
	    const struct sandbox *sb, const char *agent, struct vmm_guest *g,
	    char *err, size_t errlen);
void	vmm_guest_free(struct vmm_guest *g);
/* The per-VM overlay cpio (files under etc/, see guest/init).  Returns 0 or -1. */
int	vmm_guest_overlay(const struct sandbox *sb, const struct vmm_guest *g,
	    struct vmm_cpio *c);
/*
 * Writes dst = the base initramfs followed by the overlay archive, through a
 * temporary file and rename.  Returns 0 or -1.
 */
int	vmm_initrd_write(const char *base, const struct vmm_cpio *overlay,
	    const char *dst, char *err, size_t errlen);

/* vmm_seed.c: cloud-init NoCloud seed for disk images. */
/*
 * A minimal ISO 9660 image labelled "cidata" holding the given files in its root
 * directory (names as given: lower case letters, digits, '-', '_', '.'; at most 30
 * bytes).  Returns 0 with *out and *outlen (free with free()), or -1.
 */
struct vmm_seed_file {
	const char	*sf_name;
	const char	*sf_data;
	size_t		 sf_len;
};
int	vmm_seed_iso(const struct vmm_seed_file *files, size_t n, uint8_t **out,
	    size_t *outlen);
/* The NoCloud user-data / meta-data / network-config for a sandbox's VM. */
int	vmm_seed_build(const struct sandbox *sb, const struct vmm_guest *g,
	    uint8_t **out, size_t *outlen);

#endif
