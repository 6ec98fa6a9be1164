/* SPDX-License-Identifier: MIT */
/*
 * anomaly.h - the dynamic baselines of every stored gauge: one
 * struct gw_baseline per series, kept by the store's ingest thread, which
 * appends each judged sample's anomaly score to the history as the series
 * NAME:anomaly_score{same labels}.  docs/internals/baselines.md, "In the
 * agent".
 *
 * Which samples are modelled (gw_anomaly_eligible)
 * - A gauge family's plain samples, and a summary's quantile samples
 *   (application latencies: p50, p99 ...).
 * - Not counters, info metrics, histogram buckets, _sum or _count; not a
 *   name holding ':' (score series themselves, recording-rule results); not
 *   the agent's own families (gpuwatch_agent_, _store_, _ebpf_, _cupti_,
 *   _statsd_, _rules_, _alerts, _alertmanager_, _anomaly_) nor ALERTS*
 *   (an alert firing must not open an episode of its own); not gauges
 *   that hold a Unix time (names ending in _timestamp_seconds: they only
 *   ever step forward).
 *
 * Contract
 * - A series is identified by a 64-bit hash of its name and label text (the
 *   exposition form the registry hands over, so one series always has the
 *   same text).  Two series whose hashes collide (odds about n^2 / 2^65)
 *   would share one model; nothing else goes wrong.
 * - At most opts.max_series series are modelled; a new series beyond that
 *   is refused and counted (refused_cap) until eviction makes room.  State
 *   of a series whose last sample is older than opts.evict_s at a
 *   gw_anomaly_evict call is dropped (counted in evicted), and of a series
 *   labelled with a pid an hour after its last sample (its process is
 *   gone: a pid that returns is another process); the table grows
 *   by doubling up to 2 x max_series slots, and a growth that cannot
 *   allocate refuses the new series (refused_memory).
 * - gw_anomaly_feed returns the sample's score in [0, 1], or NaN when
 *   there is nothing to store: not eligible, refused, still learning
 *   (GW_BASELINE_LEARNING), or a sample the model ignores (NaN, Inf, older
 *   than the last).  Samples must come in time order per series, as the
 *   store wants them too.
 * - Each series runs the deployed detector (detect.h: the baseline with a
 *   daily and a weekly profile, each used where it explains the series, and
 *   one episode per alert), exactly as `gpuwatch detect` does.
 * - Memory: sizeof(struct gw_detect) + 32 bytes per modelled series (about
 *   1,300), in a table at most half full.
 * - Cost: one hash of the name and labels, one probe, one
 *   gw_baseline_update; no allocation except when the table doubles.
 *
 * Not thread-safe: one owner (the ingest thread) calls everything.
 * Errors: 0 or -errno.
 */
#ifndef GW_ANOMALY_H
#define GW_ANOMALY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pipeline/detect.h"
#include "pipeline/metrics.h"

/* The score series of NAME is NAME GW_ANOMALY_SUFFIX. */
#define GW_ANOMALY_SUFFIX ":anomaly_score"

struct gw_anomaly;

struct gw_anomaly_opts {
	uint32_t max_series;	      /* 100000; 1 .. 1e7 */
	uint32_t evict_s;	      /* 7 days; 1 .. 30 days */
	struct gw_detect_opts detect; /* gw_detect_opts_default */
};

/* What one sample did to its series' episode (detect.h). */
struct gw_anomaly_verdict {
	enum gw_detect_event event; /* ONSET, END or NONE */
	bool in_episode;	    /* an episode is open (or ends here) */
	double peak;		    /* the episode's peak score so far */
	int64_t onset_ms;	    /* and its onset */
	/* The episode is explained by a workload change on its GPU
	 * (gw_anomaly_workload): it opened at most GW_ANOMALY_WORKLOAD_MS
	 * after a change of the GPU's compute processes, and every sample
	 * since that scored at or above the threshold later than that long
	 * after the change came itself at most that long after a later
	 * change, at a value within the range the series took at samples
	 * that were not anomalous or in explained episodes' windows
	 * (widened by a quarter of its width each way).  Once false, false
	 * for the rest of the episode: a fault that starts with a job gets
	 * its alert when it outlasts the job's transient. */
	bool workload;
	/* While in an episode: the other episodes of the same GPU (gpu
	 * label; not those of its other processes) or process (pid label;
	 * and those of the GPUs it runs on, gw_anomaly_workload) open at
	 * its onset or ended in the
	 * 10 minutes before, and those that began up to 2 s after its
	 * onset, the most recent first and the earliest last with its
	 * onset time, "b -30% <- a -40% since 2026-12-03 12:03:10" (each
	 * one's change from its expected value at its onset; one per metric
	 * name, the 5 highest peaks); "" when none.  Valid until the next
	 * call. */
	const char *explanation;
	/* The explanation is not final yet: a series sampled more often
	 * than every 2 s waits 2 s after its onset for the onsets of other
	 * layers read a moment later (a power cap drops the clock, and the
	 * process reports its slower step after its next step).  Then, at
	 * its first sample 2 s or more after the onset (or at the end), it
	 * is settled (settled, once) and fixed for the rest of the episode.
	 * first: the score at the onset, for a record that starts there. */
	bool settling, settled;
	float first;
};

