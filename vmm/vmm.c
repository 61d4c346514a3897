/*
 * vmm/vmm.c: the VM lifecycle of `airlock vm` through the libvirt C API.
 *
 * Domains are transient (virDomainCreateXML): a VM exists exactly while it runs, so
 * destroy or power-off leaves no definition behind, and `vm ls` is what libvirt
 * says runs.  Per-VM files live in STATE_DIR/vm/NAME/: initrd.cpio (the base image
 * + this VM's overlay), seed.iso (disk images), domain.xml (what was started, for
 * the operator), console.log.  The directory is also the mark that a sandbox had a
 * VM, so `sandbox destroy` of a sandbox that never had one needs no libvirt.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "file.h"
#include "vmm_int.h"

#define VMM_PROBE_WAIT_MS	5000	/* a KVM guest prints within this */

/* libvirt prints every error to stderr unless told otherwise; we report our own. */
static void
vmm_libvirt_quiet(void *opaque, virErrorPtr e)
{
}

static const char *
vmm_lverr(void)
{
	const char *m = virGetLastErrorMessage();

	return m != NULL ? m : "unknown libvirt error";
}

static int
vmm_lverr_is_no_domain(void)
{
	virErrorPtr e = virGetLastError();

	return e != NULL && e->code == VIR_ERR_NO_DOMAIN;
}

static virConnectPtr
vmm_connect(const struct airlock_config *cfg, char *err, size_t errlen)
{
	virConnectPtr conn;

	virSetErrorFunc(NULL, vmm_libvirt_quiet);
	if ((conn = virConnectOpen(cfg->libvirt_uri)) == NULL) {
		snprintf(err, errlen, "libvirt %s: %s", cfg->libvirt_uri,
		    vmm_lverr());
		/* Never ENOENT ("no such VM"), whatever libvirt left in errno:
		 * purge must not take an unreachable libvirt for "no VM". */
		errno = EHOSTUNREACH;
	}
	return conn;
}

