// What TensorBoard shows besides the scalars (logging.tensorboard): the resolved config as text and
// its settings as hyper-parameters (the Text and HParams tabs, so runs compare by their settings),
// and with logging.histograms_every N a histogram of every weight and gradient each N steps.
// Rank 0 writes them to an event file of their own beside the scalars' (TensorBoard reads every
// event file in a run's folder as that run).
#include <ATen/ATen.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "builtin_callbacks.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/tensorboard_writer.hpp"

namespace gputrain::train {
namespace {

constexpr std::int64_t kBuckets = 30;

// "optimizer.lr" -> 0.01: every setting of the resolved config, numbers and bools as such.
std::map<std::string, HParamValue> hparams_of(const Config& config) {
  std::map<std::string, HParamValue> out;
  for (const auto& [key, value] : config_settings(config)) {
    char* end = nullptr;
    const double number = std::strtod(value.c_str(), &end);
    if (!value.empty() && end == value.c_str() + value.size())
      out[key] = number;
    else if (value == "true" || value == "false")
      out[key] = value == "true";
    else
      out[key] = value;
  }
  return out;
}

// Each tensor's histogram in kBuckets even buckets from its min to its max, with two waits for
// the device in all (the ranges, then the counts). Tensors with no element or a non-finite one
// are left out.
std::vector<std::pair<std::string, Histogram>> histograms_of(const NamedTensors& tensors) {
  NamedTensors flat;
  std::vector<at::Tensor> stats;
  for (const auto& [name, t] : tensors) {
    if (t.numel() == 0) continue;
    auto x = t.detach().flatten().to(at::kFloat);
    stats.push_back(at::stack({x.min(), x.max(), x.sum(), x.square().sum()}));
    flat.emplace_back(name, std::move(x));
  }
  if (flat.empty()) return {};
  const auto ranges = at::stack(stats).to(at::kCPU, at::kDouble);
  const auto* r = ranges.data_ptr<double>();
  std::vector<at::Tensor> counts;
  std::vector<std::pair<std::string, Histogram>> out;
  for (std::size_t i = 0; i < flat.size(); ++i) {
    const double* s = r + 4 * i;
    if (!std::isfinite(s[0]) || !std::isfinite(s[1])) continue;
    Histogram h{s[0], s[1], static_cast<double>(flat[i].second.numel()), s[2], s[3], {}, {}};
    const double lo = s[0] == s[1] ? s[0] - 0.5 : s[0], hi = s[0] == s[1] ? s[1] + 0.5 : s[1];
    for (std::int64_t k = 1; k <= kBuckets; ++k) h.bucket_limits.push_back(lo + (hi - lo) * static_cast<double>(k) / kBuckets);
    counts.push_back(at::histc(flat[i].second, kBuckets, lo, hi));
    out.emplace_back(flat[i].first, std::move(h));
  }
  if (counts.empty()) return out;
  const auto host = at::stack(counts).to(at::kCPU, at::kDouble);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i].second.buckets.assign(host[static_cast<std::int64_t>(i)].data_ptr<double>(),
                                 host[static_cast<std::int64_t>(i)].data_ptr<double>() + kBuckets);
  return out;
}

class TensorBoardExtras final : public Callback {
 public:
  explicit TensorBoardExtras(std::int64_t histograms_every) : every_(histograms_every) {}

  std::string name() const override { return "tensorboard_extras"; }

  void on_fit_start(RunControl& run) override {
    if (!run.writer()) return;
    writer_ = std::make_unique<TensorBoardWriter>(run.config().logging.dir, ".extras");
    const auto yaml = to_yaml(run.config());
    writer_->add_text("config", "```yaml\n" + yaml + "```", run.progress().step);
    writer_->add_hparams(hparams_of(run.config()),
                         std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
    flush(run);
    if (every_ > 0 && (run.progress().step + 1) % every_ == 0) run.want_gradients();
  }

  void on_step_end(RunControl& run, std::int64_t step) override {
    if (!writer_ || every_ == 0) return;
    if ((step + 1) % every_ == 0) run.want_gradients();  // the next step is a histogram step
    if (step % every_ != 0) return;
    NamedTensors weights;
    for (const auto& [name, t] : run.model().named_state())
      if (t.is_floating_point()) weights.emplace_back(name, t);
    for (const auto& [name, h] : histograms_of(weights)) writer_->add_histogram("weights/" + name, h, step);
    for (const auto& [name, h] : histograms_of(run.gradients())) writer_->add_histogram("gradients/" + name, h, step);
    flush(run);
  }

 private:
  // A refused write (a full disk) drops these records and says so once; training goes on.
  void flush(RunControl& run) {
    const auto error = writer_->flush();
    if (!error || warned_) return;
    warned_ = true;
    run.note("warning: TensorBoard histograms and hyper-parameters in " + writer_->path() + " were not written (" +
             std::string(std::strerror(*error)) + "); training goes on");
  }

  const std::int64_t every_;
  std::unique_ptr<TensorBoardWriter> writer_;
  bool warned_ = false;
};

}  // namespace

std::unique_ptr<Callback> tensorboard_extras_callback(const Config& config) {
  if (!config.logging.tensorboard) return nullptr;
  return std::make_unique<TensorBoardExtras>(config.logging.histograms_every);
}

}  // namespace gputrain::train
