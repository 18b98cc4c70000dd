// Sinks that write files in the run directory: metrics.jsonl, training.log, TensorBoard events.
#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "core/json_text.hpp"
#include "gputrain/core/log.hpp"
#include "gputrain/core/printable.hpp"
#include "gputrain/core/record_file.hpp"
#include "gputrain/train/metrics.hpp"
#include "gputrain/train/tensorboard_writer.hpp"
#include "human_lines.hpp"
#include "refused_writes.hpp"

namespace gputrain::train {
namespace {

// The warnings of a file the disk refuses: to the trainer's notes, or to the log without one.
RefusedWrites::Warn or_log(RefusedWrites::Warn warn) {
  if (warn) return warn;
  return [](const std::string& line) { core::log_warn(line); };
}

// The set-up's phases as an object, phase: seconds (the start record's setup_phases).
nlohmann::json phases_json(const std::vector<std::pair<std::string, double>>& phases) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [phase, seconds] : phases) out[phase] = seconds;
  return out;
}

// The bytes after the last '\n' of the file at `path`: a line an earlier run left half-written (a
// full disk, a kill mid-write); 0 when the file is missing, empty or ends in a whole line.
std::uintmax_t partial_last_line(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size == 0) return 0;
  std::ifstream in(path, std::ios::binary);
  std::string block;
  for (auto end = size; end > 0;) {  // 64 KiB at a time from the end: one block for any usual line
    const auto begin = end > (1u << 16) ? end - (1u << 16) : 0;
    block.resize(end - begin);
    in.seekg(static_cast<std::streamoff>(begin));
    if (!in.read(block.data(), static_cast<std::streamsize>(block.size()))) return 0;
    if (const auto newline = block.rfind('\n'); newline != std::string::npos) return size - (begin + newline + 1);
    end = begin;
  }
  return size;  // one line, never ended
}

// metrics.jsonl is read by tools that refuse the whole file for one bad line (pandas' read_json
// with lines=True): a half-written last line is dropped rather than having the next run's first
// record appended to it.
core::RecordFile open_jsonl(const std::string& path) {
  if (const auto partial = partial_last_line(path)) {
    std::filesystem::resize_file(path, std::filesystem::file_size(path) - partial);
    core::log_warn(path + " ended in a half-written line (" + std::to_string(partial) +
                   " bytes, from a run that stopped mid-write): dropped, so every line stays a JSON record");
  }
  return core::RecordFile(path);
}

// training.log is for people: a half-written last line is kept, and ended, so the next run's first
// line starts a line of its own.
core::RecordFile open_log(const std::string& path) {
  const bool partial = partial_last_line(path) > 0;
  core::RecordFile file(path);
  if (partial) file.append("\n");  // refused: the next line that is written starts after it anyway
  return file;
}

// Version 2: epochs are 1-based, as the console counts them (version 1 wrote them 0-based).
constexpr const char* kMetricsSchema = "gputrain.metrics/2";

class JsonlSink final : public MetricSink {
 public:
  JsonlSink(const std::string& path, RefusedWrites::Warn warn) : file_(open_jsonl(path)), refused_(path, or_log(std::move(warn))) {}
  // Marks where each run (or resumed part of one) begins: the file is appended to, never rewritten.
  void on_start(const RunInfo& i) override {
    write({{"kind", "start"},
           {"model", i.model},
           {"parameters", i.parameters},
           {"device", i.device},
           {"precision", i.precision},
           {"batch_size", i.batch_size},
           {"batch_size_auto", i.batch_size_auto},
           {"grad_accum", i.grad_accum},
           {"num_workers", i.num_workers},
           {"data_cache", i.data_cache},
           {"train_samples", i.train_samples},
           {"val_samples", i.val_samples},
           {"data_read_seconds", i.data_read_seconds},
           {"data_load_seconds", i.data_load_seconds},
           {"setup_seconds", i.setup_seconds},
           {"setup_phases", phases_json(i.setup_phases)},
           {"total_steps", i.total_steps},
           {"steps_per_epoch", i.steps_per_epoch},
           {"start_step", i.start_step},
           {"world_size", i.world_size},
           {"cuda_graphs", i.cuda_graphs}},
          i.start_step);
  }
  void on_step(const StepMetrics& m) override {
    write({{"kind", "step"},
           {"step", m.step},
           {"epoch", m.epoch + 1},
           {"loss", m.loss},
           {"samples_per_second", m.samples_per_second},
           {"data_seconds", m.data_seconds},
           {"compute_seconds", m.compute_seconds},
           {"data_stall_percent", m.data_stall_percent()},
           {"lr", m.lr},
           {"loss_scale", m.loss_scale},
           {"skipped_steps", m.skipped_steps},
           {"memory_allocated", m.memory_allocated},
           {"memory_reserved", m.memory_reserved},
           {"memory_peak", m.memory_peak},
           {"micro_batch", m.micro_batch},
           {"oom_events", m.oom_events},
           {"grad_norm", m.grad_norm ? nlohmann::json(*m.grad_norm) : nlohmann::json()}},
          m.step);
  }
  void on_oom(const memory::OomEvent& e) override {
    write({{"kind", "oom"},
           {"step", e.step},
           {"phase", e.phase},
           {"old_micro_batch", e.old_micro_batch},
           {"new_micro_batch", e.new_micro_batch},
           {"regrow", e.regrow},
           {"recovered", e.new_micro_batch > 0},
           {"memory_allocated", e.memory.allocated},
           {"memory_reserved", e.memory.reserved},
           {"memory_peak", e.memory.peak},
           {"memory_limit", e.memory.limit},
           {"limit_source", e.memory.limit_source},
           {"recovery_seconds", e.recovery_seconds},
           {"message", e.message}},
          e.step);
  }
  void on_record(const MetricRecord& r) override {
    nlohmann::json line = {{"kind", r.kind}, {"step", r.step}};
    for (const auto& [name, value] : r.figures) line[name] = value;
    for (const auto& [name, text] : r.texts) line[name] = text;
    write(line, r.step);
  }
  void on_epoch(const EpochMetrics& m) override {
    nlohmann::json line = {{"kind", "epoch"}, {"epoch", m.epoch + 1}, {"step", m.step}};
    if (m.train_loss) line["train_loss"] = *m.train_loss;
    line["seconds"] = m.seconds;
    if (m.val_loss) line["val_loss"] = *m.val_loss;
    if (m.val_accuracy) line["val_accuracy"] = *m.val_accuracy;
    if (m.val_balanced_accuracy) line["val_balanced_accuracy"] = *m.val_balanced_accuracy;
    if (!m.val_class_samples.empty()) {
      line["val_class_samples"] = m.val_class_samples;
      line["val_class_right"] = m.val_class_right;
      line["val_class_predicted"] = m.val_class_predicted;
    }
    if (m.val_mse) line["val_mse"] = *m.val_mse;
    if (m.val_mae) line["val_mae"] = *m.val_mae;
    for (const auto& [name, value] : m.extra) line[name] = value;
    write(line, m.step);
  }
  void on_end() override { refused_.finish(); }

