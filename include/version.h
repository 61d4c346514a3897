/*
 * include/version.h: the version both binaries print (--version).  Raised by hand
 * when a release is tagged.
 */
#ifndef AIRLOCK_VERSION_H
#define AIRLOCK_VERSION_H

#define AIRLOCK_VERSION	"0.2.0"

#endif
