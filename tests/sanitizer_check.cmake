# Fails, printing them, if any sanitizer report was written during the run.
file(GLOB reports ${DIR}/*)
if(reports)
  foreach(r ${reports})
    file(READ ${r} text)
    message("==== ${r}\n${text}")
  endforeach()
  message(FATAL_ERROR "sanitizer reports were written (see above)")
endif()