static int
vmm_path(char *buf, size_t len, const struct airlock_config *cfg,
    const char *name, const char *file)
{
	int n;

	if (name == NULL)
		n = snprintf(buf, len, "%s/vm%s%s", cfg->state_dir,
		    file ? "/" : "", file ? file : "");
	else
		n = snprintf(buf, len, "%s/vm/%s%s%s", cfg->state_dir, name,
		    file ? "/" : "", file ? file : "");
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int
vmm_console_path(const struct airlock_config *cfg, const char *name,
    char *buf, size_t len)
{
	if (!sandbox_name_is_valid(name))
		return -1;
	return vmm_path(buf, len, cfg, name, "console.log");
}

static void
vmm_domain_name(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", VMM_DOMAIN_PREFIX, name);
}

/* Writes a small file through a temporary and rename. */
static int
vmm_file_write(const char *path, const void *data, size_t len, mode_t mode,
    char *err, size_t errlen)
{
	char tmp[PATH_MAX];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp) ||
	    (f = fopen(tmp, "we")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fchmod(fileno(f), mode) == -1 ||
	    (len > 0 && fwrite(data, 1, len, f) != len)) {
		fclose(f);
		unlink(tmp);
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		return -1;
	}
	if (fclose(f) == EOF || rename(tmp, path) == -1) {
		unlink(tmp);
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* The folder of the default guest image: $AIRLOCK_GUEST_DIR, else (file.h) guest. */
static int
vmm_guest_dir(char *buf, size_t len)
{
	return file_share_dir("AIRLOCK_GUEST_DIR", "guest", buf, len);
}

/* Sleeps ms milliseconds. */
static void
vmm_msleep(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static long long
vmm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 1 if the file contains needle (first 64 KiB), else 0. */
static int
vmm_file_contains(const char *path, const char *needle)
{
	char buf[65536];
	size_t n;
	FILE *f;

	if ((f = fopen(path, "re")) == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The console may hold NULs: search every NUL-separated piece. */
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
		if (strstr(buf + i, needle) != NULL)
			return 1;
	return 0;
}

/*
 * "kvm" only when a KVM guest really runs here, else "qemu" (TCG).  /dev/kvm can
 * exist and open while guests hang before their first instruction (nested
 * virtualisation that does not work), so after the cheap checks a tiny probe guest
 * (the default kernel, early console, no root: it panics and powers off) must print
 * its banner within VMM_PROBE_WAIT_MS.  The answer of a probe is cached in
 * STATE_DIR/vm/domain-type (delete it to probe again, or write "qemu" to force TCG).
 */
static const char *
vmm_domain_type(virConnectPtr conn, const struct airlock_config *cfg)
{
	struct vmm_domain_spec ds;
	char cache[PATH_MAX], log[PATH_MAX], gdir[PATH_MAX - 32];
	char kernel[PATH_MAX], initrd[PATH_MAX], buf[16], err[256];
	const char *type = "qemu";
	virDomainPtr dom = NULL;
	char *xml = NULL, *caps;
	long long t0;
	FILE *f;
	int fd;

	if (vmm_path(cache, sizeof(cache), cfg, NULL, "domain-type") == -1 ||
	    vmm_path(log, sizeof(log), cfg, NULL, "kvm-probe.log") == -1)
		return "qemu";
	if ((f = fopen(cache, "re")) != NULL) {
		if (fgets(buf, sizeof(buf), f) != NULL)
			type = strncmp(buf, "kvm", 3) == 0 ? "kvm" : "qemu";
		fclose(f);
		return type;
	}
	if ((fd = open("/dev/kvm", O_RDWR | O_CLOEXEC)) == -1)
		return "qemu";
	close(fd);
	if ((caps = virConnectGetDomainCapabilities(conn, NULL, "x86_64", "pc",
	    "kvm", 0)) == NULL)
		goto cache;
	free(caps);
	if (vmm_guest_dir(gdir, sizeof(gdir)) == -1)
		return "qemu";
	snprintf(kernel, sizeof(kernel), "%s/vmlinux", gdir);
	snprintf(initrd, sizeof(initrd), "%s/initrd.cpio", gdir);
	if (access(kernel, R_OK) == -1 || access(initrd, R_OK) == -1)
		return "qemu";	/* cannot probe: do not cache */
	memset(&ds, 0, sizeof(ds));
	/* Not a valid sandbox name: cannot clash with one, vm ls skips it. */
	ds.ds_name = VMM_DOMAIN_PREFIX "-kvm-probe";
	ds.ds_type = "kvm";
	ds.ds_memory = VMM_MEMORY_MIN;
	ds.ds_vcpus = 1;
	ds.ds_kernel = kernel;
	ds.ds_initrd = initrd;
	ds.ds_cmdline = "console=ttyS0 earlyprintk=serial,ttyS0,115200 "
	    "panic=-1 rdinit=/airlock-kvm-probe";
	ds.ds_console = log;
	unlink(log);
	if ((xml = vmm_domain_xml(&ds)) == NULL ||
	    (dom = virDomainCreateXML(conn, xml, 0)) == NULL)
		goto cache;
	for (t0 = vmm_now_ms(); vmm_now_ms() - t0 < VMM_PROBE_WAIT_MS;) {
		if (vmm_file_contains(log, "Linux version")) {
			type = "kvm";
			break;
		}
		vmm_msleep(100);
	}
	virDomainDestroy(dom);	/* it may have powered off already: fine */
 cache:
	if (vmm_path(kernel, sizeof(kernel), cfg, NULL, NULL) == 0)
		(void)mkdir(kernel, 0711);
	(void)vmm_file_write(cache, type, strlen(type), 0644, err, sizeof(err));
	if (dom != NULL)
		virDomainFree(dom);
	free(xml);
	return type;
}

/* mkdir -p STATE_DIR/vm/NAME (0711: QEMU may run as another user). */
static int
vmm_dir_make(const struct airlock_config *cfg, const char *name, char *err,
    size_t errlen)
{
	char d[PATH_MAX];

	if (vmm_path(d, sizeof(d), cfg, NULL, NULL) == -1 ||
	    (mkdir(d, 0711) == -1 && errno != EEXIST) ||
	    vmm_path(d, sizeof(d), cfg, name, NULL) == -1 ||
	    (mkdir(d, 0711) == -1 && errno != EEXIST)) {
		snprintf(err, errlen, "%s: %s", d, strerror(errno));
		return -1;
	}
	return 0;
}

int
vmm_start(const struct airlock_config *cfg, const struct vmm_start_opts *o,
    struct vmm_started *out, char *err, size_t errlen)
{
	struct vmm_domain_spec ds;
	struct vmm_guest g;
	struct vmm_cpio cpio;
	struct sandbox sb;
	virConnectPtr conn = NULL;
	virDomainPtr dom = NULL;
	char dname[64], gdir[PATH_MAX - 32], kernel[PATH_MAX];
	char base[PATH_MAX], initrd[PATH_MAX], seed[PATH_MAX];
	char console[PATH_MAX], xmlpath[PATH_MAX];
	uint8_t *iso = NULL;
	size_t isolen = 0;
	char *xml = NULL;
	const char *type;
	int rv = -1, fd;

	memset(&g, 0, sizeof(g));
	memset(&cpio, 0, sizeof(cpio));
	memset(&ds, 0, sizeof(ds));
	if (!sandbox_name_is_valid(o->vs_name)) {
		snprintf(err, errlen, "invalid sandbox name '%.64s'", o->vs_name);
		goto out;
	}
	if (o->vs_disk != NULL && o->vs_image != NULL) {
		snprintf(err, errlen, "--image and --disk exclude each other");
		goto out;
	}
	/* A distribution's cloud image with cloud-init wants more than ours. */
	ds.ds_memory = o->vs_memory ? o->vs_memory : o->vs_disk != NULL ?
	    VMM_MEMORY_DISK_DEFAULT : VMM_MEMORY_DEFAULT;
	ds.ds_vcpus = o->vs_vcpus ? o->vs_vcpus : VMM_VCPUS_DEFAULT;
	if (ds.ds_memory < VMM_MEMORY_MIN || ds.ds_memory > VMM_MEMORY_MAX ||
	    ds.ds_vcpus > VMM_VCPUS_MAX) {
		snprintf(err, errlen, "memory must be %u..%u MiB and vcpus "
		    "1..%u", VMM_MEMORY_MIN, VMM_MEMORY_MAX, VMM_VCPUS_MAX);
		goto out;
	}
	if (sandbox_load(cfg->state_dir, o->vs_name, &sb) == -1) {
		if (errno == ENOENT)
			snprintf(err, errlen, "no sandbox '%s' in %s",
			    o->vs_name, cfg->state_dir);
		else
			snprintf(err, errlen, "sandbox '%s': %s", o->vs_name,
			    strerror(errno));
		goto out;
	}
	if (sb.sb_kind != SANDBOX_KIND_TAP) {
		snprintf(err, errlen, "sandbox '%s' was attached to %s, an "
		    "interface of another VMM: start its VM there", sb.sb_name,
		    sb.sb_iface);
		goto out;
	}
	vmm_domain_name(sb.sb_name, dname, sizeof(dname));
	if (vmm_path(console, sizeof(console), cfg, sb.sb_name,
	    "console.log") == -1 ||
	    vmm_path(initrd, sizeof(initrd), cfg, sb.sb_name,
	    "initrd.cpio") == -1 ||
	    vmm_path(seed, sizeof(seed), cfg, sb.sb_name, "seed.iso") == -1 ||
	    vmm_path(xmlpath, sizeof(xmlpath), cfg, sb.sb_name,
	    "domain.xml") == -1) {
		snprintf(err, errlen, "state directory path too long");
		goto out;
	}
	if ((conn = vmm_connect(cfg, err, errlen)) == NULL)
		goto out;
	if ((dom = virDomainLookupByName(conn, dname)) != NULL) {
		snprintf(err, errlen, "sandbox '%s' has a VM already (domain "
		    "%s)", sb.sb_name, dname);
		goto out;
	}
	if (vmm_guest_collect(cfg, &sb, o->vs_agent, &g, err, errlen) == -1 ||
	    vmm_dir_make(cfg, sb.sb_name, err, errlen) == -1)
		goto out;

	if (o->vs_disk == NULL) {
		if (o->vs_image == NULL || strcmp(o->vs_image, "default") == 0) {
			if (vmm_guest_dir(gdir, sizeof(gdir)) == -1) {
				snprintf(err, errlen, "cannot find the guest "
				    "image folder");
				goto out;
			}
		} else if (snprintf(gdir, sizeof(gdir), "%s", o->vs_image) >=
		    (int)sizeof(gdir)) {
			snprintf(err, errlen, "--image: path too long");
			goto out;
		}
		snprintf(kernel, sizeof(kernel), "%s/vmlinux", gdir);
		snprintf(base, sizeof(base), "%s/initrd.cpio", gdir);
		if (access(kernel, R_OK) == -1) {
			snprintf(err, errlen, "no guest kernel %s (run `make "
			    "guest`)", kernel);
			goto out;
		}
		if (vmm_guest_overlay(&sb, &g, &cpio) == -1) {
			snprintf(err, errlen, "cannot build the guest's files");
			goto out;
		}
		if (vmm_initrd_write(base, &cpio, initrd, err, errlen) == -1)
			goto out;
		ds.ds_kernel = kernel;
		ds.ds_initrd = initrd;
		ds.ds_cmdline = VMM_CMDLINE;
	} else {
		if (o->vs_disk[0] != '/' || access(o->vs_disk, R_OK) == -1) {
			snprintf(err, errlen, "--disk %s: %s", o->vs_disk,
			    o->vs_disk[0] != '/' ? "must be an absolute path" :
			    strerror(errno));
			goto out;
		}
		if (vmm_seed_build(&sb, &g, &iso, &isolen) == -1) {
			snprintf(err, errlen, "cannot build the cloud-init "
			    "seed");
			goto out;
		}
		if (vmm_file_write(seed, iso, isolen, 0644, err, errlen) == -1)
			goto out;
		ds.ds_disk = o->vs_disk;
		ds.ds_seed = seed;
	}
	type = vmm_domain_type(conn, cfg);
	ds.ds_name = dname;
	ds.ds_type = type;
	ds.ds_tap = sb.sb_iface;
	ds.ds_mac = sb.sb_mac;
	ds.ds_console = console;
	if ((xml = vmm_domain_xml(&ds)) == NULL) {
		snprintf(err, errlen, "cannot make the domain XML: %s",
		    strerror(errno));
		goto out;
	}
	/* A fresh console log: markers of an earlier boot must not count. */
	unlink(console);
	if ((fd = open(console, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) != -1)
		close(fd);
	if (vmm_file_write(xmlpath, xml, strlen(xml), 0644, err, errlen) == -1)
		goto out;
	if ((dom = virDomainCreateXML(conn, xml, 0)) == NULL) {
		snprintf(err, errlen, "starting domain %s: %s", dname,
		    vmm_lverr());
		goto out;
	}
	if (out != NULL) {
		memset(out, 0, sizeof(*out));
		snprintf(out->vd_domain, sizeof(out->vd_domain), "%s", dname);
		snprintf(out->vd_type, sizeof(out->vd_type), "%s", type);
		snprintf(out->vd_console, sizeof(out->vd_console), "%s",
		    console);
		snprintf(out->vd_ca, sizeof(out->vd_ca), "%s", g.g_ca_kind);
		out->vd_nenv = g.g_nenv;
		out->vd_ca_reissued = g.g_ca_reissued;
	}
	rv = 0;
 out:
	if (dom != NULL)
		virDomainFree(dom);
	if (conn != NULL)
		virConnectClose(conn);
	free(xml);
	free(iso);
	vmm_cpio_free(&cpio);
	vmm_guest_free(&g);
	return rv;
}

/* Looks up the sandbox's domain.  NULL with errno ENOENT when there is none. */
static virDomainPtr
vmm_lookup(virConnectPtr conn, const char *name, char *err, size_t errlen)
{
	char dname[64];
	virDomainPtr dom;

	vmm_domain_name(name, dname, sizeof(dname));
	if ((dom = virDomainLookupByName(conn, dname)) != NULL)
		return dom;
	if (vmm_lverr_is_no_domain()) {
		snprintf(err, errlen, "sandbox '%s' has no VM", name);
		errno = ENOENT;
	} else {
		snprintf(err, errlen, "domain %s: %s", dname, vmm_lverr());
		errno = EIO;
	}
	return NULL;
}

/* Removes the boot files of a VM that no longer runs (the console log stays). */
static void
vmm_boot_files_remove(const struct airlock_config *cfg, const char *name)
{
	static const char *const files[] = { "initrd.cpio", "seed.iso",
	    "initrd.cpio.tmp", "seed.iso.tmp" };
	char p[PATH_MAX];
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (vmm_path(p, sizeof(p), cfg, name, files[i]) == 0)
			unlink(p);
}

int
vmm_stop(const struct airlock_config *cfg, const char *name,
    unsigned int timeout_s, char *err, size_t errlen)
{
	virConnectPtr conn = NULL;
	virDomainPtr dom = NULL;
	long long t0;
	int rv = -1, active, saved;

	if (!sandbox_name_is_valid(name)) {
		snprintf(err, errlen, "invalid sandbox name '%.64s'", name);
		errno = EINVAL;
		return -1;
	}
	if ((conn = vmm_connect(cfg, err, errlen)) == NULL)
		return -1;
	if ((dom = vmm_lookup(conn, name, err, errlen)) == NULL)
		goto out;
	/* The hypervisor's default: the ACPI power button for QEMU without a
	 * guest agent, which the default guest's /init obeys. */
	if (virDomainShutdown(dom) == -1 && !vmm_lverr_is_no_domain()) {
		virErrorPtr e = virGetLastError();

		/* Not running any more is what we wanted. */
		if (e == NULL || e->code != VIR_ERR_OPERATION_INVALID) {
			snprintf(err, errlen, "shutdown: %s", vmm_lverr());
			goto out;
		}
	}
	for (t0 = vmm_now_ms(); vmm_now_ms() - t0 < (long long)timeout_s * 1000;) {
		if ((active = virDomainIsActive(dom)) != 1) {
			rv = 0;
			goto done;
		}
		vmm_msleep(100);
	}
	if (virDomainDestroy(dom) == -1 && virDomainIsActive(dom) == 1) {
		snprintf(err, errlen, "destroy: %s", vmm_lverr());
		goto out;
	}
	rv = 1;
 done:
	vmm_boot_files_remove(cfg, name);
 out:
	saved = errno;
	if (dom != NULL)
		virDomainFree(dom);
	virConnectClose(conn);
	errno = saved;
	return rv;
}

int
vmm_destroy(const struct airlock_config *cfg, const char *name, char *err,
    size_t errlen)
{
	virConnectPtr conn = NULL;
	virDomainPtr dom = NULL;
	int rv = -1, saved;

	if (!sandbox_name_is_valid(name)) {
		snprintf(err, errlen, "invalid sandbox name '%.64s'", name);
		errno = EINVAL;
		return -1;
	}
	if ((conn = vmm_connect(cfg, err, errlen)) == NULL)
		return -1;
	if ((dom = vmm_lookup(conn, name, err, errlen)) == NULL)
		goto out;
	/* A guest that powered off meanwhile makes this fail: fine. */
	if (virDomainDestroy(dom) == -1 && virDomainIsActive(dom) == 1) {
		snprintf(err, errlen, "destroy: %s", vmm_lverr());
		errno = EIO;
		goto out;
	}
	vmm_boot_files_remove(cfg, name);
	rv = 0;
 out:
	saved = errno;
	if (dom != NULL)
		virDomainFree(dom);
	virConnectClose(conn);
	errno = saved;
	return rv;
}

int
vmm_sandbox_purge(const struct airlock_config *cfg, const char *name,
    char *err, size_t errlen)
{
	char d[PATH_MAX], p[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *dir;

	if (!sandbox_name_is_valid(name)) {
		snprintf(err, errlen, "invalid sandbox name '%.64s'", name);
		return -1;
	}
	if (vmm_path(d, sizeof(d), cfg, name, NULL) == -1) {
		snprintf(err, errlen, "state directory path too long");
		return -1;
	}
	if (lstat(d, &st) == -1 && errno == ENOENT)
		return 0;	/* never had a VM */
	if (vmm_destroy(cfg, name, err, errlen) == -1 && errno != ENOENT)
		return -1;
	if ((dir = opendir(d)) == NULL) {
		snprintf(err, errlen, "%s: %s", d, strerror(errno));
		return -1;
	}
	while ((de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (snprintf(p, sizeof(p), "%s/%s", d, de->d_name) <
		    (int)sizeof(p))
			unlink(p);
	}
	closedir(dir);
	if (rmdir(d) == -1) {
		snprintf(err, errlen, "%s: %s", d, strerror(errno));
		return -1;
	}
	return 0;
}

static int
vmm_vm_cmp(const void *a, const void *b)
{
	return strcmp(((const struct vmm_vm *)a)->vm_name,
	    ((const struct vmm_vm *)b)->vm_name);
}

static const char *
vmm_state_name(int s)
{
	switch (s) {
	case VIR_DOMAIN_RUNNING:
		return "running";
	case VIR_DOMAIN_BLOCKED:
		return "blocked";
	case VIR_DOMAIN_PAUSED:
		return "paused";
	case VIR_DOMAIN_SHUTDOWN:
		return "shutting-down";
	case VIR_DOMAIN_SHUTOFF:
		return "shut-off";
	case VIR_DOMAIN_CRASHED:
		return "crashed";
	case VIR_DOMAIN_PMSUSPENDED:
		return "suspended";
	default:
		return "unknown";
	}
}

int
vmm_list(const struct airlock_config *cfg, struct vmm_vm **out, char *err,
    size_t errlen)
{
	virConnectPtr conn;
	virDomainPtr *doms = NULL;
	virDomainInfo info;
	struct vmm_vm *v = NULL;
	const char *dn, *sbn;
	char *xml;
	int i, n, k = 0, rv = -1;
	size_t plen = strlen(VMM_DOMAIN_PREFIX);

	if ((conn = vmm_connect(cfg, err, errlen)) == NULL)
		return -1;
	if ((n = virConnectListAllDomains(conn, &doms, 0)) == -1) {
		snprintf(err, errlen, "listing domains: %s", vmm_lverr());
		goto out;
	}
	if ((v = calloc((size_t)n + 1, sizeof(*v))) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		struct vmm_vm *vm = &v[k];

		if ((dn = virDomainGetName(doms[i])) == NULL ||
		    strncmp(dn, VMM_DOMAIN_PREFIX, plen) != 0)
			continue;
		sbn = dn + plen;
		if (!sandbox_name_is_valid(sbn))
			continue;	/* e.g. the KVM probe */
		snprintf(vm->vm_name, sizeof(vm->vm_name), "%s", sbn);
		snprintf(vm->vm_domain, sizeof(vm->vm_domain), "%s", dn);
		if (virDomainGetInfo(doms[i], &info) == 0) {
			snprintf(vm->vm_state, sizeof(vm->vm_state), "%s",
			    vmm_state_name(info.state));
			vm->vm_memory = (unsigned int)(info.maxMem / 1024);
			vm->vm_vcpus = info.nrVirtCpu;
		} else
			snprintf(vm->vm_state, sizeof(vm->vm_state), "gone");
		vm->vm_id = (int)virDomainGetID(doms[i]);
		if (virDomainIsActive(doms[i]) != 1)
			vm->vm_id = -1;
		snprintf(vm->vm_type, sizeof(vm->vm_type), "?");
		if ((xml = virDomainGetXMLDesc(doms[i], 0)) != NULL) {
			if (strncmp(xml, "<domain type='kvm'", 18) == 0)
				snprintf(vm->vm_type, sizeof(vm->vm_type),
				    "kvm");
			else if (strncmp(xml, "<domain type='qemu'", 19) == 0)
				snprintf(vm->vm_type, sizeof(vm->vm_type),
				    "qemu");
			free(xml);
		}
		vmm_path(vm->vm_console, sizeof(vm->vm_console), cfg, sbn,
		    "console.log");
		k++;
	}
	qsort(v, (size_t)k, sizeof(*v), vmm_vm_cmp);
	*out = v;
	v = NULL;
	rv = k;
 out:
	for (i = 0; doms != NULL && i < n; i++)
		virDomainFree(doms[i]);
	free(doms);
	free(v);
	virConnectClose(conn);
	return rv;
}

int
vmm_console_follow(const struct airlock_config *cfg, const char *name,
    const char *marker, unsigned int timeout_ms, FILE *out, char *err,
    size_t errlen)
{
	char path[PATH_MAX], buf[4096], line[4096];
	virConnectPtr conn = NULL;
	size_t i, ll = 0, from;
	long long t0 = vmm_now_ms(), last_check = 0;
	int fd, rv = -1, gone = 0;
	ssize_t n;

	if (vmm_console_path(cfg, name, path, sizeof(path)) == -1) {
		snprintf(err, errlen, "invalid sandbox name '%.64s'", name);
		return -1;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: %s", path, errno == ENOENT ?
		    "no console log (was the VM started?)" : strerror(errno));
		return -1;
	}
	if (marker != NULL) {
		char e2[256];

		/* Without libvirt we still follow, until the timeout. */
		conn = vmm_connect(cfg, e2, sizeof(e2));
	}
	for (;;) {
		if ((n = read(fd, buf, sizeof(buf))) == -1) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			goto out;
		}
		if (n > 0) {
			for (i = 0, from = 0; i < (size_t)n; i++) {
				char ch = buf[i];

				if (ll + 1 < sizeof(line) && ch != '\0')
					line[ll++] = ch;
				line[ll] = '\0';
				if (marker != NULL && ch == '\n' &&
				    strstr(line, marker) != NULL) {
					fwrite(buf + from, 1, i + 1 - from, out);
					rv = 1;
					goto out;
				}
				if (ch == '\n')
					ll = 0;
			}
			fwrite(buf + from, 1, (size_t)n - from, out);
			fflush(out);
			continue;
		}
		/* At the end of what is there. */
		if (marker == NULL) {
			rv = 1;
			goto out;
		}
		if (ll > 0 && strstr(line, marker) != NULL) {
			rv = 1;
			goto out;
		}
		if (gone || vmm_now_ms() - t0 >= (long long)timeout_ms) {
			rv = 0;
			goto out;
		}
		if (conn != NULL && vmm_now_ms() - last_check >= 500) {
			char e2[256];
			virDomainPtr dom;

			last_check = vmm_now_ms();
			if ((dom = vmm_lookup(conn, name, e2, sizeof(e2))) ==
			    NULL)
				gone = errno == ENOENT;	/* one more read */
			else {
				gone = virDomainIsActive(dom) == 0;
				virDomainFree(dom);
			}
			if (gone)
				continue;
		}
		vmm_msleep(50);
	}
 out:
	fflush(out);
	close(fd);
	if (conn != NULL)
		virConnectClose(conn);
	return rv;
}
