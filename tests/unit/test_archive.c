/* SPDX-License-Identifier: MIT */
/*
 * The cold tier's texts and settings: archive URLs, endpoints, regions and
 * addressing as an operator writes them; credentials from the environment
 * and the shared credentials file; the manifest; a bucket listing as AWS
 * and s3rver write it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/archive.h"
#include "export/s3.h"

static void with_keys(void)
{
	setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "SECRET", 1);
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_REGION");
	unsetenv("AWS_DEFAULT_REGION");
}

static void urls_endpoints_regions(void **state)
{
	struct gw_s3_config c;
	char err[512];

	(void)state;
	with_keys();
	assert_int_equal(gw_s3_config_init(&c, "s3://gpu-metrics/node17/", NULL,
					   NULL, NULL, err, sizeof(err)),
			 0);
	assert_string_equal(c.bucket, "gpu-metrics");
	assert_string_equal(c.prefix, "node17");
	assert_string_equal(c.region, "us-east-1");
	assert_false(c.path_style); /* AWS: virtual-hosted */
	assert_string_equal(c.access_key, "AKID");

	setenv("AWS_REGION", "eu-west-3", 1);
	assert_int_equal(gw_s3_config_init(&c, "s3://bkt", "http://minio:9000/",
					   NULL, "auto", err, sizeof(err)),
			 0);
	assert_string_equal(c.prefix, "");
	assert_string_equal(c.endpoint, "http://minio:9000");
	assert_string_equal(c.region, "eu-west-3");
	assert_true(c.path_style); /* an endpoint: path style */
	assert_int_equal(gw_s3_config_init(&c, "s3://bkt", "http://minio:9000",
					   "ap-south-1", "virtual", err,
					   sizeof(err)),
			 0);
	assert_string_equal(c.region, "ap-south-1");
	assert_false(c.path_style);

	/* What an operator gets wrong, each with its own message. */
	assert_int_equal(gw_s3_config_init(&c, "https://bkt/x", NULL, NULL,
					   NULL, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "is not s3://BUCKET[/PREFIX]"));
	assert_int_equal(gw_s3_config_init(&c, "s3://Bad_Bucket", NULL, NULL,
					   NULL, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "lower-case letters"));
	assert_int_equal(gw_s3_config_init(&c, "s3://bkt", "minio:9000", NULL,
					   NULL, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "is not http(s)://"));
	assert_int_equal(gw_s3_config_init(&c, "s3://bkt", NULL, "us east",
					   NULL, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(gw_s3_config_init(&c, "s3://bkt", NULL, NULL, "dns",
					   err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "not path, virtual or auto"));
	unsetenv("AWS_REGION");

	/* One configuration for every node: ${VARIABLE}s of the
	 * environment. */
	setenv("NODE_NAME", "gpu-node-17", 1);
	assert_int_equal(gw_s3_config_init(&c, "s3://bkt/${NODE_NAME}/a", NULL,
					   NULL, NULL, err, sizeof(err)),
			 0);
	assert_string_equal(c.prefix, "gpu-node-17/a");
	unsetenv("NODE_NAME");
	assert_int_equal(gw_s3_config_init(&c, "s3://bkt/${NODE_NAME}", NULL,
					   NULL, NULL, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "NODE_NAME is not set"));
	assert_int_equal(gw_s3_config_init(&c, "s3://bkt/${NODE", NULL, NULL,
					   NULL, err, sizeof(err)),
			 -EINVAL);
	unsetenv("HOSTNAME");
	assert_int_equal(gw_s3_config_init(&c, "s3://bkt/${HOSTNAME}", NULL,
					   NULL, NULL, err, sizeof(err)),
			 0);
	{
		char host[256];

		assert_int_equal(gethostname(host, sizeof(host)), 0);
		assert_string_equal(c.prefix, host);
	}
}

static void credentials_file_and_profiles(void **state)
{
	const char *text = "# comment\n"
			   "[default]\n"
			   "aws_access_key_id = DEFAULTKEY\n"
			   "aws_secret_access_key=defaultsecret\n"
			   "\n"
			   "[ archive ]\n"
			   "  aws_access_key_id = ARCHKEY  \n"
			   "aws_secret_access_key = archsecret\n"
			   "aws_session_token = tok\n"
			   "region = eu-north-1\n";
	struct gw_s3_config c;
	char err[256], path[] = "/tmp/gw-cred-XXXXXX";
	FILE *f;
	int fd;

	(void)state;
	memset(&c, 0, sizeof(c));
	assert_int_equal(gw_s3_parse_credentials(text, strlen(text), "archive",
						 &c, err, sizeof(err)),
			 0);
	assert_string_equal(c.access_key, "ARCHKEY");
	assert_string_equal(c.secret_key, "archsecret");
	assert_string_equal(c.session_token, "tok");
	memset(&c, 0, sizeof(c));
	assert_int_equal(gw_s3_parse_credentials(text, strlen(text), "nope", &c,
						 err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "profile [nope]"));
	assert_int_equal(
		gw_s3_parse_credentials("[x\n", 3, "x", &c, err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "line 1"));

	/* Through the environment's file and profile. */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
	setenv("AWS_PROFILE", "archive", 1);
	assert_int_equal(gw_s3_config_init(&c, "s3://bkt", NULL, NULL, NULL,
					   err, sizeof(err)),
			 0);
	assert_string_equal(c.access_key, "ARCHKEY");
	unsetenv("AWS_PROFILE");
	assert_int_equal(gw_s3_config_init(&c, "s3://bkt", NULL, NULL, NULL,
					   err, sizeof(err)),
			 0);
	assert_string_equal(c.access_key, "DEFAULTKEY");
	/* The environment's keys come first. */
	with_keys();
	assert_int_equal(gw_s3_config_init(&c, "s3://bkt", NULL, NULL, NULL,
					   err, sizeof(err)),
			 0);
	assert_string_equal(c.access_key, "AKID");
	unsetenv("AWS_ACCESS_KEY_ID");
	setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
	assert_int_equal(gw_s3_config_init(&c, "s3://bkt", NULL, NULL, NULL,
					   err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "no credentials"));
	assert_non_null(strstr(err, "/nonexistent/credentials"));
	unsetenv("AWS_SHARED_CREDENTIALS_FILE");
	unlink(path);
}

static void manifest_round_trip_and_refusals(void **state)
{
	struct gw_archive_manifest m = { .bytes = 1830912 }, back;
	char text[512];
	int n;

	(void)state;
	snprintf(m.partition, sizeof(m.partition), "raw/2026-11-02");
	memset(m.sha256, 'a', 64);
	memset(m.md5, '0', 32);
	n = gw_archive_manifest_format(&m, text, sizeof(text));
	assert_true(n > 0);
	assert_string_equal(
		text, "gpuwatch-archive 1\npartition raw/2026-11-02\n"
		      "bytes 1830912\nsha256 "
		      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		      "aaaaaaaaaaa\nmd5 "
		      "00000000000000000000000000000000\n");
	assert_int_equal(gw_archive_manifest_parse(text, (size_t)n, &back), 0);
	assert_memory_equal(&m, &back, sizeof(m));
	/* A newer writer's extra keys are fine; a newer version is not. */
	{
		char more[600];

		snprintf(more, sizeof(more), "%snode n17\n", text);
		assert_int_equal(
			gw_archive_manifest_parse(more, strlen(more), &back),
			0);
		more[17] = '2';
		assert_int_equal(
			gw_archive_manifest_parse(more, strlen(more), &back),
			-EPROTONOSUPPORT);
	}
	/* Cut short, a bad hash, a bad partition. */
	assert_int_equal(gw_archive_manifest_parse(text, (size_t)n - 1, &back),
			 -EBADMSG);
	text[60] = 'G';
	assert_int_equal(gw_archive_manifest_parse(text, (size_t)n, &back),
			 -EBADMSG);
	assert_int_equal(
		gw_archive_manifest_parse(
			"gpuwatch-archive 1\npartition raw/x\n", 36, &back),
		-EBADMSG);
}

struct seen {
	char keys[4][1024];
	uint64_t sizes[4];
	int n;
};

static int on_object(void *ctx, const struct gw_s3_object *o)
{
	struct seen *s = ctx;

	assert_true(s->n < 4);
	snprintf(s->keys[s->n], sizeof(s->keys[0]), "%s", o->key);
	s->sizes[s->n++] = o->size;
	assert_null(strchr(o->etag, '"'));
	return 0;
}

static void bucket_listings(void **state)
{
	/* AWS puts the flags first, s3rver after the objects. */
	const char *aws =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<ListBucketResult "
		"xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<Name>b</Name><Prefix>n/</Prefix><KeyCount>2</KeyCount>"
		"<MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>"
		"<NextContinuationToken>1x&amp;y=</NextContinuationToken>"
		"<Contents><Key>n/raw/2026-11-02.db</Key>"
		"<LastModified>2026-12-03T10:00:00.000Z</LastModified>"
		"<ETag>&quot;8a2e0000000000000000000000000000&quot;</ETag>"
		"<Size>1830912</Size><StorageClass>STANDARD</StorageClass>"
		"</Contents><Contents><Key>n/a&amp;b &lt;c&gt;</Key>"
		"<ETag>\"x\"</ETag><Size>0</Size></Contents>"
		"</ListBucketResult>";
	const char *s3rver =
		"<ListBucketResult><Contents><Key>k</Key><Size>7</Size>"
		"</Contents><IsTruncated>false</IsTruncated>"
		"</ListBucketResult>";
	struct seen s = { 0 };
	char token[64];
	bool more;

	(void)state;
	assert_int_equal(gw_s3_parse_list(aws, strlen(aws), on_object, &s,
					  &more, token, sizeof(token)),
			 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.keys[0], "n/raw/2026-11-02.db");
	assert_int_equal(s.sizes[0], 1830912);
	assert_string_equal(s.keys[1], "n/a&b <c>");
	assert_true(more);
	assert_string_equal(token, "1x&y=");
	memset(&s, 0, sizeof(s));
	assert_int_equal(gw_s3_parse_list(s3rver, strlen(s3rver), on_object, &s,
					  &more, token, sizeof(token)),
			 0);
	assert_int_equal(s.n, 1);
	assert_false(more);
	/* Not a listing; a size that is not a number. */
	assert_int_equal(gw_s3_parse_list("<Error/>", 8, on_object, &s, &more,
					  token, sizeof(token)),
			 -EBADMSG);
	{
		const char *neg = "<ListBucketResult><Contents><Key>k</Key>"
				  "<Size>-1</Size></Contents>";

		assert_int_equal(gw_s3_parse_list(neg, strlen(neg), on_object,
						  &s, &more, token,
						  sizeof(token)),
				 -EBADMSG);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(urls_endpoints_regions),
		cmocka_unit_test(credentials_file_and_profiles),
		cmocka_unit_test(manifest_round_trip_and_refusals),
		cmocka_unit_test(bucket_listings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
