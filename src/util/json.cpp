#include "txl/util/json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/hash.h"

namespace txl {

namespace {

using nlohmann::json;

// The deepest nesting txl reads: its files have a few levels (a study config five or six).
// Refused at the level past it, before the parser goes on: each open level keeps its path,
// so a file nested 100,000 deep would otherwise take minutes and gigabytes to refuse.
constexpr size_t kMaxJsonDepth = 64;

// Builds the document as nlohmann's own DOM parser does, refusing a key that appears twice in
// one object and nesting past kMaxJsonDepth. Each step costs the same however many values an
// object or array holds: nlohmann's parser with a callback (used here before) scans the whole
// enclosing object or array after each object inside it, so a safetensors header of 10^5
// tensors took 78 s to read (issue 54).
class StrictBuilder {
 public:
  explicit StrictBuilder(const std::string& source) : source_(source) {}

  json take() { return std::move(root_); }

  bool null() { return add(json(nullptr)) != nullptr; }
  bool boolean(bool value) { return add(json(value)) != nullptr; }
  bool number_integer(json::number_integer_t value) { return add(json(value)) != nullptr; }
  bool number_unsigned(json::number_unsigned_t value) { return add(json(value)) != nullptr; }
  bool number_float(json::number_float_t value, const json::string_t& /*text*/) {
    return add(json(value)) != nullptr;
  }
  bool string(json::string_t& value) { return add(json(std::move(value))) != nullptr; }
  bool binary(json::binary_t& value) { return add(json(std::move(value))) != nullptr; }

  bool start_object(std::size_t /*elements*/) { return open(json::value_t::object); }
  bool start_array(std::size_t /*elements*/) { return open(json::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(json::string_t& name) {
    Open& object = open_.back();
    auto& members = *object.value;
    if (members.find(name) != members.end()) {
      throw InputError(source_ + ": duplicate key \"" + member_path(object, name) +
                       "\"; each key may appear once (JSON readers would silently keep only "
                       "the last one)");
    }
    next_member_ = &members[name];
    next_key_ = std::move(name);
    return true;
  }

  // Syntax errors leave as json::parse throws them (parse_error, out_of_range for 1e999).
  template <class Exception>
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/, const Exception& e) {
    throw e;
  }

 private:
  // One open object or array: the value being filled and its path ("a.b", "a[2]", "" at the
  // top).
  struct Open {
    json* value;
    std::string path;
  };

  static std::string member_path(const Open& object, const std::string& key) {
    return object.path.empty() ? key : object.path + "." + key;
  }

  // The path of the value about to be added.
  std::string next_path() const {
    if (open_.empty()) return "";
    const Open& parent = open_.back();
    if (parent.value->is_object()) return member_path(parent, next_key_);
    return parent.path + "[" + std::to_string(parent.value->size()) + "]";
  }

  // Puts `value` where the document expects the next one; returns where it went.
  json* add(json&& value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    json& parent = *open_.back().value;
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    *next_member_ = std::move(value);
    return next_member_;
  }

  bool open(json::value_t type) {
    // Refused at the level past the limit, before the parser goes on.
    if (open_.size() >= kMaxJsonDepth) {
      throw InputError(source_ + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                       " levels (at \"" + next_path() + "\"); txl's files have a few levels");
    }
    std::string path = next_path();
    json* value = add(json(type));
    open_.push_back({value, std::move(path)});
    return true;
  }

  bool close() {
    open_.pop_back();
    return true;
  }

  const std::string& source_;
  json root_;
  std::vector<Open> open_;
  json* next_member_ = nullptr;  // the member whose key came last, in the innermost object
  std::string next_key_;
};

}  // namespace

json parse_json_strict(const std::string& text, const std::string& source) {
  StrictBuilder builder(source);
  json::sax_parse(text, &builder);
  return builder.take();
}

nlohmann::json read_json_file(const std::string& path) {
  const std::string text = read_regular_file(path, "a JSON file");
  try {
    return parse_json_strict(text, path);
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() starts with "[json.exception.parse_error.101] "; the rest says line and column.
    std::string detail = e.what();
    const size_t bracket = detail.find("] ");
    if (bracket != std::string::npos) detail = detail.substr(bracket + 2);
    throw InputError(path + ": invalid JSON at byte " + std::to_string(e.byte) + ": " + detail);
  } catch (const nlohmann::json::exception& e) {
    // Not a syntax error but a value the parser cannot hold, e.g. 1e999 (out_of_range.406).
    throw InputError(path + ": invalid JSON: " + e.what());
  }
}

// A JSON value as it appears in a message; long values are cut so one bad array does not
// flood the terminal.
std::string shown(const nlohmann::json& value) {
  constexpr size_t kMaxShown = 60;
  std::string text = value.dump();
  if (text.size() > kMaxShown) text = text.substr(0, kMaxShown) + "...";
  return text;
}

std::string shown(double value) {
  // json::dump prints the shortest text that reads back exactly, but "null" for NaN/inf.
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return nlohmann::json(value).dump();
}

namespace {

std::string digest_of(const nlohmann::json& document) {  // the document less its "digest"
  nlohmann::json rest = document;
  rest.erase("digest");
  const std::string text = rest.dump();
  return hex64(xxh64(text.data(), text.size()));
}

}  // namespace

nlohmann::json with_digest(nlohmann::json document) {
  document["digest"] = digest_of(document);
  return document;
}

bool digest_matches(const nlohmann::json& document) {
  if (!document.is_object()) return false;
  const auto found = document.find("digest");
  return found != document.end() && found->is_string() && *found == digest_of(document);
}

// A number as people write it: whole numbers without ".0" (1e12 as 1000000000000).
std::string shown_number(double value) {
  if (std::isfinite(value) && std::abs(value) < 1e15 && value == std::floor(value)) {
    return std::to_string(static_cast<int64_t>(value));
  }
  return shown(value);
}

}  // namespace txl
