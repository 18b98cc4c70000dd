// gputrain: the front. `gputrain <command> ...` runs `gputrain-<command>` found beside this binary
// (git-style), so each command stays a small program of its own. Deliberately does not link
// LibTorch: `gputrain --version` must answer in well under half a second.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "command.hpp"
#include "gputrain/core/build_info.hpp"
#include "gputrain/core/printable.hpp"
#include "gputrain/core/suggest.hpp"
#include "gputrain/device/version_report.hpp"

namespace fs = std::filesystem;
using namespace gputrain;

namespace {

// One line per command for `gputrain --help`; commands not built yet are simply not listed.
const std::map<std::string, std::string> kDescriptions = {
    {"verify", "is this box ready to train, and what exactly to fix"},
    {"profile", "fastest loader/cache setting for your data, step timing, memory and batch size (--step, --memory, --batch)"},
    {"quick-train", "end-to-end GPU training smoke test with CI exit codes"},
    {"train", "train from a YAML config"},
};

// Other tools' commands, and what does their work here: Lightning's CLI has fit/validate/test/predict.
const std::map<std::string, std::string> kOtherToolsCommands = {
    {"version", "gputrain --version"},
    {"fit", "gputrain train CONFIG.yaml (Lightning's fit)"},
    {"run", "gputrain train CONFIG.yaml"},
    {"eval", "gputrain train CONFIG.yaml --evaluate WEIGHTS (the run's model.safetensors or a checkpoint)"},
    {"evaluate", "gputrain train CONFIG.yaml --evaluate WEIGHTS (the run's model.safetensors or a checkpoint)"},
    {"validate", "gputrain train CONFIG.yaml --evaluate WEIGHTS (the run's model.safetensors or a checkpoint)"},
    {"test", "gputrain train CONFIG.yaml --evaluate WEIGHTS --set data.val_path=TEST_DATA"},
    {"predict", "docs/examples/predict.py, which runs a run's model.safetensors in Python"},
    {"check", "gputrain verify"},
    {"benchmark", "gputrain profile --step CONFIG.yaml"},
};

fs::path own_directory() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : self.parent_path();
}

std::vector<std::string> installed_commands(const fs::path& dir) {
  std::vector<std::string> commands;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("gputrain-", 0) == 0 && access(entry.path().c_str(), X_OK) == 0) commands.push_back(name.substr(9));
  }
  std::sort(commands.begin(), commands.end());
  return commands;
}

// A gputrain copied away from its commands (`cp build/bin/gputrain ~/bin`) finds none of them.
const char* const kInstallWhole =
    "install gputrain whole (cmake --install build --prefix ~/.local puts every program in ~/.local/bin), or put a link to "
    "the built one on your PATH instead of a copy (ln -s \"$PWD/build/bin/gputrain\" ~/.local/bin/gputrain)";

void print_help(const fs::path& dir) {
  std::cout << "gputrain: set up, check and train on NVIDIA GPUs with LibTorch.\n\n"
               "usage: gputrain <command> [options]      (gputrain <command> --help, or gputrain help <command>, for its options)\n"
               "       gputrain --version                versions of gputrain, LibTorch, CUDA, driver, cuDNN, NCCL\n\n"
               "commands:\n";
  const auto commands = installed_commands(dir);
  for (const auto& command : commands) {
    const auto known = kDescriptions.find(command);
    std::printf("  %-13s %s\n", command.c_str(), known != kDescriptions.end() ? known->second.c_str() : "");
  }
  if (commands.empty()) std::cout << "  none beside this gputrain (in " << dir.string() << "): " << kInstallWhole << "\n";
  std::cout << "\nexit codes: 0 success, 1 a check or run failed, 2 bad usage, 3 environment unusable (no GPU),\n"
               "            130 interrupted after a clean checkpoint\n";
}

// A shell still standing in a deleted folder: every command's LibTorch then dies loading with MKL's
// "Cannot load libtorch_cpu.so", which names nothing the user did, so the front says it first.
bool current_folder_deleted() {
  std::error_code ec;
  (void)fs::current_path(ec);
  return ec == std::errc::no_such_file_or_directory;
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path dir = own_directory();
  // `gputrain help train` is `gputrain train --help`, as git has it.
  const bool help_for_command = argc >= 3 && !std::strcmp(argv[1], "help");
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || (!std::strcmp(argv[1], "help") && !help_for_command)) {
    print_help(dir);
    return tools::with_output_written(argc < 2 ? 2 : 0);
  }
  if (!std::strcmp(argv[1], "--version") || !std::strcmp(argv[1], "-V")) {
    std::cout << device::version_report();
    return tools::with_output_written(0);
  }
  const std::string command = argv[help_for_command ? 2 : 1];
  const fs::path program = dir / ("gputrain-" + command);
  if (command.empty() || command[0] == '-' || access(program.c_str(), X_OK) != 0) {
    const auto known = installed_commands(dir);
    if (kDescriptions.count(command) != 0) {  // ours, but its program is not where this one is
      std::cerr << "error: '" << command << "' is a gputrain command, but its program gputrain-" << command
                << " is not beside this gputrain (in " << dir.string()
                << "): each command is a program of its own\n  fix: " << kInstallWhole << "\n";
      return 2;
    }
    std::cerr << "error: unknown command " << core::quoted(command, 80);  // a script's stray text, printed as text
    if (known.empty()) {
      std::cerr << " (no gputrain command is beside this gputrain, in " << dir.string() << ")\n  fix: " << kInstallWhole << "\n";
      return 2;
    }
    if (const auto other = kOtherToolsCommands.find(command); other != kOtherToolsCommands.end()) {
      std::cerr << "\n  fix: " << other->second << "\n";
      return 2;
    }
    if (const auto close = core::closest_match(command, known)) std::cerr << "; did you mean '" << *close << "'?";
    std::cerr << "\n  fix: use one of:";
    for (const auto& name : known) std::cerr << " " << name;
    std::cerr << " (gputrain --help)\n";
    return 2;
  }
  if (current_folder_deleted()) {
    std::cerr << "error: the current folder was deleted after this shell entered it (a folder removed and made again, as a "
                 "fresh clone over an old one)\n  fix: cd to a folder that exists; `cd \"$PWD\"` enters one made again at the "
                 "same path\n";
    return 2;
  }
  std::vector<char*> args{const_cast<char*>(program.c_str())};
  static char help_flag[] = "--help";
  if (help_for_command) {
    args.push_back(help_flag);
  } else {
    for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  }
  args.push_back(nullptr);
  execv(program.c_str(), args.data());
  std::cerr << "error: cannot run " << program << ": " << std::strerror(errno) << "\n";
  return 1;
}