struct gw_anomaly_stats {
	uint64_t series;	     /* modelled now */
	uint64_t scores;	     /* samples judged (a score returned) */
	uint64_t refused_cap;	     /* samples of new series over max_series */
	uint64_t refused_memory;     /* ... that the table could not grow for */
	uint64_t evicted;	     /* series dropped for not being seen */
	uint64_t episodes;	     /* anomalous episodes started */
	uint64_t workload_changes;   /* changes of a GPU's processes */
	uint64_t workload_episodes;  /* episodes opened explained */
	uint64_t workload_outlasted; /* ... that lost it later */
};

/* Fills o with the defaults above. */
void gw_anomaly_opts_default(struct gw_anomaly_opts *o);

/* -EINVAL: an option out of range (including detector options that
 * gw_detect_config_init refuses); -ENOMEM. */
__attribute__((warn_unused_result)) int
gw_anomaly_new(struct gw_anomaly **out, const struct gw_anomaly_opts *o);
/* NULL is a no-op. */
void gw_anomaly_free(struct gw_anomaly *a);

/* True when a sample of this name, family type and kind is modelled. */
bool gw_anomaly_eligible(const char *name, enum gw_metric_type type,
			 enum gw_sample_kind kind);

/*
 * Scores and learns one sample of name{labels} (labels in exposition form,
 * "" or NULL for none) at t_ms.  Returns the score, or NaN (see above).
 */
double gw_anomaly_feed(struct gw_anomaly *a, const char *name,
		       const char *labels, enum gw_metric_type type,
		       enum gw_sample_kind kind, int64_t t_ms, double v);

/* gw_anomaly_feed, also telling what the sample did to the series'
 * episode (out may be NULL; zeroed when the sample is not judged). */
double gw_anomaly_judge(struct gw_anomaly *a, const char *name,
			const char *labels, enum gw_metric_type type,
			enum gw_sample_kind kind, int64_t t_ms, double v,
			struct gw_anomaly_verdict *out);

/*
 * Workload changes and placements.  The samples of GW_ANOMALY_WORKLOAD_NAME
 * tell when the compute processes of a GPU (label gpu)
 * change (a GPU's first sample is none: what runs on it may have run for
 * days).  Jobs starting and stopping move clocks, power,
 * temperatures, memory and utilisation in steps: an episode of a series of
 * that GPU opening within GW_ANOMALY_WORKLOAD_MS after a change is
 * explained by it (verdict.workload, and the explanation says so).  Call
 * it for the samples of a batch before judging them (the count is read
 * after the other values of the same scrape).  Remembers 64 GPUs.
 *
 * The window: a job's transient is its load ramp (seconds), its memory
 * allocation (the simulator's: about 10 s) and the temperatures' approach
 * to their new level (time constant 30 s in the simulator, 20-60 s on
 * real boards): two minutes covers four time constants.
 */
#define GW_ANOMALY_WORKLOAD_NAME "gpuwatch_gpu_processes"
#define GW_ANOMALY_WORKLOAD_MS	 (120 * 1000)
/*
 * The samples of names beginning GW_ANOMALY_PLACEMENT_PREFIX (NVML's
 * per-process series, labelled gpu and pid) tell which GPUs a process
 * runs on: an episode of a process's series labelled with its pid and no
 * gpu (CUDA's, from CUPTI) and one of a GPU it ran on in the 10 minutes
 * before explain each other.  Remembers 256 (process, GPU) pairs, the
 * most recently seen.  Other names are ignored.
 */
#define GW_ANOMALY_PLACEMENT_PREFIX "gpuwatch_gpu_process_"
void gw_anomaly_workload(struct gw_anomaly *a, const char *name,
			 const char *labels, int64_t t_ms, double v);

/*
 * Drops the state of series not seen for opts.evict_s before now_ms (an
 * hour for a pid's series).  Cheap to call often: it scans the table at
 * most once per min(evict_s, 1 h) / 8.
 */
void gw_anomaly_evict(struct gw_anomaly *a, int64_t now_ms);

/* The episode series of NAME (its open episode's peak score; 0 when it
 * ends) is NAME GW_ANOMALY_EPISODE_SUFFIX. */
#define GW_ANOMALY_EPISODE_SUFFIX ":anomaly_episode"

/* Writes name GW_ANOMALY_EPISODE_SUFFIX to out; -ENAMETOOLONG. */
__attribute__((warn_unused_result)) int
gw_anomaly_episode_name(const char *name, char *out, size_t len);

/* Writes name GW_ANOMALY_SUFFIX to out; -ENAMETOOLONG if it does not fit. */
__attribute__((warn_unused_result)) int
gw_anomaly_score_name(const char *name, char *out, size_t len);

void gw_anomaly_stats(const struct gw_anomaly *a, struct gw_anomaly_stats *st);

/*
 * Model persistence across restarts.  gw_anomaly_save writes every model
 * to path (through path.tmp, fsync and rename: a crash leaves the old file
 * or the new one).  gw_anomaly_load adds the models of such a file to a
 * (up to max_series) and sets *loaded; each resumes where it stopped (the
 * restart's silence re-warms nothing; the seven-day eviction still
 * applies).  -ENOENT: no file; -EINVAL: a file of another build's layout,
 * truncated or corrupt (nothing is taken from it); -errno.
 */
__attribute__((warn_unused_result)) int
gw_anomaly_save(const struct gw_anomaly *a, const char *path);
__attribute__((warn_unused_result)) int
gw_anomaly_load(struct gw_anomaly *a, const char *path, size_t *loaded);

#endif
