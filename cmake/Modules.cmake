# The allowed dependency edges between modules under src/ (STYLE.md, docs/architecture.md).
# tools/check_layering.sh reads the DRAPLANE_EDGES_<module> lists below and fails CI when an
# `#include "<module>/..."` in src/<from>/ names a module that is not listed for <from>.
# A module may always include its own headers. `bin` may include anything.
set(DRAPLANE_EDGES_common      "")
set(DRAPLANE_EDGES_api         "common")
set(DRAPLANE_EDGES_cel         "common;api")
set(DRAPLANE_EDGES_allocator   "common;api;cel")
set(DRAPLANE_EDGES_store       "common;api")
set(DRAPLANE_EDGES_client      "common;api")
set(DRAPLANE_EDGES_scheduler   "common;api;cel;allocator;client")
set(DRAPLANE_EDGES_controllers "common;api;cel;allocator;client")
set(DRAPLANE_EDGES_server      "common;api;cel;store")
set(DRAPLANE_EDGES_agent       "common;api;client")
set(DRAPLANE_EDGES_fakekubelet "common;api;client;agent")
set(DRAPLANE_EDGES_sim         "common;api;cel;allocator;scheduler;controllers;store;client;agent")
set(DRAPLANE_EDGES_cli         "common;api;cel;allocator;scheduler;controllers;store;server;client;agent;fakekubelet;sim")
# Test support (src/testing/): the real API server in-process for unit tests. Linked into test
# binaries only, never into draplane. Every module's tests (`*_test.cc`) may include it, and no
# other file may: DRAPLANE_TEST_ONLY_MODULES lists such modules.
set(DRAPLANE_EDGES_testing     "common;api;store;server;client;cli")
set(DRAPLANE_TEST_ONLY_MODULES "testing")
