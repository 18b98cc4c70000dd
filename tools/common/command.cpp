#include "command.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <tuple>

#include "gputrain/core/error.hpp"
#include "gputrain/core/error_text.hpp"
#include "gputrain/core/log.hpp"
#include "gputrain/core/printable.hpp"
#include "gputrain/core/suggest.hpp"
#include "gputrain/core/write_error.hpp"
#include "gputrain/device/runtime_libraries.hpp"
#include "left_out_value.hpp"

namespace gputrain::tools {

void add_logging_options(CLI::App& app) {
  app.add_option_function<std::string>(
         "--log-level",
         [](const std::string& level) {
           // CLI11 gives the variable's value here too when the option is not on the command line.
           const char* variable = std::getenv("GPUTRAIN_LOG_LEVEL");
           const bool from_variable = variable && level == variable;
           core::set_log_level(core::parse_log_level(level, from_variable ? "GPUTRAIN_LOG_LEVEL" : "--log-level"));
         },
         "trace, debug, info, warn, error or off")
      ->envname("GPUTRAIN_LOG_LEVEL");
}

namespace {

// A mistyped choice in CLI11's words ("--level: ful not in {quick,full}") -> "--level full".
std::optional<std::string> closest_choice(const std::string& message) {
  const auto colon = message.find(": "), not_in = message.find(" not in {"), end = message.rfind('}');
  if (colon == std::string::npos || not_in == std::string::npos || end == std::string::npos || colon > not_in || not_in > end)
    return std::nullopt;
  const auto value = message.substr(colon + 2, not_in - colon - 2);
  std::vector<std::string> choices;
  std::stringstream list(message.substr(not_in + 9, end - not_in - 9));
  for (std::string choice; std::getline(list, choice, ',');) choices.push_back(choice);
  const auto likely = core::likely_choices(value, choices);
  if (likely.size() != 1) return std::nullopt;
  return message.substr(0, colon) + " " + likely.front();
}

// Other tools' names (and other commands' of ours) for options, with the value they imply:
// `quick-train --steps` is its --iterations, `--bs` is --batch-size, `--quiet` a log level.
const std::vector<std::pair<std::string, std::string>>& other_tools_names() {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"--steps", "--iterations"},     {"--iters", "--iterations"}, {"--max-steps", "--iterations"},    {"--bs", "--batch-size"},
      {"--batch", "--batch-size"},     {"--gpu", "--device"},       {"--amp", "--precision"},           {"--dtype", "--precision"},
      {"--junitxml", "--junit"},       {"--xml", "--junit"},        {"--verbose", "--log-level debug"}, {"--debug", "--log-level debug"},
      {"--quiet", "--log-level warn"}, {"--cpu", "--allow-cpu"},    {"--full", "--level full"},         {"--dry-run", "--print-config"}};
  return names;
}

// This command's option (with its value) that another tool's `flag` names, if the command has it.
std::optional<std::string> other_tools_name(const std::string& flag, const std::vector<std::string>& options) {
  for (const auto& [other, ours] : other_tools_names())
    if (flag == other && std::find(options.begin(), options.end(), ours.substr(0, ours.find(' '))) != options.end()) return ours;
  return std::nullopt;
}

// CLI11 lists the arguments it did not expect last first ("not expected: 3 --batchsize"): they are
// put back in the order typed.
std::string unexpected_in_typed_order(const CLI::App& app, int argc, char** argv) {
  auto left = app.remaining();
  std::string typed;
  for (int i = 1; i < argc; ++i) {
    const auto at = std::find(left.begin(), left.end(), argv[i]);
    if (at == left.end()) continue;
    typed += (typed.empty() ? "" : " ") + *at;
    left.erase(at);
  }
  const bool several = typed.find(' ') != std::string::npos;
  return std::string("The following argument") + (several ? "s were" : " was") + " not expected: " + typed;
}

// The value given with `flag` on the command line: after its '=', else the next word unless that is
// another flag or a config file; "" when there is none.
std::string value_given(const std::string& flag, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind(flag + "=", 0) == 0) return arg.substr(flag.size() + 1);
    if (arg != flag || i + 1 >= argc) continue;
    const std::string next = argv[i + 1];
    const auto extension = std::filesystem::path(next).extension();
    return next.rfind('-', 0) == 0 || extension == ".yaml" || extension == ".yml" ? "" : next;
  }
  return "";
}

