// .npy arrays (data.path x.npy): numpy's header, dtype, shape and the data's size.
#include "fuzz_input.hpp"
#include "gputrain/data/numpy_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = gputrain::fuzz::write_input("input.npy", data, size);
  gputrain::fuzz::expect_read_or_refusal("read_npy", [&] { (void)gputrain::data::read_npy(path); });
  return 0;
}
