/*
 * tests/unit/config.c: airlock.json loading, defaults, errors and overrides.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "../tap.h"

static char cfgpath[PATH_MAX];

static void
write_file(const char *path, const char *text)
{
	FILE *f;

	if ((f = fopen(path, "w")) == NULL || fputs(text, f) == EOF ||
	    fclose(f) == EOF)
		bail("cannot write %s", path);
}

/* Loads text from a file; returns config_load()'s result. */
static int
load_text(const char *text, struct airlock_config *c, const char *state_dir,
    char *err, size_t errlen)
{
	write_file(cfgpath, text);
	return config_load(c, cfgpath, state_dir, err, errlen);
}

/*
 * Whether err repeats one of the string values of the JSON text (a string after a
 * ':' of 4 bytes or more; a shorter one may be part of a key's name): a
 * configuration error names the key, never the value.
 */
static int
echoes_value(const char *text, const char *err)
{
	const char *p, *q;
	char v[256];

	for (p = text; (p = strchr(p, ':')) != NULL; p++) {
		while (p[1] == ' ')
			p++;
		if (p[1] != '"' || (q = strchr(p + 2, '"')) == NULL)
			continue;
		if (q - (p + 2) >= 4 && (size_t)(q - (p + 2)) < sizeof(v)) {
			memcpy(v, p + 2, (size_t)(q - (p + 2)));
			v[q - (p + 2)] = '\0';
			if (strstr(err, v) != NULL)
				return 1;
		}
	}
	return 0;
}

struct bad_case {
	const char	*text;
	const char	*want;		/* expected err after "FILE:" */
};

