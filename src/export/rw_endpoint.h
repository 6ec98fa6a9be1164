/* SPDX-License-Identifier: MIT */
/*
 * rw_endpoint.h - inside struct gw_rw_endpoint: one remote_write block's
 * settings as parsed by rw_config.c, the compiled write_relabel_configs
 * (rw_relabel.c) and the counters the clients keep (rw_client.c).  Private
 * to export/rw_*.c; everyone else goes through rw.h.
 *
 * The settings are immutable once gw_rw_config_new() returns; the
 * counters are atomics, written by any client and read by any thread.
 */
#ifndef GW_RW_ENDPOINT_H
#define GW_RW_ENDPOINT_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/regex.h"
#include "export/rw.h"

enum gw_rw_action {
	GW_RW_REPLACE,
	GW_RW_KEEP,
	GW_RW_DROP,
	GW_RW_LABELDROP,
	GW_RW_LABELKEEP,
};

struct gw_rw_rule {
	enum gw_rw_action action;
	char **source; /* source_labels */
	size_t nsource;
	char *separator;     /* ";" */
	struct gw_regex *re; /* regex, anchored; "(.*)" */
	char *target;	     /* target_label (may hold $1, ${name}) */
	char *replacement;   /* "$1" */
};

struct gw_rw_header {
	char *name, *value;
};

struct gw_rw_endpoint {
	char *url;
	char *name;
	char *policy;	       /* "rollup", "raw", or NULL: the agent's */
	double remote_timeout; /* seconds, 30 */
	struct gw_rw_header *headers;
	size_t nheaders;

	/* basic_auth: username with password or password_file */
	char *username, *password, *password_file;
	/* authorization: type (Bearer) with credentials or credentials_file */
	char *auth_type, *credentials, *credentials_file;
	/* tls_config */
	char *ca_file, *cert_file, *key_file, *server_name;
	bool insecure_skip_verify;
	bool follow_redirects; /* true */
	bool enable_http2;     /* false: HTTP/1.1 (true: HTTP/2 over TLS when
				* offered) */

	struct gw_rw_rule *rules;
	size_t nrules;
	struct gw_rw_queue_config q;

	/* Counters (rw_client.c; drops from the queue). */
	_Atomic uint64_t samples_sent, samples_retried, samples_failed;
	_Atomic uint64_t samples_dropped[GW_RW_DROP_COUNT];
	_Atomic uint64_t bytes_sent, bytes_raw_sent;
	_Atomic uint64_t failures[GW_RW_FAIL_COUNT];
	_Atomic int64_t last_send_ms;
	/* Status codes: a slot is claimed once (0 -> code) and never freed. */
	_Atomic int codes[GW_RW_CODES_MAX - 1]; /* the last: code_other */
	_Atomic uint64_t code_n[GW_RW_CODES_MAX - 1];
	_Atomic uint64_t code_other; /* codes seen after every slot was taken */
	/* The next time a refusal may be logged (rate limit), real ms. */
	_Atomic int64_t next_refusal_log_ms;
	_Atomic uint64_t refusals_unlogged;
	_Atomic int64_t next_retry_log_ms;
};

/* Compiles one rule's regex etc. (rw_relabel.c); frees one. */
void gw_rw_rule_release(struct gw_rw_rule *r);

#endif
