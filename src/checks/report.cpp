#include "gputrain/checks/report.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <sstream>

#include "core/json_text.hpp"
#include "gputrain/core/build_info.hpp"
#include "gputrain/core/printable.hpp"
#include "gputrain/core/text_encoding.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::checks {
namespace {

using nlohmann::json;

const char* mark(Status status) {
  switch (status) {
    case Status::pass:
      return "ok  ";
    case Status::warn:
      return "WARN";
    case Status::fail:
      return "FAIL";
    case Status::skip:
      return "skip";
    case Status::timeout:
      return "TIME";
  }
  return "????";
}

const char* color_of(Status status) {
  switch (status) {
    case Status::pass:
      return "\033[32m";
    case Status::warn:
      return "\033[33m";
    case Status::fail:
    case Status::timeout:
      return "\033[31m";
    case Status::skip:
      return "\033[2m";
  }
  return "";
}

template <typename T>
json optional_json(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

json gpu_json(const device::GpuInfo& g) {
  json pcie = nullptr;
  if (g.pcie) {
    pcie = {{"generation", g.pcie->generation},
            {"max_generation", g.pcie->max_generation},
            {"width", g.pcie->width},
            {"max_width", g.pcie->max_width}};
  }
  json ecc = nullptr;
  if (g.ecc) {
    ecc = {{"enabled", g.ecc->enabled},
           {"uncorrected_volatile", optional_json(g.ecc->uncorrected_volatile)},
           {"uncorrected_aggregate", optional_json(g.ecc->uncorrected_aggregate)},
           {"remapped_rows_uncorrectable", optional_json(g.ecc->remapped_rows_uncorrectable)},
           {"remap_pending", optional_json(g.ecc->remap_pending)},
           {"remap_failed", optional_json(g.ecc->remap_failed)}};
  }
  json throttle = nullptr;
  if (g.throttle_reasons) throttle = device::throttle_reason_names(*g.throttle_reasons);
  return {{"index", g.index},
          {"nvml_index", optional_json(g.nvml_index)},
          {"name", g.name},
          {"uuid", g.uuid},
          {"pci_bus_id", g.pci_bus_id},
          {"compute_capability", g.compute_capability()},
          {"sm_count", g.sm_count},
          {"memory_total_bytes", g.memory_total},
          {"memory_free_bytes", optional_json(g.memory_free)},
          {"sm_clock_mhz", optional_json(g.sm_clock_mhz)},
          {"sm_clock_max_mhz", optional_json(g.sm_clock_max_mhz)},
          {"memory_clock_mhz", optional_json(g.memory_clock_mhz)},
          {"memory_clock_max_mhz", optional_json(g.memory_clock_max_mhz)},
          {"pcie", pcie},
          {"mig_enabled", optional_json(g.mig_enabled)},
          {"ecc", ecc},
          {"persistence_mode", optional_json(g.persistence_mode)},
          {"temperature_c", optional_json(g.temperature_c)},
          {"power_draw_w", optional_json(g.power_draw_w)},
          {"power_limit_w", optional_json(g.power_limit_w)},
          {"throttle_reasons", throttle}};
}

json system_json(const device::SystemInfo& s) {
  json shm = nullptr;
  if (s.shm) shm = {{"total_bytes", s.shm->total}, {"available_bytes", s.shm->available}};
  return {{"os", s.os.pretty_name},
          {"os_id", s.os.id},
          {"os_version", s.os.version_id},
          {"kernel", s.kernel},
          {"architecture", s.architecture},
          {"cpu_model", s.cpu_model},
          {"logical_cores", s.logical_cores},
          {"affinity_cores", s.affinity_cores},
          {"cgroup_version", s.cgroup.version},
          {"cgroup_cpu_quota_cores", optional_json(s.cgroup.cpu_quota_cores)},
          {"usable_cores", s.usable_cores},
          {"ram_total_bytes", s.ram_total},
          {"ram_available_bytes", s.ram_available},
          {"memory_limit_bytes", optional_json(s.memory_limit)},
          {"address_space_limit_bytes", optional_json(s.address_space_limit)},
          {"shm", shm},
          {"container", {{"inside", s.container.inside}, {"runtime", s.container.runtime}, {"evidence", s.container.evidence}}}};
}

// The XML says it is UTF-8: text that is not (a path from a Latin-1 system) is read as Windows-1252.
std::string xml_escape(const std::string& text) {
  std::string out;
  for (const char c : core::as_utf8(text)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 forbids most control characters even when escaped.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t') out += c;
    }
  }
  return out;
}

}  // namespace

Tally tally(const std::vector<Outcome>& outcomes) {
  Tally t;
  for (const auto& o : outcomes) {
    switch (o.result.status) {
      case Status::pass:
        ++t.pass;
        break;
      case Status::warn:
        ++t.warn;
        break;
      case Status::fail:
        ++t.fail;
        break;
      case Status::skip:
        ++t.skip;
        break;
      case Status::timeout:
        ++t.timeout;
        break;
    }
  }
  return t;
}

void write_area_heading(std::ostream& out, const std::string& area, bool color) {
  out << (color ? "\033[1m" : "") << area << (color ? "\033[0m" : "") << "\n";
}

void write_outcome(std::ostream& out, const Outcome& o, bool color) {
  const Status s = o.result.status;
  out << "  " << (color ? color_of(s) : "") << "[" << mark(s) << "]" << (color ? "\033[0m" : "") << " " << o.title;
  if (!o.result.detail.empty()) out << ": " << core::printable(o.result.detail);  // it may quote an environment variable
  out << "\n";
  if ((s == Status::warn || s == Status::fail || s == Status::timeout) && !o.result.remedy.empty()) {
    out << "         fix: " << core::printable(o.result.remedy) << "\n";
  }
}

