// The names figures go by in the scalar sinks (TensorBoard, MLflow), one place for all of them.
#include "gputrain/train/metrics.hpp"

namespace gputrain::train {

Scalars scalars_of(const StepMetrics& m) {
  Scalars out{{"train/loss", m.loss},
              {"train/lr", m.lr},
              {"train/samples_per_second", m.samples_per_second},
              {"train/data_stall_percent", m.data_stall_percent()}};
  if (m.loss_scale != 1.0) out.emplace_back("train/loss_scale", m.loss_scale);
  if (m.grad_norm) out.emplace_back("train/grad_norm", *m.grad_norm);
  if (m.memory_reserved > 0) out.emplace_back("memory/allocated_gib", double(m.memory_allocated) / (1 << 30));
  if (m.oom_events > 0) out.emplace_back("memory/oom_events", double(m.oom_events));
  return out;
}

Scalars scalars_of(const EpochMetrics& m) {
  Scalars out;
  if (m.train_loss) out.emplace_back("epoch/train_loss", *m.train_loss);
  for (const auto& [name, value] : {std::pair{"val/loss", m.val_loss},
                                    {"val/accuracy", m.val_accuracy},
                                    {"val/balanced_accuracy", m.val_balanced_accuracy},
                                    {"val/mse", m.val_mse},
                                    {"val/mae", m.val_mae}})
    if (value) out.emplace_back(name, *value);
  for (const auto& [name, value] : m.extra)  // val_loss_ema -> val/loss_ema
    out.emplace_back(name.rfind("val_", 0) == 0 ? "val/" + name.substr(4) : "epoch/" + name, value);
  return out;
}

Scalars scalars_of(const MetricRecord& r) {
  Scalars out;
  for (const auto& [name, value] : r.figures) out.emplace_back(r.kind + "/" + name, value);
  return out;
}

}  // namespace gputrain::train
