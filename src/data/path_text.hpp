#pragma once
// How a data path that cannot be used is named in errors. Private to the data area.

#include <string>

#include "gputrain/core/error.hpp"

namespace gputrain::data {

/// When `path` does not exist: "'data/train' does not exist", and for a relative path where it was
/// looked for ("relative to the current folder /home/me, not to the config file"), the usual
/// surprise, then the path most likely meant (core::similar_path), if any. Otherwise `otherwise`
/// (the caller's own reason: not a folder, permission denied).
std::string unusable_path_text(const std::string& path, const std::string& otherwise);

/// A folder source (image_folder, mnist, cifar10) handed a path that is no folder: the error, and
/// when the path is an archive that exists (.zip, .tar, .tar.gz, .tgz, .tar.xz: the download, not
/// unpacked yet) the command that unpacks it; else `fix`.
UsageError not_a_folder(const std::string& path, const std::string& fix);

/// The fix for a features .npy given without its labels' file (`key`: data.labels or
/// data.val_labels): the labels file beside `features` when its name gives it away (x_train.npy
/// -> y_train.npy, features.npy -> labels.npy, or y.npy, labels.npy, targets.npy), else the other
/// .npy files beside it (a few), else the key's form.
std::string npy_labels_fix(const std::string& key, const std::string& features);

/// The fix for a table in a format gputrain does not read, which pandas does: `read_call` (as
/// "read_parquet('x.parquet')") written out as data.csv, or as table.csv when `read_path` (the
/// file it reads) is a data.csv, which the fix would overwrite.
std::string pandas_to_csv_fix(const std::string& read_call, const std::string& read_path = "");

}  // namespace gputrain::data
