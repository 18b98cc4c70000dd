// Trainer::evaluate: a trained model's weights, measured on the config's validation data by the
// same pass that validates each epoch of a run.
#include <cmath>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "data/stand_in_file.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/similar_path.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "train/checkpoint/checkpoint_file.hpp"
#include "train/checkpoint/weights_file.hpp"
#include "train/models/state_dict_file.hpp"
#include "train/models/weight_matching.hpp"
#include "train/report/human_lines.hpp"
#include "train/step/step_failures.hpp"
#include "trainer_state.hpp"

namespace gputrain::train {
namespace {

namespace fs = std::filesystem;

// A list model.safetensors's metadata holds as JSON ("[0.5, 2]"); empty when the key is absent.
template <typename T>
std::vector<T> metadata_list(const std::map<std::string, std::string>& metadata, const std::string& key, const std::string& path) {
  const auto found = metadata.find(key);
  if (found == metadata.end()) return {};
  try {
    return nlohmann::json::parse(found->second).get<std::vector<T>>();
  } catch (const nlohmann::json::exception&) {
    throw UsageError("'" + path + "': its metadata " + key + " is not a JSON list (" + found->second + ")",
                     "use the model.safetensors a gputrain run wrote, unchanged");
  }
}

bool same_figures(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)  // written with 9 significant digits
    if (std::abs(a[i] - b[i]) > 1e-6 * std::max(1.0, std::abs(b[i]))) return false;
  return true;
}

// model.safetensors records what its inputs and outputs meant: the class names and the
// standardisation figures, measured on the training data. Evaluated against other ones, the
// weights would give figures that look plausible and are wrong, so they are refused.
void check_weights_fit_the_data(const std::string& path, const std::map<std::string, std::string>& metadata,
                                const std::vector<std::string>& class_names, const data::BatchTransform& transform) {
  if (metadata.find("config") == metadata.end()) return;  // not written by gputrain: nothing recorded to compare
  const std::string keep =
      "evaluate with the run's config.yaml unchanged but for data.val_path: data.path and data.labels decide the "
      "class ids, and data.standardize measures its figures on data.path's training rows";
  const auto names = metadata_list<std::string>(metadata, "data.class_names", path);
  if (names != class_names)
    throw UsageError("'" + path + "' was trained on the classes [" + core::join(names) + "], and this config's data has [" +
                         core::join(class_names) + "]: its outputs would be read as other classes",
                     keep);
  const auto check = [&](const std::string& what, const std::string& mean_key, const std::string& std_key, const std::vector<double>& mean,
                         const std::vector<double>& std) {
    const auto saved_mean = metadata_list<double>(metadata, mean_key, path), saved_std = metadata_list<double>(metadata, std_key, path);
    if (same_figures(saved_mean, mean) && same_figures(saved_std, std)) return;
    const auto trained = saved_mean.empty()
                             ? what + " that were not standardised"
                             : what + " standardised by mean " + first_values(saved_mean) + " and std " + first_values(saved_std);
    const auto given = mean.empty() ? "this config does not standardise them"
                                    : "this config gives mean " + first_values(mean) + " and std " + first_values(std);
    throw UsageError("'" + path + "' was trained on " + trained + ", and " + given + ": the figures would describe other " + what +
                         " than the model learned from",
                     keep);
  };
  check("inputs", "data.mean", "data.std", transform.mean, transform.std);
  check("targets", "data.target_mean", "data.target_std", transform.target_mean, transform.target_std);
}

// A state_dict torch.save wrote, loaded whole (an evaluation takes no partial fit), its names read
// without a wrapper's prefix ("module.", "model.").
void load_state_dict_file(Model& model, const std::string& path, const StateOrigin& origin) {
  load_named_state(model, without_wrapper_prefix(model.named_state(), read_torch_save_state(path, "--evaluate")), origin);
}

// An evaluation's likeliest misfit is a head of another size: the data gives another number of
// classes (labels the model never saw) or of targets. Said so, rather than as a tensor's shape.
void refuse_other_outputs(const std::string& weights, Model& model, const Config& config) {
  NamedTensors file;
  try {
    file = read_named_weights(weights, "--evaluate");
  } catch (const Error&) {
    return;  // the load's own error stands
  }
  const auto& d = config.data;
  const bool classes = d.task == "classification";
  const auto outputs = classes ? d.classes.value_or(0) : d.outputs;
  const auto own = model.named_state();
  const auto head = head_names(own, outputs);
  const auto match = match_weights(own, file);
  if (head.empty() || match.misfits.empty() || !only_the_head_differs(match, head)) return;
  const auto& misfit = match.misfits.front();
  const auto trained = misfit.in_file.front();
  throw UsageError(
      "'" + weights + "' gives " + core::counted(trained, "output") + " (its head " + misfit.name + " is " + shape_text(misfit.in_file) +
          "), and this config's data needs " +
          (classes ? core::counted(outputs, "class") + " (by its labels: ids 0 to " + std::to_string(outputs - 1) + ")"
                   : core::counted(outputs, "regression target")),
      classes ? "evaluate on data labelled with the classes the model was trained on (ids 0 to " + std::to_string(trained - 1) +
                    "): it cannot score classes it never learned; and with the config it was trained with (config.yaml in its run folder)"
              : "set data.task and data.labels as the model was trained with (config.yaml in its run folder)");
}

}  // namespace

