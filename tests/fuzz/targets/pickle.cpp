// The pickle walker that makes torch.save's OrderedDicts plain dicts before LibTorch unpickles
// them (model.init_weights from a PyTorch checkpoint): the raw pickle bytes, not a zip.
#include "fuzz_input.hpp"
#include "train/models/state_dict_pickle.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gputrain::fuzz::expect_read_or_refusal("ordered_dicts_as_dicts", [&] {
    unsigned char unknown_opcode = 0;
    (void)gputrain::train::ordered_dicts_as_dicts(gputrain::fuzz::as_text(data, size), &unknown_opcode);
  });
  return 0;
}
