#pragma once
// A dlopen'd library: lets the binaries start on machines without the NVIDIA driver, and lets us
// ask the CUDA libraries LibTorch already loaded for their versions without loading a second copy.

#include <string>

namespace gputrain::device {

class SharedLibrary {
 public:
  /// How to open: load the library if needed, or only find one the process already loaded.
  enum class Mode { load, already_loaded };

  /// Opens `soname` with the loader's search rules (our RUNPATH puts the wheel's CUDA dirs first).
  SharedLibrary(const std::string& soname, Mode mode);
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  bool is_open() const { return handle_ != nullptr; }
  /// dlerror()'s text when opening failed.
  const std::string& error() const { return error_; }
  /// The file the loader picked, e.g. ".../nvidia/cu13/lib/libcudart.so.13".
  std::string path() const;

  /// The symbol as a function pointer of type Fn, or nullptr when the library lacks it.
  template <typename Fn>
  Fn symbol(const char* name) const {
    return reinterpret_cast<Fn>(raw_symbol(name));
  }

 private:
  void* raw_symbol(const char* name) const;
  void* handle_ = nullptr;
  std::string error_;
};

}  // namespace gputrain::device
