#include "gputrain/core/error.hpp"

#include <utility>

namespace gputrain {

Error::Error(const std::string& message, std::string remedy, ExitCode code)
    : std::runtime_error(message), remedy_(std::move(remedy)), code_(code) {}

UsageError::UsageError(const std::string& message, std::string remedy) : Error(message, std::move(remedy), ExitCode::usage) {}

EnvironmentError::EnvironmentError(const std::string& message, std::string remedy)
    : Error(message, std::move(remedy), ExitCode::environment) {}

}  // namespace gputrain
