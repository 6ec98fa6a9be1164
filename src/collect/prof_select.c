/* SPDX-License-Identifier: MIT */
#include "prof_select.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "query/promql.h"
#include "store/labels.h"

/* The labels a selector may name; one table for the check and the read. */
enum lab { L_NAME, L_PID, L_COMM, L_EXE, L_CGROUP, L_CID, L_POD, L_JOB, L_N };
static const char *const lab_names[L_N] = {
	[L_NAME] = "__name__", [L_PID] = "pid",	      [L_COMM] = "comm",
	[L_EXE] = "exe",       [L_CGROUP] = "cgroup", [L_CID] = "container_id",
	[L_POD] = "pod_uid",   [L_JOB] = "job",
};

struct sel {
	struct gw_matcher *m;
	size_t nm;
	enum lab *lab; /* per matcher */
};

struct gw_prof_select {
	struct sel s[GW_PROF_SELECT_MAX];
	unsigned int n;
	bool need_comm, need_exe, need_cgroup;
	char proc_root[GW_ATTRIB_PROC_ROOT_MAX];
};

static void release(struct gw_prof_select *s)
{
	for (unsigned int i = 0; i < s->n; i++) {
		gw_matchers_free(s->s[i].m, s->s[i].nm);
		free(s->s[i].lab);
	}
	s->n = 0;
}

static int compile(struct gw_prof_select *s, const char *text, char *err,
		   size_t errlen)
{
	struct gw_promql_error perr;
	struct sel *e = &s->s[s->n];
	int r;

	memset(&perr, 0, sizeof(perr));
	r = gw_promql_parse_selector(text, &e->m, &e->nm, &perr);
	if (r) {
		perr.msg[sizeof(perr.msg) - 1] = '\0';
		snprintf(err, errlen, "--profile-match %s: %s", text,
			 perr.msg[0] ? perr.msg : strerror(-r));
		return r;
	}
	e->lab = calloc(e->nm ? e->nm : 1, sizeof(*e->lab));
	if (!e->lab) {
		gw_matchers_free(e->m, e->nm);
		return -ENOMEM;
	}
	s->n++;
	for (size_t i = 0; i < e->nm; i++) {
		enum lab l = L_N;

		for (int k = 0; k < L_N; k++)
			if (strcmp(e->m[i].name, lab_names[k]) == 0)
				l = (enum lab)k;
		if (l == L_N) {
			snprintf(err, errlen,
				 "--profile-match %s: no label '%s' on a "
				 "process (pid, comm, exe, cgroup, "
				 "container_id, pod_uid, job)",
				 text, e->m[i].name);
			return -EINVAL;
		}
		e->lab[i] = l;
		s->need_comm |= l == L_COMM;
		s->need_exe |= l == L_EXE;
		s->need_cgroup |= l == L_CGROUP;
	}
	return 0;
}

