/* SPDX-License-Identifier: MIT */
/*
 * podres.c - see podres.h.  The request is the empty ListPodResourcesRequest
 * in one gRPC frame (five zero bytes), POSTed to
 * /v1.PodResourcesLister/List with content-type application/grpc.
 */
#include "collect/podres/podres.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/worker.h"
#include "pipeline/catalog.h"
#include "pipeline/metrics.h"
#include "podresources.pb-c.h"

void gw_podres_set_release(struct gw_podres_set *s)
{
	if (!s)
		return;
	free(s->dev);
	s->dev = NULL;
	s->n = 0;
	s->dropped = 0;
}

static int dev_cmp(const void *a, const void *b)
{
	const struct gw_podres_dev *x = a, *y = b;
	int r = strcmp(x->device, y->device);

	if (!r)
		r = strcmp(x->ns, y->ns);
	if (!r)
		r = strcmp(x->pod, y->pod);
	if (!r)
		r = strcmp(x->container, y->container);
	return r;
}

/* Copies s into dst of n bytes; 0, or -1 when it does not fit. */
static int copy(char *dst, size_t n, const char *s)
{
	size_t l = s ? strlen(s) : 0;

	if (l >= n)
		return -1;
	memcpy(dst, s ? s : "", l + 1);
	return 0;
}

static int add(struct gw_podres_set *out, const char *device, const char *pod,
	       const char *ns, const char *container, unsigned int *cap)
{
	struct gw_podres_dev *d;

	if (out->n >= GW_PODRES_MAX_DEVICES) {
		out->dropped++;
		return 0;
	}
	if (out->n == *cap) {
		unsigned int nc = *cap ? *cap * 2 : 16;
		void *p;

		if (nc > GW_PODRES_MAX_DEVICES)
			nc = GW_PODRES_MAX_DEVICES;
		p = realloc(out->dev, (size_t)nc * sizeof(*out->dev));
		if (!p)
			return -ENOMEM;
		out->dev = p;
		*cap = nc;
	}
	d = &out->dev[out->n];
	memset(d, 0, sizeof(*d)); /* whole entries compare equal */
	if (copy(d->device, sizeof(d->device), device) ||
	    copy(d->pod, sizeof(d->pod), pod) ||
	    copy(d->ns, sizeof(d->ns), ns) ||
	    copy(d->container, sizeof(d->container), container) ||
	    !d->device[0]) {
		out->dropped++;
		return 0;
	}
	out->n++;
	return 0;
}

int gw_podres_decode(const uint8_t *body, size_t len, struct gw_podres_set *out)
{
	V1__ListPodResourcesResponse *m;
	unsigned int cap = 0;
	uint32_t mlen;
	int err = 0;

	memset(out, 0, sizeof(*out));
	/* One frame: flag 0 (we accept no compression), length, message. */
	if (len < 5)
		return -EPROTO;
	if (body[0] != 0)
		return -EPROTO;
	mlen = (uint32_t)body[1] << 24 | (uint32_t)body[2] << 16 |
	       (uint32_t)body[3] << 8 | body[4];
	if (mlen > GW_PODRES_MAX_BODY)
		return -EMSGSIZE;
	if (mlen != len - 5)
		return -EPROTO;
	m = v1__list_pod_resources_response__unpack(NULL, mlen, body + 5);
	if (!m)
		return -EPROTO;
	for (size_t i = 0; i < m->n_pod_resources && !err; i++) {
		const V1__PodResources *p = m->pod_resources[i];

		for (size_t j = 0; j < p->n_containers && !err; j++) {
			const V1__ContainerResources *c = p->containers[j];

			for (size_t k = 0; k < c->n_devices && !err; k++) {
				const V1__ContainerDevices *d = c->devices[k];

				if (strncmp(d->resource_name, "nvidia.com/",
					    11) != 0)
					continue;
				for (size_t l = 0; l < d->n_device_ids && !err;
				     l++)
					err = add(out, d->device_ids[l],
						  p->name, p->namespace_,
						  c->name, &cap);
			}
		}
	}
	v1__list_pod_resources_response__free_unpacked(m, NULL);
	if (err) {
		gw_podres_set_release(out);
		return err;
	}
	if (out->n)
		qsort(out->dev, out->n, sizeof(*out->dev), dev_cmp);
	return 0;
}

/* ---- the call ---- */

struct call {
	struct gw_buf body;
	int status; /* grpc-status, -1 until seen */
	char message[160];
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct call *c = arg;

	gw_buf_put(&c->body, p, size * n);
	return gw_buf_error(&c->body) ? 0 : size * n;
}

