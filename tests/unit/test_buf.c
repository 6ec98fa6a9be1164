/* SPDX-License-Identifier: MIT */
/* The bounded buffer: checked appends, and the sticky error of the unchecked ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

/* A checked append that does not fit changes nothing: the next one may fit. */
static void checked_append_fails_alone(void **state)
{
	struct gw_buf b;

	(void)state;
	gw_buf_init(&b, 8); /* 7 bytes and the NUL */
	assert_int_equal(gw_buf_adds(&b, "abc"), 0);
	assert_int_equal(gw_buf_adds(&b, "defgh"), -ENOSPC);
	assert_int_equal(gw_buf_printf(&b, "%d", 12345), -ENOSPC);
	assert_string_equal(b.p, "abc");
	assert_int_equal(b.len, 3);
	assert_int_equal(gw_buf_error(&b), 0);
	assert_int_equal(gw_buf_adds(&b, "defg"), 0);
	assert_string_equal(b.p, "abcdefg");
	assert_int_equal(gw_buf_add(&b, "", 0), 0);
	assert_int_equal(gw_buf_add(&b, "x", 1), -ENOSPC);
	gw_buf_release(&b);
}

/* The first unchecked failure is kept, content as before it; later appends do nothing. */
static void first_error_sticks(void **state)
{
	struct gw_buf b;

	(void)state;
	gw_buf_init(&b, 8);
	gw_buf_puts(&b, "ab");
	gw_buf_putf(&b, "%c", 'c');
	assert_int_equal(gw_buf_error(&b), 0);
	gw_buf_put(&b, "defgh", 5);
	assert_int_equal(gw_buf_error(&b), -ENOSPC);
	assert_string_equal(b.p, "abc");
	assert_int_equal(b.len, 3);

	/* These would fit, but the text is already incomplete. */
	gw_buf_puts(&b, "d");
	gw_buf_put(&b, "e", 1);
	gw_buf_putf(&b, "%s", "f");
	assert_string_equal(b.p, "abc");
	assert_int_equal(b.len, 3);
	assert_int_equal(gw_buf_error(&b), -ENOSPC);

	/* Checked appends return the kept error and append nothing either. */
	assert_int_equal(gw_buf_adds(&b, "d"), -ENOSPC);
	assert_int_equal(gw_buf_add(&b, "d", 1), -ENOSPC);
	assert_int_equal(gw_buf_printf(&b, "%s", "d"), -ENOSPC);
	assert_string_equal(b.p, "abc");

	/* The first error is the one kept. */
	gw_buf_set_error(&b, -EINVAL);
	assert_int_equal(gw_buf_error(&b), -ENOSPC);
	gw_buf_release(&b);
}

/* A formatted append that does not fit leaves the content, NUL included. */
static void putf_overflow_keeps_content(void **state)
{
	struct gw_buf b;

	(void)state;
	gw_buf_init(&b, 4);
	gw_buf_putf(&b, "%s", "hello"); /* nothing allocated yet */
	assert_int_equal(gw_buf_error(&b), -ENOSPC);
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	gw_buf_release(&b);

	gw_buf_init(&b, 300);
	gw_buf_putf(&b, "%s", "12");  /* 256 bytes allocated */
	gw_buf_putf(&b, "%0290d", 7); /* fits the max, not the allocation */
	assert_int_equal(gw_buf_error(&b), 0);
	assert_int_equal(b.len, 292);
	gw_buf_putf(&b, "%020d", 7); /* written into spare room, then refused */
	assert_int_equal(gw_buf_error(&b), -ENOSPC);
	assert_int_equal(b.len, 292);
	assert_int_equal(strlen(b.p), 292);
	assert_int_equal(b.p[291], '7');
	gw_buf_release(&b);
}

/* Reset empties and forgets the error; the buffer is usable again. */
static void reset_clears_error(void **state)
{
	struct gw_buf b;

	(void)state;
	gw_buf_init(&b, 8);
	gw_buf_puts(&b, "toolongtext");
	assert_int_equal(gw_buf_error(&b), -ENOSPC);
	gw_buf_reset(&b);
	assert_int_equal(gw_buf_error(&b), 0);
	assert_int_equal(b.len, 0);
	gw_buf_puts(&b, "fits");
	assert_int_equal(gw_buf_error(&b), 0);
	assert_string_equal(b.p, "fits");

	gw_buf_set_error(&b, 0); /* no error to keep */
	assert_int_equal(gw_buf_error(&b), 0);
	gw_buf_set_error(&b, -EINVAL);
	assert_int_equal(gw_buf_error(&b), -EINVAL);
	assert_int_equal(gw_buf_adds(&b, "x"), -EINVAL);
	free(gw_buf_detach(&b, NULL));
	assert_int_equal(gw_buf_error(&b), 0);
	gw_buf_release(&b);
}

/* Truncate undoes a failed sequence: content back to the mark, error gone. */
static void truncate_undoes_sequence(void **state)
{
	struct gw_buf b;
	size_t mark;

	(void)state;
	gw_buf_init(&b, 16);
	gw_buf_puts(&b, "a=1");
	mark = b.len;
	gw_buf_puts(&b, ",b=2");
	gw_buf_puts(&b, ",c=333333333");
	assert_int_equal(gw_buf_error(&b), -ENOSPC);
	assert_string_equal(b.p, "a=1,b=2");
	gw_buf_truncate(&b, mark);
	assert_int_equal(gw_buf_error(&b), 0);
	assert_string_equal(b.p, "a=1");
	assert_int_equal(b.len, 3);
	gw_buf_puts(&b, ",c=3");
	assert_int_equal(gw_buf_error(&b), 0);
	assert_string_equal(b.p, "a=1,c=3");
	gw_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(checked_append_fails_alone),
		cmocka_unit_test(first_error_sticks),
		cmocka_unit_test(putf_overflow_keeps_content),
		cmocka_unit_test(reset_clears_error),
		cmocka_unit_test(truncate_undoes_sequence),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
