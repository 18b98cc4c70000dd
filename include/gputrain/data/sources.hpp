#pragma once
// `data.source` and its keys, turned into the training and validation datasets.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gputrain/data/csv_format.hpp"
#include "gputrain/data/dataset.hpp"
#include "gputrain/data/tensor_dataset.hpp"

namespace gputrain::data {

/// The sources gputrain reads, as spelled in YAML.
const std::vector<std::string>& source_names();
/// The same less synthetic: the sources that read files.
std::vector<std::string> file_source_names();

/// The data.source that reads `path`, told from its extension (.npy, .npz, .safetensors, .csv,
/// .tsv) or, for a folder, from what it holds (CIFAR-10's data_batch_1.bin, MNIST's IDX files,
/// sub-folders of images); a file that does not exist by its extension alone; empty when it cannot
/// tell.
std::string source_for_path(const std::string& path);

/// A format people keep data in that gputrain does not read, told from `path`'s extension
/// (Parquet, Feather, JSON lines, Excel, HDF5, a torch.save or pickle file, TFRecord, an
/// archive): what it is, and the command that writes it as one gputrain reads. Empty `what` when
/// the extension names none of them.
struct FormatNotRead {
  std::string what, fix;
};
FormatNotRead format_not_read(const std::string& path);

/// What `path`'s first lines read as when they are delimited text under another name than .csv
/// or .tsv (Excel's "Text (Tab delimited)" export is a .txt; many data sets are .data or .dat):
/// "tab-separated text, its first row a, b, label"; empty for other bytes.
std::string delimited_text(const std::string& path);

/// What the data section of a config says (train::Config::data, without depending on train).
struct SourceSpec {
  std::string source = "synthetic";
  std::string task = "classification";  ///< classification or regression
  std::string path;                     ///< meaning per source: docs/data.md
  std::vector<std::string> labels;      ///< npy: one file; npz/safetensors: one key; csv: one column, or several (regression)
  std::string val_path, val_labels;
  std::vector<std::string> features;
  std::vector<std::string> exclude;                ///< csv: columns left out of the default features
  std::vector<std::string> categorical;            ///< csv: feature columns of categories, read as one-hot columns
  std::string missing = "error";                   ///< csv, postgres: a missing feature value: error, drop, mean or zero
  std::vector<std::int64_t> image_size{224, 224};  ///< image_folder: height, width
  SyntheticSpec synthetic;                         ///< synthetic only
  std::int64_t samples = 0, val_samples = 0;
  double val_fraction = 0;       ///< > 0: hold this part of the training samples out for validation
  std::uint64_t split_seed = 0;  ///< seeds that hold-out
  /// An evaluation (`train --evaluate`) of a run that held val_fraction out, on other data given as
  /// val_path: the hold-out still leaves the training samples that run had (its standardisation and
  /// class weights were measured on them), and val_path is the validation data.
  bool evaluate_on_val_path = false;
  std::string dsn, query, val_query;  ///< postgres: the connection string and the queries of the training and validation rows
  int streams = 0;                    ///< postgres: the most COPY streams a query is read over (0: auto)
  ReadProgress read_progress;         ///< told how far a long parse (a large CSV) is; may throw to stop it
  /// Told how far a query's rows are (postgres, ~5 times a second): the key it reads ("data.query"),
  /// rows and bytes received, and the planner's estimate of the rows; may throw to stop (the query
  /// is then cancelled on the server).
  std::function<void(const std::string& what, std::int64_t rows, std::int64_t estimated_rows, std::uint64_t bytes)> row_progress;
  /// Told how far making a large synthetic set is ("generating the synthetic training set"); may
  /// throw to stop it.
  SyntheticProgress synthetic_progress;
};

struct Sources {
  std::shared_ptr<const Dataset> train, val;  ///< val is null when there is no validation data
  std::int64_t classes = 0;                   ///< classification: from the labels (max id + 1) or the folders
  std::vector<std::string> class_names;       ///< image folders and CSV label names
  std::vector<std::string> feature_names;     ///< CSV: the inputs' names, in their order ("Sex=male" for a category); empty for arrays
  std::vector<std::string> feature_columns;   ///< CSV: the feature columns read, in the model's order
  std::vector<CsvCategories> categories;      ///< CSV: data.categorical's columns and their categories
  /// CSV, postgres with data.missing mean or zero: the value each feature column of numbers takes
  /// where one is missing (the training data's mean, or 0).
  std::vector<std::pair<std::string, double>> fill_values;
  std::vector<std::string> notes;  ///< what a run says of the files before training (images in formats not read)
  /// Where the rows came from, for checkpoints and model.safetensors' metadata (postgres: the
  /// queries, their row counts and checksums of the rows, as "data.query", "data.rows",
  /// "data.checksum", "data.val_..."); empty for files.
  std::map<std::string, std::string> provenance;
  int copy_streams = 0;  ///< postgres: the COPY streams data.query was read over (data.streams)
};

/// Opens (memory-maps, parses or scans) the source; throws UsageError naming the file and what is
/// wrong. Image folders are only listed here; their files are decoded as samples are read.
Sources open_sources(const SourceSpec& spec);

}  // namespace gputrain::data
