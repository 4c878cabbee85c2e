# End-to-end suites of the scheduler and the claim controllers (tests/e2e/scheduler_*_e2e.sh):
# the real `draplane serve` on a free loopback port driven by the real kubectl. Included from
# tests/e2e/CMakeLists.txt, inside its kubectl-and-curl check.
foreach(suite fallback shared_claim extended_resource mig)
  add_test(NAME e2e.scheduler.${suite}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scheduler_${suite}_e2e.sh $<TARGET_FILE:draplane>
            ${CMAKE_SOURCE_DIR})
  set_tests_properties(e2e.scheduler.${suite} PROPERTIES LABELS e2e TIMEOUT 300)
endforeach()
# TODO(#7): register scheduler_replicas_e2e.sh (two schedulers without leader election), scaled
# down with DRAPLANE_E2E_REPLICA_PODS=600 NODES=20 DEVICES=25, once it cannot flake: that size
# passes, but the full run (tests/e2e/scheduler_replicas_e2e.sh build/<dir>/src/bin/draplane .)
# still ends with 4,008 Pods bound for 4,000 devices (docs/design/scheduler.md, "Replicas").
