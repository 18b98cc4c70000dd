// `gputrain profile` (default mode): the loader sweep.
#include <filesystem>
#include <iostream>

#include "gputrain/core/atomic_file.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/printable.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/core/write_error.hpp"
#include "gputrain/device/system_info.hpp"
#include "gputrain/profile/loader_sweep.hpp"
#include "gputrain/profile/svg_to_png.hpp"
#include "modes.hpp"

namespace gputrain::tools::profile {

int profile_loader(const train::Config& config, const train::RunDevice& run, const train::RunData& data, const SweepFlags& flags) {
  if (!flags.plot.empty()) {  // refused before a long sweep, not after it
    const auto ext = std::filesystem::path(flags.plot).extension().string();
    if (ext != ".svg" && ext != ".png")
      throw UsageError("--plot writes .svg or .png; '" + flags.plot + "' is neither", "e.g. --plot loader.svg");
    if (ext == ".png" && !gputrain::profile::can_write_png())
      throw EnvironmentError("--plot " + flags.plot + " needs librsvg (librsvg-2.so.2) to render the chart as PNG",
                             "apt-get install librsvg2-2, or use --plot with a .svg name");
    core::refuse_unwritable_file(flags.plot, "--plot");
  }
  if (config.data.source == "postgres") report_postgres_load(config, data);
  const auto system = device::collect_system_info();
  gputrain::profile::SweepOptions options;
  options.workers = flags.workers.empty() ? gputrain::profile::worker_counts(system.usable_cores) : flags.workers;
  options.batch_size = config.train.batch_size.value_or(64);
  options.repeats = flags.repeats;
  options.batches = flags.batches;
  options.seed = static_cast<std::uint64_t>(config.train.seed);
  // The caches are tried when they fit (the step's own memory is not counted here: --step and
  // training decide with it).
  data::CacheFigures figures;
  (void)train::plan_data_cache(config, data, run.device, 0, &figures);
  figures.in_memory = false;  // measure the in-memory cache as a setting of its own
  if (data::plan_cache("auto", figures).mode == data::CacheMode::vram) options.caches.push_back(data::CacheMode::vram);
  if (run.device.is_cuda() && figures.dataset_bytes + data::cache_headroom(figures.host_free_bytes) <= figures.host_free_bytes)
    options.caches.push_back(data::CacheMode::ram);
  const bool quiet = flags.json || flags.csv;
  if (!quiet)
    std::cerr << "sweeping the loader over " << core::printable(data.sources.train->description()) << " on " << run.device.str() << " ("
              << core::counted(std::int64_t(options.workers.size()), "thread count") << ", " << core::counted(options.repeats, "repeat")
              << " each)\n";
  const auto sweep = gputrain::profile::sweep_loader(
      data.sources.train, run.device, options, [&](const gputrain::profile::SweepResult& r, std::size_t done, std::size_t total) {
        if (!quiet)
          std::cerr << "  [" << done << "/" << total << "] workers " << r.setting.workers << ", pin "
                    << (r.setting.pin_memory ? "on" : "off") << ", prefetch " << r.setting.prefetch << ", cache "
                    << data::to_string(r.setting.cache) << ": " << core::format_fixed(r.samples_per_second, 0) << " samples/s\n";
      });
  if (!flags.plot.empty()) {
    const auto ext = std::filesystem::path(flags.plot).extension().string();
    core::make_folders_for_file(flags.plot, "--plot");
    if (ext == ".svg") {
      core::write_named_file(flags.plot, gputrain::profile::sweep_svg(sweep));
    } else if (ext == ".png") {
      gputrain::profile::write_svg_as_png(gputrain::profile::sweep_svg(sweep), flags.plot);
    }
    if (!quiet) std::cerr << "chart written to " << flags.plot << "\n";
  }
  std::cout << (flags.json  ? gputrain::profile::sweep_json(sweep)
                : flags.csv ? gputrain::profile::sweep_csv(sweep)
                            : gputrain::profile::sweep_table(sweep));
  return int(ExitCode::ok);
}

}  // namespace gputrain::tools::profile
