# Precompiled LibTorch headers. <ATen/ATen.h> costs a C++ file about 8 s of parsing on the 2-core CI
# machine and most of gputrain's files include it: parsed once per target instead, a cold build
# takes about two thirds of the time (22.5 -> 14.7 min there, 2026-11-30). -DGPUTRAIN_PCH=OFF builds without (every file must still compile so:
# the PCH only saves time, and the include lines stay what each file needs).
option(GPUTRAIN_PCH "precompile LibTorch's headers for the library and tests" ON)

# `target` compiles its C++ files after <ATen/ATen.h> (and `extra` headers) from its own PCH.
function(gputrain_precompile_torch target)
  if(NOT GPUTRAIN_PCH)
    return()
  endif()
  foreach(header <ATen/ATen.h> ${ARGN})  # C++ only: nvcc compiles the .cu files without it
    target_precompile_headers(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${header}>")
  endforeach()
endfunction()

# ccache caches a file compiled with a PCH only when told that the PCH's macros and time stamps
# may be ignored (its manual, "Precompiled headers"); the .gch is new each build, hence the mtimes.
if(GPUTRAIN_PCH AND CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache$")
  set(CMAKE_CXX_COMPILER_LAUNCHER env CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
                                  ${CMAKE_CXX_COMPILER_LAUNCHER})
endif()
