// SPDX-License-Identifier: MIT
/*
 * test_podres.c - the pod-resources answer decoder and the GPU -> pod map
 * (collect/podres/podres.h), on answers encoded here by hand as the
 * kubelet's protobuf (field numbers of podresources/v1).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collect/podres/podres.h"

/* A growable byte string and protobuf's length-delimited fields. */
struct bytes {
	uint8_t *p;
	size_t n;
};

static void put(struct bytes *b, const void *p, size_t n)
{
	b->p = realloc(b->p, b->n + n + 1);
	assert_non_null(b->p);
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void varint(struct bytes *b, uint64_t v)
{
	uint8_t c;

	do {
		c = v & 0x7f;
		v >>= 7;
		if (v)
			c |= 0x80;
		put(b, &c, 1);
	} while (v);
}

static void field(struct bytes *b, int num, const void *p, size_t n)
{
	varint(b, (uint64_t)num << 3 | 2);
	varint(b, n);
	put(b, p, n);
}

static void str(struct bytes *b, int num, const char *s)
{
	field(b, num, s, strlen(s));
}

static void sub(struct bytes *b, int num, struct bytes *m)
{
	field(b, num, m->p, m->n);
	free(m->p);
	m->p = NULL;
	m->n = 0;
}

/* ContainerDevices{resource, ids...} */
static void devices(struct bytes *ctr, const char *resource, int n,
		    const char **ids)
{
	struct bytes d = { 0 };

	str(&d, 1, resource);
	for (int i = 0; i < n; i++)
		str(&d, 2, ids[i]);
	sub(ctr, 2, &d);
}

/* Wraps a ListPodResourcesResponse in its gRPC frame. */
static struct bytes frame(struct bytes *msg)
{
	struct bytes f = { 0 };
	uint8_t h[5] = { 0, (uint8_t)(msg->n >> 24), (uint8_t)(msg->n >> 16),
			 (uint8_t)(msg->n >> 8), (uint8_t)msg->n };

	put(&f, h, 5);
	if (msg->n)
		put(&f, msg->p, msg->n);
	free(msg->p);
	msg->p = NULL;
	msg->n = 0;
	return f;
}

/* A pod with one container holding ids of resource. */
static void pod(struct bytes *resp, const char *name, const char *ns,
		const char *container, const char *resource, int n,
		const char **ids)
{
	struct bytes p = { 0 }, c = { 0 };

	str(&p, 1, name);
	str(&p, 2, ns);
	str(&c, 1, container);
	devices(&c, resource, n, ids);
	/* a field the reduced .proto does not know: cpu_ids (3), packed */
	field(&c, 3, "\x01\x02", 2);
	sub(&p, 3, &c);
	sub(resp, 1, &p);
}

static void decode_filters_and_sorts(void **state)
{
	const char *gpu_b[] = { "GPU-bbbb" },
		   *gpu_a[] = { "GPU-aaaa::1", "GPU-aaaa::0" };
	const char *nic[] = { "GPU-cccc" }, *mig[] = { "MIG-1234" };
	struct bytes m = { 0 }, f;
	struct gw_podres_set s;

	(void)state;
	pod(&m, "train-0", "ml", "trainer", "nvidia.com/gpu", 1, gpu_b);
	pod(&m, "infer", "serving", "server", "nvidia.com/gpu", 2, gpu_a);
	pod(&m, "net", "infra", "agent", "example.com/nic", 1, nic);
	pod(&m, "small", "ml", "nb", "nvidia.com/mig-1g.10gb", 1, mig);
	f = frame(&m);
	assert_int_equal(gw_podres_decode(f.p, f.n, &s), 0);
	assert_int_equal(s.n, 4); /* the NIC is not an NVIDIA resource */
	assert_int_equal(s.dropped, 0);
	assert_string_equal(s.dev[0].device, "GPU-aaaa::0");
	assert_string_equal(s.dev[1].device, "GPU-aaaa::1");
	assert_string_equal(s.dev[2].device, "GPU-bbbb");
	assert_string_equal(s.dev[2].pod, "train-0");
	assert_string_equal(s.dev[2].ns, "ml");
	assert_string_equal(s.dev[2].container, "trainer");
	assert_string_equal(s.dev[3].device, "MIG-1234");
	gw_podres_set_release(&s);
	free(f.p);
}

static void decode_refuses_malformed(void **state)
{
	const char *ids[] = { "GPU-1" };
	struct bytes m = { 0 }, f;
	struct gw_podres_set s;

	(void)state;
	assert_int_equal(gw_podres_decode((const uint8_t *)"\0\0", 2, &s),
			 -EPROTO);
	assert_int_equal(s.n, 0);
	pod(&m, "p", "n", "c", "nvidia.com/gpu", 1, ids);
	f = frame(&m);
	/* compressed flag */
	f.p[0] = 1;
	assert_int_equal(gw_podres_decode(f.p, f.n, &s), -EPROTO);
	f.p[0] = 0;
	/* length longer and shorter than the body */
	assert_int_equal(gw_podres_decode(f.p, f.n - 1, &s), -EPROTO);
	/* a message cut inside a field */
	f.p[4] = (uint8_t)(f.n - 5 - 3);
	assert_int_equal(gw_podres_decode(f.p, f.n - 3, &s), -EPROTO);
	assert_null(s.dev);
	/* past the bound */
	f.p[1] = 0x7f;
	assert_int_equal(gw_podres_decode(f.p, f.n, &s), -EMSGSIZE);
	/* an empty answer is no error: no pod holds a GPU */
	assert_int_equal(gw_podres_decode((const uint8_t *)"\0\0\0\0\0", 5, &s),
			 0);
	assert_int_equal(s.n, 0);
	free(f.p);
}

static void decode_bounds(void **state)
{
	enum { N = GW_PODRES_MAX_DEVICES + 100 };
	static char names[N][24];
	static const char *ids[N];
	char longpod[300];
	struct bytes m = { 0 }, f;
	struct gw_podres_set s;
	const char *one[] = { "GPU-long" };

	(void)state;
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "GPU-%06d", i);
		ids[i] = names[i];
	}
	pod(&m, "big", "ml", "c", "nvidia.com/gpu", N, ids);
	memset(longpod, 'p', sizeof(longpod) - 1);
	longpod[sizeof(longpod) - 1] = '\0';
	pod(&m, longpod, "ml", "c", "nvidia.com/gpu", 1, one);
	f = frame(&m);
	assert_int_equal(gw_podres_decode(f.p, f.n, &s), 0);
	assert_int_equal(s.n, GW_PODRES_MAX_DEVICES);
	assert_int_equal(s.dropped, 101);
	gw_podres_set_release(&s);
	free(f.p);
}

