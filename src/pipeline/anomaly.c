/* SPDX-License-Identifier: MIT */
/* placeholder */
typedef int gw_placeholder_anomaly;
