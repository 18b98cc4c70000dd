#pragma once
// "did you mean ...?" for a path that does not exist: a typo in a file or folder name
// (peple.csv), another extension (mlp.yml for mlp.yaml, x.csv for x.csv.gz), or another case.

#include <optional>
#include <string>

namespace gputrain::core {

/// An existing path that `path` most likely meant: the same written as this system writes paths
/// when Windows or a browser wrote it ('data\\x.csv', 'file:///data/x.csv'), or found by
/// correcting each name that does not exist to the closest name in its folder (at most 3 of
/// them); nullopt when `path` exists or no correction leads to a path that does. Names differing in their digits alone (step-00000006.pt,
/// part-0004.csv) are never offered: they are other files of a series.
std::optional<std::string> similar_path(const std::string& path);

/// What makes `path` one written for another system, when it is: "; 'C:' names a Windows drive,
/// ...", "; '\\' separates folders on Windows ...", a %NAME% variable, a file:// address; else "".
std::string foreign_path_note(const std::string& path);

/// " (did you mean 'X'?)" with similar_path(path), else " (...)" with foreign_path_note(path), or
/// "" when it has neither: for the end of a "does not exist" message.
std::string did_you_mean(const std::string& path);

}  // namespace gputrain::core
