// safetensors files (data.path, model.init_weights): the JSON header, dtypes, shapes and the
// tensors' byte ranges, which must tile the data exactly.
#include "gputrain/data/safetensors.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = gputrain::fuzz::write_input("input.safetensors", data, size);
  gputrain::fuzz::expect_read_or_refusal("read_safetensors", [&] {
    std::map<std::string, std::string> metadata;
    (void)gputrain::data::read_safetensors(path, &metadata);
  });
  return 0;
}