 private:
  // One write per line, unbuffered: a crash loses at most the line being written.
  void write(nlohmann::json line, std::int64_t step) {
    line["schema"] = kMetricsSchema;
    line["time"] = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    refused_.record(file_.append(core::json_text(line) + "\n"), step);
  }
  core::RecordFile file_;
  RefusedWrites refused_;
};

class TensorBoardSink final : public MetricSink {
 public:
  TensorBoardSink(const std::string& dir, RefusedWrites::Warn warn) : writer_(dir), refused_(writer_.path(), or_log(std::move(warn))) {}
  void on_step(const StepMetrics& m) override { add(scalars_of(m), m.step); }
  void on_epoch(const EpochMetrics& m) override { add(scalars_of(m), m.step); }
  void on_record(const MetricRecord& r) override {
    if (!r.figures.empty()) add(scalars_of(r), r.step);
  }
  void on_end() override { refused_.finish(); }

 private:
  void add(const Scalars& scalars, std::int64_t step) {
    for (const auto& [name, value] : scalars) writer_.add_scalar(name, value, step);
    refused_.record(writer_.flush(), step);
  }
  TensorBoardWriter writer_;
  RefusedWrites refused_;
};

class LogFileSink final : public MetricSink {
 public:
  LogFileSink(const std::string& path, RefusedWrites::Warn warn) : file_(open_log(path)), refused_(path, or_log(std::move(warn))) {}
  void on_start(const RunInfo& info) override {
    step_ = info.start_step;
    total_steps_ = info.total_steps;
    epochs_ = info.epochs;
    show_balanced_accuracy_ = info.show_balanced_accuracy;
    write(header_line(info));
  }
  void on_step(const StepMetrics& m) override {
    step_ = m.step;
    write(step_line(m, total_steps_));
  }
  void on_epoch(const EpochMetrics& m) override {
    step_ = m.step;
    write(epoch_line(m, epochs_, show_balanced_accuracy_));
  }
  void on_oom(const memory::OomEvent& e) override { write(oom_line(e)); }
  void on_note(const std::string& note) override { write(note); }
  void on_outcome(const std::string& outcome) override { write(outcome); }
  void on_end() override { refused_.finish(); }

 private:
  void write(const std::string& line) {
    const std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
    refused_.record(file_.append(std::string(stamp) + " " + core::printable(line) + "\n"), step_);  // `cat` acts on no name
  }
  core::RecordFile file_;
  RefusedWrites refused_;
  std::int64_t step_ = 0;  // of the last step or epoch line: notes between them are counted with it
  std::int64_t total_steps_ = 0, epochs_ = 0;
  bool show_balanced_accuracy_ = false;
};

}  // namespace

std::unique_ptr<MetricSink> make_jsonl_sink(const std::string& path, SinkWarning warn) {
  return std::make_unique<JsonlSink>(path, std::move(warn));
}
std::unique_ptr<MetricSink> make_tensorboard_sink(const std::string& dir, SinkWarning warn) {
  return std::make_unique<TensorBoardSink>(dir, std::move(warn));
}
std::unique_ptr<MetricSink> make_log_file_sink(const std::string& path, SinkWarning warn) {
  return std::make_unique<LogFileSink>(path, std::move(warn));
}

}  // namespace gputrain::train
