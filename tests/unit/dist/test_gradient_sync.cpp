// GradientSync against an in-process communicator that stands in for identical peer ranks: the
// buckets (order, sizes, first bucket), when they are sent (during backward, only on the last
// micro-batch), what comes back, and the OOM rule.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "gputrain/core/error.hpp"
#include "gputrain/dist/communicator.hpp"
#include "gputrain/dist/gradient_sync.hpp"

using namespace gputrain;
using namespace gputrain::dist;

namespace {

// `peers` ranks holding the same tensor: a sum is a multiplication. Records each all-reduce.
class MirrorCommunicator final : public Communicator {
 public:
  explicit MirrorCommunicator(int peers) : peers_(peers) {}
  int rank() const override { return 0; }
  int size() const override { return peers_; }
  Backend backend() const override { return Backend::mpi; }
  std::shared_ptr<Work> all_reduce_sum(at::Tensor tensor, const std::string& what) override {
    sent.push_back({tensor.numel(), tensor.scalar_type(), what, in_backward});
    tensor.mul_(peers_);
    return std::make_shared<Done>();
  }
  void broadcast(const std::vector<at::Tensor>&, int, const std::string&) override {}
  std::vector<std::int64_t> all_gather(const std::vector<std::int64_t>& values, const std::string&) override { return values; }

  struct Sent {
    std::int64_t numel;
    at::ScalarType dtype;
    std::string what;
    bool during_backward;
  };
  std::vector<Sent> sent;
  bool in_backward = false;

 private:
  struct Done final : Work {
    void wait() override {}
    std::optional<double> seconds() const override { return 0.001; }
  };
  int peers_;
};

torch::nn::Sequential three_layers() {
  torch::manual_seed(0);
  // Registration order: 0.weight [64x32], 0.bias, 2.weight [16x64], 2.bias, 4.weight [4x16], 4.bias.
  return torch::nn::Sequential(torch::nn::Linear(32, 64), torch::nn::ReLU(), torch::nn::Linear(64, 16), torch::nn::ReLU(),
                               torch::nn::Linear(16, 4));
}

// Small caps, so three_layers() spreads over several buckets.
GradientSyncOptions several_buckets() {
  GradientSyncOptions options;
  options.first_bucket_bytes = 64;
  options.bucket_bytes = 4096;
  return options;
}

at::Tensor loss_of(torch::nn::Sequential& net, std::int64_t seed) {
  torch::manual_seed(seed);
  return net->forward(torch::randn({8, 32})).pow(2).mean();
}

}  // namespace

TEST(GradientSync, BucketsFollowReverseRegistrationOrderWithASmallFirstBucket) {
  auto net = three_layers();
  MirrorCommunicator comm(2);
  GradientSyncOptions options;
  options.first_bucket_bytes = 4 * (16 * 4 + 4);  // exactly the last layer's weight and bias
  options.bucket_bytes = 4 * (64 * 16);           // the middle weight fills one bucket
  GradientSync sync(net->parameters(), comm, options);
  // Bucket 1: last layer (bias, weight); then 2.bias + 2.weight; then 0.bias + 0.weight.
  EXPECT_EQ(sync.bucket_parameter_counts(), (std::vector<std::int64_t>{2, 2, 2}));
  EXPECT_EQ(sync.figures().bytes_per_step, 4 * (32 * 64 + 64 + 64 * 16 + 16 + 16 * 4 + 4));
}

