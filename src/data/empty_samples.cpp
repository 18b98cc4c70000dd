#include "empty_samples.hpp"

#include <c10/util/ArrayRef.h>
#include <c10/util/StringUtil.h>

#include <algorithm>

#include "gputrain/core/error.hpp"

namespace gputrain::data {
namespace {

bool holds_nothing(const std::vector<std::int64_t>& shape) { return std::find(shape.begin(), shape.end(), 0) != shape.end(); }

std::string where_a_zero_comes_from(const std::string& source) {
  if (source == "postgres") return "an empty array ('{}') is no input: select arrays of at least one element";
  if (source == "csv") return "select at least one feature column (data.features, data.exclude)";
  return "save samples of at least one value: the array's dimensions after the first must not be 0";
}

}  // namespace

void refuse_empty_samples(const Dataset& set, const std::string& source) {
  const auto& layout = set.layout();
  for (const auto& [shape, what] : {std::pair{&layout.input_shape, "samples"}, std::pair{&layout.target_shape, "targets (data.labels)"}})
    if (holds_nothing(*shape))
      throw UsageError(set.description() + ": its " + what + " hold no values (each is shaped " + c10::str(c10::IntArrayRef(*shape)) + ")",
                       where_a_zero_comes_from(source));
}

}  // namespace gputrain::data
