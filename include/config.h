/*
 * include/config.h: airlock.json, airlockd's and the CLI's configuration file
 * (docs/CONFIGURATION.md is its reference).  Every key has a default; unknown keys
 * and wrong types are errors.  Implemented in lib/config.c.
 */
#ifndef AIRLOCK_CONFIG_H
#define AIRLOCK_CONFIG_H

#include <limits.h>
#include <stdint.h>

#include "netaddr.h"
#include "upstream.h"

#define CONFIG_DEFAULT_PATH	"/etc/airlock/airlock.json"
/* "workers": at most this many event loops (0 counts the CPUs, up to it). */
#define CONFIG_WORKERS_MAX	64
/* The upstream_pool_* keys' upper bounds. */
#define CONFIG_POOL_IDLE_MS_MAX	600000
#define CONFIG_POOL_PER_HOST_MAX	64
#define CONFIG_POOL_PER_SANDBOX_MAX	1024
#define CONFIG_POOL_MAX		4096
/* audit.sign_every, audit.max_bytes (or 0), audit.keep: their bounds. */
#define CONFIG_SIGN_EVERY_MAX	1000000
#define CONFIG_AUDIT_MAX_BYTES_MIN	4096
#define CONFIG_AUDIT_MAX_BYTES_MAX	(1LL << 40)	/* 1 TiB */
#define CONFIG_AUDIT_KEEP_MAX		100

/* audit.syslog: its transports, the queue's bounds, APP-NAME's length. */
enum audit_syslog_proto {
	AUDIT_SYSLOG_UNIX = 0,		/* "unix:/PATH": datagrams */
	AUDIT_SYSLOG_TCP,		/* "tcp:HOST:PORT": octet counting */
	AUDIT_SYSLOG_TLS,		/* "tls:HOST:PORT": the same in TLS */
};
#define CONFIG_SYSLOG_QUEUE_MAX		1000000
#define CONFIG_SYSLOG_QUEUE_DEFAULT	10000
#define CONFIG_SYSLOG_APP_MAX		48

/* audit.fsync: when the audit log's writer calls fsync(2). */
enum audit_fsync {
	AUDIT_FSYNC_NEVER = 0,		/* flush only */
	AUDIT_FSYNC_DENY,		/* fsync before a denial takes effect (default) */
	AUDIT_FSYNC_ALWAYS,		/* fsync every record */
};

struct airlock_config {
	char		state_dir[PATH_MAX];		/* /var/lib/airlock */
	char		control_socket[PATH_MAX];	/* /run/airlock/control.sock */
	uint16_t	proxy_port;			/* 15001 */
	uint16_t	dns_port;			/* 15053 */
	unsigned int	workers;			/* 0: one per core */
	struct netaddr_cidr address_pool;		/* 10.233.0.0/16 */
	struct netaddr_cidr mapped_pool;		/* 198.18.0.0/15 */
	char		upstream_ca_file[PATH_MAX];	/* "": system trust store */
	char		audit_path[PATH_MAX];		/* /var/log/airlock/audit.jsonl */
	enum audit_fsync audit_fsync;			/* "deny" */
	int		audit_log_query;		/* false */
	char		audit_key_file[PATH_MAX];	/* "" (null): plain SHA-256 chain */
							/* (key "audit.key_file"): an HMAC */
							/* key file (audit_key_load()); */
							/* airlockd reads it as root at */
							/* start and writes the chain */
							/* keyed with it */
	char		audit_sign_key[PATH_MAX];	/* "" (null): no checkpoints; */
							/* (key "audit.sign_key") an */
							/* Ed25519 key file the root */
							/* reader gives the keys process */
	long long	audit_sign_every;		/* 1000 records */
	long long	audit_max_bytes;		/* 0: no rotation by size */
	unsigned int	audit_keep;			/* 5 rotated files */
	/*
	 * audit.syslog: null (syslog_on 0), or a collector every record goes to
	 * as it is written (proxy/proxy_syslog.c).
	 */
	int		syslog_on;
	enum audit_syslog_proto syslog_proto;
	char		syslog_path[108];		/* unix: the socket */
	char		syslog_host[HOSTNAME_MAX + 1];	/* tcp, tls: a name or IPv4 */
	int		syslog_host_is_addr;		/* ... an IPv4 literal: */
	struct netaddr	syslog_addr;
	uint16_t	syslog_port;
	char		syslog_ca[PATH_MAX];		/* tls: the CAs' PEM file */
	unsigned int	syslog_queue;			/* 10000 records */
	int		syslog_facility;		/* 16: local0 */
	char		syslog_app[CONFIG_SYSLOG_APP_MAX + 1];	/* "airlock" */
	char		libvirt_uri[256];		/* qemu:///system */
	char		user[64];			/* "airlock": airlockd drops to it */
	int		metrics_on;			/* metrics_listen: null (0) */
	struct netaddr	metrics_addr;			/* a loopback address */
	uint16_t	metrics_port;
	int		upstream_proxy_on;		/* upstream_proxy: null (0) */
	struct upstream_proxy upstream_proxy;		/* when on (include/upstream.h) */
	/*
	 * Idle upstream connections kept for a later inspected connection
	 * (proxy/proxy_pool.c), per worker thread; any of them 0: none kept.
	 */
	unsigned int	pool_idle_ms;			/* upstream_pool_idle_ms: 30000 */
	unsigned int	pool_per_host;			/* upstream_pool_per_host: 4 */
	unsigned int	pool_per_sandbox;		/* upstream_pool_per_sandbox: 32 */
	unsigned int	pool_max;			/* upstream_pool_max: 128 */
};

