/* SPDX-License-Identifier: MIT */
/*
 * promql_gosort.c - the comparison sort of Go's sort.Sort (Go 1.19 on, the
 * Go that builds Prometheus 2.42): pattern-defeating quicksort (Orson
 * Peters' pdqsort) with insertion sort up to 12 elements, a heapsort
 * fallback, and pattern breaking by a xorshift generator seeded with the
 * length.  It is not stable; it is reproduced step by step here because
 * Prometheus' topk/bottomk output order, ties included, is whatever this
 * sort leaves (promql_agg.c).  Only the order of comparisons and swaps
 * matters, so the caller gives both as callbacks.
 *
 * Pure: allocates nothing, keeps no state; safe on distinct data from
 * several threads.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "query/promql_int.h"

typedef long long idx; /* Go's int */

enum hint { UNKNOWN, INCREASING, DECREASING };

static bool less(const struct gw_pqe_gosort *s, idx i, idx j)
{
	return s->less(s->ctx, (size_t)i, (size_t)j);
}

static void swap(const struct gw_pqe_gosort *s, idx i, idx j)
{
	s->swap(s->ctx, (size_t)i, (size_t)j);
}

static unsigned bit_len(uint64_t x)
{
	unsigned n = 0;

	while (x) {
		n++;
		x >>= 1;
	}
	return n;
}

static void insertion(const struct gw_pqe_gosort *s, idx a, idx b)
{
	for (idx i = a + 1; i < b; i++)
		for (idx j = i; j > a && less(s, j, j - 1); j--)
			swap(s, j, j - 1);
}

static void sift_down(const struct gw_pqe_gosort *s, idx lo, idx hi, idx first)
{
	idx root = lo;

	for (;;) {
		idx child = 2 * root + 1;

		if (child >= hi)
			return;
		if (child + 1 < hi && less(s, first + child, first + child + 1))
			child++;
		if (!less(s, first + root, first + child))
			return;
		swap(s, first + root, first + child);
		root = child;
	}
}

static void heap_sort(const struct gw_pqe_gosort *s, idx a, idx b)
{
	idx first = a, lo = 0, hi = b - a;

	for (idx i = (hi - 1) / 2; i >= 0; i--)
		sift_down(s, i, hi, first);
	for (idx i = hi - 1; i >= 0; i--) {
		swap(s, first, first + i);
		sift_down(s, lo, i, first);
	}
}

/* Moves data[pivot] to a and partitions (a, b) around it; returns where
 * the pivot ends and whether nothing had to move. */
static idx partition(const struct gw_pqe_gosort *s, idx a, idx b, idx pivot,
		     bool *already)
{
	idx i = a + 1, j = b - 1;

	swap(s, a, pivot);
	while (i <= j && less(s, i, a))
		i++;
	while (i <= j && !less(s, j, a))
		j--;
	if (i > j) {
		swap(s, j, a);
		*already = true;
		return j;
	}
	swap(s, i, j);
	i++;
	j--;
	for (;;) {
		while (i <= j && less(s, i, a))
			i++;
		while (i <= j && !less(s, j, a))
			j--;
		if (i > j)
			break;
		swap(s, i, j);
		i++;
		j--;
	}
	swap(s, j, a);
	*already = false;
	return j;
}

/* Elements equal to the pivot to the left, greater ones to the right. */
static idx partition_equal(const struct gw_pqe_gosort *s, idx a, idx b,
			   idx pivot)
{
	idx i = a + 1, j = b - 1;

	swap(s, a, pivot);
	for (;;) {
		while (i <= j && !less(s, a, i))
			i++;
		while (i <= j && less(s, a, j))
			j--;
		if (i > j)
			break;
		swap(s, i, j);
		i++;
		j--;
	}
	return i;
}

/* Sorts a nearly sorted range by a few shifts; false if it is not. */
static bool partial_insertion(const struct gw_pqe_gosort *s, idx a, idx b)
{
	const int max_steps = 5;
	const idx shortest_shifting = 50;
	idx i = a + 1;

	for (int step = 0; step < max_steps; step++) {
		while (i < b && !less(s, i, i - 1))
			i++;
		if (i == b)
			return true;
		if (b - a < shortest_shifting)
			return false;
		swap(s, i, i - 1);
		if (i - a >= 2)
			for (idx j = i - 1; j >= 1; j--) {
				if (!less(s, j, j - 1))
					break;
				swap(s, j, j - 1);
			}
		if (b - i >= 2)
			for (idx j = i + 1; j < b; j++) {
				if (!less(s, j, j - 1))
					break;
				swap(s, j, j - 1);
			}
	}
	return false;
}

