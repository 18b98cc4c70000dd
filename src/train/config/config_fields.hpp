#pragma once
// How a config field is read, checked and shown: the parsers every key's value goes through (each
// error names file:line:column, what was found and what is allowed) and the builders of a Field
// from them (int_field, choice_field, path_field, ...). config_schema.cpp lists the keys with them.

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config_paths.hpp"
#include "config_schema.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::train::fields {

using Int = std::int64_t;

constexpr Int kNoMax = std::numeric_limits<Int>::max();

// `guess`: "; did you mean 'x'?" or empty.
[[noreturn]] void reject(const FieldValue& v, const std::string& found, const std::string& allowed, const std::string& guess = "");

std::string found_text(const YAML::Node& node);

std::string scalar(const FieldValue& v, const std::string& allowed);

// The shortest text that reads back as exactly `value` (0.001, not 0.0010000000000000000208), and
// whole numbers as people write them (300, not %g's 3e+02).
std::string shortest(double value);

// The integer `text` writes, also as configs often write large counts: 1e5, 100_000 (YAML 1.1's
// and Python's digit separator), 3.0. None for a fraction, or for what is no number.
std::optional<long long> whole_number(const std::string& text);

Int parse_int(const FieldValue& v, Int min, Int max = kNoMax);
/// The same, with `allowed` said when it is not (an integer, or another word such as auto).
Int parse_int(const FieldValue& v, const std::string& allowed, Int min, Int max);

double parse_double(const FieldValue& v, double min, double max = std::numeric_limits<double>::infinity());

bool parse_bool(const FieldValue& v, const std::string& allowed = "true or false");

// What a near-miss of a choice most likely meant: another case ("Adam"), a prefix that fits one
// value only ("bf16", "cos"), or a typo ("cosin"); several values a prefix fits are all named.
std::string guess_choice(const std::string& text, const std::vector<std::string>& allowed);
/// A size or a duration with its unit spelt another way ("8gb", "90min"): "; did you mean '8GB'?",
/// or empty.
std::string size_guess(const std::string& text);
std::string duration_guess(const std::string& text);

std::string parse_choice(const FieldValue& v, const std::vector<std::string>& allowed);

std::string parse_string(const FieldValue& v, const std::string& what);

std::vector<std::string> parse_string_list(const FieldValue& v, const std::string& allowed = "a list of names, e.g. [x1, x2]");

std::vector<double> parse_double_list(const FieldValue& v, double min, double max);

std::vector<Int> parse_int_list(const FieldValue& v, Int min, bool allow_empty);

// An image size: [height, width], or one integer for a square, as torchvision's transforms take it.
std::vector<Int> parse_image_size(const FieldValue& v);

YAML::Node flow_list(const std::vector<Int>& values);

// ---- field builders: `get` is a generic lambda returning a reference into a Config ----

template <typename Get>
Field int_field(std::string key, Get get, Int min, Int max = kNoMax) {
  return {std::move(key), [=](Config& c, const FieldValue& v) { get(c) = parse_int(v, min, max); },
          [=](const Config& c) { return YAML::Node(get(c)); }};
}

template <typename Get>
Field double_field(std::string key, Get get, double min, double max = std::numeric_limits<double>::infinity()) {
  return {std::move(key), [=](Config& c, const FieldValue& v) { get(c) = parse_double(v, min, max); },
          [=](const Config& c) { return YAML::Node(shortest(get(c))); }};
}

template <typename Get>
Field bool_field(std::string key, Get get) {
  return {std::move(key), [=](Config& c, const FieldValue& v) { get(c) = parse_bool(v); },
          [=](const Config& c) { return YAML::Node(get(c)); }};
}

// true, false, or `auto` (stored as nullopt).
template <typename Get>
Field bool_or_auto_field(std::string key, Get get) {
  return {std::move(key),
          [=](Config& c, const FieldValue& v) {
            if (v.node.IsScalar() && v.node.Scalar() == "auto") {
              get(c).reset();
              return;
            }
            get(c) = parse_bool(v, "true, false or auto");
          },
          [=](const Config& c) { return get(c) ? YAML::Node(*get(c)) : YAML::Node("auto"); }};
}

template <typename Get>
Field choice_field(std::string key, Get get, const std::vector<std::string>& allowed) {
  return {std::move(key), [=](Config& c, const FieldValue& v) { get(c) = parse_choice(v, allowed); },
          [=](const Config& c) { return YAML::Node(get(c)); }};
}

template <typename Get>
Field string_field(std::string key, Get get, const std::string& what) {
  return {std::move(key), [=](Config& c, const FieldValue& v) { get(c) = parse_string(v, what); },
          [=](const Config& c) { return YAML::Node(get(c)); }};
}

// A path or name that may be left unset: no value (`val_path:` in a file, `--set data.val_path=`)
// sets it back to "" (none), as its default is.
template <typename Get>
Field optional_string_field(std::string key, Get get, const std::string& what) {
  return {std::move(key), [=](Config& c, const FieldValue& v) { get(c) = v.node.IsNull() ? "" : parse_string(v, what); },
          [=](const Config& c) { return YAML::Node(get(c)); }};
}

