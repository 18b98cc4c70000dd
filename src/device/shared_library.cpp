#include "shared_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <filesystem>

namespace gputrain::device {

SharedLibrary::SharedLibrary(const std::string& soname, Mode mode) {
  const int flags = RTLD_LAZY | RTLD_LOCAL | (mode == Mode::already_loaded ? RTLD_NOLOAD : 0);
  dlerror();
  handle_ = dlopen(soname.c_str(), flags);
  if (handle_ == nullptr) {
    const char* message = dlerror();
    error_ = message != nullptr ? message : (soname + " is not loaded");
  }
}

SharedLibrary::~SharedLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

std::string SharedLibrary::path() const {
  if (handle_ == nullptr) return "";
  link_map* map = nullptr;
  if (dlinfo(handle_, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr) return "";
  // RUNPATH entries like torch/lib/../../nvidia/... stay in l_name, and one library may be reached
  // through a symlinked folder while the next is not: users read the file itself, one way for all.
  std::error_code ec;
  const auto real = std::filesystem::canonical(map->l_name, ec);
  return ec ? std::filesystem::path(map->l_name).lexically_normal().string() : real.string();
}

void* SharedLibrary::raw_symbol(const char* name) const { return handle_ != nullptr ? dlsym(handle_, name) : nullptr; }

}  // namespace gputrain::device
