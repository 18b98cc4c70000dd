#include "init_weights.hpp"

#include <filesystem>

#include "gputrain/core/error.hpp"
#include "gputrain/core/similar_path.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/model_registry.hpp"

namespace gputrain::train {
namespace {

namespace fs = std::filesystem;

// Weights that do not fit come from another architecture: the model keys and the data's shape
// and classes decide the tensors' shapes.
StateOrigin init_weights_origin(const Config& config) {
  const auto keys = model_keys_read(config.model.name);
  const std::string model_keys = keys && !keys->empty() ? config.model.name + "'s keys (" + core::join(*keys) + ")" : "the model keys";
  return {"model.init_weights (" + config.model.init_weights + ")",
          "set model.name, " + model_keys + ", data.shape and data.classes as they were for the model these weights were saved from"};
}

}  // namespace

void load_init_weights(Model& model, const Config& config) {
  const auto& path = config.model.init_weights;
  const std::string what_to_give =
      "set model.init_weights to a .safetensors file (a finished run's model.safetensors) or a gputrain checkpoint (.pt)";
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UsageError("model.init_weights: '" + path + "' does not exist" + core::did_you_mean(path), what_to_give);
  if (fs::is_directory(path, ec)) {
    const auto weights = fs::path(path) / "model.safetensors";
    throw UsageError(
        "model.init_weights: '" + path + "' is a folder, not a weights file",
        fs::exists(weights, ec) ? "set model.init_weights: " + weights.string() + ", the weights that run finished with" : what_to_give);
  }
  if (is_zip_archive(path)) {
    load_checkpoint_weights(path, model, c10::Device(at::kCPU), init_weights_origin(config));
  } else {
    load_named_state(model, data::read_safetensors(path), init_weights_origin(config));
  }
}

}  // namespace gputrain::train
