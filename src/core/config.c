/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "collect/prof_select.h"
#include "common/parse.h"
#include "export/rw.h"

enum opt_type {
	T_STRING,
	T_HOSTPORT,
	T_UINT,
	T_U64,
	T_DURATION,
	T_RATIO,
	T_LOGLEVEL,
	T_COMPAT,
	T_FAULT, /* repeatable; a YAML sequence in the file */
	T_CONFIG,
	T_NOFLAG, /* --no-NAME on the command line; NAME: true|false in the file */
	T_FLAG, /* --NAME on the command line; NAME: true|false in the file */
	T_STRLIST, /* comma-separated on the command line; a list in the file */
	T_BYTES, /* unsigned long long with an optional KiB/MiB/GiB/TiB unit */
	T_LIST,	 /* repeatable string; a YAML sequence in the file */
	T_RW, /* repeatable URL; Prometheus' remote_write: list in the file */
};

struct opt {
	const char *name;
	enum opt_type type;
	size_t off;
	size_t size;
	double min, max;
	const char *arg;
	const char *def; /* the default, parsed as a flag's value; "" = none */
	enum gw_config_reload reload;
	const char *brief; /* one line: the README's option table */
	const char *help;  /* --help, lines separated by '\n' */
};

#define F(field)                                                               \
	offsetof(struct gw_config, field),                                     \
		sizeof(((struct gw_config *)0)->field)
#define LIVE	GW_CONFIG_LIVE
#define RESTART GW_CONFIG_RESTART

/*
 * The one description of every setting: flags, file keys, defaults, what
 * SIGHUP does with it, --help and the README's table.
 */
