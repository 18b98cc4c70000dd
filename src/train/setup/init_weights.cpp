#include "init_weights.hpp"

#include <c10/core/GradMode.h>

#include <filesystem>
#include <map>

#include "gputrain/core/error.hpp"
#include "gputrain/core/similar_path.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/model_registry.hpp"
#include "train/checkpoint/weights_file.hpp"
#include "train/models/weight_matching.hpp"

namespace gputrain::train {
namespace {

namespace fs = std::filesystem;

// Weights that do not fit come from another architecture: the model keys and the data's shape
// and classes decide the tensors' shapes.
StateOrigin init_weights_origin(const Config& config) {
  const auto keys = model_keys_read(config.model.name);
  const std::string model_keys = keys && !keys->empty() ? config.model.name + "'s keys (" + core::join(*keys) + ")" : "the model keys";
  return {"model.init_weights (" + config.model.init_weights + ")",
          "set model.name, " + model_keys +
              ", data.shape and data.classes as they were for the model these weights were saved from, "
              "or model.init_strict: false to load the tensors that fit and leave the rest at random"};
}

NamedTensors read_weights_file(const std::string& path) {
  const std::string what_to_give =
      "set model.init_weights to a .safetensors file (a finished run's model.safetensors), a state_dict torch.save wrote, or a "
      "gputrain checkpoint (.pt)";
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UsageError("model.init_weights: '" + path + "' does not exist" + core::did_you_mean(path), what_to_give);
  if (fs::is_directory(path, ec)) {
    const auto weights = weights_in_folder(path);
    throw UsageError("model.init_weights: '" + path + "' is a folder, not a weights file",
                     weights.empty() ? what_to_give : "set model.init_weights: " + weights + ", the weights in it");
  }
  if (!fs::is_regular_file(path, ec))  // a named pipe would block LibTorch's reader for good
    throw UsageError("model.init_weights: '" + path + "' is a pipe or a device, not a weights file", what_to_give);
  return read_named_weights(path, "model.init_weights");
}

// "fc.weight ([1000, 512] in the file, [3, 512] here)".
std::string misfit_text(const WeightMatch::Misfit& m) {
  return m.name + " (" + shape_text(m.in_file) + " in the file, " + shape_text(m.in_model) + " here)";
}

// One note, one line per kind of tensor not loaded.
std::string partial_note(const std::string& origin, const WeightMatch& match, std::size_t total) {
  std::string note = origin + ": " + std::to_string(match.fits.size()) + " of the model's " + std::to_string(total) +
                     " tensors loaded; the rest keep their random start (model.init_strict: false)";
  std::vector<std::string> misfits;
  for (const auto& m : match.misfits) misfits.push_back(misfit_text(m));
  if (!misfits.empty()) note += "\n  shaped otherwise in the file: " + core::join_some(misfits, 4);
  if (!match.missing.empty()) note += "\n  not in the file: " + core::join_some(match.missing, 6);
  if (!match.extra.empty()) note += "\n  in the file, not in the model (not read): " + core::join_some(match.extra, 6);
  return note;
}

// NaN or inf in a starting weight (a diverged run's, saved) makes the first loss nan before any
// update: said by the tensor's name here, not as a divergence at step 1.
void refuse_nonfinite(const NamedTensors& fits, const std::string& origin) {
  if (const auto found = nonfinite_tensor(fits))
    throw UsageError(origin + ": " + *found + ", which no training step repairs",
                     "start from weights saved before the run that wrote them diverged (a checkpoint's step-*.pt: "
                     "model.init_weights takes one), or leave model.init_weights unset");
}

// A copy into the model's tensor would change what these values are: complex into real drops the
// imaginary part (PyTorch warns and goes on), and true/false are no weights.
void refuse_other_kinds(const NamedTensors& fits, const NamedTensors& own, const std::string& origin) {
  std::map<std::string, at::ScalarType> own_types;
  for (const auto& [name, tensor] : own) own_types[name] = tensor.scalar_type();
  for (const auto& [name, tensor] : fits) {
    const auto type = tensor.scalar_type();
    const auto into = own_types.at(name);
    const auto held = origin + ": " + name + " holds " + (type == at::kBool ? "true/false" : "complex") + " values";
    if (at::isComplexType(type) && !at::isComplexType(into))
      throw UsageError(held + ", which the model's real " + name + " cannot take without dropping their imaginary parts",
                       "check that the file holds this model's weights; if the real parts are the weights, save those in Python: "
                       "{k: (v.real if v.is_complex() else v) for k, v in state_dict.items()}");
    if (type == at::kBool && into != at::kBool)
      throw UsageError(held + " (a mask?), which the model's " + name + " would read as 0 and 1",
                       "check that the file holds this model's weights under their names (model.init_weights)");
  }
}

}  // namespace

std::vector<std::string> load_init_weights(Model& model, const Config& config, std::int64_t outputs) {
  const auto origin = init_weights_origin(config);
  auto given = read_weights_file(config.model.init_weights);
  const auto own = model.named_state();
  const auto match = match_weights(own, given);
  const auto head = head_names(own, outputs);
  const bool new_head = only_the_head_differs(match, head);
  const bool partial = !match.misfits.empty() || !match.missing.empty() || !match.extra.empty();
  if (partial && !new_head && config.model.init_strict)  // the strict refusal, in load_named_state's words
    load_named_state(model, without_wrapper_prefix(own, given), origin);
  refuse_nonfinite(match.fits, origin.name);
  refuse_other_kinds(match.fits, own, origin.name);
  {
    c10::NoGradGuard no_grad;
    std::map<std::string, at::Tensor> fits(match.fits.begin(), match.fits.end());
    for (auto& [name, tensor] : own)
      if (const auto it = fits.find(name); it != fits.end()) tensor.copy_(it->second);
  }
  std::vector<std::string> notes;
  if (!match.prefix.empty())
    notes.push_back(origin.name + ": its names carry the prefix '" + match.prefix + "' (a wrapper's); read without it");
  if (new_head) {
    std::vector<std::string> misfits;
    for (const auto& m : match.misfits) misfits.push_back(misfit_text(m));
    notes.push_back(origin.name + ": the classifier head " + core::join(misfits) + " starts from random weights for this run's " +
                    core::counted(outputs, "output") + "; the other " + std::to_string(match.fits.size()) + " tensors come from the file");
  } else if (partial) {
    notes.push_back(partial_note(origin.name, match, own.size()));
  }
  return notes;
}

}  // namespace gputrain::train
