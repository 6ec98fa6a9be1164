/* SPDX-License-Identifier: MIT */
/*
 * chunk.h - the sample codec: a chunk is one series' samples (timestamp in
 * milliseconds, float64 value) compressed into a self-describing byte string.
 *
 * Contract
 * - Streaming: samples are appended one at a time; the encoder keeps O(1)
 *   state besides the bytes, and gw_chunk_bytes() returns a complete,
 *   decodable chunk at any moment (the store persists and queries the open
 *   head chunk while it grows).
 * - Timestamps never go back: t equal to the previous one is kept (repeated
 *   timestamps round-trip), t smaller is rejected with -EDOM and nothing
 *   changes.  Any int64 timestamp is accepted, INT64_MIN..INT64_MAX.
 * - Values round-trip bit-exactly: NaN payloads, +-Inf, -0.0, denormals.
 * - A chunk is bounded: GW_CHUNK_MAX_SAMPLES samples and GW_CHUNK_MAX_BYTES
 *   bytes; an append that would pass either returns -ENOSPC (the caller cuts
 *   a new chunk) and leaves the chunk as it was.
 * - The format is versioned (first byte) and carries the sample count and a
 *   CRC-32C of the payload; the decoder never trusts it: any byte string
 *   gives either the samples or -EBADMSG, never a read out of bounds, and a
 *   flipped bit is caught by the checksum.
 *
 * Thread safety: one owner per encoder / decoder; gw_chunk_copy() only
 * reads the encoder.
 */
#ifndef GW_CHUNK_H
#define GW_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#define GW_CHUNK_MAX_SAMPLES 65535
#define GW_CHUNK_MAX_BYTES   (1u << 20)

/*
 * Private: the predictor state shared by encoder and decoder (the decoder
 * replays exactly the updates the encoder made).  See
 * docs/internals/codec.md.
 */
struct gw_chunk_model {
	uint64_t tprev; /* last timestamp, as uint64 bits */
	uint64_t base; /* reference interval the timestamps are coded against */
	int64_t acc;   /* version 2: residuals not yet folded into base */
	/* Version 3: the collector's tick grid (chunk.c, time_update). */
	int32_t off;	 /* last timestamp less its grid point, 1/4096 ms */
	int32_t bf;	 /* the interval's fraction, 1/4096 ms, 0..4095 */
	uint32_t nr;	 /* samples since the grid was last reset (saturates) */
	uint8_t lj;	 /* the last interval was a jump */
	uint64_t ka;	 /* running mean timestamp residual (x 8): Rice k */
	uint64_t kj;	 /* running size of those past the Rice part */
	uint64_t kt, kv; /* running residual sizes, choose the code parameter */
	uint32_t zt, zv; /* running shares of zero residuals */
	uint64_t vprev;	 /* bits of the last value */
	uint64_t ivp;	 /* last value as a scaled integer (decimal mode) */
	uint64_t dvp;	 /* its last change */
	int32_t score;	 /* > 0: predict values with their last change too */
	uint8_t mode;	 /* decimal or xor */
	uint8_t scale;	 /* decimal mode: value = integer / 10^scale */
	uint8_t lead, wlen; /* xor mode: the last window */
	uint64_t kr;	    /* running run length, chooses its code parameter */
	uint32_t zr;	    /* running share of empty runs */
	uint8_t rmode;	    /* the last coded sample was exactly predicted */
	uint8_t ver;	    /* format version: how timestamps are predicted */
};

/* A bit stream being written (private to the codec). */
struct gw_chunk_bits {
	uint8_t *p;
	size_t cap;
	uint64_t pos; /* bits written */
};

struct gw_chunk_enc {
	uint8_t *p; /* the chunk as gw_chunk_bytes() last assembled it */
	size_t len; /* the chunk's size as it stands (partial bytes count) */
	size_t cap;
	/* Private encoder state. */
	uint32_t n;
	int64_t t0;
	uint32_t run; /* exactly predicted samples in the open run */
	/* Version 3 keeps two streams: timestamps (and run lengths), then
	 * values, so that series read at the same instants have the same
	 * timestamp bytes, which the store's zstd blocks then hold once. */
	struct gw_chunk_bits w[2];
	struct gw_chunk_model m;
};

void gw_chunk_enc_init(struct gw_chunk_enc *e);
void gw_chunk_enc_release(struct gw_chunk_enc *e);
/* Empties the chunk (keeps the allocation). */
void gw_chunk_enc_reset(struct gw_chunk_enc *e);

/* 0, -EDOM (t before the last sample), -ENOSPC (full), -ENOMEM. */
__attribute__((warn_unused_result)) int gw_chunk_append(struct gw_chunk_enc *e,
							int64_t t, double v);

/* Samples in the chunk. */
static inline uint32_t gw_chunk_count(const struct gw_chunk_enc *e)
{
	return e->n;
}

/*
 * The chunk as it stands, assembled in the encoder's buffer; valid until
 * the next append/reset/release.  Returns NULL with *len = 0 for an empty
 * chunk, and when out of memory (the encoder is unchanged: retry later).
 */
const uint8_t *gw_chunk_bytes(struct gw_chunk_enc *e, size_t *len);

/*
 * The chunk as gw_chunk_bytes() would give it, in a new buffer (*out,
 * malloc'd, NULL with *len = 0 for an empty chunk), without writing to
 * the encoder: readers that share an encoder with its writer (under a
 * read lock) copy it this way.  0 or -ENOMEM.
 */
__attribute__((warn_unused_result)) int
gw_chunk_copy(const struct gw_chunk_enc *e, uint8_t **out, size_t *len);

/* First and last timestamp (undefined for an empty chunk). */
int64_t gw_chunk_first(const struct gw_chunk_enc *e);
int64_t gw_chunk_last(const struct gw_chunk_enc *e);

struct gw_chunk_dec {
	const uint8_t *p;
	size_t len;
	uint32_t n, i;
	/* Private: the streams read, each from byte off of p, bit pos up to
	 * bit end; version 2 has one (timestamps and values interleaved),
	 * version 3 two, it and iv say which stream is which. */
	struct {
		size_t off;
		uint64_t pos, end;
	} r[2];
	uint8_t it, iv;
	int bad;
	uint32_t left; /* samples left in the current run */
	int closing;   /* the next coded sample ends a run: not predicted */
	struct gw_chunk_model m;
};

/*
 * Checks the header and checksum of p[0..len) and prepares to decode; the
 * bytes are borrowed and must outlive the decoder.  0 or -EBADMSG.
 */
__attribute__((warn_unused_result)) int
gw_chunk_dec_init(struct gw_chunk_dec *d, const uint8_t *p, size_t len);

/* Samples announced by the header (valid after a successful init). */
static inline uint32_t gw_chunk_dec_count(const struct gw_chunk_dec *d)
{
	return d->n;
}

/* 1 and the next sample, 0 at the end, -EBADMSG on malformed data. */
__attribute__((warn_unused_result)) int gw_chunk_next(struct gw_chunk_dec *d,
						      int64_t *t, double *v);

/*
 * Decodes a whole chunk into caller arrays of room cap (>= count); returns
 * the number of samples or -EBADMSG / -ENOSPC.
 */
__attribute__((warn_unused_result)) long
gw_chunk_decode_all(const uint8_t *p, size_t len, int64_t *t, double *v,
		    size_t cap);

#endif
