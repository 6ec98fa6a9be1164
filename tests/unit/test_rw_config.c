/* SPDX-License-Identifier: MIT */
/*
 * remote_write configuration as Prometheus writes it, and
 * write_relabel_configs with Prometheus' semantics (the cases follow
 * Prometheus' documentation and model/relabel/relabel_test.go).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/rw.h"
#include "export/rw_endpoint.h"

static char err[512];

static struct gw_rw_config *parse_ok(const char *yaml)
{
	struct gw_rw_config *c = NULL;
	int r = gw_rw_config_new(NULL, 0, yaml, strlen(yaml), "agent.yaml", 1,
				 &c, err, sizeof(err));

	if (r)
		fail_msg("unexpected error: %s", err);
	return c;
}

/* The error text, or fails when the text was accepted. */
static const char *parse_err(const char *yaml, unsigned int line)
{
	struct gw_rw_config *c = NULL;
	int r = gw_rw_config_new(NULL, 0, yaml, strlen(yaml), "agent.yaml",
				 line, &c, err, sizeof(err));

	if (r == 0) {
		gw_rw_config_free(c);
		fail_msg("accepted: %s", yaml);
	}
	assert_int_equal(r, -EINVAL);
	assert_null(c);
	return err;
}

#define assert_contains(hay, needle)                                           \
	do {                                                                   \
		if (!strstr((hay), (needle)))                                  \
			fail_msg("'%s' does not contain '%s'", (hay),          \
				 (needle));                                    \
	} while (0)

/* A block pasted from a Prometheus configuration is taken whole. */
static void full_block(void **state)
{
	const char *y = "- url: https://vm.example:8428/api/v1/write\n"
			"  name: central\n"
			"  remote_timeout: 10s\n"
			"  headers:\n"
			"    X-Scope-OrgID: team-a\n"
			"  authorization:\n"
			"    credentials_file: /etc/gpuwatch/token\n"
			"  tls_config:\n"
			"    ca_file: /etc/ca.pem\n"
			"    cert_file: /etc/c.pem\n"
			"    key_file: /etc/k.pem\n"
			"    server_name: vm.internal\n"
			"    insecure_skip_verify: false\n"
			"  write_relabel_configs:\n"
			"    - source_labels: [__name__]\n"
			"      regex: 'gpuwatch_gpu_.*'\n"
			"      action: keep\n"
			"  queue_config:\n"
			"    capacity: 5000\n"
			"    max_shards: 4\n"
			"    min_shards: 2\n"
			"    max_samples_per_send: 500\n"
			"    batch_send_deadline: 2s\n"
			"    min_backoff: 100ms\n"
			"    max_backoff: 1m\n"
			"    retry_on_http_429: false\n"
			"- url: http://127.0.0.1:9090/api/v1/write\n"
			"  follow_redirects: false\n"
			"  policy: raw\n"
			"  enable_http2: true\n"
			"  send_exemplars: false\n"
			"  basic_auth:\n"
			"    username: agent\n"
			"    password: secret\n";
	struct gw_rw_config *c;
	struct gw_rw_endpoint *ep;
	const struct gw_rw_queue_config *q;

	(void)state;
	c = parse_ok(y);
	assert_int_equal(gw_rw_config_count(c), 2);
	ep = gw_rw_config_endpoint(c, 0);
	assert_string_equal(gw_rw_endpoint_name(ep), "central");
	assert_string_equal(gw_rw_endpoint_url(ep),
			    "https://vm.example:8428/api/v1/write");
	assert_true(ep->remote_timeout == 10);
	assert_int_equal(ep->nheaders, 1);
	assert_string_equal(ep->headers[0].name, "X-Scope-OrgID");
	assert_string_equal(ep->headers[0].value, "team-a");
	assert_string_equal(ep->auth_type, "Bearer");
	assert_string_equal(ep->credentials_file, "/etc/gpuwatch/token");
	assert_string_equal(ep->server_name, "vm.internal");
	assert_int_equal(ep->nrules, 1);
	q = gw_rw_endpoint_queue(ep);
	assert_int_equal(q->capacity, 5000);
	assert_int_equal(q->max_shards, 4);
	assert_int_equal(q->min_shards, 2);
	assert_int_equal(q->max_samples_per_send, 500);
	assert_true(q->batch_send_deadline == 2);
	assert_true(q->min_backoff == 0.1);
	assert_true(q->max_backoff == 60);
	assert_false(q->retry_on_http_429);

	assert_null(gw_rw_endpoint_policy(ep)); /* the agent's */
	ep = gw_rw_config_endpoint(c, 1);
	assert_string_equal(gw_rw_endpoint_policy(ep), "raw");
	assert_string_equal(ep->username, "agent");
	assert_false(ep->follow_redirects);
	assert_true(ep->enable_http2);
	assert_true(gw_rw_config_endpoint(c, 0)->follow_redirects);
	assert_false(gw_rw_config_endpoint(c, 0)->enable_http2);
	assert_string_equal(ep->password, "secret");
	/* No name: six hex digits from the URL, stable. */
	assert_int_equal(strlen(gw_rw_endpoint_name(ep)), 6);
	assert_null(gw_rw_config_endpoint(c, 2));
	gw_rw_config_free(c);
}

