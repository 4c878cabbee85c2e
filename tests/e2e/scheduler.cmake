# End-to-end suites of the scheduler and the claim controllers (tests/e2e/scheduler_*_e2e.sh):
# the real `draplane serve` on a free loopback port driven by the real kubectl. Included from
# tests/e2e/CMakeLists.txt, inside its kubectl-and-curl check.
foreach(suite fallback shared_claim extended_resource mig)
  add_test(NAME e2e.scheduler.${suite}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scheduler_${suite}_e2e.sh $<TARGET_FILE:draplane>
            ${CMAKE_SOURCE_DIR})
  set_tests_properties(e2e.scheduler.${suite} PROPERTIES LABELS e2e TIMEOUT 300)
endforeach()
# Two scheduler replicas without leader election racing for the same Pods and devices, scaled
# down for `make test` (600 Pods, 500 devices; about 30 s under ASan). The full size (5,000 Pods,
# 4,000 devices) runs by hand:
#   tests/e2e/scheduler_replicas_e2e.sh build/release/src/bin/draplane .
add_test(NAME e2e.scheduler.replicas
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scheduler_replicas_e2e.sh $<TARGET_FILE:draplane>
          ${CMAKE_SOURCE_DIR})
set_tests_properties(e2e.scheduler.replicas PROPERTIES LABELS e2e TIMEOUT 300
  ENVIRONMENT "DRAPLANE_E2E_REPLICA_PODS=600;DRAPLANE_E2E_REPLICA_NODES=20;DRAPLANE_E2E_REPLICA_DEVICES=25")
