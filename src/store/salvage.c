/* SPDX-License-Identifier: MIT */
/*
 * salvage.c - what a damaged index.db still holds, read page by page
 * without SQLite's b-tree (which refuses a file whose first page or
 * schema is garbled).
 *
 * index.db holds three tables of ours (store.c, headlog.c):
 *
 *   meta(k TEXT PRIMARY KEY, v) WITHOUT ROWID    an index b-tree
 *   series(id INTEGER PRIMARY KEY, key TEXT)     record (NULL, key)
 *   series_packed(seq INTEGER PRIMARY KEY, data BLOB)
 *                         record (NULL, blob): a zstd list of (id, key)
 *   head(seq INTEGER PRIMARY KEY, t_min, t_max, data BLOB)
 *                                                record (NULL, int, int, blob)
 *
 * Every page image of the file and of its write-ahead log (index.db-wal,
 * where the last flushes are until a checkpoint) is scanned; a leaf page
 * of a table b-tree (type 13) or an index b-tree (type 10) is read cell
 * by cell in the record format SQLite documents (fileformat2.html),
 * following overflow chains for payloads that spill, and every record of
 * one of the shapes above is kept.  Old versions of a page (the file's
 * and the log's) and pages freed since give the same record twice, or
 * records of rows deleted since: rows are kept once by content, and the
 * caller drops head rows older than the watermark (what a cut deleted).
 *
 * The page size comes from the file's header, or the log's; when both
 * are garbled, each possible size is tried and the one that reads the
 * most records wins.  Nothing here trusts the
 * input: every offset is bounds-checked and every chain is bounded.
 */
#include "store/store_int.h"

#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_MAX (1ull << 30) /* larger files are read up to this */

struct scan {
	const uint8_t *db;
	const uint8_t *wal;
	size_t dblen, wallen;
	uint32_t ps; /* page size */
	uint32_t usable;
	/* page number -> newest image (0: none) */
	const uint8_t **page;
	uint32_t npages;
	struct gw_store_salvage *out;
};

