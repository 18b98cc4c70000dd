#include "weights_file.hpp"

#include <filesystem>

#include "checkpoint_file.hpp"
#include "data/stand_in_file.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "train/models/state_dict_file.hpp"

namespace gputrain::train {

namespace fs = std::filesystem;

NamedTensors read_named_weights(const std::string& path, const std::string& key) {
  data::refuse_stand_in_file(path);
  if (is_torch_save_archive(path) && !holds_gputrain_run(path)) return read_torch_save_state(path, key);
  if (is_zip_archive(path)) return checkpoint_weights(path);
  // torch.save and gputrain write zip archives: a file named as one that does not begin as a
  // safetensors file either is best described as a broken archive.
  const auto extension = core::lower(std::filesystem::path(path).extension().string());
  const bool named_as_archive = extension == ".pt" || extension == ".pth" || extension == ".ckpt" || extension == ".bin";
  if (named_as_archive && !data::starts_like_safetensors(path))
    throw UsageError(key + ": '" + path + "' is not a torch.save file or gputrain checkpoint (not a zip archive): " +
                         "damaged, cut short, or saved by an old torch.save (_use_new_zipfile_serialization=False)",
                     "save it again in Python with torch.save(model.state_dict(), 'w.pth') (PyTorch 1.6 or later), or give a "
                     ".safetensors file (a finished run's model.safetensors), a state_dict torch.save wrote, or a gputrain "
                     "checkpoint (.pt)");
  return data::read_safetensors(path);
}

std::string weights_in_folder(const std::string& folder) {
  std::error_code ec;
  const fs::path dir(folder);
  if (fs::is_regular_file(dir / "model.safetensors", ec)) return (dir / "model.safetensors").string();
  for (const auto& checkpoints : {dir / "checkpoints", dir}) {
    const CheckpointStore store(checkpoints.string(), 0);
    if (fs::is_regular_file(store.best_path(), ec)) return store.best_path();
    if (const auto latest = store.latest()) return *latest;
  }
  return "";
}

}  // namespace gputrain::train