/* Prometheus' defaults where nothing is said; --remote-write URLs first. */
static void defaults_and_flags(void **state)
{
	const char *urls[] = { "http://a:8428/api/v1/write",
			       "http://b:9090/api/v1/write" };
	const char *y = "- url: http://c/api/v1/write\n";
	struct gw_rw_config *c = NULL;
	const struct gw_rw_queue_config *q;
	struct gw_rw_endpoint *ep;

	(void)state;
	assert_int_equal(gw_rw_config_new(urls, 2, y, strlen(y), "f", 1, &c,
					  err, sizeof(err)),
			 0);
	assert_int_equal(gw_rw_config_count(c), 3);
	assert_string_equal(gw_rw_endpoint_url(gw_rw_config_endpoint(c, 0)),
			    urls[0]);
	assert_string_equal(gw_rw_endpoint_url(gw_rw_config_endpoint(c, 2)),
			    "http://c/api/v1/write");
	assert_string_not_equal(
		gw_rw_endpoint_name(gw_rw_config_endpoint(c, 0)),
		gw_rw_endpoint_name(gw_rw_config_endpoint(c, 1)));
	ep = gw_rw_config_endpoint(c, 0);
	q = gw_rw_endpoint_queue(ep);
	assert_true(ep->remote_timeout == 30);
	assert_int_equal(q->capacity, 10000);
	assert_int_equal(q->max_shards, 50);
	assert_int_equal(q->min_shards, 1);
	assert_int_equal(q->max_samples_per_send, 2000);
	assert_true(q->batch_send_deadline == 5);
	assert_true(q->min_backoff == 0.03);
	assert_true(q->max_backoff == 5);
	assert_true(q->retry_on_http_429);
	gw_rw_config_free(c);

	/* A bad flag value names the flag. */
	urls[0] = "ftp://x/";
	assert_int_equal(gw_rw_config_new(urls, 1, NULL, 0, "f", 1, &c, err,
					  sizeof(err)),
			 -EINVAL);
	assert_contains(err, "--remote-write: 'ftp://x/'");
}

