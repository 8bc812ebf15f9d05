# Writes the source tree's git commit into OUT (a header), at build time, so that a build made
# after a commit names that commit. "-dirty" when tracked files differ from it; "unknown" without
# git. The file is rewritten only when its text changes.
set(_sha "unknown")
if(GIT_EXECUTABLE)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
    WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE _head
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _head)
    set(_sha ${_head})
    execute_process(COMMAND ${GIT_EXECUTABLE} diff --quiet HEAD --
      WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE _dirty ERROR_QUIET)
    if(NOT _dirty EQUAL 0)
      set(_sha "${_sha}-dirty")
    endif()
  endif()
endif()
set(_text "#pragma once\n#define TRUEPEAK_GIT_SHA \"${_sha}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} _old)
else()
  set(_old "")
endif()
if(NOT _old STREQUAL _text)
  file(WRITE ${OUT} "${_text}")
endif()
