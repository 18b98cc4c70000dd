// How an evaluation is reported: lines for people (the run's own wording) and one JSON object for
// scripts.
#include <nlohmann/json.hpp>

#include "core/json_text.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/train/evaluation.hpp"
#include "human_lines.hpp"

namespace gputrain::train {

std::vector<std::string> evaluation_lines(const EvaluationResult& r) {
  std::string weights = "weights: " + r.weights;
  if (r.from_checkpoint)
    weights += " (a checkpoint at step " + std::to_string(r.checkpoint_step) +
               (r.checkpoint_inside_epoch ? ", inside epoch " + std::to_string(r.checkpoint_epochs_done + 1)
                                          : ", after epoch " + std::to_string(r.checkpoint_epochs_done)) +
               ")";
  // The data's description gives its count; samples differs from it only by unreadable images.
  std::vector<std::string> lines{weights, "evaluated on " + r.data + ", on " + r.device + " in " + core::format_fixed(r.seconds, 2) + " s"};
  const auto& m = r.metrics;
  std::string figures = "val loss " + metric_text("val_loss", m.val_loss.value_or(0.0));
  if (m.val_accuracy) figures += ", accuracy " + metric_text("val_accuracy", *m.val_accuracy);
  if (m.val_balanced_accuracy) figures += ", balanced accuracy " + metric_text("val_balanced_accuracy", *m.val_balanced_accuracy);
  if (m.val_mse) figures += ", mse " + metric_text("val_mse", *m.val_mse);
  if (m.val_mae) figures += ", mae " + metric_text("val_mae", *m.val_mae);  // in the targets' units
  lines.push_back(figures);
  if (const auto per_class = class_report_line(m, r.class_names, "per class"); !per_class.empty()) lines.push_back(per_class);
  return lines;
}

std::string evaluation_json(const EvaluationResult& r) {
  nlohmann::ordered_json out;
  out["schema"] = "gputrain.evaluation/1";
  out["weights"] = r.weights;
  out["checkpoint_step"] = r.from_checkpoint ? nlohmann::ordered_json(r.checkpoint_step) : nlohmann::ordered_json();
  out["checkpoint_epochs_done"] = r.from_checkpoint ? nlohmann::ordered_json(r.checkpoint_epochs_done) : nlohmann::ordered_json();
  out["data"] = r.data;
  out["samples"] = r.samples;
  out["device"] = r.device;
  out["seconds"] = r.seconds;
  const auto& m = r.metrics;
  const auto put = [&](const char* key, const std::optional<double>& value) {
    if (value) out[key] = *value;
  };
  put("val_loss", m.val_loss);
  put("val_accuracy", m.val_accuracy);
  put("val_balanced_accuracy", m.val_balanced_accuracy);
  put("val_mse", m.val_mse);
  put("val_mae", m.val_mae);
  if (!m.val_class_samples.empty()) {
    auto classes = nlohmann::ordered_json::array();
    const auto ratio = [](std::int64_t part, std::int64_t whole) {
      return whole > 0 ? nlohmann::ordered_json(static_cast<double>(part) / static_cast<double>(whole)) : nlohmann::ordered_json();
    };
    for (std::size_t c = 0; c < m.val_class_samples.size(); ++c) {
      const auto samples = m.val_class_samples[c], right = m.val_class_right[c], predicted = m.val_class_predicted[c];
      nlohmann::ordered_json entry;
      entry["id"] = c;
      entry["name"] = c < r.class_names.size() ? nlohmann::ordered_json(r.class_names[c]) : nlohmann::ordered_json();
      entry["samples"] = samples;
      entry["right"] = right;
      entry["predicted"] = predicted;
      entry["recall"] = ratio(right, samples);
      entry["precision"] = ratio(right, predicted);
      classes.push_back(std::move(entry));
    }
    out["classes"] = std::move(classes);
  }
  return core::json_text(out, 2);
}

}  // namespace gputrain::train
