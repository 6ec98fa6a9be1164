// SPDX-License-Identifier: MIT
/*
 * fuzz_expo.c - /metrics exposition from samples whose label values come
 * from the input (process names, command lines and UUIDs are not ours to
 * trust).  After publishing and rendering both formats, every line must be
 * a comment or a well-formed sample: name{label="escaped",...} value, with
 * no raw newline, quote or backslash escaping a label value, samples under
 * their family's TYPE line, no series twice, and # EOF last in OpenMetrics.
 * Escaping must also round-trip: unescaping gives the input value back.
 *
 * Input: a sequence of records.  A record is one control byte, then its
 * value bytes (8 or 1, taken as they are), then up to three label values
 * separated by 0x01, ended by 0x00 or the end of the input:
 *   bits 0-1  family (gauge, counter, info, unlabelled gauge)
 *   bit  2    slot (two producers)
 *   bits 3-4  value: 8 raw bytes as a double, a small integer, a fraction,
 *             or a large integer
 *   bit  5    a pre-formatted base label gpu="N"
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "pipeline/metrics.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

#define OUT_MAX (8u << 20)

static const struct gw_family fams[] = {
	{ "fuzz_gauge_celsius", "A gauge.", GW_GAUGE },
	{ "fuzz_events_total", "A counter.", GW_COUNTER },
	{ "fuzz_build_info", "An info.", GW_INFO },
	{ "fuzz_up", "Unlabelled.", GW_GAUGE },
};

static const char *const label_names[] = { "uuid", "cmd", "x" };

/* Unescapes a label value written by gw_labels_append; NULL if malformed. */
static const char *label_value(const char *p, char *out, size_t outlen,
			       size_t *n)
{
	*n = 0;
	if (outlen)
		out[0] = '\0';
	for (;; p++) {
		char c = *p;

		if (c == '\0' || c == '\n')
			return NULL;
		if (c == '"')
			return p + 1;
		if (c == '\\') {
			p++;
			if (*p == 'n')
				c = '\n';
			else if (*p == '\\' || *p == '"')
				c = *p;
			else
				return NULL;
		}
		if (*n + 1 >= outlen)
			return NULL;
		out[(*n)++] = c;
		out[*n] = '\0';
	}
}

static int name_char(char c, int first)
{
	return isalpha((unsigned char)c) || c == '_' || c == ':' ||
	       (!first && isdigit((unsigned char)c));
}

/* Checks one value token: a number, NaN or +-Inf; integers plainly. */
static void check_value(const char *v, size_t len)
{
	char tok[64], *end;
	double d;

	CHECK(len > 0 && len < sizeof(tok));
	memcpy(tok, v, len);
	tok[len] = '\0';
	if (strcmp(tok, "NaN") == 0 || strcmp(tok, "+Inf") == 0 ||
	    strcmp(tok, "-Inf") == 0)
		return;
	d = strtod(tok, &end);
	CHECK(*end == '\0' && isfinite(d));
	CHECK(strchr(tok, 'n') == NULL && strchr(tok, 'N') == NULL);
	if (d == floor(d) && fabs(d) < 9007199254740992.0)
		CHECK(strchr(tok, 'e') == NULL && strchr(tok, '.') == NULL);
}

/*
 * Checks the whole exposition; returns the number of sample lines.
 * cur is the family named by the last # TYPE line.
 */
