// The fused optimizers against LibTorch's own: same trajectory up to float rounding, the fused
// kernel really taken, checkpoints that continue exactly (LibTorch's archive and PyTorch's
// state_dict layout), and the fallback where it cannot fuse.
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>
#include <torch/serialize/archive.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/memory/cpu_allocator.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/optimizer.hpp"
#include "train/checkpoint/optimizer_state_dict.hpp"  // private: the checkpoints' optimizer layout
#include "train/step/optimizer_shards.hpp"            // private: optimizer_state_bytes

using namespace gputrain::train;

namespace {

// A 2-d weight, a bias, and a conv weight stored channels_last, as the trainer's models have.
std::vector<at::Tensor> make_params(at::ScalarType bias_dtype = at::kFloat) {
  at::manual_seed(7);
  return {at::randn({16, 8}).requires_grad_(true), at::randn({16}, at::TensorOptions().dtype(bias_dtype)).requires_grad_(true),
          at::randn({4, 3, 3, 3}).contiguous(at::MemoryFormat::ChannelsLast).requires_grad_(true)};
}

std::vector<at::Tensor> copy_of(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

// Gradients that depend on the step and the parameter, the same for every optimizer compared.
void set_grads(std::vector<at::Tensor>& params, int step) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto g = at::sin(params[i].detach() * (0.3 + 0.1 * static_cast<double>(step)) + static_cast<double>(i));
    params[i].mutable_grad() = g.contiguous(params[i].suggest_memory_format());
  }
}

void take_steps(torch::optim::Optimizer& optimizer, std::vector<at::Tensor>& params, int from, int to) {
  for (int step = from; step < to; ++step) {
    set_grads(params, step);
    optimizer.step();
    optimizer.zero_grad(true);
  }
}

std::unique_ptr<torch::optim::Optimizer> libtorch_optimizer(const OptimizerConfig& c, std::vector<at::Tensor> params) {
  const auto betas = std::make_tuple(c.betas[0], c.betas[1]);
  if (c.name == "sgd")
    return std::make_unique<torch::optim::SGD>(
        params, torch::optim::SGDOptions(c.lr).momentum(c.momentum).nesterov(c.nesterov).weight_decay(c.weight_decay));
  if (c.name == "adam")
    return std::make_unique<torch::optim::Adam>(params,
                                                torch::optim::AdamOptions(c.lr).betas(betas).eps(c.eps).weight_decay(c.weight_decay));
  return std::make_unique<torch::optim::AdamW>(params,
                                               torch::optim::AdamWOptions(c.lr).betas(betas).eps(c.eps).weight_decay(c.weight_decay));
}

OptimizerConfig config(const std::string& name, double momentum = 0.9, bool nesterov = false, double weight_decay = 0.01) {
  OptimizerConfig c;
  c.name = name;
  c.lr = 0.05;
  c.momentum = momentum;
  c.nesterov = nesterov;
  c.weight_decay = weight_decay;
  return c;
}

const std::vector<OptimizerConfig>& every_kind() {
  static const std::vector<OptimizerConfig> kinds = {config("sgd"), config("sgd", 0.9, true), config("sgd", 0.0, false, 0.0),
                                                     config("adam"), config("adamw")};
  return kinds;
}

std::string describe(const OptimizerConfig& c) {
  return c.name + " momentum " + std::to_string(c.momentum) + (c.nesterov ? " nesterov" : "") + " wd " + std::to_string(c.weight_decay);
}

// The same parameters under gputrain's optimizer and under LibTorch's own, stepped alike.
struct SideBySide {
  std::vector<at::Tensor> ours, theirs;
  std::unique_ptr<torch::optim::Optimizer> fused, plain;

  explicit SideBySide(const OptimizerConfig& c, at::ScalarType bias_dtype = at::kFloat)
      : ours(make_params(bias_dtype)), theirs(copy_of(ours)), fused(make_optimizer(c, ours)), plain(libtorch_optimizer(c, theirs)) {}

  void train_both(int from, int to) {
    take_steps(*fused, ours, from, to);
    take_steps(*plain, theirs, from, to);
  }
};

// Equal up to fp32 rounding, or the largest difference.
testing::AssertionResult close(const at::Tensor& a, const at::Tensor& b) {
  if (at::allclose(a, b, 1e-5, 1e-6)) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "largest difference " << (a - b).abs().max().item<double>();
}

