#include "gputrain/train/model_registry.hpp"

#include <c10/util/Exception.h>

#include <cstdint>
#include <map>
#include <mutex>

#include "builtin_models.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/error_text.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/device/system_info.hpp"
#include "gputrain/memory/cpu_allocator.hpp"
#include "module_model.hpp"

namespace gputrain::train {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, ModelFactory> factories;
  std::map<std::string, std::vector<std::string>> builtin_keys;  // what each built-in's factory reads of ModelConfig
  Registry() {
    const std::vector<std::string> resnet_keys{"model.stem"};
    add("mlp", models::make_mlp, {"model.hidden", "model.activation", "model.dropout", "model.norm"});
    add("small_cnn", models::make_small_cnn, {"model.width", "model.dropout"});
    add(
        "resnet18", [](const ModelSpec& s) { return models::make_resnet(s, 18); }, resnet_keys);
    add(
        "resnet34", [](const ModelSpec& s) { return models::make_resnet(s, 34); }, resnet_keys);
    add(
        "resnet50", [](const ModelSpec& s) { return models::make_resnet(s, 50); }, resnet_keys);
    add("transformer", models::make_transformer,
        {"model.layers", "model.d_model", "model.heads", "model.ff_dim", "model.dropout", "model.activation", "model.norm_first"});
  }
  void add(const std::string& name, ModelFactory factory, std::vector<std::string> keys) {
    factories[name] = std::move(factory);
    builtin_keys[name] = std::move(keys);
  }
};

Registry& registry() {
  static Registry instance;
  return instance;
}

}  // namespace

void register_model(const std::string& name, ModelFactory factory) {
  if (name == "auto")
    throw UsageError("register_model: 'auto' cannot name a model",
                     "model.name: auto picks a built-in model by the samples' shape; give yours another name");
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.factories[name] = std::move(factory);
  r.builtin_keys.erase(name);  // a replaced built-in reads what its new factory reads
}

std::string model_for_samples(const std::vector<std::int64_t>& sample_shape) { return sample_shape.size() == 3 ? "small_cnn" : "mlp"; }

std::optional<std::vector<std::string>> model_keys_read(const std::string& name) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto it = r.builtin_keys.find(name);
  if (it == r.builtin_keys.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> registered_models() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& entry : r.factories) names.push_back(entry.first);
  return names;
}

namespace {

// While a model is built, the process may grow by 90 % of the RAM that is free, no more: Linux
// hands out pages it does not have, so a model too large in many small parameters (model.layers:
// 100000) grew until the kernel's OOM killer ended the process. The counting allocator refuses
// the allocation past it instead (where it counts: a run's set-up installs it).
class WithinFreeRam {
 public:
  WithinFreeRam() {
    const auto stats = memory::cpu_memory_stats();
    const auto resident = static_cast<std::uint64_t>(device::host_rss_bytes());
    if (stats.cache_bound == 0 || resident == 0) return;
    if (stats.resident_limit != 0) {  // a caller's limit holds
      growth_ = stats.resident_limit > resident ? stats.resident_limit - resident : 1;
      return;
    }
    growth_ = memory::hold_to_free_ram();
    owned_ = growth_ != 0;
  }
  ~WithinFreeRam() {
    if (owned_) memory::set_cpu_resident_limit(0);
  }
  WithinFreeRam(const WithinFreeRam&) = delete;
  WithinFreeRam& operator=(const WithinFreeRam&) = delete;
  std::uint64_t growth() const { return growth_; }

 private:
  std::uint64_t growth_ = 0;
  bool owned_ = false;
};

[[noreturn]] void refuse_too_large(const ModelSpec& spec, const std::string& why) {
  throw UsageError("model " + spec.config.name + " cannot be built: " + why,
                   "make the model smaller (model.hidden, model.width, model.layers, model.d_model, model.ff_dim) or check data.shape "
                   "and data.image_size, which size its first layer, and data.classes, which sizes its last (" +
                       core::counted(spec.outputs, "output") + " here)");
}

// One parameter the system's allocator refused: its words are not the fix.
void refuse_if_refused(const ModelSpec& spec, const std::string& what) {
  if (const auto asked = core::failed_cpu_allocation_bytes(what))
    refuse_too_large(spec, "a parameter needs " + core::format_bytes(*asked) + " at once, more than is free");
}

}  // namespace

void require_room_for_copies(const ModelSpec& spec, std::uint64_t part_bytes, std::int64_t copies, const std::string& part) {
  const auto limit = memory::cpu_memory_stats().resident_limit;
  if (limit == 0 || copies <= 0 || part_bytes == 0) return;
  const auto resident = static_cast<std::uint64_t>(device::host_rss_bytes());
  const auto room = limit > resident ? limit - resident : 0;
  const auto count = static_cast<std::uint64_t>(copies);
  if (part_bytes <= room / count) return;
  const auto need = part_bytes > UINT64_MAX / count ? std::string("more than 2^64 bytes") : core::format_bytes(part_bytes * count);
  refuse_too_large(spec, "its " + std::to_string(copies) + " " + part + "s take " + need + " (" + core::format_bytes(part_bytes) +
                             " each), more than the " + core::format_bytes(room) + " of RAM that is free");
}

std::unique_ptr<Model> build_model(const ModelSpec& spec) {
  if (!spec.config.torchscript.empty()) return load_torchscript(spec.config.torchscript);
  ModelFactory factory;
  {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.factories.find(spec.config.name);
    if (it == r.factories.end())
      throw UsageError("model.name: no model named '" + spec.config.name + "'",
                       "pick a registered model (mlp, small_cnn, resnet18, resnet34, resnet50, transformer) or register_model() yours");
    factory = it->second;
  }
  const WithinFreeRam within;
  try {
    return wrap_module(factory(spec), spec.config.name);
  } catch (const c10::OutOfMemoryError& e) {
    // The limit above (or the user's cap): many parameters, none too large alone.
    if (within.growth() != 0 && std::string(e.what()).find("past its limit") != std::string::npos)
      refuse_too_large(spec, "it takes more than the " + core::format_bytes(within.growth()) + " of RAM that is free");
    refuse_if_refused(spec, e.what_without_backtrace());
    throw;
  } catch (const c10::Error& e) {  // the same without the counting allocator, or a size no storage can count
    refuse_if_refused(spec, e.what_without_backtrace());
    if (std::string(e.what_without_backtrace()).find("Storage size calculation overflowed") == std::string::npos) throw;
    refuse_too_large(spec, "a parameter's size is past 2^63 bytes");
  }
}

}  // namespace gputrain::train
