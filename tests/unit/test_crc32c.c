/* SPDX-License-Identifier: MIT */
/* CRC-32C: the check value, continuation, and the processor's instruction
 * agreeing with the table at every length and alignment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"

/* The standard check value, and the empty input leaving crc unchanged. */
static void check_value(void **state)
{
	(void)state;
	assert_int_equal(gw_crc32c(0, "123456789", 9), 0xe3069283);
	assert_int_equal(gw_crc32c_portable(0, "123456789", 9), 0xe3069283);
	assert_int_equal(gw_crc32c(0x1234, "", 0), 0x1234);
	/* RFC 3720's 32 zero bytes and 32 0xff bytes. */
	{
		uint8_t z[32], f[32];

		memset(z, 0, sizeof(z));
		memset(f, 0xff, sizeof(f));
		assert_int_equal(gw_crc32c(0, z, 32), 0x8a9136aa);
		assert_int_equal(gw_crc32c(0, f, 32), 0x62a8ab43);
	}
}

/* Every length from 0 to 300 at every alignment 0..7, split anywhere: the
 * same CRC from the instruction as from the table, and a CRC continued
 * over two parts equal to the whole's. */
static void matches_table(void **state)
{
	uint8_t buf[320];
	uint32_t seed = 12345;

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (uint8_t)(seed >> 16);
	}
	printf("# crc32c: %s\n", gw_crc32c_hardware()
					 ? "the processor's instruction"
					 : "the table");
	for (size_t off = 0; off < 8; off++)
		for (size_t n = 0; n <= 300; n++) {
			uint32_t want = gw_crc32c_portable(0, buf + off, n);

			assert_int_equal(gw_crc32c(0, buf + off, n), want);
			for (size_t k = 0; k <= n; k += 7)
				assert_int_equal(
					gw_crc32c(gw_crc32c(0, buf + off, k),
						  buf + off + k, n - k),
					want);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(check_value),
		cmocka_unit_test(matches_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
