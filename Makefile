# Entry points a newcomer and CI use. Each target installs what is missing, configures with a
# CMake preset and builds; see README.md and docs/architecture.md.
SHELL := /bin/bash
JOBS ?= $(shell nproc)
ARGS ?=

# Prefix of a recipe line: bash's `time` prints the step's wall and CPU seconds (children
# included), so CI's log shows where make test's time goes (docs/design/build.md).
timed = TIMEFORMAT='make $@: $(1): %R s wall, %U s user, %S s sys'; time

.PHONY: deps deps-unsanitized run test unit tsan fuzz bench build release format generate clean

deps:
	@tools/install_deps.sh

# Unsanitized builds (dev, release) also link jemalloc.
deps-unsanitized:
	@tools/install_deps.sh unsanitized

build: deps-unsanitized
	cmake --preset dev >/dev/null
	cmake --build --preset dev -j $(JOBS)

release: deps-unsanitized
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS) --target draplane

# The main job on its embedded defaults.
run: release
	tools/run_demo.sh build/release/src/bin/draplane $(ARGS)

# Every test: the sanitizer build with all unit, conformance and end-to-end suites (the fuzz
# corpora replayed among them), then the clang ThreadSanitizer build (thread-safety analysis as
# errors) with the concurrency-heavy suites. Fuzzing itself, which finds new inputs and so is not
# deterministic, is `make fuzz` (docs/design/build.md).
test: unit tsan

unit: deps
	cmake --preset asan >/dev/null
	$(call timed,asan build) cmake --build --preset asan -j $(JOBS)
	$(call timed,asan ctest) ctest --preset asan

tsan: deps
	cmake --preset tsan >/dev/null
	$(call timed,tsan build) cmake --build --preset tsan -j $(JOBS)
	$(call timed,tsan ctest) ctest --preset tsan

fuzz: deps
	cmake --preset fuzz >/dev/null
	$(call timed,fuzz build) cmake --build --preset fuzz -j $(JOBS)
	$(call timed,fuzz ctest) ctest --preset fuzz

bench: deps-unsanitized
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)
	bench/run_all.sh build/release

generate: deps
	tools/generate_api.sh

format:
	clang-format -i $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf build
