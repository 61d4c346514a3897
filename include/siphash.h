/*
 * include/siphash.h: SipHash-2-4, for tables whose keys an untrusted peer chooses
 * (the proxy's DNS maps, the audit log's denial aggregates).  Implemented in
 * lib/siphash.c.
 */
#ifndef AIRLOCK_SIPHASH_H
#define AIRLOCK_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/* SipHash-2-4 of len bytes under a 16-byte key. */
uint64_t siphash24(const uint8_t key[16], const void *data, size_t len);

#endif