static size_t check_exposition(const char *t, size_t len, int om)
{
	char cur[128] = "", curtype[64] = "", prev[4096] = "";
	char seen[8][128];
	const char *line = t, *end = t + len;
	size_t samples = 0, nseen = 0;
	int eof = 0;

	CHECK(strlen(t) == len);
	CHECK(len == 0 || t[len - 1] == '\n');
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *p = line, *name, *series;
		size_t nlen;

		CHECK(nl != NULL);
		CHECK(!eof); /* nothing after # EOF */
		if (*p == '#') {
			char kw[8], fam[128], rest[64];

			if (om && nl - p == 5 && memcmp(p, "# EOF", 5) == 0) {
				eof = 1;
				line = nl + 1;
				continue;
			}
			CHECK(nl - p < 4000);
			CHECK(sscanf(p, "# %7s %127s %63s", kw, fam, rest) ==
			      3);
			CHECK(strcmp(kw, "HELP") == 0 ||
			      strcmp(kw, "TYPE") == 0);
			if (strcmp(kw, "TYPE") == 0) {
				CHECK(strcmp(rest, "gauge") == 0 ||
				      strcmp(rest, "counter") == 0 ||
				      (om && strcmp(rest, "info") == 0));
				/* Each family is described once. */
				for (size_t i = 0; i < nseen; i++)
					CHECK(strcmp(seen[i], fam) != 0);
				CHECK(nseen < 8);
				snprintf(seen[nseen++], sizeof(seen[0]), "%s",
					 fam);
				snprintf(cur, sizeof(cur), "%s", fam);
				snprintf(curtype, sizeof(curtype), "%s", rest);
			}
			line = nl + 1;
			continue;
		}
		/* name */
		name = p;
		CHECK(name_char(*p, 1));
		while (name_char(*p, 0))
			p++;
		nlen = (size_t)(p - name);
		CHECK(cur[0] != '\0');
		if (strlen(cur) == nlen) {
			CHECK(memcmp(name, cur, nlen) == 0);
		} else {
			const char *sfx = strcmp(curtype, "counter") == 0
						  ? "_total"
						  : "_info";

			/* OpenMetrics families drop the sample suffix. */
			CHECK(om && nlen == strlen(cur) + strlen(sfx));
			CHECK(memcmp(name, cur, strlen(cur)) == 0);
			CHECK(memcmp(name + strlen(cur), sfx, strlen(sfx)) ==
			      0);
		}
		/* {label="value",...} */
		if (*p == '{') {
			p++;
			for (;;) {
				char val[4096];
				size_t vn;

				CHECK(name_char(*p, 1) && *p != ':');
				while (name_char(*p, 0) && *p != ':')
					p++;
				CHECK(p[0] == '=' && p[1] == '"');
				p = label_value(p + 2, val, sizeof(val), &vn);
				CHECK(p != NULL && p <= nl);
				if (*p == ',') {
					p++;
					continue;
				}
				CHECK(*p == '}');
				p++;
				break;
			}
		}
		CHECK(*p == ' ');
		/* Series are unique: differ from the previous sample line. */
		series = line;
		CHECK((size_t)(p - series) < sizeof(prev));
		CHECK(strlen(prev) != (size_t)(p - series) ||
		      memcmp(prev, series, (size_t)(p - series)) != 0);
		memcpy(prev, series, (size_t)(p - series));
		prev[p - series] = '\0';
		p++;
		check_value(p, (size_t)(nl - p));
		samples++;
		line = nl + 1;
	}
	CHECK(eof == om);
	return samples;
}