static void break_patterns(const struct gw_pqe_gosort *s, idx a, idx b)
{
	idx length = b - a;

	if (length >= 8) {
		uint64_t random = (uint64_t)length;
		uint64_t modulus = (uint64_t)1 << bit_len((uint64_t)length);
		idx at = a + (length / 4) * 2 - 1;

		for (int i = 0; i < 3; i++) {
			idx other;

			/* Go 1.19's shifts (later Go uses 13, 7, 17). */
			random ^= random << 13;
			random ^= random >> 17;
			random ^= random << 5;
			other = (idx)(random & (modulus - 1));
			if (other >= length)
				other -= length;
			swap(s, at + i, a + other);
		}
	}
}

static void order2(const struct gw_pqe_gosort *s, idx *a, idx *b, int *swaps)
{
	if (less(s, *b, *a)) {
		idx t = *a;

		(*swaps)++;
		*a = *b;
		*b = t;
	}
}

static idx median(const struct gw_pqe_gosort *s, idx a, idx b, idx c,
		  int *swaps)
{
	order2(s, &a, &b, swaps);
	order2(s, &b, &c, swaps);
	order2(s, &a, &b, swaps);
	return b;
}

static idx choose_pivot(const struct gw_pqe_gosort *s, idx a, idx b,
			enum hint *hint)
{
	const idx shortest_ninther = 50;
	const int max_swaps = 4 * 3;
	idx l = b - a;
	int swaps = 0;
	idx i = a + l / 4 * 1, j = a + l / 4 * 2, k = a + l / 4 * 3;

	if (l >= 8) {
		if (l >= shortest_ninther) {
			i = median(s, i - 1, i, i + 1, &swaps);
			j = median(s, j - 1, j, j + 1, &swaps);
			k = median(s, k - 1, k, k + 1, &swaps);
		}
		j = median(s, i, j, k, &swaps);
	}
	*hint = swaps == 0	     ? INCREASING
		: swaps == max_swaps ? DECREASING
				     : UNKNOWN;
	return j;
}

static void reverse_range(const struct gw_pqe_gosort *s, idx a, idx b)
{
	for (idx i = a, j = b - 1; i < j; i++, j--)
		swap(s, i, j);
}

static void pdqsort(const struct gw_pqe_gosort *s, idx a, idx b, unsigned limit)
{
	const idx max_insertion = 12;
	bool balanced = true, partitioned = true;

	for (;;) {
		idx length = b - a, pivot, mid, left, right;
		enum hint hint;
		bool already;

		if (length <= max_insertion) {
			insertion(s, a, b);
			return;
		}
		if (limit == 0) {
			heap_sort(s, a, b);
			return;
		}
		if (!balanced) {
			break_patterns(s, a, b);
			limit--;
		}
		pivot = choose_pivot(s, a, b, &hint);
		if (hint == DECREASING) {
			reverse_range(s, a, b);
			pivot = (b - 1) - (pivot - a);
			hint = INCREASING;
		}
		if (balanced && partitioned && hint == INCREASING &&
		    partial_insertion(s, a, b))
			return;
		if (a > 0 && !less(s, a - 1, pivot)) {
			a = partition_equal(s, a, b, pivot);
			continue;
		}
		mid = partition(s, a, b, pivot, &already);
		partitioned = already;
		left = mid - a;
		right = b - mid;
		if (left < right) {
			balanced = left >= length / 8;
			pdqsort(s, a, mid, limit);
			a = mid + 1;
		} else {
			balanced = right >= length / 8;
			pdqsort(s, mid + 1, b, limit);
			b = mid;
		}
	}
}

void gw_pqe_gosort(const struct gw_pqe_gosort *s, size_t n)
{
	if (n <= 1)
		return;
	pdqsort(s, 0, (idx)n, bit_len((uint64_t)n));
}
