#include "gputrain/data/numpy_format.hpp"

#include <ATen/ATen.h>
#include <zip.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include "array_bytes.hpp"
#include "gputrain/core/error.hpp"
#include "mapped_file.hpp"
#include "npz_pieces.hpp"
#include "path_text.hpp"
#include "stand_in_file.hpp"
#include "widen_unsigned.hpp"

namespace gputrain::data {
namespace {

struct NpyHeader {
  at::ScalarType dtype = at::kFloat;
  bool big_endian = false, fortran_order = false;
  std::string numpy_dtype;  // as found, for messages
  std::vector<std::int64_t> shape;
  std::size_t data_offset = 0;
};

UsageError malformed(const std::string& name, const std::string& why) {
  return UsageError("'" + name + "' is not a valid .npy array: " + why, "write it with numpy.save (or numpy.savez for .npz)");
}

// A zip archive named .npy is one of two mix-ups: an .npz (numpy.savez; its first member is an
// array, "x.npy") or a torch.save file (its first member "archive/data.pkl"). Told by that name.
void refuse_zip_named_npy(const unsigned char* bytes, std::size_t size, const std::string& name) {
  if (size < 30 || std::memcmp(bytes, "PK\x03\x04", 4) != 0) return;
  const std::size_t length = bytes[26] | (bytes[27] << 8);  // the first local header's file name
  const std::string first(reinterpret_cast<const char*>(bytes) + 30, std::min(length, size - 30));
  if (first.size() > 4 && first.compare(first.size() - 4, 4, ".npy") == 0)
    throw UsageError("'" + name + "' is an .npz archive (numpy.savez writes one), not a .npy array",
                     "set data.source: npz, with data.features and data.labels naming its arrays (data.features: [x], "
                     "data.labels: y), or name the file .npz");
  if (first.find('/') != std::string::npos)
    throw UsageError("'" + name + "' is a torch.save file, not a .npy array",
                     "save the tensor with numpy: numpy.save('x.npy', t.numpy()), or as safetensors: "
                     "safetensors.torch.save_file({'x': x, 'y': y}, 'data.safetensors')");
}

// descr is '<f4', '>i8', '|u1', '<c16', ...: byte order, kind, item size.
void parse_descr(const std::string& descr, const std::string& name, NpyHeader& h) {
  h.numpy_dtype = descr;
  if (descr.size() >= 2 && descr[1] == 'O')  // numpy.save(..., allow_pickle=True) of objects: pickles, not numbers
    throw UsageError("'" + name + "' holds Python objects (dtype '" + descr + "'), which gputrain cannot read",
                     "save a numeric array: numpy.asarray(values, dtype=numpy.float32) (or an integer type for labels); "
                     "an object array usually means rows of different lengths or a column of strings");
  if (descr.size() >= 2 && (descr[1] == 'U' || descr[1] == 'S'))  // numpy.array(['cat', 'dog']): class names, most likely
    throw UsageError("'" + name + "' holds strings (dtype '" + descr + "'), and gputrain reads numbers",
                     "for class names as labels, save their ids: names, ids = numpy.unique(y, return_inverse=True) (ids in the "
                     "names' sorted order; keep names to read predictions); or write a CSV, whose label column may hold class names");
  if (descr.size() < 3) throw malformed(name, "dtype '" + descr + "' is not a plain numeric dtype");
  const char order = descr[0], kind = descr[1];
  const std::string size_text = descr.substr(2);
  const bool dates = kind == 'M' || kind == 'm';  // datetime64 / timedelta64: '<M8[s]'
  if (dates || !std::all_of(size_text.begin(), size_text.end(), ::isdigit) ||
      (order != '<' && order != '>' && order != '|' && order != '='))
    throw UsageError("'" + name + "' holds dtype '" + descr + "', which gputrain cannot read",
                     dates ? "save numbers made of the dates: seconds as x.astype('datetime64[s]').astype(numpy.float64) (timedelta64 "
                             "alike), or a day of the year or an hour as features"
                           : "save a numeric array (bool, int, uint or float): structured, string and object arrays are not supported");
  if (size_text.size() > 2) throw malformed(name, "dtype '" + descr + "' has an item size no numeric dtype has");
  const int size = std::stoi(size_text);
  h.big_endian = order == '>' && size > 1;
  struct Kind {
    char kind;
    int size;
    at::ScalarType type;
  };
  static const Kind kinds[] = {{'b', 1, at::kBool},         {'i', 1, at::kChar},          {'i', 2, at::kShort},  {'i', 4, at::kInt},
                               {'i', 8, at::kLong},         {'u', 1, at::kByte},          {'u', 2, at::kUInt16}, {'u', 4, at::kUInt32},
                               {'u', 8, at::kUInt64},       {'f', 2, at::kHalf},          {'f', 4, at::kFloat},  {'f', 8, at::kDouble},
                               {'c', 8, at::kComplexFloat}, {'c', 16, at::kComplexDouble}};
  for (const auto& k : kinds)
    if (k.kind == kind && k.size == size) {
      h.dtype = k.type;
      return;
    }
  throw UsageError("'" + name + "' holds dtype '" + descr + "', which gputrain cannot read",
                   "convert it with array.astype(numpy.float32) (or an integer type for labels) before saving");
}

// numpy's _MAX_HEADER_SIZE: larger headers need max_header_size (or allow_pickle) to load there.
constexpr std::size_t kMaxHeaderBytes = 10000;
constexpr std::size_t kMaxDims = 64;  // numpy's NPY_MAXDIMS

// The text of key `key`'s value in the header's dict literal: between `open` and the next `close`
// (quotes, parentheses), or with `open` 0 the word there (True, False). Parsed by hand: a header
// is the file's, and std::regex recurses per character on long input.
std::optional<std::string> dict_value(const std::string& header, const std::string& key, char open, char close) {
  auto at = header.find("'" + key + "'");
  if (at == std::string::npos) return std::nullopt;
  at += key.size() + 2;
  const auto skip_spaces = [&] {
    while (at < header.size() && std::isspace(static_cast<unsigned char>(header[at]))) ++at;
  };
  skip_spaces();
  if (at >= header.size() || header[at] != ':') return std::nullopt;
  ++at;
  skip_spaces();
  if (open == 0) {
    const auto start = at;
    while (at < header.size() && std::isalpha(static_cast<unsigned char>(header[at]))) ++at;
    return header.substr(start, at - start);
  }
  if (at >= header.size() || header[at] != open) return std::nullopt;
  const auto end = header.find(close, at + 1);
  if (end == std::string::npos) return std::nullopt;
  return header.substr(at + 1, end - at - 1);
}

NpyHeader parse_header(const unsigned char* bytes, std::size_t size, const std::string& name) {
  static const unsigned char magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10 || std::memcmp(bytes, magic, 6) != 0) {
    refuse_zip_named_npy(bytes, size, name);
    throw malformed(name, "it does not start with the .npy magic bytes");
  }
  const int major = bytes[6];
  std::size_t length = 0, prefix = 0;
  if (major == 1) {
    length = bytes[8] | (bytes[9] << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) throw malformed(name, "the file ends inside its header");
    length = static_cast<std::size_t>(bytes[8]) | (static_cast<std::size_t>(bytes[9]) << 8) | (static_cast<std::size_t>(bytes[10]) << 16) |
             (static_cast<std::size_t>(bytes[11]) << 24);
    prefix = 12;
  } else {
    throw malformed(name, "format version " + std::to_string(major) + "." + std::to_string(bytes[7]) + " is unknown (1, 2 and 3 are)");
  }
  if (prefix + length > size) throw malformed(name, "the file ends inside its header");
  if (length > kMaxHeaderBytes)  // numpy's own read_array_header refuses these too
    throw malformed(name, "its header is " + std::to_string(length) + " bytes, past the " + std::to_string(kMaxHeaderBytes) +
                              " numpy itself reads (max_header_size) before it deems a header unsafe");
  const std::string header(reinterpret_cast<const char*>(bytes + prefix), length);
  NpyHeader h;
  h.data_offset = prefix + length;
  const auto descr = dict_value(header, "descr", '\'', '\'');
  if (!descr) throw malformed(name, "its header has no plain 'descr' (structured dtypes are not supported)");
  parse_descr(*descr, name, h);
  const auto fortran = dict_value(header, "fortran_order", 0, 0);
  if (!fortran || (*fortran != "True" && *fortran != "False")) throw malformed(name, "its header has no 'fortran_order'");
  h.fortran_order = *fortran == "True";
  const auto dims = dict_value(header, "shape", '(', ')');
  if (!dims) throw malformed(name, "its header has no 'shape'");
  // The digit runs, as numpy writes "(3, 4)" and Python 2's numpy "(3L, 4L)".
  for (std::size_t at = 0; at < dims->size();) {
    if (!std::isdigit(static_cast<unsigned char>((*dims)[at]))) {
      ++at;
      continue;
    }
    const auto end = std::find_if(dims->begin() + static_cast<std::ptrdiff_t>(at), dims->end(),
                                  [](char c) { return !std::isdigit(static_cast<unsigned char>(c)); });
    const std::string digits(dims->begin() + static_cast<std::ptrdiff_t>(at), end);
    if (digits.size() > 18) throw malformed(name, "its shape (" + *dims + ") is too large for any file");  // past int64
    h.shape.push_back(std::stoll(digits));
    at += digits.size();
  }
  if (h.shape.size() > kMaxDims) throw malformed(name, "its shape has " + std::to_string(h.shape.size()) + " dimensions, past numpy's 64");
  return h;
}

void swap_bytes(at::Tensor& t, std::size_t item) {
  const std::size_t lane = t.is_complex() ? item / 2 : item;  // complex: each half on its own
  auto* p = static_cast<unsigned char*>(t.data_ptr());
  const std::size_t total = static_cast<std::size_t>(t.numel()) * item;
  for (std::size_t i = 0; i < total; i += lane) std::reverse(p + i, p + i + lane);
}

// The array after the header: a view of `bytes` kept alive by `owner` when it can be, else a copy.
at::Tensor array_of(const unsigned char* bytes, std::size_t size, const std::string& name, const std::shared_ptr<const void>& owner) {
  const auto h = parse_header(bytes, size, name);
  std::size_t item = c10::elementSize(h.dtype);
  const auto bytes_needed = array_bytes(h.shape, item);
  if (!bytes_needed) throw malformed(name, "its shape " + shape_text(h.shape) + " of " + h.numpy_dtype + " is too large for any file");
  const std::size_t need = *bytes_needed;
  if (size - h.data_offset < need)
    throw malformed(name, "it is truncated: shape " + shape_text(h.shape) + " of " + h.numpy_dtype + " needs " + std::to_string(need) +
                              " bytes of data, the file has " + std::to_string(size - h.data_offset));
  // Fortran order stores the transpose in C order: read it reversed, then permute back.
  std::vector<std::int64_t> stored = h.shape;
  if (h.fortran_order) std::reverse(stored.begin(), stored.end());
  const auto* data = bytes + h.data_offset;
  const bool aligned = reinterpret_cast<std::uintptr_t>(data) % item == 0;
  at::Tensor t;
  if (owner && aligned && !h.big_endian && !h.fortran_order && !is_wide_unsigned(h.dtype)) {
    return at::from_blob(
        const_cast<unsigned char*>(data), stored, [owner](void*) {}, at::TensorOptions().dtype(h.dtype));
  }
  t = at::empty(stored, at::TensorOptions().dtype(h.dtype));
  if (need > 0) std::memcpy(t.data_ptr(), data, need);  // an empty tensor has no data pointer
  if (h.big_endian) swap_bytes(t, item);
  if (h.fortran_order) {
    std::vector<std::int64_t> back(stored.size());
    for (std::size_t i = 0; i < back.size(); ++i) back[i] = static_cast<std::int64_t>(back.size() - 1 - i);
    t = t.permute(back).contiguous();
  }
  return widen_unsigned(t, "'" + name + "'");
}

std::string hex32(unsigned long value) {
  char text[9];
  std::snprintf(text, sizeof text, "%08lx", value & 0xffffffffUL);
  return text;
}

// The member's `size` bytes, in reads of at most `piece_bytes`: or the bytes read before an error, or -1.
zip_int64_t read_member(zip_file_t* entry, unsigned char* into, std::uint64_t size, std::uint64_t piece_bytes) {
  std::uint64_t done = 0;
  while (done < size) {
    const auto got = zip_fread(entry, into + done, std::min<std::uint64_t>(piece_bytes, size - done));
    if (got < 0) return -1;
    if (got == 0) break;
    done += static_cast<std::uint64_t>(got);
  }
  return static_cast<zip_int64_t>(done);
}

}  // namespace

