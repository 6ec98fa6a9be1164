/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/agent.h"
#include "pipeline/catalog.h"

#ifndef GW_VERSION
#define GW_VERSION "0.0.0-dev"
#endif

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static int cmd_help(int argc, char **argv);
/* In src/cli/query.c (declared here until cli/cli.h lists it). */
int gw_cmd_query(int argc, char **argv);

static const struct command commands[] = {
	{ "agent", gw_cmd_agent,
	  "run the node agent: GPU telemetry on /metrics" },
	{ "query", gw_cmd_query,
	  "evaluate PromQL on a running agent and print the result" },
	{ "store", gw_cmd_store,
	  "list, check, export or import the local store's data" },
	{ "rules", gw_cmd_rules,
	  "check alert rule files, list the rules the agent would run" },
	{ "sim", gw_cmd_sim,
	  "simulate a fleet pushing to a remote_write endpoint, and its cost" },
	{ "detect", gw_cmd_detect,
	  "run the agent's anomaly detector over CSV files or the history" },
	{ "profile", gw_cmd_profile,
	  "print a running agent's CPU profiles; find regressions" },
	{ "version", gw_cmd_version, "print the version" },
	{ "help", cmd_help, "list the commands, or 'help COMMAND' for one" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
	fprintf(out, "Usage: gpuwatch COMMAND [OPTION]...\n"
		     "\n"
		     "Continuous performance monitoring for NVIDIA GPU nodes.\n"
		     "\n"
		     "Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-9s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(out, "\nRun 'gpuwatch COMMAND --help' for a command's "
		     "options.\n");
}

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* docs/metrics.md from the metric catalogue (not listed: for the docs). */
static int metrics_markdown(void)
{
	struct gw_buf b;
	int err;

	gw_buf_init(&b, 1u << 20);
	err = gw_catalog_markdown(&b);
	if (!err && fwrite(b.p, 1, b.len, stdout) != b.len)
		err = -EIO;
	gw_buf_release(&b);
	if (err)
		fprintf(stderr, "gpuwatch help: %s\n", strerror(-err));
	return err ? 1 : 0;
}

static int cmd_help(int argc, char **argv)
{
	const struct command *c;
	char *help_argv[] = { NULL, (char *)"--help", NULL };

	if (argc == 2 && strcmp(argv[1], "--metrics-markdown") == 0)
		return metrics_markdown();
	if (argc < 2 || (c = find(argv[1])) == NULL || c->fn == cmd_help) {
		usage(stdout);
		return argc < 2 || (c && c->fn == cmd_help) ? 0 : 2;
	}
	help_argv[0] = argv[1];
	return c->fn(2, help_argv);
}

int gw_cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("gpuwatch %s\n", GW_VERSION);
	return 0;
}

int gw_cmd_agent(int argc, char **argv)
{
	return gw_agent_main(argc, argv);
}

int main(int argc, char **argv)
{
	const struct command *c;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0)
		return gw_cmd_version(argc - 1, argv + 1);
	c = find(argv[1]);
	if (!c) {
		fprintf(stderr,
			"gpuwatch: '%s' is not a command; see 'gpuwatch "
			"help'\n",
			argv[1]);
		return 2;
	}
	return c->fn(argc - 1, argv + 1);
}
