#include "reporter.hpp"

#include "gputrain/core/error.hpp"

namespace gputrain::train {

void Reporter::open(std::vector<std::unique_ptr<MetricSink>> sinks, const RunInfo& info) {
  for (auto& s : sinks) s->on_start(info);
  attach(std::move(sinks));
}

void Reporter::attach(std::vector<std::unique_ptr<MetricSink>> sinks) {
  sinks_ = std::move(sinks);
  for (const auto& line : waiting_) note(line);
  waiting_.clear();
}

void Reporter::later(std::string line) {
  if (sinks_.empty())
    waiting_.push_back(std::move(line));
  else
    note(line);
}

void Reporter::note(const std::string& line) {
  for (auto& s : sinks_) s->on_note(line);
}

void Reporter::working_on(const std::string& what) {
  doing_ = what;
  for (auto& s : sinks_) s->on_work(what);
}

void Reporter::record(const std::string& outcome) {
  for (auto& s : sinks_) s->on_outcome(outcome);
}

void Reporter::step(const StepMetrics& metrics) {
  for (auto& s : sinks_) s->on_step(metrics);
}

void Reporter::epoch(const EpochMetrics& metrics) {
  for (auto& s : sinks_) s->on_epoch(metrics);
}

void Reporter::add(const MetricRecord& record) {
  for (auto& s : sinks_) s->on_record(record);
}

void Reporter::oom_events(memory::OomGuard& guard) {
  for (const auto& event : guard.take_events())
    for (auto& s : sinks_) s->on_oom(event);
}

void Reporter::fail(const std::exception& e) {
  std::string outcome = std::string("failed: ") + e.what();
  if (const auto* error = dynamic_cast<const Error*>(&e); error && !error->remedy().empty()) outcome += "; fix: " + error->remedy();
  record(outcome);
  end();
}

void Reporter::end() {
  for (auto& s : sinks_) s->on_end();
  sinks_.clear();
}

}  // namespace gputrain::train
