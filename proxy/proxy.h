/*
 * proxy/proxy.h: airlockd's entry point (proxy.c: start-up and the daemon's life),
 * used by main.c.  The parts of the daemon each have their own header, named after
 * the file that defines it: proxy_registry.h, proxy_globals.h, proxy_audit.h,
 * proxy_ctl.h, proxy_map.h, proxy_dns.h, proxy_netwatch.h, proxy_path.h (the
 * connection path; its workers at the top); proxy_core.h is what only the core shares.
 */
#ifndef AIRLOCK_PROXY_H
#define AIRLOCK_PROXY_H

/* proxy.c: the daemon's life */
struct json_t;
struct proxy_opts {
	const char	*po_config;	/* --config, or NULL */
	const char	*po_state_dir;	/* --state-dir, or NULL */
	int		 po_foreground;
	int		 po_check;	/* -n: check config and recorded policies, exit */
	int		 po_verbose;
};
/* Runs airlockd; returns the process exit status. */
int	proxy_main(const struct proxy_opts *o);

#endif
