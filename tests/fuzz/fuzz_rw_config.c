// SPDX-License-Identifier: MIT
/*
 * fuzz_rw_config.c - remote_write: blocks (Prometheus' format) from any
 * bytes: gw_rw_config_new() answers 0 or -EINVAL with a message, never
 * crashes; every endpoint it accepts has a URL and a name, and its
 * write_relabel_configs run over a few label sets give a valid set
 * (sorted, no empty value) or a drop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export/rw.h"
#include "fuzz.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const texts[] = {
		"",
		"gpu=\"0\",uuid=\"GPU-1\",job=\"train\"",
		"a=\"foo\",b=\"bar\",le=\"+Inf\"",
	};
	struct gw_rw_config *c = NULL;
	char err[512];
	int r;

	err[0] = '\0';
	r = gw_rw_config_new(NULL, 0, (const char *)data, size, "fuzz.yaml", 1,
			     &c, err, sizeof(err));
	CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
	if (r) {
		CHECK(c == NULL);
		CHECK(r == -ENOMEM || err[0] != '\0');
		return 0;
	}
	for (size_t i = 0; i < gw_rw_config_count(c); i++) {
		struct gw_rw_endpoint *ep = gw_rw_config_endpoint(c, i);

		CHECK(gw_rw_endpoint_url(ep) && gw_rw_endpoint_name(ep));
		for (size_t k = 0; k < sizeof(texts) / sizeof(texts[0]); k++) {
			struct gw_labels in, out;

			if (gw_labels_parse(&in, "gpuwatch_gpu_power_watts",
					    texts[k]))
				abort();
			r = gw_rw_relabel(ep, &in, &out);
			CHECK(r == 0 || r == 1 || r == -ENOMEM);
			if (r == 1) {
				CHECK(out.n > 0);
				for (size_t j = 0; j < out.n; j++) {
					CHECK(out.v[j].value[0] != '\0');
					CHECK(j == 0 ||
					      strcmp(out.v[j - 1].name,
						     out.v[j].name) < 0);
				}
				gw_labels_release(&out);
			}
			gw_labels_release(&in);
		}
	}
	gw_rw_config_free(c);
	return 0;
}
