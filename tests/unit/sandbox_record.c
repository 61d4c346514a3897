/*
 * tests/unit/sandbox_record.c: lib/sandbox.c: names, save/load round trip, 0600,
 * listing sorted, strict reading (unknown keys, bad addresses, name mismatch).
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"
#include "../tap.h"

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		bail("fopen %s", path);
	fputs(text, f);
	fclose(f);
}

static void
fill(struct sandbox *sb, const char *name, const char *guest)
{
	memset(sb, 0, sizeof(*sb));
	snprintf(sb->sb_name, sizeof(sb->sb_name), "%s", name);
	sb->sb_kind = SANDBOX_KIND_ATTACH;
	snprintf(sb->sb_iface, sizeof(sb->sb_iface), "tap-%s", name);
	netaddr_parse("10.0.0.1", &sb->sb_host_ip);
	netaddr_parse(guest, &sb->sb_guest_ip);
	sb->sb_prefix = 30;
	snprintf(sb->sb_mac, sizeof(sb->sb_mac), "02:00:00:00:00:0a");
	snprintf(sb->sb_policy, sizeof(sb->sb_policy), "/etc/p.json");
	snprintf(sb->sb_policy_hash, sizeof(sb->sb_policy_hash), "%064d", 7);
	sb->sb_created = 1700000000;
}

int
main(void)
{
	const char *dir = tap_tmpdir();
	struct sandbox a, b, *v = NULL;
	char path[4096], buf[64];
	struct stat st;
	int n;

	plan(24);
	ok(sandbox_name_is_valid("demo"), "demo is a valid name");
	ok(sandbox_name_is_valid("a-1"), "a-1 is valid");
	ok(sandbox_name_is_valid("abcdefghijk"), "11 characters are valid");
	ok(!sandbox_name_is_valid("abcdefghijkl"), "12 characters are refused");
	ok(!sandbox_name_is_valid(""), "empty is refused");
	ok(!sandbox_name_is_valid("-a"), "a leading '-' is refused");
	ok(!sandbox_name_is_valid("Demo"), "upper case is refused");
	ok(!sandbox_name_is_valid("a/b") && !sandbox_name_is_valid("a.b") &&
	    !sandbox_name_is_valid("../x"), "path characters are refused");

	is_int(0, sandbox_list(dir, &v), "no records in a fresh state dir");
	free(v);
	v = NULL;
	errno = 0;
	ok(sandbox_load(dir, "demo", &a) == -1 && errno == ENOENT,
	    "loading an absent record: ENOENT");

	fill(&a, "zeta", "10.0.0.2");
	is_int(0, sandbox_save(dir, &a), "save zeta");
	fill(&a, "alpha", "10.0.0.6");
	a.sb_mac[0] = '\0';
	a.sb_kind = SANDBOX_KIND_TAP;
	is_int(0, sandbox_save(dir, &a), "save alpha");
	snprintf(path, sizeof(path), "%s/sandboxes/alpha.json", dir);
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600,
	    "the record is 0600");
	is_int(0, sandbox_load(dir, "alpha", &b), "load alpha");
	ok(strcmp(a.sb_name, b.sb_name) == 0 && a.sb_kind == b.sb_kind &&
	    strcmp(a.sb_iface, b.sb_iface) == 0 &&
	    netaddr_equal(&a.sb_host_ip, &b.sb_host_ip) &&
	    netaddr_equal(&a.sb_guest_ip, &b.sb_guest_ip) &&
	    a.sb_prefix == b.sb_prefix && strcmp(a.sb_mac, b.sb_mac) == 0 &&
	    strcmp(a.sb_policy, b.sb_policy) == 0 &&
	    strcmp(a.sb_policy_hash, b.sb_policy_hash) == 0 &&
	    a.sb_created == b.sb_created, "round trip keeps every field");
	is_string("10.0.0.6", netaddr_fmt(&b.sb_guest_ip, buf, sizeof(buf)),
	    "guest address");

	n = sandbox_list(dir, &v);
	is_int(2, n, "two records listed");
	ok(n == 2 && strcmp(v[0].sb_name, "alpha") == 0 &&
	    strcmp(v[1].sb_name, "zeta") == 0, "sorted by name");
	free(v);
	v = NULL;

	/* Strict reading: each of these must be refused. */
	snprintf(path, sizeof(path), "%s/sandboxes/bad1.json", dir);
	write_file(path, "{\"name\":\"bad1\",\"kind\":\"tap\",\"iface\":\"x\","
	    "\"host_ip\":\"10.0.0.1\",\"guest_ip\":\"10.0.0.2\",\"prefix\":30,"
	    "\"mac\":\"\",\"policy\":\"\",\"policy_hash\":\"\",\"created\":1,"
	    "\"extra\":1}");
	ok(sandbox_load(dir, "bad1", &b) == -1, "an unknown key is refused");
	write_file(path, "{\"name\":\"bad1\",\"kind\":\"tap\",\"iface\":\"x\","
	    "\"host_ip\":\"10.0.0.1\",\"guest_ip\":\"010.0.0.2\",\"prefix\":30,"
	    "\"mac\":\"\",\"policy\":\"\",\"policy_hash\":\"\",\"created\":1}");
	ok(sandbox_load(dir, "bad1", &b) == -1, "a non-canonical address is refused");
	write_file(path, "{\"name\":\"other\",\"kind\":\"tap\",\"iface\":\"x\","
	    "\"host_ip\":\"10.0.0.1\",\"guest_ip\":\"10.0.0.2\",\"prefix\":30,"
	    "\"mac\":\"\",\"policy\":\"\",\"policy_hash\":\"\",\"created\":1}");
	ok(sandbox_load(dir, "bad1", &b) == -1,
	    "a record whose name is not its file's is refused");
	ok(sandbox_list(dir, &v) == -1, "listing fails on a bad record");
	free(v);
	v = NULL;

	is_int(0, sandbox_remove(dir, "bad1"), "remove bad1");
	is_int(0, sandbox_remove(dir, "zeta"), "remove zeta");
	return 0;
}