static const struct bad_case bad_cases[] = {
	{ "{\"proxy_port\": 1, \"bogus\": 2}", "1:19: $.bogus: unknown key" },
	{ "{\n  \"proxy_port\": 1,\n  \"proxy_port\": 2\n}",
	    "3:14: $.proxy_port: duplicate key" },
	{ "{\"proxy_port\": \"15001\"}", "1:2: $.proxy_port: must be an integer" },
	{ "{\"proxy_port\": 0}", "1:2: $.proxy_port: port 0 out of range" },
	{ "{\"proxy_port\": 65536}", "1:2: $.proxy_port: port 65536 out of range" },
	{ "{\"dns_port\": -53}", "1:2: $.dns_port: port -53 out of range" },
	{ "{\"dns_port\": 53.0}", "1:2: $.dns_port: must be an integer" },
	{ "{\"workers\": -1}", "1:2: $.workers: -1 out of range" },
	{ "{\"workers\": true}", "1:2: $.workers: must be an integer" },
	{ "{\"upstream_pool_idle_ms\": -1}",
	    "1:2: $.upstream_pool_idle_ms: -1 out of range 0..600000" },
	{ "{\"upstream_pool_idle_ms\": 600001}",
	    "1:2: $.upstream_pool_idle_ms: 600001 out of range 0..600000" },
	{ "{\"upstream_pool_per_host\": 65}",
	    "1:2: $.upstream_pool_per_host: 65 out of range 0..64" },
	{ "{\"upstream_pool_per_sandbox\": \"4\"}",
	    "1:2: $.upstream_pool_per_sandbox: must be an integer 0..1024" },
	{ "{\"upstream_pool_max\": 4097}",
	    "1:2: $.upstream_pool_max: 4097 out of range 0..4096" },
	{ "{\"state_dir\": \"var/lib/airlock\"}",
	    "1:2: $.state_dir: must be an absolute path" },
	{ "{\"state_dir\": \"\"}", "1:2: $.state_dir: must not be empty" },
	{ "{\"state_dir\": \"/a\\u0000b\"}", "1:25: invalid JSON: \\u0000 is not allowed" },
	{ "{\"state_dir\": null}", "1:2: $.state_dir: must be a string" },
	{ "{\"control_socket\": \"/run/"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock\"}",
	    "1:2: $.control_socket: path longer than 107 bytes" },
	{ "{\"address_pool\": \"10.233.0.1/16\"}",
	    "1:2: $.address_pool: not a CIDR block" },
	{ "{\"address_pool\": \"010.233.0.0/16\"}",
	    "1:2: $.address_pool: not a CIDR block" },
	{ "{\"address_pool\": \"fd00::/64\"}",
	    "1:2: $.address_pool: must be an IPv4 block" },
	{ "{\"address_pool\": \"10.0.0.0/31\"}",
	    "1:2: $.address_pool: prefix must be /8../30" },
	{ "{\"address_pool\": \"127.0.0.0/8\"}",
	    "1:2: $.address_pool: overlaps a never-routable range (loopback)" },
	/* A block whose ends are routable but that holds the floor inside. */
	{ "{\"mapped_pool\": \"169.0.0.0/8\"}",
	    "1:2: $.mapped_pool: overlaps a never-routable range (metadata)" },
	{ "{\"address_pool\": \"100.64.0.0/10\"}",
	    "1:2: $.address_pool: overlaps a never-routable range (metadata)" },
	{ "{\"address_pool\": \"224.0.0.0/8\"}",
	    "1:2: $.address_pool: overlaps a never-routable range (multicast)" },
	{ "{\"mapped_pool\": \"169.254.0.0/16\"}",
	    "1:2: $.mapped_pool: overlaps a never-routable range (link-local)" },
	{ "{\"mapped_pool\": 5}", "1:2: $.mapped_pool: must be a string" },
	{ "{\"mapped_pool\": \"10.233.4.0/24\"}",
	    "1:2: $.mapped_pool: address_pool and mapped_pool overlap" },
	{ "{\"address_pool\": \"198.18.0.0/16\"}",
	    "1:2: $.address_pool: address_pool and mapped_pool overlap" },
	{ "{\"upstream_ca_file\": 1}", "1:2: $.upstream_ca_file: must be null or" },
	{ "{\"upstream_ca_file\": \"ca.pem\"}",
	    "1:2: $.upstream_ca_file: must be an absolute path" },
	{ "{\"audit\": \"/var/log/x\"}", "1:2: $.audit: must be an object" },
	{ "{\"audit\": {\"fsync\": \"sometimes\"}}",
	    "1:12: $.audit.fsync: must be \"never\", \"deny\" or \"always\"" },
	{ "{\"audit\": {\"fsync\": true}}", "1:12: $.audit.fsync: must be a string" },
	{ "{\"audit\": {\"log_query\": 1}}",
	    "1:12: $.audit.log_query: must be true or false" },
	{ "{\"audit\": {\"key_file\": 5}}",
	    "1:12: $.audit.key_file: must be null or a string (a path)" },
	{ "{\"audit\": {\"key_file\": \"key\"}}",
	    "1:12: $.audit.key_file: must be an absolute path" },
	{ "{\"audit\": {\"sign_key\": true}}",
	    "1:12: $.audit.sign_key: must be null or a string (a path)" },
	{ "{\"audit\": {\"sign_key\": \"sign.key\"}}",
	    "1:12: $.audit.sign_key: must be an absolute path" },
	{ "{\"audit\": {\"sign_every\": 0}}",
	    "1:12: $.audit.sign_every: must be an integer 1..1000000" },
	{ "{\"audit\": {\"sign_every\": 1000001}}",
	    "1:12: $.audit.sign_every: must be an integer 1..1000000" },
	{ "{\"audit\": {\"sign_every\": \"5\"}}",
	    "1:12: $.audit.sign_every: must be an integer 1..1000000" },
	{ "{\"audit\": {\"max_bytes\": 4095}}",
	    "1:12: $.audit.max_bytes: must be an integer 0 or 4096..1099511627776" },
	{ "{\"audit\": {\"max_bytes\": -1}}",
	    "1:12: $.audit.max_bytes: must be an integer 0 or 4096..1099511627776" },
	{ "{\"audit\": {\"keep\": 0}}",
	    "1:12: $.audit.keep: must be an integer 1..100" },
	{ "{\"audit\": {\"keep\": 101}}",
	    "1:12: $.audit.keep: must be an integer 1..100" },
	{ "{\"audit\": {\"path\": \"audit.jsonl\"}}",
	    "1:12: $.audit.path: must be an absolute path" },
	{ "{\"audit\": {\"path\": \"/x\", \"paht\": \"/y\"}}",
	    "1:26: $.audit.paht: unknown key" },
	{ "{\"audit\": {\"path\": \"/x\", \"path\": \"/y\"}}",
	    "1:31: $.audit.path: duplicate key" },
	{ "{\"libvirt_uri\": \"\"}", "1:2: $.libvirt_uri: must not be empty" },
	{ "{\"libvirt_uri\": \"qemu:///system\\n\"}",
	    "1:2: $.libvirt_uri: must not contain control characters" },
	{ "{\"user\": \"root; rm\"}", "1:2: $.user: not a valid user name" },
	{ "{\"user\": \"-airlock\"}", "1:2: $.user: not a valid user name" },
	{ "{\"user\": \"\"}", "1:2: $.user: must be 1..32 bytes" },
	{ "{\"user\": 0}", "1:2: $.user: must be a string" },
	{ "{\"bad\\nkey\": 0}", " $.bad?key: unknown key" },
	{ "[]", "1:1: $: must be a JSON object" },
	{ "{\"metrics_listen\": \"10.233.0.1:9345\"}",
	    "1:2: $.metrics_listen: must be a loopback address" },
	{ "{\"metrics_listen\": \"0.0.0.0:9345\"}",
	    "1:2: $.metrics_listen: must be a loopback address" },
	{ "{\"metrics_listen\": \"[::]:9345\"}",
	    "1:2: $.metrics_listen: must be a loopback address" },
	{ "{\"metrics_listen\": \"127.0.0.1\"}", "1:2: $.metrics_listen: not ADDR:PORT" },
	{ "{\"metrics_listen\": \"127.0.0.1:0\"}", "1:2: $.metrics_listen: not ADDR:PORT" },
	{ "{\"metrics_listen\": \"localhost:9345\"}",
	    "1:2: $.metrics_listen: not ADDR:PORT" },
	{ "{\"metrics_listen\": 9345}", "1:2: $.metrics_listen: must be null or" },
	{ "{\"upstream_proxy\": \"http://proxy.test:3128\"}",
	    "1:2: $.upstream_proxy: must be null or an object" },
	{ "{\"upstream_proxy\": {}}",
	    "1:2: $.upstream_proxy: missing required key \"url\"" },
	{ "{\"upstream_proxy\": {\"url\": \"http://proxy.test:3128\", \"user\": "
	    "\"joe\"}}", "1:54: $.upstream_proxy.user: unknown key" },
	{ "{\"upstream_proxy\": {\"url\": 3128}}",
	    "1:21: $.upstream_proxy.url: must be a string" },
	{ "{\"upstream_proxy\": {\"url\": \"\"}}",
	    "1:21: $.upstream_proxy.url: must not be empty" },
	{ "{\"upstream_proxy\": {\"url\": \"https://proxy.test:3128\"}}",
	    "1:21: $.upstream_proxy.url: https:// is not supported" },
	{ "{\"upstream_proxy\": {\"url\": \"socks5://proxy.test:1080\"}}",
	    "1:21: $.upstream_proxy.url: must be \"http://HOST:PORT\"" },
	{ "{\"upstream_proxy\": {\"url\": \"http://proxy.test\"}}",
	    "1:21: $.upstream_proxy.url: the port is missing" },
	{ "{\"upstream_proxy\": {\"url\": \"http://proxy.test:\"}}",
	    "1:21: $.upstream_proxy.url: the port must be a number 1..65535" },
	{ "{\"upstream_proxy\": {\"url\": \"http://proxy.test:0\"}}",
	    "1:21: $.upstream_proxy.url: the port must be a number 1..65535" },
	{ "{\"upstream_proxy\": {\"url\": \"http://proxy.test:65536\"}}",
	    "1:21: $.upstream_proxy.url: the port must be a number 1..65535" },
	{ "{\"upstream_proxy\": {\"url\": \"http://proxy.test:03128\"}}",
	    "1:21: $.upstream_proxy.url: the port must be a number 1..65535" },
	{ "{\"upstream_proxy\": {\"url\": \"http://proxy.test:+3128\"}}",
	    "1:21: $.upstream_proxy.url: the port must be a number 1..65535" },
	{ "{\"upstream_proxy\": {\"url\": \"http://joe:hunter2@proxy.test:3128\"}}",
	    "1:21: $.upstream_proxy.url: credentials do not go in the URL" },
	{ "{\"upstream_proxy\": {\"url\": \"http://127.0.0.1:3128\"}}",
	    "1:21: $.upstream_proxy.url: a loopback proxy is refused" },
	{ "{\"upstream_proxy\": {\"url\": \"http://169.254.169.254:80\"}}",
	    "1:21: $.upstream_proxy.url: the address is in the never-routable floor" },
	{ "{\"upstream_proxy\": {\"url\": \"http://0.0.0.0:3128\"}}",
	    "1:21: $.upstream_proxy.url: the address is in the never-routable floor" },
	{ "{\"upstream_proxy\": {\"url\": \"http://[::1]:3128\"}}",
	    "1:21: $.upstream_proxy.url: an IPv6 proxy is not supported" },
	{ "{\"upstream_proxy\": {\"url\": \"http://fd00::1:3128\"}}",
	    "1:21: $.upstream_proxy.url: an IPv6 proxy is not supported" },
	{ "{\"upstream_proxy\": {\"url\": \"http://proxy.test:3128/squid\"}}",
	    "1:21: $.upstream_proxy.url: must be \"http://HOST:PORT\", without a path" },
	{ "{\"upstream_proxy\": {\"url\": \"http://proxy.test:3128?x=1\"}}",
	    "1:21: $.upstream_proxy.url: must be \"http://HOST:PORT\", without a path" },
	{ "{\"upstream_proxy\": {\"url\": \"http://pro xy.test:3128\"}}",
	    "1:21: $.upstream_proxy.url: must not contain spaces" },
	{ "{\"upstream_proxy\": {\"url\": \"http://127.1:3128\"}}",
	    "1:21: $.upstream_proxy.url: the host looks like an IP address" },
	{ "{\"upstream_proxy\": {\"url\": \"http://-proxy.test:3128\"}}",
	    "1:21: $.upstream_proxy.url: the host is not a valid host name" },
	{ "{\"upstream_proxy\": {\"url\": \"http://*.test:3128\"}}",
	    "1:21: $.upstream_proxy.url: the host is not a valid host name" },
	{ "{\"upstream_proxy\": {\"url\": \"http://:3128\"}}",
	    "1:21: $.upstream_proxy.url: the host is missing" },
	{ "{\"upstream_proxy\": {\"url\": \"http://10.233.0.5:3128\"}}",
	    "1:21: $.upstream_proxy.url: the address is in address_pool or mapped_pool" },
	{ "{\"upstream_proxy\": {\"url\": \"http://198.19.0.9:3128\"}}",
	    "1:21: $.upstream_proxy.url: the address is in address_pool or mapped_pool" },
	{ "{\"upstream_proxy\": {\"url\": \"http://proxy.test:3128\", \"auth\": 5}}",
	    "1:54: $.upstream_proxy.auth: must be null or a vault secret's name" },
	{ "{\"upstream_proxy\": {\"url\": \"http://proxy.test:3128\", \"auth\": "
	    "\"corp proxy\"}}",
	    "1:54: $.upstream_proxy.auth: must be null or a vault secret's name" },
	{ "{\"upstream_proxy\": {\"url\": \"http://proxy.test:3128\", \"auth\": "
	    "\"-proxy\"}}",
	    "1:54: $.upstream_proxy.auth: must be null or a vault secret's name" },
	{ "{\"upstream_proxy\": {\"url\": \"http://10.1.2.3:3128\", \"auth\": "
	    "\"corp_proxy\"}}",
	    "1:52: $.upstream_proxy.auth: credentials need the proxy named by a host "
	    "name" },
	{ "{\"audit\": {\"syslog\": \"tcp:10.1.2.3:514\"}}",
	    "1:12: $.audit.syslog: must be null or an object" },
	{ "{\"audit\": {\"syslog\": {}}}",
	    "1:12: $.audit.syslog: missing required key \"target\"" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"udp:10.1.2.3:514\"}}}",
	    "1:12: $.audit.syslog: target: must start with \"unix:\", \"tcp:\" or \"tls:\"" },
	{ "{\"audit\": {\"syslog\": {\"target\": 514}}}",
	    "1:12: $.audit.syslog: target: must be a string" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"unix:dev/log\"}}}",
	    "1:12: $.audit.syslog: target: unix: needs an absolute path" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"unix:/run/" "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}}}",
	    "1:12: $.audit.syslog: target: the socket path is longer than 107 bytes" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:10.1.2.3\"}}}",
	    "1:12: $.audit.syslog: target: not HOST:PORT" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:10.1.2.3:0\"}}}",
	    "1:12: $.audit.syslog: target: not HOST:PORT" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:127.0.0.1:514\"}}}",
	    "1:12: $.audit.syslog: target: not HOST:PORT (an IPv4 address outside the floor" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:169.254.169.254:514\"}}}",
	    "1:12: $.audit.syslog: target: not HOST:PORT" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:[::1]:514\"}}}",
	    "1:12: $.audit.syslog: target: not HOST:PORT" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:log.test:514/x\"}}}",
	    "1:12: $.audit.syslog: target: not HOST:PORT" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:joe@log.test:514\"}}}",
	    "1:12: $.audit.syslog: target: not HOST:PORT" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:10.233.0.9:514\"}}}",
	    "1:12: $.audit.syslog: target: the address is in address_pool or mapped_pool" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tls:log.test:6514\"}}}",
	    "1:12: $.audit.syslog: ca: a tls: target needs \"ca\"" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tls:log.test:6514\", \"ca\": \"ca.pem\"}}}",
	    "1:12: $.audit.syslog: ca: must be null or an absolute path" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:log.test:514\", \"ca\": \"/etc/ca.pem\"}}}",
	    "1:12: $.audit.syslog: ca: only for a tls: target" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:log.test:514\", \"queue\": 0}}}",
	    "1:12: $.audit.syslog: queue: must be an integer 1..1000000" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:log.test:514\", \"queue\": 1000001}}}",
	    "1:12: $.audit.syslog: queue: must be an integer 1..1000000" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:log.test:514\", \"queue\": \"9\"}}}",
	    "1:12: $.audit.syslog: queue: must be an integer 1..1000000" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:log.test:514\", \"facility\": \"local8\"}}}",
	    "1:12: $.audit.syslog: facility: must be a facility's name" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:log.test:514\", \"facility\": 16}}}",
	    "1:12: $.audit.syslog: facility: must be a facility's name" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:log.test:514\", \"app_name\": \"air lock\"}}}",
	    "1:12: $.audit.syslog: app_name: must be 1..48 printable ASCII" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:log.test:514\", \"app_name\": \"\"}}}",
	    "1:12: $.audit.syslog: app_name: must be 1..48 printable ASCII" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:log.test:514\", \"app_name\": "
	    "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}}}",
	    "1:12: $.audit.syslog: app_name: must be 1..48 printable ASCII" },
	{ "{\"audit\": {\"syslog\": {\"target\": \"tcp:log.test:514\", \"port\": 514}}}",
	    "1:12: $.audit.syslog: port: unknown key" },
	{ "", " empty: a JSON object is expected" },
	{ " \n", " empty: a JSON object is expected" },
	{ "{\"proxy_port\": 1,}", "1:18: invalid JSON:" },
	{ "{\"proxy_port\": 1} {}", "1:19: invalid JSON:" },
	{ "{\"state_dir\": \"/x\"", "1:18: invalid JSON:" },
};