/* Fills every field with its default. */
void	config_defaults(struct airlock_config *c);

/*
 * Resolves the config path: explicit (from --config) if not NULL, else $AIRLOCK_CONFIG,
 * else CONFIG_DEFAULT_PATH.  Loads it over the defaults; a missing file at the default
 * path (not given explicitly) means all defaults.  Then $AIRLOCK_STATE_DIR (and a
 * non-NULL state_dir argument, e.g. --state-dir) override state_dir.  Returns 0, or -1
 * with one line in err ("FILE:LINE:COL: key: reason"; nested keys as "audit.fsync").
 * *c is written only on success.
 *
 * Checks: duplicate and unknown keys, types, ports 1..65535, workers 0..256, pools
 * as strict IPv4 CIDRs /8../30 with neither end in the floor and not overlapping each
 * other, paths absolute
 * (control_socket short enough for sun_path), audit.fsync "never"|"deny"|"always",
 * audit.key_file and audit.sign_key null or an absolute path,
 * audit.sign_every 1..CONFIG_SIGN_EVERY_MAX, audit.max_bytes 0 or
 * CONFIG_AUDIT_MAX_BYTES_MIN..MAX, audit.keep 1..CONFIG_AUDIT_KEEP_MAX, user a
 * portable user name, upstream_proxy null or {"url": "http://HOST:PORT", "auth":
 * null | "SECRET"} (upstream_url_parse(); an IPv4 literal not in either pool; auth
 * only with a host name, which the vault can bind the secret to), the
 * upstream_pool_* integers within 0..CONFIG_POOL_*_MAX, audit.syslog null or
 * {"target", "ca", "queue", "facility", "app_name"} (docs/CONFIGURATION.md).
 *
 * When state_dir is overridden (--state-dir wins over $AIRLOCK_STATE_DIR; an empty
 * $AIRLOCK_STATE_DIR is ignored; a relative directory is taken from the current
 * directory), audit_path becomes STATE_DIR/audit.jsonl and control_socket
 * STATE_DIR/control.sock unless the file sets audit.path / control_socket itself, so
 * a run with --state-dir touches nothing under /var or /run.
 */
int	config_load(struct airlock_config *c, const char *path, const char *state_dir,
	    char *err, size_t errlen);

/*
 * The keys config_load() accepts, one at a time: the i-th (from 0) into buf, as
 * "state_dir" or, for the keys of the "audit" object (after the top-level ones),
 * "audit.path".  Returns 0, or -1 past the last key (or for a buf too short).  The
 * list is read from the tables the loader looks keys up in, so it names every key
 * the file may hold (tests/unit/docs_config.c holds docs/CONFIGURATION.md to it).
 */
int	config_key_name(size_t i, char *buf, size_t len);

#endif
