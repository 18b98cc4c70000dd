#pragma once
// What classification labels say before anything trains: integer values that are not class ids at
// all, training labels of one class, validation classes training never saw, class ids no label
// uses (labels numbered from 1), and the accuracy a
// model gets without learning anything (when one class is most of the samples, always answering it
// scores its share, and a run's "val accuracy 95 %" means little until that figure is beside it).
// Private to the train area: open_data (run_setup.cpp) calls these.

#include <cstdint>
#include <string>
#include <vector>

#include "gputrain/data/sources.hpp"

namespace gputrain::train {

/// Integer labels that are really values (prices, years, zip codes) make max + 1 classes: a
/// million-unit output layer that trains for minutes before anyone notices. Class ids are dense
/// (0, 1, 2, ...): with more than 1,000 classes of which fewer than half occur in the training
/// labels, throws UsageError naming data.task: regression, and data.classes set by hand to keep
/// them. Named labels (CSV text) and folders are dense by construction and never refused.
void refuse_sparse_class_ids(const data::Sources& sources);

/// A file's training labels that are all one class (a wrong label column, a filter that kept one
/// class, an image folder of one class folder, a hold-out that took every sample of the other
/// classes) train a model that always answers it: throws UsageError naming the class and, by
/// `spec`, where to look. scikit-learn's classifiers refuse such data too. Synthetic data is not
/// checked (a tiny generated set may fall into one class by chance, and the user chose it).
void refuse_single_class(const data::Sources& sources, const data::SourceSpec& spec);

/// Labels that name each sample rather than a class (an id column given as data.labels: 200,000
/// rows, 200,000 classes) make an output unit per sample and nothing to learn: with more than
/// 1,000 classes of which 99 % occur once in the training labels, throws UsageError naming the
/// column's count and data.labels. Synthetic data is not checked (its caller skips it).
void refuse_identifier_labels(const data::Sources& sources, const data::SourceSpec& spec);

/// Classification: a line naming the classes the validation labels hold and no training label does
/// (a numeric id only the validation file uses, a rare class the hold-out took whole), whose samples
/// the model cannot get right; empty when there are none or either set does not know its labels.
std::string unseen_classes_note(const data::Sources& sources, std::int64_t classes);

/// Classification with numeric labels: a line naming the class ids below the largest label that no
/// training or validation label has, each an output that no sample trains. Labels numbered from 1
/// (R, MATLAB, star ratings) get the line that numbers them from 0. Empty when every id up to the
/// largest has a sample, when the labels are names (numbered densely) or are not known unread.
std::string empty_class_ids_note(const data::Sources& sources);

/// Classification: a line naming class names that differ only in letter case or spacing ("Cat"
/// and "cat", "New York" and "New  York"), which train as classes of their own; empty when none.
std::string look_alike_classes_note(const std::vector<std::string>& class_names);

/// Classification: when the most common class is at least 1.5 times the share an even split
/// gives (1 / classes), a line naming it and its share of the validation samples (of the training
/// samples when there is no validation data), pointing at the balanced accuracy and, unless the
/// run is `weighted` already (train.class_weights), at class weights; empty otherwise, or when
/// the set does not know its labels without reading the samples (Dataset::class_ids).
std::string class_balance_note(const data::Sources& sources, std::int64_t classes, bool weighted);

}  // namespace gputrain::train
