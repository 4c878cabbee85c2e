# End-to-end suites of the scheduler and the claim controllers (tests/e2e/scheduler_*_e2e.sh):
# the real `draplane serve` on a free loopback port driven by the real kubectl. Included from
# tests/e2e/CMakeLists.txt, inside its kubectl-and-curl check.
foreach(suite fallback shared_claim extended_resource mig quota)
  add_test(NAME e2e.scheduler.${suite}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scheduler_${suite}_e2e.sh $<TARGET_FILE:draplane>
            ${CMAKE_SOURCE_DIR})
  set_tests_properties(e2e.scheduler.${suite} PROPERTIES LABELS e2e TIMEOUT 300)
endforeach()
# Two scheduler replicas without leader election racing for the same Pods and devices at issue
# 7's full size: 5,000 Pods on 100 nodes x 40 devices (about 70 s under ASan on 2 cores).
add_test(NAME e2e.scheduler.replicas
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scheduler_replicas_e2e.sh $<TARGET_FILE:draplane>
          ${CMAKE_SOURCE_DIR})
set_tests_properties(e2e.scheduler.replicas PROPERTIES LABELS e2e TIMEOUT 600)
# Allocation-mode quota with two scheduler replicas without leader election: 1,000 Pods, a quota
# of 50 devices, never more than 50 bound (issue 20's acceptance size).
add_test(NAME e2e.scheduler.quota_replicas
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scheduler_quota_replicas_e2e.sh $<TARGET_FILE:draplane>
          ${CMAKE_SOURCE_DIR})
set_tests_properties(e2e.scheduler.quota_replicas PROPERTIES LABELS e2e TIMEOUT 600)

# The replicas race (e2e.scheduler.replicas) under ThreadSanitizer (the tsan preset), at a size
# its slowdown affords: 300 Pods on 10 nodes x 25 devices, 50 of them left Pending.
if(DRAPLANE_TSAN)
  add_test(NAME e2e.scheduler.replicas.tsan
    COMMAND ${CMAKE_COMMAND} -E env DRAPLANE_E2E_REPLICA_PODS=300 DRAPLANE_E2E_REPLICA_NODES=10
            DRAPLANE_E2E_REPLICA_DEVICES=25
            ${CMAKE_CURRENT_SOURCE_DIR}/scheduler_replicas_e2e.sh $<TARGET_FILE:draplane>
            ${CMAKE_SOURCE_DIR})
  set_tests_properties(e2e.scheduler.replicas.tsan PROPERTIES LABELS tsan TIMEOUT 600)
  add_dependencies(draplane_tsan_suites draplane)
endif()
