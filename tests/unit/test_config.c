// SPDX-License-Identifier: MIT
/*
 * test_config.c - the agent's settings as a user gives them: defaults, the
 * YAML file, flags on top, and the error messages for each kind of mistake
 * (they must name the flag, or the file, line and key).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/config.h"

#define MAX_ARGS 32

/* Writes text into a new temporary file; returns its malloc'ed path. */
static char *write_tmp(const char *text)
{
	const char *dir = getenv("TMPDIR");
	char *path;
	size_t n = strlen(text);
	int fd;

	if (!dir || !*dir)
		dir = "/tmp";
	assert_true(asprintf(&path, "%s/gw-config-XXXXXX", dir) > 0);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	assert_int_equal(close(fd), 0);
	return path;
}

static void drop_tmp(char *path)
{
	unlink(path);
	free(path);
}

/*
 * Runs gw_config_from_args on defaults with "agent" followed by the given
 * arguments (NULL-terminated); getopt permutes argv, so it is a copy.
 */
static int run_args(struct gw_config *c, char *err, size_t errlen, ...)
{
	char *argv[MAX_ARGS + 2];
	int argc = 0, r;
	const char *a;
	va_list ap;

	gw_config_defaults(c);
	argv[argc++] = strdup("agent");
	va_start(ap, errlen);
	while ((a = va_arg(ap, const char *)) != NULL) {
		assert_true(argc <= MAX_ARGS);
		argv[argc++] = strdup(a);
	}
	va_end(ap);
	argv[argc] = NULL;
	err[0] = '\0';
	r = gw_config_from_args(c, argc, argv, err, errlen);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	return r;
}

/* Loads text as a config file on top of defaults. */
static int load_text(struct gw_config *c, const char *text, char *err,
		     size_t errlen)
{
	gw_config_defaults(c);
	err[0] = '\0';
	return gw_config_load_buffer(c, "agent.yaml",
				     (const unsigned char *)text, strlen(text),
				     err, errlen);
}

#define assert_contains(hay, needle)                                           \
	do {                                                                   \
		if (!strstr((hay), (needle)))                                  \
			fail_msg("'%s' does not contain '%s'", (hay),          \
				 (needle));                                    \
	} while (0)

static void check_defaults(const struct gw_config *c)
{
	assert_string_equal(c->listen, "127.0.0.1:9400");
	assert_string_equal(c->data_dir, "/var/lib/gpuwatch");
	assert_string_equal(c->nvml_lib, "libnvidia-ml.so.1");
	assert_string_equal(c->config_path, "");
	assert_string_equal(c->compat, "");
	assert_int_equal(c->simulate, 0);
	assert_true(c->interval == 1);
	assert_true(c->detail_interval == 30);
	assert_true(c->collector_timeout == 5);
	assert_true(c->cpu_budget == 0.005);
	assert_true(c->sim_day == 86400);
	assert_true(c->sim_seed == 1);
	assert_true(c->store_retire_after == 300);
	assert_int_equal(c->log_level, GW_LOG_INFO);
	assert_int_equal(c->nfaults, 0);
}

static void defaults(void **state)
{
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];

	(void)state;
	gw_config_defaults(&c);
	check_defaults(&c);
	assert_int_equal(gw_config_validate(&c, err, sizeof(err)), 0);
	/* No flags: the defaults, valid. */
	assert_int_equal(run_args(&c, err, sizeof(err), NULL), 0);
	check_defaults(&c);
}

static void every_flag(void **state)
{
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];

	(void)state;
	assert_int_equal(run_args(&c, err, sizeof(err), "--listen",
				  "[::1]:9500", "--data-dir", "/srv/gw",
				  "--nvml-lib", "/opt/libnvml.so", "--simulate",
				  "4", "--fault", "ecc-storm:1:60:30",
				  "--fault", "xid79:3", "--sim-day", "10m",
				  "--sim-seed", "18446744073709551615",
				  "--interval=500ms", "--detail-interval", "1m",
				  "--collector-timeout", "2s", "--cpu-budget",
				  "0.02", "--compat", "dcgm", "--log-level",
				  "debug", "--store-retire-after", "2h", NULL),
			 0);
	assert_string_equal(c.listen, "[::1]:9500");
	assert_string_equal(c.data_dir, "/srv/gw");
	assert_string_equal(c.nvml_lib, "/opt/libnvml.so");
	assert_int_equal(c.simulate, 4);
	assert_int_equal(c.nfaults, 2);
	assert_int_equal(c.faults[0].kind, GW_SIM_FAULT_ECC_STORM);
	assert_int_equal(c.faults[0].gpu, 1);
	assert_true(c.faults[0].after_s == 60 && c.faults[0].duration_s == 30);
	assert_int_equal(c.faults[1].kind, GW_SIM_FAULT_XID79);
	assert_int_equal(c.faults[1].gpu, 3);
	assert_true(c.sim_day == 600);
	assert_true(c.sim_seed == ~0ULL);
	assert_true(c.interval == 0.5);
	assert_true(c.detail_interval == 60);
	assert_true(c.collector_timeout == 2);
	assert_true(c.cpu_budget == 0.02);
	assert_string_equal(c.compat, "dcgm");
	assert_true(c.store_retire_after == 7200);
	assert_int_equal(c.log_level, GW_LOG_DEBUG);
}

