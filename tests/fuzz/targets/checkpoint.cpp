// Checkpoint files: gputrain's own (a zip of records with CRC-32s, format 1 or 2) and PyTorch's
// torch.save archives, read as `resume`, `--evaluate` and model.init_weights read them.
#include "gputrain/train/checkpoint.hpp"
#include "fuzz_input.hpp"
#include "train/models/state_dict_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gputrain;
  const std::string path = fuzz::write_input("input.pt", data, size);
  fuzz::expect_read_or_refusal("checkpoint_progress", [&] { (void)train::checkpoint_progress(path); });
  fuzz::expect_read_or_refusal("checkpoint_config", [&] { (void)train::checkpoint_config(path); });
  fuzz::expect_read_or_refusal("checkpoint_weights", [&] { (void)train::checkpoint_weights(path); });
  fuzz::expect_read_or_refusal("read_torch_save_state", [&] {
    if (train::is_torch_save_archive(path)) (void)train::read_torch_save_state(path, "model.init_weights");
  });
  return 0;
}
