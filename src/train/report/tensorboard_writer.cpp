#include "gputrain/train/tensorboard_writer.hpp"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "crc32c.hpp"
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

// Makes `dir` and names a new event file in it, as TensorBoard's own writers name theirs.
std::string new_event_file(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  return (std::filesystem::path(dir) /
          ("events.out.tfevents." + std::to_string(static_cast<long long>(wall_time())) + "." + host + ".gputrain"))
      .string();
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(const std::string& dir) : path_(new_event_file(dir)), file_(path_) {
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
  std::string summary;  // Summary { repeated Value value = 1; }
  put_bytes_field(summary, 1, summary_value);
  std::string event = event_header(step);
  put_bytes_field(event, 5, summary);
  add_record(event);
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
