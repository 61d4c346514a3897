/*
 * lib/sandbox.c: sandbox records, STATE_DIR/sandboxes/NAME.json (see include/sandbox.h).
 *
 * The record is the one truth netctl, airlockd and vmm share about a sandbox, so it is
 * read strictly: unknown keys, wrong types, a name that does not match the file name or
 * addresses that do not parse are errors, never silently defaulted.  jansson stays in
 * this file; callers see only struct sandbox.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "hostname.h"
#include "log.h"
#include "sandbox.h"
#include "siphash.h"

#define SANDBOX_DIR	"sandboxes"

int
sandbox_name_is_valid(const char *name)
{
	size_t i, n;

	if (name == NULL)
		return 0;
	n = strlen(name);
	if (n == 0 || n > SANDBOX_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		char c = name[i];

		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
			continue;
		if (c == '-' && i > 0)
			continue;
		return 0;
	}
	return 1;
}

static int
sandbox_path(const char *state_dir, const char *name, char *buf, size_t len)
{
	int n;

	if (!sandbox_name_is_valid(name)) {
		errno = EINVAL;
		return -1;
	}
	n = snprintf(buf, len, "%s/%s/%s.json", state_dir, SANDBOX_DIR, name);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

static const char *
sandbox_kind_str(enum sandbox_kind k)
{
	return k == SANDBOX_KIND_ATTACH ? "attach" : "tap";
}

/* A strict copy of a JSON string into a fixed buffer: too long is an error. */
static int
sandbox_str_copy(json_t *v, char *dst, size_t len, int may_be_empty)
{
	const char *s;
	size_t n;

	if (!json_is_string(v))
		return -1;
	s = json_string_value(v);
	n = json_string_length(v);
	if (n >= len || strlen(s) != n || (n == 0 && !may_be_empty))
		return -1;
	memcpy(dst, s, n + 1);
	return 0;
}

static int
sandbox_mac_is_valid(const char *s)
{
	size_t i;

	if (strlen(s) != 17)
		return 0;
	for (i = 0; i < 17; i++) {
		if (i % 3 == 2) {
			if (s[i] != ':')
				return 0;
		} else if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	}
	return 1;
}

static int
sandbox_from_json(json_t *root, const char *name, struct sandbox *sb)
{
	static const char *keys[] = { "name", "kind", "iface", "host_ip",
	    "guest_ip", "prefix", "mac", "policy", "policy_hash", "created" };
	char buf[NETADDR_STRLEN];
	const char *key;
	json_t *v;
	size_t i;
	int known;

	memset(sb, 0, sizeof(*sb));
	if (!json_is_object(root))
		return -1;
	json_object_foreach(root, key, v) {
		known = 0;
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (strcmp(key, keys[i]) == 0)
				known = 1;
		if (!known)
			return -1;
	}
	if (sandbox_str_copy(json_object_get(root, "name"), sb->sb_name,
	    sizeof(sb->sb_name), 0) == -1 || !sandbox_name_is_valid(sb->sb_name))
		return -1;
	if (name != NULL && strcmp(name, sb->sb_name) != 0)
		return -1;
	v = json_object_get(root, "kind");
	if (!json_is_string(v))
		return -1;
	if (strcmp(json_string_value(v), "tap") == 0)
		sb->sb_kind = SANDBOX_KIND_TAP;
	else if (strcmp(json_string_value(v), "attach") == 0)
		sb->sb_kind = SANDBOX_KIND_ATTACH;
	else
		return -1;
	if (sandbox_str_copy(json_object_get(root, "iface"), sb->sb_iface,
	    sizeof(sb->sb_iface), 0) == -1)
		return -1;
	if (sandbox_str_copy(json_object_get(root, "host_ip"), buf, sizeof(buf),
	    0) == -1 || netaddr_parse(buf, &sb->sb_host_ip) == -1 ||
	    sb->sb_host_ip.na_family != AF_INET)
		return -1;
	if (sandbox_str_copy(json_object_get(root, "guest_ip"), buf, sizeof(buf),
	    0) == -1 || netaddr_parse(buf, &sb->sb_guest_ip) == -1 ||
	    sb->sb_guest_ip.na_family != AF_INET)
		return -1;
	v = json_object_get(root, "prefix");
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > 32)
		return -1;
	sb->sb_prefix = (unsigned int)json_integer_value(v);
	if (sandbox_str_copy(json_object_get(root, "mac"), sb->sb_mac,
	    sizeof(sb->sb_mac), 1) == -1 ||
	    (sb->sb_mac[0] != '\0' && !sandbox_mac_is_valid(sb->sb_mac)))
		return -1;
	if (sandbox_str_copy(json_object_get(root, "policy"), sb->sb_policy,
	    sizeof(sb->sb_policy), 1) == -1)
		return -1;
	if (sandbox_str_copy(json_object_get(root, "policy_hash"),
	    sb->sb_policy_hash, sizeof(sb->sb_policy_hash), 1) == -1)
		return -1;
	v = json_object_get(root, "created");
	if (!json_is_integer(v))
		return -1;
	sb->sb_created = json_integer_value(v);
	return 0;
}

int
sandbox_load(const char *state_dir, const char *name, struct sandbox *sb)
{
	char path[PATH_MAX];
	json_error_t jerr;
	json_t *root;
	int rv;

	if (sandbox_path(state_dir, name, path, sizeof(path)) == -1)
		return -1;
	if (access(path, F_OK) == -1)
		return -1;		/* errno ENOENT when absent */
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		log_warnx("%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
		errno = EINVAL;
		return -1;
	}
	rv = sandbox_from_json(root, name, sb);
	json_decref(root);
	if (rv == -1) {
		log_warnx("%s: not a valid sandbox record", path);
		errno = EINVAL;
	}
	return rv;
}

