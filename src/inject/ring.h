/* SPDX-License-Identifier: MIT */
/*
 * ring.h - the writer side of one CUPTI ring (include/gpuwatch/cupti_ring.h)
 * inside the monitored process.
 *
 * gw_cring_open() creates DIR/gpuwatch-cupti.PID.TICKS (0600, O_EXCL,
 * O_NOFOLLOW; a stale file of an earlier process with the same pid and
 * start time is replaced once), sizes and maps it MAP_SHARED and fills the
 * header.  gw_cring_append() copies one framed record into the data area
 * (padding the end of the area with a GW_CREC_PAD record when it would
 * wrap); nothing is visible to the reader until gw_cring_publish()
 * release-stores head.  A record that does not fit in the free space (as
 * told by the reader's tail, clamped) is refused with -ENOSPC and counted
 * in hdr->dropped: the writer never waits.
 *
 * Nothing here allocates after gw_cring_open().  Errors are 0 or -errno.
 *
 * Thread safety: one writer; the caller serialises every call.  The header
 * fields other threads of the reader's process look at (head, dropped,
 * status, flags, write_ns) are stored atomically.
 */
#ifndef GW_INJECT_RING_H
#define GW_INJECT_RING_H

#include <stddef.h>
#include <stdint.h>

#include "gpuwatch/cupti_ring.h"

#define GW_CRING_DATA_OFF 4096u
#define GW_CRING_PATH_MAX 512u

struct gw_cring {
	struct gw_cring_hdr *hdr; /* the mapping; NULL when closed */
	unsigned char *data;
	size_t map_len;
	uint32_t data_size;
	uint64_t head; /* written, not necessarily published */
	char path[GW_CRING_PATH_MAX];
};

/*
 * Creates and maps the ring in dir (NULL: GW_CRING_DEFAULT_DIR) with
 * data_size bytes of data (a power of two within GW_CRING_DATA_MIN..MAX,
 * else -EINVAL).  lib_version is copied (cut to 15 bytes).  status starts
 * as GW_CUPTI_ST_STARTING.  On failure *r is left closed and nothing
 * remains on disk.  -ENAMETOOLONG, -EINVAL or the -errno of the system call.
 */
__attribute__((warn_unused_result)) int gw_cring_open(struct gw_cring *r,
						      const char *dir,
						      uint32_t data_size,
						      const char *lib_version);

/*
 * Appends one record of size bytes (rec starts with struct gw_crec whose
 * size must equal size; a multiple of 8, 8..GW_CREC_MAX).  -EINVAL for a
 * bad record or a closed ring, -ENOSPC (counted in hdr->dropped) when the
 * reader has not freed enough space.
 */
__attribute__((warn_unused_result)) int
gw_cring_append(struct gw_cring *r, const void *rec, uint32_t size);

/* Makes what was appended visible (release store of head); sets write_ns. */
void gw_cring_publish(struct gw_cring *r, uint64_t now_ns);

void gw_cring_set_status(struct gw_cring *r, uint32_t status);
void gw_cring_set_flags(struct gw_cring *r, uint32_t flags);

/* Bytes free for records as the writer sees them now. */
uint64_t gw_cring_free(const struct gw_cring *r);

/*
 * Unmaps the ring.  With unlink_if_stale, the file is removed when
 * reader_seen_ns is older than GW_CRING_READER_STALE_NS at now_ns (no agent
 * will collect it).  Safe on a closed ring.
 */
void gw_cring_close(struct gw_cring *r, int unlink_if_stale, uint64_t now_ns);

/* Start time of this process in clock ticks (field 22 of /proc/self/stat), 0 if unknown. */
uint64_t gw_cring_start_ticks(void);

#endif
