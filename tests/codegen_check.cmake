# Runs the generator into a scratch folder and fails on any difference from
# the committed stack/gen.
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
