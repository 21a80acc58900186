#include "txl/util/json.h"

#include <set>
#include <vector>

#include "txl/util/error.h"

namespace txl {

namespace {

using nlohmann::json;

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

}  // namespace txl
