/*
 * include/vmm.h: agent VMs under libvirt (`airlock vm ...`).  Implemented in vmm/.
 *
 * One transient libvirt domain per sandbox, named VMM_DOMAIN_PREFIX + sandbox name,
 * on the libvirt_uri of the configuration, through the libvirt C API (no virsh).
 * Its XML is generated from the sandbox record: the NIC is the sandbox's tap
 * (type 'ethernet', managed='no': airlock made the tap, libvirt only opens it), the
 * serial console goes to STATE_DIR/vm/NAME/console.log.  The domain type is "kvm"
 * only when a KVM guest really runs here (probed once, cached in
 * STATE_DIR/vm/domain-type), else "qemu" (TCG).
 *
 * What the guest receives (the default image: a second cpio appended to the shared
 * base initramfs, STATE_DIR/vm/NAME/initrd.cpio; a disk image: a cloud-init NoCloud
 * seed): its static address with the host end of the tap as gateway and DNS server,
 * the CA certificate it must trust (the sandbox's name-constrained CA when its
 * policy inspects names, else the host CA), and for each secret its policy injects
 * the *placeholder* (never the value) as an environment variable named after the
 * secret (upper-cased; characters other than [A-Z0-9_] become '_').  An optional
 * agent script runs at boot with its output on the console.
 *
 * Every function that can fail writes one line to err (no "airlock: " prefix).
 */
#ifndef AIRLOCK_VMM_H
#define AIRLOCK_VMM_H

#include <stddef.h>
#include <stdio.h>

#include "config.h"
#include "sandbox.h"

#define VMM_DOMAIN_PREFIX	"airlock-"
#define VMM_MEMORY_DEFAULT	192	/* MiB; the raw initramfs needs >= 112 */
#define VMM_MEMORY_DISK_DEFAULT	512	/* MiB, with --disk */
#define VMM_MEMORY_MIN		128
#define VMM_MEMORY_MAX		65536
#define VMM_VCPUS_DEFAULT	1
#define VMM_VCPUS_MAX		64
#define VMM_STOP_TIMEOUT	10	/* s of graceful shutdown before destroy */
#define VMM_AGENT_MAX		(1024 * 1024)	/* bytes of agent script */

struct vmm_start_opts {
	const char	*vs_name;	/* sandbox */
	const char	*vs_image;	/* NULL or "default": the built guest image;
					   else a folder with vmlinux + initrd.cpio */
	const char	*vs_disk;	/* a qcow2 disk image instead (cloud-init) */
	const char	*vs_agent;	/* agent script file, or NULL */
	unsigned int	 vs_memory;	/* MiB; 0: VMM_MEMORY_DEFAULT, or
					   VMM_MEMORY_DISK_DEFAULT with a disk */
	unsigned int	 vs_vcpus;	/* 0: VMM_VCPUS_DEFAULT */
};

/* What `vm start` did, for its message. */
struct vmm_started {
	char		vd_domain[64];
	char		vd_type[8];		/* "kvm" | "qemu" */
	char		vd_console[PATH_MAX];
	char		vd_ca[16];		/* "sandbox" | "host" | "none" */
	unsigned int	vd_nenv;		/* placeholders passed */
	int		vd_ca_reissued;		/* the sandbox CA was (re)made now:
						   its policy's inspected names
						   changed since it was made */
};

/* One VM of `vm ls`. */
struct vmm_vm {
	char		vm_name[SANDBOX_NAME_MAX + 1];
	char		vm_domain[64];
	char		vm_state[16];		/* "running", "paused", ... */
	int		vm_id;			/* libvirt id, -1 if not running */
	unsigned int	vm_memory;		/* MiB */
	unsigned int	vm_vcpus;
	char		vm_type[8];
	char		vm_console[PATH_MAX];
};

/*
 * Starts the VM of a sandbox made by `sandbox create` (a sandbox made by `net attach`
 * is refused: its interface belongs to another VMM).  Refuses a sandbox whose VM
 * runs.  Returns 0 (and fills *out if not NULL) or -1.
 */
int	vmm_start(const struct airlock_config *cfg, const struct vmm_start_opts *o,
	    struct vmm_started *out, char *err, size_t errlen);

/*
 * Graceful shutdown (ACPI power button), then destroy after timeout_s seconds.
 * Returns 0 when the guest powered off by itself, 1 when it had to be destroyed,
 * -1 on error (no such VM: errno ENOENT).
 */
int	vmm_stop(const struct airlock_config *cfg, const char *name,
	    unsigned int timeout_s, char *err, size_t errlen);

/*
 * Destroys the VM at once and removes its per-VM boot files (the console log stays).
 * Returns 0, or -1 (no such VM: errno ENOENT).
 */
int	vmm_destroy(const struct airlock_config *cfg, const char *name, char *err,
	    size_t errlen);

/*
 * For `sandbox destroy`: destroys the sandbox's VM if it has one and removes
 * STATE_DIR/vm/NAME entirely.  A sandbox whose VM was never started needs no libvirt
 * connection.  Returns 0 or -1.
 */
int	vmm_sandbox_purge(const struct airlock_config *cfg, const char *name,
	    char *err, size_t errlen);

/* Every airlock VM on the connection, sorted by name.  Returns the count and *out
 * (free with free()), or -1. */
int	vmm_list(const struct airlock_config *cfg, struct vmm_vm **out, char *err,
	    size_t errlen);

/* STATE_DIR/vm/NAME/console.log into buf.  Returns 0 or -1 (name invalid, too long). */
int	vmm_console_path(const struct airlock_config *cfg, const char *name,
	    char *buf, size_t len);

/*
 * Copies the console log to out as it grows until a line containing marker has been
 * copied (returns 1), or timeout_ms passed or the VM is no longer running and the log
 * has no more to give (returns 0).  marker NULL: copies what is there and returns 1.
 * Returns -1 on error.
 */
int	vmm_console_follow(const struct airlock_config *cfg, const char *name,
	    const char *marker, unsigned int timeout_ms, FILE *out, char *err,
	    size_t errlen);

#endif
