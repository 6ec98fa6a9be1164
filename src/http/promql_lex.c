/* SPDX-License-Identifier: MIT */
/* placeholder: the PromQL lexer moves here from promql_parse.c */
typedef int gw_promql_lex_placeholder;
