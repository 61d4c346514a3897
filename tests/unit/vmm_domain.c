/*
 * tests/unit/vmm_domain.c: vmm without a hypervisor.  The domain XML (fields,
 * escaping, refusals, and libvirt's own parser through the in-process test driver),
 * the newc cpio writer (parsed back), environment names and shell quoting, the
 * per-VM overlay, what a guest receives (CA choice, placeholders and never a value,
 * refusals), the NoCloud seed ISO, and the lifecycle (start, refusals, ls, stop,
 * destroy, purge) on test:///default.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "../tap.h"
#include "../../vmm/vmm_int.h"
#include "ca.h"
#include "vault.h"

static char err[1024];

static int
contains(const char *hay, const char *needle)
{
	return hay != NULL && strstr(hay, needle) != NULL;
}

static void
quiet(void *opaque, virErrorPtr e)
{
	(void)opaque;
	(void)e;
}

static void
spec_default(struct vmm_domain_spec *ds)
{
	memset(ds, 0, sizeof(*ds));
	ds->ds_name = "airlock-t1";
	ds->ds_type = "qemu";
	ds->ds_memory = 192;
	ds->ds_vcpus = 1;
	ds->ds_kernel = "/g/vmlinux";
	ds->ds_initrd = "/s/vm/t1/initrd.cpio";
	ds->ds_cmdline = VMM_CMDLINE;
	ds->ds_tap = "al-t1";
	ds->ds_console = "/s/vm/t1/console.log";
}

static void
test_xml(void)
{
	struct vmm_domain_spec ds;
	virConnectPtr conn;
	virDomainPtr dom;
	char *x, *back;

	spec_default(&ds);
	x = vmm_domain_xml(&ds);
	ok(x != NULL, "domain XML made");
	ok(contains(x, "<domain type='qemu'>"), "type qemu");
	ok(contains(x, "<interface type='ethernet'>") &&
	    contains(x, "<target dev='al-t1' managed='no'/>"),
	    "NIC: the sandbox tap, type ethernet, managed='no'");
	ok(!contains(x, "<mac "), "no MAC pinned: libvirt picks one");
	ok(contains(x, "<serial type='file'>") &&
	    contains(x, "<source path='/s/vm/t1/console.log'/>"),
	    "serial console to the file");
	ok(contains(x, "<kernel>/g/vmlinux</kernel>") &&
	    contains(x, "<cmdline>console=ttyS0 quiet"), "direct kernel boot");
	ok(contains(x, "name='rdrand'") && contains(x, "qemu64"),
	    "qemu64 with rdrand");
	ok(contains(x, "<on_poweroff>destroy</on_poweroff>") &&
	    contains(x, "<memballoon model='none'/>") &&
	    contains(x, "<controller type='usb' model='none'/>"),
	    "power-off ends it; no balloon, no USB");
	ok(!contains(x, "<disk"), "no disk with the default image");

	/* libvirt's parser accepts it (test driver: in-process, no hypervisor). */
	virSetErrorFunc(NULL, quiet);
	conn = virConnectOpen("test:///default");
	ok(conn != NULL, "test:///default opens");
	dom = conn ? virDomainCreateXML(conn, x, 0) : NULL;
	ok(dom != NULL, "libvirt accepts the XML (%s)",
	    dom ? "ok" : virGetLastErrorMessage());
	back = dom ? virDomainGetXMLDesc(dom, 0) : NULL;
	ok(contains(back, "<target dev='al-t1' managed='no'/>"),
	    "libvirt kept the tap unmanaged");
	free(back);
	if (dom != NULL) {
		virDomainDestroy(dom);
		virDomainFree(dom);
	}
	free(x);

	ds.ds_type = "kvm";
	ds.ds_mac = "52:54:00:12:34:56";
	x = vmm_domain_xml(&ds);
	ok(contains(x, "<domain type='kvm'>") &&
	    contains(x, "<mac address='52:54:00:12:34:56'/>"),
	    "type kvm; a pinned MAC is used");
	free(x);

	spec_default(&ds);
	ds.ds_console = "/tmp/a'b&c<d>/console.log";
	x = vmm_domain_xml(&ds);
	ok(contains(x, "/tmp/a&apos;b&amp;c&lt;d&gt;/console.log"),
	    "attribute values are escaped");
	free(x);

	spec_default(&ds);
	ds.ds_kernel = NULL;
	ds.ds_initrd = NULL;
	ds.ds_cmdline = NULL;
	ds.ds_disk = "/d/disk.qcow2";
	ds.ds_seed = "/s/vm/t1/seed.iso";
	x = vmm_domain_xml(&ds);
	ok(contains(x, "<boot dev='hd'/>") && contains(x, "type='qcow2'") &&
	    contains(x, "<source file='/d/disk.qcow2'/>") &&
	    contains(x, "device='cdrom'") &&
	    contains(x, "<source file='/s/vm/t1/seed.iso'/>") &&
	    !contains(x, "<kernel>"), "disk image: boots the disk, seed as CD");
	if (conn != NULL && x != NULL) {
		dom = virDomainCreateXML(conn, x, 0);
		ok(dom != NULL, "libvirt accepts the disk XML (%s)",
		    dom ? "ok" : virGetLastErrorMessage());
		if (dom != NULL) {
			virDomainDestroy(dom);
			virDomainFree(dom);
		}
	} else
		ok(0, "libvirt accepts the disk XML");
	free(x);
	if (conn != NULL)
		virConnectClose(conn);

	/* Refusals. */
	spec_default(&ds);
	ds.ds_cmdline = "console=ttyS0\nrdinit=/bin/sh";
	errno = 0;
	ok(vmm_domain_xml(&ds) == NULL && errno == EINVAL,
	    "refused: a control character in a value");
	spec_default(&ds);
	ds.ds_type = "xen";
	ok(vmm_domain_xml(&ds) == NULL, "refused: type other than kvm/qemu");
	spec_default(&ds);
	ds.ds_disk = "/d/disk.qcow2";
	ok(vmm_domain_xml(&ds) == NULL, "refused: kernel and disk both");
	spec_default(&ds);
	ds.ds_kernel = NULL;
	ok(vmm_domain_xml(&ds) == NULL, "refused: neither kernel nor disk");
	spec_default(&ds);
	ds.ds_memory = 0;
	ok(vmm_domain_xml(&ds) == NULL, "refused: no memory");
	spec_default(&ds);
	ds.ds_seed = "/s/seed.iso";
	ok(vmm_domain_xml(&ds) == NULL, "refused: a seed without a disk");
}

