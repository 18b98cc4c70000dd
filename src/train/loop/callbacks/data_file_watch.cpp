// A data file rewritten in place while the run reads it where it lies (a memory map): numpy.save
// to the same path at the same size gives the steps a mix of its old and new contents, silently.
// Checked at each step line and epoch end (a stat(2) of each mapped file); each file warned of once.
#include <set>

#include "builtin_callbacks.hpp"
#include "data/mapping_watch.hpp"
#include "gputrain/train/checkpoint.hpp"

namespace gputrain::train {
namespace {

class DataFileWatch final : public Callback {
 public:
  std::string name() const override { return "data_file_watch"; }

  void on_log(RunControl& run, const StepMetrics&, const LossWindow&) override { check(run); }
  void on_epoch_end(RunControl& run, const EpochMetrics&) override { check(run); }

 private:
  void check(RunControl& run) {
    for (const auto& [path, how] : data::changed_in_place()) {
      if (!warned_.insert(path).second) continue;
      const bool cut = how.rfind("cut", 0) == 0;
      run.warn("data file '" + path + "' was " + how + " while this run read it (found at step " + std::to_string(run.progress().step) +
               "): gputrain reads data files where they lie, so the steps since then read a mix of its old and new contents" +
               (cut ? " (zeros past its new end)" : "") +
               "; to change data under a run, write a new file and move it over the old one (mv, os.replace): a run keeps reading "
               "the file it opened");
    }
  }

  std::set<std::string> warned_;
};

}  // namespace

std::unique_ptr<Callback> data_file_watch_callback() { return std::make_unique<DataFileWatch>(); }

}  // namespace gputrain::train
