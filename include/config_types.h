/*
 * include/config_types.h: types of airlock.json that parts above lib/ take as they
 * are (types only, no prototypes; belongs to lib/ with config.h).  audit.h takes
 * enum audit_fsync from here, so config.h needs nothing from audit/.
 */
#ifndef AIRLOCK_CONFIG_TYPES_H
#define AIRLOCK_CONFIG_TYPES_H

/* audit.fsync: when the audit log's writer calls fsync(2). */
enum audit_fsync {
	AUDIT_FSYNC_NEVER = 0,		/* flush only */
	AUDIT_FSYNC_DENY,		/* fsync before a denial takes effect (default) */
	AUDIT_FSYNC_ALWAYS,		/* fsync every record */
};

#endif