static const struct opt opts[] = {
	{ "listen", T_HOSTPORT, F(listen), 0, 0, "HOST:PORT", "127.0.0.1:9400",
	  RESTART, "`/metrics`, `/healthz`, `/api/v1/*`",
	  "Address for /metrics, /healthz and the API. Use 0.0.0.0:9400 to be\n"
	  "scraped from other hosts, [::1]:9400 for IPv6." },
	{ "http-max-connections", T_UINT, F(http_max_connections), 8, 4096, "N",
	  "256", RESTART, "open HTTP connections, all clients",
	  "Most HTTP connections open at once. A new one beyond it closes the\n"
	  "oldest connection that is idle or still sending its headers;\n"
	  "when every one is busy it is refused. Both are counted in\n"
	  "gpuwatch_agent_http_connections_refused_total{reason}." },
	{ "http-max-connections-per-client", T_UINT,
	  F(http_max_connections_per_client), 1, 4096, "N", "64", RESTART,
	  "open HTTP connections of one client address",
	  "Most HTTP connections open at once from one client address; beyond\n"
	  "it the same as --http-max-connections, among that client's own." },
	{ "http-reserved-connections", T_UINT, F(http_reserved_connections), 1,
	  1024, "N", "16", RESTART,
	  "connections kept for /metrics and /healthz",
	  "The last N of --http-max-connections answer only /metrics and\n"
	  "/healthz: with fewer than N free, other paths get 503, so a scrape\n"
	  "is answered while the API is flooded." },
	{ "http-header-timeout", T_DURATION, F(http_header_timeout), 0.1, 300,
	  "SECONDS", "5s", RESTART,
	  "a request's headers must arrive within this",
	  "A request's headers must all arrive within this of the connection\n"
	  "opening (or of the previous answer on a kept-alive connection);\n"
	  "a client sending them a byte at a time is closed." },
	{ "http-body-timeout", T_DURATION, F(http_body_timeout), 0.1, 3600,
	  "SECONDS", "10s", RESTART,
	  "a request body must arrive, an answer be read, within this",
	  "A request's body must arrive within this of its headers, and the\n"
	  "client must read the answer within this of its being ready;\n"
	  "slower connections are closed." },
	{ "data-dir", T_STRING, F(data_dir), 0, 0, "DIR", "/var/lib/gpuwatch",
	  RESTART, "agent state and history, locked per agent",
	  "Directory for the agent's state; created if missing, locked so "
	  "that\n"
	  "two agents never share it." },
	{ "config", T_CONFIG, F(config_path), 0, 0, "FILE", "", LIVE,
	  "YAML with the same keys (`deploy/agent.yaml`)",
	  "YAML file with any of these settings as keys (detail_interval: "
	  "30).\n"
	  "Flags override the file." },
	{ "nvml-lib", T_STRING, F(nvml_lib), 0, 0, "PATH", "libnvidia-ml.so.1",
	  RESTART, "NVML library to load",
	  "NVML library to load, found on the system's library path unless it\n"
	  "is a path. Without it the hardware collector is off and the rest "
	  "of\n"
	  "the agent runs." },
	{ "simulate", T_UINT, F(simulate), 0, GW_SIM_MAX_GPUS, "N", "0",
	  RESTART, "N simulated GPUs instead of NVML",
	  "Simulate N GPUs instead of reading NVML (0 = off): realistic load,\n"
	  "temperature, power, clocks and memory through the same collector.\n"
	  "With StatsD on UDP, the simulated processes report their step and\n"
	  "kernel times (train_step_seconds, train_step_kernel_seconds) to "
	  "it,\n"
	  "slower when their GPU's clock falls." },
	{ "fault", T_FAULT, F(faults), 0, 0, "NAME:GPU[:AFTER[:FOR]]", "",
	  RESTART, "inject a fault into a simulated GPU (repeatable)",
	  "Inject a fault into a simulated GPU, AFTER seconds from start, for "
	  "FOR\n"
	  "seconds (default: forever). Repeatable. NAME is one of "
	  "thermal-runaway,\n"
	  "ecc-storm, xid79 (GPU falls off the bus), pcie-downgrade, "
	  "power-cap." },
	{ "sim-day", T_DURATION, F(sim_day), 10, 86400 * 7, "SECONDS", "1d",
	  RESTART, "length of a simulated day",
	  "Length of one simulated day-night load cycle." },
	{ "sim-seed", T_U64, F(sim_seed), 0, 0, "N", "1", RESTART,
	  "seed of the simulated GPUs",
	  "Seed of the simulation; the same seed gives the same GPUs." },
	{ "interval", T_DURATION, F(interval), 0.1, 3600, "SECONDS", "1s", LIVE,
	  "fast set period",
	  "Period of the fast set: temperatures, power, utilisation, memory,\n"
	  "clocks, clock-event reasons, processes, GPM." },
	{ "detail-interval", T_DURATION, F(detail_interval), 1, 86400,
	  "SECONDS", "30s", LIVE, "detail set period",
	  "Period of the detail set: ECC, remapped rows, PCIe link and "
	  "replays,\n"
	  "NVLink state, throughput and errors." },
	{ "collector-timeout", T_DURATION, F(collector_timeout), 0.1, 600,
	  "SECONDS", "5s", LIVE, "an NVML pass longer than this is hung",
	  "An NVML pass on one GPU that takes longer is declared hung: "
	  "counted\n"
	  "in gpuwatch_agent_collector_timeouts_total, the GPU is reported "
	  "down,\n"
	  "and the other GPUs go on." },
	{ "cpu-budget", T_RATIO, F(cpu_budget), 0.0001, 1, "RATIO", "0.005",
	  LIVE, "share of one core collection may use",
	  "Share of one core the collection may use (0.005 = 0.5%): the\n"
	  "collectors, the store's ingest and the main loop. Above it the\n"
	  "agent slows the detail set first, then the fast set. Scrapes,\n"
	  "queries and rules are not counted; they have their own bounds\n"
	  "(--http-max-connections, --query-max-concurrency, "
	  "--query-timeout)." },
	{ "compat", T_COMPAT, F(compat), 0, 0, "dcgm", "none", RESTART,
	  "also expose dcgm-exporter's names",
	  "Also expose dcgm-exporter's metric names (DCGM_FI_DEV_GPU_TEMP, "
	  "...)\n"
	  "so existing dashboards keep working; none turns it off." },
	{ "ebpf", T_NOFLAG, F(ebpf), 0, 0, "", "on", RESTART,
	  "turn the eBPF probes off",
	  "--no-ebpf turns off the eBPF probes on libcudart and libcuda (CUDA\n"
	  "API calls, errors, GPU memory and leaks, exits of GPU processes in\n"
	  "every process, no code change). They need root or CAP_BPF with\n"
	  "CAP_PERFMON, and kernel BTF; without them the agent says so once\n"
	  "and runs on. File key: ebpf: false." },
	{ "leak-age", T_DURATION, F(leak_age), 1, 86400 * 30, "SECONDS", "5m",
	  RESTART, "live GPU allocations older than this are suspected leaks",
	  "A GPU allocation still live after this long counts as a suspected\n"
	  "leak (gpuwatch_cuda_memory_leak_suspect_bytes)." },
	{ "ebpf-budget", T_RATIO, F(ebpf_budget), 0.0001, 1, "RATIO", "0.01",
	  RESTART, "share of a process's CPU its probes may cost",
	  "Share of a process's own CPU time its probes may cost (0.01 = 1%).\n"
	  "Above it the high-rate probes (launches, copies) are duty-cycled\n"
	  "and gpuwatch_ebpf_sampling_ratio says how much was seen." },
	{ "exited-grace", T_DURATION, F(exited_grace), 0, 86400, "DURATION",
	  "5m", RESTART, "an exited process's series stay this long",
	  "An exited CUDA process's last values stay on /metrics this long,\n"
	  "with gpuwatch_process_exited_timestamp_seconds beside them, so "
	  "that\n"
	  "a scrape sees a job that ran between two scrapes; 0 drops them at\n"
	  "once." },
	{ "cuda-lib-glob", T_LIST, F(cuda_lib_globs), 0, 0, "PATTERN", "",
	  RESTART, "more CUDA libraries to probe from the start (repeatable)",
	  "A glob(7) pattern of absolute paths of CUDA libraries (or programs\n"
	  "with cudart linked in) to probe from the start, before any process\n"
	  "maps them, besides the loader's cache and the toolkit folders;\n"
	  "folders are watched for new files. Repeatable." },
	{ "profile", T_STRING, F(profile), 0, 0, "gpu|all|off", "gpu", RESTART,
	  "continuous CPU profiling: which processes",
	  "Continuous CPU profiling with eBPF: gpu samples the processes that\n"
	  "map libcudart or libcuda, all every process on the node, off none.\n"
	  "Profiles are kept per minute and process in DIR/profiles.db and\n"
	  "served at /api/v1/profile (`gpuwatch profile`)." },
	{ "profile-match", T_LIST, F(profile_match), 0, 0, "SELECTOR", "",
	  RESTART, "profile only processes that match (repeatable)",
	  "A PromQL selector over a process's labels - pid, comm, exe (its\n"
	  "executable's path), cgroup (its cgroup path), container_id,\n"
	  "pod_uid, job - such as {comm=~\"python.*\"} or\n"
	  "{cgroup=~\"/kubepods.slice/.*\"}. With one or more, --profile gpu\n"
	  "samples the GPU processes that match any, --profile all every\n"
	  "process that matches any. Repeatable; a list in the config file." },
	{ "profile-frequency", T_UINT, F(profile_frequency), 1, 1000, "HZ",
	  "19", RESTART, "CPU samples per second and CPU",
	  "Samples per second on every CPU; the governor lowers it while the\n"
	  "profiler costs more than --ebpf-budget of the machine." },
	{ "profile-flush", T_DURATION, F(profile_flush), 0.5, 60, "SECONDS",
	  "5s", RESTART, "how often samples reach the profile store",
	  "How often the kernel's counts are drained, named and written to\n"
	  "the profile store (queries see the current minute this late)." },
	{ "profile-unwind", T_STRING, F(profile_unwind), 0, 0, "auto|fp|dwarf",
	  "auto", RESTART, "how user stacks are walked",
	  "How user stacks are walked: fp through frame pointers (in the\n"
	  "kernel), dwarf from a copy of the top of the stack and the call\n"
	  "frame information (.eh_frame) in the agent, auto dwarf for\n"
	  "processes whose executable has no frame pointers." },
	{ "profile-version-env", T_STRING, F(profile_version_env), 0, 0, "NAME",
	  "", RESTART, "environment variable giving `version`",
	  "The environment variable whose value is a profiled process's\n"
	  "version label; without it the executable's build id is used." },
	{ "profile-max-bytes", T_BYTES, F(profile_max_bytes), 0, 0, "BYTES",
	  "1GiB", RESTART, "disk the profiles may use",
	  "Most disk the stored profiles may use; the oldest minutes go\n"
	  "first. They are kept as long as --retention-1m." },
	{ "store", T_NOFLAG, F(store), 0, 0, "", "on", RESTART,
	  "no local history (and no query API)",
	  "--no-store turns off the local history in DIR (and with it the\n"
	  "query API and `gpuwatch query`); /metrics works either way." },
	{ "retention-raw", T_DURATION, F(retention_raw), 3600,
	  10 * 365 * 86400.0, "DURATION", "24h", RESTART,
	  "raw samples kept (whole days dropped past it)",
	  "How long raw samples (every collection, 1 s by default) are kept.\n"
	  "Whole days are dropped once past it." },
	{ "retention-1m", T_DURATION, F(retention_1m), 3600, 10 * 365 * 86400.0,
	  "DURATION", "30d", RESTART, "1-minute rollups kept",
	  "How long 1-minute rollups (count, sum, min, max, sum of squares,\n"
	  "last and a quantile sketch per series) are kept." },
	{ "retention-1h", T_DURATION, F(retention_1h), 3600,
	  100 * 365 * 86400.0, "DURATION", "365d", RESTART,
	  "1-hour rollups kept", "How long 1-hour rollups are kept." },
	{ "disk-budget", T_BYTES, F(disk_budget), 0, 0, "BYTES", "10GiB",
	  RESTART, "oldest day partitions dropped first beyond it",
	  "Most disk the store may use (e.g. 10GiB; 0 = no limit). Over it "
	  "the\n"
	  "oldest day partitions are dropped first; today's never." },
	{ "archive-url", T_STRING, F(archive_url), 0, 0, "s3://BUCKET/PREFIX",
	  "", RESTART, "copy closed days to an S3-compatible bucket",
	  "Copy every closed day partition to this S3-compatible bucket and\n"
	  "prefix (one prefix per node: ${NODE_NAME} or any ${VARIABLE} of\n"
	  "the environment is replaced, ${HOSTNAME} defaults to the host's\n"
	  "name), verified by checksum, and read them back for queries that\n"
	  "reach them. Credentials: AWS_ACCESS_KEY_ID,\n"
	  "AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN) or the shared "
	  "credentials\n"
	  "file (AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE). See\n"
	  "docs/cold-tier.md." },
	{ "archive-endpoint", T_STRING, F(archive_endpoint), 0, 0, "URL", "",
	  RESTART, "the S3 server when it is not AWS",
	  "Base URL of an S3-compatible server that is not AWS (MinIO, Ceph\n"
	  "RGW: http://minio:9000); path-style addressing unless\n"
	  "--archive-addressing virtual." },
	{ "archive-region", T_STRING, F(archive_region), 0, 0, "REGION", "",
	  RESTART, "the bucket's region",
	  "The bucket's region, part of every signature; default AWS_REGION,\n"
	  "AWS_DEFAULT_REGION, else us-east-1." },
	{ "archive-addressing", T_STRING, F(archive_addressing), 0, 0, "STYLE",
	  "auto", RESTART, "path, virtual or auto",
	  "path: ENDPOINT/BUCKET/KEY; virtual: BUCKET.HOST/KEY; auto: path\n"
	  "with --archive-endpoint, virtual for AWS." },
	{ "archive-keep-local", T_DURATION, F(archive_keep_local), 0,
	  100 * 365 * 86400.0, "DURATION", "7d", RESTART,
	  "archived days stay on the local disk this long",
	  "A day partition the bucket holds a verified copy of leaves the\n"
	  "local disk once the day is older than this (or than its tier's\n"
	  "retention); one not yet archived stays until it is." },
	{ "archive-cache-size", T_BYTES, F(archive_cache_size), 0, 0, "BYTES",
	  "1GiB", RESTART, "local cache of partitions fetched for queries",
	  "Most disk the partitions fetched back from the bucket for queries\n"
	  "may use (DIR/archive-cache), least recently used out first." },
	{ "flush-interval", T_DURATION, F(flush_interval), 0.1, 60, "SECONDS",
	  "5s", RESTART, "most a crash (even `kill -9`) can lose",
	  "How often new samples are made durable; a crash (even kill -9)\n"
	  "loses at most this much." },
	{ "store-max-series", T_UINT, F(store_max_series), 1, 10000000, "N",
	  "100000", RESTART, "live series; beyond are refused and counted",
	  "Most live series (a sample within --store-retire-after) the store\n"
	  "keeps; new ones beyond are refused and counted." },
	{ "store-retire-after", T_DURATION, F(store_retire_after), 60,
	  7 * 86400, "DURATION", "5m", RESTART,
	  "series without samples this long leave the caps",
	  "A series without samples this long is retired: it no longer counts\n"
	  "against --store-max-series and --store-max-label-values, its "
	  "history\n"
	  "stays queryable, and a sample brings it back as the same series." },
	{ "store-max-label-values", T_UINT, F(store_max_label_values), 1,
	  10000000, "N", "10000", RESTART, "live values of one label name",
	  "Most distinct values of one label name (pid, kernel, ...) among\n"
	  "live series (metric names are not counted); series beyond are\n"
	  "refused and counted." },
	{ "query-max-samples", T_U64, F(query_max_samples), 0, 0, "N",
	  "5000000", RESTART, "samples one query may load",
	  "Most samples one query may load; beyond it the query fails with an\n"
	  "\"execution\" error." },
	{ "query-timeout", T_DURATION, F(query_timeout), 0.1, 3600, "SECONDS",
	  "30s", RESTART, "longest a query may run",
	  "Longest a query may run before it fails with a \"timeout\" error\n"
	  "(an API request's own timeout= may only shorten it)." },
	{ "query-max-concurrency", T_UINT, F(query_max_concurrency), 1, 64, "N",
	  "4", RESTART, "queries evaluated at once",
	  "API queries evaluated at once, each on its own thread; up to 32\n"
	  "more wait and further ones get 503. With --query-timeout it bounds\n"
	  "the CPU queries take, which --cpu-budget does not count." },
	{ "cupti", T_NOFLAG, F(cupti), 0, 0, "", "on", RESTART,
	  "stop reading the CUPTI injection rings",
	  "--no-cupti stops reading the rings that libgpuwatch_cupti.so (the\n"
	  "CUPTI injection library, enabled per process with\n"
	  "CUDA_INJECTION64_PATH) writes: kernels, copies, memory, contexts "
	  "and\n"
	  "API errors seen inside each CUDA process. File key: cupti: false." },
	{ "cupti-dir", T_STRING, F(cupti_dir), 0, 0, "DIR", "/dev/shm", RESTART,
	  "where injected processes put their rings",
	  "Directory where injected processes create their rings\n"
	  "(GPUWATCH_CUPTI_DIR in the process's environment); for containers,\n"
	  "a host directory mounted into every pod." },
	{ "cupti-max-kernels", T_UINT, F(cupti_max_kernels), 1, 1024, "N", "50",
	  RESTART, "kernel names per process (top by GPU time)",
	  "Kernel names exported per process, the top N by GPU time; the rest\n"
	  "is summed under kernel=\"other\"." },
	{ "statsd-listen", T_STRING, F(statsd_listen), 0, 0, "HOST:PORT",
	  "127.0.0.1:8125", RESTART, "StatsD / DogStatsD over UDP (`off`)",
	  "UDP address for StatsD and DogStatsD datagrams from applications\n"
	  "(training loss, step time, request latency); off turns it off." },
	{ "statsd-socket", T_STRING, F(statsd_socket), 0, 0, "PATH", "",
	  RESTART, "StatsD over a Unix datagram socket",
	  "Unix datagram socket for StatsD, as DogStatsD clients use it." },
	{ "statsd-max-series", T_UINT, F(statsd_max_series), 1, 10000000, "N",
	  "10000", RESTART, "application series beyond are refused",
	  "Most StatsD series kept; new ones beyond are refused and counted." },
	{ "statsd-max-tag-values", T_UINT, F(statsd_max_tag_values), 1,
	  10000000, "N", "1000", RESTART, "distinct values of one tag",
	  "Most distinct values of one StatsD tag; series beyond are refused\n"
	  "and counted." },
	{ "statsd-max-memory", T_BYTES, F(statsd_max_memory), 0, 0, "BYTES",
	  "64MiB", RESTART, "memory of the StatsD series, sets and sketches",
	  "Most memory the StatsD table holds (series, labels, tags, set\n"
	  "tables, sketch bins, all counted); what would take it further is\n"
	  "refused and counted (reason=\"memory\"). 0: 64MiB." },
	{ "pod-resources-socket", T_STRING, F(pod_resources_socket), 0, 0,
	  "PATH", "", RESTART, "kubelet's pod-resources socket: GPUs to pods",
	  "The kubelet's pod-resources socket (on Kubernetes nodes\n"
	  "/var/lib/kubelet/pod-resources/kubelet.sock): the agent asks it\n"
	  "which pod and container holds each GPU and labels the GPU's series\n"
	  "with pod, namespace and container.  When it does not answer, one\n"
	  "line is logged, gpuwatch_agent_pod_resources_up is 0 and the "
	  "labels\n"
	  "go.  Empty (the default) or off: not asked." },
	{ "pod-resources-interval", T_DURATION, F(pod_resources_interval), 1,
	  3600, "SECONDS", "10s", RESTART, "how often pods' GPUs are asked",
	  "How often the pod-resources socket is asked which pod holds each\n"
	  "GPU (a GPU's labels change at most this long after its pod)." },
	{ "baselines", T_NOFLAG, F(baselines), 0, 0, "", "on", RESTART,
	  "no dynamic baselines / anomaly scores",
	  "--no-baselines turns off the dynamic baselines: every stored gauge\n"
	  "gets an online model of its normal level and spread, and an "
	  "anomaly\n"
	  "score 0..1 kept in the history as NAME:anomaly_score (usable in\n"
	  "alert rules). File key: baselines: false." },
	{ "rules", T_LIST, F(rule_files), 0, 0, "FILE", "", LIVE,
	  "alert rule file (repeatable)",
	  "Alert rule file in Prometheus' format (groups, alert, expr, for,\n"
	  "labels, annotations), evaluated by the agent on its own history.\n"
	  "Repeatable (a list in the config file); checked at start and on\n"
	  "SIGHUP, with errors naming the file, line and problem." },
	{ "default-rules", T_NOFLAG, F(default_rules), 0, 0, "", "on", LIVE,
	  "turn off the built-in rule set",
	  "--no-default-rules turns off the built-in rule set (GPU\n"
	  "temperature, HBM temperature, ECC, XID, PCIe, NVLink, throttling,\n"
	  "power, GPU lost, memory leaks, CUDA OOM and API errors, abnormal\n"
	  "exits, training and inference checks). File key: default_rules." },
	{ "rule-interval", T_DURATION, F(rule_interval), 1, 3600, "SECONDS",
	  "10s", LIVE, "how often rules are evaluated",
	  "How often alert rules are evaluated (a group's own interval: "
	  "wins)." },
	{ "alertmanager", T_LIST, F(alertmanagers), 0, 0, "URL", "", RESTART,
	  "Alertmanager to send alerts to (repeatable)",
	  "Alertmanager to send alerts to (its base URL, e.g.\n"
	  "http://127.0.0.1:9093); API v2. Repeatable: every alert goes to\n"
	  "each. Without one, alerts are still listed on /api/v1/alerts." },
	{ "alert-resend", T_DURATION, F(alert_resend), 1, 3600, "SECONDS", "1m",
	  LIVE, "firing alerts are re-sent this often",
	  "Firing alerts are sent again this often." },
	{ "remote-write", T_RW, F(remote_write), 0, 0, "URL", "", RESTART,
	  "push samples to a remote_write receiver (repeatable)",
	  "Push samples with Prometheus' remote_write 1.0 to this URL (e.g.\n"
	  "http://vm:8428/api/v1/write). Repeatable: each endpoint is\n"
	  "independent. In the config file, remote_write: takes Prometheus'\n"
	  "list of blocks (url, name, remote_timeout, headers, basic_auth,\n"
	  "authorization, tls_config, write_relabel_configs, queue_config);\n"
	  "flags replace the file's list. See docs/remote-write.md." },
	{ "remote-write-policy", T_STRING, F(rw_policy), 0, 0, "POLICY",
	  "rollup", RESTART, "what leaves the node",
	  "rollup: 1-minute rollups of gauges (NAME:1m_avg, _min, _max,\n"
	  "_stddev, _count_samples), counters and histogram buckets as their\n"
	  "last value each minute, unchanged values suppressed up to the\n"
	  "heartbeat; raw: every sample of every series." },
	{ "remote-write-raw", T_LIST, F(rw_raw), 0, 0, "SELECTOR", "", RESTART,
	  "series also sent raw (repeatable)",
	  "PromQL series selector (e.g. "
	  "'{__name__=~\"gpuwatch_gpu_power.*\"}')\n"
	  "whose series are also sent raw, every sample, under the rollup\n"
	  "policy. Repeatable, at most 16." },
	{ "external-label", T_LIST, F(external_labels), 0, 0, "NAME=VALUE", "",
	  RESTART, "label added to every pushed series (repeatable)",
	  "Label added to every series pushed with remote_write unless it\n"
	  "has one of that name (cluster=a, node=n1). instance defaults to\n"
	  "the host name." },
	{ "remote-write-heartbeat", T_DURATION, F(rw_heartbeat), 0, 86400,
	  "DURATION", "4m", RESTART, "unchanged values are re-sent this often",
	  "A rollup or last value equal to the one sent before is not sent\n"
	  "again until this long has passed (0: send every one)." },
	{ "remote-write-precision", T_UINT, F(rw_precision), 0, 17, "DIGITS",
	  "3", RESTART, "significant digits of a gauge's rollups",
	  "Significant decimal digits kept of a gauge's NAME:1m_avg, _min\n"
	  "and _max. Their last digits are noise that costs the central\n"
	  "store most of its bytes; 3 keeps 612 W, 45.3 C, 0.873, a relative\n"
	  "error of at most 0.05%. No digit below the statistic's standard\n"
	  "error in its minute is kept either (s / sqrt(n) for the avg, s / 4\n"
	  "for min and max, s the minute's standard deviation), nor one\n"
	  "finer than the reading's step: 0.001 of a ratio, 0.1 C, 1 W,\n"
	  "1 MHz, 10 MB of memory, 10 MB/s of PCIe. A counter keeps 9\n"
	  "significant digits, which keeps its order and resets.\n"
	  "_count_samples stays exact; the node's own history keeps every\n"
	  "digit. 0: every digit of a double, counters included." },
	{ "remote-write-stddev-precision", T_UINT, F(rw_stddev_precision), 0,
	  17, "DIGITS", "2", RESTART, "significant digits of a stddev",
	  "The same for NAME:1m_stddev: a spread, for which two digits say\n"
	  "what there is to say (within 5%). 0: as --remote-write-precision\n"
	  "(which at 0 sends every digit of the stddev too)." },
	{ "remote-write-rollups", T_STRING, F(rw_rollups), 0, 0, "LIST", "all",
	  RESTART, "rollups sent of a gauge",
	  "The rollups sent of a gauge: all (avg, min, max, stddev,\n"
	  "count_samples), or a comma-separated list of them. Each output\n"
	  "is a series centrally; avg,max is about half the bytes of all\n"
	  "five (docs/fleet.md, Sizing)." },
	{ "remote-write-process-rollups", T_STRING, F(rw_process_rollups), 0, 0,
	  "LIST", "max", RESTART, "rollups sent of a process's gauges",
	  "The rollups sent of a gauge with a pid label (process memory and\n"
	  "utilisation): all, or a comma-separated list of avg, min, max,\n"
	  "stddev, count_samples. Processes come and go with jobs, so each\n"
	  "output is a new series centrally for every process; the fleet\n"
	  "rules use the memory's max." },
	{ "remote-write-state-rollups", T_STRING, F(rw_state_rollups), 0, 0,
	  "LIST", "avg", RESTART, "rollups sent of a 0/1 gauge or a setting",
	  "The rollups sent of a state, a gauge that is 0 or 1 (a link up, a\n"
	  "clock event active: the unit column \"state\" in docs/metrics.md),\n"
	  "and of a setting (a power limit, a clock maximum, memory total:\n"
	  "type \"gauge (setting)\"): all, or a list as for\n"
	  "--remote-write-process-rollups. The share of the minute a state\n"
	  "held (:1m_avg) tells the others: min is 1 only where avg is 1, max\n"
	  "is 1 wherever avg is above 0, stddev is sqrt(avg * (1 - avg)); a\n"
	  "setting seldom moves within a minute." },
	{ "remote-write-without", T_STRING, F(rw_without), 0, 0, "LABELS",
	  "pid,link", RESTART, "labels a gauge is aggregated over",
	  "A gauge's series that carry any of these labels (comma-separated,\n"
	  "or none) leave merged with the series that differ only in them,\n"
	  "minute by minute over all their samples, as VictoriaMetrics' "
	  "stream\n"
	  "aggregation does with `without:` and named by the labels the\n"
	  "series carried: NAME:1m_without_pid_max for a process's gauge,\n"
	  "gpuwatch_gpu_nvlink_up:1m_without_link_avg for a GPU's links. A\n"
	  "process is a new series centrally with every job; what a fleet\n"
	  "asks is which pod, job or container uses a GPU, and those labels\n"
	  "stay. The node keeps every process and link apart, and pushes\n"
	  "them raw around an alert or anomaly." },
	{ "remote-write-sum-without", T_STRING, F(rw_sum_without), 0, 0,
	  "LABELS", "link", RESTART, "labels a counter is summed over",
	  "A counter's series that carry any of these labels "
	  "(comma-separated,\n"
	  "or none) leave summed over them under the counter's own name, so\n"
	  "rate() works centrally: the 72 NVLink error counters of a GPU\n"
	  "(18 links, 4 types) leave as 4. A minute some member missed is not\n"
	  "sent. Only for labels whose members persist (not pid: a sum falls\n"
	  "when a process exits, which a central rate() reads as a reset)." },
	{ "remote-write-max-lag", T_DURATION, F(rw_max_lag), 1, 3600,
	  "DURATION", "30s", RESTART, "longest live data waits for catch-up",
	  "While an endpoint catches up after an outage, each stream sends\n"
	  "for at most half this long before the others get their turn." },
	{ "remote-write-events", T_NOFLAG, F(rw_events), 0, 0, "", "on",
	  RESTART, "no raw pushes around alerts and anomalies",
	  "--no-remote-write-events turns off the raw pushes around firing\n"
	  "alerts and anomaly scores over the threshold (the GPU's or the\n"
	  "process's series, every sample, --remote-write-event-window before\n"
	  "and after)." },
	{ "remote-write-event-window", T_DURATION, F(rw_event_window), 1, 86400,
	  "DURATION", "10m", RESTART,
	  "raw pushed this long before and after an event",
	  "How much raw history is pushed before and after a firing alert or\n"
	  "an anomaly." },
	{ "remote-write-anomaly-threshold", T_RATIO, F(rw_anomaly_threshold),
	  0.0001, 1, "SCORE", "0.95", RESTART,
	  "anomaly score that triggers a raw push",
	  "An anomaly score (NAME:anomaly_score) at or above this pushes the\n"
	  "raw samples of its GPU or process." },
	{ "remote-write-admin-push", T_STRING, F(rw_admin_push), 0, 0, "on/off",
	  "off", RESTART, "on: the same as --web.enable-admin-api",
	  "on: the same as --web.enable-admin-api (kept for old command\n"
	  "lines): POST /api/v1/admin/push with match[], start and end\n"
	  "pushes those raw samples to every remote_write endpoint." },
	{ "web.config.file", T_STRING, F(web_config_file), 0, 0, "FILE", "",
	  RESTART, "TLS, basic auth and headers (`docs/security.md`)",
	  "Prometheus' web configuration file (the exporter-toolkit format,\n"
	  "the same file as node_exporter's): tls_server_config (TLS and\n"
	  "client certificates), basic_auth_users (bcrypt hashes) and\n"
	  "http_server_config (headers). A bad file stops the agent at start\n"
	  "with the line at fault. SIGHUP re-reads the file (a renewed\n"
	  "certificate, new users); the path itself needs a restart. See\n"
	  "docs/security.md." },
	{ "web.enable-admin-api", T_FLAG, F(web_admin), 0, 0, "", "off",
	  RESTART, "serve `/api/v1/admin/*` (else 403)",
	  "Serve the admin API (POST /api/v1/admin/push). Off: every\n"
	  "/api/v1/admin/ path answers 403." },
	{ "web.enable-lifecycle", T_FLAG, F(web_lifecycle), 0, 0, "", "off",
	  RESTART, "serve POST `/-/reload` and `/-/quit` (else 403)",
	  "Serve POST or PUT /-/reload (reload the config, as SIGHUP) and\n"
	  "/-/quit (stop, as SIGTERM). Off: both answer 403." },
	{ "web.healthz-open", T_FLAG, F(web_healthz_open), 0, 0, "", "off",
	  RESTART, "`/healthz` answers without basic auth",
	  "/healthz answers without basic_auth_users' password, for probes\n"
	  "that cannot send one (a TLS client certificate, when required,\n"
	  "is still needed). Every other path keeps asking." },
	{ "job-env", T_STRLIST, F(job_env), 0, 0, "VAR[,VAR...]",
	  "SLURM_JOB_ID", RESTART,
	  "environment variables giving the `job` label",
	  "Environment variables of a GPU process whose value becomes its\n"
	  "'job' label, first found wins." },
	{ "log-level", T_LOGLEVEL, F(log_level), 0, 0, "LEVEL", "info", LIVE,
	  "error, warn, info, debug",
	  "error, warn, info or debug. Logs go to stderr." },
};

