// Trainer::evaluate: a trained model's weights, measured on the config's validation data by the
// same pass that validates each epoch of a run.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "gputrain/core/error.hpp"
#include "gputrain/data/safetensors.hpp"
#include "trainer_state.hpp"

namespace gputrain::train {
namespace {

namespace fs = std::filesystem;

// Checkpoints are zip archives (LibTorch's and torch.save's alike); safetensors files start with
// their header's length. The first bytes tell them apart whatever the file is called.
bool is_zip_archive(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == 4 && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4;
}

}  // namespace

EvaluationResult Trainer::State::evaluate(const std::string& weights) {
  const std::string what_to_give =
      "give a checkpoint (runs/NAME/checkpoints/best.pt or step-*.pt) or the weights a finished run wrote (runs/NAME/model.safetensors)";
  std::error_code ec;
  if (!fs::exists(weights, ec)) throw UsageError("--evaluate: '" + weights + "' does not exist", what_to_give);
  if (!fs::is_regular_file(weights, ec)) throw UsageError("--evaluate: '" + weights + "' is a folder, not a weights file", what_to_give);
  const StateOrigin origin{"'" + weights + "'",
                           "evaluate with the config the weights were trained with (config.yaml in their run folder), changing only "
                           "data.val_path"};
  EvaluationResult result;
  result.weights = weights;
  try {
    if (is_zip_archive(weights)) {
      const auto at = load_checkpoint_weights(weights, *model, device, origin);
      result.from_checkpoint = true;
      result.checkpoint_step = at.step;
      result.checkpoint_epochs_done = at.epoch;
      result.checkpoint_inside_epoch = at.position > 0;
    } else {
      load_named_state(*model, data::read_safetensors(weights), origin);
    }
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {  // weights of another model: for an evaluation, the input is wrong (exit 2)
    throw UsageError(e.what(), e.remedy());
  }
  result.data = data.sources.val->description();
  result.device = device.str();
  result.rank = ranks.rank();
  result.class_names = data.sources.class_names;
  // The console alone, in plain lines: the set-up's notes, out-of-memory events, unreadable images.
  if (ranks.writer())
    sinks.push_back(make_console_sink(config.logging.progress == "off" ? "off" : "lines", options.console ? *options.console : std::cerr));
  for (const auto& line : pending_notes) note(line);
  pending_notes.clear();
  const auto start = Clock::now();
  result.metrics = validate(progress.epoch, 0.0, 0.0);
  result.seconds = seconds_since(start);
  result.metrics.seconds = result.seconds;
  result.samples = validated_samples;
  report_skipped();
  for (auto& sink : sinks) sink->on_end();
  sinks.clear();
  return result;
}

EvaluationResult Trainer::evaluate(const std::string& weights) { return state_->evaluate(weights); }

}  // namespace gputrain::train