/* Finds path in a newc archive: its mode and data.  Returns 1 if found. */
static int
cpio_find(const uint8_t *p, size_t n, const char *path, unsigned int *mode,
    const uint8_t **data, size_t *len, int *trailer)
{
	size_t off = 0;

	*trailer = 0;
	while (off + 110 <= n) {
		char f[9];
		unsigned int v[13];
		int i;
		const char *name;

		if (memcmp(p + off, "070701", 6) != 0)
			return 0;
		for (i = 0; i < 13; i++) {
			memcpy(f, p + off + 6 + 8 * i, 8);
			f[8] = '\0';
			v[i] = (unsigned int)strtoul(f, NULL, 16);
		}
		name = (const char *)p + off + 110;
		if (off + 110 + v[11] > n || name[v[11] - 1] != '\0')
			return 0;
		off = (off + 110 + v[11] + 3) & ~(size_t)3;
		if (strcmp(name, "TRAILER!!!") == 0) {
			*trailer = 1;
			return 0;
		}
		if (off + v[6] > n)
			return 0;
		if (strcmp(name, path) == 0) {
			*mode = v[1];
			*data = p + off;
			*len = v[6];
			return 1;
		}
		off = (off + v[6] + 3) & ~(size_t)3;
	}
	return 0;
}