static void bad_flag_values(void **state)
{
	static const struct {
		const char *flag, *value, *want;
	} bad[] = {
		{ "--interval", "5x", "--interval: '5x' is not a duration" },
		{ "--interval", "50ms", "--interval: '50ms'" },
		{ "--interval", "-1", "--interval: '-1'" },
		{ "--listen", "9400", "--listen: '9400' is not HOST:PORT" },
		{ "--listen", "::1:9400", "--listen: '::1:9400'" },
		{ "--listen", "0.0.0.0:70000", "--listen: '0.0.0.0:70000'" },
		{ "--simulate", "65",
		  "--simulate: '65' is not a whole number" },
		{ "--simulate", "-1", "--simulate: '-1'" },
		{ "--sim-seed", "1.5",
		  "--sim-seed: '1.5' is not a whole number" },
		{ "--cpu-budget", "2", "--cpu-budget: '2' is not a ratio" },
		{ "--cpu-budget", "0", "--cpu-budget: '0'" },
		{ "--compat", "prometheus",
		  "--compat: 'prometheus' is not known" },
		{ "--log-level", "verbose",
		  "--log-level: 'verbose' is not a log" },
		{ "--data-dir", "", "--data-dir: must not be empty" },
		{ "--fault", "meltdown:0", "--fault: " },
		{ "--sim-day", "1s", "--sim-day: '1s'" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gw_config c;
		char err[GW_CONFIG_ERR_MAX];

		assert_int_equal(run_args(&c, err, sizeof(err), "--simulate",
					  "2", bad[i].flag, bad[i].value, NULL),
				 -EINVAL);
		assert_contains(err, bad[i].want);
	}
}

static void unknown_flag_suggests(void **state)
{
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];

	(void)state;
	assert_int_equal(
		run_args(&c, err, sizeof(err), "--intervall", "5", NULL),
		-EINVAL);
	assert_contains(err, "unknown option '--intervall'");
	assert_contains(err, "did you mean --interval?");

	/* The file spelling on the command line points to the flag. */
	assert_int_equal(
		run_args(&c, err, sizeof(err), "--detail_interval", "30", NULL),
		-EINVAL);
	assert_contains(err, "did you mean --detail-interval?");

	assert_int_equal(run_args(&c, err, sizeof(err), "--frobnicate", NULL),
			 -EINVAL);
	assert_contains(err, "unknown option '--frobnicate'");
	assert_null(strstr(err, "did you mean"));

	assert_int_equal(run_args(&c, err, sizeof(err), "--interval", NULL),
			 -EINVAL);
	assert_contains(err, "'--interval' needs a value");

	assert_int_equal(run_args(&c, err, sizeof(err), "serve", NULL),
			 -EINVAL);
	assert_contains(err, "unexpected argument 'serve'");

	/* A bad letter inside a short-option group is named as itself. */
	assert_int_equal(run_args(&c, err, sizeof(err), "-hx", NULL), 1);
	assert_int_equal(run_args(&c, err, sizeof(err), "-xy", NULL), -EINVAL);
	assert_contains(err, "unknown option '-x'");
	/* ...and leaves no state behind for the next parse. */
	assert_int_equal(
		run_args(&c, err, sizeof(err), "--interval", "2", NULL), 0);
	assert_true(c.interval == 2);
}

static void help(void **state)
{
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(run_args(&c, err, sizeof(err), "--help", NULL), 1);
	assert_int_equal(run_args(&c, err, sizeof(err), "-h", NULL), 1);
	/* --help wins over other flags, even bad ones after it. */
	assert_int_equal(run_args(&c, err, sizeof(err), "--interval", "2",
				  "--help", "--nonsense", NULL),
			 1);

	f = open_memstream(&text, &len);
	assert_non_null(f);
	gw_config_usage(f);
	assert_int_equal(fclose(f), 0);
	/* Every flag is documented, with its argument. */
	assert_contains(text, "Usage: gpuwatch agent");
	assert_contains(text, "--listen HOST:PORT");
	assert_contains(text, "--data-dir DIR");
	assert_contains(text, "--config FILE");
	assert_contains(text, "--nvml-lib PATH");
	assert_contains(text, "--simulate N");
	assert_contains(text, "--fault NAME:GPU[:AFTER[:FOR]]");
	assert_contains(text, "--sim-day SECONDS");
	assert_contains(text, "--sim-seed N");
	assert_contains(text, "--interval SECONDS");
	assert_contains(text, "--detail-interval SECONDS");
	assert_contains(text, "--collector-timeout SECONDS");
	assert_contains(text, "--cpu-budget RATIO");
	assert_contains(text, "--compat dcgm");
	assert_contains(text, "--log-level LEVEL");
	assert_contains(text, "-h, --help");
	free(text);
}

static void file_with_every_key(void **state)
{
	static const char yaml[] = "# gpuwatch agent\n"
				   "listen: 0.0.0.0:9401\n"
				   "data_dir: /srv/gpuwatch\n"
				   "nvml-lib: /usr/lib/libnvidia-ml.so.1\n"
				   "simulate: 8\n"
				   "fault:\n"
				   "  - thermal-runaway:0:120\n"
				   "  - power-cap:7:10:5.5\n"
				   "sim_day: 1h\n"
				   "sim-seed: 42\n"
				   "interval: 2s\n"
				   "detail_interval: 1m\n"
				   "collector-timeout: 500ms\n"
				   "cpu_budget: 0.01\n"
				   "compat: dcgm\n"
				   "log_level: warn\n";
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];
	char *path = write_tmp(yaml);

	(void)state;
	gw_config_defaults(&c);
	assert_int_equal(gw_config_load_file(&c, path, err, sizeof(err)), 0);
	assert_string_equal(c.listen, "0.0.0.0:9401");
	assert_string_equal(c.data_dir, "/srv/gpuwatch");
	assert_string_equal(c.nvml_lib, "/usr/lib/libnvidia-ml.so.1");
	assert_int_equal(c.simulate, 8);
	assert_int_equal(c.nfaults, 2);
	assert_int_equal(c.faults[0].kind, GW_SIM_FAULT_THERMAL_RUNAWAY);
	assert_int_equal(c.faults[0].gpu, 0);
	assert_true(c.faults[0].after_s == 120 && c.faults[0].duration_s == 0);
	assert_int_equal(c.faults[1].kind, GW_SIM_FAULT_POWER_CAP);
	assert_int_equal(c.faults[1].gpu, 7);
	assert_true(c.faults[1].after_s == 10 && c.faults[1].duration_s == 5.5);
	assert_true(c.sim_day == 3600);
	assert_true(c.sim_seed == 42);
	assert_true(c.interval == 2);
	assert_true(c.detail_interval == 60);
	assert_true(c.collector_timeout == 0.5);
	assert_true(c.cpu_budget == 0.01);
	assert_string_equal(c.compat, "dcgm");
	assert_int_equal(c.log_level, GW_LOG_WARN);
	assert_int_equal(gw_config_validate(&c, err, sizeof(err)), 0);

	/* The same through --config, which is remembered for SIGHUP. */
	assert_int_equal(run_args(&c, err, sizeof(err), "--config", path, NULL),
			 0);
	assert_string_equal(c.config_path, path);
	assert_int_equal(c.simulate, 8);
	assert_int_equal(c.nfaults, 2);
	assert_true(c.detail_interval == 60);
	drop_tmp(path);
}

