# Runs the generators into scratch folders and fails on any difference from
# the committed stack/gen (gen_types.py) and server/gen (gen_ns0.py).
file(REMOVE_RECURSE ${OUT})
execute_process(COMMAND ${PY} ${SRC}/stack/codegen/gen_types.py --schema ${SCHEMA} --out ${OUT}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "generator failed (${rc})")
endif()
execute_process(COMMAND diff -r ${SRC}/stack/gen ${OUT} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "stack/gen is stale; run 'cmake --build build --target uas_regen':\n${out}")
endif()

file(REMOVE_RECURSE ${OUT}_ns0)
execute_process(COMMAND ${PY} ${SRC}/stack/codegen/gen_ns0.py --schema ${SCHEMA} --out ${OUT}_ns0
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gen_ns0.py failed (${rc})")
endif()
execute_process(COMMAND diff -r ${SRC}/server/gen ${OUT}_ns0 RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0)
  # The tables are large: show the start of the difference only.
  string(SUBSTRING "${out}" 0 4000 out)
  message(FATAL_ERROR "server/gen is stale; run 'cmake --build build --target uas_regen':\n${out}")
endif()