std::string summary_line(const std::vector<Outcome>& outcomes, double seconds, int exit_code, const std::string& command) {
  const Tally t = tally(outcomes);
  std::ostringstream line;
  line << command << ": " << t.pass << " pass, " << t.warn << " warn, " << t.fail << " fail, " << t.skip << " skip, " << t.timeout
       << " timeout in " << core::format_fixed(seconds, 2) << " s -> exit " << exit_code;
  return line.str();
}

std::string to_json(const Context& context, const std::vector<Outcome>& outcomes, double seconds, int exit_code,
                    const std::string& command) {
  const Tally t = tally(outcomes);
  const auto& build = core::build_info();
  json checks = json::array();
  for (const auto& o : outcomes) {
    json figures = json::array();
    for (const auto& f : o.result.figures) {
      figures.push_back({{"name", f.name}, {"value", f.value}, {"unit", f.unit}, {"expected", optional_json(f.expected)}});
    }
    checks.push_back({{"id", o.id},
                      {"area", o.area},
                      {"title", o.title},
                      {"status", to_string(o.result.status)},
                      {"detail", o.result.detail},
                      {"remedy", o.result.remedy},
                      {"duration_s", o.seconds},
                      {"figures", figures}});
  }
  json libraries = json::array();
  for (const auto& l : context.libraries) {
    libraries.push_back(
        {{"name", l.name}, {"soname", l.soname}, {"available", l.available}, {"version", l.version}, {"path", l.path}, {"error", l.error}});
  }
  json gpus = json::array();
  for (const auto& g : context.inventory.gpus) gpus.push_back(gpu_json(g));
  const auto& d = context.inventory.driver;
  const std::string status = t.fail + t.timeout > 0 ? "fail" : (t.warn > 0 ? "warn" : "pass");
  json doc = {
      {"schema_version", kVerifySchemaVersion},
      {"tool", "gputrain " + command},
      {"gputrain_version", std::string(build.gputrain_version)},
      {"level", context.level == Level::full ? "full" : "quick"},
      {"allow_cpu", context.allow_cpu},
      {"duration_s", seconds},
      {"exit_code", exit_code},
      {"summary", {{"status", status}, {"pass", t.pass}, {"warn", t.warn}, {"fail", t.fail}, {"skip", t.skip}, {"timeout", t.timeout}}},
      {"system", system_json(context.system)},
      {"driver",
       {{"cuda_loaded", d.cuda_loaded},
        {"cuda_error", d.cuda_error},
        {"cuda_driver_api_version", d.cuda_driver_api_version},
        {"nvml_loaded", d.nvml_loaded},
        {"nvml_error", d.nvml_error},
        {"version", d.driver_version},
        {"timed_out", context.discovery_timed_out}}},
      {"gpus", gpus},
      {"gpu_notes", context.inventory.notes},
      {"libraries", libraries},
      {"libtorch", {{"version", std::string(build.torch_version)}, {"cuda", std::string(build.torch_cuda_version)}}},
      {"checks", checks},
  };
  return core::json_text(doc, 2);
}

std::string to_junit(const std::vector<Outcome>& outcomes, double seconds, const std::string& command) {
  std::map<std::string, std::vector<const Outcome*>> by_area;
  std::vector<std::string> order;
  for (const auto& o : outcomes) {
    if (by_area.find(o.area) == by_area.end()) order.push_back(o.area);
    by_area[o.area].push_back(&o);
  }
  const Tally all = tally(outcomes);
  std::ostringstream xml;
  xml << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml << "<testsuites name=\"gputrain " << xml_escape(command) << "\" tests=\"" << outcomes.size() << "\" failures=\""
      << all.fail + all.timeout << "\" skipped=\"" << all.skip << "\" time=\"" << core::format_fixed(seconds, 3) << "\">\n";
  for (const auto& area : order) {
    const auto& members = by_area[area];
    int failures = 0, skipped = 0;
    double time = 0;
    for (const auto* o : members) {
      failures += o->result.status == Status::fail || o->result.status == Status::timeout;
      skipped += o->result.status == Status::skip;
      time += o->seconds;
    }
    xml << "  <testsuite name=\"" << xml_escape(area) << "\" tests=\"" << members.size() << "\" failures=\"" << failures << "\" skipped=\""
        << skipped << "\" time=\"" << core::format_fixed(time, 3) << "\">\n";
    for (const auto* o : members) {
      xml << "    <testcase classname=\"" << xml_escape(command) << "." << xml_escape(area) << "\" name=\"" << xml_escape(o->id)
          << "\" time=\"" << core::format_fixed(o->seconds, 3) << "\">\n";
      const std::string message = xml_escape(o->result.detail);
      switch (o->result.status) {
        case Status::fail:
        case Status::timeout:
          xml << "      <failure type=\"" << to_string(o->result.status) << "\" message=\"" << message
              << "\">fix: " << xml_escape(o->result.remedy) << "</failure>\n";
          break;
        case Status::skip:
          xml << "      <skipped message=\"" << message << "\"/>\n";
          break;
        case Status::warn:
          xml << "      <system-out>WARN: " << message << "\nfix: " << xml_escape(o->result.remedy) << "</system-out>\n";
          break;
        case Status::pass:
          xml << "      <system-out>" << message << "</system-out>\n";
          break;
      }
      xml << "    </testcase>\n";
    }
    xml << "  </testsuite>\n";
  }
  xml << "</testsuites>\n";
  return xml.str();
}

}  // namespace gputrain::checks