TEST(GradientSync, SendsDuringBackwardAndReturnsTheSum) {
  auto net = three_layers();
  MirrorCommunicator comm(2);
  GradientSync sync(net->parameters(), comm, several_buckets());

  loss_of(net, 1).backward();  // the reference gradient, without the sync armed
  std::vector<at::Tensor> expected;
  for (auto& p : net->parameters()) {
    expected.push_back(p.grad().clone() * 2);
    p.mutable_grad() = at::Tensor();
  }

  sync.begin_step(0);
  sync.arm();
  comm.in_backward = true;
  loss_of(net, 1).backward();
  comm.in_backward = false;
  const auto sent_in_backward = comm.sent.size();
  sync.finish();
  EXPECT_GT(sent_in_backward, 0U) << "no bucket left before backward ended: nothing overlapped";
  EXPECT_EQ(comm.sent.size(), sync.bucket_parameter_counts().size());
  EXPECT_EQ(sync.figures().launched_in_backward, static_cast<std::int64_t>(sent_in_backward));
  EXPECT_NE(comm.sent.front().what.find("gradient bucket 1 of"), std::string::npos);
  EXPECT_NE(comm.sent.front().what.find("step 1"), std::string::npos);
  const auto params = net->parameters();
  for (std::size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(at::allclose(params[i].grad(), expected[i])) << i;
}

// The sync hooks the parameters, not their AccumulateGrad nodes: a node it held would keep the
// stream it was made on, and a CUDA graph's capture on another stream fails where autograd makes
// the two wait on each other. Its hooks leave with it.
TEST(GradientSync, HoldsNoAccumulateGradNodeAndRemovesItsHooks) {
  auto net = three_layers();
  MirrorCommunicator comm(2);
  const auto first = net->parameters().front();
  {
    GradientSync sync(net->parameters(), comm, several_buckets());
    std::weak_ptr<torch::autograd::Node> node = torch::autograd::impl::grad_accumulator(first);
    EXPECT_TRUE(node.expired()) << "the sync keeps the parameter's AccumulateGrad node alive";
    EXPECT_NE(torch::autograd::impl::post_acc_grad_hooks(first), nullptr);
    sync.begin_step(0);
    sync.arm();
    loss_of(net, 1).backward();  // a node made now, on this step's stream, still calls the hook
    EXPECT_EQ(comm.sent.size(), sync.bucket_parameter_counts().size());
    sync.finish();
  }
  EXPECT_EQ(torch::autograd::impl::post_acc_grad_hooks(first), nullptr);
}

// A channels_last weight's place in its bucket is laid out as the weight is: its gradient copies in
// as one run of memory, and the sum becomes its .grad() in place (a view of the bucket, the
// weight's strides), as for a contiguous one, with no copy back.
TEST(GradientSync, AChannelsLastWeightsSumIsABucketViewWithItsStrides) {
  torch::manual_seed(0);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 8, 3));
  conv->weight.set_data(conv->weight.contiguous(at::MemoryFormat::ChannelsLast));
  MirrorCommunicator comm(2);
  GradientSync sync(conv->parameters(), comm, several_buckets());
  ASSERT_EQ(sync.bucket_parameter_counts(), (std::vector<std::int64_t>{2})) << "bias and weight share the first bucket";
  const auto input = torch::randn({2, 3, 8, 8}).contiguous(at::MemoryFormat::ChannelsLast);
  conv->forward(input).pow(2).mean().backward();  // the reference, without the sync armed
  const auto expected = conv->weight.grad().clone() * 2;
  for (auto& p : conv->parameters()) p.mutable_grad() = at::Tensor();

  sync.begin_step(0);
  sync.arm();
  conv->forward(input).pow(2).mean().backward();
  sync.finish();
  const auto grad = conv->weight.grad();
  EXPECT_EQ(grad.strides(), conv->weight.strides());
  EXPECT_TRUE(at::allclose(grad, expected));
  EXPECT_TRUE(grad.is_alias_of(conv->bias.grad())) << "the weight's sum was copied out of the bucket";
}

// A backward whose gradients autograd's hooks do not see says each gradient is ready itself: a bucket
// leaves once its members are all said, before the step's end, and only once armed.
TEST(GradientSync, GradientsSaidReadyByHandStartTheirBucketsAsHooksWould) {
  auto net = three_layers();
  MirrorCommunicator comm(2);
  GradientSync sync(net->parameters(), comm, several_buckets());
  const auto params = net->parameters();
  sync.begin_step(0);
  for (auto& p : params) p.mutable_grad() = at::ones_like(p);
  sync.gradient_ready(params.back());
  EXPECT_TRUE(comm.sent.empty()) << "not armed: an earlier micro-batch's gradient";
  sync.arm();
  comm.in_backward = true;
  // The last layer (4.bias, 4.weight) is the first bucket, as a backward would produce it.
  sync.gradient_ready(params[5]);
  EXPECT_TRUE(comm.sent.empty()) << "half a bucket";
  sync.gradient_ready(params[4]);
  ASSERT_EQ(comm.sent.size(), 1U) << "the first bucket, once both its members are ready";
  EXPECT_TRUE(comm.sent.front().during_backward);
  sync.gradient_ready(torch::ones({3}));  // not one of the parameters: nothing
  EXPECT_EQ(comm.sent.size(), 1U);
  comm.in_backward = false;
  sync.finish();
  EXPECT_EQ(sync.figures().launched_in_backward, 1);
  for (const auto& p : params) EXPECT_TRUE(at::equal(p.grad(), at::full_like(p, 2))) << "the sum over 2 ranks";
}