/* An independent UTF-8 check (RFC 3629: no overlongs, no surrogates). */
static int utf8_valid(const unsigned char *s)
{
	while (*s) {
		unsigned int c = *s, n, cp, min;

		if (c < 0x80) {
			s++;
			continue;
		}
		if ((c & 0xe0) == 0xc0)
			n = 1, cp = c & 0x1f, min = 0x80;
		else if ((c & 0xf0) == 0xe0)
			n = 2, cp = c & 0x0f, min = 0x800;
		else if ((c & 0xf8) == 0xf0)
			n = 3, cp = c & 0x07, min = 0x10000;
		else
			return 0;
		for (unsigned int i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		s += n + 1;
	}
	return 1;
}

/*
 * gw_labels_append then unescape must give the value back when it is valid
 * UTF-8; anything else must come out as valid UTF-8 (Prometheus rejects a
 * whole scrape over one bad label value).
 */
static void check_roundtrip(const char *value)
{
	struct gw_buf b;
	char back[4096];
	const char *p;
	size_t n;

	gw_buf_init(&b, 1u << 16);
	if (gw_labels_append(&b, "l", value) == 0) {
		CHECK(strncmp(b.p, "l=\"", 3) == 0);
		CHECK(strchr(b.p, '\n') == NULL);
		p = label_value(b.p + 3, back, sizeof(back), &n);
		CHECK(utf8_valid((const unsigned char *)b.p));
		if (strlen(value) < sizeof(back) / 4) {
			CHECK(p != NULL && *p == '\0');
			CHECK(utf8_valid((const unsigned char *)back));
			if (utf8_valid((const unsigned char *)value))
				CHECK(n == strlen(value) &&
				      strcmp(back, value) == 0);
		}
	}
	gw_buf_release(&b);
}

static double decode_value(unsigned int mode, const uint8_t **p,
			   const uint8_t *end)
{
	double v = 0;

	switch (mode) {
	case 0:
		if (end - *p >= 8) {
			memcpy(&v, *p, 8);
			*p += 8;
		}
		return v;
	case 1:
		return *p < end ? (double)(int8_t) * (*p)++ : 0;
	case 2:
		return *p < end ? *(*p)++ / 7.0 : 0.5;
	default:
		return *p < end ? (double)((uint64_t) * (*p)++ << 40) : 1e20;
	}
}

/* Adds the record at p; returns where the next one starts. */
static const uint8_t *add_record(struct gw_snap *snaps, const uint8_t *p,
				 const uint8_t *end, size_t *added)
{
	unsigned int ctl = *p++;
	const struct gw_family *f = &fams[ctl & 3];
	struct gw_snap *s = &snaps[(ctl >> 2) & 1];
	char vals[3][1024], base[32] = "";
	unsigned int nv = 0;
	double v = decode_value((ctl >> 3) & 3, &p, end);
	const uint8_t *rec_end = memchr(p, 0x00, (size_t)(end - p));
	size_t before = s->n;

	if (!rec_end)
		rec_end = end;
	if (ctl & 0x20)
		snprintf(base, sizeof(base), "gpu=\"%u\"", ctl >> 6);
	/* label values: the rest of the record, split at 0x01 */
	while (p < rec_end && nv < 3 && (ctl & 3) != 3) {
		const uint8_t *sep = memchr(p, 0x01, (size_t)(rec_end - p));
		size_t n = (size_t)((sep ? sep : rec_end) - p);

		if (n >= sizeof(vals[0]))
			n = sizeof(vals[0]) - 1;
		memcpy(vals[nv], p, n);
		vals[nv][n] = '\0';
		check_roundtrip(vals[nv]);
		nv++;
		if (!sep)
			break;
		p = sep + 1;
	}
	switch (nv) {
	case 0:
		gw_snap_add(s, f, v, base, NULL);
		break;
	case 1:
		gw_snap_add(s, f, v, base, label_names[0], vals[0], NULL);
		break;
	case 2:
		gw_snap_add(s, f, v, base, label_names[0], vals[0],
			    label_names[1], vals[1], NULL);
		break;
	default:
		gw_snap_add(s, f, v, base, label_names[0], vals[0],
			    label_names[1], vals[1], label_names[2], vals[2],
			    NULL);
		break;
	}
	/* NaN is skipped, anything else is kept (the input is small). */
	CHECK(s->n == before + !isnan(v));
	*added += s->n - before;
	return rec_end < end ? rec_end + 1 : end;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_registry *r = gw_registry_new();
	struct gw_snap snaps[2];
	const uint8_t *p = data, *end = data + size;
	size_t added = 0;
	int slot[2];

	if (!r)
		return 0;
	slot[0] = gw_registry_slot(r, "fuzz-a");
	slot[1] = gw_registry_slot(r, "fuzz-b");
	CHECK(slot[0] >= 0 && slot[1] >= 0);
	gw_snap_init(&snaps[0]);
	gw_snap_init(&snaps[1]);
	while (p < end)
		p = add_record(snaps, p, end, &added);
	gw_registry_publish(r, slot[0], &snaps[0]);
	gw_registry_publish(r, slot[1], &snaps[1]);
	CHECK(snaps[0].n == 0 && snaps[1].n == 0);
	for (int fmt = 0; fmt < 2; fmt++) {
		struct gw_buf out;
		size_t lines;

		gw_buf_init(&out, OUT_MAX);
		if (gw_registry_render(
			    r, fmt ? GW_EXPO_OPENMETRICS : GW_EXPO_TEXT_004,
			    &out) == 0) {
			lines = check_exposition(out.p ? out.p : "", out.len,
						 fmt);
			CHECK(lines <= added);
			CHECK((lines == 0) == (added == 0));
		}
		gw_buf_release(&out);
	}
	gw_snap_release(&snaps[0]);
	gw_snap_release(&snaps[1]);
	gw_registry_free(r);
	return 0;
}