static uint32_t be16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* SQLite's varint: 1 to 9 bytes, big-endian 7 bits a byte, the ninth 8. */
static int sq_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;

	for (int i = 0; i < 9; i++) {
		if (*p >= end)
			return -1;
		if (i == 8) {
			v = (v << 8) | **p;
			(*p)++;
			*out = v;
			return 0;
		}
		v = (v << 7) | (**p & 0x7f);
		if (!(*(*p)++ & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

static int read_file(const char *path, uint8_t **out, size_t *len)
{
	struct stat st;
	size_t n, got = 0;
	uint8_t *p;
	int fd;

	*out = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	n = (uint64_t)st.st_size > FILE_MAX ? FILE_MAX : (size_t)st.st_size;
	p = malloc(n ? n : 1);
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	*out = p;
	*len = got;
	return 0;
}

static bool page_size_ok(uint32_t ps)
{
	return ps >= 512 && ps <= 65536 && (ps & (ps - 1)) == 0;
}

/* The page images: the file's, then the log's frames in order (newer
 * versions of a page replace older ones). */
static int map_pages(struct scan *sc)
{
	uint32_t nfile = (uint32_t)(sc->dblen / sc->ps), nframes = 0, n;

	if (sc->wal && sc->wallen >= 32)
		nframes = (uint32_t)((sc->wallen - 32) / (24 + (size_t)sc->ps));
	/* A database of N pages has each of pages 1..N in the file or in the
	 * log, so no valid page number passes file pages + log frames: the
	 * map is bounded by the input, whatever a garbled frame says. */
	n = nfile;
	for (uint32_t f = 0; f < nframes; f++) {
		uint32_t pg = be32(sc->wal + 32 + (size_t)f * (24 + sc->ps));

		if (pg > n && pg <= nfile + nframes)
			n = pg;
	}
	sc->npages = n;
	sc->page = calloc((size_t)n + 1, sizeof(*sc->page));
	if (!sc->page)
		return -ENOMEM;
	for (uint32_t i = 0; i < nfile; i++)
		sc->page[i + 1] = sc->db + (size_t)i * sc->ps;
	for (uint32_t f = 0; f < nframes; f++) {
		const uint8_t *fr = sc->wal + 32 + (size_t)f * (24 + sc->ps);
		uint32_t pg = be32(fr);

		if (pg >= 1 && pg <= n)
			sc->page[pg] = fr + 24;
	}
	return 0;
}

/*
 * The payload of a cell whose local part starts at p (end: the page's
 * end): total bytes P, local bytes as the b-tree type says.  *out is
 * malloc'ed (P bytes) or NULL when the chain is broken.
 */
static uint8_t *payload(struct scan *sc, const uint8_t *p, const uint8_t *end,
			uint64_t P, bool table)
{
	uint32_t U = sc->usable;
	uint64_t X = table ? U - 35 : ((uint64_t)(U - 12) * 64 / 255) - 23;
	uint64_t M = ((uint64_t)(U - 12) * 32 / 255) - 23, local, got;
	uint8_t *buf;
	uint32_t next, hops = 0;

	if (P > (64u << 20))
		return NULL;
	if (P <= X) {
		local = P;
	} else {
		uint64_t K = M + ((P - M) % (U - 4));

		local = K <= X ? K : M;
	}
	if ((uint64_t)(end - p) < local + (P > local ? 4 : 0))
		return NULL;
	buf = malloc(P ? P : 1);
	if (!buf)
		return NULL;
	memcpy(buf, p, local);
	got = local;
	if (got == P)
		return buf;
	next = be32(p + local);
	while (got < P) {
		const uint8_t *op;
		uint64_t take = P - got < U - 4 ? P - got : U - 4;

		if (next == 0 || next > sc->npages || !sc->page[next] ||
		    ++hops > sc->npages) {
			free(buf);
			return NULL;
		}
		op = sc->page[next];
		memcpy(buf + got, op + 4, take);
		got += take;
		next = be32(op);
	}
	return buf;
}

/* One column of a record: its serial type's value. */
struct col {
	uint64_t type;
	int64_t i;
	const uint8_t *p;
	size_t len;
};

/* Splits a record into at most max columns; returns their number or -1. */
static int record(const uint8_t *p, size_t n, struct col *c, int max)
{
	const uint8_t *h = p, *end = p + n, *body;
	uint64_t hlen;
	int k = 0;

	if (sq_varint(&h, end, &hlen) || hlen > n || hlen < 1)
		return -1;
	body = p + hlen;
	while (h < p + hlen) {
		uint64_t t;
		size_t len;

		if (k == max || sq_varint(&h, p + hlen, &t))
			return -1;
		if (t <= 6) {
			static const uint8_t sz[] = { 0, 1, 2, 3, 4, 6, 8 };

			len = sz[t];
		} else if (t == 7) {
			len = 8;
		} else if (t == 8 || t == 9) {
			len = 0;
		} else if (t >= 12) {
			len = (size_t)((t - 12) / 2);
		} else {
			return -1;
		}
		if ((size_t)(end - body) < len)
			return -1;
		c[k].type = t;
		c[k].p = body;
		c[k].len = len;
		c[k].i = 0;
		if (t >= 1 && t <= 6) {
			int64_t v = (int8_t)body[0];

			for (size_t j = 1; j < len; j++)
				v = (int64_t)((uint64_t)v << 8 | body[j]);
			c[k].i = v;
		} else if (t == 9) {
			c[k].i = 1;
		}
		body += len;
		k++;
	}
	return k;
}

static bool is_int(const struct col *c)
{
	return c->type <= 6 || c->type == 8 || c->type == 9;
}

static bool is_text(const struct col *c)
{
	return c->type >= 13 && (c->type & 1);
}

static bool is_blob(const struct col *c)
{
	return c->type >= 12 && !(c->type & 1);
}

static int keep_series(struct gw_store_salvage *o, int64_t id,
		       const struct col *key)
{
	char *k;

	if (id <= 0 || id >= UINT32_MAX || key->len == 0 || key->len > 65536 ||
	    memchr(key->p, '\0', key->len))
		return 0;
	for (size_t i = 0; i < o->nseries; i++)
		if (o->series[i].id == id &&
		    strlen(o->series[i].key) == key->len &&
		    memcmp(o->series[i].key, key->p, key->len) == 0)
			return 0;
	if (o->nseries == o->capseries) {
		size_t cap = o->capseries ? o->capseries * 2 : 64;
		void *v = realloc(o->series, cap * sizeof(*o->series));

		if (!v)
			return -ENOMEM;
		o->series = v;
		o->capseries = cap;
	}
	k = strndup((const char *)key->p, key->len);
	if (!k)
		return -ENOMEM;
	o->series[o->nseries].id = id;
	o->series[o->nseries].key = k;
	o->nseries++;
	return 0;
}

static int keep_packed(void *ctx, int64_t id, const char *key)
{
	struct col c = { .p = (const uint8_t *)key, .len = strlen(key) };

	return keep_series(ctx, id, &c);
}

static int keep_row(struct gw_store_salvage *o, int64_t seq, int64_t t_min,
		    int64_t t_max, const struct col *data)
{
	uint8_t *d;

	if (t_min > t_max || data->len == 0)
		return 0;
	for (size_t i = 0; i < o->nrows; i++)
		if (o->rows[i].t_min == t_min && o->rows[i].t_max == t_max &&
		    o->rows[i].len == data->len &&
		    memcmp(o->rows[i].data, data->p, data->len) == 0)
			return 0;
	if (o->nrows == o->caprows) {
		size_t cap = o->caprows ? o->caprows * 2 : 64;
		void *v = realloc(o->rows, cap * sizeof(*o->rows));

		if (!v)
			return -ENOMEM;
		o->rows = v;
		o->caprows = cap;
	}
	d = malloc(data->len);
	if (!d)
		return -ENOMEM;
	memcpy(d, data->p, data->len);
	o->rows[o->nrows].seq = seq;
	o->rows[o->nrows].t_min = t_min;
	o->rows[o->nrows].t_max = t_max;
	o->rows[o->nrows].data = d;
	o->rows[o->nrows].len = data->len;
	o->nrows++;
	return 0;
}

/* Reads the cells of one leaf page (hdr: its b-tree header). */
static int leaf(struct scan *sc, const uint8_t *pg, const uint8_t *hdr)
{
	const uint8_t *end = pg + sc->usable;
	bool table = hdr[0] == 13;
	uint32_t ncells = be16(hdr + 3);
	int err = 0;

	if ((size_t)(hdr - pg) + 8 + (size_t)ncells * 2 > sc->usable)
		return 0;
	for (uint32_t i = 0; i < ncells && !err; i++) {
		uint32_t off = be16(hdr + 8 + 2 * i);
		const uint8_t *p = pg + off;
		uint64_t P, rowid = 0;
		struct col c[6];
		uint8_t *pl;
		int k;

		if (off < 8 || off >= sc->usable || sq_varint(&p, end, &P) ||
		    (table && sq_varint(&p, end, &rowid)))
			continue;
		pl = payload(sc, p, end, P, table);
		if (!pl) {
			sc->out->damaged++;
			continue;
		}
		k = record(pl, (size_t)P, c, 6);
		if (table && k == 2 && c[0].type == 0 && is_text(&c[1])) {
			err = keep_series(sc->out, (int64_t)rowid, &c[1]);
		} else if (table && k == 2 && c[0].type == 0 &&
			   is_blob(&c[1]) && c[1].len >= 4 &&
			   memcmp(c[1].p, "\x28\xb5\x2f\xfd", 4) == 0) {
			/* a packed list of series (series_packed): zstd's
			 * checksum tells a damaged one, which is skipped;
			 * bounded at 1024 times its size, as keys pack */
			int r = gw_store_each_packed(c[1].p, c[1].len,
						     c[1].len * 1024 + 65536,
						     keep_packed, sc->out);

			err = r == -ENOMEM ? r : 0;
		} else if (table && k == 4 && c[0].type == 0 && is_int(&c[1]) &&
			   is_int(&c[2]) && is_blob(&c[3])) {
			err = keep_row(sc->out, (int64_t)rowid, c[1].i, c[2].i,
				       &c[3]);
		} else if (!table && k == 2 && is_text(&c[0]) &&
			   c[0].len == 9 &&
			   memcmp(c[0].p, "watermark", 9) == 0 &&
			   is_int(&c[1]) && c[1].i > 0 &&
			   c[1].i % MS_HOUR == 0) {
			/* the newest of the versions found */
			if (!sc->out->have_watermark ||
			    c[1].i > sc->out->watermark)
				sc->out->watermark = c[1].i;
			sc->out->have_watermark = true;
		}
		free(pl);
	}
	return err;
}

int gw_store_salvage_read_log(const char *path, uint8_t **log, size_t *len)
{
	char wal[PATH_MAX + 8];
	int err;

	snprintf(wal, sizeof(wal), "%s-wal", path);
	err = read_file(wal, log, len);
	if (err == -ENOENT) {
		*log = NULL;
		*len = 0;
		return 0;
	}
	return err;
}

int gw_store_salvage(const char *path, const uint8_t *log, size_t loglen,
		     struct gw_store_salvage *out)
{
	uint8_t *db;
	size_t len;
	int err;

	memset(out, 0, sizeof(*out));
	err = read_file(path, &db, &len);
	if (err)
		return err;
	gw_dbg("store: salvaging %s: %zu bytes, log %zu bytes", path, len,
	       log ? loglen : 0);
	err = gw_store_salvage_mem(db, len, log, loglen, out);
	free(db);
	return err;
}

/* One pass over every page image with page size ps. */
static int scan_pages(const uint8_t *db, size_t dblen, const uint8_t *log,
		      size_t loglen, uint32_t ps, uint32_t usable,
		      struct gw_store_salvage *out)
{
	struct scan sc = { .db = db,
			   .dblen = dblen,
			   .wal = log,
			   .wallen = log ? loglen : 0,
			   .ps = ps,
			   .usable = usable,
			   .out = out };
	int err;

	memset(out, 0, sizeof(*out));
	err = map_pages(&sc);
	for (uint32_t pg = 1; !err && pg <= sc.npages; pg++) {
		const uint8_t *p = sc.page[pg];
		const uint8_t *hdr;

		if (!p)
			continue;
		hdr = pg == 1 ? p + 100 : p;
		if (hdr[0] == 13 || hdr[0] == 10)
			err = leaf(&sc, p, hdr);
	}
	/* Older images of pages the log replaced: rows deleted or moved
	 * since may be only there (kept once by content). */
	for (uint32_t i = 0; !err && i < (uint32_t)(sc.dblen / sc.ps); i++) {
		const uint8_t *p = sc.db + (size_t)i * sc.ps;
		const uint8_t *hdr = i == 0 ? p + 100 : p;

		if (sc.page[i + 1] != p && (hdr[0] == 13 || hdr[0] == 10))
			err = leaf(&sc, p, hdr);
	}
	free(sc.page);
	if (err)
		gw_store_salvage_release(out);
	return err;
}

int gw_store_salvage_mem(const uint8_t *db, size_t dblen, const uint8_t *log,
			 size_t loglen, struct gw_store_salvage *out)
{
	static const uint32_t sizes[] = { 4096, 1024,  512,   2048,
					  8192, 16384, 32768, 65536 };
	struct gw_store_salvage best = { 0 };
	size_t most = 0;
	int err;

	memset(out, 0, sizeof(*out));
	if (!log)
		loglen = 0;
	if (dblen >= 100 && memcmp(db, "SQLite format 3", 16) == 0) {
		uint32_t ps = be16(db + 16);

		ps = ps == 1 ? 65536 : ps;
		if (page_size_ok(ps) && ps - db[20] >= 480)
			return scan_pages(db, dblen, log, loglen, ps,
					  ps - db[20], out);
	}
	if (loglen >= 32 && (be32(log) & 0xfffffffe) == 0x377f0682 &&
	    page_size_ok(be32(log + 8)))
		return scan_pages(db, dblen, log, loglen, be32(log + 8),
				  be32(log + 8), out);
	/* Both headers garbled: the page size that reads the most. */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct gw_store_salvage sv;
		size_t n;

		err = scan_pages(db, dblen, log, loglen, sizes[i], sizes[i],
				 &sv);
		if (err) {
			gw_store_salvage_release(&best);
			return err;
		}
		n = sv.nseries + sv.nrows + sv.have_watermark;
		if (n > most || i == 0) {
			gw_store_salvage_release(&best);
			best = sv;
			most = n;
		} else {
			gw_store_salvage_release(&sv);
		}
	}
	*out = best;
	return 0;
}

void gw_store_salvage_release(struct gw_store_salvage *s)
{
	for (size_t i = 0; i < s->nseries; i++)
		free(s->series[i].key);
	for (size_t i = 0; i < s->nrows; i++)
		free(s->rows[i].data);
	free(s->series);
	free(s->rows);
	memset(s, 0, sizeof(*s));
}