static void
test_cpio(void)
{
	struct vmm_cpio c;
	const uint8_t *d;
	unsigned int mode;
	size_t len;
	int tr;

	memset(&c, 0, sizeof(c));
	vmm_cpio_dir(&c, "etc", 0755);
	vmm_cpio_file(&c, "etc/a", 0644, "hello", 5);
	vmm_cpio_file(&c, "etc/empty", 0600, "", 0);
	vmm_cpio_file(&c, "etc/b", 0755, "xy", 2);
	is_int(0, vmm_cpio_finish(&c), "cpio finished");
	is_int(0, (long long)(c.c_n % 4), "archive length is 4-aligned");
	ok(cpio_find(c.c_p, c.c_n, "etc/a", &mode, &d, &len, &tr) &&
	    len == 5 && memcmp(d, "hello", 5) == 0 && mode == (S_IFREG | 0644),
	    "file read back with its mode and data");
	ok(cpio_find(c.c_p, c.c_n, "etc/b", &mode, &d, &len, &tr) &&
	    len == 2 && memcmp(d, "xy", 2) == 0 && mode == (S_IFREG | 0755),
	    "file after an empty file and padding");
	ok(cpio_find(c.c_p, c.c_n, "etc", &mode, &d, &len, &tr) &&
	    S_ISDIR(mode), "directory entry");
	ok(!cpio_find(c.c_p, c.c_n, "nope", &mode, &d, &len, &tr) && tr,
	    "ends with the trailer");
	vmm_cpio_free(&c);

	memset(&c, 0, sizeof(c));
	vmm_cpio_file(&c, "/etc/abs", 0644, "x", 1);
	is_int(-1, vmm_cpio_finish(&c), "refused: an absolute name");
	vmm_cpio_free(&c);
}

static void
test_names(void)
{
	char b[64];

	ok(vmm_env_name("github_token", b, sizeof(b)) == 0 &&
	    strcmp(b, "GITHUB_TOKEN") == 0, "env name: upper-cased");
	ok(vmm_env_name("a.b-c", b, sizeof(b)) == 0 &&
	    strcmp(b, "A_B_C") == 0, "env name: . and - become _");
	ok(vmm_env_name("1pass", b, sizeof(b)) == 0 &&
	    strcmp(b, "_1PASS") == 0, "env name: a leading digit gets _");
	is_int(-1, vmm_env_name("abcdef", b, 4), "env name: too long refused");
	ok(vmm_shell_quote("ab c", b, sizeof(b)) == 0 &&
	    strcmp(b, "'ab c'") == 0, "quote: plain");
	ok(vmm_shell_quote("it's$x", b, sizeof(b)) == 0 &&
	    strcmp(b, "'it'\\''s$x'") == 0, "quote: a single quote closed/escaped");
	is_int(-1, vmm_shell_quote("abcdef", b, 6), "quote: too long refused");
}

static void
write_file(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		bail("cannot write %s", path);
	fputs(s, f);
	fclose(f);
}

static void
sandbox_fill(struct sandbox *sb, const char *name, const char *policy)
{
	memset(sb, 0, sizeof(*sb));
	snprintf(sb->sb_name, sizeof(sb->sb_name), "%s", name);
	sb->sb_kind = SANDBOX_KIND_TAP;
	snprintf(sb->sb_iface, sizeof(sb->sb_iface), "al-%s", name);
	netaddr_parse("10.233.0.1", &sb->sb_host_ip);
	netaddr_parse("10.233.0.2", &sb->sb_guest_ip);
	sb->sb_prefix = 30;
	snprintf(sb->sb_policy, sizeof(sb->sb_policy), "%s", policy);
}

#define SECRET_VALUE	"ghp_REAL_SECRET_VALUE_0123456789"
#define PLACEHOLDER	"ghp_AIRLOCK_placeholder_0001"

