// SPDX-License-Identifier: MIT
/*
 * test_cupti_collector.c - the pure pieces of the cupti collector: kernel
 * duration buckets (folding and scaling), top-K with the "other" fold,
 * kernel label values (demangling, capping with a hash suffix, UTF-8) and
 * finding a ring's host pid in a fake /proc tree.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "collect/cupti/export.h"

/* ---- histogram ---- */

static void bounds_are_powers_of_two(void **state)
{
	double b[GW_CUPTI_HBOUNDS];

	(void)state;
	gw_cupti_hist_bounds(b);
	assert_true(b[0] == 1024e-9);
	assert_true(b[1] == 2048e-9);
	assert_true(b[GW_CUPTI_HBOUNDS - 1] == ldexp(1, 34) / 1e9);
}

static void fold_places_bins_in_buckets(void **state)
{
	uint64_t bins[GW_CRING_KBINS] = { 0 };
	uint64_t c[GW_CUPTI_HBOUNDS + 1];

	(void)state;
	bins[gw_cring_kbin(10)] += 1;	       /* < 64 ns */
	bins[gw_cring_kbin(1000)] += 2;	       /* [960, 1024) */
	bins[gw_cring_kbin(1100)] += 4;	       /* [1024, 1280) */
	bins[gw_cring_kbin(3000000)] += 8;     /* 3 ms: le 2^22 ns */
	bins[gw_cring_kbin(1ull << 40)] += 16; /* beyond 2^34 ns */
	gw_cupti_hist_fold(bins, 1, c);
	assert_int_equal(c[0], 3); /* le 1.024 us */
	assert_int_equal(c[1], 4); /* le 2.048 us */
	assert_int_equal(c[22 - 10], 8);
	assert_int_equal(c[GW_CUPTI_HBOUNDS], 16); /* +Inf */
	uint64_t total = 0;
	for (unsigned int i = 0; i <= GW_CUPTI_HBOUNDS; i++)
		total += c[i];
	assert_int_equal(total, 31);
}

static void fold_scales_by_sampling(void **state)
{
	uint64_t bins[GW_CRING_KBINS] = { 0 };
	uint64_t c[GW_CUPTI_HBOUNDS + 1];
	uint64_t total = 0;

	(void)state;
	/* Three launches traced at a ratio of 0.4: 7.5 estimated. */
	bins[gw_cring_kbin(1500)] = 1;
	bins[gw_cring_kbin(3000)] = 1;
	bins[gw_cring_kbin(6000)] = 1;
	gw_cupti_hist_fold(bins, 2.5, c);
	for (unsigned int i = 0; i <= GW_CUPTI_HBOUNDS; i++)
		total += c[i];
	/* Rounded on the running total: 3, 5, 8. */
	assert_int_equal(c[1], 3);
	assert_int_equal(c[2], 2);
	assert_int_equal(c[3], 3);
	assert_int_equal(total, 8);
	/* A nonsense scale is taken as 1. */
	gw_cupti_hist_fold(bins, NAN, c);
	assert_int_equal(c[1] + c[2] + c[3], 3);
}

/* ---- top-K ---- */

static void kernel(struct gw_cupti_kernel *k, uint64_t hash, double est_ns,
		   uint64_t min_ns, uint64_t max_ns)
{
	memset(k, 0, sizeof(*k));
	k->name_hash = hash;
	k->count = 2;
	k->est_count = 4;
	k->total_ns = (uint64_t)est_ns / 2;
	k->est_ns = est_ns;
	k->min_ns = min_ns;
	k->max_ns = max_ns;
	k->bins[hash % GW_CRING_KBINS] = 2;
	snprintf(k->name, sizeof(k->name), "k%llu", (unsigned long long)hash);
}

static void topk_keeps_largest_and_folds_rest(void **state)
{
	static struct gw_cupti_kernel ks[7], other;
	unsigned int idx[7], folded = 0, m;

	(void)state;
	kernel(&ks[0], 10, 500, 5, 50);
	kernel(&ks[1], 11, 100, 3, 30);
	kernel(&ks[2], 12, 400, 7, 70);
	kernel(&ks[3], 13, 200, 2, 20);
	kernel(&ks[4], 14, 300, 9, 900);
	kernel(&ks[5], 15, 9999, 1, 1); /* the ring's own overflow entry */
	ks[5].flags = GW_CRING_KF_OTHER;
	kernel(&ks[6], 9, 400, 0, 0); /* ties with 12: smaller hash first */

	m = gw_cupti_topk(ks, 7, 3, idx, &other, &folded);
	assert_int_equal(m, 3);
	assert_int_equal(idx[0], 0);
	assert_int_equal(idx[1], 6);
	assert_int_equal(idx[2], 2);
	assert_int_equal(folded, 4);
	assert_string_equal(other.name, "other");
	assert_true(other.est_ns == 100 + 200 + 300 + 9999);
	assert_true(other.est_count == 16);
	assert_int_equal(other.count, 8);
	assert_int_equal(other.min_ns, 1);
	assert_int_equal(other.max_ns, 900);
	assert_int_equal(other.bins[11], 2);
	assert_int_equal(other.bins[15], 2);
	assert_int_equal(other.bins[10], 0);

	/* k = 0: everything folded; k above n: nothing but OTHER. */
	m = gw_cupti_topk(ks, 7, 0, idx, &other, &folded);
	assert_int_equal(m, 0);
	assert_int_equal(folded, 7);
	m = gw_cupti_topk(ks, 7, 50, idx, &other, &folded);
	assert_int_equal(m, 6);
	assert_int_equal(folded, 1);
	assert_int_equal(idx[5], 1);
}

