# Runs `uaserver --self-load ARGS` and fails unless it exits 0 (the
# scenario's verdict is PASS) and prints the complete result block.
# Usage: cmake -DEXE=uaserver -DARGS="sub --sessions 2 ..." -P smoke_check.cmake
separate_arguments(args UNIX_COMMAND "${ARGS}")
list(GET args 0 scenario)
execute_process(COMMAND ${EXE} --self-load ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "uaserver --self-load ${ARGS} exited ${rc}\n${out}\n${err}")
endif()
set(needles "| verdict | PASS" "| notifications |" "| Publish errors, sequence gaps | 0, 0"
            "| sessions |" "| server CPU per notification |" "| server heap per notification |"
            "| server RSS |" "| server busy cores |" "| run record |" "### Summary: ${scenario}")
if(scenario STREQUAL "counters")
  list(APPEND needles "| samples |" "| worst item |" "| items below 99 % | 0 of"
                      "| server CPU per sample |")
else()
  list(APPEND needles "| delivery | 100.00 %" "| items with misses | 0 of"
                      "| write→notify latency p50 / p99 / max |" "| writes judged |")
endif()
if(scenario STREQUAL "sessions")
  list(APPEND needles "sessions/s" "KiB per session" "| descriptors, sources |")
endif()
foreach(needle IN LISTS needles)
  string(FIND "${out}" "${needle}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "missing '${needle}' in the output of --self-load ${ARGS}:\n${out}\n${err}")
  endif()
endforeach()
