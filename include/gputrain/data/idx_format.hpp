#pragma once
// The IDX files MNIST (and Fashion-MNIST, EMNIST) ship in, plain or gzip-compressed, and the
// binary batches of CIFAR-10 ("cifar-10-batches-bin").

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "gputrain/data/tensor_dataset.hpp"

namespace gputrain::data {

/// One IDX file (magic 0x00 0x00 type ndim, big-endian dimensions) as a CPU tensor of its dtype
/// (uint8, int8, int16, int32, float32, float64); memory-mapped when uncompressed uint8. A path
/// ending in .gz is decompressed. Throws UsageError naming the file and what is wrong.
at::Tensor read_idx(const std::string& path);

/// MNIST's split `split` ("train" or "t10k") from `folder`: inputs uint8 [N, 1, 28, 28], labels
/// int64 [N]. Finds "<split>-images-idx3-ubyte" and "<split>-labels-idx1-ubyte", with or without .gz
/// (and the "<split>-images.idx3-ubyte" spelling some mirrors use).
TensorDataset read_mnist(const std::string& folder, const std::string& split);

/// Whether `folder` holds MNIST's images file of `split`, in any of the spellings read_mnist reads.
bool mnist_has_split(const std::string& folder, const std::string& split);

/// CIFAR-10 binary batches: records of one label byte and 3x32x32 uint8 pixels. Inputs uint8
/// [N, 3, 32, 32], labels int64 [N]. Each file must be a whole number of 3073-byte records.
TensorDataset read_cifar10(const std::vector<std::string>& files);

/// The training batches (data_batch_1..5.bin) or the test batch (test_batch.bin) of a
/// cifar-10-batches-bin folder.
std::vector<std::string> cifar10_files(const std::string& folder, bool train);

}  // namespace gputrain::data