/* Every refusal names the file, the line, the key and the problem. */
static void errors_name_line_and_key(void **state)
{
	(void)state;
	/* Lines count from where the block starts in the file (12 here). */
	assert_contains(parse_err("- url: http://a/\n"
				  "  queue_config:\n"
				  "    max_sample_per_send: 10\n",
				  12),
			"agent.yaml:14: remote_write[0].queue_config: unknown "
			"key 'max_sample_per_send'");
	assert_contains(parse_err("- url: http://a/\n  urll: x\n", 1),
			"agent.yaml:2: remote_write[0]: unknown key 'urll' in "
			"remote_write (did you mean 'url'?)");
	assert_contains(parse_err("- url: http://a/\n  oauth2: {}\n", 1),
			"'oauth2' (a Prometheus setting) is not supported");
	assert_contains(
		parse_err("- url: http://a/\n  send_exemplars: true\n", 1),
		"gpuwatch has no exemplars to send");
	assert_contains(
		parse_err("- url: http://a/\n  policy: rollups\n", 1),
		"agent.yaml:2: remote_write[0].policy: 'rollups' is not "
		"rollup or raw");
	assert_contains(parse_err("- name: x\n", 1),
			"url for remote_write is empty");
	assert_contains(parse_err("- url: file:///etc/passwd\n", 1),
			"is not an http:// or https:// URL");
	assert_contains(parse_err("- url: http://a/\n"
				  "  headers:\n"
				  "    Content-Encoding: gzip\n",
				  1),
			"Content-Encoding is a reserved header. It must not "
			"be changed");
	assert_contains(parse_err("- url: http://a/\n"
				  "  headers:\n"
				  "    authorization: x\n",
				  1),
			"reserved header");
	assert_contains(parse_err("- url: http://a/\n"
				  "  basic_auth: {username: u, password: p}\n"
				  "  authorization: {credentials: t}\n",
				  1),
			"at most one of basic_auth, oauth2, sigv4 & "
			"authorization must be configured");
	assert_contains(parse_err("- url: http://a/\n"
				  "  basic_auth: {username: u, password: p, "
				  "password_file: /f}\n",
				  1),
			"at most one of basic_auth password & password_file");
	assert_contains(parse_err("- url: http://a/\n"
				  "  authorization: {type: Basic, "
				  "credentials: x}\n",
				  1),
			"use \"basic_auth\" instead");
	assert_contains(parse_err("- url: http://a/\n"
				  "  remote_timeout: 10 seconds\n",
				  1),
			"agent.yaml:2: remote_write[0].remote_timeout: unknown "
			"unit");
	assert_contains(parse_err("- url: http://a/\n"
				  "  queue_config: {max_shards: -1}\n",
				  1),
			"remote_write[0].queue_config.max_shards: '-1' is not "
			"a whole number");
	assert_contains(parse_err("- url: http://a/\n"
				  "  queue_config: {retry_on_http_429: "
				  "maybe}\n",
				  1),
			"is not true or false");
	assert_contains(parse_err("- url: http://a/\n"
				  "  name: x\n"
				  "- url: http://b/\n"
				  "  name: x\n",
				  1),
			"found multiple remote write configs with name \"x\"");
	assert_contains(parse_err("- url: http://a/\n- url: http://a/\n", 1),
			"duplicate remote write configs are not allowed");
	assert_contains(parse_err("- url: http://a/\n  url: http://b/\n", 1),
			"key 'url' is given twice (first on line 1)");
	assert_contains(parse_err("url: http://a/\n", 1),
			"expected a list of endpoints");
	assert_contains(parse_err("vm:8428\n", 1),
			"'vm:8428' is not an http:// or https:// URL");
	assert_contains(parse_err("- url: [http://a/\n", 3), "agent.yaml:");
}

static void relabel_config_errors(void **state)
{
	(void)state;
	assert_contains(parse_err("- url: http://a/\n"
				  "  write_relabel_configs:\n"
				  "    - source_labels: [a]\n",
				  1),
			"agent.yaml:3: remote_write[0].write_relabel_configs[0]"
			": relabel configuration for replace action requires "
			"'target_label' value");
	assert_contains(parse_err("- url: http://a/\n"
				  "  write_relabel_configs:\n"
				  "    - action: labeldrop\n"
				  "      regex: a\n"
				  "      source_labels: [b]\n",
				  1),
			"labeldrop action requires only 'regex', and no other "
			"fields");
	assert_contains(parse_err("- url: http://a/\n"
				  "  write_relabel_configs:\n"
				  "    - action: hashmod\n",
				  1),
			"unknown relabel action 'hashmod'");
	assert_contains(parse_err("- url: http://a/\n"
				  "  write_relabel_configs:\n"
				  "    - source_labels: [a]\n"
				  "      regex: 'a(b'\n"
				  "      action: keep\n",
				  1),
			"agent.yaml:4: remote_write[0].write_relabel_configs[0]"
			".regex: error parsing regexp: missing closing )");
	assert_contains(parse_err("- url: http://a/\n"
				  "  write_relabel_configs:\n"
				  "    - source_labels: [1a]\n"
				  "      action: keep\n",
				  1),
			"\"1a\" is not a valid label name");
	assert_contains(parse_err("- url: http://a/\n"
				  "  write_relabel_configs:\n"
				  "    - source_labels: [a]\n"
				  "      target_label: 'x-y'\n",
				  1),
			"\"x-y\" is invalid 'target_label' for replace action");
	assert_contains(parse_err("- url: http://a/\n"
				  "  write_relabel_configs:\n"
				  "    - {action: keep, regxe: a}\n",
				  1),
			"unknown key 'regxe'");
}

