/*
 * vmm/vmm_seed.c: the cloud-init NoCloud seed of a disk-image VM (`vm start --disk`),
 * written here as a minimal ISO 9660 image labelled "cidata", so no genisoimage or
 * xorriso is needed.
 *
 * Layout (2048-byte sectors): 0-15 system area (zero), 16 primary volume
 * descriptor, 17 set terminator, 18 little-endian path table, 19 big-endian path
 * table, 20 the root directory, then each file from a sector of its own.  Names are
 * stored as given, without ";1" (Linux shows them as they are, as it does for
 * genisoimage's relaxed names).
 *
 * The user-data carries everything as base64 (write_files encoding b64), so no byte
 * of a certificate, placeholder or agent script can change the YAML's structure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "vmm_int.h"

#define ISO_SECTOR	2048
#define ISO_ROOT_SECTOR	20
#define ISO_FILES_MAX	8

static void
iso_le16(uint8_t *p, unsigned int v)
{
	p[0] = v & 0xff;
	p[1] = (v >> 8) & 0xff;
}

static void
iso_be16(uint8_t *p, unsigned int v)
{
	p[0] = (v >> 8) & 0xff;
	p[1] = v & 0xff;
}

static void
iso_le32(uint8_t *p, uint32_t v)
{
	p[0] = v & 0xff;
	p[1] = (v >> 8) & 0xff;
	p[2] = (v >> 16) & 0xff;
	p[3] = (v >> 24) & 0xff;
}

static void
iso_be32(uint8_t *p, uint32_t v)
{
	p[0] = (v >> 24) & 0xff;
	p[1] = (v >> 16) & 0xff;
	p[2] = (v >> 8) & 0xff;
	p[3] = v & 0xff;
}

/* Both-endian fields: little-endian then big-endian. */
static void
iso_both16(uint8_t *p, unsigned int v)
{
	iso_le16(p, v);
	iso_be16(p + 2, v);
}

static void
iso_both32(uint8_t *p, uint32_t v)
{
	iso_le32(p, v);
	iso_be32(p + 4, v);
}

/* A space-padded string field. */
static void
iso_str(uint8_t *p, size_t len, const char *s)
{
	size_t n = strlen(s);

	memset(p, ' ', len);
	memcpy(p, s, n < len ? n : len);
}

/* One directory record at p; returns its length (even). */
static size_t
iso_dirrec(uint8_t *p, uint32_t sector, uint32_t size, int is_dir,
    const char *name, size_t nlen)
{
	size_t len = 33 + nlen + (nlen % 2 == 0 ? 1 : 0);

	memset(p, 0, len);
	p[0] = (uint8_t)len;
	iso_both32(p + 2, sector);
	iso_both32(p + 10, size);
	/* 2024-01-01 00:00:00 UTC: fixed, so the seed is reproducible. */
	p[18] = 124;
	p[19] = 1;
	p[20] = 1;
	p[25] = is_dir ? 2 : 0;
	iso_both16(p + 28, 1);
	p[32] = (uint8_t)nlen;
	memcpy(p + 33, name, nlen);
	return len;
}

static int
iso_name_is_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 30)
		return 0;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
		    *s == '-' || *s == '_' || *s == '.'))
			return 0;
	return 1;
}

int
vmm_seed_iso(const struct vmm_seed_file *files, size_t n, uint8_t **out,
    size_t *outlen)
{
	uint32_t sector[ISO_FILES_MAX], next = ISO_ROOT_SECTOR + 1, total;
	uint8_t *img, *pvd, *root;
	size_t i, off;
	static const char date[] = "2024010100000000";

	if (n > ISO_FILES_MAX) {
		errno = EINVAL;
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (!iso_name_is_valid(files[i].sf_name) ||
		    files[i].sf_len > 64 * 1024 * 1024) {
			errno = EINVAL;
			return -1;
		}
		sector[i] = next;
		next += (uint32_t)((files[i].sf_len + ISO_SECTOR - 1) /
		    ISO_SECTOR);
		if (files[i].sf_len == 0)
			next++;	/* every file its own sector */
	}
	total = next;
	if ((img = calloc(total, ISO_SECTOR)) == NULL)
		return -1;

	pvd = img + 16 * ISO_SECTOR;
	pvd[0] = 1;
	memcpy(pvd + 1, "CD001", 5);
	pvd[6] = 1;
	iso_str(pvd + 8, 32, "LINUX");
	iso_str(pvd + 40, 32, "cidata");
	iso_both32(pvd + 80, total);
	iso_both16(pvd + 120, 1);
	iso_both16(pvd + 124, 1);
	iso_both16(pvd + 128, ISO_SECTOR);
	iso_both32(pvd + 132, 10);
	iso_le32(pvd + 140, 18);
	iso_be32(pvd + 148, 19);
	iso_dirrec(pvd + 156, ISO_ROOT_SECTOR, ISO_SECTOR, 1, "\0", 1);
	iso_str(pvd + 190, 128, "");
	iso_str(pvd + 318, 128, "");
	iso_str(pvd + 446, 128, "");
	iso_str(pvd + 574, 128, "AIRLOCK");
	iso_str(pvd + 702, 37, "");
	iso_str(pvd + 739, 37, "");
	iso_str(pvd + 776, 37, "");
	memcpy(pvd + 813, date, 16);
	memcpy(pvd + 830, date, 16);
	memset(pvd + 847, '0', 16);
	memset(pvd + 864, '0', 16);
	pvd[881] = 1;

	/* Set terminator. */
	img[17 * ISO_SECTOR] = 255;
	memcpy(img + 17 * ISO_SECTOR + 1, "CD001", 5);
	img[17 * ISO_SECTOR + 6] = 1;

	/* Path tables: the root alone, its own parent. */
	img[18 * ISO_SECTOR] = 1;
	iso_le32(img + 18 * ISO_SECTOR + 2, ISO_ROOT_SECTOR);
	iso_le16(img + 18 * ISO_SECTOR + 6, 1);
	img[19 * ISO_SECTOR] = 1;
	iso_be32(img + 19 * ISO_SECTOR + 2, ISO_ROOT_SECTOR);
	iso_be16(img + 19 * ISO_SECTOR + 6, 1);

	root = img + ISO_ROOT_SECTOR * ISO_SECTOR;
	off = iso_dirrec(root, ISO_ROOT_SECTOR, ISO_SECTOR, 1, "\0", 1);
	off += iso_dirrec(root + off, ISO_ROOT_SECTOR, ISO_SECTOR, 1, "\1", 1);
	for (i = 0; i < n; i++) {
		off += iso_dirrec(root + off, sector[i],
		    (uint32_t)files[i].sf_len, 0, files[i].sf_name,
		    strlen(files[i].sf_name));
		if (files[i].sf_len > 0)
			memcpy(img + (size_t)sector[i] * ISO_SECTOR,
			    files[i].sf_data, files[i].sf_len);
	}
	*out = img;
	*outlen = (size_t)total * ISO_SECTOR;
	return 0;
}