/* "grpc-status: 0" in the headers (trailers-only answer) or trailers. */
static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct call *c = arg;
	size_t len = size * n;
	char line[256];

	if (len >= sizeof(line))
		return len;
	memcpy(line, p, len);
	line[len] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	if (strncasecmp(line, "grpc-status:", 12) == 0) {
		char *end;
		long v = strtol(line + 12, &end, 10);

		if (end != line + 12 && v >= 0 && v < 100)
			c->status = (int)v;
	} else if (strncasecmp(line, "grpc-message:", 13) == 0) {
		const char *v = line + 13;

		while (*v == ' ')
			v++;
		snprintf(c->message, sizeof(c->message), "%.*s",
			 (int)sizeof(c->message) - 1, v);
	}
	return len;
}

int gw_podres_fetch(const char *socket_path, long timeout_ms,
		    struct gw_podres_set *out, char *err, size_t errlen)
{
	static const uint8_t request[5] = { 0, 0, 0, 0, 0 };
	struct curl_slist *hdr = NULL, *h;
	struct call c = { .status = -1 };
	char cerr[CURL_ERROR_SIZE] = "";
	struct stat st;
	long code = 0;
	CURLcode rc;
	CURL *e;
	int r;

	memset(out, 0, sizeof(*out));
	err[0] = '\0';
	if (stat(socket_path, &st)) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", socket_path, strerror(-r));
		return r;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s: not a socket", socket_path);
		return -ENOTSOCK;
	}
	e = curl_easy_init();
	if (!e) {
		snprintf(err, errlen, "no HTTP client");
		return -ENOMEM;
	}
	gw_buf_init(&c.body, GW_PODRES_MAX_BODY + 5);
	h = curl_slist_append(hdr, "Content-Type: application/grpc");
	if (h)
		hdr = h;
	h = h ? curl_slist_append(hdr, "TE: trailers") : NULL;
	if (h)
		hdr = h;
	h = h ? curl_slist_append(hdr, "Expect:") : NULL;
	if (!h) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto out;
	}
	hdr = h;
	curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, socket_path);
	curl_easy_setopt(e, CURLOPT_URL,
			 "http://localhost/v1.PodResourcesLister/List");
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
			 (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, (const char *)request);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)sizeof(request));
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &c);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, &c);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, cerr);
	rc = curl_easy_perform(e);
	if (rc != CURLE_OK) {
		snprintf(err, errlen, "%s",
			 gw_buf_error(&c.body) ? "answer too large"
			 : cerr[0]	       ? cerr
					       : curl_easy_strerror(rc));
		r = gw_buf_error(&c.body) ? -EMSGSIZE : -ECONNREFUSED;
		goto out;
	}
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200) {
		snprintf(err, errlen, "HTTP status %ld", code);
		r = -EPROTO;
		goto out;
	}
	if (c.status != 0) {
		snprintf(err, errlen, "grpc-status %d%s%s", c.status,
			 c.message[0] ? ": " : "", c.message);
		r = -EPROTO;
		goto out;
	}
	r = gw_podres_decode((const uint8_t *)c.body.p, c.body.len, out);
	if (r)
		snprintf(err, errlen, "malformed answer (%zu bytes): %s",
			 c.body.len, strerror(-r));
out:
	curl_slist_free_all(hdr);
	curl_easy_cleanup(e);
	gw_buf_release(&c.body);
	return r;
}

/* ---- the map ---- */

struct gw_podres {
	pthread_mutex_t mu;
	struct gw_podres_set set; /* under mu */
	_Atomic uint64_t gen;
};

struct gw_podres *gw_podres_new(void)
{
	struct gw_podres *p = calloc(1, sizeof(*p));

	if (p)
		pthread_mutex_init(&p->mu, NULL);
	return p;
}