// What to do about a command line CLI11 rejected: a setting written as a flag (`--epochs 5` ->
// `--set train.epochs=5`), the option or choice a mistyped one was probably meant to be (`--sett`
// -> `--set`, `--level ful` -> `--level full`), else where the options are listed.
std::string usage_remedy(const CLI::App& app, const std::string& message, int argc, char** argv, const SettingHint& setting_hint) {
  // CLI11 names the app after argv[0]: /path/to/gputrain-train -> "gputrain train".
  std::string command = app.get_name().substr(app.get_name().find_last_of('/') + 1);
  if (command.rfind("gputrain-", 0) == 0) command[8] = ' ';
  if (const auto choice = closest_choice(message)) return "did you mean '" + *choice + "'? (`" + command + " --help` lists the options)";
  const std::string excludes = " excludes ";  // CLI11's "--print-config excludes --evaluate"
  if (const auto at = message.find(excludes); at != std::string::npos)
    return "give one of " + message.substr(0, at) + " and " + message.substr(at + excludes.size()) + ", not both (`" + command +
           " --help` says what each does)";
  std::vector<std::string> options;
  bool takes_config = false;  // train and profile read CONFIG.yaml as their first argument
  for (const auto* option : app.get_options()) {
    for (const auto& name : option->get_lnames()) options.push_back("--" + name);
    takes_config = takes_config || (option->get_positional() && option->get_name() == "config");
  }
  for (const auto& argument : app.remaining()) {
    const auto flag = argument.substr(0, argument.find('='));
    if (!takes_config || (flag != "--config" && flag != "-c" && flag != "--config-file" && flag != "--cfg")) continue;
    std::string given = argument.size() > flag.size() ? argument.substr(flag.size() + 1) : "CONFIG.yaml";
    for (int i = 1; i + 1 < argc; ++i)  // value_given passes over a .yaml word, which is the one meant here
      if (argv[i] == flag && argv[i + 1][0] != '-') given = argv[i + 1];
    return "the config is the first argument, with no flag before it: " + command + " " + given;
  }
  for (const auto& argument : app.remaining()) {
    if (argument.rfind("--", 0) != 0 || !setting_hint) continue;
    const auto flag = argument.substr(0, argument.find('='));
    if (auto setting = setting_hint(flag, value_given(flag, argc, argv)); !setting.empty()) return setting;
  }
  for (const auto& argument : app.remaining()) {
    if (argument.rfind("--", 0) != 0) continue;
    const auto flag = argument.substr(0, argument.find('='));
    const bool picks_gpus = flag == "--gpu" || flag == "--gpus" || flag == "--device" || flag == "--devices";
    if (picks_gpus && std::find(options.begin(), options.end(), "--device") == options.end())  // verify
      return command + " works on every GPU it can see; to choose them: CUDA_VISIBLE_DEVICES=1 " + command;
    auto close = core::closest_match(flag, options);
    if (!close) close = other_tools_name(flag, options);
    if (close) return "did you mean '" + *close + "'? (`" + command + " --help` lists the options)";
  }
  return "`" + command + " --help` lists the options and shows examples";
}

// A value CLI11 refused that came from an option's environment twin (GPUTRAIN_VERIFY_LEVEL for
// --level): the message names the variable, which the user set, not the flag, which they did not
// type. `message` starts "--level: ..." as CLI11 words it, or "Could not convert: --allow-cpu =
// maybe" for a flag's; `remedy` is changed to unsetting it.
void name_the_env_twin(const CLI::App& app, int argc, char** argv, std::string& message, std::string& remedy) {
  const std::string not_a_flag_value = "Could not convert: ";
  const bool flag_value = message.rfind(not_a_flag_value + "--", 0) == 0;
  if (!flag_value && message.rfind("--", 0) != 0) return;
  const auto flag = flag_value ? message.substr(not_a_flag_value.size(), message.find(" = ") - not_a_flag_value.size())
                               : message.substr(0, message.find(':'));
  const auto* option = app.get_option_no_throw(flag);
  if (!option || option->get_envname().empty()) return;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == flag || arg.rfind(flag + "=", 0) == 0) return;  // typed: the flag is the one to name
  }
  const char* value = std::getenv(option->get_envname().c_str());
  if (!value) return;
  const auto& name = option->get_envname();
  const auto twin = name + "=" + value + " (the environment's twin of " + flag + ")";
  message =
      flag_value ? twin + ": not a yes or no; it takes 1, true, yes or on, and 0, false, no or off" : twin + message.substr(flag.size());
  remedy = "set " + name + (flag_value ? "=1 (or 0)" : " to an allowed value") + ", or unset it (unset " + name + ")";
}