static const char *full_text =
"{\n"
"  \"state_dir\": \"/srv/airlock\",\n"
"  \"control_socket\": \"/srv/airlock/ctl.sock\",\n"
"  \"proxy_port\": 25001,\n"
"  \"dns_port\": 25053,\n"
"  \"workers\": 4,\n"
"  \"address_pool\": \"10.99.0.0/16\",\n"
"  \"mapped_pool\": \"100.80.0.0/12\",\n"
"  \"upstream_ca_file\": \"/srv/ca.pem\",\n"
"  \"audit\": { \"path\": \"/srv/audit.jsonl\", \"fsync\": \"always\", "
"\"log_query\": true, \"key_file\": \"/srv/audit.key\", \"sign_key\": "
"\"/srv/sign.key\", \"sign_every\": 5, \"max_bytes\": 4096, \"keep\": 100 },\n"
"  \"libvirt_uri\": \"qemu+ssh://host/system\",\n"
"  \"user\": \"_airlock\"\n"
"}\n";

static void
test_defaults(void)
{
	struct airlock_config c;
	char buf[NETADDR_STRLEN];

	config_defaults(&c);
	is_string("/var/lib/airlock", c.state_dir, "default state_dir");
	is_string("/run/airlock/control.sock", c.control_socket,
	    "default control_socket");
	is_int(15001, c.proxy_port, "default proxy_port");
	is_int(15053, c.dns_port, "default dns_port");
	is_int(0, c.workers, "default workers");
	is_string("10.233.0.0", netaddr_fmt(&c.address_pool.nc_addr, buf,
	    sizeof(buf)), "default address_pool");
	is_int(16, c.address_pool.nc_prefix, "default address_pool prefix");
	is_string("198.18.0.0", netaddr_fmt(&c.mapped_pool.nc_addr, buf,
	    sizeof(buf)), "default mapped_pool");
	is_int(15, c.mapped_pool.nc_prefix, "default mapped_pool prefix");
	is_string("", c.upstream_ca_file, "default upstream_ca_file");
	is_string("/var/log/airlock/audit.jsonl", c.audit_path,
	    "default audit path");
	is_int(AUDIT_FSYNC_DENY, c.audit_fsync, "default fsync");
	is_int(0, c.audit_log_query, "default log_query");
	is_string("", c.audit_key_file, "default audit.key_file (null)");
	is_string("", c.audit_sign_key, "default audit.sign_key (null)");
	is_int(1000, c.audit_sign_every, "default audit.sign_every");
	is_int(0, c.audit_max_bytes, "default audit.max_bytes (off)");
	is_int(5, c.audit_keep, "default audit.keep");
	is_string("qemu:///system", c.libvirt_uri, "default libvirt_uri");
	is_string("airlock", c.user, "default user");
	ok(c.pool_idle_ms == 30000 && c.pool_per_host == 4 &&
	    c.pool_per_sandbox == 32 && c.pool_max == 128,
	    "default upstream_pool_* (30000 ms, 4, 32, 128)");
}

