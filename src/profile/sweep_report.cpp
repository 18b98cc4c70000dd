// How a loader sweep is shown: a table for people, JSON and CSV for machines, an SVG chart.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "core/json_text.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/profile/loader_sweep.hpp"

namespace gputrain::profile {
namespace {

std::string fixed(double value, int digits) { return core::format_fixed(value, digits); }

std::string cache_name(const SweepSetting& s) { return data::to_string(s.cache); }

// 250000 -> "250k", 1250000 -> "1.25M": an axis label, without the zeros a round tick ends in.
std::string compact(double value) {
  const auto trimmed = [](std::string text) {
    if (text.find('.') == std::string::npos) return text;
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.') text.pop_back();
    return text;
  };
  if (value >= 1e6) return trimmed(fixed(value / 1e6, 2)) + "M";
  if (value >= 1e3) return trimmed(fixed(value / 1e3, 2)) + "k";
  return trimmed(fixed(value, 2));
}

// A tick spacing people read at a glance: 1, 2, 2.5 or 5 times a power of ten, the smallest such
// that `ticks` of them reach `top`.
double round_tick(double top, int ticks) {
  const double raw = top / ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double step : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (step * power >= raw) return step * power;
  return 10 * power;
}

}  // namespace

std::string best_yaml(const LoaderSweep& sweep) {
  const auto& s = sweep.results[sweep.best].setting;
  std::string out = "data:\n  cache: " + cache_name(s) +
                    (sweep.device == "cpu" && s.cache == data::CacheMode::vram ? "  # training on the CPU, vram is the data in RAM" : "") +
                    "\n";
  if (s.cache == data::CacheMode::none) {
    out += "  num_workers: " + std::to_string(s.workers) + "\n";
    out += "  prefetch: " + std::to_string(s.prefetch) + "\n";
    if (sweep.device != "cpu") out += std::string("  pin_memory: ") + (s.pin_memory ? "true" : "false") + "\n";
  }
  return out;
}

std::string sweep_table(const LoaderSweep& sweep) {
  std::ostringstream out;
  out << "loader sweep on " << sweep.device << ": " << sweep.dataset << ", batch " << sweep.batch_size
      << (sweep.asked_batch_size > sweep.batch_size
              ? " (every sample: fewer than train.batch_size " + std::to_string(sweep.asked_batch_size) + ")"
              : "")
      << ", " << core::format_bytes(static_cast<std::uint64_t>(sweep.sample_bytes)) << " per sample\n";
  const bool gpu = sweep.device != "cpu";
  char line[200];
  std::snprintf(line, sizeof line, "  %-2s %7s %5s %8s %6s %10s %11s %10s %8s\n", "", "workers", "pin", "prefetch", "cache", "batches/s",
                "samples/s", gpu ? "H2D MB/s" : "MB/s", "speed-up");
  out << line;
  for (std::size_t i = 0; i < sweep.results.size(); ++i) {
    const auto& r = sweep.results[i];
    const auto& s = r.setting;
    std::snprintf(line, sizeof line, "  %-2s %7s %5s %8s %6s %10s %11s %10s %7sx\n", i == sweep.best ? "*" : "",
                  s.cache == data::CacheMode::none ? std::to_string(s.workers).c_str() : "-", s.pin_memory ? "on" : "off",
                  s.cache == data::CacheMode::none ? std::to_string(s.prefetch).c_str() : "-", cache_name(s).c_str(),
                  fixed(r.median_batches_per_second, 1).c_str(), fixed(r.samples_per_second, 0).c_str(),
                  fixed(r.megabytes_per_second, 1).c_str(), fixed(r.speedup, 2).c_str());
    out << line;
  }
  for (const auto& r : sweep.results)
    if (r.gather_gbps > 0) {
      out << "  " << cache_name(r.setting) << " cache, the gather alone (" << r.gather_rows
          << " samples a gather, as its feed gathers them; device synchronised): "
          << (r.gather_gbps >= 1 ? fixed(r.gather_gbps, 1) + " GB/s" : fixed(r.gather_gbps * 1000, 1) + " MB/s") << " of samples";
      // A gather on the GPU reads and writes what a copy does: the copy's bandwidth is its ceiling.
      if (r.setting.cache == data::CacheMode::vram && sweep.device_copy_gbps > 0)
        out << ", " << fixed(100 * r.gather_gbps / sweep.device_copy_gbps, 0) << " % of a device-to-device copy ("
            << fixed(sweep.device_copy_gbps, 0) << " GB/s, measured)";
      out << "\n";
    }
  if (gpu)
    out << "  host-to-device ceiling (pinned copies, measured): " << fixed(sweep.pinned_copy_gbps * 1000, 0)
        << " MB/s; the best setting uses "
        << fixed(100 * sweep.results[sweep.best].megabytes_per_second / (sweep.pinned_copy_gbps * 1000), 1) << " % of it\n";
  out << "  medians of the repeats; * marks the fastest, or the first setting within 5 % of it (as fast, for fewer threads and less "
         "memory)."
         " Paste into the config:\n\n"
      << best_yaml(sweep);
  return out.str();
}

std::string sweep_json(const LoaderSweep& sweep) {
  nlohmann::json results = nlohmann::json::array();
  for (std::size_t i = 0; i < sweep.results.size(); ++i) {
    const auto& r = sweep.results[i];
    results.push_back({{"workers", r.setting.workers},
                       {"pin_memory", r.setting.pin_memory},
                       {"prefetch", r.setting.prefetch},
                       {"cache", cache_name(r.setting)},
                       {"batches_per_second", r.median_batches_per_second},
                       {"batches_per_second_runs", r.batches_per_second},
                       {"samples_per_second", r.samples_per_second},
                       {"megabytes_per_second", r.megabytes_per_second},
                       {"speedup", r.speedup},
                       {"gather_gbps", r.gather_gbps},
                       {"gather_rows", r.gather_rows},
                       {"best", i == sweep.best}});
  }
  const nlohmann::json out = {{"schema", "gputrain.profile.loader/1"},
                              {"device", sweep.device},
                              {"dataset", sweep.dataset},
                              {"samples", sweep.samples},
                              {"sample_bytes", sweep.sample_bytes},
                              {"batch_size", sweep.batch_size},
                              {"pinned_copy_gbps", sweep.pinned_copy_gbps},
                              {"device_copy_gbps", sweep.device_copy_gbps},
                              {"results", results},
                              {"best", results[sweep.best]},
                              {"yaml", best_yaml(sweep)}};
  return core::json_text(out, 2) + "\n";
}

std::string sweep_csv(const LoaderSweep& sweep) {
  std::string out = "workers,pin_memory,prefetch,cache,batches_per_second,samples_per_second,megabytes_per_second,speedup,best\n";
  for (std::size_t i = 0; i < sweep.results.size(); ++i) {
    const auto& r = sweep.results[i];
    out += std::to_string(r.setting.workers) + "," + (r.setting.pin_memory ? "true" : "false") + "," + std::to_string(r.setting.prefetch) +
           "," + cache_name(r.setting) + "," + fixed(r.median_batches_per_second, 3) + "," + fixed(r.samples_per_second, 1) + "," +
           fixed(r.megabytes_per_second, 3) + "," + fixed(r.speedup, 3) + "," + (i == sweep.best ? "true" : "false") + "\n";
  }
  return out;
}

std::string sweep_svg(const LoaderSweep& sweep) {
  // One line per (pinning, prefetch) over the streamed settings; caches as dashed levels.
  std::map<std::string, std::vector<std::pair<int, double>>> lines;
  std::vector<std::pair<std::string, double>> levels;
  int max_workers = 1;
  double max_rate = 1;
  for (const auto& r : sweep.results) {
    max_rate = std::max(max_rate, r.samples_per_second);
    if (r.setting.cache != data::CacheMode::none) {
      levels.emplace_back("cache " + cache_name(r.setting), r.samples_per_second);
      continue;
    }
    max_workers = std::max(max_workers, r.setting.workers);
    const std::string name =
        std::string("pin ") + (r.setting.pin_memory ? "on" : "off") + ", prefetch " + std::to_string(r.setting.prefetch);
    lines[name].emplace_back(r.setting.workers, r.samples_per_second);
  }
  // Workers 0 has one setting (prefetch 1): it starts every line.
  for (auto& [name, points] : lines) {
    for (const auto& r : sweep.results)
      if (r.setting.cache == data::CacheMode::none && r.setting.workers == 0 && (points.empty() || points.front().first != 0))
        points.insert(points.begin(), {0, r.samples_per_second});
    std::sort(points.begin(), points.end());
  }
  const double w = 640, h = 400, left = 70, right = 200, top = 40, bottom = 50;
  const double pw = w - left - right, ph = h - top - bottom;
  const auto x_of = [&](double workers) { return left + pw * workers / max_workers; };
  const double tick = round_tick(max_rate, 4);
  const double axis_top = std::ceil(max_rate * 1.05 / tick) * tick;  // a little room above the best
  const auto y_of = [&](double rate) { return top + ph * (1 - rate / axis_top); };
  static const char* colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg << "<text x=\"" << left << "\" y=\"22\" font-size=\"14\">samples/s by loader threads (" << sweep.device << ", batch "
      << sweep.batch_size << ")</text>\n";
  svg << "<line x1=\"" << left << "\" y1=\"" << top + ph << "\" x2=\"" << left + pw << "\" y2=\"" << top + ph << "\" stroke=\"black\"/>\n";
  svg << "<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\"" << top + ph << "\" stroke=\"black\"/>\n";
  for (const int workers : worker_counts(max_workers))
    svg << "<text x=\"" << x_of(workers) << "\" y=\"" << top + ph + 18 << "\" text-anchor=\"middle\">" << workers << "</text>\n";
  svg << "<text x=\"" << left + pw / 2 << "\" y=\"" << h - 10 << "\" text-anchor=\"middle\">data.num_workers</text>\n";
  svg << "<text x=\"16\" y=\"" << top + ph / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 16 " << top + ph / 2
      << ")\">samples/s</text>\n";
  for (int i = 0; i * tick <= axis_top * (1 + 1e-9); ++i) {
    const double rate = i * tick;
    svg << "<text x=\"" << left - 6 << "\" y=\"" << y_of(rate) + 4 << "\" text-anchor=\"end\">" << compact(rate) << "</text>\n";
  }
  int index = 0;
  for (const auto& [name, points] : lines) {
    const char* colour = colours[index % 8];
    svg << "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" << colour << "\" points=\"";
    for (const auto& [workers, rate] : points) svg << x_of(workers) << "," << y_of(rate) << " ";
    svg << "\"/>\n";
    for (const auto& [workers, rate] : points)
      svg << "<circle r=\"3\" fill=\"" << colour << "\" cx=\"" << x_of(workers) << "\" cy=\"" << y_of(rate) << "\"/>\n";
    svg << "<text x=\"" << left + pw + 12 << "\" y=\"" << top + 16 * index + 4 << "\" fill=\"" << colour << "\">" << name << "</text>\n";
    ++index;
  }
  for (const auto& [name, rate] : levels) {
    const char* colour = colours[index % 8];
    svg << "<line stroke-dasharray=\"6 4\" stroke=\"" << colour << "\" x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\"" << y_of(rate)
        << "\" y2=\"" << y_of(rate) << "\"/>\n";
    svg << "<text x=\"" << left + pw + 12 << "\" y=\"" << top + 16 * index + 4 << "\" fill=\"" << colour << "\">" << name
        << " (dashed)</text>\n";
    ++index;
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace gputrain::profile
