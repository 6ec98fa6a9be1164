/* SPDX-License-Identifier: MIT */
/*
 * api_fx.c - what test_api.c and test_baseline_api.c share, included by
 * both (as fake_queryable.c is): the fixture (an in-memory store and its
 * queryable, released by teardown) and one API request run in process.
 * Every helper here is used by both files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_queryable.c"
#include "http/api.h"

struct fix {
	struct gw_fakeq *f;
	struct gw_queryable q;
};

static int teardown(void **state)
{
	struct fix *x = *state;

	gw_fakeq_free(x->f);
	free(x);
	return 0;
}

/*
 * Runs rq (its path and times; its parameters are the "name=value"
 * strings of ap, up to a NULL) on q with o, the reply bounded by max
 * when not 0.  The HTTP status; *body: the reply's body, the caller's to
 * free.
 */
static unsigned int api_run(const struct gw_queryable *q,
			    const struct gw_api_opts *o,
			    struct gw_api_request *rq, size_t max, char **body,
			    va_list ap)
{
	struct gw_api_params p = { 0 };
	struct gw_api_reply r;
	unsigned int status;
	const char *kv;

	while ((kv = va_arg(ap, const char *)) != NULL) {
		const char *eq = strchr(kv, '=');
		char name[64];

		assert_non_null(eq);
		snprintf(name, sizeof(name), "%.*s", (int)(eq - kv), kv);
		assert_int_equal(gw_api_params_add(&p, name, eq + 1), 0);
	}
	rq->params = &p;
	gw_api_reply_init(&r);
	if (max)
		r.body.max = max;
	assert_int_equal(gw_api_handle(q, o, rq, &r), 0);
	rq->params = NULL;
	status = r.status;
	*body = gw_buf_detach(&r.body, NULL);
	assert_non_null(*body);
	gw_api_reply_release(&r);
	gw_api_params_release(&p);
	return status;
}