static void flags_override_file(void **state)
{
	static const char yaml[] = "interval: 2\n"
				   "detail-interval: 20\n"
				   "log-level: error\n"
				   "simulate: 2\n"
				   "fault: [ecc-storm:0, xid79:1]\n";
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];
	char *path = write_tmp(yaml);

	(void)state;
	/* The flag comes before --config and still wins. */
	assert_int_equal(run_args(&c, err, sizeof(err), "--interval", "3",
				  "--config", path, "--fault", "power-cap:1",
				  NULL),
			 0);
	assert_true(c.interval == 3);
	assert_true(c.detail_interval == 20);
	assert_int_equal(c.log_level, GW_LOG_ERROR);
	assert_int_equal(c.simulate, 2);
	/* --fault replaces the file's list, it does not add to it. */
	assert_int_equal(c.nfaults, 1);
	assert_int_equal(c.faults[0].kind, GW_SIM_FAULT_POWER_CAP);
	assert_int_equal(c.faults[0].gpu, 1);

	/* Without flags, the file's list is kept. */
	assert_int_equal(run_args(&c, err, sizeof(err), "--config", path, NULL),
			 0);
	assert_int_equal(c.nfaults, 2);
	assert_true(c.interval == 2);

	/* Cross-field checks see the merged result. */
	assert_int_equal(run_args(&c, err, sizeof(err), "--config", path,
				  "--interval", "30", NULL),
			 -EINVAL);
	assert_contains(err, "detail-interval (20s) must not be shorter than "
			     "interval (30s)");
	drop_tmp(path);
}

static void unknown_key(void **state)
{
	static const char yaml[] = "# tuned for the big box\n"
				   "listen: 127.0.0.1:9400\n"
				   "intervall: 5\n";
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];
	char *path = write_tmp(yaml), *want;

	(void)state;
	gw_config_defaults(&c);
	assert_int_equal(gw_config_load_file(&c, path, err, sizeof(err)),
			 -EINVAL);
	assert_true(asprintf(&want, "%s:3: unknown key 'intervall'", path) > 0);
	assert_contains(err, want);
	assert_contains(err, "did you mean 'interval'?");
	free(want);

	/* Through --config the same message comes out. */
	assert_int_equal(run_args(&c, err, sizeof(err), "--config", path, NULL),
			 -EINVAL);
	assert_contains(err, ":3: unknown key 'intervall'");
	drop_tmp(path);

	assert_int_equal(load_text(&c, "log_levle: debug\n", err, sizeof(err)),
			 -EINVAL);
	assert_contains(err, "agent.yaml:1: unknown key 'log_levle'");
	assert_contains(err, "did you mean 'log-level'?");
	assert_int_equal(
		load_text(&c, "x: 1\n\n\ncolour: blue\n", err, sizeof(err)),
		-EINVAL);
	assert_contains(err, "agent.yaml:1: unknown key 'x'");
	assert_null(strstr(err, "did you mean"));
}

static void bad_value_names_line_and_key(void **state)
{
	static const struct {
		const char *yaml, *want;
	} bad[] = {
		{ "interval: 1\ndetail_interval: 5x\n",
		  "agent.yaml:2: detail_interval: '5x' is not a duration" },
		{ "\n\nsimulate: 65\n",
		  "agent.yaml:3: simulate: '65' is not a whole number" },
		{ "listen: 9400\n",
		  "agent.yaml:1: listen: '9400' is not HOST:PORT" },
		{ "log-level: loud\n",
		  "agent.yaml:1: log-level: 'loud' is not a log level" },
		{ "cpu_budget: 5%\n", "agent.yaml:1: cpu_budget: '5%'" },
		{ "data_dir: ''\n",
		  "agent.yaml:1: data_dir: must not be empty" },
		{ "interval: {a: 1}\n",
		  "agent.yaml:1: interval: expected a single value" },
		{ "interval: [1, 2]\n",
		  "agent.yaml:1: interval: expected a single value" },
		{ "simulate: 2\nfault:\n  - ecc-storm:0\n  - bogus:1\n",
		  "agent.yaml:4: fault: " },
		{ "fault:\n  - {name: xid79}\n",
		  "agent.yaml:2: fault: each entry must be a string" },
		{ "fault: {a: b}\n",
		  "agent.yaml:1: fault: expected a single value or a list" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gw_config c;
		char err[GW_CONFIG_ERR_MAX];

		assert_int_equal(load_text(&c, bad[i].yaml, err, sizeof(err)),
				 -EINVAL);
		assert_contains(err, bad[i].want);
	}
}

static void duplicate_keys(void **state)
{
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];

	(void)state;
	assert_int_equal(load_text(&c,
				   "interval: 1\nsimulate: 1\ninterval: 2\n",
				   err, sizeof(err)),
			 -EINVAL);
	assert_contains(err, "agent.yaml:3: key 'interval' is given twice "
			     "(first on line 1)");
	/* Both spellings are the same key. */
	assert_int_equal(load_text(&c,
				   "detail_interval: 30\ndetail-interval: 60\n",
				   err, sizeof(err)),
			 -EINVAL);
	assert_contains(err, "agent.yaml:2: key 'detail-interval' is given "
			     "twice (first on line 1)");
}