// "error: ...", then "  fix: ..." when there is one, in one write: a rank under mpirun shares the
// console with mpirun's own messages, which would otherwise land between the pieces.
void say_error(const std::string& message, const std::string& remedy) {
  std::string text = "error: " + core::printable(message) + "\n";  // a cell or name quoted in it moves no cursor
  if (!remedy.empty()) text += "  fix: " + core::printable(remedy) + "\n";
  std::cerr << text << std::flush;
}

int run_parsed(CLI::App& app, int argc, char** argv, const std::function<int()>& body, const SettingHint& setting_hint) {
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      std::string message = dynamic_cast<const CLI::ExtrasError*>(&e) ? unexpected_in_typed_order(app, argc, argv) : e.what();
      std::string remedy = usage_remedy(app, e.what(), argc, argv, setting_hint);
      if (const auto left_out = value_left_out(e.what())) std::tie(message, remedy) = *left_out;
      name_the_env_twin(app, argc, argv, message, remedy);
      say_error(message, remedy);
      return static_cast<int>(ExitCode::usage);
    }
    return body();
  } catch (const Error& error) {
    say_error(error.what(), error.remedy());
    return static_cast<int>(error.exit_code());
  } catch (const std::filesystem::filesystem_error& error) {
    say_error(core::message_for_filesystem_error(error.path1().string(), error.path2().string(), error.code()),
              core::fix_for_filesystem_error(error.path1().string(), error.code()));
    return static_cast<int>(ExitCode::failure);
  } catch (const std::exception& error) {
    say_error(core::message_for_unexplained(error), core::fix_for_unexplained(error));
    return static_cast<int>(ExitCode::failure);
  }
}

bool stdout_closed_at_start = false;

// A process started with standard input, output or error closed (`2>&-`, some supervisors) gives
// that descriptor to the next file it opens: the console's lines went into the run's lock file, and
// could go into a checkpoint. Each takes a device first, as in coreutils: /dev/null, or for standard
// output /dev/full, whose refused writes say that output was lost.
void fill_closed_standard_streams() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    if (fd == STDOUT_FILENO) stdout_closed_at_start = true;
    int opened = fd == STDOUT_FILENO ? ::open("/dev/full", O_WRONLY) : -1;
    if (opened < 0) opened = ::open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY);
    if (opened >= 0 && opened != fd) {
      ::dup2(opened, fd);
      ::close(opened);
    }
  }
}

// Where standard output goes ("/tmp/run/out.yaml", "/dev/full"), for a message about it.
std::string stdout_target() {
  std::error_code ec;
  const auto target = std::filesystem::read_symlink("/proc/self/fd/1", ec);
  return ec ? std::string("standard output") : target.string();
}

}  // namespace

// Output the shell sent to a file or a device that refused it (`> resolved.yaml` on a full disk)
// fails the command, as coreutils' do; a pipe whose reader left early (`| head`) does not.
int with_output_written(int code) {
  errno = 0;
  std::cout.flush();
  if (std::fflush(stdout) == 0 && !std::ferror(stdout) && std::cout.good()) return code;
  const int reason = errno;
  struct stat out {};
  const bool opened = ::fstat(STDOUT_FILENO, &out) == 0;
  if (opened && (S_ISFIFO(out.st_mode) || S_ISSOCK(out.st_mode))) return code;
  if ((!opened && errno == EBADF) || stdout_closed_at_start) {  // `>&-`, or a service started without one: no disk to blame
    say_error("the output was not all written: standard output is closed",
              "give the command a standard output: a file (> out.txt), or > /dev/null to drop it");
    return code == 0 ? static_cast<int>(ExitCode::failure) : code;
  }
  const auto target = stdout_target();
  say_error("the output was not all written to " + target + (reason ? ": " + std::string(std::strerror(reason)) : ""),
            reason ? core::write_error_remedy(reason, target) : "check where the output goes (" + target + ") and run again");
  return code == 0 ? static_cast<int>(ExitCode::failure) : code;
}

int run_command(CLI::App& app, int argc, char** argv, const std::function<int()>& body, const SettingHint& setting_hint) {
  fill_closed_standard_streams();
  device::reexec_without_rival_cuda_folders(argv);
  return with_output_written(run_parsed(app, argc, argv, body, setting_hint));
}

}  // namespace gputrain::tools
