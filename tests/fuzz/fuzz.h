/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h - the libFuzzer entry point every harness defines.  The same
 * harness links either with libFuzzer (-fsanitize=fuzzer) or with
 * replay_main.c, which feeds it the files of a seed corpus.
 *
 * A harness returns 0 and calls abort() when an invariant does not hold,
 * so a violation is a crash in both settings.
 */
#ifndef GW_FUZZ_H
#define GW_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
