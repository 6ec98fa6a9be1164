/* SPDX-License-Identifier: MIT */
/*
 * config.h - the agent's settings: defaults, then the YAML file given by
 * --config, then command-line flags, in that order of precedence.
 *
 * One table (config.c) describes every setting once: its flag, YAML key
 * (the flag's name with '-' or '_'), type and range, default (as text,
 * parsed like the flag's value), what SIGHUP does with it, and its help.
 * It drives getopt_long, the file parser, the defaults, --help, the
 * README's option table (--help-markdown) and the reload, so none of them
 * can disagree with another.
 *
 * Errors are written into a caller buffer as one line that names the flag,
 * or the file, line and key, and what was expected.
 */
#ifndef GW_CONFIG_H
#define GW_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "collect/sim/sim.h"
#include "common/log.h"

#define GW_CONFIG_ERR_MAX  512
#define GW_CONFIG_LIST_MAX 16	/* entries of a repeatable option */
#define GW_CONFIG_LIST_LEN 1024 /* bytes of one entry, NUL included */

/* A repeatable string option (rule files, Alertmanager URLs). */
struct gw_config_list {
	char v[GW_CONFIG_LIST_MAX][GW_CONFIG_LIST_LEN];
	unsigned int n;
};

#define GW_CONFIG_RW_TEXT_MAX (64 * 1024) /* the file's remote_write: */

/*
 * remote_write endpoints: --remote-write URLs, or the config file's
 * remote_write: list (Prometheus' blocks) kept as its YAML text, which
 * export/rw.h's gw_rw_config_new() parses.  Flags replace the file's list.
 */
struct gw_config_rw {
	struct gw_config_list urls;	  /* --remote-write, in order */
	char yaml[GW_CONFIG_RW_TEXT_MAX]; /* "" = none */
	unsigned int line;		  /* yaml's first line in file */
	char file[PATH_MAX];		  /* for messages */
};

struct gw_config {
	char listen[256];
	unsigned int http_max_connections;	      /* all clients */
	unsigned int http_max_connections_per_client; /* one address */
	unsigned int http_reserved_connections; /* for /metrics, /healthz */
	double http_header_timeout;		/* seconds */
	double http_body_timeout;		/* seconds */
	char data_dir[PATH_MAX];
	char config_path[PATH_MAX];
	char nvml_lib[PATH_MAX];
	char compat[32];	  /* "" or "dcgm" */
	unsigned int simulate;	  /* 0: real NVML */
	double interval;	  /* fast set, seconds */
	double detail_interval;	  /* detail set, seconds */
	double collector_timeout; /* an NVML pass longer than this is hung */
	double cpu_budget;	  /* share of one core the agent may use */
	double sim_day;		  /* length of a simulated day, seconds */
	unsigned long long sim_seed;
	enum gw_log_level log_level;
	int ebpf;	    /* eBPF probes on (default) */
	double leak_age;    /* seconds before a live allocation is a suspect */
	double ebpf_budget; /* share of a process's CPU its probes may cost */
	char job_env[256];  /* comma-separated environment variable names */
	int store;	    /* local store in data_dir on (default) */
	double retention_raw; /* seconds per tier */
	double retention_1m;
	double retention_1h;
	unsigned long long disk_budget; /* bytes; 0 = unlimited */
	double flush_interval;
	unsigned int store_max_series;
	double store_retire_after; /* seconds */
	unsigned int store_max_label_values;
	unsigned long long query_max_samples;
	double query_timeout;
	unsigned int query_max_concurrency; /* queries evaluated at once */
	int cupti;		  /* read the CUPTI injection rings (default) */
	char cupti_dir[PATH_MAX]; /* where injected processes put their rings */
	unsigned int cupti_max_kernels; /* kernel names kept per process */
	char statsd_listen[256];	/* UDP HOST:PORT, "" = off */
	char statsd_socket[PATH_MAX];	/* Unix datagram socket, "" = off */
	unsigned int statsd_max_series;
	unsigned int statsd_max_tag_values;
	unsigned long long statsd_max_memory; /* bytes of the StatsD table */
	char pod_resources_socket[PATH_MAX];  /* kubelet's, "" = off */
	double pod_resources_interval;	      /* seconds between List calls */
	int baselines; /* anomaly scores for gauges (default on) */
	struct gw_config_list rule_files; /* alert rule files, in order */
	int default_rules;    /* the built-in rule set (default on) */
	double rule_interval; /* seconds between rule evaluations */
	struct gw_config_list alertmanagers; /* Alertmanager base URLs */
	double alert_resend; /* firing alerts re-sent this often */
	struct gw_config_rw remote_write;
	/* remote_write: what leaves the node (core/remote.c) */
	char rw_policy[16];		       /* "rollup" or "raw" */
	struct gw_config_list rw_raw;	       /* selectors sent raw */
	struct gw_config_list external_labels; /* NAME=VALUE */
	double rw_heartbeat;		       /* seconds; 0: never suppress */
	unsigned int rw_precision; /* digits of :1m_avg/_min/_max; 0: all */
	unsigned int rw_stddev_precision; /* of :1m_stddev; 0: as above */
	char rw_rollups[64];		  /* "all" or avg,min,max,stddev,... */
	char rw_process_rollups[64];	  /* "all" or avg,min,max,stddev,... */
	char rw_state_rollups[64];	  /* "all" or avg,min,... */
	char rw_without[256];		  /* labels aggregated over, "a,b" */
	char rw_sum_without[256];	  /* labels counters are summed over */
	double rw_max_lag;		  /* seconds */
	int rw_events;			  /* raw around alerts, anomalies */
	double rw_event_window;		  /* seconds before and after */
	double rw_anomaly_threshold;
	char rw_admin_push[8]; /* "on": POST /api/v1/admin/push */
	/* the secured endpoint (http/webconfig.h, docs/security.md) */
	char web_config_file[PATH_MAX];
	int web_admin;	      /* the admin API (/api/v1/admin/...) */
	int web_lifecycle;    /* /-/reload, /-/quit served */
	int web_healthz_open; /* /healthz without basic auth */
	struct gw_sim_fault faults[GW_SIM_MAX_FAULTS];
	unsigned int nfaults;
	double exited_grace; /* an exited process's series stay this long */
	struct gw_config_list cuda_lib_globs; /* extra CUDA library patterns */
	struct gw_config_list profile_match;  /* --profile-match selectors */
	char profile[16];		      /* "gpu", "all" or "off" */
	unsigned int profile_frequency;	      /* Hz per CPU */
	double profile_flush;		      /* seconds between drains */
	char profile_version_env[128];	      /* "" = build id */
	char profile_unwind[16];	      /* "auto", "fp" or "dwarf" */
	unsigned long long profile_max_bytes; /* 0 = the default */
	/* the cold tier (core/cold.c, export/archive.h) */
	char archive_url[1024];	     /* s3://BUCKET/PREFIX; "" = off */
	char archive_endpoint[512];  /* "" = AWS */
	char archive_region[64];     /* "" = from the environment */
	char archive_addressing[16]; /* path, virtual, auto */
	double archive_keep_local;   /* seconds */
	unsigned long long archive_cache_size; /* bytes */
};