// A path: `~` and environment variables expanded as a shell would (expand_path), since a YAML file
// and `--set k=~/x` reach gputrain with them unexpanded. `optional`: no value sets it back to ""
// (none), as optional_string_field does.
template <typename Get>
Field path_field(std::string key, Get get, const std::string& what, bool optional = true) {
  return {
      key,
      [=](Config& c, const FieldValue& v) { get(c) = optional && v.node.IsNull() ? "" : expand_path(parse_string(v, what), key, v.where); },
      [=](const Config& c) { return YAML::Node(get(c)); }};
}

template <typename Get>
Field int_list_field(std::string key, Get get, Int min, bool allow_empty) {
  return {std::move(key), [=](Config& c, const FieldValue& v) { get(c) = parse_int_list(v, min, allow_empty); },
          [=](const Config& c) { return flow_list(get(c)); }};
}

template <typename Get>
Field string_list_field(std::string key, Get get) {
  return {std::move(key), [=](Config& c, const FieldValue& v) { get(c) = parse_string_list(v); },
          [=](const Config& c) {
            YAML::Node list(YAML::NodeType::Sequence);
            for (const auto& x : get(c)) list.push_back(x);
            list.SetStyle(YAML::EmitterStyle::Flow);
            return list;
          }};
}

// One name, or a list of them (data.labels: a file or key, or CSV columns); one prints as a scalar.
template <typename Get>
Field name_or_names_field(std::string key, Get get, const std::string& what) {
  return {std::move(key), [=](Config& c, const FieldValue& v) { get(c) = parse_string_list(v, what); },
          [=](const Config& c) {
            const auto& names = get(c);
            if (names.size() == 1) return YAML::Node(names.front());
            YAML::Node list(YAML::NodeType::Sequence);
            for (const auto& x : names) list.push_back(x);
            list.SetStyle(YAML::EmitterStyle::Flow);
            return list;
          }};
}

template <typename Get>
Field double_list_field(std::string key, Get get, double min, double max = std::numeric_limits<double>::infinity()) {
  return {std::move(key), [=](Config& c, const FieldValue& v) { get(c) = parse_double_list(v, min, max); },
          [=](const Config& c) {
            YAML::Node list(YAML::NodeType::Sequence);
            for (double x : get(c)) list.push_back(shortest(x));
            list.SetStyle(YAML::EmitterStyle::Flow);
            return list;
          }};
}

// true (stored as {"*"}), false (empty), or names: one, or a list.
template <typename Get>
Field flag_or_names_field(std::string key, Get get, const std::string& what) {
  return {std::move(key),
          [=](Config& c, const FieldValue& v) {
            if (v.node.IsScalar()) {
              const auto text = core::lower(v.node.Scalar());
              if (text == "true" || text == "yes" || text == "on") return void(get(c) = {"*"});
              if (text == "false" || text == "no" || text == "off") return void(get(c) = {});
            }
            get(c) = parse_string_list(v, what);
          },
          [=](const Config& c) {
            const auto& names = get(c);
            if (names.empty() || names == std::vector<std::string>{"*"}) return YAML::Node(!names.empty());
            YAML::Node list(YAML::NodeType::Sequence);
            for (const auto& x : names) list.push_back(x);
            list.SetStyle(YAML::EmitterStyle::Flow);
            return list;
          }};
}

// An integer, or `auto` (stored as nullopt).
template <typename Get>
Field int_or_auto_field(std::string key, Get get, Int min, Int max = kNoMax) {
  return {std::move(key),
          [=](Config& c, const FieldValue& v) {
            if (v.node.IsScalar() && v.node.Scalar() == "auto") {
              get(c).reset();
              return;
            }
            const std::string allowed =
                "an integer >= " + std::to_string(min) + (max == kNoMax ? "" : " and <= " + std::to_string(max) + ",") + " or auto";
            get(c) = parse_int(v, allowed, min, max);
          },
          [=](const Config& c) { return get(c) ? YAML::Node(*get(c)) : YAML::Node("auto"); }};
}

// A number in [`min`, `max`], or `off` (stored as nullopt).
template <typename Get>
Field number_or_off_field(std::string key, Get get, double min, double max = std::numeric_limits<double>::infinity()) {
  return {std::move(key),
          [=](Config& c, const FieldValue& v) {
            if (v.node.IsScalar() && v.node.Scalar() == "off") {
              get(c).reset();
              return;
            }
            const std::string allowed = "a number >= " + shortest(min) + (std::isinf(max) ? "" : " and <= " + shortest(max)) + ", or off";
            const std::string text = scalar(v, allowed);
            char* end = nullptr;
            const double value = std::strtod(text.c_str(), &end);
            if (text.empty() || *end != '\0' || !std::isfinite(value) || value < min || value > max) reject(v, found_text(v.node), allowed);
            get(c) = value;
          },
          [=](const Config& c) { return get(c) ? YAML::Node(shortest(*get(c))) : YAML::Node("off"); }};
}

}  // namespace gputrain::train::fields
