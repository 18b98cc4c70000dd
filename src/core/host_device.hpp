#pragma once
// GPUTRAIN_HOST_DEVICE marks a function that both a CUDA kernel and its host-side test run: the
// same arithmetic checked on a machine without a GPU (docs/architecture.md, "Tested without a GPU").
// GPUTRAIN_UNROLL unrolls the loop after it in device code; host compilers do not know the pragma.

#ifdef __CUDACC__
#define GPUTRAIN_HOST_DEVICE __host__ __device__
#else
#define GPUTRAIN_HOST_DEVICE
#endif

#ifdef __CUDA_ARCH__
#define GPUTRAIN_UNROLL _Pragma("unroll")
#else
#define GPUTRAIN_UNROLL
#endif
