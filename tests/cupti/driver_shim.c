/* SPDX-License-Identifier: MIT */
/*
 * driver_shim.c - does, for a machine without a CUDA driver, what the
 * driver does with CUDA_INJECTION64_PATH: load that library and call its
 * InitializeInjection.  Preloaded (LD_PRELOAD) into an unmodified CUDA
 * program, so the injection library runs inside it against the real
 * libcupti although no driver will ever load it.  Silent unless loading
 * fails, which the tests then see on stderr.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void load_injection(void)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	int (*init)(void);
	void *h;

	if (!path || !*path)
		return;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "driver_shim: %s\n", dlerror());
		return;
	}
	*(void **)&init = dlsym(h, "InitializeInjection");
	if (!init) {
		fprintf(stderr, "driver_shim: no InitializeInjection in %s\n",
			path);
		return;
	}
	init();
}
