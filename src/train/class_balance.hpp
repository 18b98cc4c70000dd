#pragma once
// The accuracy a model gets without learning anything: when one class is most of the samples,
// always answering it scores its share, and a run's "val accuracy 95 %" means little until that
// figure is beside it. Private to the train area: open_data (run_setup.cpp) calls it.

#include <cstdint>
#include <string>

#include "gputrain/data/sources.hpp"

namespace gputrain::train {

/// Classification: when the most common class is at least 1.5 times the share an even split
/// gives (1 / classes), a line naming it and its share of the validation samples (of the training
/// samples when there is no validation data); empty otherwise, or when the labels are not in
/// memory (an image folder's are, as folder indices).
std::string class_balance_note(const data::Sources& sources, std::int64_t classes);

}  // namespace gputrain::train
