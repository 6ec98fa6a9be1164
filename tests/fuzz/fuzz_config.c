// SPDX-License-Identifier: MIT
/*
 * fuzz_config.c - the YAML config loader on arbitrary bytes: it must never
 * crash, leak or read out of bounds, every refusal must carry a message
 * that names the file, and every accepted setting must be in its range.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "fuzz.h"

#define NAME "fuzz.yaml"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

static int terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

static void check_config(const struct gw_config *c)
{
	CHECK(terminated(c->listen, sizeof(c->listen)));
	CHECK(terminated(c->data_dir, sizeof(c->data_dir)));
	CHECK(terminated(c->config_path, sizeof(c->config_path)));
	CHECK(terminated(c->nvml_lib, sizeof(c->nvml_lib)));
	CHECK(terminated(c->compat, sizeof(c->compat)));
	/* The file can never set config (only the command line can). */
	CHECK(c->config_path[0] == '\0');
	CHECK(c->listen[0] && c->data_dir[0] && c->nvml_lib[0]);
	CHECK(c->compat[0] == '\0' || strcmp(c->compat, "dcgm") == 0);
	CHECK(c->simulate <= GW_SIM_MAX_GPUS);
	CHECK(c->interval >= 0.1 && c->interval <= 3600);
	CHECK(c->detail_interval >= 1 && c->detail_interval <= 86400);
	CHECK(c->collector_timeout >= 0.1 && c->collector_timeout <= 600);
	CHECK(c->cpu_budget >= 0.0001 && c->cpu_budget <= 1);
	CHECK(c->sim_day >= 10 && c->sim_day <= 86400 * 7);
	CHECK(c->log_level >= GW_LOG_ERROR && c->log_level <= GW_LOG_DEBUG);
	CHECK(c->nfaults <= GW_SIM_MAX_FAULTS);
	for (unsigned int i = 0; i < c->nfaults; i++) {
		CHECK(c->faults[i].gpu < GW_SIM_MAX_GPUS);
		CHECK(isfinite(c->faults[i].after_s) &&
		      c->faults[i].after_s >= 0 && c->faults[i].after_s <= 1e9);
		CHECK(isfinite(c->faults[i].duration_s) &&
		      c->faults[i].duration_s >= 0 &&
		      c->faults[i].duration_s <= 1e9);
		CHECK(strcmp(gw_sim_fault_name(c->faults[i].kind), "unknown") !=
		      0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];
	int r;

	gw_config_defaults(&c);
	memset(err, 0, sizeof(err));
	r = gw_config_load_buffer(&c, NAME, data, size, err, sizeof(err));
	CHECK(terminated(err, sizeof(err)));
	/* Whatever was applied before an error, nothing is out of range. */
	check_config(&c);
	if (r) {
		CHECK(r < 0);
		CHECK(strncmp(err, NAME ":", sizeof(NAME)) == 0);
		return 0;
	}
	memset(err, 0, sizeof(err));
	r = gw_config_validate(&c, err, sizeof(err));
	CHECK(terminated(err, sizeof(err)));
	if (r == 0) {
		CHECK(c.detail_interval >= c.interval);
		CHECK(c.nfaults == 0 || c.simulate > 0);
		for (unsigned int i = 0; i < c.nfaults; i++)
			CHECK(c.faults[i].gpu < c.simulate);
	} else {
		CHECK(r < 0 && err[0] != '\0');
	}
	return 0;
}
