#include "rank_group.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/device/gpu_info.hpp"

namespace gputrain::train {

RankGroup::RankGroup() : env_(dist::read_rank_environment()) {}

std::string RankGroup::device_name(const std::string& configured) const {
  if (!env_ || (configured != "auto" && configured != "cuda")) return configured;
  const auto gpus = static_cast<int>(device::discover_gpus().gpus.size());
  if (gpus == 0) {
    if (configured == "cuda")
      throw EnvironmentError(dist::describe(*env_) + ": device cuda was asked for, but no GPU is visible",
                             "run `gputrain verify`; or train on the CPU with device: cpu (MPI ranks)");
    return "cpu";
  }
  if (env_->local_rank >= gpus)
    throw EnvironmentError(dist::describe(*env_) + " needs GPU " + std::to_string(env_->local_rank) + ", but only " +
                               core::counted(gpus, "GPU") + (gpus == 1 ? " is" : " are") + " visible on this node",
                           "start at most " + std::to_string(gpus) + " ranks per node (--nproc-per-node " + std::to_string(gpus) +
                               "), or check CUDA_VISIBLE_DEVICES");
  return "cuda:" + std::to_string(env_->local_rank);
}

void RankGroup::connect(const DistributedConfig& config, c10::Device device) {
  if (!env_) return;
  device_ = device;
  dist::CommunicatorOptions options;
  options.backend = dist::choose_backend(config.backend, device, env_->launcher);
  options.device = device;
  options.timeout = std::chrono::seconds(static_cast<std::int64_t>(std::ceil(config.timeout)));
  options.progress = &std::cerr;
  comm_ = dist::connect(*env_, options);
}

std::string RankGroup::summary() const {
  if (!comm_) return "";
  return core::counted(comm_->size(), "rank") + " over " + dist::to_string(comm_->backend());
}

StepAgreement RankGroup::agree(std::int64_t micro_batch, bool stop, int end_request, std::int64_t rows, std::int64_t step) {
  StepAgreement a{micro_batch, stop, end_request, rows, rows};
  if (!comm_) return a;
  const auto start = std::chrono::steady_clock::now();
  const auto all =
      comm_->all_gather({micro_batch, stop ? 1 : 0, end_request, rows}, "the agreement before step " + std::to_string(step + 1));
  agreement_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  a.rows = 0;
  for (std::size_t r = 0; r < all.size(); r += 4) {
    a.micro_batch = std::min(a.micro_batch, all[r]);
    a.stop = a.stop || all[r + 1] != 0;
    a.end_request = std::max(a.end_request, static_cast<int>(all[r + 2]));
    a.rows += all[r + 3];
    a.largest_rows = std::max(a.largest_rows, all[r + 3]);
  }
  return a;
}

std::vector<double> RankGroup::sum(std::vector<double> values, const std::string& what) {
  if (!comm_) return values;
  auto t = at::tensor(values, at::TensorOptions().dtype(at::kDouble)).to(device_);
  comm_->all_reduce_sum(t, what)->wait();
  const auto host = t.cpu();
  return std::vector<double>(host.data_ptr<double>(), host.data_ptr<double>() + host.numel());
}

std::int64_t RankGroup::min(std::int64_t value, const std::string& what) {
  if (!comm_) return value;
  const auto all = comm_->all_gather({value}, what);
  return *std::min_element(all.begin(), all.end());
}

}  // namespace gputrain::train
