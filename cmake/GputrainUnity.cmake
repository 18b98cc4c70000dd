# Unity build: a target's C++ files compiled a few at a time, each batch one compiler run. On the
# 2-core CI machine most of a file's time is LibTorch's inline code and templates, generated again
# in every file that uses them; in batches of 8 the library builds in about half the CPU time.
# -DGPUTRAIN_UNITY=OFF compiles every file alone (every file must still compile so: the batches
# only save time, and the include lines stay what each file needs).
#
# Not CMake's UNITY_BUILD: its batch files include the sources by absolute path until CMake 3.32
# (UNITY_BUILD_RELOCATABLE), so a clone in another folder missed every ccache entry. These include
# them by their path relative to the batch file, the same in every clone.
option(GPUTRAIN_UNITY "compile each target's C++ files in batches (one compiler run a batch)" ON)
set(GPUTRAIN_UNITY_BATCH 8 CACHE STRING "C++ files in one batch of a unity build")

# Writes one batch file of `sources` (absolute paths) as `${folder}/${target}_${index}.cpp` and
# compiles the sources through it. A batch of one file stays as it is.
function(_gputrain_unity_batch target folder index)
  list(LENGTH ARGN count)
  if(count LESS 2)
    return()
  endif()
  set(text "// ${target}'s files compiled together (cmake/GputrainUnity.cmake)\n")
  foreach(source IN LISTS ARGN)
    file(RELATIVE_PATH relative ${folder} ${source})
    string(APPEND text "#include \"${relative}\"\n")
  endforeach()
  set(batch_file ${folder}/${target}_${index}.cpp)
  file(CONFIGURE OUTPUT ${batch_file} CONTENT "${text}")  # rewritten only when it changes
  set_source_files_properties(${ARGN} TARGET_DIRECTORY ${target} PROPERTIES HEADER_FILE_ONLY ON)
  target_sources(${target} PRIVATE ${batch_file})
endfunction()

# Compiles `target`'s .cpp files in batches of GPUTRAIN_UNITY_BATCH, a folder's files together, in
# the order they were listed (so adding a file shifts only its own folder's batches). A file with
# its own compile definitions, options or include folders is compiled alone.
function(gputrain_unity_build target)
  if(NOT GPUTRAIN_UNITY)
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  get_target_property(binary_dir ${target} BINARY_DIR)
  set(folder ${binary_dir}/unity)
  set(index 0)
  set(batch "")
  set(batch_dir "")
  foreach(source IN LISTS sources)
    if(NOT source MATCHES "\\.cpp$")
      continue()
    endif()
    set(alone FALSE)
    foreach(property COMPILE_DEFINITIONS COMPILE_OPTIONS COMPILE_FLAGS INCLUDE_DIRECTORIES SKIP_UNITY_BUILD_INCLUSION)
      get_source_file_property(value ${source} TARGET_DIRECTORY ${target} ${property})
      if(value)
        set(alone TRUE)
      endif()
    endforeach()
    if(alone)
      continue()
    endif()
    get_filename_component(path ${source} ABSOLUTE BASE_DIR ${source_dir})
    get_filename_component(dir ${path} DIRECTORY)
    list(LENGTH batch count)
    if(count GREATER_EQUAL GPUTRAIN_UNITY_BATCH OR (count GREATER 0 AND NOT dir STREQUAL batch_dir))
      _gputrain_unity_batch(${target} ${folder} ${index} ${batch})
      math(EXPR index "${index} + 1")
      set(batch "")
    endif()
    list(APPEND batch ${path})
    set(batch_dir ${dir})
  endforeach()
  _gputrain_unity_batch(${target} ${folder} ${index} ${batch})
  # GCC warns of a type with a base or member from an anonymous namespace when the type is defined
  # in an included file, as if in a header: in a batch every file is included, and a test's fixture
  # or a file's own helpers are meant to stay in it.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-subobject-linkage>)
  endif()
endfunction()
