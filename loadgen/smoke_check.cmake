# Runs `uaserver --self-load ARGS` and fails unless it exits 0 (the
# scenario's verdict is PASS) and prints the complete result block of its
# scenario, plus any EXPECT needles.
# Usage: cmake -DEXE=uaserver -DARGS="sub --sessions 2 ..." -P smoke_check.cmake
# -DEXPECT_RC=1: the run must exit 1 (a verdict that must fail, e.g. a
# --rate the run cannot keep).
separate_arguments(args UNIX_COMMAND "${ARGS}")
list(GET args 0 scenario)
if(NOT DEFINED EXPECT_RC OR EXPECT_RC STREQUAL "")
  set(EXPECT_RC 0)
endif()
execute_process(COMMAND ${EXE} --self-load ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL EXPECT_RC)
  message(FATAL_ERROR "uaserver --self-load ${ARGS} exited ${rc}\n${out}\n${err}")
endif()
set(needles "| run record |" "### Summary: ${scenario}")
if(scenario STREQUAL "capacity")
  set(needles "| run record |" "## Request throughput" "| read | SignAndEncrypt |"
              "## Fixed-rate Reads" "| uaserver | 10 | 100 |"
              "## Publish and event delivery" "| events |" "| counters |"
              "## Session scalability" "| 20 | SignAndEncrypt | 20 |" "## Capability matrix")
  string(FIND "${out}" "**no**" pos)
  if(NOT pos EQUAL -1)
    message(FATAL_ERROR "a capacity row failed its verdict:\n${out}\n${err}")
  endif()
elseif(scenario MATCHES "^(read|write|browse)$")
  list(APPEND needles "| operations |" "(errors 0)" "| throughput |" "| latency p50 / p99 / max |"
                      "| server CPU per op |" "| server heap per op |" "| server RSS |"
                      "| lock waits (contended acquisitions) |" "| server busy cores |")
else()
  list(APPEND needles "| verdict | PASS" "| notifications |" "| Publish errors, sequence gaps | 0, 0"
                      "| sessions |" "| server CPU per notification |"
                      "| server heap per notification |" "| server RSS |" "| server busy cores |"
                      "| lock waits (contended acquisitions) |")
endif()
if(scenario STREQUAL "counters")
  list(APPEND needles "| samples |" "| worst item |" "| items below 99 % | 0 of"
                      "| server CPU per sample |")
elseif(scenario STREQUAL "events")
  list(APPEND needles "| events |" "0 other events received" "| delivery | 100.00 %"
                      "| items with misses | 0 of" "| report→notify latency p50 / p99 / max |")
elseif(scenario MATCHES "^(sub|sessions)$")
  list(APPEND needles "| delivery | 100.00 %" "| items with misses | 0 of"
                      "| write→notify latency p50 / p99 / max |" "| writes judged |")
endif()
if(scenario STREQUAL "sessions")
  list(APPEND needles "sessions/s" "KiB per session" "| descriptors, sources |"
                      "| server CPU per session set-up |")
endif()
# Extra needles from the caller, ';'-separated (e.g. the variant headings).
foreach(needle IN LISTS EXPECT)
  list(APPEND needles "${needle}")
endforeach()
foreach(needle IN LISTS needles)
  string(FIND "${out}" "${needle}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "missing '${needle}' in the output of --self-load ${ARGS}:\n${out}\n${err}")
  endif()
endforeach()
