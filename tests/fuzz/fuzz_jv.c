// SPDX-License-Identifier: MIT
/*
 * fuzz_jv.c - the JSON reader of gpuwatch query and top (src/cli/jv.c) on
 * arbitrary bytes, as an agent, or anything answering on its port, could
 * send them.
 *
 * Beyond not crashing: a success is a well-formed tree (strings, numbers
 * and booleans have text, objects have a key per member, a container's
 * count matches), lookups on it hold, and gw_jv_release() leaves a zeroed
 * value that can be released again; a failure is -EINVAL or -ENOMEM and
 * leaves an empty tree.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/jv.h"
#include "fuzz.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

static void walk(const struct gw_jv *j, int depth)
{
	CHECK(depth <= 65);
	switch (j->t) {
	case GW_JV_NULL:
		CHECK(!j->s && !j->n);
		break;
	case GW_JV_BOOL:
	case GW_JV_NUM:
		CHECK(j->s && *j->s && !j->n);
		break;
	case GW_JV_STR:
		CHECK(j->s && !j->n);
		CHECK(!strcmp(gw_jv_str(j), j->s));
		break;
	case GW_JV_ARR:
	case GW_JV_OBJ:
		CHECK(!j->n || j->v);
		for (size_t i = 0; i < j->n; i++) {
			if (j->t == GW_JV_OBJ) {
				CHECK(j->k && j->k[i]);
				/* the first member of that name is found */
				CHECK(gw_jv_get(j, j->k[i]) != NULL);
			}
			walk(&j->v[i], depth + 1);
		}
		break;
	default:
		abort();
	}
	if (j->t != GW_JV_STR)
		CHECK(gw_jv_str(j) == NULL);
	if (j->t != GW_JV_OBJ)
		CHECK(gw_jv_get(j, "status") == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_jv root, zero = { 0 };
	int err = gw_jv_parse((const char *)data, size, &root);

	if (err) {
		CHECK(err == -EINVAL || err == -ENOMEM);
		CHECK(!memcmp(&root, &zero, sizeof(root)));
		return 0;
	}
	walk(&root, 0);
	gw_jv_release(&root);
	CHECK(!memcmp(&root, &zero, sizeof(root)));
	gw_jv_release(&root);
	gw_jv_release(NULL);
	return 0;
}
