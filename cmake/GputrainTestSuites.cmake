# One ctest entry per GoogleTest suite of a test executable: `ctest -R TrainerData` runs
# TrainerData.*, and a test of it alone is `bin/test_train --gtest_filter=TrainerData.Name`.
#
# Why suites and not one entry per TEST: a binary on LibTorch spends ~0.6 s registering
# LibTorch's operators before its first test, so 824 entries spent ~500 s of the suite's
# ~1,750 CPU-seconds starting up. The suites are listed when ctest starts, as
# gtest_discover_tests' PRE_TEST mode does (building never starts a binary that loads LibTorch),
# and listed again only when the binary is newer than the list.
#
# A suite whose every test skipped (the GPU's on a CPU machine) is reported skipped: the tests'
# main (tests/support/gtest_main.cpp) exits GPUTRAIN_TEST_SKIP_STATUS then, which ctest reads as
# the SKIP_RETURN_CODE. A suite where some tests ran and some skipped passes, and names the
# skipped ones in its output.

set(GPUTRAIN_TEST_SKIP_STATUS 77)

# At configure time: have ctest list TARGET's suites when it starts. PROPERTIES apply to each.
function(gputrain_add_test_suites target)
  cmake_parse_arguments(ARG "" "" "PROPERTIES" ${ARGN})
  set(list_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake)
  set(include_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_suites_include.cmake)
  list(APPEND ARG_PROPERTIES SKIP_RETURN_CODE ${GPUTRAIN_TEST_SKIP_STATUS}
       ENVIRONMENT_MODIFICATION GPUTRAIN_TEST_SKIP_STATUS=set:${GPUTRAIN_TEST_SKIP_STATUS})
  file(GENERATE OUTPUT ${include_file} CONTENT
"include([==[${CMAKE_CURRENT_FUNCTION_LIST_FILE}]==])
gputrain_list_test_suites([==[$<TARGET_FILE:${target}>]==] [==[${list_file}]==]
                          [==[${CMAKE_CURRENT_BINARY_DIR}]==] [==[${ARG_PROPERTIES}]==])
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()

# At ctest time: write (when stale) and read the add_test lines of EXE's suites. The list is stale
# when the binary, the calling include file (the properties) or this module is newer.
function(gputrain_list_test_suites exe list_file work_dir properties)
  if(NOT EXISTS "${exe}")
    get_filename_component(name "${exe}" NAME)
    add_test(${name}_NOT_BUILT ${name}_NOT_BUILT)
    return()
  endif()
  set(stale FALSE)
  foreach(source IN ITEMS "${exe}" "${CMAKE_CURRENT_LIST_FILE}" "${CMAKE_CURRENT_FUNCTION_LIST_FILE}")
    if(NOT EXISTS "${list_file}" OR "${source}" IS_NEWER_THAN "${list_file}")
      set(stale TRUE)
    endif()
  endforeach()
  if(stale)
    execute_process(COMMAND "${exe}" --gtest_list_tests WORKING_DIRECTORY "${work_dir}" TIMEOUT 60
                    OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE status)
    if(NOT status EQUAL 0)
      message(FATAL_ERROR "could not list the tests of ${exe} (${status}):\n${listing}${errors}")
    endif()
    set(lines "")
    string(REPLACE "\n" ";" listing "${listing}")
    foreach(line IN LISTS listing)
      # A suite's line starts at column 0 and ends with '.', or '.  # TypeParam = ...'.
      if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
        set(suite "${CMAKE_MATCH_1}")
        if(suite MATCHES "^DISABLED_")
          continue()
        endif()
        string(APPEND lines "add_test([==[${suite}]==] [==[${exe}]==] [==[--gtest_filter=${suite}.*]==])\n"
                            "set_tests_properties([==[${suite}]==] PROPERTIES WORKING_DIRECTORY [==[${work_dir}]==]")
        foreach(word IN LISTS properties)  # keys and values alike, each one argument
          string(APPEND lines " [==[${word}]==]")
        endforeach()
        string(APPEND lines ")\n")
      endif()
    endforeach()
    file(WRITE "${list_file}" "${lines}")
  endif()
  include("${list_file}")
endfunction()
