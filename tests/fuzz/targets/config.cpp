// The YAML config with its schema and `--set`: the input is a config file, and each line after a
// line "#--set" is one override ("train.epochs=3"). A config that loads must print (to_yaml, what
// every checkpoint stores) as YAML that loads to the same print.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "gputrain/train/config.hpp"

namespace {

// Splits the input at its first "\n#--set\n" into the file's text and the overrides.
std::pair<std::string, std::vector<std::string>> file_and_overrides(std::string_view text) {
  constexpr std::string_view marker = "\n#--set\n";
  const std::size_t at = text.find(marker);
  if (at == std::string_view::npos) return {std::string(text), {}};
  std::vector<std::string> overrides;
  std::string_view rest = text.substr(at + marker.size());
  while (!rest.empty()) {
    const std::size_t end = rest.find('\n');
    overrides.emplace_back(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  }
  return {std::string(text.substr(0, at + 1)), overrides};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gputrain;
  const auto split = file_and_overrides(fuzz::as_text(data, size));
  const std::string& file_text = split.first;
  const std::vector<std::string>& overrides = split.second;
  const std::string path = fuzz::write_input("config.yaml", reinterpret_cast<const std::uint8_t*>(file_text.data()), file_text.size());
  std::string printed;
  fuzz::expect_read_or_refusal("load_config", [&] { printed = train::to_yaml(train::load_config({{path}, overrides, ""})); });
  if (printed.empty()) return 0;
  const std::string again = fuzz::write_input("printed.yaml", reinterpret_cast<const std::uint8_t*>(printed.data()), printed.size());
  std::string reprinted;
  try {
    reprinted = train::to_yaml(train::load_config({{again}, {}, ""}));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nfuzz: a loaded config's print does not load: %s\n%s\n", e.what(), printed.c_str());
    std::abort();
  }
  if (reprinted != printed) {
    std::fprintf(stderr, "\nfuzz: a loaded config's print loads differently:\n%s\n---\n%s\n", printed.c_str(), reprinted.c_str());
    std::abort();
  }
  return 0;
}
