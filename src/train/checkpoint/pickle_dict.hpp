#pragma once
// What format-3 checkpoints are built of (pickled_checkpoint.cpp, optimizer_state_dict.cpp): dicts
// keyed by name, as Python's are, and tensors copied to the CPU, which torch.load maps anywhere.

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>

namespace gputrain::train {

inline c10::impl::GenericDict named_dict() { return c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get()); }

/// `t` on the CPU, contiguous: the live tensor itself when it is already so (pickle it before it changes).
inline at::Tensor on_host(const at::Tensor& t) { return t.detach().to(at::kCPU).contiguous(); }

}  // namespace gputrain::train