// The ATen operators one step of `optimizer` calls (recorded through ATen's RecordFunction hooks).
std::set<std::string> operators_of_one_step(torch::optim::Optimizer& optimizer, std::vector<at::Tensor>& params) {
  static thread_local std::set<std::string>* sink = nullptr;
  std::set<std::string> names;
  set_grads(params, 0);
  sink = &names;
  const auto handle =
      at::addThreadLocalCallback(at::RecordFunctionCallback([](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
                                   if (sink) sink->insert(fn.name());
                                   return nullptr;
                                 }).scopes({at::RecordScope::FUNCTION}));
  optimizer.step();
  at::removeCallback(handle);
  sink = nullptr;
  optimizer.zero_grad(true);
  return names;
}

}  // namespace

TEST(FusedOptimizers, FollowLibTorchsOwnStepsUpToRounding) {
  for (const auto& c : every_kind()) {
    SideBySide run(c);
    run.train_both(0, 30);
    for (std::size_t i = 0; i < run.ours.size(); ++i) {
      EXPECT_TRUE(close(run.ours[i], run.theirs[i])) << describe(c) << ", parameter " << i;
      EXPECT_EQ(run.ours[i].strides(), run.theirs[i].strides()) << describe(c);  // channels_last stays channels_last
    }
  }
}

TEST(FusedOptimizers, TakeOneFusedKernelPerStep) {
  const std::vector<std::pair<OptimizerConfig, std::string>> expected = {
      {config("sgd"), "aten::_fused_sgd_"}, {config("adam"), "aten::_fused_adam_"}, {config("adamw"), "aten::_fused_adamw_"}};
  for (const auto& [c, kernel] : expected) {
    auto params = make_params();
    auto optimizer = make_optimizer(c, params);
    const auto names = operators_of_one_step(*optimizer, params);
    EXPECT_EQ(names.count(kernel), 1U) << c.name << " did not call " << kernel;
    EXPECT_EQ(names.count("aten::mul_"), 0U) << c.name << " still steps parameter by parameter";  // LibTorch's momentum and moments
  }
}

TEST(FusedOptimizers, FallBackToLibTorchsStepWhenDtypesAreMixed) {
  for (const auto& c : every_kind()) {
    SideBySide run(c, at::kDouble);  // a float64 bias among float32 weights: one kernel cannot take both
    EXPECT_EQ(operators_of_one_step(*run.fused, run.ours).count("aten::_fused_" + c.name + "_"), 0U);
    operators_of_one_step(*run.plain, run.theirs);
    run.train_both(1, 10);
    for (std::size_t i = 0; i < run.ours.size(); ++i)
      EXPECT_TRUE(at::equal(run.ours[i], run.theirs[i])) << describe(c) << ", parameter " << i;
  }
}

TEST(FusedOptimizers, ACheckpointedStateContinuesExactly) {
  for (const auto& c : every_kind()) {
    auto params = make_params();
    auto optimizer = make_optimizer(c, params);
    take_steps(*optimizer, params, 0, 5);
    std::stringstream saved;
    {
      torch::serialize::OutputArchive archive;
      optimizer->save(archive);
      archive.save_to(saved);
    }
    const auto params_at_5 = copy_of(params);
    take_steps(*optimizer, params, 5, 10);  // the uninterrupted run

    // A new optimizer restored from step 5 ...
    auto restored_params = copy_of(params_at_5);
    auto restored = make_optimizer(c, restored_params);
    torch::serialize::InputArchive archive;
    archive.load_from(saved);
    restored->load(archive);
    take_steps(*restored, restored_params, 5, 10);
    // ... and an optimizer that had gone further, sent back to step 5.
    auto rewound_params = copy_of(params_at_5);
    auto rewound = make_optimizer(c, rewound_params);
    take_steps(*rewound, rewound_params, 0, 8);
    for (std::size_t i = 0; i < rewound_params.size(); ++i) {
      at::NoGradGuard no_grad;
      rewound_params[i].copy_(params_at_5[i]);
    }
    torch::serialize::InputArchive again;
    saved.seekg(0);
    again.load_from(saved);
    rewound->load(again);
    take_steps(*rewound, rewound_params, 5, 10);

    for (std::size_t i = 0; i < params.size(); ++i) {
      EXPECT_TRUE(at::equal(params[i], restored_params[i])) << describe(c) << ", parameter " << i << " after a restore";
      EXPECT_TRUE(at::equal(params[i], rewound_params[i])) << describe(c) << ", parameter " << i << " after a rewind";
    }
  }
}