void gw_podres_free(struct gw_podres *p)
{
	if (!p)
		return;
	gw_podres_set_release(&p->set);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

static int same(const struct gw_podres_set *a, const struct gw_podres_set *b)
{
	return a->n == b->n &&
	       (!a->n || !memcmp(a->dev, b->dev, a->n * sizeof(*a->dev)));
}

void gw_podres_take(struct gw_podres *p, struct gw_podres_set *s)
{
	int changed;

	pthread_mutex_lock(&p->mu);
	changed = !same(&p->set, s);
	gw_podres_set_release(&p->set);
	p->set = *s;
	pthread_mutex_unlock(&p->mu);
	memset(s, 0, sizeof(*s));
	if (changed)
		atomic_fetch_add(&p->gen, 1);
}

uint64_t gw_podres_generation(const struct gw_podres *p)
{
	return p ? atomic_load(&p->gen) : 0;
}

/* device names the GPU uuid: equal, or a shared replica "uuid::N". */
static int names(const char *device, const char *uuid)
{
	size_t l = strlen(uuid);

	return strncmp(device, uuid, l) == 0 &&
	       (device[l] == '\0' ||
		(device[l] == ':' && device[l + 1] == ':'));
}

int gw_podres_lookup(struct gw_podres *p, const char *uuid,
		     struct gw_podres_dev *out)
{
	int found = 0;

	if (!p || !uuid || !uuid[0])
		return 0;
	pthread_mutex_lock(&p->mu);
	/* Sorted by device: the first match is the first pod in order among
	 * the exact id; replicas sort after it, by replica. */
	for (unsigned int i = 0; i < p->set.n && !found; i++) {
		if (names(p->set.dev[i].device, uuid)) {
			*out = p->set.dev[i];
			found = 1;
		}
	}
	pthread_mutex_unlock(&p->mu);
	return found;
}

/* ---- the collector ---- */

enum state { S_UNKNOWN, S_UP, S_DOWN };

struct podres_col {
	const struct gw_collect_env *env;
	struct gw_worker *w;
	int slot;
	struct gw_snap snap;
	enum state state;
	uint64_t errors, dropped;
	unsigned int devices;
};

static double col_round(struct gw_worker *w, void *arg)
{
	struct podres_col *c = arg;
	const char *sock = c->env->o->pod_resources_socket;
	long timeout = (long)(c->env->o->pod_resources_interval * 1000);
	struct gw_podres_set s;
	char err[256];
	int r;

	(void)w;
	if (timeout > 5000)
		timeout = 5000;
	if (timeout < 100)
		timeout = 100;
	r = gw_podres_fetch(sock, timeout, &s, err, sizeof(err));
	if (r) {
		c->errors++;
		if (c->state != S_DOWN)
			gw_warn("pod-resources: %s: %s; GPUs carry no pod "
				"labels until it answers",
				sock, err);
		c->state = S_DOWN;
		gw_podres_set_release(&s);
	} else {
		if (c->state != S_UP)
			gw_info("pod-resources: %s answers: %u GPU devices "
				"assigned to pods",
				sock, s.n);
		c->state = S_UP;
		c->dropped += s.dropped;
	}
	c->devices = s.n;
	gw_podres_take(c->env->podres, &s);

	gw_snap_reset(&c->snap);
	gw_snap_add(&c->snap, GW_FAM(AGENT_POD_RESOURCES_UP), c->state == S_UP,
		    NULL, NULL);
	gw_snap_add(&c->snap, GW_FAM(AGENT_POD_RESOURCES_ERRORS_TOTAL),
		    (double)c->errors, NULL, NULL);
	gw_snap_add(&c->snap, GW_FAM(AGENT_POD_RESOURCES_DEVICES),
		    (double)c->devices, NULL, NULL);
	gw_snap_add(&c->snap, GW_FAM(AGENT_POD_RESOURCES_DROPPED_TOTAL),
		    (double)c->dropped, NULL, NULL);
	gw_registry_publish(c->env->reg, c->slot, &c->snap);
	return GW_WORKER_PERIOD;
}

static int col_start(const struct gw_collect_env *env, void **priv)
{
	struct gw_worker_opts wo = {
		.name = "gw-podres",
		.round = col_round,
		.period = env->o->pod_resources_interval,
		.table = env->workers,
	};
	struct podres_col *c;
	int r;

	*priv = NULL;
	if (!env->podres || !env->o->pod_resources_socket ||
	    !env->o->pod_resources_socket[0] ||
	    strcmp(env->o->pod_resources_socket, "off") == 0)
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->env = env;
	gw_snap_init(&c->snap);
	c->slot = gw_registry_slot(env->reg, "pod-resources");
	if (c->slot < 0) {
		r = -ENOSPC;
		goto err;
	}
	wo.arg = c;
	r = gw_worker_start(&wo, &c->w);
	if (r)
		goto err;
	*priv = c;
	return 0;
err:
	gw_snap_release(&c->snap);
	free(c);
	return r;
}

static void col_request_stop(void *priv)
{
	struct podres_col *c = priv;

	if (c)
		gw_worker_request_stop(c->w);
}

static int col_stop(void *priv, double deadline)
{
	struct podres_col *c = priv;

	return c ? gw_worker_stop(c->w, deadline) : 0;
}

static void col_free(void *priv)
{
	struct podres_col *c = priv;

	if (!c)
		return;
	gw_worker_free(c->w);
	gw_snap_release(&c->snap);
	free(c);
}

const struct gw_collector_ops gw_podres_collector = {
	.name = "pod-resources",
	.start = col_start,
	.request_stop = col_request_stop,
	.stop = col_stop,
	.free = col_free,
};
