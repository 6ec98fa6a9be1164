/* SPDX-License-Identifier: MIT */
/*
 * config.h - the agent's settings: defaults, then the YAML file given by
 * --config, then command-line flags, in that order of precedence.
 *
 * One table (config.c) describes every setting once; it drives getopt_long,
 * the YAML keys (the flag's name with '-' or '_'), --help and validation,
 * so every flag has a config-file key by construction.
 *
 * Errors are written into a caller buffer as one line that names the flag,
 * or the file, line and key, and what was expected.
 */
#ifndef GW_CONFIG_H
#define GW_CONFIG_H

#include <limits.h>
#include <stdio.h>

#include "collect/sim/sim.h"
#include "common/log.h"

#define GW_CONFIG_ERR_MAX 512
#define GW_CONFIG_LIST_MAX 16     /* entries of a repeatable option */
#define GW_CONFIG_LIST_LEN 1024   /* bytes of one entry, NUL included */

/* A repeatable string option (rule files, Alertmanager URLs). */
struct gw_config_list {
	char v[GW_CONFIG_LIST_MAX][GW_CONFIG_LIST_LEN];
	unsigned int n;
};

struct gw_config {
	char listen[256];
	char data_dir[PATH_MAX];
	char config_path[PATH_MAX];
	char nvml_lib[PATH_MAX];
	char compat[32];          /* "" or "dcgm" */
	unsigned int simulate;    /* 0: real NVML */
	double interval;          /* fast set, seconds */
	double detail_interval;   /* detail set, seconds */
	double collector_timeout; /* an NVML pass longer than this is hung */
	double cpu_budget;        /* share of one core the agent may use */
	double sim_day;           /* length of a simulated day, seconds */
	unsigned long long sim_seed;
	enum gw_log_level log_level;
	int ebpf;                 /* eBPF probes on (default) */
	double leak_age;          /* seconds before a live allocation is a suspect */
	double ebpf_budget;       /* share of a process's CPU its probes may cost */
	char job_env[256];        /* comma-separated environment variable names */
	int store;                /* local store in data_dir on (default) */
	double retention_raw;     /* seconds per tier */
	double retention_1m;
	double retention_1h;
	unsigned long long disk_budget; /* bytes; 0 = unlimited */
	double flush_interval;
	unsigned int store_max_series;
	unsigned int store_max_label_values;
	unsigned long long query_max_samples;
	double query_timeout;
	int cupti;                /* read the CUPTI injection rings (default) */
	char cupti_dir[PATH_MAX]; /* where injected processes put their rings */
	unsigned int cupti_max_kernels; /* kernel names kept per process */
	char statsd_listen[256];  /* UDP HOST:PORT, "" = off */
	char statsd_socket[PATH_MAX]; /* Unix datagram socket, "" = off */
	unsigned int statsd_max_series;
	unsigned int statsd_max_tag_values;
	int baselines;            /* anomaly scores for gauges (default on) */
	struct gw_config_list rule_files;   /* alert rule files, in order */
	int default_rules;        /* the built-in rule set (default on) */
	double rule_interval;     /* seconds between rule evaluations */
	struct gw_config_list alertmanagers; /* Alertmanager base URLs */
	double alert_resend;      /* firing alerts re-sent this often */
	struct gw_sim_fault faults[GW_SIM_MAX_FAULTS];
	unsigned int nfaults;
};

void gw_config_defaults(struct gw_config *c);

/*
 * Parses argv (after the subcommand) into c, loading --config first if it is
 * given.  Returns 0, 1 when --help was printed, or -EINVAL with err set.
 */
__attribute__((warn_unused_result)) int
gw_config_from_args(struct gw_config *c, int argc, char **argv, char *err,
		    size_t errlen);

/* Loads a YAML file on top of c.  -EINVAL/-ENOENT with err set. */
__attribute__((warn_unused_result)) int
gw_config_load_file(struct gw_config *c, const char *path, char *err,
		    size_t errlen);

/* Loads a YAML document held in memory (for the fuzzer and tests). */
__attribute__((warn_unused_result)) int
gw_config_load_buffer(struct gw_config *c, const char *name,
		      const unsigned char *data, size_t len, char *err,
		      size_t errlen);

/* Cross-field checks (detail interval >= interval, ...). */
__attribute__((warn_unused_result)) int
gw_config_validate(const struct gw_config *c, char *err, size_t errlen);

void gw_config_usage(FILE *out);

#endif
