#pragma once
// GPUTRAIN_HOST_DEVICE marks a function that both a CUDA kernel and its host-side test run: the
// same arithmetic checked on a machine without a GPU (docs/architecture.md, "Tested without a GPU").

#ifdef __CUDACC__
#define GPUTRAIN_HOST_DEVICE __host__ __device__
#else
#define GPUTRAIN_HOST_DEVICE
#endif
