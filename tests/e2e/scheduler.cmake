# End-to-end suites of the scheduler and the claim controllers (tests/e2e/scheduler_*_e2e.sh):
# the real `draplane serve` on a free loopback port driven by the real kubectl. Included from
# tests/e2e/CMakeLists.txt, inside its kubectl-and-curl check.
foreach(suite fallback shared_claim extended_resource mig quota priority fair_share pod_lifecycle)
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
# PROCESSORS 2 (here and below): the server, two schedulers and the controller manager keep more
# than one core busy (~1.2 measured, docs/design/build.md); ctest then counts two of its slots.
# ctest does not hold one-slot tests back for a two-slot one, so on a clean clone (no timing data
# yet) a COST, about its seconds at four slots, starts it first instead of last.
set_tests_properties(e2e.scheduler.replicas PROPERTIES LABELS e2e TIMEOUT 600 PROCESSORS 2
                     COST 150)
# Allocation-mode quota with two scheduler replicas without leader election: 1,000 Pods, a quota
# of 50 devices, never more than 50 bound (issue 20's acceptance size).
add_test(NAME e2e.scheduler.quota_replicas
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scheduler_quota_replicas_e2e.sh $<TARGET_FILE:draplane>
          ${CMAKE_SOURCE_DIR})
set_tests_properties(e2e.scheduler.quota_replicas PROPERTIES LABELS e2e TIMEOUT 600 PROCESSORS 2
                     COST 50)