/* ---- relabelling ---- */

/* Applies rules (the YAML of write_relabel_configs) to `name{labels}`;
 * returns the result's key, or "DROPPED". */
static const char *relabel(const char *rules, const char *name,
			   const char *labels)
{
	static char out[512];
	char yaml[2048];
	struct gw_rw_config *c;
	struct gw_labels in, res;
	struct gw_buf b;
	int r;

	snprintf(yaml, sizeof(yaml),
		 "- url: http://a/\n  write_relabel_configs:\n%s", rules);
	c = parse_ok(yaml);
	assert_int_equal(gw_labels_parse(&in, name, labels), 0);
	r = gw_rw_relabel(gw_rw_config_endpoint(c, 0), &in, &res);
	assert_true(r == 0 || r == 1);
	if (r == 0) {
		snprintf(out, sizeof(out), "DROPPED");
	} else {
		gw_buf_init(&b, 4096);
		assert_int_equal(gw_labels_key(&res, &b), 0);
		snprintf(out, sizeof(out), "%s", b.p ? b.p : "");
		gw_buf_release(&b);
		gw_labels_release(&res);
	}
	gw_labels_release(&in);
	gw_rw_config_free(c);
	return out;
}

static void relabel_replace(void **state)
{
	(void)state;
	/* Prometheus' relabel tests: captures into the replacement. */
	assert_string_equal(relabel("    - source_labels: [a]\n"
				    "      regex: 'f(.*)'\n"
				    "      target_label: d\n"
				    "      replacement: 'ch${1}-ch${1}'\n",
				    "m", "a=\"foo\",b=\"bar\""),
			    "m{a=\"foo\",b=\"bar\",d=\"choo-choo\"}");
	/* Several sources joined by the separator. */
	assert_string_equal(relabel("    - source_labels: [a, b]\n"
				    "      regex: 'f(.*);(.*)r'\n"
				    "      target_label: a\n"
				    "      replacement: 'b${1}${2}m'\n",
				    "m", "a=\"foo\",b=\"bar\""),
			    "m{a=\"boobam\",b=\"bar\"}");
	/* Defaults: separator ";", regex "(.*)", replacement "$1". */
	assert_string_equal(relabel("    - source_labels: [a, b]\n"
				    "      target_label: c\n",
				    "m", "a=\"foo\",b=\"bar\""),
			    "m{a=\"foo\",b=\"bar\",c=\"foo;bar\"}");
	/* The regex is anchored: "o" does not match "foo"; nothing changes. */
	assert_string_equal(relabel("    - source_labels: [a]\n"
				    "      regex: 'o'\n"
				    "      target_label: a\n"
				    "      replacement: x\n",
				    "m", "a=\"foo\""),
			    "m{a=\"foo\"}");
	/* An empty result removes the target. */
	assert_string_equal(relabel("    - source_labels: [nothere]\n"
				    "      target_label: a\n",
				    "m", "a=\"foo\",b=\"bar\""),
			    "m{b=\"bar\"}");
	/* $1bar is the group named "1bar" (none: empty), ${1}bar is not. */
	assert_string_equal(relabel("    - source_labels: [a]\n"
				    "      regex: '(f)oo'\n"
				    "      target_label: b\n"
				    "      replacement: '$1bar'\n"
				    "    - source_labels: [a]\n"
				    "      regex: '(f)oo'\n"
				    "      target_label: c\n"
				    "      replacement: '${1}bar $$1 $ x'\n",
				    "m", "a=\"foo\",b=\"x\""),
			    "m{a=\"foo\",c=\"fbar $1 $ x\"}");
	/* The target itself expanded; named groups. */
	assert_string_equal(
		relabel("    - source_labels: [a]\n"
			"      regex: 'some-([^-]+)-(.*)'\n"
			"      target_label: '${1}'\n"
			"      replacement: '${2}'\n"
			"    - source_labels: [a]\n"
			"      regex: '(?P<first>s)(?P<rest>ome).*'\n"
			"      target_label: b\n"
			"      replacement: '${rest}-$first'\n",
			"m", "a=\"some-name-value\""),
		"m{a=\"some-name-value\",b=\"ome-s\",name=\"value\"}");
	/* Renaming the metric through __name__. */
	assert_string_equal(relabel("    - source_labels: [__name__]\n"
				    "      regex: 'gpuwatch_(.*)'\n"
				    "      target_label: __name__\n"
				    "      replacement: 'node_$1'\n",
				    "gpuwatch_gpu_power_watts", "gpu=\"0\""),
			    "node_gpu_power_watts{gpu=\"0\"}");
}

