#include "gputrain/train/tensorboard_writer.hpp"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "crc32c.hpp"
#include "gputrain/core/text_encoding.hpp"
#include "gputrain/core/write_error.hpp"

namespace gputrain::train {
namespace {

// Protobuf wire format, just what Event and Summary need.
void put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

template <typename T>
void put_little_endian(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // x86-64 and aarch64 are little-endian
  out.append(bytes, sizeof(T));
}

void put_bytes_field(std::string& out, int field, const std::string& bytes) {
  put_varint(out, static_cast<std::uint64_t>(field) << 3 | 2);
  put_varint(out, bytes.size());
  out += bytes;
}

// A proto3 string must be UTF-8: TensorBoard's reader drops a message with one that is not (a path
// typed on a Latin-1 system), so such text is read as Windows-1252 first.
void put_string_field(std::string& out, int field, const std::string& text) { put_bytes_field(out, field, core::as_utf8(text)); }

void put_double_field(std::string& out, int field, double value) {
  put_varint(out, static_cast<std::uint64_t>(field) << 3 | 1);  // 64-bit
  put_little_endian(out, value);
}

void put_varint_field(std::string& out, int field, std::uint64_t value) {
  put_varint(out, static_cast<std::uint64_t>(field) << 3);
  put_varint(out, value);
}

// SummaryMetadata { PluginData plugin_data = 1 { string plugin_name = 1; bytes content = 2; } }
std::string plugin_metadata(const std::string& plugin, const std::string& content) {
  std::string data;
  put_bytes_field(data, 1, plugin);
  if (!content.empty()) put_bytes_field(data, 2, content);
  std::string metadata;
  put_bytes_field(metadata, 1, data);
  return metadata;
}

// google.protobuf.Value { double number_value = 2; string string_value = 3; bool bool_value = 4; }
std::string protobuf_value(const HParamValue& value) {
  std::string out;
  if (const auto* number = std::get_if<double>(&value)) put_double_field(out, 2, *number);
  if (const auto* text = std::get_if<std::string>(&value)) put_string_field(out, 3, *text);
  if (const auto* flag = std::get_if<bool>(&value)) put_varint_field(out, 4, *flag ? 1 : 0);
  return out;
}

double wall_time() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// Event { double wall_time = 1; int64 step = 2; oneof { string file_version = 3; Summary summary = 5; } }
std::string event_header(std::int64_t step) {
  std::string event;
  event.push_back(0x09);  // field 1, 64-bit
  put_little_endian(event, wall_time());
  event.push_back(0x10);  // field 2, varint
  put_varint(event, static_cast<std::uint64_t>(step));
  return event;
}

// An Event holding a Summary { repeated Value value = 1; } of one value.
std::string summary_event(const std::string& summary_value, std::int64_t step) {
  std::string summary;
  put_bytes_field(summary, 1, summary_value);
  std::string event = event_header(step);
  put_bytes_field(event, 5, summary);
  return event;
}

// Makes `dir` and names a new event file in it, as TensorBoard's own writers name theirs.
std::string new_event_file(const std::string& dir, const std::string& suffix) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  return (std::filesystem::path(dir) /
          ("events.out.tfevents." + std::to_string(static_cast<long long>(wall_time())) + "." + host + ".gputrain" + suffix))
      .string();
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(const std::string& dir, const std::string& suffix) : path_(new_event_file(dir, suffix)), file_(path_) {
  std::string event = event_header(0);
  put_bytes_field(event, 3, "brain.Event:2");
  add_record(event);
  if (const auto error = flush()) throw core::write_error("write", path_, *error);
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, std::int64_t step) {
  std::string summary_value;  // Summary.Value { string tag = 1; float simple_value = 2; }
  put_bytes_field(summary_value, 1, tag);
  summary_value.push_back(0x15);  // field 2, 32-bit
  put_little_endian(summary_value, static_cast<float>(value));
  add_record(summary_event(summary_value, step));
}

void TensorBoardWriter::add_histogram(const std::string& tag, const Histogram& h, std::int64_t step) {
  std::string histo;  // HistogramProto; the repeated doubles packed
  put_double_field(histo, 1, h.min);
  put_double_field(histo, 2, h.max);
  put_double_field(histo, 3, h.num);
  put_double_field(histo, 4, h.sum);
  put_double_field(histo, 5, h.sum_squares);
  for (const auto* values : {&h.bucket_limits, &h.buckets}) {
    std::string packed;
    for (const double v : *values) put_little_endian(packed, v);
    put_bytes_field(histo, values == &h.bucket_limits ? 6 : 7, packed);
  }
  std::string summary_value;  // Summary.Value { string tag = 1; HistogramProto histo = 5; }
  put_bytes_field(summary_value, 1, tag);
  put_bytes_field(summary_value, 5, histo);
  add_record(summary_event(summary_value, step));
}

void TensorBoardWriter::add_text(const std::string& tag, const std::string& text, std::int64_t step) {
  std::string tensor;  // TensorProto { DataType dtype = 1 (DT_STRING 7); TensorShapeProto tensor_shape = 2; bytes string_val = 8; }
  put_varint_field(tensor, 1, 7);
  put_bytes_field(tensor, 2, "");
  put_string_field(tensor, 8, text);  // bytes, which the Text tab shows as UTF-8
  std::string version;                // TextPluginData { int32 version = 1; }: 0, empty on the wire
  std::string summary_value;          // Summary.Value { tag = 1; TensorProto tensor = 8; SummaryMetadata metadata = 9; }
  put_bytes_field(summary_value, 1, tag);
  put_bytes_field(summary_value, 8, tensor);
  put_bytes_field(summary_value, 9, plugin_metadata("text", version));
  add_record(summary_event(summary_value, step));
}

// The hparams plugin's session start: HParamsPluginData { int32 version = 1 (0);
// SessionStartInfo session_start_info = 3 { map<string, Value> hparams = 1; double start_time_secs = 5; } },
// under its tag with an empty float tensor, as tensorboard.plugins.hparams.summary writes it.
void TensorBoardWriter::add_hparams(const std::map<std::string, HParamValue>& hparams, double start_time_seconds) {
  std::string start;
  for (const auto& [name, value] : hparams) {
    std::string entry;  // a map entry: { string key = 1; Value value = 2; }
    put_string_field(entry, 1, name);
    put_bytes_field(entry, 2, protobuf_value(value));
    put_bytes_field(start, 1, entry);
  }
  put_double_field(start, 5, start_time_seconds);
  std::string plugin_data;
  put_bytes_field(plugin_data, 3, start);
  std::string shape;  // TensorShapeProto { Dim dim = 2 { int64 size = 1; } }: [0]
  put_bytes_field(shape, 2, "");
  std::string tensor;
  put_varint_field(tensor, 1, 1);  // DT_FLOAT
  put_bytes_field(tensor, 2, shape);
  std::string summary_value;
  put_bytes_field(summary_value, 1, "_hparams_/session_start_info");
  put_bytes_field(summary_value, 8, tensor);
  put_bytes_field(summary_value, 9, plugin_metadata("hparams", plugin_data));
  add_record(summary_event(summary_value, 0));
}

TensorBoardWriter::~TensorBoardWriter() { flush(); }

std::optional<int> TensorBoardWriter::flush() {
  if (pending_.empty()) return std::nullopt;
  const auto error = file_.append(pending_);
  pending_.clear();
  return error;
}

// TFRecord: uint64 length, uint32 masked_crc32c(length), data, uint32 masked_crc32c(data).
void TensorBoardWriter::add_record(const std::string& event) {
  std::string record;
  put_little_endian(record, static_cast<std::uint64_t>(event.size()));
  put_little_endian(record, masked_crc32c(record));
  record += event;
  put_little_endian(record, masked_crc32c(event));
  pending_ += record;
}

}  // namespace gputrain::train