void check_weights_file(const std::string& weights) {
  const std::string what_to_give =
      "give a checkpoint (runs/NAME/checkpoints/best.pt or step-*.pt), the weights a finished run wrote (runs/NAME/model.safetensors), "
      "or a state_dict torch.save wrote";
  std::error_code ec;
  if (!fs::exists(weights, ec))
    throw UsageError("--evaluate: '" + weights + "' does not exist" + core::did_you_mean(weights), what_to_give);
  if (fs::is_directory(weights, ec)) {
    const auto inside = weights_in_folder(weights);
    throw UsageError("--evaluate: '" + weights + "' is a folder, not a weights file",
                     inside.empty() ? what_to_give : "give the weights in it: --evaluate " + inside);
  }
  if (!fs::is_regular_file(weights, ec))
    throw UsageError("--evaluate: '" + weights + "' is no regular file (a pipe or a device), not a weights file", what_to_give);
  data::refuse_stand_in_file(weights);
  if (!is_zip_archive(weights) && !data::starts_like_safetensors(weights))
    throw UsageError("--evaluate: '" + weights +
                         "' holds no weights: it is neither a checkpoint (a zip archive, as torch.save writes) nor a "
                         "safetensors file",
                     what_to_give);
}

EvaluationResult Trainer::State::evaluate(const std::string& weights) {
  check_weights_file(weights);
  const StateOrigin origin{"'" + weights + "'",
                           "evaluate with the config the weights were trained with (config.yaml in their run folder), changing only "
                           "data.val_path"};
  EvaluationResult result;
  result.weights = weights;
  try {
    if (is_torch_save_archive(weights) && !holds_gputrain_run(weights)) {  // a Python model's state_dict (torchvision's .pth)
      load_state_dict_file(*model, weights,
                           StateOrigin{origin.name,
                                       "set model.name and the settings that shape it (model.hidden, model.width, ...) to the "
                                       "model these weights are a state_dict of"});
    } else if (is_zip_archive(weights)) {  // a checkpoint, whatever the file is called
      const auto at = load_checkpoint_weights(weights, *model, device, origin);
      result.from_checkpoint = true;
      result.checkpoint_step = at.step;
      result.checkpoint_epochs_done = at.epoch;
      result.checkpoint_inside_epoch = at.position > 0;
    } else {
      std::map<std::string, std::string> metadata;
      load_named_state(*model, data::read_safetensors(weights, &metadata), origin);
      check_weights_fit_the_data(weights, metadata, data.sources.class_names, data.transform);
    }
  } catch (const UsageError&) {
    refuse_other_outputs(weights, *model, config);
    throw;
  } catch (const Error& e) {  // weights of another model: for an evaluation, the input is wrong (exit 2)
    refuse_other_outputs(weights, *model, config);
    throw UsageError(e.what(), e.remedy());
  }
  result.data = data.sources.val->description();
  result.device = device.str();
  result.rank = ranks.rank();
  result.class_names = data.sources.class_names;
  // The console alone, in plain lines: the set-up's notes, out-of-memory events, unreadable images.
  if (ranks.writer()) {
    std::vector<std::unique_ptr<MetricSink>> console;
    console.push_back(
        make_console_sink(config.logging.progress == "off" ? "off" : "lines", options.console ? *options.console : std::cerr));
    reporter.attach(std::move(console));
  } else {
    reporter.stay_silent();
  }
  const auto start = Clock::now();
  try {
    result.metrics = validate(progress.epoch, std::nullopt, 0.0);
  } catch (const std::exception& e) {  // a TorchScript module's failed operation: its message and code line
    const auto error = interpreter_failure(e.what(), "the evaluation", config.model.torchscript, false);
    if (!error) throw;
    throw *error;
  }
  result.seconds = seconds_since(start);
  result.metrics.seconds = result.seconds;
  result.samples = result.metrics.val_samples;
  report_skipped();
  reporter.end();
  return result;
}

EvaluationResult Trainer::evaluate(const std::string& weights) { return state_->evaluate(weights); }

}  // namespace gputrain::train
