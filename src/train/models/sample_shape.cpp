// models::require_sample_dims (declared in builtin_models.hpp).
#include <c10/util/ArrayRef.h>
#include <c10/util/StringUtil.h>

#include "builtin_models.hpp"
#include "gputrain/core/error.hpp"

namespace gputrain::train::models {

void require_sample_dims(const ModelSpec& spec, std::size_t dims, const std::string& model, const std::string& layout,
                         const std::string& example) {
  if (spec.input_shape.size() == dims) return;
  throw UsageError(
      model + " reads samples shaped " + layout + "; this data's samples are shaped " + c10::str(c10::IntArrayRef(spec.input_shape)),
      "give it such samples (synthetic data: data.shape: " + example + "), or use model.name: mlp, which flattens samples of any shape");
}

}  // namespace gputrain::train::models