static void config_key_refused(void **state)
{
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];

	(void)state;
	assert_int_equal(load_text(&c, "interval: 2\nconfig: /etc/other.yaml\n",
				   err, sizeof(err)),
			 -EINVAL);
	assert_contains(err, "agent.yaml:2: 'config' can only be given on the "
			     "command line");
	assert_string_equal(c.config_path, "");
}

static void dash_and_underscore(void **state)
{
	static const char *const spelled[] = {
		"detail_interval: 45\nlog_level: debug\ncpu_budget: 0.5\n"
		"collector_timeout: 3\nsim_seed: 7\ndata_dir: /a\n",
		"detail-interval: 45\nlog-level: debug\ncpu-budget: 0.5\n"
		"collector-timeout: 3\nsim-seed: 7\ndata-dir: /a\n",
	};

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct gw_config c;
		char err[GW_CONFIG_ERR_MAX];

		assert_int_equal(load_text(&c, spelled[i], err, sizeof(err)),
				 0);
		assert_true(c.detail_interval == 45);
		assert_int_equal(c.log_level, GW_LOG_DEBUG);
		assert_true(c.cpu_budget == 0.5);
		assert_true(c.collector_timeout == 3);
		assert_true(c.sim_seed == 7);
		assert_string_equal(c.data_dir, "/a");
	}
}

static void fault_lists(void **state)
{
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];

	(void)state;
	/* Block sequence, flow sequence and a single string. */
	assert_int_equal(load_text(&c,
				   "simulate: 4\n"
				   "fault:\n"
				   "  - ecc-storm:0:60\n"
				   "  - xid79:3:120:10\n"
				   "  - pcie-downgrade:2\n",
				   err, sizeof(err)),
			 0);
	assert_int_equal(c.nfaults, 3);
	assert_int_equal(c.faults[0].kind, GW_SIM_FAULT_ECC_STORM);
	assert_true(c.faults[0].after_s == 60);
	assert_int_equal(c.faults[1].kind, GW_SIM_FAULT_XID79);
	assert_int_equal(c.faults[1].gpu, 3);
	assert_true(c.faults[1].duration_s == 10);
	assert_int_equal(c.faults[2].kind, GW_SIM_FAULT_PCIE_DOWNGRADE);
	assert_int_equal(gw_config_validate(&c, err, sizeof(err)), 0);

	assert_int_equal(load_text(&c, "fault: [power-cap:1, ecc-storm:0]\n",
				   err, sizeof(err)),
			 0);
	assert_int_equal(c.nfaults, 2);
	assert_int_equal(c.faults[0].kind, GW_SIM_FAULT_POWER_CAP);

	assert_int_equal(
		load_text(&c, "fault: thermal-runaway:1\n", err, sizeof(err)),
		0);
	assert_int_equal(c.nfaults, 1);
	assert_int_equal(c.faults[0].kind, GW_SIM_FAULT_THERMAL_RUNAWAY);

	assert_int_equal(load_text(&c, "fault: []\n", err, sizeof(err)), 0);
	assert_int_equal(c.nfaults, 0);

	/* A file loaded on top of earlier settings replaces the list. */
	{
		static const char more[] = "fault: [xid79:2, power-cap:3]\n";

		assert_int_equal(load_text(&c, "fault: [ecc-storm:0]\n", err,
					   sizeof(err)),
				 0);
		assert_int_equal(
			gw_config_load_buffer(&c, "second.yaml",
					      (const unsigned char *)more,
					      strlen(more), err, sizeof(err)),
			0);
		assert_int_equal(c.nfaults, 2);
		assert_int_equal(c.faults[0].kind, GW_SIM_FAULT_XID79);
	}

	/* The list is bounded. */
	{
		char yaml[64 * (GW_SIM_MAX_FAULTS + 2)];
		size_t n = (size_t)snprintf(yaml, sizeof(yaml), "fault:\n");

		for (int i = 0; i <= GW_SIM_MAX_FAULTS; i++)
			n += (size_t)snprintf(yaml + n, sizeof(yaml) - n,
					      "  - ecc-storm:%d\n", i % 4);
		assert_int_equal(load_text(&c, yaml, err, sizeof(err)),
				 -EINVAL);
		assert_contains(err, "fault: at most 32 faults");
	}
}

static void fault_needs_simulate(void **state)
{
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];
	char *path;

	(void)state;
	assert_int_equal(
		run_args(&c, err, sizeof(err), "--fault", "xid79:0", NULL),
		-EINVAL);
	assert_contains(err, "--fault needs --simulate");

	assert_int_equal(run_args(&c, err, sizeof(err), "--simulate", "2",
				  "--fault", "xid79:1", NULL),
			 0);
	assert_int_equal(c.nfaults, 1);

	/* A fault on a GPU that is not simulated. */
	assert_int_equal(run_args(&c, err, sizeof(err), "--simulate", "2",
				  "--fault", "xid79:2", NULL),
			 -EINVAL);
	assert_contains(err, "only 2 simulated GPUs");

	/* Faults from the file are checked the same way. */
	path = write_tmp("fault: [ecc-storm:0]\n");
	assert_int_equal(run_args(&c, err, sizeof(err), "--config", path, NULL),
			 -EINVAL);
	assert_contains(err, "--fault needs --simulate");
	assert_int_equal(run_args(&c, err, sizeof(err), "--config", path,
				  "--simulate", "1", NULL),
			 0);
	drop_tmp(path);
}