at::Tensor read_npy(const std::string& path) {
  const auto file = MappedFile::open(path);
  return array_of(file->data(), file->size(), path, file);
}

std::vector<std::pair<std::string, at::Tensor>> read_npz(const std::string& path) { return read_npz_in_pieces(path, kZipReadPiece); }

std::vector<std::pair<std::string, at::Tensor>> read_npz_in_pieces(const std::string& path, std::uint64_t piece_bytes) {
  refuse_stand_in_file(path);
  int error = 0;
  zip_t* archive = zip_open(path.c_str(), ZIP_RDONLY, &error);
  if (!archive) {
    zip_error_t z;
    zip_error_init_with_code(&z, error);
    const std::string why = zip_error_strerror(&z);
    zip_error_fini(&z);
    if (error == ZIP_ER_NOENT || error == ZIP_ER_OPEN)
      throw UsageError(unusable_path_text(path, "cannot open '" + path + "': " + why), "check data.path and the file's permissions");
    throw UsageError("'" + path + "' is not a valid .npz archive: " + why, "write it with numpy.savez or numpy.savez_compressed");
  }
  std::unique_ptr<zip_t, int (*)(zip_t*)> closer(archive, zip_close);
  std::error_code size_error;
  const auto archive_bytes = static_cast<zip_uint64_t>(std::filesystem::file_size(path, size_error));
  std::vector<std::pair<std::string, at::Tensor>> arrays;
  const zip_int64_t entries = zip_get_num_entries(archive, 0);
  for (zip_int64_t i = 0; i < entries; ++i) {
    zip_stat_t stat;
    if (zip_stat_index(archive, static_cast<zip_uint64_t>(i), 0, &stat) != 0) continue;
    std::string key = stat.name;
    const std::string member = path + ":" + key;
    if (key.size() > 4 && key.compare(key.size() - 4, 4, ".npy") == 0) key.resize(key.size() - 4);
    // A damaged size field must not become an allocation of gigabytes: the compressed bytes lie in
    // the file, deflate packs at most 1032 bytes into one, and a stored entry is its own size.
    const bool stored = (stat.valid & ZIP_STAT_COMP_METHOD) && stat.comp_method == ZIP_CM_STORE;
    if ((stat.valid & ZIP_STAT_COMP_SIZE) &&
        (stat.comp_size > archive_bytes || (stored ? stat.size != stat.comp_size : stat.size / 1032 > stat.comp_size + 1)))
      throw UsageError("'" + member + "' is corrupt: its header says " + std::to_string(stat.size) + " bytes from " +
                           std::to_string(stat.comp_size) + (stored ? " stored" : " compressed"),
                       "write the file again with numpy.savez");
    zip_file_t* entry = zip_fopen_index(archive, static_cast<zip_uint64_t>(i), 0);
    if (!entry) throw UsageError("'" + member + "' cannot be read: " + zip_strerror(archive), "write the file again with numpy.savez");
    // Not zeroed first (seconds for gigabytes), and the array's storage once read: no second copy.
    const std::shared_ptr<unsigned char[]> bytes(new unsigned char[stat.size]);
    const zip_int64_t got = read_member(entry, bytes.get(), stat.size, piece_bytes);
    std::string why = got < 0 ? zip_file_strerror(entry) : "";
    const int closed = zip_fclose(entry);  // checks the CRC of a fully read entry
    if (closed != 0 && why.empty()) why = "checksum mismatch";
    if (got < 0 || static_cast<zip_uint64_t>(got) != stat.size || closed != 0)
      throw UsageError("'" + member + "' is truncated or corrupt" + (why.empty() ? "" : ": " + why),
                       "write the file again with numpy.savez");
    // libzip checks the CRC-32 only when a read meets the entry's end, which an exact-size read
    // never does: checked here, as numpy does, for stored and deflated members alike.
    if (stat.valid & ZIP_STAT_CRC) {
      const auto crc = ::crc32_z(0L, bytes.get(), stat.size);
      if (crc != stat.crc)
        throw UsageError("'" + member + "' is corrupt: its data's CRC-32 is " + hex32(crc) + ", and the archive records " + hex32(stat.crc),
                         "write the file again with numpy.savez (numpy refuses it too)");
    }
    arrays.emplace_back(key, array_of(bytes.get(), stat.size, member, bytes));
  }
  return arrays;
}

}  // namespace gputrain::data
