#pragma once
// LibTorch's C++ unpickler reads collections.OrderedDict only as a tensor's (empty) backward hooks
// and makes it None, so the OrderedDict every state_dict is fails to load. This rewrites a
// torch.save pickle so that each OrderedDict is a plain dict (the `_metadata` pickled with it an
// entry under kBuildStateKey), which the unpickler reads; tensors are untouched.

#include <optional>
#include <string>
#include <string_view>

namespace gputrain::train {

/// The key under which an OrderedDict's pickled state (a state_dict's `_metadata`) is kept.
inline constexpr char kBuildStateKey[] = "__pickled_state__";

/// `pickle` (pickle protocol 2, torch.save's default) with every OrderedDict made a dict; nothing
/// when it holds an opcode this does not walk (a later protocol's), with that opcode's byte, or
/// when it is damaged (cut short, an unbalanced stack, a memo slot past its size), with 0.
std::optional<std::string> ordered_dicts_as_dicts(std::string_view pickle, unsigned char* unknown_opcode);

}  // namespace gputrain::train
