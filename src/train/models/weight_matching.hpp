#pragma once
// Which tensors of a weights file fit which of a model's: names matched after the wrapper prefix
// the file's names carry ("module." from DDP, "model." from Lightning, "_orig_mod." from
// torch.compile), shapes compared. Loading policy (strict, partial, a new head) is the caller's.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gputrain/train/model.hpp"

namespace gputrain::train {

struct WeightMatch {
  /// A tensor both have, shaped differently.
  struct Misfit {
    std::string name;
    std::vector<std::int64_t> in_file, in_model;
  };
  std::string prefix;                ///< read off the file's names that carried it ("" when none did)
  NamedTensors fits;                 ///< by the model's names: the file's tensor, of the model's shape
  std::vector<Misfit> misfits;       ///< in the model's order
  std::vector<std::string> missing;  ///< the model's tensors the file lacks, in the model's order
  std::vector<std::string> extra;    ///< the file's tensors the model has no place for, in the file's order
};

/// Matches `file` (names as saved) to `model` (the model's named_state).
WeightMatch match_weights(const NamedTensors& model, const NamedTensors& file);

/// `file`'s tensors, their names read without the wrapper's prefix match_weights found for `model`
/// ("module.": DDP's): what load_named_state takes whole.
NamedTensors without_wrapper_prefix(const NamedTensors& model, NamedTensors file);

/// The classifier head: the model's last 2-d parameter whose rows are `outputs`, and its bias
/// beside it, by name ("fc.weight", "fc.bias"); empty when there is no such parameter.
std::vector<std::string> head_names(const NamedTensors& model, std::int64_t outputs);

/// Whether every misfit of `match` is a tensor of `head` whose shapes differ only in their first
/// dimension (another number of classes), and nothing is missing or extra.
bool only_the_head_differs(const WeightMatch& match, const std::vector<std::string>& head);

/// Whether `prefix` names `name` as train.freeze and optimizer.param_groups read it: the whole
/// name, or whole components at its start ("layer1" names "layer1.0.conv1.weight", not "layer10.weight").
bool names_under(const std::string& name, const std::string& prefix);

/// The prefixes a user may give for `named`: each name's first component and its first two
/// ("layer1", "layer1.0"), sorted, for did-you-mean and the fix of a prefix that names nothing.
std::vector<std::string> name_prefixes(const NamedTensors& named);

/// "fc.weight holds NaN or inf in 3 of its 1,024 values": the first floating-point tensor of
/// `tensors` that does (weights that no training step repairs), if any.
std::optional<std::string> nonfinite_tensor(const NamedTensors& tensors);

/// "[1000, 512]".
std::string shape_text(const std::vector<std::int64_t>& shape);

}  // namespace gputrain::train