static void
test_full(void)
{
	struct airlock_config c;
	char err[512], buf[NETADDR_STRLEN];

	if (!is_int(0, load_text(full_text, &c, NULL, err, sizeof(err)),
	    "full file loads"))
		diag("%s", err);
	is_string("/srv/airlock", c.state_dir, "state_dir");
	is_string("/srv/airlock/ctl.sock", c.control_socket, "control_socket");
	is_int(25001, c.proxy_port, "proxy_port");
	is_int(25053, c.dns_port, "dns_port");
	is_int(4, c.workers, "workers");
	is_string("10.99.0.0", netaddr_fmt(&c.address_pool.nc_addr, buf,
	    sizeof(buf)), "address_pool");
	is_string("100.80.0.0", netaddr_fmt(&c.mapped_pool.nc_addr, buf,
	    sizeof(buf)), "mapped_pool");
	is_int(12, c.mapped_pool.nc_prefix, "mapped_pool prefix");
	is_string("/srv/ca.pem", c.upstream_ca_file, "upstream_ca_file");
	is_string("/srv/audit.jsonl", c.audit_path, "audit.path");
	is_int(AUDIT_FSYNC_ALWAYS, c.audit_fsync, "audit.fsync");
	is_int(1, c.audit_log_query, "audit.log_query");
	is_string("/srv/audit.key", c.audit_key_file, "audit.key_file");
	is_string("/srv/sign.key", c.audit_sign_key, "audit.sign_key");
	is_int(5, c.audit_sign_every, "audit.sign_every");
	is_int(4096, c.audit_max_bytes, "audit.max_bytes (the least)");
	is_int(100, c.audit_keep, "audit.keep (the most)");
	is_string("qemu+ssh://host/system", c.libvirt_uri, "libvirt_uri");
	is_string("_airlock", c.user, "user");

	/* Partial files keep the other defaults; null CA means the system store. */
	ok(load_text("{\"upstream_ca_file\": null, \"audit\": {\"fsync\": "
	    "\"never\", \"key_file\": null}}", &c, NULL, err, sizeof(err)) == 0 &&
	    c.upstream_ca_file[0] == '\0' && c.audit_fsync == AUDIT_FSYNC_NEVER &&
	    c.audit_key_file[0] == '\0' &&
	    c.proxy_port == 15001 && strcmp(c.audit_path,
	    "/var/log/airlock/audit.jsonl") == 0, "partial file");
	ok(load_text("{}", &c, NULL, err, sizeof(err)) == 0 &&
	    c.proxy_port == 15001, "empty object: defaults");
	ok(load_text("{\"proxy_port\": 65535, \"dns_port\": 1, \"workers\": 64}",
	    &c, NULL, err, sizeof(err)) == 0 && c.proxy_port == 65535 &&
	    c.dns_port == 1 && c.workers == 64, "range edges accepted");
	is_int(-1, load_text("{\"workers\": 65}", &c, NULL, err, sizeof(err)),
	    "workers 65 refused (airlockd runs at most 64)");
	ok(strstr(err, "workers: 65 out of range 0..64") != NULL,
	    "... saying the range: %s", err);
	is_int(-1, load_text("{\"dns_port\": 15001}", &c, NULL, err, sizeof(err)),
	    "dns_port equal to the default proxy_port refused");
	ok(strstr(err, "dns_port: proxy_port and dns_port are both 15001: they "
	    "must differ") != NULL, "... naming both keys: %s", err);
	is_int(-1, load_text("{\"proxy_port\": 7, \"dns_port\": 7}", &c, NULL, err,
	    sizeof(err)), "equal ports refused");
	is_int(0, load_text("{\"proxy_port\": 15053, \"dns_port\": 15001}", &c, NULL,
	    err, sizeof(err)), "swapped defaults accepted (positive control)");
	ok(load_text("{\"metrics_listen\": \"127.0.0.1:9345\"}", &c, NULL, err,
	    sizeof(err)) == 0 && c.metrics_on && c.metrics_port == 9345,
	    "metrics_listen 127.0.0.1:9345 accepted");
	ok(load_text("{\"metrics_listen\": \"[::1]:9\"}", &c, NULL, err,
	    sizeof(err)) == 0 && c.metrics_on && c.metrics_port == 9 &&
	    c.metrics_addr.na_family == AF_INET6, "metrics_listen [::1]:9 accepted");
	ok(load_text("{\"metrics_listen\": null}", &c, NULL, err, sizeof(err)) == 0 &&
	    !c.metrics_on, "metrics_listen null: none");
	/* upstream_proxy: a name with credentials, a private address, null. */
	ok(load_text("{\"upstream_proxy\": {\"url\": \"http://Proxy.Corp.Example.:3128\","
	    " \"auth\": \"corp_proxy\"}}", &c, NULL, err, sizeof(err)) == 0 &&
	    c.upstream_proxy_on && !c.upstream_proxy.up_is_addr &&
	    strcmp(c.upstream_proxy.up_host, "proxy.corp.example") == 0 &&
	    c.upstream_proxy.up_port == 3128 &&
	    strcmp(c.upstream_proxy.up_auth, "corp_proxy") == 0,
	    "upstream_proxy by name, with auth: normalised host, port, secret");
	ok(load_text("{\"upstream_proxy\": {\"url\": \"http://10.1.2.3:8080/\", "
	    "\"auth\": null}}", &c, NULL, err, sizeof(err)) == 0 &&
	    c.upstream_proxy_on && c.upstream_proxy.up_is_addr &&
	    strcmp(c.upstream_proxy.up_host, "10.1.2.3") == 0 &&
	    c.upstream_proxy.up_port == 8080 && c.upstream_proxy.up_auth[0] == '\0',
	    "upstream_proxy at a private address (one trailing /), no auth");
	ok(load_text("{\"upstream_proxy\": {\"url\": \"http://11.0.0.2:65535\"}}",
	    &c, NULL, err, sizeof(err)) == 0 && c.upstream_proxy.up_port == 65535,
	    "upstream_proxy at a public address, port 65535");
	/* The pools are checked once all keys are in: a moved pool frees the address. */
	ok(load_text("{\"upstream_proxy\": {\"url\": \"http://10.233.0.5:3128\"}, "
	    "\"address_pool\": \"10.50.0.0/16\"}", &c, NULL, err, sizeof(err)) == 0 &&
	    c.upstream_proxy_on, "upstream_proxy in the default address_pool, moved "
	    "away: accepted");
	ok(load_text("{\"upstream_proxy\": null}", &c, NULL, err, sizeof(err)) == 0 &&
	    !c.upstream_proxy_on, "upstream_proxy null: direct");
	is_int(-1, load_text("{\"upstream_proxy\": {\"url\": "
	    "\"http://joe:Canary-Pw-7@proxy.test:3128\"}}", &c, NULL, err,
	    sizeof(err)), "a password in the URL refused");
	ok(strstr(err, "Canary-Pw-7") == NULL && strstr(err, "joe") == NULL,
	    "... without quoting it: %s", err);
	ok(load_text("{\"upstream_pool_idle_ms\": 600000, \"upstream_pool_per_host\": 0, "
	    "\"upstream_pool_per_sandbox\": 1024, \"upstream_pool_max\": 4096}", &c,
	    NULL, err, sizeof(err)) == 0 && c.pool_idle_ms == 600000 &&
	    c.pool_per_host == 0 && c.pool_per_sandbox == 1024 &&
	    c.pool_max == 4096, "upstream_pool_* range edges accepted");
	/* A short err buffer truncates safely; errlen 0 writes nothing. */
	memset(err, 'X', sizeof(err));
	is_int(-1, load_text("{\"workers\": 257}", &c, NULL, err, 8),
	    "short err buffer");
	is_int(7, (long long)strlen(err), "short err buffer: truncated, NUL-ended");
	err[0] = 'X';
	is_int(-1, load_text("{\"workers\": 257}", &c, NULL, err, 0),
	    "errlen 0");
	is_int('X', err[0], "errlen 0: err untouched");
}

