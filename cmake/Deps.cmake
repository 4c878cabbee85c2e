# Every external dependency, found once (STYLE.md: Debian packages only).
find_package(Threads REQUIRED)
find_package(Boost 1.81 REQUIRED COMPONENTS json)
find_package(yaml-cpp REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
find_package(SQLite3 REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(prometheus-cpp CONFIG REQUIRED COMPONENTS core)
# gRPC for the kubelet's plugin APIs (agent/kubelet_plugin.h, fakekubelet/): protoc and the gRPC
# C++ plugin generate code from the vendored kubelet protos at build time (src/agent/CMakeLists.txt).
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_program(DRAPLANE_PROTOC protoc REQUIRED)
find_program(DRAPLANE_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
# jemalloc replaces glibc malloc in the draplane binary of unsanitized builds: the server's
# request path allocates from many threads, where glibc's arenas and consolidation cost ~12 % of
# serve CPU under scheduler_perf (docs/design/server.md). Sanitizer builds (ASan, TSan) keep
# their own malloc.
if(NOT DRAPLANE_SANITIZE AND NOT DRAPLANE_TSAN)
  pkg_check_modules(JEMALLOC REQUIRED IMPORTED_TARGET jemalloc)
endif()
if(DRAPLANE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(DRAPLANE_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
