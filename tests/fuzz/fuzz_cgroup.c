// SPDX-License-Identifier: MIT
/*
 * fuzz_cgroup.c - gw_attrib_parse_cgroup() on arbitrary /proc/PID/cgroup
 * text.
 *
 * Input: one selector byte (which output sizes to pass), then the text,
 * given with its exact length in a buffer of that size (no NUL after it),
 * so a read past the end is an ASan report.  Beyond not crashing: the
 * outputs are NUL-terminated within their sizes and nothing is written
 * past them; a container id is empty or 12..64 lowercase hex digits taken
 * from the text; a pod uid is empty or 8-4-4-4-12 lowercase hex with
 * dashes, found in the text with dashes or underscores; sizes below the
 * minimum are -EINVAL and anything else succeeds; and a second parse gives
 * the same answer.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "collect/attrib.h"
#include "fuzz.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

#define GUARD 16

static const size_t cid_sizes[] = { GW_ATTRIB_CONTAINER_ID_SIZE, 80, 200,
				    GW_ATTRIB_CONTAINER_ID_SIZE - 1 };
static const size_t pod_sizes[] = { GW_ATTRIB_POD_UID_SIZE, 48, 100,
				    GW_ATTRIB_POD_UID_SIZE - 1 };

static bool lhex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static void check_cid(const char *cid, const uint8_t *text, size_t len)
{
	size_t n = strlen(cid);

	if (!n)
		return;
	CHECK(n >= 12 && n <= 64);
	for (size_t i = 0; i < n; i++)
		CHECK(lhex(cid[i]));
	CHECK(memmem(text, len, cid, n) != NULL);
}

static void check_pod(const char *pod, const uint8_t *text, size_t len)
{
	char us[GW_ATTRIB_POD_UID_SIZE];

	if (!pod[0])
		return;
	CHECK(strlen(pod) == 36);
	for (size_t i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23)
			CHECK(pod[i] == '-');
		else
			CHECK(lhex(pod[i]));
	}
	memcpy(us, pod, sizeof(us));
	for (size_t i = 0; i < 36; i++)
		if (us[i] == '-')
			us[i] = '_';
	CHECK(memmem(text, len, pod, 36) != NULL ||
	      memmem(text, len, us, 36) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char cid[200 + GUARD], pod[100 + GUARD];
	char cid2[200], pod2[100];
	size_t cidlen, podlen, len;
	bool small;
	uint8_t *text;
	int r;

	if (size < 1)
		return 0;
	cidlen = cid_sizes[data[0] % 4];
	podlen = pod_sizes[(data[0] / 4) % 4];
	small = cidlen < GW_ATTRIB_CONTAINER_ID_SIZE ||
		podlen < GW_ATTRIB_POD_UID_SIZE;
	len = size - 1;
	text = malloc(len ? len : 1);
	if (!text)
		return 0;
	memcpy(text, data + 1, len);

	memset(cid, 'X', sizeof(cid));
	memset(pod, 'X', sizeof(pod));
	r = gw_attrib_parse_cgroup((const char *)text, len, cid, cidlen, pod,
				   podlen);
	CHECK(r == (small ? -EINVAL : 0));
	CHECK(memchr(cid, '\0', cidlen) != NULL);
	CHECK(memchr(pod, '\0', podlen) != NULL);
	for (size_t i = cidlen; i < sizeof(cid); i++)
		CHECK(cid[i] == 'X');
	for (size_t i = podlen; i < sizeof(pod); i++)
		CHECK(pod[i] == 'X');
	if (r) {
		CHECK(cid[0] == '\0' && pod[0] == '\0');
	} else {
		check_cid(cid, text, len);
		check_pod(pod, text, len);
		CHECK(gw_attrib_parse_cgroup((const char *)text, len, cid2,
					     sizeof(cid2), pod2,
					     sizeof(pod2)) == 0);
		CHECK(strcmp(cid, cid2) == 0 && strcmp(pod, pod2) == 0);
	}
	free(text);
	return 0;
}
