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

// Reads and parses a file strictly (above); a missing or unreadable file, a directory or bad
// JSON throws InputError naming the path.
nlohmann::json read_json_file(const std::string& path);

// A document that carries a digest of its own content, so that an edit or damage after it
// was written is found when it is read (the evaluation cache, a study's cell files, which
// would otherwise turn a changed number into a result). "digest" is the xxh64 of the
// document without it as nlohmann::json dumps it: keys sorted, doubles in their shortest
// form that reads back exactly, so parsing and dumping again gives the same text.
nlohmann::json with_digest(nlohmann::json document);
// Whether `document` is an object whose "digest" matches the rest of it.
bool digest_matches(const nlohmann::json& document);

// A JSON value as it appears in a message, cut after 60 characters so one bad array does not
// flood the terminal; a double as JSON writes it ("nan", "inf" instead of null).
std::string shown(const nlohmann::json& value);
std::string shown(double value);

// A number as people write it: whole numbers without ".0" (1e12 as 1000000000000).
std::string shown_number(double value);

}  // namespace txl