#define NOPTS (sizeof(opts) / sizeof(opts[0]))

static int set_opt(struct gw_config *c, const struct opt *o, const char *val,
		   const char *where, char *err, size_t errlen);

void gw_config_defaults(struct gw_config *c)
{
	char err[GW_CONFIG_ERR_MAX];

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < NOPTS; i++) {
		int r;

		if (!opts[i].def[0])
			continue;
		r = set_opt(c, &opts[i], opts[i].def, opts[i].name, err,
			    sizeof(err));
		assert(r == 0 && "a default in opts[] does not parse");
		(void)r;
	}
}

static const struct opt *find_opt(const char *key)
{
	char norm[64];
	size_t n = strlen(key);

	if (n >= sizeof(norm))
		return NULL;
	for (size_t i = 0; i <= n; i++)
		norm[i] = key[i] == '_' ? '-' : key[i];
	for (size_t i = 0; i < NOPTS; i++)
		if (strcmp(opts[i].name, norm) == 0)
			return &opts[i];
	return NULL;
}

/* Edit distance, for "did you mean". */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64];

	if (la >= 63 || lb >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t prev = row[0], tmp;

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			char ca = a[i - 1] == '_' ? '-' : a[i - 1];
			size_t best = prev + (ca != b[j - 1]);

			tmp = row[j];
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

static const char *suggest(const char *key)
{
	const char *best = NULL;
	size_t bd = 3;

	for (size_t i = 0; i < NOPTS; i++) {
		size_t d = distance(key, opts[i].name);

		if (d < bd) {
			bd = d;
			best = opts[i].name;
		}
	}
	return best;
}

/*
 * Sets one option from its text value.  where names the source for errors:
 * "--interval" or "agent.yaml:3: interval".
 */
static int set_opt(struct gw_config *c, const struct opt *o, const char *val,
		   const char *where, char *err, size_t errlen)
{
	char *dst = (char *)c + o->off;
	unsigned long long u;
	double d;
	int r = 0;

	switch (o->type) {
	case T_STRING:
	case T_CONFIG:
		if (!*val) {
			snprintf(err, errlen, "%s: must not be empty", where);
			return -EINVAL;
		}
		if (strlen(val) >= o->size) {
			snprintf(err, errlen, "%s: value is too long", where);
			return -EINVAL;
		}
		snprintf(dst, o->size, "%s", val);
		return 0;
	case T_HOSTPORT: {
		char host[256];
		unsigned int port;

		if (strlen(val) >= o->size ||
		    gw_parse_hostport(val, host, sizeof(host), &port)) {
			snprintf(err, errlen,
				 "%s: '%s' is not HOST:PORT (for example "
				 "127.0.0.1:9400 or [::1]:9400)",
				 where, val);
			return -EINVAL;
		}
		snprintf(dst, o->size, "%s", val);
		return 0;
	}
	case T_UINT:
		r = gw_parse_uint(val, (unsigned long long)o->min,
				  (unsigned long long)o->max, &u);
		if (r) {
			snprintf(err, errlen,
				 "%s: '%s' is not a whole number from %.0f to "
				 "%.0f",
				 where, val, o->min, o->max);
			return -EINVAL;
		}
		*(unsigned int *)dst = (unsigned int)u;
		return 0;
	case T_U64:
		r = gw_parse_uint(val, 0, ~0ULL, &u);
		if (r) {
			snprintf(err, errlen, "%s: '%s' is not a whole number",
				 where, val);
			return -EINVAL;
		}
		*(unsigned long long *)dst = u;
		return 0;
	case T_BYTES:
		r = gw_parse_bytes(val, &u);
		if (r) {
			snprintf(err, errlen,
				 "%s: '%s' is not a size in bytes (write "
				 "10GiB, 512MiB or 0)",
				 where, val);
			return -EINVAL;
		}
		*(unsigned long long *)dst = u;
		return 0;
	case T_DURATION:
		r = gw_parse_duration(val, o->min, o->max, &d);
		if (r) {
			snprintf(err, errlen,
				 "%s: '%s' is not a duration from %gs to %gs "
				 "(write 2, 90s, 1m30s or 500ms)",
				 where, val, o->min, o->max);
			return -EINVAL;
		}
		*(double *)dst = d;
		return 0;
	case T_RATIO:
		r = gw_parse_double(val, o->min, o->max, &d);
		if (r) {
			snprintf(err, errlen,
				 "%s: '%s' is not a ratio from %g to %g "
				 "(0.005 means 0.5%% of one core)",
				 where, val, o->min, o->max);
			return -EINVAL;
		}
		*(double *)dst = d;
		return 0;
	case T_LOGLEVEL:
		if (gw_log_level_parse(val, &c->log_level)) {
			snprintf(err, errlen,
				 "%s: '%s' is not a log level (error, warn, "
				 "info, debug)",
				 where, val);
			return -EINVAL;
		}
		return 0;
	case T_COMPAT:
		if (strcmp(val, "dcgm") != 0 && strcmp(val, "none") != 0) {
			snprintf(
				err, errlen,
				"%s: '%s' is not known (supported: dcgm, none)",
				where, val);
			return -EINVAL;
		}
		snprintf(c->compat, sizeof(c->compat), "%s",
			 strcmp(val, "none") == 0 ? "" : val);
		return 0;
	case T_NOFLAG:
	case T_FLAG:
		if (strcmp(val, "true") == 0 || strcmp(val, "on") == 0 ||
		    strcmp(val, "yes") == 0) {
			*(int *)dst = 1;
			return 0;
		}
		if (strcmp(val, "false") == 0 || strcmp(val, "off") == 0 ||
		    strcmp(val, "no") == 0) {
			*(int *)dst = 0;
			return 0;
		}
		snprintf(err, errlen, "%s: '%s' is not true or false", where,
			 val);
		return -EINVAL;
	case T_STRLIST: {
		size_t n = strlen(val);

		if (n == 0 || n >= o->size ||
		    strspn(val, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				"abcdefghijklmnopqrstuvwxyz"
				"0123456789_,") != n ||
		    val[0] == ',' || val[n - 1] == ',' || strstr(val, ",,")) {
			snprintf(err, errlen,
				 "%s: '%s' is not a comma-separated list of "
				 "variable names",
				 where, val);
			return -EINVAL;
		}
		snprintf(dst, o->size, "%s", val);
		return 0;
	}
	case T_LIST: {
		struct gw_config_list *l = (struct gw_config_list *)(void *)dst;
		size_t n = strlen(val);

		if (n == 0 || n >= GW_CONFIG_LIST_LEN) {
			snprintf(err, errlen, "%s: '%s' must be 1 to %u bytes",
				 where, val, GW_CONFIG_LIST_LEN - 1);
			return -EINVAL;
		}
		if (l->n >= GW_CONFIG_LIST_MAX) {
			snprintf(err, errlen, "%s: at most %u", where,
				 GW_CONFIG_LIST_MAX);
			return -EINVAL;
		}
		memcpy(l->v[l->n++], val, n + 1);
		return 0;
	}
	case T_RW: {
		struct gw_config_list *l = &c->remote_write.urls;
		size_t n = strlen(val);

		if (n == 0 || n >= GW_CONFIG_LIST_LEN) {
			snprintf(err, errlen, "%s: '%s' must be 1 to %u bytes",
				 where, val, GW_CONFIG_LIST_LEN - 1);
			return -EINVAL;
		}
		if (l->n >= GW_CONFIG_LIST_MAX) {
			snprintf(err, errlen, "%s: at most %u", where,
				 GW_CONFIG_LIST_MAX);
			return -EINVAL;
		}
		memcpy(l->v[l->n++], val, n + 1);
		return 0;
	}
	case T_FAULT: {
		char ferr[256];

		if (c->nfaults >= GW_SIM_MAX_FAULTS) {
			snprintf(err, errlen, "%s: at most %d faults", where,
				 GW_SIM_MAX_FAULTS);
			return -EINVAL;
		}
		if (gw_sim_fault_parse(val, &c->faults[c->nfaults], ferr,
				       sizeof(ferr))) {
			snprintf(err, errlen, "%s: %s", where, ferr);
			return -EINVAL;
		}
		c->nfaults++;
		return 0;
	}
	}
	return -EINVAL;
}

/* ---- YAML ---- */

struct file_ctx {
	struct gw_config *c;
	const char *name;
	const unsigned char *data; /* the whole file, for remote_write: */
	size_t len;
	char *err;
	size_t errlen;
	unsigned int seen_line[NOPTS];
};

static int file_fail(struct file_ctx *y, const yaml_event_t *ev,
		     const char *what)
{
	snprintf(y->err, y->errlen, "%s:%zu: %s", y->name,
		 ev->start_mark.line + 1, what);
	return -EINVAL;
}

static int next_event(yaml_parser_t *p, yaml_event_t *ev, struct file_ctx *y)
{
	if (!yaml_parser_parse(p, ev)) {
		snprintf(y->err, y->errlen, "%s:%zu:%zu: %s%s%s", y->name,
			 p->problem_mark.line + 1, p->problem_mark.column + 1,
			 p->problem ? p->problem : "syntax error",
			 p->context ? " " : "", p->context ? p->context : "");
		return -EINVAL;
	}
	return 0;
}

/*
 * remote_write: keeps the value's text (Prometheus' list of blocks) for
 * export/rw_config.c, which parses and checks it: from the value's first
 * event to its last, indented as in the file (the columns before it on its
 * first line become spaces), with its first line number.
 */
static int file_rw(struct file_ctx *y, yaml_parser_t *p, size_t key_line)
{
	struct gw_config_rw *rw = &y->c->remote_write;
	size_t start = 0, end = 0, col = 0, line = 0, n;
	int depth = 0, first = 1;
	yaml_event_t ev;

	do {
		if (next_event(p, &ev, y))
			return -EINVAL;
		if (first) {
			start = ev.start_mark.index;
			col = ev.start_mark.column;
			line = ev.start_mark.line + 1;
			first = 0;
		}
		end = ev.end_mark.index;
		switch (ev.type) {
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			depth++;
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	} while (depth > 0);
	if (end > y->len || start > end) {
		snprintf(y->err, y->errlen,
			 "%s:%zu: remote_write: cannot "
			 "read the value",
			 y->name, key_line);
		return -EINVAL;
	}
	n = end - start;
	if (col + n + 1 > sizeof(rw->yaml)) {
		snprintf(y->err, y->errlen,
			 "%s:%zu: remote_write: the list is longer than %u "
			 "bytes",
			 y->name, key_line, GW_CONFIG_RW_TEXT_MAX - 1);
		return -EINVAL;
	}
	memset(rw->yaml, ' ', col);
	memcpy(rw->yaml + col, y->data + start, n);
	rw->yaml[col + n] = '\0';
	rw->line = (unsigned int)line;
	snprintf(rw->file, sizeof(rw->file), "%s", y->name);
	rw->urls.n = 0;
	return 0;
}

static int file_value(struct file_ctx *y, yaml_parser_t *p, const struct opt *o,
		      const char *key, size_t line)
{
	char where[PATH_MAX + 128];
	yaml_event_t ev;
	int err;

	snprintf(where, sizeof(where), "%s:%zu: %s", y->name, line, key);
	if (o->type == T_RW)
		return file_rw(y, p, line);
	if (next_event(p, &ev, y))
		return -EINVAL;
	if (ev.type == YAML_SCALAR_EVENT) {
		if (o->type == T_CONFIG) {
			err = file_fail(y, &ev,
					"'config' can only be given on the "
					"command line");
		} else {
			if (o->type == T_FAULT)
				y->c->nfaults = 0;
			if (o->type == T_LIST)
				((struct gw_config_list *)((char *)y->c +
							   o->off))
					->n = 0;
			err = set_opt(y->c, o,
				      (const char *)ev.data.scalar.value, where,
				      y->err, y->errlen);
		}
		yaml_event_delete(&ev);
		return err;
	}
	if (ev.type == YAML_SEQUENCE_START_EVENT && o->type == T_STRLIST) {
		char joined[256] = "";
		size_t len = 0;

		yaml_event_delete(&ev);
		for (;;) {
			if (next_event(p, &ev, y))
				return -EINVAL;
			if (ev.type == YAML_SEQUENCE_END_EVENT)
				break;
			if (ev.type != YAML_SCALAR_EVENT ||
			    len + ev.data.scalar.length + 2 >= sizeof(joined)) {
				err = file_fail(
					y, &ev,
					"expected a short list of names");
				yaml_event_delete(&ev);
				return err;
			}
			len += (size_t)snprintf(
				joined + len, sizeof(joined) - len, "%s%s",
				len ? "," : "",
				(const char *)ev.data.scalar.value);
			yaml_event_delete(&ev);
		}
		yaml_event_delete(&ev);
		return set_opt(y->c, o, joined, where, y->err, y->errlen);
	}
	if (ev.type == YAML_SEQUENCE_START_EVENT &&
	    (o->type == T_FAULT || o->type == T_LIST)) {
		yaml_event_delete(&ev);
		if (o->type == T_FAULT)
			y->c->nfaults = 0;
		else
			((struct gw_config_list *)((char *)y->c + o->off))->n =
				0;
		for (;;) {
			if (next_event(p, &ev, y))
				return -EINVAL;
			if (ev.type == YAML_SEQUENCE_END_EVENT) {
				yaml_event_delete(&ev);
				return 0;
			}
			if (ev.type != YAML_SCALAR_EVENT) {
				err = file_fail(
					y, &ev,
					o->type == T_FAULT
						? "fault: each entry must be a "
						  "string like ecc-storm:0:60"
						: "each entry must be a "
						  "string");
				yaml_event_delete(&ev);
				return err;
			}
			snprintf(where, sizeof(where), "%s:%zu: %s", y->name,
				 ev.start_mark.line + 1, key);
			err = set_opt(y->c, o,
				      (const char *)ev.data.scalar.value, where,
				      y->err, y->errlen);
			yaml_event_delete(&ev);
			if (err)
				return err;
		}
	}
	snprintf(y->err, y->errlen, "%s: expected a single value%s", where,
		 o->type == T_FAULT || o->type == T_LIST ? " or a list" : "");
	yaml_event_delete(&ev);
	return -EINVAL;
}

/* Reads "key: value" pairs until the top-level mapping ends. */
static int file_mapping(struct file_ctx *y, yaml_parser_t *p)
{
	yaml_event_t ev;
	int err;

	for (;;) {
		const struct opt *o;
		char key[128], msg[256];
		size_t line;

		if (next_event(p, &ev, y))
			return -EINVAL;
		if (ev.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&ev);
			return 0;
		}
		if (ev.type != YAML_SCALAR_EVENT) {
			err = file_fail(y, &ev, "keys must be plain names");
			yaml_event_delete(&ev);
			return err;
		}
		snprintf(key, sizeof(key), "%s",
			 (const char *)ev.data.scalar.value);
		line = ev.start_mark.line + 1;
		o = find_opt(key);
		if (!o) {
			const char *s = suggest(key);

			snprintf(msg, sizeof(msg), "unknown key '%s'%s%s%s",
				 key, s ? " (did you mean '" : "", s ? s : "",
				 s ? "'?)" : "");
		} else if (y->seen_line[o - opts]) {
			snprintf(msg, sizeof(msg),
				 "key '%s' is given twice (first on line %u)",
				 key, y->seen_line[o - opts]);
			o = NULL;
		}
		if (!o) {
			err = file_fail(y, &ev, msg);
			yaml_event_delete(&ev);
			return err;
		}
		y->seen_line[o - opts] = (unsigned int)line;
		yaml_event_delete(&ev);
		err = file_value(y, p, o, key, line);
		if (err)
			return err;
	}
}

/*
 * stream-start, then nothing, or one document holding an empty scalar
 * (an empty file, "~") or a mapping of settings.
 */
static int file_document(struct file_ctx *y, yaml_parser_t *p)
{
	yaml_event_t ev;
	int err = 0, docs = 0;

	for (;;) {
		if (next_event(p, &ev, y))
			return -EINVAL;
		switch (ev.type) {
		case YAML_STREAM_START_EVENT:
		case YAML_DOCUMENT_END_EVENT:
			break;
		case YAML_STREAM_END_EVENT:
			yaml_event_delete(&ev);
			return 0;
		case YAML_DOCUMENT_START_EVENT:
			if (docs++)
				err = file_fail(y, &ev,
						"only one YAML document is "
						"allowed");
			break;
		case YAML_SCALAR_EVENT:
			/* An empty document, "~" or "null": no settings. */
			if (ev.data.scalar.length != 0 &&
			    strcmp((const char *)ev.data.scalar.value, "~") !=
				    0 &&
			    strcmp((const char *)ev.data.scalar.value,
				   "null") != 0)
				err = file_fail(
					y, &ev,
					"expected a mapping of settings "
					"(key: value)");
			break;
		case YAML_MAPPING_START_EVENT:
			yaml_event_delete(&ev);
			err = file_mapping(y, p);
			if (err)
				return err;
			continue;
		default:
			err = file_fail(y, &ev,
					"expected a mapping of settings "
					"(key: value)");
			break;
		}
		yaml_event_delete(&ev);
		if (err)
			return err;
	}
}

int gw_config_load_buffer(struct gw_config *c, const char *name,
			  const unsigned char *data, size_t len, char *err,
			  size_t errlen)
{
	struct file_ctx y = { .c = c,
			      .name = name,
			      .data = data,
			      .len = len,
			      .err = err,
			      .errlen = errlen };
	yaml_parser_t p;
	int r;

	if (!yaml_parser_initialize(&p)) {
		snprintf(err, errlen, "%s: out of memory", name);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&p, data, len);
	r = file_document(&y, &p);
	yaml_parser_delete(&p);
	return r;
}

int gw_config_load_file(struct gw_config *c, const char *path, char *err,
			size_t errlen)
{
	unsigned char *data = NULL;
	size_t len = 0, cap = 0;
	FILE *f;
	int r;

	f = fopen(path, "rb");
	if (!f) {
		r = -errno;
		snprintf(err, errlen, "%s: cannot open config file: %s", path,
			 strerror(errno));
		return r;
	}
	for (;;) {
		size_t n;

		if (len == cap) {
			unsigned char *nd;

			if (cap >= (1u << 20)) {
				snprintf(err, errlen,
					 "%s: config file is larger than 1 MiB",
					 path);
				r = -EFBIG;
				goto out;
			}
			cap = cap ? cap * 2 : 4096;
			nd = realloc(data, cap);
			if (!nd) {
				r = -ENOMEM;
				snprintf(err, errlen, "%s: out of memory",
					 path);
				goto out;
			}
			data = nd;
		}
		n = fread(data + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		r = -EIO;
		goto out;
	}
	r = gw_config_load_buffer(c, path, data, len, err, errlen);
out:
	free(data);
	fclose(f);
	return r;
}

int gw_config_remote_write(const struct gw_config *c, struct gw_rw_config **out,
			   char *err, size_t errlen)
{
	const struct gw_config_rw *rw = &c->remote_write;
	const char *urls[GW_CONFIG_LIST_MAX];

	for (unsigned int i = 0; i < rw->urls.n; i++)
		urls[i] = rw->urls.v[i];
	return gw_rw_config_new(urls, rw->urls.n, rw->yaml, strlen(rw->yaml),
				rw->file, rw->line, out, err, errlen);
}

/* The remote_write endpoints, parsed in full (and dropped): every error
 * in a remote_write: block is a config error at start and on SIGHUP. */
static int validate_rw(const struct gw_config *c, char *err, size_t errlen)
{
	struct gw_rw_config *x = NULL;
	int r = gw_config_remote_write(c, &x, err, errlen);

	gw_rw_config_free(x);
	return r ? -EINVAL : 0;
}

int gw_config_validate(const struct gw_config *c, char *err, size_t errlen)
{
	if (c->detail_interval < c->interval) {
		snprintf(err, errlen,
			 "detail-interval (%gs) must not be shorter than "
			 "interval (%gs)",
			 c->detail_interval, c->interval);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < c->nfaults; i++) {
		if (c->simulate == 0) {
			snprintf(err, errlen,
				 "--fault needs --simulate N (faults are "
				 "injected into simulated GPUs)");
			return -EINVAL;
		}
		if (c->faults[i].gpu >= c->simulate) {
			snprintf(
				err, errlen,
				"fault %s:%u: there are only %u simulated GPUs "
				"(0..%u)",
				gw_sim_fault_name(c->faults[i].kind),
				c->faults[i].gpu, c->simulate, c->simulate - 1);
			return -EINVAL;
		}
	}
	if (strcmp(c->profile, "gpu") != 0 && strcmp(c->profile, "all") != 0 &&
	    strcmp(c->profile, "off") != 0) {
		snprintf(err, errlen, "--profile %s: expected gpu, all or off",
			 c->profile);
		return -EINVAL;
	}
	if (strcmp(c->profile_unwind, "auto") != 0 &&
	    strcmp(c->profile_unwind, "fp") != 0 &&
	    strcmp(c->profile_unwind, "dwarf") != 0) {
		snprintf(err, errlen,
			 "--profile-unwind %s: expected auto, fp or dwarf",
			 c->profile_unwind);
		return -EINVAL;
	}
	{
		const char *sel[GW_CONFIG_LIST_MAX];
		struct gw_prof_select *ps;
		int r;

		for (unsigned int i = 0; i < c->profile_match.n; i++)
			sel[i] = c->profile_match.v[i];
		r = gw_prof_select_new(sel, c->profile_match.n, NULL, &ps, err,
				       errlen);
		if (r)
			return r;
		gw_prof_select_free(ps);
	}
	for (unsigned int i = 0; i < c->cuda_lib_globs.n; i++)
		if (c->cuda_lib_globs.v[i][0] != '/') {
			snprintf(err, errlen,
				 "--cuda-lib-glob %s: expected an absolute "
				 "pattern (starting with /)",
				 c->cuda_lib_globs.v[i]);
			return -EINVAL;
		}
	return validate_rw(c, err, errlen);
}

/* ---- the table as documentation, and the reload ---- */

/* "--interval", or "--no-ebpf" for a switch. */
static void flag_name(const struct opt *o, char *buf, size_t n)
{
	snprintf(buf, n, "--%s%s", o->type == T_NOFLAG ? "no-" : "", o->name);
}

bool gw_config_setting(size_t i, struct gw_config_setting *out)
{
	const struct opt *o;
	size_t k;

	if (i >= NOPTS)
		return false;
	o = &opts[i];
	memset(out, 0, sizeof(*out));
	flag_name(o, out->flag, sizeof(out->flag));
	snprintf(out->key, sizeof(out->key), "%s", o->name);
	for (k = 0; out->key[k]; k++)
		if (out->key[k] == '-')
			out->key[k] = '_';
	out->arg = o->arg;
	out->def = o->def;
	out->brief = o->brief;
	out->help = o->help;
	out->reload = o->reload;
	out->negated = o->type == T_NOFLAG;
	out->is_switch = o->type == T_NOFLAG || o->type == T_FLAG;
	return true;
}

static bool same_value(const struct opt *o, const struct gw_config *a,
		       const struct gw_config *b)
{
	const char *pa = (const char *)a + o->off;
	const char *pb = (const char *)b + o->off;

	switch (o->type) {
	case T_STRING:
	case T_HOSTPORT:
	case T_COMPAT:
	case T_CONFIG:
	case T_STRLIST:
		return strcmp(pa, pb) == 0;
	case T_LIST: {
		const struct gw_config_list *la = (const void *)pa;
		const struct gw_config_list *lb = (const void *)pb;

		if (la->n != lb->n)
			return false;
		for (unsigned int i = 0; i < la->n; i++)
			if (strcmp(la->v[i], lb->v[i]) != 0)
				return false;
		return true;
	}
	case T_RW: {
		const struct gw_config_rw *ra = (const void *)pa;
		const struct gw_config_rw *rb = (const void *)pb;

		if (ra->urls.n != rb->urls.n || strcmp(ra->yaml, rb->yaml))
			return false;
		for (unsigned int i = 0; i < ra->urls.n; i++)
			if (strcmp(ra->urls.v[i], rb->urls.v[i]) != 0)
				return false;
		return true;
	}
	case T_FAULT:
		return a->nfaults == b->nfaults &&
		       memcmp(a->faults, b->faults,
			      a->nfaults * sizeof(a->faults[0])) == 0;
	case T_UINT:
	case T_U64:
	case T_BYTES:
	case T_DURATION:
	case T_RATIO:
	case T_LOGLEVEL:
	case T_NOFLAG:
	case T_FLAG:
		break;
	}
	return memcmp(pa, pb, o->size) == 0;
}

unsigned int gw_config_reload(struct gw_config *run,
			      const struct gw_config *next)
{
	unsigned int applied = 0;

	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt *o = &opts[i];
		char flag[48];

		if (same_value(o, run, next))
			continue;
		if (o->reload == GW_CONFIG_LIVE) {
			memcpy((char *)run + o->off,
			       (const char *)next + o->off, o->size);
			if (o->type == T_FAULT)
				run->nfaults = next->nfaults;
			applied++;
			continue;
		}
		flag_name(o, flag, sizeof(flag));
		gw_warn("reload: %s changed; restart the agent to apply it",
			flag);
	}
	return applied;
}

/* "1s; applied on SIGHUP" for --help. */
static void print_default(FILE *out, const struct opt *o)
{
	fprintf(out, "      Default: %s; %s.\n", o->def[0] ? o->def : "none",
		o->type == T_CONFIG	      ? "re-read on SIGHUP"
		: o->reload == GW_CONFIG_LIVE ? "applied on SIGHUP"
					      : "a change needs a restart");
}

/* The README's "on SIGHUP" column. */
static const char *reload_word(const struct opt *o)
{
	if (o->type == T_CONFIG)
		return "re-read";
	return o->reload == GW_CONFIG_LIVE ? "applied" : "restart";
}

/* text on lines of at most width columns, broken at spaces. */
static void print_wrapped(FILE *out, const char *text, size_t width)
{
	while (*text) {
		size_t n = strlen(text), cut = n;

		if (n > width) {
			cut = width;
			while (cut > 0 && text[cut] != ' ')
				cut--;
			if (cut == 0)
				cut = strcspn(text, " ");
		}
		fprintf(out, "%.*s\n", (int)cut, text);
		text += cut;
		while (*text == ' ')
			text++;
	}
}

void gw_config_usage(FILE *out)
{
	char para[1024];
	bool first = true;
	size_t n;

	fprintf(out,
		"Usage: gpuwatch agent [OPTION]...\n"
		"\n"
		"Run the node agent: read every GPU through NVML (or simulate "
		"GPUs) and serve\n"
		"the readings on http://HOST:PORT/metrics in the Prometheus "
		"text format\n"
		"(OpenMetrics when the scraper asks), with /healthz for "
		"liveness. Every\n"
		"sample is also kept in a local history under DIR/store (raw "
		"for "
		"a day,\n"
		"1-minute and 1-hour rollups for a month and a year), served "
		"by "
		"the\n"
		"Prometheus query API at /api/v1/ (gpuwatch query, promtool, "
		"Grafana).\n"
		"\n"
		"Options (each is also a key of the --config file: "
		"--detail-interval 30\n"
		"is detail_interval: 30). SECONDS and DURATION are a number of "
		"seconds\n"
		"(2, 0.5) or a Prometheus duration (500ms, 90s, 1m30s, 2h, "
		"30d, "
		"1y);\n"
		"BYTES may end in KiB, MiB, GiB or TiB:\n");
	for (size_t i = 0; i < NOPTS; i++) {
		const char *h = opts[i].help;
		char left[64];

		if (opts[i].type == T_NOFLAG)
			snprintf(left, sizeof(left), "--no-%s", opts[i].name);
		else if (opts[i].type == T_FLAG)
			snprintf(left, sizeof(left), "--%s", opts[i].name);
		else
			snprintf(left, sizeof(left), "--%s %s", opts[i].name,
				 opts[i].arg);
		fprintf(out, "  %s\n", left);
		while (*h) {
			const char *nl = strchr(h, '\n');
			size_t n = nl ? (size_t)(nl - h) : strlen(h);

			fprintf(out, "      %.*s\n", (int)n, h);
			h += n + (nl ? 1 : 0);
		}
		print_default(out, &opts[i]);
	}
	fprintf(out, "  --check-config\n"
		     "      Read and check the flags, the config file, its "
		     "remote_write blocks\n"
		     "      and the rule files; print what is wrong, or that "
		     "all is well, and exit\n"
		     "      (0 good, 2 bad).\n"
		     "  -h, --help\n"
		     "      Show this help and exit.\n"
		     "\n");
	n = (size_t)snprintf(
		para, sizeof(para),
		"Signals: SIGTERM or SIGINT stop the agent cleanly "
		"(exit 0 within 5 s); SIGHUP re-reads the config "
		"file and applies");
	for (size_t i = 0; i < NOPTS && n < sizeof(para); i++) {
		if (opts[i].reload != GW_CONFIG_LIVE ||
		    opts[i].type == T_CONFIG)
			continue;
		n += (size_t)snprintf(para + n, sizeof(para) - n, "%s %s",
				      first ? "" : ",", opts[i].name);
		first = false;
	}
	if (n < sizeof(para))
		snprintf(para + n, sizeof(para) - n,
			 " at once; any other setting that changed is logged "
			 "as needing a restart and keeps its running value.");
	print_wrapped(out, para, 76);
	fprintf(out,
		"\n"
		"Exit status: 0 after a clean stop, 2 for a bad flag or "
		"config, "
		"1 when the\n"
		"agent cannot start (address in use, data directory not "
		"writable).\n"
		"\n"
		"Examples:\n"
		"  gpuwatch agent                      # all GPUs, "
		"http://127.0.0.1:9400/metrics\n"
		"  gpuwatch agent --listen 0.0.0.0:9400 --config "
		"/etc/gpuwatch/agent.yaml\n"
		"  gpuwatch agent --simulate 8 --fault xid79:3:120   # demo: "
		"GPU 3 falls off at 2 min\n");
}

void gw_config_markdown(FILE *out)
{
	fprintf(out, "| option | default | on SIGHUP | meaning |\n"
		     "|---|---|---|---|\n");
	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt *o = &opts[i];
		char flag[48];

		flag_name(o, flag, sizeof(flag));
		fprintf(out, "| `%s%s%s` | ", flag, o->arg[0] ? " " : "",
			o->arg);
		if (o->def[0])
			fprintf(out, "`%s`", o->def);
		else
			fprintf(out, "none");
		fprintf(out, " | %s | %s |\n", reload_word(o), o->brief);
	}
}