/* ---- labels ---- */

static int valid_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		int n = *p < 0x80	      ? 1
			: (*p & 0xe0) == 0xc0 ? 2
			: (*p & 0xf0) == 0xe0 ? 3
			: (*p & 0xf8) == 0xf0 ? 4
					      : 0;
		if (!n)
			return 0;
		for (int i = 1; i < n; i++)
			if ((p[i] & 0xc0) != 0x80)
				return 0;
		p += n;
	}
	return 1;
}

static void label_short_names_unchanged(void **state)
{
	char out[GW_CUPTI_LABEL_MAX + 1];

	(void)state;
	gw_cupti_label("vecAdd(float*, float*, float*, int)", 1, 0, out,
		       sizeof(out));
	assert_string_equal(out, "vecAdd(float*, float*, float*, int)");
	/* Forced: a suffix even when short. */
	gw_cupti_label("other", 0x1122334455667788ull, 1, out, sizeof(out));
	assert_string_equal(out, "other~444444cc");
	/* Invalid UTF-8 replaced, valid kept. */
	gw_cupti_label("a\xff"
		       "b\xc3\xa9\xe2\x82",
		       1, 0, out, sizeof(out));
	assert_string_equal(out, "a?b\xc3\xa9??");
	assert_true(valid_utf8(out));
}

static void label_long_names_cut_with_hash(void **state)
{
	char a[400], b[400];
	char la[GW_CUPTI_LABEL_MAX + 1], lb[GW_CUPTI_LABEL_MAX + 1];

	(void)state;
	memset(a, 'x', sizeof(a) - 1);
	a[sizeof(a) - 1] = '\0';
	memcpy(b, a, sizeof(b));
	b[350] = 'y';
	gw_cupti_label(a, 0xaaaa, 0, la, sizeof(la));
	gw_cupti_label(b, 0xbbbb, 0, lb, sizeof(lb));
	assert_true(strlen(la) <= GW_CUPTI_LABEL_MAX);
	assert_int_equal(strlen(la), GW_CUPTI_LABEL_MAX);
	assert_string_equal(la + strlen(la) - 9, "~0000aaaa");
	assert_string_not_equal(la, lb);
	assert_memory_equal(la, lb, GW_CUPTI_LABEL_MAX - 9);
	/* Exactly at the limit: no cut. */
	a[GW_CUPTI_LABEL_MAX] = '\0';
	gw_cupti_label(a, 1, 0, la, sizeof(la));
	assert_string_equal(la, a);
	/* One more byte: cut. */
	a[GW_CUPTI_LABEL_MAX] = 'x';
	a[GW_CUPTI_LABEL_MAX + 1] = '\0';
	gw_cupti_label(a, 1, 0, la, sizeof(la));
	assert_int_equal(strlen(la), GW_CUPTI_LABEL_MAX);
	assert_string_equal(la + GW_CUPTI_LABEL_MAX - 9, "~00000001");
	/* Multi-byte characters are never split. */
	for (size_t i = 0; i + 3 < sizeof(a); i += 3)
		memcpy(a + i, "\xe2\x82\xac", 3); /* euro sign */
	a[sizeof(a) - 1 - (sizeof(a) - 1) % 3] = '\0';
	gw_cupti_label(a, 7, 0, la, sizeof(la));
	assert_true(valid_utf8(la));
	assert_true(strlen(la) <= GW_CUPTI_LABEL_MAX);
	assert_int_equal((strlen(la) - 9) % 3, 0);
	/* A buffer too small gets nothing. */
	gw_cupti_label("abc", 1, 0, la, 10);
	assert_string_equal(la, "");
}

static void demangle_kernel_names(void **state)
{
	char out[512];
	int r;

	(void)state;
	r = gw_cupti_demangle("_Z6vecAddPfS_S_i", out, sizeof(out));
	if (r)
		assert_string_equal(out, "vecAdd(float*, float*, float*, int)");
	else
		assert_string_equal(out, "_Z6vecAddPfS_S_i");
	r = gw_cupti_demangle("_Z4gemmILi128EEvPKfS1_Pfiii", out, sizeof(out));
	if (r)
		assert_string_equal(out, "void gemm<128>(float const*, float "
					 "const*, float*, int, int, int)");
	/* Not a C++ name, or a broken one: shown as sent. */
	assert_int_equal(gw_cupti_demangle("vecAdd", out, sizeof(out)), 0);
	assert_string_equal(out, "vecAdd");
	assert_int_equal(gw_cupti_demangle("_Z999brokenPf", out, sizeof(out)),
			 0);
	assert_string_equal(out, "_Z999brokenPf");
	/* Bounded output. */
	r = gw_cupti_demangle("_Z6vecAddPfS_S_i", out, 8);
	assert_int_equal(strlen(out), 7);
}

