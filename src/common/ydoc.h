/* SPDX-License-Identifier: MIT */
/*
 * ydoc.h - walking a YAML document (libyaml's document API) node by node,
 * with one-line errors: "FILE:LINE: PATH: what was expected".
 *
 * Shared by the configuration readers that walk a document themselves
 * (export/rw_config.c for remote_write, http/webconfig.c for the web
 * configuration file).  A walker embeds a struct gw_ydoc, loads the text
 * with gw_ydoc_load, reads nodes with the helpers below and releases the
 * document with gw_ydoc_release.
 *
 * Errors: every helper that refuses a node writes one line into the
 * walker's err buffer and returns -EINVAL; -ENOMEM is returned without a
 * message.  Aliases are walked as often as they are referenced: each
 * mapping key, and each node a walker passes to gw_ydoc_step, counts one
 * step and the walk is refused after GW_YDOC_MAX_STEPS, so an alias bomb
 * is refused, never expanded.
 *
 * PATH, where a helper takes one, names the value in the message
 * ("remote_write[1].queue_config.capacity", "tls_server_config"); NULL
 * leaves it out.  Lines are 1-based: line0 is the file line of the
 * text's first line (1 for a whole file).
 *
 * Not thread-safe: one walker per thread.  The walker owns its document
 * from gw_ydoc_load to gw_ydoc_release; nodes and texts the helpers return
 * are borrowed from it.
 */
#ifndef GW_YDOC_H
#define GW_YDOC_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#define GW_YDOC_MAX_STEPS 100000
/* A path's room, with the key appended by gw_ydoc_mapping. */
#define GW_YDOC_PATH_MAX 192

struct gw_ydoc {
	yaml_document_t doc;
	bool loaded;
	const char *file;   /* for messages: "web config", "/etc/x.yml" */
	unsigned int line0; /* file line of the text's first line; 0: 1 */
	char *err;
	size_t errlen;
	unsigned long steps; /* nodes visited: bounds aliases */
};

/*
 * Parses text[0..len) into y->doc.  y->file, line0, err and errlen must be
 * set.  A syntax error is -EINVAL with "FILE:LINE: [PATH: ]problem".
 */
__attribute__((warn_unused_result)) int
gw_ydoc_load(struct gw_ydoc *y, const char *text, size_t len, const char *path);
/* Frees the document; y may be released twice or never loaded. */
void gw_ydoc_release(struct gw_ydoc *y);

/* The document's root node, NULL for an empty document. */
const yaml_node_t *gw_ydoc_root(struct gw_ydoc *y);
/* The node numbered id (from a pair or a sequence item), or NULL. */
const yaml_node_t *gw_ydoc_node(struct gw_ydoc *y, int id);

/*
 * Writes "FILE:LINE: PATH: message" (no LINE without n, no PATH without
 * path) into y->err; returns -EINVAL.
 */
__attribute__((format(printf, 4, 5))) int gw_ydoc_fail(struct gw_ydoc *y,
						       const yaml_node_t *n,
						       const char *path,
						       const char *fmt, ...);
__attribute__((format(printf, 4, 0))) int
gw_ydoc_vfail(struct gw_ydoc *y, const yaml_node_t *n, const char *path,
	      const char *fmt, va_list ap);
/* The line of n in the file, as messages print it. */
size_t gw_ydoc_line(const struct gw_ydoc *y, const yaml_node_t *n);

/* Counts one node; -EINVAL past GW_YDOC_MAX_STEPS. */
__attribute__((warn_unused_result)) int
gw_ydoc_step(struct gw_ydoc *y, const yaml_node_t *n, const char *path);

/* A null value: a key with nothing after it, ~ or null (plain style). */
bool gw_ydoc_is_null(const yaml_node_t *n);

/* A scalar's text (borrowed from the document; NULL on error).  A NUL
 * byte inside it is refused. */
__attribute__((warn_unused_result)) int gw_ydoc_scalar(struct gw_ydoc *y,
						       const yaml_node_t *n,
						       const char *path,
						       const char **out);
/* A scalar copied into *out (freeing what *out held). */
__attribute__((warn_unused_result)) int gw_ydoc_strdup(struct gw_ydoc *y,
						       const yaml_node_t *n,
						       const char *path,
						       char **out);
/* true/True/TRUE or false/False/FALSE, as Go's YAML reads a bool. */
__attribute__((warn_unused_result)) int gw_ydoc_bool(struct gw_ydoc *y,
						     const yaml_node_t *n,
						     const char *path,
						     bool *out);

/*
 * path.key into out (GW_YDOC_PATH_MAX bytes), ended with "..." when it
 * does not fit; returns out.
 */
char *gw_ydoc_subpath(char *out, const char *path, const char *key);

/*
 * Walks the mapping n (anything else is refused, a null too): for each
 * pair, after refusing a key that is not a scalar or is given twice,
 * calls fn(y, key, k, v, path.key, arg); stops at the first error.
 */
typedef int (*gw_ydoc_pair_fn)(struct gw_ydoc *y, const char *key,
			       const yaml_node_t *k, const yaml_node_t *v,
			       const char *path, void *arg);
__attribute__((warn_unused_result)) int
gw_ydoc_mapping(struct gw_ydoc *y, const yaml_node_t *n, const char *path,
		gw_ydoc_pair_fn fn, void *arg);

#endif
