# cmake -DPYTHON=... -DFIXTURES=dir -DSCRATCH=dir -P check_fixtures.cmake
# Regenerates the fixtures into SCRATCH and fails on any file that differs from the committed one.
file(REMOVE_RECURSE "${SCRATCH}")
execute_process(COMMAND "${PYTHON}" "${FIXTURES}/make_fixtures.py" "${SCRATCH}"
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "make_fixtures.py failed (${status})")
endif()
# The pickles only: a .gz's deflate bytes may differ between zlib versions, and what it holds
# is one of the pickles compared here.
file(GLOB generated RELATIVE "${SCRATCH}" "${SCRATCH}/*.pickle")
foreach(name IN LISTS generated)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${SCRATCH}/${name}" "${FIXTURES}/${name}"
                  RESULT_VARIABLE differs)
  if(NOT differs EQUAL 0)
    message(FATAL_ERROR "${name} differs from what make_fixtures.py writes now: "
                        "regenerate with python3 ${FIXTURES}/make_fixtures.py and commit")
  endif()
endforeach()
