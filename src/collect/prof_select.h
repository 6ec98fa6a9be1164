/* SPDX-License-Identifier: MIT */
/*
 * prof_select.h - which processes the CPU profiler samples, beyond its
 * mode (--profile gpu|all): PromQL series selectors over a process's
 * labels (--profile-match, repeatable; a list in the config file).
 *
 * A process is selected when any selector matches it.  The labels a
 * selector may name:
 *   __name__      always "process_cpu" (the profiles' name in the API)
 *   pid           the process id
 *   comm          the command name (/proc/PID/comm)
 *   exe           the executable's path as the process sees it
 *   cgroup        the cgroup paths, one per hierarchy (the v2 "0::" line,
 *                 each v1 line): = and =~ select a process that is in a
 *                 matching cgroup in any hierarchy, != and !~ one that is
 *                 in none
 *   container_id, pod_uid, job   the attribution labels (collect/attrib.h)
 * Any other name is refused when the selectors are compiled, so a typo is
 * an error at start and never a selection that silently matches nothing
 * (or, with !=, everything).  A selector needs one matcher that does not
 * match the empty value, as Prometheus asks of every selector.
 *
 * Reading: exe and cgroup are read from PROC/PID only when a selector
 * names them, comm when the caller's attribution has none; the other
 * labels come from the caller.
 *
 * Thread safety: a compiled selection is read-only; gw_prof_select_match()
 * may run on several threads at once.  Ownership: the texts are compiled
 * at creation and not kept.
 */
#ifndef GW_PROF_SELECT_H
#define GW_PROF_SELECT_H

#include <stddef.h>
#include <stdint.h>

#include "collect/attrib.h"

#define GW_PROF_SELECT_MAX 16u /* selectors */

struct gw_prof_select;

/*
 * Compiles n selectors.  n 0 gives a selection that matches every process.
 * -EINVAL with the reason in err ("--profile-match SEL: ..."): a selector
 * that does not parse, an unknown label, a bad regular expression, more
 * than GW_PROF_SELECT_MAX; -ENOMEM.  *out is set only on success.
 * proc_root NULL means "/proc".
 */
__attribute__((warn_unused_result)) int
gw_prof_select_new(const char *const *sel, unsigned int n,
		   const char *proc_root, struct gw_prof_select **out,
		   char *err, size_t errlen);
void gw_prof_select_free(struct gw_prof_select *s);

/* The number of selectors (0: every process is selected). */
unsigned int gw_prof_select_count(const struct gw_prof_select *s);

/*
 * 1 when a selector matches process pid, whose command name and
 * attribution are *at (NULL or comm "": unknown), 0 when none does, or
 * when a label a selector names cannot be read (the process is gone; a
 * kernel thread has no exe).
 */
int gw_prof_select_match(const struct gw_prof_select *s, uint32_t pid,
			 const struct gw_attrib *at);

#endif
