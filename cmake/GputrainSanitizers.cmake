# GPUTRAIN_SANITIZE=address,undefined builds our code with those sanitizers (LibTorch itself stays
# uninstrumented: ASan still sees every heap access our code makes, and UBSan our arithmetic).
# Undefined behaviour stops the program, so a test that runs into it fails instead of printing a
# warning nobody reads. `thread` (alone: it cannot share a build with `address`) checks our own
# threads; run it with OMP_NUM_THREADS=1, since it cannot see the barriers of LibTorch's
# uninstrumented OpenMP team. Run the suite with docs/architecture.md's sanitizer recipes.
set(GPUTRAIN_SANITIZE "" CACHE STRING "Sanitizers to build with, comma-separated: address, undefined, or thread (empty: none)")

if(GPUTRAIN_SANITIZE)
  string(REPLACE "," ";" _gputrain_sanitizers "${GPUTRAIN_SANITIZE}")
  foreach(_sanitizer IN LISTS _gputrain_sanitizers)
    if(NOT _sanitizer MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "GPUTRAIN_SANITIZE: '${_sanitizer}' is not one of address, undefined, thread "
                          "(e.g. -DGPUTRAIN_SANITIZE=address,undefined)")
    endif()
  endforeach()
  if("thread" IN_LIST _gputrain_sanitizers AND "address" IN_LIST _gputrain_sanitizers)
    message(FATAL_ERROR "GPUTRAIN_SANITIZE: thread and address cannot be combined; build each in its own folder")
  endif()
  # GCC's instrumentation makes -Wmaybe-uninitialized see ghosts in libstdc++ (std::regex,
  # std::function): off here, so the sanitized build stays as warning-free as the plain one.
  add_compile_options(-fsanitize=${GPUTRAIN_SANITIZE} -fno-omit-frame-pointer -Wno-maybe-uninitialized)
  add_link_options(-fsanitize=${GPUTRAIN_SANITIZE})
  if("undefined" IN_LIST _gputrain_sanitizers)
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
  message(STATUS "gputrain: building with -fsanitize=${GPUTRAIN_SANITIZE}")
endif()