static void detail_shorter_than_interval(void **state)
{
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];

	(void)state;
	assert_int_equal(run_args(&c, err, sizeof(err), "--interval", "10",
				  "--detail-interval", "5", NULL),
			 -EINVAL);
	assert_contains(err, "detail-interval (5s) must not be shorter than "
			     "interval (10s)");
	/* The default detail interval (30s) against a slow fast set. */
	assert_int_equal(
		run_args(&c, err, sizeof(err), "--interval", "1m", NULL),
		-EINVAL);
	assert_contains(err, "detail-interval");
	/* Equal is fine. */
	assert_int_equal(run_args(&c, err, sizeof(err), "--interval", "10s",
				  "--detail-interval", "10", NULL),
			 0);
}

static void empty_and_comment_files(void **state)
{
	static const char *const ok[] = {
		"",	"\n\n", "# nothing yet\n", "---\n", "---\n...\n",
		"{}\n", "~\n",	"null\n"
	};
	char *path;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct gw_config c;
		char err[GW_CONFIG_ERR_MAX];
		int r = load_text(&c, ok[i], err, sizeof(err));

		if (r)
			fail_msg("'%s' refused: %s", ok[i], err);
		check_defaults(&c);
	}
	/* An empty file through --config. */
	path = write_tmp("");
	{
		struct gw_config c;
		char err[GW_CONFIG_ERR_MAX];

		assert_int_equal(
			run_args(&c, err, sizeof(err), "--config", path, NULL),
			0);
		assert_true(c.interval == 1);
	}
	drop_tmp(path);
}

static void non_mapping_refused(void **state)
{
	static const struct {
		const char *yaml, *want;
	} bad[] = {
		{ "- interval: 2\n", "agent.yaml:1: expected a mapping" },
		{ "interval 2\n", "agent.yaml:1: expected a mapping" },
		{ "42\n", "agent.yaml:1: expected a mapping" },
		{ "interval: 2\n---\ninterval: 3\n",
		  "agent.yaml:2: only one YAML document" },
		{ "? [a, b]\n: 1\n", "agent.yaml:1: keys must be plain names" },
		{ "interval: 2\n- 3\n", "agent.yaml:2:" },
		{ "interval: \"2\n", "agent.yaml:" },
		{ "interval: &x 2\ndetail_interval: *x\n",
		  "agent.yaml:2: detail_interval: expected a single value" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gw_config c;
		char err[GW_CONFIG_ERR_MAX];

		assert_int_equal(load_text(&c, bad[i].yaml, err, sizeof(err)),
				 -EINVAL);
		assert_contains(err, bad[i].want);
	}
}

static void ebpf_settings(void **state)
{
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];

	(void)state;
	assert_int_equal(run_args(&c, err, sizeof(err), NULL), 0);
	assert_int_equal(c.ebpf, 1);
	assert_string_equal(c.job_env, "SLURM_JOB_ID");
	assert_int_equal(run_args(&c, err, sizeof(err), "--no-ebpf",
				  "--job-env", "MY_JOB,PBS_JOBID", "--leak-age",
				  "2m", NULL),
			 0);
	assert_int_equal(c.ebpf, 0);
	assert_string_equal(c.job_env, "MY_JOB,PBS_JOBID");
	assert_true(c.leak_age == 120);
	assert_int_equal(
		run_args(&c, err, sizeof(err), "--job-env", "A B", NULL),
		-EINVAL);
	assert_contains(err, "--job-env: 'A B' is not a comma-separated list");
	assert_int_equal(load_text(&c, "ebpf: false\njob_env: [A, B_2]\n", err,
				   sizeof(err)),
			 0);
	assert_int_equal(c.ebpf, 0);
	assert_string_equal(c.job_env, "A,B_2");
	assert_int_equal(load_text(&c, "ebpf: maybe\n", err, sizeof(err)),
			 -EINVAL);
	assert_contains(err,
			"agent.yaml:1: ebpf: 'maybe' is not true or false");
}

/* --exited-grace and --cuda-lib-glob: defaults, flags, file keys, errors. */
static void exited_and_library_settings(void **state)
{
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];

	(void)state;
	assert_int_equal(run_args(&c, err, sizeof(err), NULL), 0);
	assert_true(c.exited_grace == 300);
	assert_int_equal(c.cuda_lib_globs.n, 0);
	assert_int_equal(run_args(&c, err, sizeof(err), "--exited-grace", "3s",
				  "--cuda-lib-glob", "/opt/a/libcudart.so*",
				  "--cuda-lib-glob", "/srv/*/lib/libcuda.so*",
				  NULL),
			 0);
	assert_true(c.exited_grace == 3);
	assert_int_equal(c.cuda_lib_globs.n, 2);
	assert_string_equal(c.cuda_lib_globs.v[0], "/opt/a/libcudart.so*");
	assert_string_equal(c.cuda_lib_globs.v[1], "/srv/*/lib/libcuda.so*");
	assert_int_equal(
		run_args(&c, err, sizeof(err), "--exited-grace", "0", NULL), 0);
	assert_true(c.exited_grace == 0);
	assert_int_equal(
		run_args(&c, err, sizeof(err), "--exited-grace", "-1s", NULL),
		-EINVAL);
	assert_contains(err, "--exited-grace");
	assert_int_equal(run_args(&c, err, sizeof(err), "--cuda-lib-glob",
				  "lib/libcudart.so*", NULL),
			 -EINVAL);
	assert_contains(err, "--cuda-lib-glob lib/libcudart.so*: expected an "
			     "absolute pattern");
	assert_int_equal(load_text(&c,
				   "exited_grace: 10m\n"
				   "cuda_lib_glob: [/opt/x/libcudart.so.12]\n",
				   err, sizeof(err)),
			 0);
	assert_true(c.exited_grace == 600);
	assert_int_equal(c.cuda_lib_globs.n, 1);
	assert_string_equal(c.cuda_lib_globs.v[0], "/opt/x/libcudart.so.12");
}

