/* SPDX-License-Identifier: MIT */
#include "pace.h"

void gw_pace_init(struct gw_pace *p, double fast, double detail)
{
	p->base_fast = p->fast = fast;
	p->base_detail = p->detail = detail;
}

int gw_pace_update(struct gw_pace *p, double cpu_share, double budget)
{
	if (cpu_share > budget) {
		if (p->detail < p->base_detail * GW_PACE_MAX_STRETCH) {
			p->detail *= 2;
			return 1;
		}
		if (p->fast < p->base_fast * GW_PACE_MAX_STRETCH) {
			p->fast *= 2;
			if (p->detail < p->fast)
				p->detail = p->fast;
			return 1;
		}
		return 0;
	}
	if (cpu_share < budget / 2) {
		if (p->fast > p->base_fast) {
			p->fast /= 2;
			if (p->fast < p->base_fast)
				p->fast = p->base_fast;
			return 1;
		}
		if (p->detail > p->base_detail) {
			p->detail /= 2;
			if (p->detail < p->base_detail)
				p->detail = p->base_detail;
			return 1;
		}
	}
	return 0;
}

double gw_pace_window(const struct gw_pace *p)
{
	double w = p->base_fast * 10;

	if (w < 2)
		w = 2;
	if (w > 30)
		w = 30;
	return w;
}
