/* SPDX-License-Identifier: MIT */
/*
 * crc32c.h - CRC-32C (Castagnoli, reflected polynomial 0x82f63b78), the
 * checksum of the sample chunks (store/chunk.c) and the rollup chunks
 * (store/rollup.c).
 *
 * The usual convention, as zlib's crc32(): gw_crc32c(0, p, n) is the
 * finished CRC of p[0..n) (initial value and final XOR ~0 are applied
 * inside), and passing a previous result as crc continues it, so
 * gw_crc32c(gw_crc32c(0, a, na), b, nb) is the CRC of a followed by b.
 * The check value: gw_crc32c(0, "123456789", 9) == 0xe3069283.
 *
 * The processor's CRC-32C instruction where it has one (x86-64 with
 * SSE4.2, detected at the first call; AArch64 built with the CRC
 * extension), else table-driven, one byte at a time.  Pure function,
 * thread-safe; n = 0 returns crc unchanged.
 */
#ifndef GW_CRC32C_H
#define GW_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t gw_crc32c(uint32_t crc, const void *p, size_t n);

/* The table-driven version, whatever the processor (tests compare). */
uint32_t gw_crc32c_portable(uint32_t crc, const void *p, size_t n);

/* 1 when gw_crc32c() uses the processor's instruction. */
int gw_crc32c_hardware(void);

#endif