/* ---- pid mapping ---- */

static char root[64];

static void put_file(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void fake_proc(const char *pid, const char *ns, unsigned long ticks,
		      const char *nspid)
{
	char path[256], text[512];

	snprintf(path, sizeof(path), "%s/%s", root, pid);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%s/ns", root, pid);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%s/ns/pid", root, pid);
	snprintf(text, sizeof(text), "pid:[%s]", ns);
	assert_int_equal(symlink(text, path), 0);
	snprintf(path, sizeof(path), "%s/stat", pid);
	/* A comm with ") " inside, as a process may name itself. */
	snprintf(text, sizeof(text),
		 "%s (we) ird) S 1 1 1 0 -1 4194560 10 0 0 0 5 6 0 0 20 0 "
		 "1 0 %lu 1000 100 18446744073709551615\n",
		 pid, ticks);
	put_file(path, text);
	if (nspid) {
		snprintf(path, sizeof(path), "%s/status", pid);
		snprintf(text, sizeof(text),
			 "Name:\twe\nUmask:\t0022\nState:\tS (sleeping)\n"
			 "Tgid:\t%s\nNSpid:\t%s\nNSsid:\t1\n",
			 pid, nspid);
		put_file(path, text);
	}
}

static int tree_setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/gw-cupti-proc.XXXXXX");
	if (!mkdtemp(root))
		return -1;
	fake_proc("self", "100", 1, NULL);
	fake_proc("10", "100", 555, "10");
	fake_proc("20", "200", 777, "20\t5");
	fake_proc("21", "200", 778, "21\t6");
	fake_proc("30", "300", 777, "30\t1000\t5");
	fake_proc("31", "200", 900, NULL); /* no status file */
	return 0;
}

static int tree_teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void pid_same_namespace(void **state)
{
	uint64_t ns = 0, t = 0;
	uint32_t host = 0;

	(void)state;
	assert_int_equal(gw_cupti_pidns(root, "self", &ns), 0);
	assert_int_equal(ns, 100);
	assert_int_equal(gw_cupti_start_ticks(root, 10, &t), 0);
	assert_int_equal(t, 555);
	assert_int_equal(
		gw_cupti_pid_resolve(root, 100, 10, 100, 555, 100, &host), 0);
	assert_int_equal(host, 10);
	/* Unknown namespace: taken as ours. */
	host = 0;
	assert_int_equal(
		gw_cupti_pid_resolve(root, 100, 10, 0, 555, 100, &host), 0);
	assert_int_equal(host, 10);
	/* The pid was reused (other start time), or is gone. */
	assert_int_equal(
		gw_cupti_pid_resolve(root, 100, 10, 100, 556, 100, &host),
		-ESRCH);
	assert_int_equal(
		gw_cupti_pid_resolve(root, 100, 11, 100, 555, 100, &host),
		-ESRCH);
	assert_int_equal(gw_cupti_start_ticks(root, 11, &t), -ENOENT);
}

static void pid_other_namespace(void **state)
{
	uint32_t host = 0;

	(void)state;
	assert_int_equal(
		gw_cupti_pid_resolve(root, 100, 5, 200, 777, 100, &host), 0);
	assert_int_equal(host, 20);
	/* Same inner pid, another namespace, three levels deep. */
	assert_int_equal(
		gw_cupti_pid_resolve(root, 100, 5, 300, 777, 100, &host), 0);
	assert_int_equal(host, 30);
	/* Right namespace and pid, wrong start time. */
	assert_int_equal(
		gw_cupti_pid_resolve(root, 100, 6, 200, 777, 100, &host),
		-ESRCH);
	assert_int_equal(
		gw_cupti_pid_resolve(root, 100, 7, 200, 777, 100, &host),
		-ESRCH);
	/* The scan is bounded. */
	assert_int_equal(gw_cupti_pid_resolve(root, 100, 5, 200, 777, 0, &host),
			 -ESRCH);
	assert_int_equal(
		gw_cupti_pid_resolve(root, 100, 0, 200, 777, 10, &host),
		-EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bounds_are_powers_of_two),
		cmocka_unit_test(fold_places_bins_in_buckets),
		cmocka_unit_test(fold_scales_by_sampling),
		cmocka_unit_test(topk_keeps_largest_and_folds_rest),
		cmocka_unit_test(label_short_names_unchanged),
		cmocka_unit_test(label_long_names_cut_with_hash),
		cmocka_unit_test(demangle_kernel_names),
		cmocka_unit_test_setup_teardown(pid_same_namespace, tree_setup,
						tree_teardown),
		cmocka_unit_test_setup_teardown(pid_other_namespace, tree_setup,
						tree_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
