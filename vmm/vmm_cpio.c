/*
 * vmm/vmm_cpio.c: an in-memory cpio archive in the "newc" format, the one the kernel
 * unpacks into its initramfs.  The per-VM files of the default guest are such an
 * archive appended to the shared base image (the kernel unpacks concatenated
 * archives in order, later files over earlier ones), so no per-VM image is built.
 *
 * newc: "070701", then 13 fields of 8 hex digits (ino, mode, uid, gid, nlink, mtime,
 * filesize, devmajor, devminor, rdevmajor, rdevminor, namesize incl. NUL, check),
 * the name, NUL, padding to 4, the data, padding to 4.  "TRAILER!!!" ends it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vmm_int.h"

static int
vmm_cpio_reserve(struct vmm_cpio *c, size_t more)
{
	uint8_t *p;
	size_t cap;

	if (c->c_n + more <= c->c_cap)
		return 0;
	cap = c->c_cap ? c->c_cap : 4096;
	while (cap < c->c_n + more) {
		if (cap > SIZE_MAX / 2)
			return -1;
		cap *= 2;
	}
	if ((p = realloc(c->c_p, cap)) == NULL)
		return -1;
	c->c_p = p;
	c->c_cap = cap;
	return 0;
}

static void
vmm_cpio_pad(struct vmm_cpio *c)
{
	while (c->c_n % 4 != 0)
		c->c_p[c->c_n++] = 0;
}

static void
vmm_cpio_entry(struct vmm_cpio *c, const char *path, unsigned int mode,
    const void *data, size_t len)
{
	char hdr[6 + 13 * 8 + 1];
	size_t nlen;

	if (c->c_failed)
		return;
	nlen = strlen(path) + 1;
	/* Relative names only, and sizes that fit the 8-digit fields. */
	if (path[0] == '/' || nlen == 1 || nlen > 4096 || len > 0x7fffffffU ||
	    vmm_cpio_reserve(c, sizeof(hdr) + nlen + len + 8) == -1) {
		c->c_failed = 1;
		return;
	}
	snprintf(hdr, sizeof(hdr), "070701%08X%08X%08X%08X%08X%08X%08X"
	    "%08X%08X%08X%08X%08X%08X", ++c->c_ino, mode, 0U, 0U,
	    S_ISDIR(mode) ? 2U : 1U, 0U, (unsigned int)len, 0U, 0U, 0U, 0U,
	    (unsigned int)nlen, 0U);
	memcpy(c->c_p + c->c_n, hdr, sizeof(hdr) - 1);
	c->c_n += sizeof(hdr) - 1;
	memcpy(c->c_p + c->c_n, path, nlen);
	c->c_n += nlen;
	vmm_cpio_pad(c);
	if (len > 0) {
		memcpy(c->c_p + c->c_n, data, len);
		c->c_n += len;
	}
	vmm_cpio_pad(c);
}

void
vmm_cpio_dir(struct vmm_cpio *c, const char *path, unsigned int mode)
{
	vmm_cpio_entry(c, path, S_IFDIR | (mode & 07777), NULL, 0);
}

void
vmm_cpio_file(struct vmm_cpio *c, const char *path, unsigned int mode,
    const void *data, size_t len)
{
	vmm_cpio_entry(c, path, S_IFREG | (mode & 07777), data, len);
}

int
vmm_cpio_finish(struct vmm_cpio *c)
{
	/* The trailer is an entry like any other, with inode 0 by convention. */
	unsigned int ino = c->c_ino;

	c->c_ino = (unsigned int)-1;
	vmm_cpio_entry(c, "TRAILER!!!", 0, NULL, 0);
	c->c_ino = ino;
	return c->c_failed ? -1 : 0;
}

void
vmm_cpio_free(struct vmm_cpio *c)
{
	free(c->c_p);
	memset(c, 0, sizeof(*c));
}
