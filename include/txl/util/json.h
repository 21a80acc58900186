// The one JSON parser for files people write or edit (configs, vocab.json): strict about
// duplicate keys, which nlohmann::json would otherwise resolve silently to the last one.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace txl {

// Parses `text`; a key that appears twice in one object throws InputError naming its path
// (e.g. "data" or "model.n_layer") and `source` (the file). Syntax errors are thrown as
// nlohmann::json exceptions, as json::parse does, for the caller to word.
nlohmann::json parse_json_strict(const std::string& text, const std::string& source);

}  // namespace txl
