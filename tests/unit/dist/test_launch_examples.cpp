// The launch examples docs/distributed.md points at are kept working: the Kubernetes PyTorchJob
// manifest parses and starts `gputrain train` as each pod's launcher (no torchrun: the image has no
// Python) with one rank per requested GPU, and the SLURM script starts one task per GPU with srun
// on a config that exists.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <regex>
#include "support/test_paths.hpp"
#include "support/text_checks.hpp"

using gputrain::test_support::file_text;
namespace fs = std::filesystem;

namespace {

const fs::path kExamples = fs::path(gputrain::test_support::source_dir()) / "docs" / "examples";

}  // namespace

TEST(LaunchExamples, PyTorchJobRunsGputrainsLauncherWithARankPerGpu) {
  const auto job = YAML::LoadFile((kExamples / "pytorchjob.yaml").string());
  EXPECT_EQ(job["apiVersion"].as<std::string>(), "kubeflow.org/v1");
  EXPECT_EQ(job["kind"].as<std::string>(), "PyTorchJob");
  const auto replicas = job["spec"]["pytorchReplicaSpecs"];
  ASSERT_TRUE(replicas["Master"]) << "a PyTorchJob needs a Master replica";
  EXPECT_EQ(replicas["Master"]["replicas"].as<int>(), 1);
  for (const char* role : {"Master", "Worker"}) {
    SCOPED_TRACE(role);
    const auto container = replicas[role]["template"]["spec"]["containers"][0];
    EXPECT_EQ(container["name"].as<std::string>(), "pytorch");  // the operator injects its variables into this one
    const auto args = container["args"][0].as<std::string>();
    EXPECT_EQ(args.find("torchrun"), std::string::npos) << args;
    EXPECT_NE(args.find("exec gputrain train"), std::string::npos) << args;
    // The operator's variables count pods: they make the nodes of gputrain's launcher.
    for (const char* flag : {"--nnodes $WORLD_SIZE", "--node-rank $RANK", "--master-addr $MASTER_ADDR", "--master-port $MASTER_PORT"})
      EXPECT_NE(args.find(flag), std::string::npos) << flag << " in " << args;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(args, m, std::regex(R"(--nproc-per-node (\d+))"))) << args;
    EXPECT_EQ(std::stoi(m[1]), container["resources"]["limits"]["nvidia.com/gpu"].as<int>()) << "one rank per GPU";
  }
}

TEST(LaunchExamples, SlurmScriptStartsOneTaskPerGpuOnAnExistingConfig) {
  const auto script = file_text(kExamples / "slurm-train.sbatch");
  std::smatch tasks, gpus, config;
  ASSERT_TRUE(std::regex_search(script, tasks, std::regex(R"(#SBATCH --ntasks-per-node=(\d+))")));
  ASSERT_TRUE(std::regex_search(script, gpus, std::regex(R"(#SBATCH --gpus-per-node=(\d+))")));
  EXPECT_EQ(tasks[1], gpus[1]);
  EXPECT_NE(script.find("srun"), std::string::npos);
  ASSERT_TRUE(std::regex_search(script, config, std::regex(R"(gputrain train (\S+\.yaml))")));
  EXPECT_TRUE(fs::exists(fs::path(gputrain::test_support::source_dir()) / config[1].str())) << config[1];
}