static void
test_errors(void)
{
	struct airlock_config c;
	char err[512], want[PATH_MAX + 512];
	size_t i;

	/* The echo check itself can fail (positive control). */
	ok(echoes_value("{\"audit\": {\"path\": \"/var/secretive\"}}",
	    "x: $.audit.path: /var/secretive is wrong"),
	    "echoes_value() sees a value repeated in a message");
	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		config_defaults(&c);
		c.proxy_port = 4242;
		is_int(-1, load_text(bad_cases[i].text, &c, NULL, err, sizeof(err)),
		    "bad config %zu refused", i);
		snprintf(want, sizeof(want), "%s:%s", cfgpath, bad_cases[i].want);
		if (!ok(strncmp(err, want, strlen(want)) == 0,
		    "bad config %zu message", i))
			diag("want \"%s...\"\n got \"%s\"", want, err);
		ok(strchr(err, '\n') == NULL, "bad config %zu: one line", i);
		ok(strstr(err, "invalid JSON:") != NULL ||
		    !echoes_value(bad_cases[i].text, err),
		    "bad config %zu: no value echoed", i);
		is_int(4242, c.proxy_port, "bad config %zu: *c untouched", i);
	}
}

/* audit.syslog: off by default; each transport and key as written (controls). */
static void
test_syslog(void)
{
	struct airlock_config c;
	char err[512];

	ok(load_text("{}", &c, NULL, err, sizeof(err)) == 0 && !c.syslog_on &&
	    c.syslog_queue == 10000 && c.syslog_facility == 16 &&
	    strcmp(c.syslog_app, "airlock") == 0, "audit.syslog: off by default");
	ok(load_text("{\"audit\": {\"syslog\": null}}", &c, NULL, err,
	    sizeof(err)) == 0 && !c.syslog_on, "audit.syslog null: off");
	ok(load_text("{\"audit\": {\"syslog\": {\"target\": \"unix:/dev/log\"}}}",
	    &c, NULL, err, sizeof(err)) == 0 && c.syslog_on &&
	    c.syslog_proto == AUDIT_SYSLOG_UNIX &&
	    strcmp(c.syslog_path, "/dev/log") == 0, "unix: target: %s", err);
	ok(load_text("{\"audit\": {\"syslog\": {\"target\": \"tcp:10.1.2.3:514\", "
	    "\"queue\": 5, \"facility\": \"auth\", \"app_name\": \"gw-1\"}}}", &c,
	    NULL, err, sizeof(err)) == 0 && c.syslog_on &&
	    c.syslog_proto == AUDIT_SYSLOG_TCP && c.syslog_host_is_addr &&
	    strcmp(c.syslog_host, "10.1.2.3") == 0 && c.syslog_port == 514 &&
	    c.syslog_queue == 5 && c.syslog_facility == 4 &&
	    strcmp(c.syslog_app, "gw-1") == 0, "tcp: target with every key: %s",
	    err);
	ok(load_text("{\"audit\": {\"syslog\": {\"target\": \"tls:Log.Test:6514\", "
	    "\"ca\": \"/etc/airlock/log-ca.pem\"}}}", &c, NULL, err,
	    sizeof(err)) == 0 && c.syslog_on && c.syslog_proto == AUDIT_SYSLOG_TLS &&
	    !c.syslog_host_is_addr && strcmp(c.syslog_host, "log.test") == 0 &&
	    c.syslog_port == 6514 &&
	    strcmp(c.syslog_ca, "/etc/airlock/log-ca.pem") == 0,
	    "tls: target by name with its CA: %s", err);
}

