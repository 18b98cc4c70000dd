#include "gputrain/data/sources.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>

#include "class_id_labels.hpp"
#include "core/build_features.hpp"
#include "data/empty_samples.hpp"
#include "data/postgres/pg_source.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/csv_format.hpp"
#include "gputrain/data/csv_parts.hpp"
#include "gputrain/data/holdout.hpp"
#include "gputrain/data/idx_format.hpp"
#include "gputrain/data/numpy_format.hpp"
#include "gputrain/data/postgres.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/device/system_info.hpp"
#include "image_folder.hpp"
#include "path_text.hpp"
#include "synthetic_teacher.hpp"

namespace gputrain::data {
namespace fs = std::filesystem;
namespace {

using Arrays = std::vector<std::pair<std::string, at::Tensor>>;

// Reads what the config key `key` names (data.val_path, data.labels, ...): its errors name that key,
// since the readers' messages and remedies speak of data.path, which the user may have set right.
template <typename Read>
auto read_for(const std::string& key, const Read& read) -> decltype(read()) {
  try {
    return read();
  } catch (const Error& e) {
    if (std::string(e.what()).rfind("data.", 0) == 0) throw;  // names its key already (a nested read_for)
    std::string remedy = e.remedy();
    for (auto at = remedy.find("data.path"); at != std::string::npos; at = remedy.find("data.path", at + key.size()))
      remedy.replace(at, 9, key);
    const std::string message = key + ": " + e.what();
    if (e.exit_code() == ExitCode::usage) throw UsageError(message, remedy);  // callers tell usage errors by type
    throw Error(message, remedy, e.exit_code());
  }
}

std::string keys_of(const Arrays& arrays) {
  std::string out;
  for (const auto& [k, v] : arrays) out += (out.empty() ? "" : ", ") + k;
  return out;
}

// The array named `wanted`, or when it is empty the first of `usual` that exists.
at::Tensor pick(const Arrays& arrays, const std::string& wanted, const std::vector<std::string>& usual, const std::string& path,
                const std::string& key) {
  for (const auto& [name, t] : arrays)
    if (!wanted.empty() && name == wanted) return t;
  if (!wanted.empty()) throw UsageError("'" + path + "' has no array '" + wanted + "' (" + key + ")", "it has: " + keys_of(arrays));
  for (const auto& u : usual)
    for (const auto& [name, t] : arrays)
      if (name == u) return t;
  std::string tried;
  for (const auto& u : usual) tried += (tried.empty() ? "" : ", ") + u;
  throw UsageError("'" + path + "': which array holds the " + (key == "data.features" ? "features" : "labels") + "? none is named " + tried,
                   "set " + key + " to one of: " + keys_of(arrays));
}

// Targets as the loss wants them and inputs in a compact dtype the model can take.
TensorDataset normalise(TensorDataset set, bool classification, const std::string& what) {
  for (const auto& [array, role] : {std::pair{set.inputs, "features"}, std::pair{set.targets, "labels"}})
    if (array.dim() == 0)
      throw UsageError(what + ": the " + std::string(role) + " are a single value (an array of shape ()), not one per sample",
                       "save one row per sample: features of shape [samples, ...], labels of shape [samples]");
  if (set.inputs.dim() == 1) set.inputs = set.inputs.unsqueeze(1);
  // A bool feature is a 0/1 one, as the CSV reader takes True/False (uint8 would read as pixels).
  if (set.inputs.scalar_type() == at::kDouble || set.inputs.scalar_type() == at::kBool) set.inputs = set.inputs.to(at::kFloat);
  if (set.inputs.is_complex())
    throw UsageError(what + ": features of dtype " + std::string(c10::toString(set.inputs.scalar_type())) + " cannot feed a model",
                     "convert the features to float32 (or uint8 for images)");
  auto& t = set.targets;
  if (classification) {
    t = class_ids_from_labels(std::move(t), what);
  } else {
    if (t.dim() == 1) t = t.unsqueeze(1);
    t = t.to(at::kFloat);
  }
  if (set.inputs.size(0) != t.size(0))
    throw UsageError(what + ": " + std::to_string(set.inputs.size(0)) + " samples of features but " + std::to_string(t.size(0)) + " labels",
                     "the first dimension of features and labels must match");
  if (set.inputs.size(0) == 0)
    throw UsageError(what + ": no samples (features of shape " + c10::str(set.inputs.sizes()) + ")",
                     "the arrays were saved empty: check the filter or query that made them");
  return set;
}

// The one name data.labels gives a file source ("" when unset); a list is for CSV columns only.
std::string one_label(const SourceSpec& spec) {
  if (spec.labels.size() > 1)
    throw UsageError("data.labels lists " + std::to_string(spec.labels.size()) + " names (" + core::join(spec.labels) +
                         "), but data.source " + spec.source + " takes one",
                     std::string("set data.labels to ") + (spec.source == "npy" ? "the labels' .npy file" : "the labels' key") +
                         " (a list of label columns is for csv regression); several targets go in one array of shape [samples, targets]");
  return spec.labels.empty() ? "" : spec.labels.front();
}

TensorDataset from_arrays(const Arrays& arrays, const SourceSpec& spec, const std::string& path, bool classification) {
  const auto inputs = pick(arrays, spec.features.empty() ? "" : spec.features.front(), {"x", "features", "inputs", "data", "images"}, path,
                           "data.features");
  const auto targets = pick(arrays, one_label(spec), {"y", "labels", "label", "targets", "target"}, path, "data.labels");
  return normalise({inputs, targets}, classification, "'" + path + "'");
}

std::string base(const std::string& path) { return fs::path(path).filename().string(); }

struct Pair {
  TensorDataset train, val;
  bool has_val = false;
  std::string train_name, val_name;
};

Pair read_arrays(const SourceSpec& spec, bool classification) {
  Pair p;
  if (spec.path.empty())
    throw UsageError("data.source " + spec.source + " needs data.path", "set data.path to the dataset's file or folder");
  if (spec.source == "npy") {
    const auto labels = one_label(spec);
    if (labels.empty())
      throw UsageError("data.source npy needs data.labels: the .npy file of the labels", npy_labels_fix("data.labels", spec.path));
    // Said before any file is read: the features may take a while.
    if (!spec.val_path.empty() && spec.val_labels.empty())
      throw UsageError("data.val_path is set but data.val_labels is not", npy_labels_fix("data.val_labels", spec.val_path));
    p.train = normalise({read_npy(spec.path), read_for("data.labels", [&] { return read_npy(labels); })}, classification,
                        "'" + spec.path + "' with '" + labels + "'");
    p.train_name = base(spec.path);
    if (!spec.val_path.empty()) {
      p.val = read_for("data.val_path", [&] {
        return normalise({read_npy(spec.val_path), read_for("data.val_labels", [&] { return read_npy(spec.val_labels); })}, classification,
                         "'" + spec.val_path + "' with '" + spec.val_labels + "'");
      });
      p.has_val = true;
      p.val_name = base(spec.val_path);
    }
  } else if (spec.source == "npz" || spec.source == "safetensors") {
    const auto read = [&](const std::string& path) { return spec.source == "npz" ? read_npz(path) : read_safetensors(path); };
    p.train = from_arrays(read(spec.path), spec, spec.path, classification);
    p.train_name = base(spec.path);
    if (!spec.val_path.empty()) {
      p.val = read_for("data.val_path", [&] { return from_arrays(read(spec.val_path), spec, spec.val_path, classification); });
      p.has_val = true;
      p.val_name = base(spec.val_path);
    }
  } else if (spec.source == "mnist") {
    p.train = normalise(read_mnist(spec.path, "train"), classification, "MNIST in '" + spec.path + "'");
    p.train_name = "MNIST train";
    const std::string val_folder = spec.val_path.empty() ? spec.path : spec.val_path;
    if (mnist_has_split(val_folder, "t10k") || !spec.val_path.empty()) {
      const auto read_val = [&] { return normalise(read_mnist(val_folder, "t10k"), classification, "MNIST in '" + val_folder + "'"); };
      p.val = spec.val_path.empty() ? read_val() : read_for("data.val_path", read_val);
      p.has_val = true;
      p.val_name = "MNIST t10k";
    }
  } else if (spec.source == "cifar10") {
    p.train = normalise(read_cifar10(cifar10_files(spec.path, true)), classification, "CIFAR-10 in '" + spec.path + "'");
    p.train_name = "CIFAR-10 training batches";
    const std::string val_folder = spec.val_path.empty() ? spec.path : spec.val_path;
    if (fs::exists(fs::path(val_folder) / "test_batch.bin") || !spec.val_path.empty()) {
      const auto read_val = [&] {
        return normalise(read_cifar10(cifar10_files(val_folder, false)), classification, "CIFAR-10 in '" + val_folder + "'");
      };
      p.val = spec.val_path.empty() ? read_val() : read_for("data.val_path", read_val);
      p.has_val = true;
      p.val_name = "CIFAR-10 test batch";
    }
  }
  return p;
}

// "features a, b, c; label y" (or "labels y1, y2"): up to 8 feature names, else the first 6 and the count.
std::string csv_columns_text(const CsvColumns& columns, const std::vector<std::string>& labels) {
  constexpr std::size_t kShown = 8, kWhenCut = 6;
  std::vector<std::string> features;  // a column of categories with their count: "Sex (2 categories)"
  for (const auto& name : columns.features) {
    const auto column =
        std::find_if(columns.categories.begin(), columns.categories.end(), [&](const CsvCategories& c) { return c.column == name; });
    features.push_back(column == columns.categories.end() ? name
                                                          : name + " (" + std::to_string(column->values.size()) +
                                                                (column->values.size() == 1 ? " category)" : " categories)"));
  }
  std::string names;
  const auto inputs =
      columns.inputs.size() == features.size() ? "" : core::counted(static_cast<std::int64_t>(columns.inputs.size()), "input");
  if (features.size() <= kShown) {
    names = core::join(features) + (inputs.empty() ? "" : ": " + inputs);
  } else {
    names = core::join(std::vector<std::string>(features.begin(), features.begin() + kWhenCut)) + ", ... (" +
            std::to_string(features.size()) + " columns" + (inputs.empty() ? "" : ", " + inputs) + ")";
  }
  std::vector<std::string> unnamed;
  for (const auto position : columns.unnamed) unnamed.push_back(std::to_string(position));
  return (features.size() == 1 ? "feature " : "features ") + names + (labels.size() == 1 ? "; label " : "; labels ") + core::join(labels) +
         (unnamed.empty() ? "" : (unnamed.size() == 1 ? "; unnamed column " : "; unnamed columns ") + core::join(unnamed) + " left out");
}

// A validation file's categories the training file lacks: read as none of its categories, which
// the model has not learnt from.
std::string unseen_categories_note(const CsvCategories& column, std::int64_t rows) {
  return "data.val_path: " + core::counted(column.unseen_rows, "row") + " of " + std::to_string(rows) + " hold" +
         (column.unseen_rows == 1 ? "s" : "") + " a category of '" + column.column + "' that the training data lacks (such as '" +
         column.unseen_example + "'): read as none of its categories, all of its one-hot columns 0";
}

std::int64_t classes_of(const TensorDataset& set) { return set.size() > 0 ? set.targets.max().item<std::int64_t>() + 1 : 0; }

}  // namespace

const std::vector<std::string>& source_names() {
  static const std::vector<std::string> names{"synthetic", "npy",     "npz",          "safetensors", "csv",
                                              "mnist",     "cifar10", "image_folder", "postgres"};
  return names;
}

// Synthetic leads, postgres ends: neither reads files.
std::vector<std::string> file_source_names() { return {source_names().begin() + 1, source_names().end() - 1}; }

namespace {

// data.val_path names the very file or folder data.path does.
bool validates_on_training_data(const SourceSpec& spec) {
  std::error_code ec;
  return !spec.val_path.empty() && fs::equivalent(spec.path, spec.val_path, ec) && !ec;
}

// Synthetic samples are made in RAM, all at once, and labelled by a teacher whose logits take a
// float per class and sample: a data.samples, data.shape or data.classes too large for it is said
// so, not met by the allocator's "can't allocate memory" (or by the kernel's OOM killer).
void refuse_synthetic_beyond_ram(const SourceSpec& spec) {
  const auto need = synthetic_memory(spec.synthetic);
  const double per_sample = need.per_sample + need.labelling_per_sample;  // a bound: only one split's logits at a time
  const double bytes = need.per_sample * static_cast<double>(spec.samples + spec.val_samples) +
                       need.labelling_per_sample * static_cast<double>(std::max(spec.samples, spec.val_samples)) + need.teacher;
  const auto available = device::read_memory_info().available();
  if (available == 0 || bytes <= static_cast<double>(available)) return;
  const double room = 0.8 * static_cast<double>(available);  // a fifth of the memory left for the rest of the run
  const bool classification = spec.task == "classification";
  std::string fix;
  const auto said = [](double b) { return core::format_bytes(static_cast<std::uint64_t>(b)); };
  const std::string fewer_outputs = classification ? "fewer data.classes" : "fewer data.outputs";
  if (need.labelling_per_sample > room) {
    fix = "one sample's logits alone take " + said(need.labelling_per_sample) + " (a float a class): " + fewer_outputs;
  } else if (per_sample > room) {
    fix = "one sample alone takes " + said(per_sample) + ": make data.shape smaller";
  } else if (need.teacher + per_sample > room) {
    fix = "the teacher that labels the synthetic task takes " + said(need.teacher) +
          (need.reference > need.teacher / 2
               ? " for its 4096 reference samples: make data.shape smaller"
               : " for its " + core::counted(spec.synthetic.outputs, classification ? "class" : "output") + ": " + fewer_outputs);
  } else {
    auto most = static_cast<std::int64_t>((room - need.teacher) / per_sample);  // a round figure
    std::int64_t round = 1;
    while (most / round >= 100) round *= 10;
    fix = "lower data.samples (and data.val_samples) to about " + std::to_string(most / round * round) + " in all, or train on files";
  }
  throw UsageError("synthetic data of " + core::counted(spec.samples + spec.val_samples, "sample") + " shaped " +
                       c10::str(c10::IntArrayRef(spec.synthetic.shape)) +
                       (classification ? " in " + core::counted(spec.synthetic.outputs, "class") : "") + " takes " +
                       core::format_bytes(static_cast<std::uint64_t>(bytes)) + " in RAM to make, and " + core::format_bytes(available) +
                       " is available",
                   fix);
}

// data.source synthetic: samples a teacher network labels, made in memory.
Sources open_synthetic(const SourceSpec& spec) {
  const bool classification = spec.task == "classification";
  Sources out;
  refuse_synthetic_beyond_ram(spec);
  const auto told = [&spec](const std::string& set) -> SyntheticProgress {
    if (!spec.synthetic_progress) return {};
    return [&spec, set](const std::string& doing, std::int64_t done, std::int64_t total) {
      spec.synthetic_progress(doing + " the synthetic " + set + " set", done, total);
    };
  };
  const SyntheticTeacher teacher(spec.synthetic);  // built once: with many classes it takes seconds
  const auto train = make_synthetic(teacher, spec.synthetic, spec.samples, 0, told("training"));
  out.train = make_array_dataset(train, "synthetic " + spec.task + " (" + core::counted(spec.samples, "sample") + ")", "synthetic");
  if (spec.val_samples > 0)
    out.val = make_array_dataset(make_synthetic(teacher, spec.synthetic, spec.val_samples, 1, told("validation")),
                                 "synthetic validation (" + core::counted(spec.val_samples, "sample") + ")", "synthetic validation");
  out.classes = classification ? spec.synthetic.outputs : 0;
  return out;
}

// data.source image_folder: one sub-folder per class.
Sources open_images(const SourceSpec& spec) {
  const bool classification = spec.task == "classification";
  Sources out;
  if (!classification)
    throw UsageError("data.source image_folder is for classification (one sub-folder per class)", "set data.task: classification");
  if (spec.path.empty()) throw UsageError("data.source image_folder needs data.path", "set data.path to the folder of class sub-folders");
  if (spec.image_size.size() != 2) throw UsageError("data.image_size must be [height, width]", "e.g. data.image_size: [224, 224]");
  out.train = open_image_folder(spec.path, spec.image_size[0], spec.image_size[1]);
  const auto folders = image_folder_classes(*out.train);  // as on disk: the validation folder's must match
  if (!spec.val_path.empty())
    out.val = read_for("data.val_path", [&] { return open_image_folder(spec.val_path, spec.image_size[0], spec.image_size[1], folders); });
  std::string names_note;
  out.class_names = class_names_as_utf8(folders, names_note);
  if (!names_note.empty()) out.notes.push_back(names_note);
  out.classes = static_cast<std::int64_t>(out.class_names.size());
  // One note for a folder that is both (an evaluation on the training images, a quick check).
  if (out.val && validates_on_training_data(spec)) {
    if (auto note = image_folder_conversion_note(*out.train, "trained or validated on"); !note.empty()) out.notes.push_back(note);
  } else {
    if (auto note = image_folder_conversion_note(*out.train, "trained on"); !note.empty()) out.notes.push_back(note);
    if (auto note = out.val ? image_folder_conversion_note(*out.val, "validated on") : ""; !note.empty()) out.notes.push_back(note);
  }
  return out;
}

// data.source csv: one file or a table in parts, and its validation file read with its columns.
Sources open_csv(const SourceSpec& spec) {
  const bool classification = spec.task == "classification";
  Sources out;
  if (spec.path.empty()) throw UsageError("data.source csv needs data.path", "set data.path to the CSV file");
  // One file, or a table in parts: a folder of them or a pattern matching them. `what` begins
  // its description: "CSV parts (2 files, ".
  const auto read_table = [&](const std::string& path, const CsvSpec& csv, CsvColumns* columns, std::string& what) {
    const auto parts = csv_parts(path);
    what = "CSV " + path + (parts.empty() ? " (" : " (" + core::counted(static_cast<std::int64_t>(parts.size()), "file") + ", ");
    return parts.empty() ? read_csv(path, csv, &out.class_names, columns, spec.read_progress)
                         : read_csv_parts(parts, csv, &out.class_names, columns, spec.read_progress);
  };
  CsvSpec csv{spec.features, spec.labels, classification};
  csv.exclude = spec.exclude;
  csv.categorical = spec.categorical;
  csv.missing = spec.missing;
  CsvColumns columns;
  std::string what;
  const auto train = read_table(spec.path, csv, &columns, what);
  // The columns read, so a column that should not be a feature (an id, a second target) shows.
  out.train = make_array_dataset(train, what + core::counted(train.size(), "sample") + "; " + csv_columns_text(columns, spec.labels) + ")",
                                 base(spec.path));
  std::int64_t classes = classification ? classes_of(train) : 0;
  if (!spec.val_path.empty()) {
    // The training file's feature columns, by name: a validation file whose columns are in
    // another order must still give the model each feature in its place.
    // Its categories are the training file's, each input column in its place.
    CsvSpec val_csv{columns.features, spec.labels,      classification,    ',', "a feature column of data.path",
                    spec.exclude,     spec.categorical, columns.categories};
    val_csv.missing = spec.missing;
    for (const auto& fill : columns.fill_values) val_csv.fill_values.push_back(fill.second);
    CsvColumns val_columns;
    const auto val = read_for("data.val_path", [&] { return read_table(spec.val_path, val_csv, &val_columns, what); });
    classes = classification ? std::max(classes, classes_of(val)) : 0;
    out.val = make_array_dataset(val, what + core::counted(val.size(), "sample") + ")", base(spec.val_path));
    for (const auto& column : val_columns.categories)
      if (column.unseen_rows > 0) out.notes.push_back(unseen_categories_note(column, val.size()));
    out.notes.insert(out.notes.end(), val_columns.notes.begin(), val_columns.notes.end());
  }
  out.classes = out.class_names.empty() ? classes : static_cast<std::int64_t>(out.class_names.size());
  out.notes.insert(out.notes.begin(), columns.notes.begin(), columns.notes.end());
  out.feature_names = columns.inputs;
  out.feature_columns = columns.features;
  out.categories = columns.categories;
  out.fill_values = columns.fill_values;
  return out;
}

// The array formats: npy, npz, safetensors, MNIST's idx, CIFAR's binary batches.
Sources open_arrays(const SourceSpec& spec) {
  const bool classification = spec.task == "classification";
  Sources out;
  bool known = false;
  for (const auto& name : source_names()) known = known || name == spec.source;
  if (!known) throw UsageError("unknown data.source '" + spec.source + "'", "use one of the sources in docs/data.md");
  const auto p = read_arrays(spec, classification);
  out.train =
      make_array_dataset(p.train, spec.source + " " + p.train_name + " (" + core::counted(p.train.size(), "sample") + ")", p.train_name);
  if (p.has_val)
    out.val = make_array_dataset(p.val, spec.source + " " + p.val_name + " (" + core::counted(p.val.size(), "sample") + ")", p.val_name);
  if (classification) out.classes = std::max(classes_of(p.train), p.has_val ? classes_of(p.val) : 0);
  return out;
}

Sources open_unchecked(const SourceSpec& spec) {
  if (spec.source == "synthetic") return open_synthetic(spec);
  if (spec.source == "image_folder") return open_images(spec);
  if (spec.source == "csv") return open_csv(spec);
  if (spec.source == "postgres") {
#if GPUTRAIN_HAVE_POSTGRES
    return postgres::open_postgres(spec);
#else
    throw EnvironmentError("this gputrain was built without PostgreSQL support (libpq-dev was missing when it was built)",
                           "install libpq-dev and build again (scripts/bootstrap.sh installs it)");
#endif
  }
  return open_arrays(spec);
}

// A file read as another format than its name says (data.source csv on x.npy) fails with that
// format's complaint ("binary data, not text"), whose own fix would mislead: the fix is the
// source the file's name gives.
Sources open_as_named(const SourceSpec& spec) {
  try {
    return open_unchecked(spec);
  } catch (const UsageError& e) {
    const std::string what = e.what();
    const auto named = source_for_path(spec.path);
    // Only an error about data.path itself, and one that exists: one about the labels or the
    // validation file names those, and a missing file's fix is its path, whatever its name says.
    std::error_code ec;
    if (named.empty() || named == spec.source || what.find("'" + spec.path + "'") == std::string::npos || !fs::exists(spec.path, ec)) throw;
    throw UsageError(
        what, "data.source is " + spec.source + ", but '" + spec.path + "' looks like " + named + " data: set data.source: " + named);
  }
}

}  // namespace

#if !GPUTRAIN_HAVE_POSTGRES
CopyThroughput raw_copy_throughput(const SourceSpec&) {
  throw EnvironmentError("this gputrain was built without PostgreSQL support (libpq-dev was missing when it was built)",
                         "install libpq-dev and build again (scripts/bootstrap.sh installs it)");
}
#endif

Sources open_sources(const SourceSpec& spec) {
  auto out = open_as_named(spec);
  for (const auto& set : {out.train, out.val})
    if (set) refuse_empty_samples(*set, spec.source);
  if (spec.val_fraction > 0) {
    const bool evaluated_elsewhere = spec.evaluate_on_val_path && !spec.val_path.empty();
    if (out.val && !evaluated_elsewhere)
      throw UsageError("data.val_fraction holds validation samples out of the training set, but there is validation data already: " +
                           out.val->description(),
                       spec.source == "synthetic" ? "set data.val_samples: 0, or data.val_fraction: 0"
                       : spec.val_path.empty()    ? "set data.val_fraction: 0 to validate on it"
                                                  : "remove data.val_path, or set data.val_fraction: 0");
    auto parts = hold_out(out.train, spec.val_fraction, spec.split_seed);
    out.train = std::move(parts.train);
    if (!evaluated_elsewhere) out.val = std::move(parts.val);
  }
  if (out.val && out.val->layout().input_shape != out.train->layout().input_shape)
    throw UsageError("validation samples are shaped " + c10::str(c10::IntArrayRef(out.val->layout().input_shape)) +
                         " but training samples " + c10::str(c10::IntArrayRef(out.train->layout().input_shape)),
                     "validation and training data must have the same sample shape");
  // Validating on the training samples (a quick setup, or a slip): the figures would look better
  // than the model does on data it has not seen, and nothing else would say why.
  if (validates_on_training_data(spec))
    out.notes.push_back(
        "note: data.val_path is data.path itself, so validation measures the samples the model learns from: its figures "
        "show how well it fits them, not how it does on data it has not seen; data.val_fraction: 0.1 (with no "
        "data.val_path) holds a part of them out instead");
  return out;
}

}  // namespace gputrain::data
