# The tests' main (gtest_main.cpp) exits GPUTRAIN_TEST_SKIP_STATUS only when every test it ran
# skipped and that variable is set (as ctest sets it), else GoogleTest's own status.
# cmake -DPROBE=<gtest_main_probe> -P check_gtest_main.cmake
function(expect filter skip_status expected)
  if(skip_status STREQUAL "")
    set(env --unset=GPUTRAIN_TEST_SKIP_STATUS)
  else()
    set(env GPUTRAIN_TEST_SKIP_STATUS=${skip_status})
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${env} ${PROBE} --gtest_filter=${filter}
                  OUTPUT_QUIET ERROR_QUIET RESULT_VARIABLE status)
  if(NOT status EQUAL expected)
    message(SEND_ERROR "${filter} with GPUTRAIN_TEST_SKIP_STATUS='${skip_status}': exit ${status}, expected ${expected}")
  endif()
endfunction()
expect("EverySkipped.*" 77 77)
expect("EverySkipped.*" "" 0)
expect("SomeSkipped.*" 77 0)
expect("OneFails.*" 77 1)
