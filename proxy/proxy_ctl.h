/*
 * proxy/proxy_ctl.h: the control socket (proxy_ctl.c) and its command table type.
 */
#ifndef AIRLOCK_PROXY_CTL_H
#define AIRLOCK_PROXY_CTL_H

#include <sys/types.h>

#include <stddef.h>

struct event_base;

/* proxy_ctl.c: the control socket */
/*
 * Creates the listening control socket at path (0600; its directory made 0700 if
 * missing; a stale socket removed).  Refuses if another daemon answers there.
 * Returns the fd, or -1 with one line in err.
 */
int	proxy_ctl_open(const char *path, char *err, size_t errlen);
/*
 * One control command (include/control.h lists them).  cm_wants_name: the request
 * carries a "name", checked with sandbox_name_is_valid() before cm_fn runs (else
 * name is NULL).  cm_log: the control socket logs it ("control: CMD [NAME] (uid N)").
 * cm_fn runs on the main thread and returns the reply object ({"ok":true,...} or
 * {"ok":false,"error":...}), released by the caller with json_decref().  A table
 * ends with a NULL cm_name.
 */
struct proxy_ctl_cmd {
	const char	*cm_name;
	int		 cm_wants_name;
	int		 cm_log;
	struct json_t	*(*cm_fn)(const char *name);
	/*
	 * Or, for a command with more arguments: the whole request (every key
	 * checked by the command itself) and the client's uid (SO_PEERCRED).
	 */
	struct json_t	*(*cm_req_fn)(struct json_t *req, uid_t uid);
};
struct proxy_ctl;
/*
 * Serves fd (taken over) on base with the commands of cmds (borrowed: it must
 * outlive the server).  Returned server freed with proxy_ctl_free().
 */
struct proxy_ctl *proxy_ctl_new(struct event_base *base, int fd,
	    const struct proxy_ctl_cmd *cmds);
void	proxy_ctl_free(struct proxy_ctl *c);

#endif
