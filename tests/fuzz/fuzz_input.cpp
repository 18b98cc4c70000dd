#include "fuzz_input.hpp"

#include <c10/util/Exception.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <typeinfo>

#include "gputrain/core/error.hpp"
#include "gputrain/core/log.hpp"
#include "gputrain/data/dataset.hpp"

namespace gputrain::fuzz {
namespace {

namespace fs = std::filesystem;

const fs::path& scratch_folder() {
  static const fs::path folder = [] {
    const char* tmp = std::getenv("TMPDIR");
    fs::path path = fs::path(tmp && *tmp ? tmp : "/tmp") / ("gputrain-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(path);
    return path;
  }();
  return folder;
}

// The scratch folder goes with the process (libFuzzer ends with exit(), replays return from main).
// Readers log what they noticed (a note per file): millions of inputs would drown the findings.
const bool logs_silenced = [] {
  core::set_log_level(core::LogLevel::off);
  return true;
}();

struct RemoveScratchAtExit {
  ~RemoveScratchAtExit() {
    std::error_code ignored;
    fs::remove_all(scratch_folder(), ignored);
  }
};

[[noreturn]] void escaped(const std::string& what_was_read, const std::string& kind, const std::string& message) {
  std::fprintf(stderr, "\nfuzz: %s let %s escape: %s\n", what_was_read.c_str(), kind.c_str(), message.c_str());
  std::abort();
}

}  // namespace

std::string write_input(const std::string& name, const std::uint8_t* data, std::size_t size) {
  static RemoveScratchAtExit remove_at_exit;
  const fs::path path = scratch_folder() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out.flush()) escaped("write_input", "a write error", path.string());
  return path.string();
}

void expect_read_or_refusal(const std::string& what_was_read, const std::function<void()>& read) {
  try {
    read();
  } catch (const Error&) {
  } catch (const data::SkippedSample&) {
  } catch (const c10::Error& e) {
    escaped(what_was_read, "a raw LibTorch error", e.what_without_backtrace());
  } catch (const std::exception& e) {
    escaped(what_was_read, typeid(e).name(), e.what());
  } catch (...) {
    escaped(what_was_read, "an unknown exception", "");
  }
}

}  // namespace gputrain::fuzz