// cuDNN hands a channels_last 1x1 convolution's weight a gradient whose strides differ from the
// weight's in the size-1 dimensions only: the same element order, so the step stays fused (the
// ResNet-18's downsampling convolutions kept every CUDA graph from capturing). A gradient in
// another element order is refused with the parameter named.
TEST(FusedOptimizers, AGradientDifferingOnlyInSize1StridesStaysFused) {
  for (const auto& c : every_kind()) {
    at::manual_seed(3);
    // channels_last strides written out: contiguous(ChannelsLast) keeps (3, 1, 1, 1), which counts as both
    std::vector<at::Tensor> ours{at::empty_strided({4, 3, 1, 1}, {3, 1, 3, 3}).copy_(at::randn({4, 3, 1, 1})).requires_grad_(true)};
    auto theirs = copy_of(ours);
    auto fused = make_optimizer(c, ours);
    auto plain = libtorch_optimizer(c, theirs);
    for (int step = 0; step < 5; ++step) {
      const auto grad = at::sin(ours[0].detach() * (0.5 + step)).contiguous();  // NCHW strides (3, 1, 1, 1)
      ASSERT_NE(grad.strides(), ours[0].strides());
      ours[0].mutable_grad() = grad.clone();
      theirs[0].mutable_grad() = grad.clone();
      fused->step();
      plain->step();
      ASSERT_TRUE(device_stepped(*fused)->last_step_fused()) << describe(c) << ": " << device_stepped(*fused)->why_not_fused();
    }
    EXPECT_TRUE(close(ours[0], theirs[0])) << describe(c);
  }
  std::vector<at::Tensor> conv{at::randn({4, 3, 3, 3}).contiguous(at::MemoryFormat::ChannelsLast).requires_grad_(true)};
  auto sgd = make_optimizer(config("sgd"), conv);
  conv[0].mutable_grad() = at::ones({4, 3, 3, 3});  // NCHW: another element order
  sgd->step();
  EXPECT_FALSE(device_stepped(*sgd)->last_step_fused());
  EXPECT_NE(device_stepped(*sgd)->why_not_fused().find("parameter 0 [4, 3, 3, 3] and its gradient are laid out differently"),
            std::string::npos)
      << device_stepped(*sgd)->why_not_fused();
}

TEST(FusedOptimizers, StateInAnotherLayoutIsReLaidOutNotMisread) {
  for (const auto& c : every_kind()) {
    if (c.name == "sgd" && c.momentum == 0) continue;  // no state
    SideBySide run(c);
    run.train_both(0, 3);
    // As a checkpoint written elsewhere might hold it: the conv weight's state in NCHW.
    const auto& conv = run.ours[2];
    auto& state = *run.fused->state().at(conv.unsafeGetTensorImpl());
    if (c.name == "sgd") {
      auto& buffer = static_cast<torch::optim::SGDParamState&>(state).momentum_buffer();
      buffer = buffer.contiguous();
      ASSERT_NE(buffer.strides(), conv.strides());
    } else {
      at::Tensor* average = c.name == "adam" ? &static_cast<torch::optim::AdamParamState&>(state).exp_avg()
                                             : &static_cast<torch::optim::AdamWParamState&>(state).exp_avg();
      *average = average->contiguous();
      ASSERT_NE(average->strides(), conv.strides());
    }
    run.train_both(3, 10);
    EXPECT_TRUE(close(run.ours[2], run.theirs[2])) << describe(c);
  }
}

// Checkpoints hold the state in PyTorch's optimizer.state_dict() layout (docs/checkpoints.md): a
// fresh optimizer loaded from it after 5 steps goes on exactly as the uninterrupted one.
TEST(OptimizerStateDict, EveryKindContinuesExactlyFromPyTorchsLayout) {
  for (const auto& c : every_kind()) {
    auto params = make_params();
    auto optimizer = make_optimizer(c, params);
    take_steps(*optimizer, params, 0, 5);
    // Through the pickler, as a checkpoint holds it (the dict shares the live CPU tensors until then).
    const auto saved = torch::jit::pickle_load(
        torch::jit::pickle_save(optimizer_state_dict(*optimizer, {{"w", params[0]}, {"b", params[1]}, {"conv", params[2]}})));
    const auto params_at_5 = copy_of(params);
    take_steps(*optimizer, params, 5, 10);

    const auto groups = saved.toGenericDict().at("param_groups").toList();
    ASSERT_EQ(groups.size(), 1U);
    const auto group = groups.get(0).toGenericDict();
    EXPECT_EQ(group.at("params").toList().size(), 3U);
    EXPECT_EQ(group.at("param_names").toList().get(2).toStringRef(), "conv");
    EXPECT_EQ(group.at("lr").toDouble(), c.lr);
    EXPECT_EQ(saved.toGenericDict().at("state").toGenericDict().size(), c.name == "sgd" && c.momentum == 0 ? 0U : 3U) << describe(c);

    auto restored_params = copy_of(params_at_5);
    auto restored = make_optimizer(c, restored_params);
    load_optimizer_state_dict(*restored, saved, "step-5.pt");
    take_steps(*restored, restored_params, 5, 10);
    for (std::size_t i = 0; i < params.size(); ++i)
      EXPECT_TRUE(at::equal(params[i], restored_params[i])) << describe(c) << ", parameter " << i;
  }
}