static void
test_paths(void)
{
	struct airlock_config c;
	char err[512], p[PATH_MAX + 64], dir[512];
	const char *tmp = tap_tmpdir();

	unsetenv("AIRLOCK_CONFIG");
	unsetenv("AIRLOCK_STATE_DIR");

	/* An explicit missing file is an error, with the path and errno text. */
	snprintf(p, sizeof(p), "%s/missing.json", tmp);
	is_int(-1, config_load(&c, p, NULL, err, sizeof(err)),
	    "explicit missing file refused");
	ok(strstr(err, "missing.json: No such file") != NULL, "says so: %s", err);
	is_int(-1, config_load(&c, tmp, NULL, err, sizeof(err)),
	    "a directory refused");

	/* $AIRLOCK_CONFIG names the file; missing is an error there too. */
	setenv("AIRLOCK_CONFIG", p, 1);
	is_int(-1, config_load(&c, NULL, NULL, err, sizeof(err)),
	    "missing $AIRLOCK_CONFIG file refused");
	write_file(cfgpath, "{\"proxy_port\": 3128}");
	setenv("AIRLOCK_CONFIG", cfgpath, 1);
	ok(config_load(&c, NULL, NULL, err, sizeof(err)) == 0 &&
	    c.proxy_port == 3128, "$AIRLOCK_CONFIG used");
	snprintf(p, sizeof(p), "%s/other.json", tmp);
	write_file(p, "{\"proxy_port\": 8080}");
	ok(config_load(&c, p, NULL, err, sizeof(err)) == 0 &&
	    c.proxy_port == 8080, "explicit path beats $AIRLOCK_CONFIG");
	unsetenv("AIRLOCK_CONFIG");

	/* The default path: whatever this machine has, absent means defaults. */
	if (access(CONFIG_DEFAULT_PATH, F_OK) == -1)
		ok(config_load(&c, NULL, NULL, err, sizeof(err)) == 0 &&
		    c.proxy_port == 15001, "absent default file: defaults");
	else
		skip("%s exists here", CONFIG_DEFAULT_PATH);

	/* State dir overrides and the paths derived from them. */
	snprintf(dir, sizeof(dir), "%s/state", tmp);
	write_file(cfgpath, "{\"state_dir\": \"/srv/x\"}");
	setenv("AIRLOCK_STATE_DIR", dir, 1);
	if (!is_int(0, config_load(&c, cfgpath, NULL, err, sizeof(err)),
	    "AIRLOCK_STATE_DIR load"))
		diag("%s", err);
	is_string(dir, c.state_dir, "AIRLOCK_STATE_DIR beats the file");
	snprintf(p, sizeof(p), "%s/audit.jsonl", dir);
	is_string(p, c.audit_path, "audit path follows the state dir");
	snprintf(p, sizeof(p), "%s/control.sock", dir);
	is_string(p, c.control_socket, "control socket follows the state dir");

	snprintf(p, sizeof(p), "%s/arg/", tmp);
	ok(config_load(&c, cfgpath, p, err, sizeof(err)) == 0, "--state-dir load");
	snprintf(p, sizeof(p), "%s/arg", tmp);
	is_string(p, c.state_dir, "--state-dir beats the env, trailing / dropped");
	unsetenv("AIRLOCK_STATE_DIR");

	write_file(cfgpath, "{\"audit\": {\"path\": \"/srv/a.jsonl\"}, "
	    "\"control_socket\": \"/srv/c.sock\"}");
	ok(config_load(&c, cfgpath, dir, err, sizeof(err)) == 0 &&
	    strcmp(c.state_dir, dir) == 0 &&
	    strcmp(c.audit_path, "/srv/a.jsonl") == 0 &&
	    strcmp(c.control_socket, "/srv/c.sock") == 0,
	    "paths set in the file are kept with --state-dir");
	write_file(cfgpath, "{}");
	ok(config_load(&c, cfgpath, NULL, err, sizeof(err)) == 0 &&
	    strcmp(c.audit_path, "/var/log/airlock/audit.jsonl") == 0,
	    "no override: default audit path");

	/* A relative --state-dir is taken from the current directory. */
	if (getcwd(p, sizeof(p)) == NULL)
		bail("getcwd");
	if (chdir(tmp) == -1)
		bail("chdir");
	ok(config_load(&c, cfgpath, "rel", err, sizeof(err)) == 0 &&
	    strcmp(c.state_dir, dir) != 0 &&
	    strncmp(c.state_dir, "/", 1) == 0 &&
	    strcmp(c.state_dir + strlen(c.state_dir) - 4, "/rel") == 0,
	    "relative --state-dir made absolute: %s", c.state_dir);
	if (chdir(p) == -1)
		bail("chdir back");
	is_int(-1, config_load(&c, cfgpath, "", err, sizeof(err)),
	    "empty --state-dir refused");
	ok(strstr(err, "--state-dir: state_dir: must not be empty") != NULL,
	    "empty --state-dir message: %s", err);
	setenv("AIRLOCK_STATE_DIR", "", 1);
	ok(config_load(&c, cfgpath, NULL, err, sizeof(err)) == 0 &&
	    strcmp(c.state_dir, "/var/lib/airlock") == 0,
	    "empty AIRLOCK_STATE_DIR ignored");
	unsetenv("AIRLOCK_STATE_DIR");

	/* A state dir too deep for a socket path, unless control_socket is set. */
	memset(dir, 'd', 120);
	dir[0] = '/';
	dir[120] = '\0';
	is_int(-1, config_load(&c, cfgpath, dir, err, sizeof(err)),
	    "derived control socket too long refused");
	ok(strstr(err, "control_socket:") != NULL, "says control_socket: %s", err);
	write_file(cfgpath, "{\"control_socket\": \"/srv/c.sock\"}");
	ok(config_load(&c, cfgpath, dir, err, sizeof(err)) == 0,
	    "long state dir fine with an explicit control_socket");

	/* Huge file refused before parsing. */
	{
		FILE *f;
		int i;

		if ((f = fopen(cfgpath, "w")) == NULL)
			bail("fopen");
		for (i = 0; i < 1100 * 1024 / 16; i++)
			fputs("                ", f);
		fclose(f);
		is_int(-1, config_load(&c, cfgpath, NULL, err, sizeof(err)),
		    "file over 1 MiB refused");
	}
}

int
main(void)
{
	plan_lazy();
	snprintf(cfgpath, sizeof(cfgpath), "%s/airlock.json", tap_tmpdir());
	unsetenv("AIRLOCK_CONFIG");
	unsetenv("AIRLOCK_STATE_DIR");
	test_defaults();
	test_full();
	test_errors();
	test_syslog();
	test_paths();
	return 0;
}
