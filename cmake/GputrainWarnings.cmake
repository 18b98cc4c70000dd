# Warnings for our own targets only (never for LibTorch's headers, which come in as -isystem).
# CUDA files: nvcc's own warnings, and -Wall -Wextra for the host code it hands to the C++ compiler
# (the stricter ones flag nvcc's generated launch stubs, which are not ours to change).
function(gputrain_set_warnings target)
  set(_cxx -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${_cxx}>
                                           $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
  if(GPUTRAIN_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror> $<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings -Xcompiler=-Werror>)
  endif()
endfunction()
