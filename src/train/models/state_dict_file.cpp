#include "state_dict_file.hpp"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <optional>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "state_dict_pickle.hpp"

namespace gputrain::train {
namespace {

// The dict's tensors by name, or nothing when a value is not a tensor (a checkpoint's dict).
std::optional<NamedTensors> tensors_of(const c10::impl::GenericDict& dict) {
  NamedTensors tensors;
  for (const auto& entry : dict) {
    if (entry.key().isString() && entry.key().toStringRef() == kBuildStateKey) continue;  // the state_dict's _metadata
    if (!entry.key().isString() || !entry.value().isTensor()) return std::nullopt;
    tensors.emplace_back(entry.key().toStringRef(), entry.value().toTensor());
  }
  return tensors;
}

const char* const kHolders[] = {"state_dict", "model_state_dict", "model", "module"};

}  // namespace

bool is_torch_save_archive(const std::string& path) {
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    return reader.hasRecord("data.pkl") && !reader.hasRecord("constants.pkl");
  } catch (const c10::Error&) {
    return false;
  }
}

// The file's data.pkl unpickled by LibTorch, its OrderedDicts read as dicts (state_dict_pickle.hpp)
// and its tensors' storages read from the archive's data/ records.
c10::IValue unpickle_torch_save(const std::string& path) {
  caffe2::serialize::PyTorchStreamReader reader(path);
  const auto [data, size] = reader.getRecord("data.pkl");
  unsigned char unknown = 0;
  const auto pickle = ordered_dicts_as_dicts(std::string_view(static_cast<const char*>(data.get()), size), &unknown);
  if (!pickle)
    throw c10::Error({__func__, __FILE__, static_cast<std::uint32_t>(__LINE__)},
                     unknown != 0 ? "its pickle holds opcode 0x" + c10::str(std::hex, static_cast<int>(unknown)) +
                                        ", of a pickle protocol above torch.save's default (2)"
                                  : std::string("its pickle is damaged: cut short, or an opcode's argument out of place"));
  std::size_t read = 0;
  const auto reader_fn = [&](char* buffer, std::size_t wanted) {
    const auto n = std::min(wanted, pickle->size() - read);
    std::memcpy(buffer, pickle->data() + read, n);
    read += n;
    return n;
  };
  const auto read_record = [&](const std::string& name) { return std::get<0>(reader.getRecord("data/" + name)); };
  torch::jit::Unpickler unpickler(reader_fn, nullptr, nullptr, read_record, c10::Device(at::kCPU));
  return unpickler.parse_ivalue();
}

NamedTensors read_torch_save_state(const std::string& path, const std::string& key) {
  c10::IValue value;
  try {
    value = unpickle_torch_save(path);
  } catch (const c10::Error& e) {
    throw UsageError(key + ": '" + path + "' is a torch.save file LibTorch cannot unpickle: " + e.what_without_backtrace(),
                     "save the state_dict alone in Python: torch.save(model.state_dict(), 'w.pth'), or "
                     "safetensors.torch.save_file(model.state_dict(), 'w.safetensors')");
  }
  if (value.isGenericDict()) {
    const auto dict = value.toGenericDict();
    if (auto tensors = tensors_of(dict); tensors && !tensors->empty()) return *tensors;
    for (const char* holder : kHolders)
      if (dict.contains(holder) && dict.at(holder).isGenericDict())
        if (auto tensors = tensors_of(dict.at(holder).toGenericDict()); tensors && !tensors->empty()) return *tensors;
  }
  throw UsageError(key + ": '" + path + "' holds no state_dict: not a dict of tensors, nor a dict with one under " +
                       core::join(std::vector<std::string>(std::begin(kHolders), std::end(kHolders))),
                   "save the state_dict in Python: torch.save(model.state_dict(), 'w.pth')");
}

}  // namespace gputrain::train
