# Finds the three engines of dist::Communicator; src/CMakeLists.txt adds the sources of those found.
#
# MPI (CPU ranks): Open MPI from Debian's packages (libopenmpi-dev). Optional: without it the build
# still works and `distributed.backend: mpi` says how to get it. GPUTRAIN_HAVE_MPI records which.
#
# NCCL (GPU ranks): c10d's ProcessGroupNCCL headers need nccl.h, and it must be the header of the
# very NCCL library LibTorch loads: ProcessGroupNCCL::Options embeds ncclConfig_t, whose layout
# changes between NCCL versions, so another version's header corrupts memory without a word. The
# torch wheel loads the nvidia-nccl wheel's library (its RPATH points there), so that package's
# include folder is the one to use. tests/unit/dist/test_nccl_header.cpp compares the header's
# NCCL_VERSION_CODE with ncclGetVersion() of the library the process loaded.

# The C API through the CXX component (the project enables no C language); no C++ bindings.
set(MPI_CXX_SKIP_MPICXX ON)
find_package(MPI COMPONENTS CXX QUIET)
set(GPUTRAIN_HAVE_MPI OFF)
if(MPI_CXX_FOUND)
  set(GPUTRAIN_HAVE_MPI ON)
  message(STATUS "gputrain: MPI ${MPI_CXX_VERSION} for CPU ranks (${MPI_CXX_LIBRARIES})")
else()
  message(STATUS "gputrain: no MPI found (apt-get install libopenmpi-dev): CPU ranks unavailable")
endif()

set(GPUTRAIN_NCCL_INCLUDE_DIR "" CACHE PATH "Include folder of the NCCL that LibTorch loads (default: the torch wheel's nvidia-nccl)")
if(NOT GPUTRAIN_NCCL_INCLUDE_DIR AND EXISTS "${GPUTRAIN_TORCH_LIBRARY_DIR}/../../nvidia/nccl/include/nccl.h")
  get_filename_component(_nccl_include "${GPUTRAIN_TORCH_LIBRARY_DIR}/../../nvidia/nccl/include" REALPATH)
  set(GPUTRAIN_NCCL_INCLUDE_DIR "${_nccl_include}" CACHE PATH "" FORCE)
endif()

# Gloo (CPU ranks that torchrun, srun or our launcher across nodes start; NCCL ranks' step agreement
# under CUDA graphs):
# LibTorch has it compiled in (ProcessGroupGloo) but its wheel ships no gloo/ headers; Debian's
# libgloo-dev has them. Headers only: the Gloo that runs is LibTorch's own, and no Gloo class
# crosses into our code but by pointer. Optional: without it such ranks are refused with the fix.
find_path(GPUTRAIN_GLOO_INCLUDE_DIR gloo/config.h)
set(GPUTRAIN_HAVE_GLOO OFF)
if(GPUTRAIN_GLOO_INCLUDE_DIR AND EXISTS "${GPUTRAIN_TORCH_LIBRARY_DIR}/../include/torch/csrc/distributed/c10d/ProcessGroupGloo.hpp")
  set(GPUTRAIN_HAVE_GLOO ON)
  message(STATUS "gputrain: Gloo headers in ${GPUTRAIN_GLOO_INCLUDE_DIR} for CPU ranks outside mpirun")
else()
  message(STATUS "gputrain: no Gloo headers (apt-get install libgloo-dev): CPU ranks need mpirun")
endif()

# NCCL ranks whose steps are CUDA graphs exchange host values (the step agreement) over a Gloo
# group: Gloo's headers too.
set(GPUTRAIN_HAVE_NCCL OFF)
if(NOT (GPUTRAIN_NCCL_INCLUDE_DIR AND EXISTS "${GPUTRAIN_NCCL_INCLUDE_DIR}/nccl.h"))
  message(STATUS "gputrain: no nccl.h beside LibTorch: GPU ranks unavailable (set GPUTRAIN_NCCL_INCLUDE_DIR)")
elseif(NOT GPUTRAIN_HAVE_GLOO)
  message(STATUS "gputrain: nccl.h found, but GPU ranks also need Gloo's headers (apt-get install libgloo-dev): GPU ranks unavailable")
else()
  set(GPUTRAIN_HAVE_NCCL ON)
  file(GLOB GPUTRAIN_NCCL_LIBRARY "${GPUTRAIN_NCCL_INCLUDE_DIR}/../lib/libnccl.so*")
  message(STATUS "gputrain: NCCL header ${GPUTRAIN_NCCL_INCLUDE_DIR}/nccl.h (the wheel's, which LibTorch loads)")
endif()
