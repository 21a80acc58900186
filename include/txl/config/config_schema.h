// A JSON Schema (draft 2020-12) of a run configuration, generated from txl's own tables: the
// sections and keys with their types and descriptions (config_keys.h), their defaults (a
// default Config, as config_to_json writes it), enum names (config_names.cpp), ranges
// (config_ranges.h), every encoding's own keys (encodings.h) and model.adaptive's keys.
// Every object says "additionalProperties": false, so a misspelt key is refused.
//
// What it cannot state is left to validate(): rules between keys (d_model = n_head * d_head,
// an encoding's keys only with that encoding, tgt_len_max 0 or >= tgt_len, a subword
// tokenizer's vocab_size). `txl config --schema` prints it; configs/schema.json is that
// output, and a test checks that the file is up to date.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace txl {

nlohmann::json config_schema();

// config_schema() as `txl config --schema` prints it: two-space indent, a final newline.
std::string config_schema_text();

}  // namespace txl
