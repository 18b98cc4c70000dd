#include "checkpoint_integrity.hpp"

#include <zip.h>

#include <memory>
#include <vector>

namespace gputrain::train {

std::optional<ArchiveDamage> archive_damage(const std::string& path) {
  int error = 0;
  // ZIP_CHECKCONS: the directory at the end must agree with the headers before each record.
  zip_t* archive = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (!archive) {
    zip_error_t z;
    zip_error_init_with_code(&z, error);
    ArchiveDamage damage{"", zip_error_strerror(&z)};
    zip_error_fini(&z);
    return damage;
  }
  std::unique_ptr<zip_t, void (*)(zip_t*)> closer(archive, zip_discard);  // read only: nothing to write back
  std::vector<char> chunk(std::size_t{4} << 20);
  const zip_int64_t records = zip_get_num_entries(archive, 0);
  for (zip_int64_t i = 0; i < records; ++i) {
    const char* name = zip_get_name(archive, static_cast<zip_uint64_t>(i), 0);
    const std::string record = name ? name : "#" + std::to_string(i);
    zip_file_t* file = zip_fopen_index(archive, static_cast<zip_uint64_t>(i), 0);
    if (!file) return ArchiveDamage{record, zip_strerror(archive)};
    // libzip compares the CRC-32 when a read reaches the record's end, and fails that read.
    zip_int64_t got = 0;
    while ((got = zip_fread(file, chunk.data(), chunk.size())) > 0) {
    }
    std::string why = got < 0 ? zip_file_strerror(file) : "";
    if (zip_fclose(file) != 0 && why.empty()) why = "CRC error";
    if (!why.empty()) return ArchiveDamage{record, why};
  }
  return std::nullopt;
}

}  // namespace gputrain::train