static void
test_guest(const char *dir)
{
	struct airlock_config cfg;
	struct vmm_guest g;
	struct vmm_cpio c;
	struct sandbox sb;
	struct vault *v = NULL;
	struct secret s;
	const char *hosts[] = { "api.github.com" };
	char state[1024], pinj[1100], psplice[1100], pmiss[1100], agent[1100];
	const uint8_t *d;
	unsigned int mode;
	size_t len;
	int tr, rv;

	snprintf(state, sizeof(state), "%s/state", dir);
	mkdir(state, 0700);
	config_defaults(&cfg);
	snprintf(cfg.state_dir, sizeof(cfg.state_dir), "%s", state);
	snprintf(pinj, sizeof(pinj), "%s/inject.json", dir);
	write_file(pinj, "{\"policy\":\"p\",\"rules\":[{\"id\":\"gh\","
	    "\"host\":\"api.github.com\",\"inject\":[{\"secret\":"
	    "\"github_token\",\"header\":\"Authorization\",\"value\":"
	    "\"Bearer {secret}\"}]},{\"id\":\"s\",\"host\":\"pypi.org\"}]}\n");
	snprintf(psplice, sizeof(psplice), "%s/splice.json", dir);
	write_file(psplice, "{\"policy\":\"p\",\"rules\":[{\"id\":\"s\","
	    "\"host\":\"pypi.org\"}]}\n");
	snprintf(pmiss, sizeof(pmiss), "%s/missing.json", dir);
	write_file(pmiss, "{\"policy\":\"p\",\"rules\":[{\"id\":\"gh\","
	    "\"host\":\"api.github.com\",\"inject\":[{\"secret\":"
	    "\"other_token\",\"header\":\"Authorization\",\"value\":"
	    "\"{secret}\"}]}]}\n");
	snprintf(agent, sizeof(agent), "%s/agent.sh", dir);
	write_file(agent, "echo agent here\n");

	rv = vault_open(state, VAULT_OPEN_WRITE | VAULT_OPEN_CREATE, &v, err,
	    sizeof(err));
	s.p = (uint8_t *)strdup(SECRET_VALUE);
	s.n = strlen(SECRET_VALUE);
	if (rv != VAULT_OK || vault_secret_put(v, "github_token", hosts, 1,
	    PLACEHOLDER, &s, err, sizeof(err)) != VAULT_OK ||
	    vault_commit(v, err, sizeof(err)) != VAULT_OK)
		bail("vault set-up: %s", err);
	secret_free(&s);
	vault_close(v);

	/* Splice-only, no host CA: no CA at all. */
	sandbox_fill(&sb, "t1", psplice);
	rv = vmm_guest_collect(&cfg, &sb, NULL, &g, err, sizeof(err));
	ok(rv == 0 && strcmp(g.g_ca_kind, "none") == 0 && g.g_ca_pem[0] == '\0'
	    && g.g_nenv == 0 && g.g_agent == NULL,
	    "splice-only sandbox, no host CA: no CA, no placeholders (%s)",
	    rv ? err : "ok");
	vmm_guest_free(&g);
	if (ca_init(state, 0, err, sizeof(err)) != CA_OK)
		bail("ca init: %s", err);
	rv = vmm_guest_collect(&cfg, &sb, NULL, &g, err, sizeof(err));
	ok(rv == 0 && strcmp(g.g_ca_kind, "host") == 0 &&
	    contains(g.g_ca_pem, "-----BEGIN CERTIFICATE-----"),
	    "splice-only sandbox: the host CA");
	vmm_guest_free(&g);

	/* Inspecting + injecting sandbox: its own CA, the placeholder only. */
	sandbox_fill(&sb, "t1", pinj);
	rv = vmm_guest_collect(&cfg, &sb, agent, &g, err, sizeof(err));
	ok(rv == 0 && strcmp(g.g_ca_kind, "sandbox") == 0 &&
	    contains(g.g_ca_pem, "-----BEGIN CERTIFICATE-----"),
	    "inspecting sandbox: its own CA (%s)", rv ? err : "ok");
	ok(rv == 0 && g.g_nenv == 1 &&
	    contains(g.g_env, "export GITHUB_TOKEN='" PLACEHOLDER "'\n"),
	    "the placeholder as $GITHUB_TOKEN");
	ok(rv == 0 && !contains(g.g_env, SECRET_VALUE) &&
	    !contains(g.g_ca_pem, SECRET_VALUE), "never the secret's value");
	ok(rv == 0 && g.g_agent != NULL && g.g_agent_len == 16,
	    "the agent script read");
	{
		char p[1200];
		struct stat st;

		snprintf(p, sizeof(p), "%s/ca/t1.pem", state);
		ok(stat(p, &st) == 0, "the sandbox CA was made");
	}

	memset(&c, 0, sizeof(c));
	rv = vmm_guest_overlay(&sb, &g, &c);
	is_int(0, rv, "overlay built");
	{
		static const char want[] = "AIRLOCK_IP=10.233.0.2\n"
		    "AIRLOCK_PREFIX=30\nAIRLOCK_GW=10.233.0.1\n";

		ok(cpio_find(c.c_p, c.c_n, "etc/airlock/net", &mode, &d, &len,
		    &tr) && memmem(d, len, want, strlen(want)) != NULL,
		    "overlay: static address, gateway = host end");
	}
	ok(cpio_find(c.c_p, c.c_n, "etc/resolv.conf", &mode, &d, &len, &tr) &&
	    len == 22 && memcmp(d, "nameserver 10.233.0.1\n", 22) == 0,
	    "overlay: DNS = host end");
	ok(cpio_find(c.c_p, c.c_n, "etc/airlock/ca.pem", &mode, &d, &len,
	    &tr) && len == strlen(g.g_ca_pem) &&
	    memcmp(d, g.g_ca_pem, len) == 0, "overlay: the CA certificate");
	ok(cpio_find(c.c_p, c.c_n, "etc/airlock/agent", &mode, &d, &len, &tr) &&
	    mode == (S_IFREG | 0755) && len == 16, "overlay: the agent, 0755");
	ok(cpio_find(c.c_p, c.c_n, "etc/airlock/env", &mode, &d, &len, &tr) &&
	    memmem(d, len, PLACEHOLDER, strlen(PLACEHOLDER)) != NULL &&
	    memmem(c.c_p, c.c_n, SECRET_VALUE, strlen(SECRET_VALUE)) == NULL,
	    "overlay: placeholders, and no secret anywhere in it");
	vmm_cpio_free(&c);

	/* The seed of a disk image carries the same, base64-encoded. */
	{
		uint8_t *iso = NULL;
		size_t isolen = 0;

		rv = vmm_seed_build(&sb, &g, &iso, &isolen);
		ok(rv == 0 && isolen % 2048 == 0 && isolen >= 22 * 2048 &&
		    memcmp(iso + 16 * 2048 + 1, "CD001", 5) == 0 &&
		    memcmp(iso + 16 * 2048 + 40, "cidata ", 7) == 0,
		    "seed: ISO 9660, volume cidata");
		ok(rv == 0 && memmem(iso, isolen, "#cloud-config", 13) &&
		    memmem(iso, isolen, "user-data", 9) &&
		    memmem(iso, isolen, "meta-data", 9) &&
		    memmem(iso, isolen, "addresses: [10.233.0.2/30]", 26) &&
		    memmem(iso, isolen, SECRET_VALUE, strlen(SECRET_VALUE)) ==
		    NULL, "seed: user-data, meta-data, network-config; no secret");
		free(iso);
	}
	vmm_guest_free(&g);

	sandbox_fill(&sb, "t1", pmiss);
	ok(vmm_guest_collect(&cfg, &sb, NULL, &g, err, sizeof(err)) == -1 &&
	    contains(err, "other_token"),
	    "refused: the policy injects a secret the vault lacks");
	sandbox_fill(&sb, "t1", pinj);
	snprintf(agent, sizeof(agent), "%s/no-such-agent", dir);
	ok(vmm_guest_collect(&cfg, &sb, agent, &g, err, sizeof(err)) == -1 &&
	    contains(err, "no-such-agent"), "refused: a missing agent file");
}

