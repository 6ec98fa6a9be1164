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
 * Table-driven, one byte at a time; the table is constant.  Pure function,
 * thread-safe; n = 0 returns crc unchanged.
 */
#ifndef GW_CRC32C_H
#define GW_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t gw_crc32c(uint32_t crc, const void *p, size_t n);

#endif
