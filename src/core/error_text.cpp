#include "gputrain/core/error_text.hpp"

#include <algorithm>

namespace gputrain::core {

std::string without_backtrace(const std::string& what) {
  auto text = what.substr(0, std::min(what.find("\nException raised from "), what.find("\nframe #0")));
  text.erase(text.find_last_not_of(" \n") + 1);
  return text;
}

std::string without_miniz_advice(const std::string& reader_message) {
  return reader_message.substr(0, reader_message.find(". This is an internal miniz error"));
}

std::string fix_for_unexplained(const std::string& what) {
  // LibTorch's allocators: "CUDA out of memory. Tried to allocate ...", and the CPU cap's own.
  if (what.find("out of memory") != std::string::npos)
    return "allow more memory (device.max_memory, or --max-memory), or make what must fit smaller: the model, the batch "
           "(train.batch_size) or the data";
  return "";
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace gputrain::core