static void
test_iso(void)
{
	struct vmm_seed_file f[2] = { { "meta-data", "abc", 3 },
	    { "user-data", "", 0 } };
	uint8_t *iso;
	size_t len;
	const uint8_t *root;

	ok(vmm_seed_iso(f, 2, &iso, &len) == 0, "iso made");
	root = iso + 20 * 2048;
	/* ".", "..", then the files: lengths, extents, names. */
	ok(root[0] == 34 && root[34] == 34 && root[68 + 32] == 9 &&
	    memcmp(root + 68 + 33, "meta-data", 9) == 0,
	    "root directory: ., .., meta-data");
	{
		uint32_t ext = root[68 + 2] | root[68 + 3] << 8 |
		    root[68 + 4] << 16 | (uint32_t)root[68 + 5] << 24;

		ok(ext >= 21 && (size_t)ext * 2048 + 3 <= len &&
		    memcmp(iso + (size_t)ext * 2048, "abc", 3) == 0 &&
		    root[68 + 10] == 3, "file extent holds its data");
	}
	free(iso);
	f[0].sf_name = "Meta/Data";
	ok(vmm_seed_iso(f, 2, &iso, &len) == -1, "refused: a bad name");
}

static void
test_lifecycle(const char *dir)
{
	struct airlock_config cfg;
	struct vmm_start_opts o;
	struct vmm_started st;
	struct vmm_vm *vms = NULL;
	struct sandbox sb;
	virConnectPtr keep;
	char state[1024], gdir[1100], p[1200], pol[1100];
	struct stat sst;
	int n;

	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(gdir, sizeof(gdir), "%s/guest", dir);
	mkdir(gdir, 0755);
	snprintf(p, sizeof(p), "%s/vmlinux", gdir);
	write_file(p, "not a kernel: the test driver runs nothing");
	snprintf(p, sizeof(p), "%s/initrd.cpio", gdir);
	write_file(p, "base archive stand-in");
	setenv("AIRLOCK_GUEST_DIR", gdir, 1);
	config_defaults(&cfg);
	snprintf(cfg.state_dir, sizeof(cfg.state_dir), "%s", state);
	snprintf(cfg.libvirt_uri, sizeof(cfg.libvirt_uri), "test:///default");
	/* The test driver's state lives while a connection holds it. */
	keep = virConnectOpen("test:///default");
	if (keep == NULL)
		bail("test:///default");
	snprintf(p, sizeof(p), "%s/vm", state);
	mkdir(p, 0711);
	snprintf(p, sizeof(p), "%s/vm/domain-type", state);
	write_file(p, "qemu\n");

	snprintf(pol, sizeof(pol), "%s/splice.json", dir);
	sandbox_fill(&sb, "lc", pol);
	if (sandbox_save(state, &sb) == -1)
		bail("sandbox_save");
	memset(&o, 0, sizeof(o));
	o.vs_name = "lc";
	ok(vmm_start(&cfg, &o, &st, err, sizeof(err)) == 0,
	    "vm start (%s)", err);
	ok(strcmp(st.vd_domain, "airlock-lc") == 0 &&
	    strcmp(st.vd_type, "qemu") == 0 && contains(st.vd_console,
	    "/vm/lc/console.log"), "domain airlock-lc, qemu, console path");
	snprintf(p, sizeof(p), "%s/vm/lc/initrd.cpio", state);
	ok(stat(p, &sst) == 0 && sst.st_size > 21, "per-VM initrd written");
	snprintf(p, sizeof(p), "%s/vm/lc/domain.xml", state);
	ok(stat(p, &sst) == 0, "domain.xml kept for the operator");
	ok(vmm_start(&cfg, &o, &st, err, sizeof(err)) == -1 &&
	    contains(err, "has a VM already"), "refused: a second start");
	n = vmm_list(&cfg, &vms, err, sizeof(err));
	ok(n == 1 && strcmp(vms[0].vm_name, "lc") == 0 &&
	    strcmp(vms[0].vm_state, "running") == 0 && vms[0].vm_memory ==
	    VMM_MEMORY_DEFAULT, "vm ls: one running VM");
	free(vms);
	ok(vmm_destroy(&cfg, "lc", err, sizeof(err)) == 0, "vm destroy");
	snprintf(p, sizeof(p), "%s/vm/lc/initrd.cpio", state);
	ok(stat(p, &sst) == -1, "destroy removed the boot files");
	errno = 0;
	ok(vmm_destroy(&cfg, "lc", err, sizeof(err)) == -1 && errno == ENOENT,
	    "destroy again: no VM");
	errno = 0;
	ok(vmm_stop(&cfg, "lc", 1, err, sizeof(err)) == -1 && errno == ENOENT,
	    "stop: no VM");
	ok(vmm_start(&cfg, &o, &st, err, sizeof(err)) == 0, "start again");
	n = vmm_stop(&cfg, "lc", 2, err, sizeof(err));
	ok(n == 0 || n == 1, "vm stop (%d)", n);
	n = vmm_list(&cfg, &vms, err, sizeof(err));
	is_int(0, n, "vm ls: none after stop");
	free(vms);

	ok(vmm_start(&cfg, &o, &st, err, sizeof(err)) == 0, "start for purge");
	ok(vmm_sandbox_purge(&cfg, "lc", err, sizeof(err)) == 0, "purge");
	snprintf(p, sizeof(p), "%s/vm/lc", state);
	ok(stat(p, &sst) == -1 && errno == ENOENT, "purge removed the VM folder");
	n = vmm_list(&cfg, &vms, err, sizeof(err));
	is_int(0, n, "purge destroyed the domain");
	free(vms);
	ok(vmm_sandbox_purge(&cfg, "never", err, sizeof(err)) == 0,
	    "purge of a sandbox that never had a VM");

	/* A disk image: the seed is written, more memory by default. */
	snprintf(p, sizeof(p), "%s/disk.qcow2", dir);
	write_file(p, "qcow2 stand-in");
	o.vs_disk = p;
	ok(vmm_start(&cfg, &o, &st, err, sizeof(err)) == 0, "start with --disk"
	    " (%s)", err);
	n = vmm_list(&cfg, &vms, err, sizeof(err));
	ok(n == 1 && vms[0].vm_memory == VMM_MEMORY_DISK_DEFAULT,
	    "disk VM: %u MiB by default", VMM_MEMORY_DISK_DEFAULT);
	free(vms);
	{
		char seedp[1200];

		snprintf(seedp, sizeof(seedp), "%s/vm/lc/seed.iso", state);
		ok(stat(seedp, &sst) == 0 && sst.st_size >= 22 * 2048,
		    "disk VM: seed.iso written");
	}
	ok(vmm_destroy(&cfg, "lc", err, sizeof(err)) == 0, "destroy disk VM");
	o.vs_disk = NULL;

	/* Refusals. */
	o.vs_name = "nosuch";
	ok(vmm_start(&cfg, &o, &st, err, sizeof(err)) == -1 &&
	    contains(err, "no sandbox 'nosuch'"), "refused: unknown sandbox");
	o.vs_name = "Bad/Name";
	ok(vmm_start(&cfg, &o, &st, err, sizeof(err)) == -1 &&
	    contains(err, "invalid sandbox name"), "refused: invalid name");
	o.vs_name = "lc";
	o.vs_memory = 64;
	ok(vmm_start(&cfg, &o, &st, err, sizeof(err)) == -1 &&
	    contains(err, "memory"), "refused: too little memory");
	o.vs_memory = 0;
	o.vs_disk = "relative.qcow2";
	ok(vmm_start(&cfg, &o, &st, err, sizeof(err)) == -1 &&
	    contains(err, "absolute"), "refused: a relative disk path");
	o.vs_disk = NULL;
	o.vs_image = "/nonexistent-guest";
	ok(vmm_start(&cfg, &o, &st, err, sizeof(err)) == -1 &&
	    contains(err, "make guest"), "refused: no guest image there");
	o.vs_image = NULL;
	sb.sb_kind = SANDBOX_KIND_ATTACH;
	snprintf(sb.sb_name, sizeof(sb.sb_name), "att");
	sandbox_save(state, &sb);
	o.vs_name = "att";
	ok(vmm_start(&cfg, &o, &st, err, sizeof(err)) == -1 &&
	    contains(err, "another VMM"), "refused: an attached sandbox");
	snprintf(cfg.libvirt_uri, sizeof(cfg.libvirt_uri),
	    "qemu:///system?socket=/nonexistent/sock");
	o.vs_name = "lc";
	ok(vmm_start(&cfg, &o, &st, err, sizeof(err)) == -1 &&
	    contains(err, "libvirt"), "refused: libvirt unreachable, said so");
	snprintf(p, sizeof(p), "%s/vm/lc", state);
	ok(stat(p, &sst) == 0, "lc has a VM folder");
	errno = 0;
	ok(vmm_destroy(&cfg, "lc", err, sizeof(err)) == -1 && errno != ENOENT,
	    "destroy with libvirt unreachable: an error, not \"no VM\"");
	ok(vmm_sandbox_purge(&cfg, "lc", err, sizeof(err)) == -1 &&
	    stat(p, &sst) == 0, "purge with libvirt unreachable: refused, "
	    "folder kept");
	virConnectClose(keep);
}

int
main(void)
{
	char dir[1024];

	plan_lazy();
	snprintf(dir, sizeof(dir), "%s", tap_tmpdir());
	test_xml();
	test_cpio();
	test_names();
	test_iso();
	test_guest(dir);
	test_lifecycle(dir);
	return tap_failures() != 0;
}
