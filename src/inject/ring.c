/* SPDX-License-Identifier: MIT */
/*
 * ring.c - the writer side of a CUPTI ring; see ring.h and
 * include/gpuwatch/cupti_ring.h for the format.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "inject/ring.h"

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t gw_cring_start_ticks(void)
{
	char buf[2048];
	ssize_t n;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The command name may hold anything, ')' included: parse after the last one. */
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	p++;
	/* Field 3 (state) is the first after ')'; field 22 is the 20th. */
	for (int field = 3; field < 22; field++) {
		while (*p == ' ')
			p++;
		while (*p && *p != ' ')
			p++;
		if (!*p)
			return 0;
	}
	while (*p == ' ')
		p++;
	char *end = NULL;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 10);
	if (errno || end == p || (*end != ' ' && *end != '\0' && *end != '\n'))
		return 0;
	return v;
}

static int create_file(const char *path)
{
	int flags = O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW;
	int fd = open(path, flags, 0600);

	if (fd < 0 && errno == EEXIST) {
		/* Left by an earlier process with our pid and start time. */
		if (unlink(path) != 0)
			return -errno;
		fd = open(path, flags, 0600);
	}
	return fd < 0 ? -errno : fd;
}

int gw_cring_open(struct gw_cring *r, const char *dir, uint32_t data_size,
		  const char *lib_version)
{
	struct stat st;
	void *map;
	int fd, err, n;

	if (!r)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	if (data_size < GW_CRING_DATA_MIN || data_size > GW_CRING_DATA_MAX ||
	    (data_size & (data_size - 1)) != 0)
		return -EINVAL;
	if (!dir || !*dir)
		dir = GW_CRING_DEFAULT_DIR;
	n = snprintf(r->path, sizeof(r->path), "%s/%s%ld.%llu", dir,
		     GW_CRING_PREFIX, (long)getpid(),
		     (unsigned long long)gw_cring_start_ticks());
	if (n < 0 || (size_t)n >= sizeof(r->path)) {
		r->path[0] = '\0';
		return -ENAMETOOLONG;
	}
	fd = create_file(r->path);
	if (fd < 0) {
		err = fd;
		goto err_path;
	}
	r->map_len = (size_t)GW_CRING_DATA_OFF + data_size;
	if (ftruncate(fd, (off_t)r->map_len) != 0) {
		err = -errno;
		goto err_unlink;
	}
	map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		err = -errno;
		goto err_unlink;
	}
	close(fd);

	r->hdr = map;
	r->data = (unsigned char *)map + GW_CRING_DATA_OFF;
	r->data_size = data_size;
	r->head = 0;

	struct gw_cring_hdr *h = r->hdr;
	h->version = GW_CRING_VERSION;
	h->hdr_size = (uint16_t)sizeof(*h);
	h->data_off = GW_CRING_DATA_OFF;
	h->data_size = data_size;
	h->pid = (uint32_t)getpid();
	h->flags = 0;
	h->pidns_ino =
		stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
	h->start_ticks = gw_cring_start_ticks();
	h->created_ns = realtime_ns();
	if (lib_version) {
		size_t len = strnlen(lib_version, sizeof(h->lib_version) - 1);
		memcpy(h->lib_version, lib_version, len);
		h->lib_version[len] = '\0';
	}
	h->status = GW_CUPTI_ST_STARTING;
	/* The magic last: a reader that sees it sees a complete header. */
	__atomic_store_n(&h->magic, GW_CRING_MAGIC, __ATOMIC_RELEASE);
	return 0;

err_unlink:
	close(fd);
	unlink(r->path);
err_path:
	r->path[0] = '\0';
	r->map_len = 0;
	return err;
}

/* Unread bytes as the writer may trust them: the tail clamped into [head - size, head]. */
static uint64_t used_bytes(const struct gw_cring *r)
{
	uint64_t tail = __atomic_load_n(&r->hdr->tail, __ATOMIC_ACQUIRE);

	if (tail > r->head)
		return 0; /* a reader ahead of us: nothing of ours unread */
	if (r->head - tail > r->data_size)
		return r->data_size;
	return r->head - tail;
}

uint64_t gw_cring_free(const struct gw_cring *r)
{
	if (!r || !r->hdr)
		return 0;
	return r->data_size - used_bytes(r);
}

static void count_drop(struct gw_cring *r)
{
	__atomic_fetch_add(&r->hdr->dropped, 1, __ATOMIC_RELAXED);
}

int gw_cring_append(struct gw_cring *r, const void *rec, uint32_t size)
{
	const struct gw_crec *c = rec;

	if (!r || !r->hdr || !rec || size < sizeof(struct gw_crec) ||
	    size > GW_CREC_MAX || (size & 7u) != 0 || c->size != size)
		return -EINVAL;

	uint64_t free_b = r->data_size - used_bytes(r);
	uint32_t off = (uint32_t)(r->head & (r->data_size - 1));
	uint32_t contig = r->data_size - off;
	uint32_t need = size <= contig ? size : contig + size;

	if (need > free_b) {
		count_drop(r);
		return -ENOSPC;
	}
	if (size > contig) {
		struct gw_crec pad = { .type = GW_CREC_PAD,
				       .version = 0,
				       .size = contig };
		memcpy(r->data + off, &pad, sizeof(pad));
		r->head += contig;
		off = 0;
	}
	memcpy(r->data + off, rec, size);
	r->head += size;
	return 0;
}

void gw_cring_publish(struct gw_cring *r, uint64_t now_ns)
{
	if (!r || !r->hdr)
		return;
	__atomic_store_n(&r->hdr->write_ns, now_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&r->hdr->head, r->head, __ATOMIC_RELEASE);
}

void gw_cring_set_status(struct gw_cring *r, uint32_t status)
{
	if (r && r->hdr)
		__atomic_store_n(&r->hdr->status, status, __ATOMIC_RELEASE);
}

void gw_cring_set_flags(struct gw_cring *r, uint32_t flags)
{
	if (r && r->hdr)
		__atomic_fetch_or(&r->hdr->flags, flags, __ATOMIC_RELEASE);
}

void gw_cring_close(struct gw_cring *r, int unlink_if_stale, uint64_t now_ns)
{
	if (!r || !r->hdr)
		return;
	if (unlink_if_stale && r->path[0]) {
		uint64_t seen = __atomic_load_n(&r->hdr->reader_seen_ns,
						__ATOMIC_ACQUIRE);
		if (seen == 0 ||
		    (now_ns > seen && now_ns - seen > GW_CRING_READER_STALE_NS))
			unlink(r->path);
	}
	munmap(r->hdr, r->map_len);
	r->hdr = NULL;
	r->data = NULL;
}
