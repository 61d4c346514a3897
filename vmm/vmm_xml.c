/*
 * vmm/vmm_xml.c: the libvirt domain XML of a sandbox VM, generated from the sandbox
 * record (through struct vmm_domain_spec).  Pure: no libvirt call, so every line of
 * it is unit-tested.
 *
 * Choices, measured on these machines (see the reference notes in the README):
 *	- NIC: type 'ethernet' with managed='no': airlock made the tap (netctl) and its
 *	  rules match its name; libvirt must only open it, never create, address or
 *	  delete it.  No option ROM (<rom enabled='no'/>): the direct kernel boot needs
 *	  no PXE, and ipxe need not be installed.
 *	- CPU qemu64 + rdrand: without RDRAND the guest's RNG is not ready and the first
 *	  TLS handshake takes ~1 s longer; "max" boots ~1 s slower under TCG.
 *	- No USB, balloon, graphics or video: less to emulate, less attack surface.
 *	- on_poweroff/reboot/crash destroy: the guest's power-off (or panic=-1) ends the
 *	  transient domain, nothing restarts behind the operator's back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmm_int.h"

/* Writes s XML-escaped; refuses control characters (no field may carry them). */
static int
vmm_xml_put(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch < 0x20 || ch == 0x7f)
			return -1;
		switch (ch) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(ch, f);
		}
	}
	return 0;
}

/* "<tag>escaped</tag>\n" with indent; -1 on a bad value. */
static int
vmm_xml_elem(FILE *f, const char *indent, const char *tag, const char *val)
{
	fprintf(f, "%s<%s>", indent, tag);
	if (vmm_xml_put(f, val) == -1)
		return -1;
	fprintf(f, "</%s>\n", tag);
	return 0;
}

/* " attr='escaped'"; -1 on a bad value. */
static int
vmm_xml_attr(FILE *f, const char *attr, const char *val)
{
	fprintf(f, " %s='", attr);
	if (vmm_xml_put(f, val) == -1)
		return -1;
	fputc('\'', f);
	return 0;
}

char *
vmm_domain_xml(const struct vmm_domain_spec *ds)
{
	FILE *f;
	char *buf = NULL;
	size_t len = 0;
	int bad = 0;

	if (ds->ds_name == NULL || ds->ds_type == NULL || ds->ds_console == NULL ||
	    (strcmp(ds->ds_type, "kvm") != 0 && strcmp(ds->ds_type, "qemu") != 0) ||
	    ds->ds_memory == 0 || ds->ds_vcpus == 0 ||
	    (ds->ds_kernel == NULL) == (ds->ds_disk == NULL) ||
	    (ds->ds_kernel != NULL && (ds->ds_initrd == NULL ||
	    ds->ds_cmdline == NULL)) ||
	    (ds->ds_seed != NULL && ds->ds_disk == NULL)) {
		errno = EINVAL;
		return NULL;
	}
	if ((f = open_memstream(&buf, &len)) == NULL)
		return NULL;
	fprintf(f, "<domain type='%s'>\n", ds->ds_type);
	bad |= vmm_xml_elem(f, "  ", "name", ds->ds_name);
	fprintf(f, "  <memory unit='MiB'>%u</memory>\n", ds->ds_memory);
	fprintf(f, "  <vcpu>%u</vcpu>\n", ds->ds_vcpus);
	fprintf(f, "  <os>\n    <type arch='x86_64' machine='pc'>hvm</type>\n");
	if (ds->ds_kernel != NULL) {
		bad |= vmm_xml_elem(f, "    ", "kernel", ds->ds_kernel);
		bad |= vmm_xml_elem(f, "    ", "initrd", ds->ds_initrd);
		bad |= vmm_xml_elem(f, "    ", "cmdline", ds->ds_cmdline);
	} else
		fprintf(f, "    <boot dev='hd'/>\n");
	fprintf(f, "  </os>\n"
	    "  <features><acpi/></features>\n"
	    "  <cpu mode='custom' match='exact' check='none'>\n"
	    "    <model fallback='forbid'>qemu64</model>\n"
	    "    <feature policy='require' name='rdrand'/>\n"
	    "  </cpu>\n"
	    "  <clock offset='utc'/>\n"
	    "  <on_poweroff>destroy</on_poweroff>\n"
	    "  <on_reboot>destroy</on_reboot>\n"
	    "  <on_crash>destroy</on_crash>\n"
	    "  <devices>\n");
	if (ds->ds_disk != NULL) {
		fprintf(f, "    <disk type='file' device='disk'>\n"
		    "      <driver name='qemu' type='qcow2'/>\n"
		    "      <source");
		bad |= vmm_xml_attr(f, "file", ds->ds_disk);
		fprintf(f, "/>\n      <target dev='vda' bus='virtio'/>\n"
		    "    </disk>\n");
	}
	if (ds->ds_seed != NULL) {
		fprintf(f, "    <disk type='file' device='cdrom'>\n"
		    "      <driver name='qemu' type='raw'/>\n"
		    "      <source");
		bad |= vmm_xml_attr(f, "file", ds->ds_seed);
		fprintf(f, "/>\n      <target dev='hdc' bus='ide'/>\n"
		    "      <readonly/>\n    </disk>\n");
	}
	if (ds->ds_tap != NULL) {
		fprintf(f, "    <interface type='ethernet'>\n");
		if (ds->ds_mac != NULL && ds->ds_mac[0] != '\0') {
			fprintf(f, "      <mac");
			bad |= vmm_xml_attr(f, "address", ds->ds_mac);
			fprintf(f, "/>\n");
		}
		fprintf(f, "      <target");
		bad |= vmm_xml_attr(f, "dev", ds->ds_tap);
		fprintf(f, " managed='no'/>\n"
		    "      <model type='virtio'/>\n"
		    "      <rom enabled='no'/>\n"
		    "    </interface>\n");
	}
	fprintf(f, "    <serial type='file'>\n      <source");
	bad |= vmm_xml_attr(f, "path", ds->ds_console);
	fprintf(f, "/>\n      <target port='0'/>\n    </serial>\n"
	    "    <controller type='usb' model='none'/>\n"
	    "    <memballoon model='none'/>\n"
	    "  </devices>\n"
	    "</domain>\n");
	if (fclose(f) == EOF || bad) {
		free(buf);
		errno = bad ? EINVAL : ENOMEM;
		return NULL;
	}
	return buf;
}
