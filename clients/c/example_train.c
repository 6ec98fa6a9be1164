/* SPDX-License-Identifier: MIT */
/*
 * example_train.c - a simulated training loop that reports the
 * conventional training metrics through gpuwatch_metrics.h.  No GPU and
 * no ML framework: the loss follows a fixed curve, so runs are repeatable.
 *
 *   cc -std=c17 -O2 -o example_train clients/c/example_train.c -lm
 *   ./example_train --steps 500 --step-ms 50 --tags job:demo,rank:0
 *
 * Options:
 *   --host H --port P      agent's UDP address (127.0.0.1:8125)
 *   --socket PATH          a Unix datagram socket instead
 *   --steps N              steps to run (100)
 *   --step-ms MS           simulated work per step (10)
 *   --batch N              samples per step (32)
 *   --steps-per-epoch N    for the fractional epoch gauge (100)
 *   --checkpoint-every N   steps between checkpoints (50; 0: never)
 *   --tags K:V,...         tags on every metric
 *   --nan-at STEP          the loss of that step is NaN (a divergence demo)
 *   --stall-at STEP --stall-s S   sleep S seconds before that step
 *
 * At the end it prints one line: the last step, loss and counts.
 */
#include "gpuwatch_metrics.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct opts {
	const char *host, *socket_path, *tags;
	long port, steps, batch, per_epoch, ckpt_every, nan_at, stall_at;
	double step_ms, stall_s;
};

static int num(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		return -1;
	*out = v;
	return 0;
}

static int inum(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static void pause_ms(double ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000) * 1e6);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int parse(int argc, char **argv, struct opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int bad = 0;

		if (!v || strncmp(a, "--", 2) != 0) {
			fprintf(stderr,
				"usage: see the comment in example_train.c\n");
			return -1;
		}
		i++;
		if (!strcmp(a, "--host"))
			o->host = v;
		else if (!strcmp(a, "--socket"))
			o->socket_path = v;
		else if (!strcmp(a, "--tags"))
			o->tags = v;
		else if (!strcmp(a, "--port"))
			bad = inum(v, 1, 65535, &o->port);
		else if (!strcmp(a, "--steps"))
			bad = inum(v, 0, 1000000000, &o->steps);
		else if (!strcmp(a, "--batch"))
			bad = inum(v, 0, 1000000000, &o->batch);
		else if (!strcmp(a, "--steps-per-epoch"))
			bad = inum(v, 1, 1000000000, &o->per_epoch);
		else if (!strcmp(a, "--checkpoint-every"))
			bad = inum(v, 0, 1000000000, &o->ckpt_every);
		else if (!strcmp(a, "--nan-at"))
			bad = inum(v, 1, 1000000000, &o->nan_at);
		else if (!strcmp(a, "--stall-at"))
			bad = inum(v, 1, 1000000000, &o->stall_at);
		else if (!strcmp(a, "--step-ms"))
			bad = num(v, 0, 3600e3, &o->step_ms);
		else if (!strcmp(a, "--stall-s"))
			bad = num(v, 0, 86400, &o->stall_s);
		else
			bad = -1;
		if (bad) {
			fprintf(stderr, "example_train: bad option %s %s\n", a,
				v);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .port = 8125,
			  .steps = 100,
			  .batch = 32,
			  .per_epoch = 100,
			  .ckpt_every = 50,
			  .step_ms = 10 };
	struct gwm_client m;
	struct gwm_training tr;
	double loss = 0;
	long ckpts = 0, step;

	if (parse(argc, argv, &o))
		return 2;
	if (gwm_init(&m, &(struct gwm_options){ .host = o.host,
						.port = (unsigned)o.port,
						.socket_path = o.socket_path,
						.tags = o.tags }))
		fprintf(stderr, "example_train: metrics off: %s\n",
			strerror(m.last_errno));
	gwm_training_init(&tr, &m, (double)o.batch, NULL);
	for (step = 1; step <= o.steps; step++) {
		if (step == o.stall_at) {
			fprintf(stderr, "example_train: stalling %.1f s\n",
				o.stall_s);
			pause_ms(o.stall_s * 1000);
		}
		pause_ms(o.step_ms); /* the forward and backward pass */
		loss = 0.1 + 2.4 * exp(-(double)step / 100.0);
		if (step == o.nan_at)
			loss = (double)NAN;
		gwm_training_step(
			&tr,
			&(struct gwm_step){
				.has = GWM_LOSS | GWM_GRAD_NORM | GWM_EPOCH,
				.loss = loss,
				.grad_norm = 1.0 + 0.5 * sin((double)step),
				.epoch = (double)step / (double)o.per_epoch });
		if (o.ckpt_every && step % o.ckpt_every == 0) {
			gwm_training_checkpoint(&tr);
			ckpts++;
		}
	}
	gwm_training_finish(&tr);
	gwm_close(&m);
	printf("example_train: steps=%ld loss=%.17g checkpoints=%ld "
	       "nonfinite=%llu datagrams=%llu dropped=%llu\n",
	       o.steps, loss, ckpts, tr.nonfinite, m.sent, m.dropped);
	return 0;
}