TEST(OptimizerStateDict, AnotherOptimizersStateIsRefusedBeforeAnythingChanges) {
  auto params = make_params();
  auto adamw = make_optimizer(config("adamw"), params);
  take_steps(*adamw, params, 0, 2);
  const auto saved = optimizer_state_dict(*adamw, {});
  auto sgd = make_optimizer(config("sgd"), params);
  take_steps(*sgd, params, 0, 1);
  const auto refusal = [&](torch::optim::Optimizer& optimizer, const c10::IValue& state) -> std::string {
    try {
      load_optimizer_state_dict(optimizer, state, "step-2.pt");
    } catch (const gputrain::UsageError& e) {
      EXPECT_NE(e.remedy().find("checkpoint.resume: never"), std::string::npos);
      return e.what();
    }
    return "(loaded)";
  };
  EXPECT_NE(refusal(*sgd, saved)
                .find("checkpoint 'step-2.pt' does not fit this run's optimizer (SGD): parameter 0's state holds "
                      "'step', which SGD does not keep"),
            std::string::npos)
      << refusal(*sgd, saved);
  EXPECT_EQ(sgd->state().size(), 3U) << "the refused load left SGD's own momentum as it was";

  auto fewer = std::vector<at::Tensor>{params[0], params[1]};
  auto smaller = make_optimizer(config("adamw"), fewer);
  EXPECT_NE(refusal(*smaller, saved).find("group 0 has 3 parameters, this run's 2 (were other layers frozen or grouped?)"),
            std::string::npos);
}

// An optimizer PyTorch has no layout for (a C++ program's own) keeps LibTorch's archive instead.
TEST(OptimizerStateDict, AnotherOptimizerKeepsLibTorchsArchive) {
  auto params = make_params();
  torch::optim::RMSprop optimizer(params, torch::optim::RMSpropOptions(0.01).momentum(0.5));
  take_steps(optimizer, params, 0, 3);
  const auto saved = optimizer_state_dict(optimizer, {});
  ASSERT_TRUE(saved.toGenericDict().contains("libtorch_archive"));
  const auto params_at_3 = copy_of(params);
  take_steps(optimizer, params, 3, 6);
  auto restored_params = copy_of(params_at_3);
  torch::optim::RMSprop restored(restored_params, torch::optim::RMSpropOptions(0.01).momentum(0.5));
  load_optimizer_state_dict(restored, saved, "step-3.pt");
  take_steps(restored, restored_params, 3, 6);
  for (std::size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(at::equal(params[i], restored_params[i])) << "parameter " << i;
}

// An out-of-memory error while a first step makes its state leaves no empty entry behind: the
// run's figures and checkpoints read every entry (an empty one crashed the failed run's report).
TEST(FusedOptimizers, AStateTheMemoryRefusedLeavesNoEmptyEntry) {
  for (const std::string name : {"sgd", "adam", "adamw"}) {
    OptimizerConfig c;
    c.name = name;
    c.momentum = 0.9;
    auto params = make_params();
    auto optimizer = make_optimizer(c, params);
    set_grads(params, 0);
    gputrain::memory::set_cpu_memory_cap(1);  // refuses the state's first tensor
    EXPECT_ANY_THROW(optimizer->step()) << name;
    gputrain::memory::set_cpu_memory_cap(0);
    for (const auto& [key, state] : optimizer->state()) EXPECT_NE(state, nullptr) << name;
    EXPECT_EQ(optimizer_state_bytes(*optimizer), 0) << name;
    optimizer->step();  // with the memory back, the step makes its state whole
    EXPECT_EQ(optimizer->state().size(), params.size()) << name;
    EXPECT_GT(optimizer_state_bytes(*optimizer), 0) << name;
  }
}
