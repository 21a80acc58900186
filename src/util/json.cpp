#include "txl/util/json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
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

// One open object or array while parsing: its path, the keys seen so far (objects) or the
// number of elements so far (arrays), and the key whose value comes next.
struct Container {
  std::string path;
  bool is_object = true;
  std::set<std::string> keys;
  std::string key;
  size_t elements = 0;
};

// The path of the value about to start inside `parent`: "a.b" under an object, "a[2]" in an
// array, "" at the top level.
std::string child_path(std::vector<Container>& open) {
  if (open.empty()) return "";
  Container& parent = open.back();
  if (parent.is_object) return parent.path.empty() ? parent.key : parent.path + "." + parent.key;
  return parent.path + "[" + std::to_string(parent.elements++) + "]";
}

}  // namespace

json parse_json_strict(const std::string& text, const std::string& source) {
  std::vector<Container> open;
  const json::parser_callback_t check = [&](int /*depth*/, json::parse_event_t event,
                                            json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start: {
        if (open.size() >= kMaxJsonDepth) {
          throw InputError(source + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                           " levels (at \"" + child_path(open) +
                           "\"); txl's files have a few levels");
        }
        Container c;
        c.path = child_path(open);
        c.is_object = event == json::parse_event_t::object_start;
        open.push_back(std::move(c));
        break;
      }
      case json::parse_event_t::key: {
        Container& object = open.back();
        object.key = parsed.get<std::string>();
        if (!object.keys.insert(object.key).second) {
          const std::string path =
              object.path.empty() ? object.key : object.path + "." + object.key;
          throw InputError(source + ": duplicate key \"" + path +
                           "\"; each key may appear once (JSON readers would silently keep only "
                           "the last one)");
        }
        break;
      }
      case json::parse_event_t::value:
        // A scalar element of an array takes an index; in an object the key named it.
        if (!open.empty() && !open.back().is_object) ++open.back().elements;
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        open.pop_back();
        break;
    }
    return true;
  };
  return json::parse(text, check);
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
