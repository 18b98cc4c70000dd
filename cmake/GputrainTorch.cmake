# Locates LibTorch and the CUDA toolkit, and pins which copy of each CUDA library loads.
#
# LibTorch comes from the torch wheel in the project's .venv (scripts/bootstrap.sh makes it) unless
# the user points at their own with -DTorch_DIR=... (e.g. the official libtorch archive).
#
# One copy of each CUDA library: libtorch_cuda.so carries a DT_RPATH to the wheel's nvidia/*/lib
# folders, so torch itself always resolves libcudart/libcublas/libcudnn/libnccl there. The system
# toolkit (/usr/local/cuda) holds the same sonames. The dynamic loader keeps one object per soname,
# so whichever is loaded first wins for the whole process. We make that the wheel's copy by putting
# the wheel's folders first in the RUNPATH of every target we build (GPUTRAIN_CUDA_RUNTIME_DIRS),
# and we never link the toolkit's libraries ourselves: the toolkit gives headers and nvcc only.
# tests/unit/checks/test_loaded_libraries.cpp checks it in the running process.

set(GPUTRAIN_PYTHON "" CACHE FILEPATH "Python of the environment holding the torch wheel")
if(NOT Torch_DIR)
  if(NOT GPUTRAIN_PYTHON AND EXISTS "${PROJECT_SOURCE_DIR}/.venv/bin/python")
    set(GPUTRAIN_PYTHON "${PROJECT_SOURCE_DIR}/.venv/bin/python" CACHE FILEPATH "" FORCE)
  endif()
  if(GPUTRAIN_PYTHON)
    execute_process(COMMAND "${GPUTRAIN_PYTHON}" -c "import torch; print(torch.utils.cmake_prefix_path)"
                    OUTPUT_VARIABLE _torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE _torch_rc ERROR_QUIET)
    if(_torch_rc EQUAL 0)
      list(APPEND CMAKE_PREFIX_PATH "${_torch_prefix}")
    endif()
  endif()
endif()

# The CUDA toolkit: CUDAToolkit_ROOT, else /usr/local/cuda. scripts/bootstrap.sh assembles one from
# NVIDIA's PyPI wheels in .venv when a machine has none. LibTorch's config also runs the legacy
# FindCUDA and enables the CUDA language, so all three settings point at the same toolkit.
if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
if(CUDAToolkit_ROOT)
  if(NOT CUDA_TOOLKIT_ROOT_DIR)
    set(CUDA_TOOLKIT_ROOT_DIR "${CUDAToolkit_ROOT}" CACHE PATH "CUDA toolkit for LibTorch's FindCUDA")
  endif()
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS "${CUDAToolkit_ROOT}/bin/nvcc")
    set(CMAKE_CUDA_COMPILER "${CUDAToolkit_ROOT}/bin/nvcc" CACHE FILEPATH "nvcc")
  endif()
endif()
find_package(CUDAToolkit 13 REQUIRED)
# Torch's config warns that it ignores CMAKE_CUDA_ARCHITECTURES: its own kernels are built. Ours set
# theirs on their target (gputrain_kernels, src/CMakeLists.txt).
find_package(Torch REQUIRED)
if(NOT Torch_VERSION AND TORCH_VERSION)
  set(Torch_VERSION ${TORCH_VERSION})
endif()

# TORCH_INSTALL_PREFIX is .../site-packages/torch for the wheel; its CUDA libraries sit in
# .../site-packages/nvidia/<pkg>/lib. An official libtorch archive bundles them in lib/ instead.
get_filename_component(_torch_lib_dir "${TORCH_LIBRARY}" DIRECTORY)
# The real folder, never a path through the clone's .venv link: binaries must not name the clone.
get_filename_component(_torch_lib_dir "${_torch_lib_dir}" REALPATH)
set(GPUTRAIN_TORCH_LIBRARY_DIR "${_torch_lib_dir}")
file(GLOB _wheel_cuda_dirs LIST_DIRECTORIES true "${_torch_lib_dir}/../../nvidia/*/lib")
set(GPUTRAIN_CUDA_RUNTIME_DIRS "")
foreach(_dir IN LISTS _wheel_cuda_dirs)
  get_filename_component(_dir "${_dir}" REALPATH)
  list(APPEND GPUTRAIN_CUDA_RUNTIME_DIRS "${_dir}")
endforeach()
list(APPEND GPUTRAIN_CUDA_RUNTIME_DIRS "${GPUTRAIN_TORCH_LIBRARY_DIR}")
message(STATUS "gputrain: LibTorch ${Torch_VERSION} in ${GPUTRAIN_TORCH_LIBRARY_DIR}")
message(STATUS "gputrain: CUDA libraries resolve first from: ${GPUTRAIN_CUDA_RUNTIME_DIRS}")

# What the LibTorch build targets, recorded for `gputrain --version` (no torch load needed then).
set(GPUTRAIN_TORCH_CUDA_VERSION "unknown")
if(GPUTRAIN_PYTHON)
  execute_process(COMMAND "${GPUTRAIN_PYTHON}" -c "import torch; print(torch.version.cuda or 'none')"
                  OUTPUT_VARIABLE _cuda_built OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _rc ERROR_QUIET)
  if(_rc EQUAL 0)
    set(GPUTRAIN_TORCH_CUDA_VERSION "${_cuda_built}")
  endif()
endif()

# Wheel folders first; CMake appends the link folders of what we link after these.
# DT_RPATH, not DT_RUNPATH: the loader searches RPATH before LD_LIBRARY_PATH, and an executable's
# RPATH also covers libraries loaded later on its behalf (cuDNN dlopens libcudnn_graph & co.), so a
# user's LD_LIBRARY_PATH=/usr/local/cuda/lib64 cannot slip the toolkit's copies in.
add_link_options(LINKER:--disable-new-dtags)
set(CMAKE_BUILD_RPATH "${GPUTRAIN_CUDA_RUNTIME_DIRS}")
# Installed binaries find gputrain's libraries beside them ($ORIGIN/../lib), then LibTorch and its
# CUDA libraries where GPUTRAIN_INSTALL_RPATH says: by default the real folders of the LibTorch this
# build links; a package whose LibTorch sits elsewhere at run time (a container's fixed path, a
# distribution's) sets its own. Nothing else: no link folder of the build (the build tree, the
# clone's .venv link, LibTorch's config's stray /lib/intel64) ends up in an installed binary.
set(GPUTRAIN_INSTALL_RPATH "${GPUTRAIN_CUDA_RUNTIME_DIRS}" CACHE STRING
    "Folders of LibTorch and its CUDA libraries that installed binaries search (after $ORIGIN/../lib)")
set(CMAKE_INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR};${GPUTRAIN_INSTALL_RPATH}")
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH OFF)
