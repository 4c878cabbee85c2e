# Helpers that give every library, test, benchmark and fuzz target the same flags.

set(DRAPLANE_WARNINGS -Wall -Wextra -Wpedantic)
if(DRAPLANE_WERROR)
  list(APPEND DRAPLANE_WARNINGS -Werror)
endif()

# lld (installed with the clang toolchain, tools/install_deps.sh) links a sanitizer test binary
# with half the CPU of GNU ld (draplane: 5.6 s against 10.6 s); make test links ~55 of them
# (docs/design/build.md).
include(CheckLinkerFlag)
check_linker_flag(CXX -fuse-ld=lld DRAPLANE_HAVE_LLD)
if(DRAPLANE_HAVE_LLD)
  add_link_options(-fuse-ld=lld)
endif()

if(DRAPLANE_SANITIZE)
  # GCC 12's -Wmaybe-uninitialized reports false positives inside libstdc++ (std::regex,
  # std::function) once sanitizer instrumentation changes inlining; GCC documents that
  # sanitizers make this warning unreliable, so it is not an error in sanitizer builds.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    list(APPEND DRAPLANE_WARNINGS -Wno-maybe-uninitialized)
    # GCC collects its own garbage once its heap passes ggc-min-heapsize (128 MB on any machine
    # with 1 GB or more); a sanitizer compile allocates ~1 GB, so it collects many times, ~10 %
    # of its CPU. At 1 GB a compile collects once or never, for ~150 MB more peak memory per
    # compile (docs/design/build.md); the code it emits is the same.
    add_compile_options(--param=ggc-min-heapsize=1048576)
    # No redzones around globals in the GCC (asan) build: their descriptors and padding are ~85 %
    # of an object's data, which every sanitized process registers at start and LeakSanitizer
    # scans at exit, and make test starts thousands of them. The clang fuzz build keeps them,
    # where the parsers meet hostile input (docs/design/build.md, "ASan's globals").
    add_compile_options(--param=asan-globals=0)
  endif()
  # Without UBSan's alignment and null checks: on x86 a misaligned load is well defined and ASan
  # already reports a dereference of null (a SEGV with its stack); the two are half of UBSan's
  # compile cost and nearly all of a sanitized binary's data (draplane 107 -> 37 MB), which
  # LeakSanitizer scans at every exit (docs/design/build.md, "UBSan without its alignment and null
  # checks").
  add_compile_options(-fsanitize=address,undefined -fno-sanitize=alignment,null
                      -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

if(DRAPLANE_TSAN)
  # ThreadSanitizer (the tsan preset): the concurrency-heavy suites run under it in make test.
  add_compile_options(-fsanitize=thread)
  add_link_options(-fsanitize=thread)
endif()

if(DRAPLANE_SANITIZE OR DRAPLANE_TSAN)
  # Position-dependent executables: a sanitized test binary carries millions of relative
  # relocations (scheduler_test 3.3 M, draplane 5.3 M: the sanitizers' per-check data), which a
  # PIE applies at every start, writing ~100 MB of pages. make test starts ~2,000 test processes
  # and many draplane commands; linked -no-pie the linker resolves them once (docs/design/build.md).
  add_link_options(-no-pie)
endif()

if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  # Checkable locking (common/thread_annotations.h): every clang build (the tsan and fuzz presets)
  # runs the thread-safety analysis, and a violation fails the build. Between them they compile
  # every annotated source (the tsan preset's suites and draplane_locking_check, src/), so the
  # check costs no build of its own.
  list(APPEND DRAPLANE_WARNINGS -Wthread-safety -Werror=thread-safety)
endif()

if(DRAPLANE_FUZZ)
  # Coverage instrumentation in every library, so libFuzzer's feedback reaches into them.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

function(draplane_apply_flags target)
  target_compile_options(${target} PRIVATE ${DRAPLANE_WARNINGS})
  target_include_directories(${target} PUBLIC ${CMAKE_SOURCE_DIR}/src)
endfunction()

# Every source parses the standard containers and Boost.JSON (a third of the library sources
# include it) before its own code: each library of three or more sources (and the test header,
# which every test binary reuses) parses them once, as a precompiled header. In every preset, so
# that a source that compiles only because the header is there (a missing #include) compiles the
# same way in the release build `make run` uses: the header is never a difference between builds.
# GCC refuses a header built with other macros (CMake passes -Winvalid-pch), hence one per target,
# and every user of one takes Boost.JSON's usage requirements (its BOOST_JSON_DYN_LINK macros).
# Measured in docs/design/build.md.
function(draplane_precompile_headers target)
  target_precompile_headers(${target} PRIVATE
    <boost/json.hpp> <functional> <map> <memory> <optional> <string> <variant> <vector>
    "${CMAKE_SOURCE_DIR}/src/common/status.h")
  target_link_libraries(${target} PRIVATE Boost::json)
endfunction()

# ccache caches a compile that uses a precompiled header only with this sloppiness (its manual,
# "Precompiled headers"); every target gets the launcher.
if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache$")
  set(CMAKE_CXX_COMPILER_LAUNCHER env CCACHE_SLOPPINESS=pch_defines,time_macros
      ${CMAKE_CXX_COMPILER_LAUNCHER})
endif()

function(draplane_library_precompile_headers target)
  get_target_property(sources ${target} SOURCES)
  list(LENGTH sources source_count)
  if(source_count GREATER 2)
    draplane_precompile_headers(${target})
  endif()
endfunction()

# draplane_library(NAME <target> SRCS ... [DEPS ...])
# One static library per module (or per internal sub-library of a module).
function(draplane_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_library(${ARG_NAME} STATIC ${ARG_SRCS})
  draplane_apply_flags(${ARG_NAME})
  # Unity build: up to 16 of the library's sources compile as one translation unit, so the
  # templates and inline functions they share (the standard library's, Boost.JSON's, the object
  # model's) are generated once per batch instead of once per source: the scheduler library's 17
  # sources took 131 CPU-s one by one and 59 as one unit under the asan flags
  # (docs/design/build.md). In every preset, so that what compiles in one compiles in all.
  set_target_properties(${ARG_NAME} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC warns when a class of a source has a member whose type is in that source's anonymous
    # namespace only if the class is not in the main file; in a unity batch no source is.
    target_compile_options(${ARG_NAME} PRIVATE -Wno-subobject-linkage)
  endif()
  # Decided once the directory has added all its sources (target_sources after this call).
  cmake_language(EVAL CODE
    "cmake_language(DEFER CALL draplane_library_precompile_headers ${ARG_NAME})")
  target_link_libraries(${ARG_NAME} PUBLIC ${ARG_DEPS})
endfunction()

# DRAPLANE_TEST_OPTIONS: the compile options of every test source and of the test header.
# -pthread defines _REENTRANT, and GCC refuses a precompiled header built without a macro the
# using source has: every test gets it (most already do through their dependencies). Under ASan,
# GCC checks the test sources' own loads and stores through calls into the runtime instead of
# inline code: the same checks and the same reports, for ~10 % less compile CPU per test source
# (docs/design/build.md); the libraries, where the tests and servers spend their time, keep the
# inline checks.
#
# UBSan checks the libraries and draplane, not the test sources' own code: a fifth of a test
# source's compile CPU (docs/design/build.md, "UBSan in the libraries and draplane, not in the
# test sources' own code").
# What that gives up: a header's inline function instantiated in a test source as well as in a
# library may be linked from the test source's unchecked copy into that test binary; draplane
# itself, which the end-to-end, CLI and lint suites run, links no test source.
set(DRAPLANE_TEST_OPTIONS -pthread)
if(DRAPLANE_SANITIZE)
  list(APPEND DRAPLANE_TEST_OPTIONS -fno-sanitize=undefined)
endif()
if(DRAPLANE_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND DRAPLANE_TEST_OPTIONS --param=asan-instrumentation-with-call-threshold=0)
endif()

# The compile setup of every test source (the precompiled header below, test binaries, shared
# test sources, fuzz corpus replays): one place, since a source compiled with other flags or
# macros cannot reuse the header.
function(draplane_test_compile_setup target)
  draplane_apply_flags(${target})
  target_compile_definitions(${target} PRIVATE
    DRAPLANE_SHARED_DIR="${DRAPLANE_SHARED_DIR}"
    DRAPLANE_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  target_compile_options(${target} PRIVATE ${DRAPLANE_TEST_OPTIONS})
endfunction()

# Every test binary includes GoogleTest and GoogleMock, whose headers alone take ~2.5 CPU-s to parse
# in each test source under -Og and the sanitizers; one precompiled header of them, built once here
# and reused by every draplane_test target (same flags), saves ~2.9 CPU-s per test source
# (docs/design/build.md). ccache caches such compiles only with the PCH sloppiness, which the
# launcher passes to it.
if(DRAPLANE_BUILD_TESTS)
  add_library(draplane_test_pch OBJECT ${CMAKE_SOURCE_DIR}/cmake/test_pch.cc)
  draplane_test_compile_setup(draplane_test_pch)
  target_link_libraries(draplane_test_pch PRIVATE GTest::gtest GTest::gmock)
  target_precompile_headers(draplane_test_pch PRIVATE <gtest/gtest.h> <gmock/gmock.h>)
  draplane_precompile_headers(draplane_test_pch)
endif()

# draplane_test(NAME <target> SRCS ... [DEPS ...] [LABELS ...] [ONE_PROCESS])
# A GoogleTest binary registered with ctest; each test suite (fixture) becomes a ctest case. The label
# `tsan` marks the concurrency-heavy suites the tsan preset builds and runs (only those).
# ONE_PROCESS: the binary is one ctest case of the same name, running all its tests in one
# process; for a data-driven suite of many small cases whose process start (loading every case
# to register them) costs more than the cases themselves (docs/design/build.md).
function(draplane_test)
  if(NOT DRAPLANE_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "ONE_PROCESS" "NAME" "SRCS;DEPS;LABELS" ${ARGN})
  if(DRAPLANE_TSAN AND NOT "tsan" IN_LIST ARG_LABELS)
    return()
  endif()
  add_executable(${ARG_NAME} ${ARG_SRCS})
  draplane_test_compile_setup(${ARG_NAME})
  # Boost::json: the test header includes it (draplane_precompile_headers).
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main
                        Boost::json)
  target_precompile_headers(${ARG_NAME} REUSE_FROM draplane_test_pch)
  set(labels unit)
  if(ARG_LABELS)
    set(labels ${ARG_LABELS})
  endif()
  if(DRAPLANE_TSAN)
    add_dependencies(draplane_tsan_suites ${ARG_NAME})
  endif()
  if(ARG_ONE_PROCESS)
    add_test(NAME ${ARG_NAME} COMMAND ${ARG_NAME} --gtest_brief=1
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    set_tests_properties(${ARG_NAME} PROPERTIES LABELS "${labels}")
    return()
  endif()
  # One ctest case per test suite, listed after each link (cmake/gtest_suites.cmake); ctest
  # includes the list when the binary has been built (the tsan preset builds only its suites).
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${ARG_NAME}_suites.cmake")
  add_custom_command(TARGET ${ARG_NAME} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -D "TEST_EXECUTABLE=$<TARGET_FILE:${ARG_NAME}>"
            -D "CTEST_FILE=${ctest_file}" -D "WORKING_DIR=${CMAKE_SOURCE_DIR}"
            -D "LABELS=${labels}" -P ${CMAKE_SOURCE_DIR}/cmake/gtest_suites.cmake
    BYPRODUCTS "${ctest_file}"
    VERBATIM)
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${ARG_NAME}_include.cmake")
  file(WRITE "${include_file}"
    "if(EXISTS \"${ctest_file}\")\n  include(\"${ctest_file}\")\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()

# draplane_test_sources(NAME <target> SRCS ... [DEPS ...])
# Test sources that several test binaries share (a launcher, a suite run against several
# backends), compiled once with the test flags as an object library; a test lists NAME in its DEPS
# and links the objects.
function(draplane_test_sources)
  if(NOT DRAPLANE_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_library(${ARG_NAME} OBJECT ${ARG_SRCS})
  draplane_test_compile_setup(${ARG_NAME})
  target_link_libraries(${ARG_NAME} PUBLIC ${ARG_DEPS} GTest::gtest GTest::gmock Boost::json)
  target_precompile_headers(${ARG_NAME} REUSE_FROM draplane_test_pch)
endfunction()

# draplane_bench(NAME <target> SRCS ... [DEPS ...])
function(draplane_bench)
  if(NOT DRAPLANE_BUILD_BENCH)
    return()
  endif()
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  draplane_apply_flags(${ARG_NAME})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} benchmark::benchmark)
  target_compile_definitions(${ARG_NAME} PRIVATE
    DRAPLANE_SHARED_DIR="${DRAPLANE_SHARED_DIR}"
    DRAPLANE_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
endfunction()

# draplane_fuzz(NAME <target> SRCS ... [DEPS ...])
# A fuzz target (its LLVMFuzzerTestOneInput); `fuzz/corpus/<NAME>/` holds its seeds and every
# crash ever found. In the fuzz preset it is a libFuzzer binary, and ctest (`make fuzz`) runs it
# over its corpus and then fuzzes for DRAPLANE_FUZZ_SECONDS. In a build with tests (the asan
# preset of make test, dev) it is <NAME>_corpus, the target linked with
# fuzz/corpus_replay_main.cc, and the ctest case corpus.<NAME> replays the corpus: every seed and
# past crash is a regression test of every change, and make test stays deterministic
# (docs/design/build.md, "Fuzzing in make fuzz, corpora in make test").
set(DRAPLANE_FUZZ_SECONDS 7 CACHE STRING "Seconds each fuzz target fuzzes under make fuzz")
if(DRAPLANE_BUILD_TESTS AND NOT DRAPLANE_FUZZ AND NOT DRAPLANE_TSAN AND
   NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  # libFuzzer's FuzzedDataProvider.h (header only) is on clang's include path, not GCC's, and
  # that folder's other headers (stddef.h) are clang's own: the one header is copied aside.
  file(GLOB fuzzer_header_candidates LIST_DIRECTORIES true /usr/lib/llvm-*/lib/clang/*/include)
  find_path(DRAPLANE_CLANG_INCLUDE fuzzer/FuzzedDataProvider.h
            PATHS ${fuzzer_header_candidates} NO_DEFAULT_PATH)
  if(NOT DRAPLANE_CLANG_INCLUDE)
    message(FATAL_ERROR "fuzzer/FuzzedDataProvider.h not found: install libclang-rt-14-dev "
                        "(tools/install_deps.sh)")
  endif()
  set(DRAPLANE_FUZZER_HEADERS ${CMAKE_BINARY_DIR}/fuzzer-headers)
  file(COPY ${DRAPLANE_CLANG_INCLUDE}/fuzzer/FuzzedDataProvider.h
       DESTINATION ${DRAPLANE_FUZZER_HEADERS}/fuzzer)
endif()
function(draplane_fuzz)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  set(corpus ${CMAKE_SOURCE_DIR}/fuzz/corpus/${ARG_NAME})
  if(DRAPLANE_FUZZ)
    add_executable(${ARG_NAME} ${ARG_SRCS})
    draplane_apply_flags(${ARG_NAME})
    target_compile_options(${ARG_NAME} PRIVATE -fsanitize=fuzzer)
    target_link_options(${ARG_NAME} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS})
    add_dependencies(draplane_fuzz_targets ${ARG_NAME})
    set(work ${CMAKE_BINARY_DIR}/fuzz-work/${ARG_NAME})
    add_test(NAME fuzz.${ARG_NAME}
      COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
              ${CMAKE_SOURCE_DIR}/fuzz/run_fuzzer.sh $<TARGET_FILE:${ARG_NAME}> ${corpus} ${work}
              ${DRAPLANE_FUZZ_SECONDS})
    set_tests_properties(fuzz.${ARG_NAME} PROPERTIES LABELS fuzz TIMEOUT 300)
  elseif(DRAPLANE_BUILD_TESTS AND NOT DRAPLANE_TSAN)
    if(NOT TARGET draplane_corpus_replay_main)
      add_library(draplane_corpus_replay_main OBJECT ${CMAKE_SOURCE_DIR}/fuzz/corpus_replay_main.cc)
      draplane_test_compile_setup(draplane_corpus_replay_main)
    endif()
    set(replay ${ARG_NAME}_corpus)
    add_executable(${replay} ${ARG_SRCS})
    target_link_libraries(${replay} PRIVATE draplane_corpus_replay_main)
    draplane_test_compile_setup(${replay})
    if(DRAPLANE_FUZZER_HEADERS)
      target_include_directories(${replay} SYSTEM PRIVATE ${DRAPLANE_FUZZER_HEADERS})
    endif()
    target_link_libraries(${replay} PRIVATE ${ARG_DEPS})
    add_test(NAME corpus.${ARG_NAME} COMMAND ${replay} ${corpus})
    set_tests_properties(corpus.${ARG_NAME} PROPERTIES LABELS corpus)
  endif()
endfunction()
