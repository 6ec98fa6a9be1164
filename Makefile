# Thin front door to CMake + Ninja.
#   make            build build/gpuwatch (release with debug info)
#   make test       build with ASan/UBSan into build-asan and run every test
#   make test-tsan  the same tests under ThreadSanitizer (build-tsan)
#   make werror     build everything (tests too) with release flags and
#                   warnings as errors into build-werror: -O2 inlining
#                   finds what the sanitizer builds do not; CC=clang
#                   WERROR_BUILD=build-werror-clang for clang's warnings
#   make run        build and start the agent (ARGS="--simulate 2")
#   make bench      the overhead benchmark (bench/README.md)
#   make fuzz       build the libFuzzer harnesses with clang and run each
#                   for FUZZ_SECONDS (default 60) on a copy of its corpus
#   make format     apply .clang-format to every C file (CI checks it)
#   make install    build, then install into PREFIX (default /usr/local;
#                   DESTDIR honoured): binary, injection library, systemd
#                   unit, config and rules (docs/deploy.md)
#   make deps       install the Debian packages (as root)
#   make clean

BUILD ?= build
ASAN_BUILD ?= build-asan
CMAKE ?= cmake
CTEST_ARGS ?= --output-on-failure -j2

.PHONY: all test test-tsan werror run bench deps clean fuzz format install

all:
	@test -f $(BUILD)/build.ninja || $(CMAKE) -S . -B $(BUILD) -G Ninja \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo
	$(CMAKE) --build $(BUILD)

test:
	@test -f $(ASAN_BUILD)/build.ninja || $(CMAKE) -S . -B $(ASAN_BUILD) -G Ninja \
		-DCMAKE_BUILD_TYPE=Debug -DGW_SANITIZE=ON -DGW_WERROR=$${GW_WERROR:-OFF} \
		-DGW_TESTS=ON
	$(CMAKE) --build $(ASAN_BUILD)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest $(CTEST_ARGS)

test-tsan:
	@test -f build-tsan/build.ninja || $(CMAKE) -S . -B build-tsan -G Ninja \
		-DCMAKE_BUILD_TYPE=Debug -DGW_TSAN=ON -DGW_WERROR=$${GW_WERROR:-OFF} \
		-DGW_TESTS=ON
	$(CMAKE) --build build-tsan
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
		ctest $(CTEST_ARGS)

WERROR_BUILD ?= build-werror
werror:
	@test -f $(WERROR_BUILD)/build.ninja || $(CMAKE) -S . -B $(WERROR_BUILD) \
		-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGW_WERROR=ON \
		-DGW_TESTS=ON
	$(CMAKE) --build $(WERROR_BUILD)

PREFIX ?= /usr/local
install: all
	DESTDIR=$(DESTDIR) $(CMAKE) --install $(BUILD) --prefix $(PREFIX)

run: all
	$(BUILD)/gpuwatch agent $(ARGS)

bench: all
	bench/overhead.sh $(BUILD)

deps:
	scripts/install-deps.sh all

format:
	scripts/check-format.sh --fix

FUZZ_SECONDS ?= 60
# Only the harnesses: the sanitized shared libraries do not link with
# -fsanitize=fuzzer, and the fuzzers need nothing else.
FUZZ_HARNESSES = config parse expo cgroup chunk sketch promql cupti_decode \
	statsd rules ldcache rw_roundtrip rw_decode rw_config salvage tscsv podres profile \
	archive jv webconfig zblock

fuzz:
	@test -f build-fuzz/build.ninja || CC=clang CXX=clang++ $(CMAKE) -S . -B build-fuzz \
		-G Ninja -DGW_FUZZ=ON -DGW_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
	$(CMAKE) --build build-fuzz --target $(addprefix fuzz_,$(FUZZ_HARNESSES))
	@set -e; for h in $(FUZZ_HARNESSES); do \
		work=$$(mktemp -d); cp tests/fuzz/corpus/$$h/* $$work/; \
		echo "fuzzing $$h for $(FUZZ_SECONDS) s"; \
		build-fuzz/tests/fuzz/fuzz_$$h -max_total_time=$(FUZZ_SECONDS) \
			-print_final_stats=1 $$work; rm -rf $$work; done

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-tsan build-fuzz $(WERROR_BUILD)