/* --profile-match: flags, a list in the file, a selector that cannot work
 * refused at start with the option and the reason. */
static void profile_match_settings(void **state)
{
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];

	(void)state;
	assert_int_equal(run_args(&c, err, sizeof(err), NULL), 0);
	assert_int_equal(c.profile_match.n, 0);
	assert_int_equal(run_args(&c, err, sizeof(err), "--profile", "all",
				  "--profile-match", "{comm=~\"python.*\"}",
				  "--profile-match",
				  "{cgroup=~\"/kubepods.slice/.*\"}", NULL),
			 0);
	assert_int_equal(c.profile_match.n, 2);
	assert_string_equal(c.profile_match.v[1],
			    "{cgroup=~\"/kubepods.slice/.*\"}");
	assert_int_equal(load_text(&c,
				   "profile_match:\n"
				   "  - '{job=\"7\"}'\n"
				   "  - '{exe=~\"/opt/app/.*\"}'\n",
				   err, sizeof(err)),
			 0);
	assert_int_equal(c.profile_match.n, 2);
	assert_string_equal(c.profile_match.v[0], "{job=\"7\"}");
	assert_int_equal(run_args(&c, err, sizeof(err), "--profile-match",
				  "{command=\"python\"}", NULL),
			 -EINVAL);
	assert_contains(err, "--profile-match {command=\"python\"}: no label "
			     "'command' on a process");
	assert_int_equal(run_args(&c, err, sizeof(err), "--profile-match",
				  "{comm=~\"(\"}", NULL),
			 -EINVAL);
	assert_contains(err, "error parsing regexp");
}

static void missing_file(void **state)
{
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];

	(void)state;
	gw_config_defaults(&c);
	assert_int_equal(gw_config_load_file(&c, "/nonexistent/agent.yaml", err,
					     sizeof(err)),
			 -ENOENT);
	assert_contains(err, "/nonexistent/agent.yaml: cannot open config "
			     "file");
	assert_int_equal(run_args(&c, err, sizeof(err), "--config",
				  "/nonexistent/agent.yaml", NULL),
			 -EINVAL);
	assert_contains(err, "/nonexistent/agent.yaml");
}

static void error_buffer_is_bounded(void **state)
{
	char yaml[600];
	struct gw_config c;
	char err[32];

	(void)state;
	/* A long unknown key and a tiny buffer: truncated, terminated. */
	memset(yaml, 'k', sizeof(yaml));
	memcpy(yaml + sizeof(yaml) - 5, ": 1\n", 5);
	memset(err, 'X', sizeof(err));
	gw_config_defaults(&c);
	assert_int_equal(gw_config_load_buffer(&c, "agent.yaml",
					       (const unsigned char *)yaml,
					       strlen(yaml), err, sizeof(err)),
			 -EINVAL);
	assert_true(memchr(err, '\0', sizeof(err)) != NULL);
	assert_contains(err, "agent.yaml:1: unknown key");
}

/* ---- the table: one home for every setting ---- */

/* A value for each setting without a default (its flag must still work). */
static const char *sample_value(const char *name)
{
	static const struct {
		const char *name, *value;
	} samples[] = {
		{ "fault", "xid79:0" },
		{ "rules", "/etc/gpuwatch/site.yml" },
		{ "alertmanager", "http://127.0.0.1:9093" },
		{ "remote-write", "http://127.0.0.1:8428/api/v1/write" },
		{ "statsd-socket", "/run/gpuwatch/statsd.sock" },
		{ "web.config.file", "/etc/gpuwatch/web.yml" },
		{ "pod-resources-socket",
		  "/var/lib/kubelet/pod-resources/kubelet.sock" },
		{ "cuda-lib-glob", "/opt/venv/lib/python3*/site-packages/"
				   "nvidia/*/lib/libcudart.so*" },
		{ "remote-write-raw", "gpuwatch_gpu_power_watts" },
		{ "external-label", "cluster=a" },
		{ "profile-version-env", "APP_VERSION" },
		{ "profile-match", "process_cpu{comm=~\"python.*\"}" },
		{ "archive-url", "s3://gpu-metrics/node17" },
		{ "archive-endpoint", "http://minio:9000" },
		{ "archive-region", "eu-west-3" },
	};

	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++)
		if (strcmp(samples[i].name, name) == 0)
			return samples[i].value;
	return NULL;
}

/*
 * remote_write: Prometheus' list of blocks in the file, checked in full by
 * gw_config_validate() with the file's line numbers; --remote-write URLs
 * replace it; --check-config says whether all of it is good.
 */
