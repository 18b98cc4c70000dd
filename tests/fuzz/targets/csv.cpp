// CSV tables (data.path x.csv): encodings, quoting, delimiters, numbers, categories and missing
// values. The label column is the header's "label", else its last cell, so that the seeds train;
// each input is read as classification dropping incomplete rows and as regression filling them.
#include <string>

#include "fuzz_input.hpp"
#include "gputrain/data/csv_format.hpp"

namespace {

std::string label_column(std::string_view text) {
  const std::string_view header = text.substr(0, text.find_first_of("\r\n"));
  if (header.find("label") != std::string_view::npos) return "label";
  const std::size_t comma = header.rfind(',');
  std::string last(comma == std::string_view::npos ? header : header.substr(comma + 1));
  if (last.size() >= 2 && last.front() == '"' && last.back() == '"') last = last.substr(1, last.size() - 2);
  return last;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using gputrain::data::CsvSpec;
  const bool gzipped = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  const std::string path = gputrain::fuzz::write_input(gzipped ? "input.csv.gz" : "input.csv", data, size);
  const std::string label = label_column(gputrain::fuzz::as_text(data, size));
  CsvSpec classes;
  classes.labels = {label};
  classes.missing = "drop";
  gputrain::fuzz::expect_read_or_refusal("read_csv (classification)", [&] {
    std::vector<std::string> class_names;
    gputrain::data::CsvColumns columns;
    (void)gputrain::data::read_csv(path, classes, &class_names, &columns);
  });
  CsvSpec targets = classes;
  targets.classification = false;
  targets.missing = "mean";
  gputrain::fuzz::expect_read_or_refusal("read_csv (regression)", [&] { (void)gputrain::data::read_csv(path, targets); });
  return 0;
}
