#include "gputrain/data/safetensors.hpp"

#include <ATen/ATen.h>
#include <algorithm>
#include <nlohmann/json.hpp>

#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "array_bytes.hpp"
#include "core/json_text.hpp"
#include "gputrain/core/atomic_file.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/text_encoding.hpp"
#include "mapped_file.hpp"
#include "widen_unsigned.hpp"

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

// zlib's CRC-32 of `size` bytes (crc32_z takes any length; zlib's crc32 stops at 4 GiB). An empty
// tensor's null data pointer would make zlib return its initial value, dropping the CRC so far.
std::uint32_t crc32_of(std::uint32_t crc, const void* bytes, std::size_t size) {
  if (size == 0) return crc;
  return static_cast<std::uint32_t>(crc32_z(crc, static_cast<const Bytef*>(bytes), size));
}

std::string hex8(std::uint32_t value) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", value);
  return text;
}

// What the recorded CRC-32 covers before the data: every other metadata entry, then each tensor's
// name, dtype, shape and offsets, a line each. A renamed tensor or a changed figure that still
// parses is then caught as a changed weight is.
std::string described(const std::map<std::string, std::string>& metadata, const std::string& tensor_lines) {
  std::string text;
  for (const auto& [key, value] : metadata)
    if (key != kCrc32Key) text += key + '\0' + value + '\n';
  return text + tensor_lines;
}

std::string tensor_line(const std::string& name, const std::string& dtype, const std::vector<std::int64_t>& shape, std::size_t begin,
                        std::size_t end) {
  std::string line = name + '\0' + dtype + '\0';
  for (const auto d : shape) line += std::to_string(d) + ',';
  return line + '\0' + std::to_string(begin) + ',' + std::to_string(end) + '\n';
}

