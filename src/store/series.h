/* SPDX-License-Identifier: MIT */
/*
 * series.h - the series index: metric name + sorted labels, interned once,
 * each with a numeric id.  The store persists the ids, so a series keeps
 * its id across restarts (it re-adds them with gw_series_index_add(id)).
 *
 * Live and retired series: the index keeps every series it was given (so
 * history stays selectable), but only live ones count against the caps.
 * The store retires a series that stopped receiving samples
 * (gw_series_index_retire) and revives it, with its old id, when samples
 * come back (gw_series_index_revive, or adding the same labels again).
 *
 * Caps: at most max_series live series, and at most max_values distinct
 * values per label name among live series (__name__ is not capped: metric
 * names are the program's, not the workload's).  A series that would pass
 * either is refused (-ENOSPC / -E2BIG) and counted in the stats; the caller
 * logs it.
 *
 * Selection: an inverted index from each name=value pair to the ids of the
 * series carrying it (its postings, ascending).  gw_series_index_select()
 * intersects the postings of equality matchers, evaluates a regular
 * expression (or !=) once per distinct value of its label and unites the
 * postings of the values it accepts, and tests matchers that accept the
 * empty string (which also select series lacking the label) on the
 * candidates left.  Cost: proportional to the postings touched and the
 * distinct values of regex-matched labels, not to the series in the index.
 *
 * Ownership: the index owns its series; a struct gw_series stays valid and
 * at the same address until gw_series_index_free, or until its caller
 * releases it after gw_series_index_evict.  series->head belongs to the
 * store (the index never touches it).
 *
 * Thread safety: none; the store serialises access with its own lock
 * (one writer; readers may share it).  What readers may use without it:
 * a series, its labels and key, and a posting's value string never change
 * or move once added, postings are never freed, and a series is freed only
 * after its eviction, by its caller, once no reader can hold it
 * (gw_series_index_select_unlocked relies on it; an id it read may meanwhile
 * have been evicted: gw_series_index_get() returns NULL for it).
 */
#ifndef GW_SERIES_H
#define GW_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/labels.h"

struct gw_series {
	uint32_t id;
	struct gw_labels labels;
	const char *key;  /* canonical key, gw_labels_key() */
	const char *name; /* the __name__ value */
	void *head;	  /* the store's per-series state */
	bool live;	  /* counted against the caps */
	bool evicted;	  /* out of the index (gw_series_index_evict) */
};

struct gw_series_index;

struct gw_series_index_stats {
	uint64_t series; /* ever added */
	uint64_t live;
	uint64_t refused_series; /* over max_series */
	uint64_t refused_values; /* over max_values for some label */
	uint64_t evicted;	 /* taken out by gw_series_index_evict */
	uint32_t next_id;
};

struct gw_series_index *gw_series_index_new(uint32_t max_series,
					    uint32_t max_values);
/* Frees the index; free_head (may be NULL) is called on each head. */
void gw_series_index_free(struct gw_series_index *x,
			  void (*free_head)(void *head));

/* The series with this canonical key, or NULL. */
struct gw_series *gw_series_index_find(struct gw_series_index *x,
				       const char *key);

/*
 * Adds the series (labels copied), live, or retired when `retired` (series
 * known from disk: they count against no cap until revived).  id 0 assigns
 * the next free id; an explicit id (from disk) must be unused.  An
 * existing key returns 0 and that series, revived unless `retired`.
 * -ENOSPC, -E2BIG (caps), -EEXIST (id taken), -ENOMEM.
 */
__attribute__((warn_unused_result)) int
gw_series_index_add(struct gw_series_index *x, const struct gw_labels *l,
		    uint32_t id, bool retired, struct gw_series **out);

/* Takes a live series out of the caps' count; it stays selectable. */
void gw_series_index_retire(struct gw_series_index *x, struct gw_series *s);

/*
 * Takes retired series out of memory: they are no longer found by key,
 * alias or id (gw_series_index_get() returns NULL), and their ids are not
 * given to new series.  Their ids stay in the postings (4 bytes a label),
 * so a selection still returns them where their labels' postings match:
 * a matcher that needs a series' labels (a filter on candidates) cannot
 * test an evicted one and keeps it, so the caller tests every selected id
 * without a series against all matchers on the labels it keeps elsewhere
 * (the store: its key in index.db).  Adding the same id back (its labels)
 * makes it a series again.  The structs stay allocated for readers that
 * may still hold them (the lock dropped, see below): the caller frees each
 * with gw_series_release() once no such reader can remain, and the head
 * with them.
 */
void gw_series_index_evict(struct gw_series_index *x,
			   struct gw_series *const *v, size_t n);
void gw_series_release(struct gw_series *s);

/* Makes a retired series live again: 0, or -ENOSPC / -E2BIG when the caps
 * are full (counted); force ignores the caps (replaying logged samples). */
__attribute__((warn_unused_result)) int
gw_series_index_revive(struct gw_series_index *x, struct gw_series *s,
		       bool force);

/*
 * The ids (ascending, *ids malloc'd, NULL when none) of the series, live
 * or retired, whose labels satisfy all nm matchers; every series for
 * nm == 0.  -ENOMEM.  The caller holds its lock throughout.
 */
__attribute__((warn_unused_result)) int
gw_series_index_select(const struct gw_series_index *x,
		       const struct gw_matcher *m, size_t nm, uint32_t **ids,
		       size_t *n);

/*
 * The same selection for a caller that must not hold its lock while
 * regular expressions run (a query beside the writer): called without the
 * lock, it takes it with ops->lock (a read lock is enough) only to read
 * the index - postings, the values of a label, the labels of candidate
 * series - and tests the values with the lock dropped, calling
 * ops->check every GW_SERIES_CHECK_EVERY tests; a nonzero return (a
 * deadline passed, a cancel: -ETIMEDOUT, -ECANCELED) stops the selection
 * and is returned.  Series added meanwhile may or may not be selected; a
 * series selected matches every matcher.  Any member of ops may be NULL.
 */
struct gw_series_select_ops {
	void (*lock)(void *ctx);
	void (*unlock)(void *ctx);
	int (*check)(void *ctx);
	void *ctx;
};
/* A value's test against a regular expression of many alternatives can
 * take a millisecond (far more in a sanitizer build on a busy machine); a
 * check, a clock read and an atomic load, tens of nanoseconds. */
#define GW_SERIES_CHECK_EVERY 4

__attribute__((warn_unused_result)) int gw_series_index_select_unlocked(
	const struct gw_series_index *x, const struct gw_matcher *m, size_t nm,
	const struct gw_series_select_ops *ops, uint32_t **ids, size_t *n);

/*
 * Aliases: any other spelling of a series' key (labels in another order,
 * as a producer writes them) mapped to the series, so that the hot path
 * looks up the producer's text without canonicalising it.  At most
 * 4 x max_series aliases are kept; past that -ENOSPC (harmless: the caller
 * canonicalises).
 */
struct gw_series *gw_series_index_find_alias(struct gw_series_index *x,
					     const char *alias);
__attribute__((warn_unused_result)) int
gw_series_index_add_alias(struct gw_series_index *x, const char *alias,
			  struct gw_series *s);

/* The series by id, or NULL. */
struct gw_series *gw_series_index_get(struct gw_series_index *x, uint32_t id);

/* Iteration in insertion order: i from 0 to count-1. */
size_t gw_series_index_count(const struct gw_series_index *x);
struct gw_series *gw_series_index_at(struct gw_series_index *x, size_t i);

void gw_series_index_stats(const struct gw_series_index *x,
			   struct gw_series_index_stats *st);

#endif
