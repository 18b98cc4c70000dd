// CIFAR-10's binary batches: 1 label byte and 3072 pixel bytes a record.
#include "fuzz_input.hpp"
#include "gputrain/data/idx_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = gputrain::fuzz::write_input("data_batch_1.bin", data, size);
  gputrain::fuzz::expect_read_or_refusal("read_cifar10", [&] { (void)gputrain::data::read_cifar10({path}); });
  return 0;
}