// The header length the first 8 bytes give (little-endian).
std::uint64_t header_length(const unsigned char* bytes) {
  std::uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | bytes[i];
  return length;
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       const std::map<std::string, std::string>& given_metadata) {
  // The header is JSON, which holds UTF-8: text that is not (a path typed on a Latin-1 system, in
  // the config's text) is read as Windows-1252, as the data's own names are.
  std::map<std::string, std::string> metadata;
  for (const auto& [key, value] : given_metadata) metadata[core::as_utf8(key)] = core::as_utf8(value);
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = metadata;  // the CRC-32 is added below, once the data is known
  std::vector<at::Tensor> cpu;
  std::string tensor_lines;
  std::size_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    auto t = tensor.detach().to(at::kCPU).contiguous();
    const std::size_t bytes = t.numel() * t.element_size();
    const auto dtype = dtype_name(t.scalar_type());
    header[name] = {{"dtype", dtype}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    tensor_lines += tensor_line(name, dtype, t.sizes().vec(), offset, offset + bytes);
    offset += bytes;
    cpu.push_back(std::move(t));
  }
  const auto text_covered = described(metadata, tensor_lines);
  auto crc = crc32_of(0, text_covered.data(), text_covered.size());
  for (const auto& t : cpu) crc = crc32_of(crc, t.data_ptr(), t.numel() * t.element_size());
  header["__metadata__"][kCrc32Key] = hex8(crc);
  std::string text = core::json_text(header);
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

namespace {

struct ByteRange {
  std::size_t begin, end;
  std::string name;
};

// As Python's safetensors validates a file: the tensors' byte ranges, in order, tile the data
// exactly, with no overlap (two tensors aliasing bytes), gap or bytes left after the last.
template <typename Malformed>
void check_tiling(std::vector<ByteRange> ranges, std::size_t data_bytes, const Malformed& malformed) {
  std::sort(ranges.begin(), ranges.end(), [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
  std::size_t at = 0;
  const ByteRange* previous = nullptr;
  for (const auto& r : ranges) {
    if (r.begin < at)
      throw malformed("tensor '" + r.name + "''s bytes [" + std::to_string(r.begin) + ", " + std::to_string(r.end) + ") overlap tensor '" +
                      previous->name + "''s [" + std::to_string(previous->begin) + ", " + std::to_string(previous->end) + ")");
    if (r.begin > at)
      throw malformed("a gap of " + std::to_string(r.begin - at) + " bytes before tensor '" + r.name + "' (at byte " + std::to_string(at) +
                      " of the data)");
    at = r.end;
    previous = &r;
  }
  if (at != data_bytes) throw malformed(std::to_string(data_bytes - at) + " bytes after the last tensor's data, which no tensor holds");
}

// One tensor of the header: its dtype, shape and byte range checked against the file, then a view
// of the mapping (or a copy, where the data is not aligned for its type). Adds its line to `tensor_lines`.
template <typename Malformed>
at::Tensor read_entry(const std::string& name, const nlohmann::ordered_json& entry, const std::shared_ptr<const MappedFile>& file,
                      std::size_t data_start, std::string& tensor_lines, std::vector<ByteRange>& ranges, const Malformed& malformed) {
  const auto* bytes = file->data();
  const std::size_t size = file->size();
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::vector<std::size_t> offsets;
  try {
    dtype = entry.at("dtype").get<std::string>();
    shape = entry.at("shape").get<std::vector<std::int64_t>>();
    offsets = entry.at("data_offsets").get<std::vector<std::size_t>>();
  } catch (const nlohmann::json::exception&) {
    throw malformed("tensor '" + name + "' lacks a string dtype, an integer shape or two data_offsets");
  }
  at::ScalarType type = at::kFloat;
  bool known = false;
  for (const auto& [dname, t] : dtype_names())
    if (dtype == dname) type = t, known = true;
  // Python's package writes these too (torch's uint16/32/64); read, widened, never written.
  for (const auto& [dname, t] : {std::pair{"U16", at::kUInt16}, std::pair{"U32", at::kUInt32}, std::pair{"U64", at::kUInt64}})
    if (dtype == dname) type = t, known = true;
  if (!known) {
    std::string readable;
    for (const auto& [dname, t] : dtype_names()) readable += dname + ", ";
    throw UsageError("'" + file->path() + "': tensor '" + name + "' holds dtype " + dtype + ", which gputrain cannot read",
                     "save it as one of " + readable + "U16, U32 or U64 (tensor.float() for float32)");
  }
  for (const auto d : shape)
    if (d < 0) throw malformed("tensor '" + name + "' has a negative dimension");
  const std::size_t item = c10::elementSize(type);
  const auto bytes_needed = array_bytes(shape, item);
  if (!bytes_needed) throw malformed("tensor '" + name + "': its shape " + shape_text(shape) + " is too large for any file");
  const std::size_t count = *bytes_needed / item;
  if (offsets.size() != 2 || offsets[1] < offsets[0] || offsets[1] - offsets[0] != *bytes_needed || offsets[1] > size - data_start)
    throw malformed("tensor '" + name + "' has data offsets that do not match its shape" +
                    (offsets.size() == 2 && offsets[1] > size - data_start ? " (the file is truncated)" : ""));
  tensor_lines += tensor_line(name, dtype, shape, offsets[0], offsets[1]);
  ranges.push_back({offsets[0], offsets[1], name});
  const auto* data = bytes + data_start + offsets[0];
  at::Tensor t;
  if (reinterpret_cast<std::uintptr_t>(data) % item == 0) {  // a view of the mapping: read lazily by the OS
    t = at::from_blob(
        const_cast<unsigned char*>(data), shape, [file](void*) {}, at::TensorOptions().dtype(type));
  } else {
    t = at::empty(shape, at::TensorOptions().dtype(type));
    if (count > 0) std::memcpy(t.data_ptr(), data, count * item);  // an empty tensor has no data pointer
  }
  return widen_unsigned(t, "'" + file->path() + "': tensor '" + name + "'");
}

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> read_safetensors(const std::string& path, std::map<std::string, std::string>* metadata) {
  const auto file = MappedFile::open(path);
  const auto* bytes = file->data();
  const std::size_t size = file->size();
  const auto malformed = [&](const std::string& why) {
    return UsageError("'" + path + "' is not a valid safetensors file: " + why, "write it with safetensors.torch.save_file");
  };
  if (size < 8) throw malformed("shorter than its 8-byte header length");
  // A .pt file is the usual mix-up: torch.save and LibTorch both write zip archives.
  if (bytes[0] == 'P' && bytes[1] == 'K' && bytes[2] == 3 && bytes[3] == 4)
    throw UsageError("'" + path + "' is not a safetensors file but a zip archive: a .pt file from torch.save or a gputrain checkpoint",
                     "save the weights with safetensors.torch.save_file(model.state_dict(), 'w.safetensors'); to continue a gputrain run "
                     "from its checkpoint, set checkpoint.resume to the .pt file instead");
  const std::uint64_t length = header_length(bytes);
  if (length > size - 8) throw malformed("header length " + std::to_string(length) + " runs past the end of the file");
  nlohmann::ordered_json header;  // keeps the file's order
  try {
    header = nlohmann::ordered_json::parse(bytes + 8, bytes + 8 + length);
  } catch (const nlohmann::json::exception& e) {
    throw malformed(std::string("header is not JSON: ") + e.what());
  }
  if (!header.is_object()) throw malformed("header is not a JSON object");
  const std::size_t data_start = 8 + length;
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  std::map<std::string, std::string> found_metadata;
  std::string tensor_lines;
  std::vector<ByteRange> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) throw malformed("__metadata__ is not a JSON object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) throw malformed("__metadata__ value '" + key + "' is not a string");
        found_metadata[key] = value.get<std::string>();
      }
      continue;
    }
    tensors.emplace_back(name, read_entry(name, entry, file, data_start, tensor_lines, ranges, malformed));
  }
  check_tiling(std::move(ranges), size - data_start, malformed);
  // A file gputrain wrote records a CRC-32 of its metadata, tensor table and data: a byte a disk or
  // a copy changed since is refused here rather than loaded as a wrong weight (the format itself
  // has no checksum). Checking reads every page of the data once.
  if (const auto recorded = found_metadata.find(kCrc32Key); recorded != found_metadata.end()) {
    const auto text_covered = described(found_metadata, tensor_lines);
    const auto now = hex8(crc32_of(crc32_of(0, text_covered.data(), text_covered.size()), bytes + data_start, size - data_start));
    if (now != recorded->second)
      throw UsageError("'" + path + "' is damaged: it does not match the CRC-32 gputrain recorded in its metadata (" + recorded->second +
                           ", now " + now + "): a disk or a copy changed the file after it was written",
                       "copy it again from the run folder that wrote it, or use that run's checkpoints/best.pt");
  }
  if (metadata) *metadata = std::move(found_metadata);
  return tensors;
}

bool starts_like_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char bytes[9] = {};
  if (!in.read(reinterpret_cast<char*>(bytes), sizeof bytes)) return false;
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return !ec && header_length(bytes) <= size - 8 && bytes[8] == '{';
}

}  // namespace gputrain::data