static void map_lookup_and_generation(void **state)
{
	const char *a[] = { "GPU-aaaa::1" }, *b[] = { "GPU-aaaa::0" };
	const char *c[] = { "GPU-aaaabbbb" };
	struct gw_podres *p = gw_podres_new();
	struct bytes m = { 0 }, f;
	struct gw_podres_set s;
	struct gw_podres_dev d;
	uint64_t g;

	(void)state;
	assert_non_null(p);
	assert_int_equal(gw_podres_lookup(p, "GPU-aaaa", &d), 0);
	pod(&m, "z-pod", "ml", "c1", "nvidia.com/gpu", 1, a);
	pod(&m, "a-pod", "ml", "c0", "nvidia.com/gpu", 1, b);
	pod(&m, "other", "ml", "c", "nvidia.com/gpu", 1, c);
	f = frame(&m);
	assert_int_equal(gw_podres_decode(f.p, f.n, &s), 0);
	g = gw_podres_generation(p);
	gw_podres_take(p, &s);
	assert_int_equal(s.n, 0);
	assert_true(gw_podres_generation(p) != g);
	/* shared replicas: the first in order */
	assert_int_equal(gw_podres_lookup(p, "GPU-aaaa", &d), 1);
	assert_string_equal(d.pod, "a-pod");
	assert_string_equal(d.container, "c0");
	/* a UUID that is a prefix of another's is not that one */
	assert_int_equal(gw_podres_lookup(p, "GPU-aaaab", &d), 0);
	assert_int_equal(gw_podres_lookup(p, "GPU-aaaabbbb", &d), 1);
	assert_string_equal(d.pod, "other");
	assert_int_equal(gw_podres_lookup(p, "", &d), 0);

	/* the same answer again: the generation stays */
	g = gw_podres_generation(p);
	assert_int_equal(gw_podres_decode(f.p, f.n, &s), 0);
	gw_podres_take(p, &s);
	assert_true(gw_podres_generation(p) == g);
	/* an empty one: it changes, and nothing is found */
	memset(&s, 0, sizeof(s));
	gw_podres_take(p, &s);
	assert_true(gw_podres_generation(p) != g);
	assert_int_equal(gw_podres_lookup(p, "GPU-aaaa", &d), 0);
	free(f.p);
	gw_podres_free(p);
	gw_podres_free(NULL);
}

static void fetch_absent_socket(void **state)
{
	struct gw_podres_set s;
	char err[256];

	(void)state;
	assert_int_equal(gw_podres_fetch("/nonexistent/kubelet.sock", 100, &s,
					 err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "No such file"));
	assert_int_equal(
		gw_podres_fetch("/dev/null", 100, &s, err, sizeof(err)),
		-ENOTSOCK);
	assert_int_equal(s.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(decode_filters_and_sorts),
		cmocka_unit_test(decode_refuses_malformed),
		cmocka_unit_test(decode_bounds),
		cmocka_unit_test(map_lookup_and_generation),
		cmocka_unit_test(fetch_absent_socket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