TEST(GradientSync, EarlierMicroBatchesSendNothing) {
  auto net = three_layers();
  MirrorCommunicator comm(2);
  GradientSync sync(net->parameters(), comm);
  sync.begin_step(0);
  loss_of(net, 1).backward();  // micro-batch 1 of 2: accumulate only
  EXPECT_TRUE(comm.sent.empty());
  sync.arm();
  loss_of(net, 2).backward();  // the last one
  sync.finish();
  EXPECT_EQ(comm.sent.size(), 1U);  // the whole net (13 KB) fits the default 1 MiB first bucket
}

TEST(GradientSync, ARankWithoutSamplesSendsZerosForEveryBucket) {
  auto net = three_layers();
  MirrorCommunicator comm(3);
  GradientSync sync(net->parameters(), comm, several_buckets());
  sync.begin_step(5);
  sync.finish();  // no backward ran on this rank
  EXPECT_EQ(comm.sent.size(), sync.bucket_parameter_counts().size());
  for (const auto& s : comm.sent) EXPECT_FALSE(s.during_backward);
  for (auto& p : net->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().abs().sum().item<float>(), 0.0f);
  }
}

TEST(GradientSync, CompressesOnTheWireAndRestoresTheGradientsDtype) {
  auto net = three_layers();
  MirrorCommunicator comm(2);
  GradientSyncOptions options;
  options.wire_dtype = at::kBFloat16;
  GradientSync sync(net->parameters(), comm, options);
  sync.begin_step(0);
  sync.arm();
  loss_of(net, 1).backward();
  std::vector<at::Tensor> local;
  for (auto& p : net->parameters()) local.push_back(p.grad().clone());
  sync.finish();
  for (const auto& s : comm.sent) EXPECT_EQ(s.dtype, at::kBFloat16);
  const auto params = net->parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].grad().scalar_type(), at::kFloat);
    EXPECT_TRUE(at::allclose(params[i].grad(), local[i] * 2, 1e-2, 1e-3)) << i;  // bf16 keeps ~3 digits
  }
}

TEST(GradientSync, DiscardBeforeAnyBucketLeftAllowsARetryButNotAfter) {
  auto net = three_layers();
  MirrorCommunicator comm(2);
  GradientSync sync(net->parameters(), comm, several_buckets());
  sync.begin_step(3);
  sync.arm();
  sync.discard();  // OOM in the forward: nothing was sent
  EXPECT_TRUE(comm.sent.empty());
  loss_of(net, 1).backward();  // the retry's backward: disarmed by discard, so nothing is sent
  EXPECT_TRUE(comm.sent.empty());
  sync.arm();
  loss_of(net, 1).backward();
  ASSERT_FALSE(comm.sent.empty());
  try {
    sync.discard();
    FAIL() << "discard after a bucket was sent must refuse";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("step 4"), std::string::npos) << e.what();
  }
}

// The done line's "N% hidden behind backward": the share of the all-reduces' own time that steps
// did not wait for; unknown when the engine cannot time its all-reduces (NCCL's run on the GPU).
TEST(SyncFigures, HiddenShareIsTheCommunicationTimeStepsDidNotWaitFor) {
  SyncFigures figures;
  figures.wait_seconds = 0.25;
  EXPECT_FALSE(figures.hidden_share().has_value()) << "no communication time: nothing to compare with";
  figures.communication_seconds = 0.0;
  EXPECT_FALSE(figures.hidden_share().has_value());
  figures.communication_seconds = 1.0;
  EXPECT_DOUBLE_EQ(*figures.hidden_share(), 0.75);
  figures.wait_seconds = 2.0;  // waits include the other ranks' lateness: never below none hidden
  EXPECT_DOUBLE_EQ(*figures.hidden_share(), 0.0);
  figures.wait_seconds = 0.0;
  EXPECT_DOUBLE_EQ(*figures.hidden_share(), 1.0);
}