static json_t *
sandbox_to_json(const struct sandbox *sb)
{
	char host[NETADDR_STRLEN], guest[NETADDR_STRLEN];

	netaddr_fmt(&sb->sb_host_ip, host, sizeof(host));
	netaddr_fmt(&sb->sb_guest_ip, guest, sizeof(guest));
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:I}",
	    "name", sb->sb_name, "kind", sandbox_kind_str(sb->sb_kind),
	    "iface", sb->sb_iface, "host_ip", host, "guest_ip", guest,
	    "prefix", (int)sb->sb_prefix, "mac", sb->sb_mac,
	    "policy", sb->sb_policy, "policy_hash", sb->sb_policy_hash,
	    "created", (json_int_t)sb->sb_created);
}

/* Creates STATE_DIR (0700) and STATE_DIR/sandboxes (0700) when missing. */
static int
sandbox_dir_make(const char *state_dir)
{
	char dir[PATH_MAX];
	int n;

	if (mkdir(state_dir, 0700) == -1 && errno != EEXIST)
		return -1;
	n = snprintf(dir, sizeof(dir), "%s/%s", state_dir, SANDBOX_DIR);
	if (n < 0 || (size_t)n >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (mkdir(dir, 0700) == -1 && errno != EEXIST)
		return -1;
	return 0;
}

int
sandbox_save(const char *state_dir, const struct sandbox *sb)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	json_t *root = NULL;
	char *text = NULL;
	size_t len, off;
	ssize_t w;
	int fd = -1, rv = -1, n, saved;

	if (sandbox_path(state_dir, sb->sb_name, path, sizeof(path)) == -1)
		return -1;
	n = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (sandbox_dir_make(state_dir) == -1)
		return -1;
	if ((root = sandbox_to_json(sb)) == NULL ||
	    (text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS)) == NULL) {
		errno = ENOMEM;
		goto out;
	}
	len = strlen(text);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) == -1)
		goto out;
	for (off = 0; off < len; off += (size_t)w) {
		if ((w = write(fd, text + off, len - off)) == -1) {
			if (errno == EINTR) {
				w = 0;
				continue;
			}
			goto out;
		}
	}
	if (write(fd, "\n", 1) != 1 || fsync(fd) == -1)
		goto out;
	if (close(fd) == -1) {
		fd = -1;
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) == -1)
		goto out;
	rv = 0;
 out:
	saved = errno;
	if (fd != -1)
		close(fd);
	if (rv == -1)
		unlink(tmp);
	free(text);
	json_decref(root);
	errno = saved;
	return rv;
}

/* Not a secret: ids are stable names for the operator, not capabilities. */
static const uint8_t sandbox_approval_key[16] = "airlock-approval";

void
sandbox_approval_id(const char *sandbox, const char *name, uint16_t port,
    char id[SANDBOX_APPROVAL_ID_LEN + 1])
{
	char buf[2 * (HOSTNAME_MAX + 1) + 16];
	uint64_t h;
	int n;

	n = snprintf(buf, sizeof(buf), "%s\n%s\n%u", sandbox, name,
	    (unsigned int)port);
	if (n < 0 || (size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	h = siphash24(sandbox_approval_key, buf, (size_t)n);
	snprintf(id, SANDBOX_APPROVAL_ID_LEN + 1, "%010llx",
	    (unsigned long long)(h & 0xffffffffffULL));
}

int
sandbox_approvals_path(const char *state_dir, const char *name, char *buf,
    size_t len)
{
	int n;

	if (!sandbox_name_is_valid(name)) {
		errno = EINVAL;
		return -1;
	}
	n = snprintf(buf, len, "%s/approvals/%s.json", state_dir, name);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int
sandbox_remove(const char *state_dir, const char *name)
{
	char path[PATH_MAX];

	if (sandbox_path(state_dir, name, path, sizeof(path)) == -1)
		return -1;
	return unlink(path);
}

static int
sandbox_cmp(const void *a, const void *b)
{
	const struct sandbox *x = a, *y = b;

	return strcmp(x->sb_name, y->sb_name);
}

int
sandbox_list(const char *state_dir, struct sandbox **out)
{
	char dir[PATH_MAX], name[SANDBOX_NAME_MAX + 1];
	struct sandbox *v = NULL, *nv;
	struct dirent *de;
	DIR *d = NULL;
	size_t n = 0, cap = 0, l;
	int rv = -1, saved;

	*out = NULL;
	if (snprintf(dir, sizeof(dir), "%s/%s", state_dir, SANDBOX_DIR) >=
	    (int)sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((d = opendir(dir)) == NULL) {
		if (errno == ENOENT)
			return 0;	/* no sandbox was ever made */
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		l = strlen(de->d_name);
		/* Only NAME.json; temp files of a concurrent save are skipped. */
		if (l <= 5 || strcmp(de->d_name + l - 5, ".json") != 0 ||
		    l - 5 > SANDBOX_NAME_MAX)
			continue;
		memcpy(name, de->d_name, l - 5);
		name[l - 5] = '\0';
		if (!sandbox_name_is_valid(name))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			if ((nv = reallocarray(v, cap, sizeof(*v))) == NULL)
				goto out;
			v = nv;
		}
		if (sandbox_load(state_dir, name, &v[n]) == -1)
			goto out;
		n++;
	}
	if (n > 0)	/* qsort(NULL, 0, ...) is undefined (UBSan) */
		qsort(v, n, sizeof(*v), sandbox_cmp);
	*out = v;
	v = NULL;			/* transferred */
	rv = (int)n;
 out:
	saved = errno;
	closedir(d);
	free(v);
	errno = saved;
	return rv;
}
