/* SPDX-License-Identifier: MIT */
/*
 * cli.h - gpuwatch's subcommands, one file each, dispatched from a table in
 * main.c (git's builtin/ pattern).  Each returns the process exit status.
 */
#ifndef GW_CLI_H
#define GW_CLI_H

int gw_cmd_agent(int argc, char **argv);
int gw_cmd_version(int argc, char **argv);
int gw_cmd_store(int argc, char **argv);
int gw_cmd_store_import(int argc, char **argv);
int gw_cmd_rules(int argc, char **argv);
int gw_cmd_sim(int argc, char **argv);
int gw_cmd_detect(int argc, char **argv);
int gw_cmd_profile(int argc, char **argv);

#endif