static void remote_write_blocks(void **state)
{
	static const char yaml[] =
		"interval: 1s\n"
		"remote_write:\n"
		"  - url: http://vm:8428/api/v1/write\n"
		"    name: vm\n"
		"    queue_config:\n"
		"      max_samples_per_send: 500\n"
		"  - url: http://prom:9090/api/v1/write\n"
		"    write_relabel_configs:\n"
		"      - {source_labels: [__name__], regex: 'gpuwatch_.*', "
		"action: keep}\n"
		"log_level: warn\n";
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];
	char *path = write_tmp(yaml), *bad;

	(void)state;
	assert_int_equal(load_text(&c, yaml, err, sizeof(err)), 0);
	assert_int_equal(c.log_level, GW_LOG_WARN); /* keys after it are read */
	assert_int_equal(c.remote_write.line, 3);
	assert_non_null(strstr(c.remote_write.yaml, "max_samples_per_send"));
	assert_null(strstr(c.remote_write.yaml, "log_level"));
	assert_int_equal(gw_config_validate(&c, err, sizeof(err)), 0);

	/* --check-config: 3 when everything is good. */
	assert_int_equal(run_args(&c, err, sizeof(err), "--config", path,
				  "--check-config", NULL),
			 3);
	assert_int_equal(c.remote_write.urls.n, 0);
	/* Flags replace the file's list. */
	assert_int_equal(run_args(&c, err, sizeof(err), "--config", path,
				  "--remote-write", "http://a:1/w",
				  "--remote-write", "http://b:2/w", NULL),
			 0);
	assert_int_equal(c.remote_write.urls.n, 2);
	assert_string_equal(c.remote_write.urls.v[1], "http://b:2/w");
	assert_string_equal(c.remote_write.yaml, "");
	drop_tmp(path);

	/* An error in a block names the file's line and the key. */
	bad = write_tmp("interval: 1s\n"
			"remote_write:\n"
			"  - url: http://vm:8428/api/v1/write\n"
			"    queue_config:\n"
			"      max_sample_per_send: 500\n");
	assert_int_equal(run_args(&c, err, sizeof(err), "--config", bad,
				  "--check-config", NULL),
			 -EINVAL);
	assert_contains(err, ":5: remote_write[0].queue_config: unknown key "
			     "'max_sample_per_send'");
	drop_tmp(bad);
	assert_int_equal(run_args(&c, err, sizeof(err), "--remote-write",
				  "vm:8428", NULL),
			 -EINVAL);
	assert_contains(err, "--remote-write: 'vm:8428' is not an http:// or "
			     "https:// URL");
	/* Flow style, and a list at the key's own indentation. */
	assert_int_equal(load_text(&c,
				   "remote_write: [{url: 'http://a/w'}, "
				   "{url: 'http://b/w', name: b}]\n",
				   err, sizeof(err)),
			 0);
	assert_int_equal(gw_config_validate(&c, err, sizeof(err)), 0);
	assert_int_equal(load_text(&c,
				   "remote_write:\n- url: http://a/w\n"
				   "- url: http://b/w\n  nme: b\n",
				   err, sizeof(err)),
			 0);
	assert_int_equal(gw_config_validate(&c, err, sizeof(err)), -EINVAL);
	assert_contains(err, "agent.yaml:4: remote_write[1]: unknown key "
			     "'nme'");
}

static void every_setting_is_complete(void **state)
{
	struct gw_config_setting st;
	struct gw_config def, c;
	char err[GW_CONFIG_ERR_MAX], yaml[256];
	size_t n = 0;

	(void)state;
	gw_config_defaults(&def);
	for (size_t i = 0; gw_config_setting(i, &st); i++, n++) {
		const char *name = st.flag + (st.negated ? 5 : 2);
		const char *value = st.def;
		int r;

		/* A flag, a file key, a help text, a line for the README, a
		 * default ("" = none) and a reload rule. */
		assert_true(strncmp(st.flag, st.negated ? "--no-" : "--",
				    st.negated ? 5 : 2) == 0);
		assert_true(name[0] != '\0');
		assert_non_null(st.arg);
		assert_true(st.is_switch == (st.arg[0] == '\0'));
		assert_true(!st.negated || st.is_switch);
		assert_true(st.key[0] != '\0' && !strchr(st.key, '-'));
		assert_non_null(st.help);
		assert_true(strlen(st.help) > 10);
		assert_non_null(st.brief);
		assert_true(st.brief[0] != '\0' && !strchr(st.brief, '|') &&
			    !strchr(st.brief, '\n'));
		assert_non_null(st.def);
		assert_true(st.reload == GW_CONFIG_LIVE ||
			    st.reload == GW_CONFIG_RESTART);

		if (strcmp(name, "config") == 0) {
			/* Only a flag: the file cannot name another file. */
			assert_string_equal(st.def, "");
			continue;
		}
		if (!value[0]) {
			value = sample_value(name);
			if (!value)
				fail_msg("%s has no default: give it one or a "
					 "sample value in this test",
					 st.flag);
		}

		/* The flag takes the value (a switch takes none)... */
		if (st.is_switch)
			r = run_args(&c, err, sizeof(err), st.flag, NULL);
		else
			r = run_args(&c, err, sizeof(err), "--simulate", "1",
				     st.flag, value, NULL);
		if (r)
			fail_msg("%s %s: %s", st.flag, value, err);
		/* ...and so does the file key, in both spellings. */
		snprintf(yaml, sizeof(yaml), "%s: %s\n", st.key,
			 st.is_switch ? st.def : value);
		if (load_text(&c, yaml, err, sizeof(err)))
			fail_msg("%s", err);
		if (st.def[0] && memcmp(&c, &def, sizeof(c)) != 0)
			fail_msg("'%s' in a file does not give the default",
				 yaml);
		snprintf(yaml, sizeof(yaml), "%s: %s\n", name,
			 st.is_switch ? st.def : value);
		if (load_text(&c, yaml, err, sizeof(err)))
			fail_msg("%s", err);

		/* The default, given as a flag, is the stored default. */
		if (st.def[0] && !st.is_switch) {
			assert_int_equal(run_args(&c, err, sizeof(err), st.flag,
						  st.def, NULL),
					 0);
			if (memcmp(&c, &def, sizeof(c)) != 0)
				fail_msg("%s %s is not the default", st.flag,
					 st.def);
		}
	}
	assert_true(n > 30);
	assert_false(gw_config_setting(n, &st));
}

