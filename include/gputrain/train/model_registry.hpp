#pragma once
// The model registry: built-in models (mlp, small_cnn, resnet18/34/50, transformer) and the ones a
// C++ user adds with register_model() before loading a config.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gputrain/train/config.hpp"

namespace torch::nn {
class AnyModule;
}

namespace gputrain::train {

class Model;

/// What a model factory is told: its YAML section and the data it will see.
struct ModelSpec {
  ModelConfig config;
  std::vector<std::int64_t> input_shape;  ///< one sample, e.g. {3, 32, 32}
  std::int64_t outputs = 10;              ///< classes, or regression targets
};

/// Builds a module whose forward takes a batch [N, input_shape...] and returns [N, outputs].
using ModelFactory = std::function<torch::nn::AnyModule(const ModelSpec&)>;

/// Adds (or replaces) a model under `name`; `model.name: <name>` in YAML then selects it.
/// Throws UsageError for "auto", which model.name keeps for the choice by the samples' shape.
void register_model(const std::string& name, ModelFactory factory);

/// Every registered name, sorted.
std::vector<std::string> registered_models();

/// What `model.name: auto` trains on samples of `sample_shape`: small_cnn for images
/// ([channels, height, width]), mlp (which flattens any shape) for everything else.
std::string model_for_samples(const std::vector<std::int64_t>& sample_shape);

/// The keys of the `model` section a built-in model reads ("model.hidden", ...); nullopt for a
/// model the user registered, whose factory may read any of them.
std::optional<std::vector<std::string>> model_keys_read(const std::string& name);

/// For a factory about to make `copies` of a part of `part_bytes` (the transformer's encoder
/// layers): throws the model's UsageError at once when they would not fit in the RAM its build may
/// still take, rather than after building copies until the limit (nothing while no limit holds:
/// outside build_model, or with no figure for the free RAM). `part` names one, e.g. "encoder layer".
void require_room_for_copies(const ModelSpec& spec, std::uint64_t part_bytes, std::int64_t copies, const std::string& part);

/// Builds the model `spec.config` asks for: a registered one, or the TorchScript file in
/// `model.torchscript`. Throws UsageError for an unknown name or unreadable file.
std::unique_ptr<Model> build_model(const ModelSpec& spec);

}  // namespace gputrain::train
