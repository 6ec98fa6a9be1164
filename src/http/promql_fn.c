/* SPDX-License-Identifier: MIT */
/* placeholder: moves here from promql_eval.c */
typedef int gw_promql_fn_placeholder;