/* "    encoding: b64\n    content: BASE64\n" of data. */
static int
seed_b64(FILE *f, const char *data, size_t len)
{
	unsigned char *b;

	if ((b = malloc(4 * ((len + 2) / 3) + 1)) == NULL)
		return -1;
	EVP_EncodeBlock(b, (const unsigned char *)data, (int)len);
	fprintf(f, "    encoding: b64\n    content: %s\n", b);
	free(b);
	return 0;
}

int
vmm_seed_build(const struct sandbox *sb, const struct vmm_guest *g,
    uint8_t **out, size_t *outlen)
{
	struct vmm_seed_file files[3];
	char host[NETADDR_STRLEN], guest[NETADDR_STRLEN];
	char *ud = NULL, *md = NULL, *nc = NULL;
	size_t udl = 0, mdl = 0, ncl = 0;
	FILE *f = NULL;
	int rv = -1, bad = 0;

	netaddr_fmt(&sb->sb_host_ip, host, sizeof(host));
	netaddr_fmt(&sb->sb_guest_ip, guest, sizeof(guest));

	if ((f = open_memstream(&ud, &udl)) == NULL)
		goto out;
	fprintf(f, "#cloud-config\n"
	    "# airlock sandbox %s: CA, placeholders, agent.  No secret values.\n"
	    "write_files:\n", sb->sb_name);
	if (g->g_ca_pem[0] != '\0') {
		fprintf(f, "  - path: /usr/local/share/ca-certificates/"
		    "airlock-%s.crt\n    permissions: '0644'\n", sb->sb_name);
		bad |= seed_b64(f, g->g_ca_pem, strlen(g->g_ca_pem));
	}
	fprintf(f, "  - path: /etc/profile.d/airlock.sh\n"
	    "    permissions: '0644'\n");
	bad |= seed_b64(f, g->g_env, strlen(g->g_env));
	if (g->g_agent != NULL) {
		fprintf(f, "  - path: /etc/airlock/agent\n"
		    "    permissions: '0755'\n");
		bad |= seed_b64(f, g->g_agent, g->g_agent_len);
	}
	fprintf(f, "runcmd:\n");
	if (g->g_ca_pem[0] != '\0')
		fprintf(f, "  - [update-ca-certificates]\n");
	if (g->g_agent != NULL)
		fprintf(f, "  - [sh, -c, 'echo \"airlock-guest: agent start\" "
		    ">/dev/ttyS0; (set -a; . /etc/profile.d/airlock.sh; set +a; "
		    "/etc/airlock/agent) >/dev/ttyS0 2>&1; echo \"airlock-guest: "
		    "agent exit $?\" >/dev/ttyS0']\n");
	if (fclose(f) == EOF) {
		f = NULL;
		goto out;
	}
	if ((f = open_memstream(&md, &mdl)) == NULL)
		goto out;
	fprintf(f, "instance-id: airlock-%s\nlocal-hostname: %s\n", sb->sb_name,
	    sb->sb_name);
	if (fclose(f) == EOF) {
		f = NULL;
		goto out;
	}
	if ((f = open_memstream(&nc, &ncl)) == NULL)
		goto out;
	fprintf(f, "version: 2\nethernets:\n  airlock0:\n    match:\n"
	    "      name: \"e*\"\n    addresses: [%s/%u]\n"
	    "    routes:\n      - to: 0.0.0.0/0\n        via: %s\n"
	    "    nameservers:\n      addresses: [%s]\n", guest, sb->sb_prefix,
	    host, host);
	if (fclose(f) == EOF) {
		f = NULL;
		goto out;
	}
	f = NULL;
	if (bad)
		goto out;
	files[0] = (struct vmm_seed_file){ "meta-data", md, mdl };
	files[1] = (struct vmm_seed_file){ "network-config", nc, ncl };
	files[2] = (struct vmm_seed_file){ "user-data", ud, udl };
	rv = vmm_seed_iso(files, 3, out, outlen);
 out:
	if (f != NULL)
		fclose(f);
	free(ud);
	free(md);
	free(nc);
	return rv;
}
