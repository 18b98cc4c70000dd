#include "gputrain/data/safetensors.hpp"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <sstream>

#include "gputrain/core/atomic_file.hpp"
#include "gputrain/core/error.hpp"

namespace gputrain::data {
namespace {

const std::vector<std::pair<std::string, at::ScalarType>>& dtype_names() {
  static const std::vector<std::pair<std::string, at::ScalarType>> names = {
      {"F64", at::kDouble}, {"F32", at::kFloat}, {"F16", at::kHalf}, {"BF16", at::kBFloat16}, {"I64", at::kLong},
      {"I32", at::kInt},    {"I16", at::kShort}, {"I8", at::kChar},  {"U8", at::kByte},       {"BOOL", at::kBool}};
  return names;
}

std::string dtype_name(at::ScalarType type) {
  for (const auto& [name, t] : dtype_names())
    if (t == type) return name;
  throw Error(std::string("safetensors: cannot store dtype ") + c10::toString(type), "convert the tensor to float32 first");
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> cpu;
  std::size_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    auto t = tensor.detach().to(at::kCPU).contiguous();
    const std::size_t bytes = t.numel() * t.element_size();
    header[name] = {{"dtype", dtype_name(t.scalar_type())}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    cpu.push_back(std::move(t));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the format pads the header to 8 bytes with spaces
  const std::uint64_t length = text.size();
  core::write_file_atomically(path, [&](const std::function<void(std::string_view)>& append) {
    char prefix[8];
    for (int i = 0; i < 8; ++i) prefix[i] = static_cast<char>((length >> (8 * i)) & 0xff);  // little-endian
    append(std::string_view(prefix, 8));
    append(text);
    for (const auto& t : cpu) append(std::string_view(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size()));
  });
}

std::vector<std::pair<std::string, at::Tensor>> read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot open safetensors file '" + path + "'", "check the path");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();
  const auto malformed = [&](const std::string& why) {
    return UsageError("'" + path + "' is not a valid safetensors file: " + why, "write it with safetensors.torch.save_file");
  };
  if (bytes.size() < 8) throw malformed("shorter than its 8-byte header length");
  std::uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  if (length > bytes.size() - 8) throw malformed("header length past the end of the file");
  nlohmann::ordered_json header;  // keeps the file's order
  try {
    header = nlohmann::ordered_json::parse(bytes.substr(8, length));
  } catch (const nlohmann::json::exception& e) {
    throw malformed(std::string("header is not JSON: ") + e.what());
  }
  const std::size_t data_start = 8 + length;
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    at::ScalarType type = at::kFloat;
    bool known = false;
    for (const auto& [dname, t] : dtype_names())
      if (entry.at("dtype").get<std::string>() == dname) type = t, known = true;
    if (!known) throw malformed("tensor '" + name + "' has unsupported dtype " + entry.at("dtype").dump());
    const auto shape = entry.at("shape").get<std::vector<std::int64_t>>();
    const auto offsets = entry.at("data_offsets").get<std::vector<std::size_t>>();
    auto t = at::empty(shape, at::TensorOptions().dtype(type));
    const std::size_t size = t.numel() * t.element_size();
    if (offsets.size() != 2 || offsets[1] - offsets[0] != size || data_start + offsets[1] > bytes.size())
      throw malformed("tensor '" + name + "' has data offsets that do not match its shape");
    std::memcpy(t.data_ptr(), bytes.data() + data_start + offsets[0], size);
    tensors.emplace_back(name, std::move(t));
  }
  return tensors;
}

}  // namespace gputrain::data
