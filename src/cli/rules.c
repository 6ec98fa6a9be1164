/* SPDX-License-Identifier: MIT */
/*
 * rules.c - `gpuwatch rules`: check alert rule files the way the agent
 * loads them (same loader, same messages), and list what a rule set holds,
 * without starting an agent.  Useful before a SIGHUP or in CI.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "pipeline/rules.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: gpuwatch rules check FILE...\n"
		"       gpuwatch rules list [--no-default-rules] [FILE...]\n"
		"\n"
		"Alert rule files are Prometheus' format (groups, alert, expr, "
		"for, labels,\n"
		"annotations) over the agent's PromQL subset; the agent runs "
		"the "
		"built-in set\n"
		"(deploy/rules/default.yml) and then every --rules FILE.\n"
		"\n"
		"  check   load each FILE as the agent would; print one line "
		"per "
		"file, and for\n"
		"          a bad one the agent's message: FILE:LINE: group 'g' "
		"rule 'r': problem\n"
		"  list    the rules the agent would run: group, alert, for, "
		"expression\n"
		"\n"
		"Options:\n"
		"  --no-default-rules   list: leave out the built-in set\n"
		"  -h, --help           show this help\n"
		"\n"
		"Exit status: 0 when every file is valid, 1 when one is not, 2 "
		"for bad usage.\n"
		"\n"
		"Example:\n"
		"  gpuwatch rules check /etc/gpuwatch/site.yml && systemctl "
		"reload gpuwatch\n");
}

static int check(int argc, char **argv)
{
	int bad = 0;

	if (argc < 1) {
		usage(stderr);
		return 2;
	}
	for (int i = 0; i < argc; i++) {
		struct gw_ruleset rs;
		char err[GW_RULES_ERR_MAX];

		gw_ruleset_init(&rs);
		if (gw_rules_load_file(&rs, argv[i], err, sizeof(err))) {
			printf("%s: FAILED\n  %s\n", argv[i], err);
			bad = 1;
		} else {
			printf("%s: ok, %zu groups, %zu rules\n", argv[i],
			       rs.ngroups, rs.nrules);
		}
		gw_ruleset_release(&rs);
	}
	return bad;
}

static int list(int argc, char **argv, bool defaults)
{
	struct gw_ruleset rs;
	char err[GW_RULES_ERR_MAX];
	int r = 0;

	gw_ruleset_init(&rs);
	if (defaults &&
	    gw_rules_load_buffer(&rs, GW_RULES_DEFAULT_NAME,
				 (const unsigned char *)gw_default_rules,
				 gw_default_rules_len, err, sizeof(err)))
		goto fail;
	for (int i = 0; i < argc; i++)
		if (gw_rules_load_file(&rs, argv[i], err, sizeof(err)))
			goto fail;
	for (size_t i = 0; i < rs.nrules; i++) {
		const struct gw_rule *x = &rs.rules[i];
		char f[32];

		snprintf(f, sizeof(f), "%gs", (double)x->for_ms / 1000);
		printf("%-24s %-32s for %-6s %s\n", rs.groups[x->group].name,
		       x->alert, f, x->expr);
	}
	goto out;
fail:
	fprintf(stderr, "gpuwatch rules: %s\n", err);
	r = 1;
out:
	gw_ruleset_release(&rs);
	return r;
}

int gw_cmd_rules(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "no-default-rules", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool defaults = true;
	const char *sub;
	int ch;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	sub = argv[1];
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		usage(stdout);
		return 0;
	}
	argc--;
	argv++;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (ch) {
		case 'n':
			defaults = false;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!strcmp(sub, "check"))
		return check(argc - optind, argv + optind);
	if (!strcmp(sub, "list"))
		return list(argc - optind, argv + optind, defaults);
	fprintf(stderr,
		"gpuwatch rules: unknown '%s'; see 'gpuwatch rules "
		"--help'\n",
		sub);
	return 2;
}