int gw_prof_select_new(const char *const *sel, unsigned int n,
		       const char *proc_root, struct gw_prof_select **out,
		       char *err, size_t errlen)
{
	struct gw_prof_select *s;
	int r = 0;

	if (n > GW_PROF_SELECT_MAX) {
		snprintf(err, errlen, "--profile-match: at most %u selectors",
			 GW_PROF_SELECT_MAX);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	snprintf(s->proc_root, sizeof(s->proc_root), "%s",
		 proc_root ? proc_root : "/proc");
	for (unsigned int i = 0; i < n && !r; i++)
		r = compile(s, sel[i], err, errlen);
	if (r) {
		gw_prof_select_free(s);
		return r;
	}
	*out = s;
	return 0;
}

void gw_prof_select_free(struct gw_prof_select *s)
{
	if (!s)
		return;
	release(s);
	free(s);
}

unsigned int gw_prof_select_count(const struct gw_prof_select *s)
{
	return s ? s->n : 0;
}

/* The first len - 1 bytes of ROOT/PID/FILE into buf, NUL-terminated; -1
 * when it cannot be read. */
static int read_file(const char *root, uint32_t pid, const char *file,
		     char *buf, size_t len)
{
	char path[GW_ATTRIB_PROC_ROOT_MAX + 32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%u/%s", root, pid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* The cgroup paths of the process (one per hierarchy: the v2 line
 * "0::PATH" and each v1 line "N:controllers:PATH") into paths, pointing
 * into buf; their number, or -1 when the file cannot be read. */
static int read_cgroups(const char *root, uint32_t pid, char *buf, size_t len,
			const char **paths, int max)
{
	int k = 0;

	if (read_file(root, pid, "cgroup", buf, len))
		return -1;
	for (char *p = buf; *p && k < max;) {
		char *nl = p + strcspn(p, "\n"), *c = strchr(p, ':');

		c = c && c < nl ? strchr(c + 1, ':') : NULL;
		if (*nl)
			*nl++ = '\0';
		if (c && c < nl)
			paths[k++] = c + 1;
		p = nl;
	}
	return k;
}

/* A cgroup matcher: = and =~ ask that the process be in such a cgroup in
 * some hierarchy, != and !~ that it be in none. */
static bool cgroup_match(const struct gw_matcher *m, const char **paths, int n)
{
	bool neg = m->op == GW_MATCH_NE || m->op == GW_MATCH_NRE;

	for (int i = 0; i < n; i++)
		if (gw_matcher_match(m, paths[i]) != neg)
			return !neg;
	return n == 0 ? gw_matcher_match(m, "") : neg;
}

/* The command name into out; -1 when it cannot be read. */
static int read_comm(const char *root, uint32_t pid, char *out, size_t len)
{
	if (read_file(root, pid, "comm", out, len))
		return -1;
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

/* The executable's path into out; -1 when the link cannot be read (a
 * kernel thread, or the process is gone). */
static int read_exe(const char *root, uint32_t pid, char *out, size_t len)
{
	char path[GW_ATTRIB_PROC_ROOT_MAX + 32];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%u/exe", root, pid);
	n = readlink(path, out, len - 1);
	if (n <= 0)
		return -1;
	out[n] = '\0';
	return 0;
}

int gw_prof_select_match(const struct gw_prof_select *s, uint32_t pid,
			 const struct gw_attrib *at)
{
	char pidv[16], exe[PATH_MAX] = "", cgbuf[4096], comm[64] = "";
	const char *v[L_N], *cg[32];
	int ncg = 0;

	if (!s || s->n == 0)
		return 1;
	snprintf(pidv, sizeof(pidv), "%u", pid);
	if (s->need_comm && (!at || !at->comm[0]) &&
	    read_comm(s->proc_root, pid, comm, sizeof(comm)))
		return 0;
	if (s->need_exe && read_exe(s->proc_root, pid, exe, sizeof(exe)))
		return 0;
	if (s->need_cgroup && (ncg = read_cgroups(s->proc_root, pid, cgbuf,
						  sizeof(cgbuf), cg, 32)) < 0)
		return 0;
	v[L_NAME] = "process_cpu";
	v[L_PID] = pidv;
	v[L_COMM] = at && at->comm[0] ? at->comm : comm;
	v[L_EXE] = exe;
	v[L_CGROUP] = "";
	v[L_CID] = at ? at->container_id : "";
	v[L_POD] = at ? at->pod_uid : "";
	v[L_JOB] = at ? at->job : "";
	for (unsigned int i = 0; i < s->n; i++) {
		size_t k;

		for (k = 0; k < s->s[i].nm; k++) {
			const struct gw_matcher *m = &s->s[i].m[k];

			if (s->s[i].lab[k] == L_CGROUP
				    ? !cgroup_match(m, cg, ncg)
				    : !gw_matcher_match(m, v[s->s[i].lab[k]]))
				break;
		}
		if (k == s->s[i].nm)
			return 1;
	}
	return 0;
}