static void relabel_keep_drop(void **state)
{
	const char *keep = "    - source_labels: [__name__, gpu]\n"
			   "      regex: 'gpuwatch_gpu_.*;[01]'\n"
			   "      action: keep\n";
	const char *drop = "    - source_labels: [job]\n"
			   "      regex: 'test|dev'\n"
			   "      action: DROP\n";

	(void)state;
	assert_string_equal(relabel(keep, "gpuwatch_gpu_up", "gpu=\"1\""),
			    "gpuwatch_gpu_up{gpu=\"1\"}");
	assert_string_equal(relabel(keep, "gpuwatch_gpu_up", "gpu=\"2\""),
			    "DROPPED");
	assert_string_equal(relabel(keep, "gpuwatch_agent_up", "gpu=\"1\""),
			    "DROPPED");
	assert_string_equal(relabel(drop, "m", "job=\"dev\""), "DROPPED");
	assert_string_equal(relabel(drop, "m", "job=\"prod\""),
			    "m{job=\"prod\"}");
	/* An absent label is "": drop on empty. */
	assert_string_equal(relabel("    - source_labels: [job]\n"
				    "      regex: ''\n"
				    "      action: drop\n",
				    "m", "gpu=\"0\""),
			    "DROPPED");
}

static void relabel_labeldrop_keep(void **state)
{
	(void)state;
	assert_string_equal(relabel("    - regex: 'b.*'\n"
				    "      action: labeldrop\n",
				    "m", "a=\"1\",b=\"2\",baz=\"3\",cb=\"4\""),
			    "m{a=\"1\",cb=\"4\"}");
	assert_string_equal(relabel("    - regex: '__name__|a|gpu'\n"
				    "      action: labelkeep\n",
				    "m", "a=\"1\",b=\"2\",gpu=\"0\""),
			    "m{a=\"1\",gpu=\"0\"}");
	/* Nothing left: the series is dropped. */
	assert_string_equal(relabel("    - regex: '.*'\n"
				    "      action: labeldrop\n",
				    "m", "a=\"1\""),
			    "DROPPED");
	/* Rules run in order, each on the result of the one before. */
	assert_string_equal(relabel("    - source_labels: [uuid]\n"
				    "      target_label: gpu_uuid\n"
				    "    - regex: uuid\n"
				    "      action: labeldrop\n"
				    "    - source_labels: [gpu_uuid]\n"
				    "      regex: 'GPU-0.*'\n"
				    "      action: keep\n",
				    "m", "uuid=\"GPU-0abc\""),
			    "m{gpu_uuid=\"GPU-0abc\"}");
}

/* Without rules a series passes unchanged. */
static void relabel_none(void **state)
{
	const char *y = "- url: http://a/\n";
	struct gw_rw_config *c;
	struct gw_labels in, out;

	(void)state;
	c = parse_ok(y);
	assert_int_equal(gw_labels_parse(&in, "m", "a=\"1\""), 0);
	assert_int_equal(gw_rw_relabel(gw_rw_config_endpoint(c, 0), &in, &out),
			 1);
	assert_int_equal(gw_labels_cmp(&in, &out), 0);
	gw_labels_release(&in);
	gw_labels_release(&out);
	gw_rw_config_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(full_block),
		cmocka_unit_test(defaults_and_flags),
		cmocka_unit_test(errors_name_line_and_key),
		cmocka_unit_test(relabel_config_errors),
		cmocka_unit_test(relabel_replace),
		cmocka_unit_test(relabel_keep_drop),
		cmocka_unit_test(relabel_labeldrop_keep),
		cmocka_unit_test(relabel_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
