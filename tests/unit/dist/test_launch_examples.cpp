// The launch examples docs/distributed.md points at are kept working: the Kubernetes PyTorchJob
// manifest parses and starts `gputrain train` through torchrun with one rank per requested GPU,
// and the SLURM script starts one task per GPU with srun on a config that exists.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;

namespace {

const fs::path kExamples = fs::path(GPUTRAIN_SOURCE_DIR) / "docs" / "examples";

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST(LaunchExamples, PyTorchJobRunsGputrainThroughTorchrunWithARankPerGpu) {
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
    EXPECT_NE(args.find("torchrun --no-python"), std::string::npos) << args;
    EXPECT_NE(args.find("gputrain train"), std::string::npos) << args;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(args, m, std::regex(R"(--nproc-per-node=(\d+))"))) << args;
    EXPECT_EQ(std::stoi(m[1]), container["resources"]["limits"]["nvidia.com/gpu"].as<int>()) << "one rank per GPU";
  }
}

TEST(LaunchExamples, SlurmScriptStartsOneTaskPerGpuOnAnExistingConfig) {
  const auto script = read(kExamples / "slurm-train.sbatch");
  std::smatch tasks, gpus, config;
  ASSERT_TRUE(std::regex_search(script, tasks, std::regex(R"(#SBATCH --ntasks-per-node=(\d+))")));
  ASSERT_TRUE(std::regex_search(script, gpus, std::regex(R"(#SBATCH --gpus-per-node=(\d+))")));
  EXPECT_EQ(tasks[1], gpus[1]);
  EXPECT_NE(script.find("srun"), std::string::npos);
  ASSERT_TRUE(std::regex_search(script, config, std::regex(R"(gputrain train (\S+\.yaml))")));
  EXPECT_TRUE(fs::exists(fs::path(GPUTRAIN_SOURCE_DIR) / config[1].str())) << config[1];
}