/* Each setting's --help shows its default and what SIGHUP does. */
static void help_shows_default_and_reload(void **state)
{
	struct gw_config_setting st;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	f = open_memstream(&text, &len);
	assert_non_null(f);
	gw_config_usage(f);
	assert_int_equal(fclose(f), 0);
	for (size_t i = 0; gw_config_setting(i, &st); i++) {
		char head[96], want[160];
		const char *at, *next;

		snprintf(head, sizeof(head), "\n  %s%s%s\n", st.flag,
			 st.is_switch ? "" : " ", st.arg);
		at = strstr(text, head);
		if (!at)
			fail_msg("--help has no '%s'", head + 1);
		next = strstr(at + strlen(head), "\n  -");
		snprintf(want, sizeof(want), "      Default: %s; %s.\n",
			 st.def[0] ? st.def : "none",
			 strcmp(st.flag, "--config") == 0 ? "re-read on SIGHUP"
			 : st.reload == GW_CONFIG_LIVE
				 ? "applied on SIGHUP"
				 : "a change needs a restart");
		at = strstr(at, want);
		if (!at || (next && at > next))
			fail_msg("%s: no '%s' in its --help", st.flag, want);
	}
	assert_contains(text, "SIGHUP re-reads the config file and applies "
			      "interval, detail-interval,");
	free(text);
}

static void markdown_has_a_row_per_setting(void **state)
{
	struct gw_config_setting st;
	char *text = NULL, row[256];
	size_t len = 0, n = 0, lines = 0;
	FILE *f;

	(void)state;
	f = open_memstream(&text, &len);
	assert_non_null(f);
	gw_config_markdown(f);
	assert_int_equal(fclose(f), 0);
	assert_true(strncmp(text,
			    "| option | default | on SIGHUP | meaning |\n"
			    "|---|---|---|---|\n",
			    60) == 0);
	for (size_t i = 0; gw_config_setting(i, &st); i++, n++) {
		snprintf(row, sizeof(row), "\n| `%s%s%s` | ", st.flag,
			 st.is_switch ? "" : " ", st.arg);
		assert_contains(text, row);
	}
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	assert_int_equal(lines, n + 2);
	assert_contains(text,
			"| `--rule-interval SECONDS` | `10s` | applied |");
	assert_contains(text,
			"| `--statsd-listen HOST:PORT` | `127.0.0.1:8125` "
			"| restart |");
	free(text);
}

/* Durations are Prometheus' everywhere; a bare number is seconds. */
static void rule_interval_durations(void **state)
{
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];

	(void)state;
	assert_int_equal(run_args(&c, err, sizeof(err), "--rule-interval",
				  "1m30s", NULL),
			 0);
	assert_true(c.rule_interval == 90);
	assert_int_equal(run_args(&c, err, sizeof(err), "--rule-interval", "90",
				  "--alert-resend", "1h", "--retention-raw",
				  "1d12h", "--interval", "2", NULL),
			 0);
	assert_true(c.rule_interval == 90);
	assert_true(c.alert_resend == 3600);
	assert_true(c.retention_raw == 129600);
	assert_true(c.interval == 2);
	assert_int_equal(
		load_text(&c, "rule_interval: 1m30s\n", err, sizeof(err)), 0);
	assert_true(c.rule_interval == 90);
	assert_int_equal(run_args(&c, err, sizeof(err), "--rule-interval",
				  "30s1m", NULL),
			 -EINVAL);
	assert_contains(err, "--rule-interval: '30s1m' is not a duration");
	assert_int_equal(run_args(&c, err, sizeof(err), "--rule-interval",
				  "1h0m1s", NULL),
			 -EINVAL);
	assert_contains(err, "from 1s to 3600s");
}

static void reload_takes_live_settings_only(void **state)
{
	struct gw_config run, next;

	(void)state;
	gw_config_defaults(&run);
	gw_config_defaults(&next);
	assert_int_equal(gw_config_reload(&run, &next), 0);

	next.interval = 2;
	next.rule_interval = 90;
	next.alert_resend = 30;
	next.log_level = GW_LOG_DEBUG;
	snprintf(next.rule_files.v[0], sizeof(next.rule_files.v[0]), "a.yml");
	next.rule_files.n = 1;
	/* These need a restart: logged, the running value stays. */
	snprintf(next.statsd_listen, sizeof(next.statsd_listen), "off");
	next.store_max_series = 5;
	next.ebpf = 0;
	assert_int_equal(gw_config_reload(&run, &next), 5);
	assert_true(run.interval == 2);
	assert_true(run.rule_interval == 90);
	assert_true(run.alert_resend == 30);
	assert_int_equal(run.log_level, GW_LOG_DEBUG);
	assert_int_equal(run.rule_files.n, 1);
	assert_string_equal(run.rule_files.v[0], "a.yml");
	assert_string_equal(run.statsd_listen, "127.0.0.1:8125");
	assert_int_equal(run.store_max_series, 100000);
	assert_int_equal(run.ebpf, 1);
	/* Nothing more to take the second time. */
	assert_int_equal(gw_config_reload(&run, &next), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),
		cmocka_unit_test(every_flag),
		cmocka_unit_test(bad_flag_values),
		cmocka_unit_test(unknown_flag_suggests),
		cmocka_unit_test(help),
		cmocka_unit_test(file_with_every_key),
		cmocka_unit_test(flags_override_file),
		cmocka_unit_test(unknown_key),
		cmocka_unit_test(bad_value_names_line_and_key),
		cmocka_unit_test(duplicate_keys),
		cmocka_unit_test(config_key_refused),
		cmocka_unit_test(dash_and_underscore),
		cmocka_unit_test(fault_lists),
		cmocka_unit_test(fault_needs_simulate),
		cmocka_unit_test(detail_shorter_than_interval),
		cmocka_unit_test(empty_and_comment_files),
		cmocka_unit_test(non_mapping_refused),
		cmocka_unit_test(ebpf_settings),
		cmocka_unit_test(exited_and_library_settings),
		cmocka_unit_test(profile_match_settings),
		cmocka_unit_test(missing_file),
		cmocka_unit_test(error_buffer_is_bounded),
		cmocka_unit_test(every_setting_is_complete),
		cmocka_unit_test(help_shows_default_and_reload),
		cmocka_unit_test(markdown_has_a_row_per_setting),
		cmocka_unit_test(remote_write_blocks),
		cmocka_unit_test(rule_interval_durations),
		cmocka_unit_test(reload_takes_live_settings_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