/* What SIGHUP does with a setting whose value changed. */
enum gw_config_reload {
	GW_CONFIG_RESTART, /* logged; the running value stays until a restart */
	GW_CONFIG_LIVE,	   /* applied by the reload */
};

/* One row of the table, for documentation and tests. */
struct gw_config_setting {
	char flag[48];	   /* "--interval", or "--no-ebpf" for a switch */
	char key[48];	   /* "interval"; "detail_interval" */
	const char *arg;   /* "SECONDS"; "" for a switch */
	const char *def;   /* the default as a flag's value; "" = none */
	const char *brief; /* one line (README) */
	const char *help;  /* --help, lines separated by '\n' */
	enum gw_config_reload reload;
	bool negated;	/* a --no-NAME switch: the file takes NAME: bool */
	bool is_switch; /* --NAME or --no-NAME, no value (arg "") */
};

/* Row i of the table into *out; false past the last one. */
bool gw_config_setting(size_t i, struct gw_config_setting *out);

/* Every setting at its default (the table's text, parsed). */
void gw_config_defaults(struct gw_config *c);

/*
 * Parses argv (after the subcommand) into c, loading --config first if it is
 * given.  Returns 0; 1 when --help was asked for, 2 for --help-markdown
 * (nothing parsed then); 3 when --check-config was given and everything
 * parsed and validated; or -EINVAL with err set.
 */
__attribute__((warn_unused_result)) int
gw_config_from_args(struct gw_config *c, int argc, char **argv, char *err,
		    size_t errlen);

/* Loads a YAML file on top of c.  -EINVAL/-ENOENT with err set. */
__attribute__((warn_unused_result)) int gw_config_load_file(struct gw_config *c,
							    const char *path,
							    char *err,
							    size_t errlen);

/* Loads a YAML document held in memory (for the fuzzer and tests). */
__attribute__((warn_unused_result)) int
gw_config_load_buffer(struct gw_config *c, const char *name,
		      const unsigned char *data, size_t len, char *err,
		      size_t errlen);

/* Cross-field checks (detail interval >= interval, ...), and the
 * remote_write endpoints parsed in full. */
__attribute__((warn_unused_result)) int
gw_config_validate(const struct gw_config *c, char *err, size_t errlen);

struct gw_rw_config;
/*
 * The remote_write endpoints c configures (--remote-write URLs, or the
 * file's remote_write: list), built by export/rw.h's gw_rw_config_new():
 * the caller frees *out with gw_rw_config_free().  0, -EINVAL (err set),
 * -ENOMEM.
 */
__attribute__((warn_unused_result)) int
gw_config_remote_write(const struct gw_config *c, struct gw_rw_config **out,
		       char *err, size_t errlen);

/*
 * SIGHUP: run is the config in use, next the one just read (defaults, the
 * file, the same flags).  Each setting that differs and is GW_CONFIG_LIVE
 * is copied into run; each other one that differs stays as it is and is
 * logged in one line ("reload: --statsd-listen changed; restart the agent
 * to apply it").  Returns how many settings were copied.  The caller then
 * hands the new values to the modules that use them.
 */
unsigned int gw_config_reload(struct gw_config *run,
			      const struct gw_config *next);

/* --help: every setting with its default and what SIGHUP does. */
void gw_config_usage(FILE *out);
/* The README's option table (Markdown), from the same rows. */
void gw_config_markdown(FILE *out);

#endif