int gw_config_from_args(struct gw_config *c, int argc, char **argv, char *err,
			size_t errlen)
{
	struct option lopts[NOPTS + 4];
	char noflags[NOPTS][40];

	for (size_t i = 0; i < NOPTS; i++)
		snprintf(noflags[i], sizeof(noflags[i]), "no-%s", opts[i].name);
	const char *config_path = NULL;
	int fault_flags = 0, check = 0, r, ch, idx;
	unsigned char list_seen[NOPTS] = { 0 };

	for (size_t i = 0; i < NOPTS; i++) {
		lopts[i].name =
			opts[i].type == T_NOFLAG ? noflags[i] : opts[i].name;
		lopts[i].has_arg =
			opts[i].type == T_NOFLAG || opts[i].type == T_FLAG
				? no_argument
				: required_argument;
		lopts[i].flag = NULL;
		lopts[i].val = 256 + (int)i;
	}
	lopts[NOPTS] = (struct option){ "help", no_argument, NULL, 'h' };
	lopts[NOPTS + 1] =
		(struct option){ "help-markdown", no_argument, NULL, 'M' };
	lopts[NOPTS + 2] =
		(struct option){ "check-config", no_argument, NULL, 'K' };
	lopts[NOPTS + 3] = (struct option){ 0 };

	/* Pass 1: find --config and --help, reject unknown flags. */
	optind =
		0; /* 0, not 1: also resets glibc's state inside '-xy' groups */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":h", lopts, &idx)) != -1) {
		if (ch == 'h')
			return 1;
		if (ch == 'M')
			return 2;
		if (ch == 'K')
			check = 1;
		if (ch == '?') {
			const char *bad = argv[optind - 1];
			const char *s = NULL;
			char shortopt[3] = { '-', (char)optopt, '\0' };

			if (optopt)
				bad = shortopt; /* inside a group like -xy */
			else if (bad && bad[0] == '-' && bad[1] == '-')
				s = suggest(bad + 2);
			snprintf(err, errlen,
				 "unknown option '%s'%s%s%s; see "
				 "'gpuwatch agent --help'",
				 bad ? bad : "?", s ? " (did you mean --" : "",
				 s ? s : "", s ? "?)" : "");
			return -EINVAL;
		}
		if (ch == ':') {
			snprintf(err, errlen, "option '%s' needs a value",
				 argv[optind - 1]);
			return -EINVAL;
		}
		if (ch >= 256 && opts[ch - 256].type == T_CONFIG)
			config_path = optarg;
	}
	if (optind < argc) {
		snprintf(
			err, errlen,
			"unexpected argument '%s'; see 'gpuwatch agent --help'",
			argv[optind]);
		return -EINVAL;
	}
	if (config_path) {
		r = gw_config_load_file(c, config_path, err, errlen);
		if (r)
			return -EINVAL;
		snprintf(c->config_path, sizeof(c->config_path), "%s",
			 config_path);
	}
	/* Pass 2: flags override the file. */
	optind = 0;
	while ((ch = getopt_long(argc, argv, ":h", lopts, &idx)) != -1) {
		const struct opt *o;
		char where[80];

		if (ch < 256)
			continue;
		o = &opts[ch - 256];
		if (o->type == T_CONFIG)
			continue;
		if (o->type == T_FAULT && !fault_flags++)
			c->nfaults = 0;
		if (o->type == T_LIST && !list_seen[ch - 256]++)
			((struct gw_config_list *)((char *)c + o->off))->n = 0;
		if (o->type == T_RW && !list_seen[ch - 256]++) {
			c->remote_write.urls.n = 0;
			c->remote_write.yaml[0] = '\0';
		}
		snprintf(where, sizeof(where), "--%s%s",
			 o->type == T_NOFLAG ? "no-" : "", o->name);
		r = set_opt(c, o,
			    o->type == T_NOFLAG ? "false"
			    : o->type == T_FLAG ? "true"
						: optarg,
			    where, err, errlen);
		if (r)
			return r;
	}
	r = gw_config_validate(c, err, errlen);
	return r ? r : check ? 3 : 0;
}
