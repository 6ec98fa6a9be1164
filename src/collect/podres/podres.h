/* SPDX-License-Identifier: MIT */
/*
 * podres.h - which pod holds which GPU, from the kubelet's pod-resources
 * API (gRPC `List` of k8s.io/kubelet/pkg/apis/podresources/v1 on the unix
 * socket /var/lib/kubelet/pod-resources/kubelet.sock by default).
 *
 * Three parts:
 *
 *   decode   gw_podres_decode(): one gRPC answer body (5-byte frame:
 *            compressed flag, big-endian length; then the protobuf
 *            ListPodResourcesResponse) into a set of (device id, pod,
 *            namespace, container) for the NVIDIA resources
 *            ("nvidia.com/..."); input from the network, never trusted.
 *   fetch    gw_podres_fetch(): the call itself, HTTP/2 with prior
 *            knowledge over the unix socket (libcurl), the status from
 *            grpc-status in the headers or trailers.
 *   map      struct gw_podres: the last set fetched, shared between the
 *            collector's thread "gw-podres" (which refreshes it every
 *            --pod-resources-interval) and the NVML workers, which ask it
 *            for a GPU's pod by UUID and re-label the GPU's series when its
 *            generation changes.
 *
 * The collector (gw_podres_collector) publishes
 * gpuwatch_agent_pod_resources_up, _errors_total and _devices.  States:
 *
 *            fetch ok                      fetch fails
 *   UNKNOWN ----------> UP <------------------------------+
 *      |                 |  fetch fails (one log line;    |
 *      | fetch fails     |  the set empties: no GPU has   | fetch ok (one
 *      +---------------> DOWN  pod labels any more) ------+  log line)
 *
 * Device ids: the NVIDIA device plugin names a GPU by its UUID
 * ("GPU-..."), a shared (time-sliced) replica "GPU-...::N"; both map to the
 * GPU.  MIG devices ("MIG-...") name no whole GPU and are not mapped.  A
 * GPU that several pods share is labelled with the first of them in
 * (namespace, pod, container) order.
 *
 * Errors: 0 or -errno; -EPROTO for a malformed answer, -EMSGSIZE past the
 * bounds.  Thread safety: decode and fetch are reentrant; the map's
 * functions may be called from any thread.
 */
#ifndef GW_PODRES_H
#define GW_PODRES_H

#include <stddef.h>
#include <stdint.h>

#include "collect/collector.h"

#define GW_PODRES_DEFAULT_SOCKET "/var/lib/kubelet/pod-resources/kubelet.sock"
/* Bounds: devices kept per answer, bytes of an answer. */
#define GW_PODRES_MAX_DEVICES 4096
#define GW_PODRES_MAX_BODY    (16u << 20)

struct gw_podres_dev {
	char device[128];   /* device id as the kubelet gives it */
	char pod[256];	    /* pod name */
	char ns[64];	    /* namespace */
	char container[64]; /* container name */
};

struct gw_podres_set {
	struct gw_podres_dev
		*dev; /* sorted by device, then ns, pod, container */
	unsigned int n;
	unsigned int dropped; /* past GW_PODRES_MAX_DEVICES, or too long */
};

/* Frees the set's array (not the struct); NULL is a no-op. */
void gw_podres_set_release(struct gw_podres_set *s);

/* Decodes a gRPC answer body of len bytes into *out (released by the
 * caller, also on error). */
__attribute__((warn_unused_result)) int
gw_podres_decode(const uint8_t *body, size_t len, struct gw_podres_set *out);

/* Calls List on the socket, waiting at most timeout_ms; on failure err
 * (errlen bytes) says why in words. */
__attribute__((warn_unused_result)) int
gw_podres_fetch(const char *socket_path, long timeout_ms,
		struct gw_podres_set *out, char *err, size_t errlen);

/* The shared map. */
struct gw_podres;
struct gw_podres *gw_podres_new(void);
void gw_podres_free(struct gw_podres *p);
/* Replaces the set (taken: *s is emptied); the generation changes when
 * the contents do. */
void gw_podres_take(struct gw_podres *p, struct gw_podres_set *s);
/* Changes whenever the answer of gw_podres_lookup() may have. */
uint64_t gw_podres_generation(const struct gw_podres *p);
/* The pod of the GPU with this UUID: 1 and *out filled, or 0 (none). */
int gw_podres_lookup(struct gw_podres *p, const char *uuid,
		     struct gw_podres_dev *out);

extern const struct gw_collector_ops gw_podres_collector;

#endif
