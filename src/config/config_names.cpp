// Names of the configuration's enums as they appear in JSON: one list per enum serves
// to_string, parse_* and reading an enum-valued key (config_keys.h), so they cannot disagree.
#include <string>
#include <utility>
#include <vector>

#include "txl/config/config.h"
#include "txl/config/config_keys.h"
#include "txl/config/encodings.h"
#include "txl/util/error.h"
#include "txl/util/json.h"
#include "txl/util/text.h"

namespace txl {

namespace {

using nlohmann::json;

template <typename E>
using EnumNames = std::vector<std::pair<E, const char*>>;

const EnumNames<TokenizerKind>& names_of(TokenizerKind) {
  static const EnumNames<TokenizerKind> names = {{TokenizerKind::kChar, "char"},
                                                 {TokenizerKind::kByte, "byte"},
                                                 {TokenizerKind::kWord, "word"},
                                                 {TokenizerKind::kBpe, "bpe"},
                                                 {TokenizerKind::kUnigram, "unigram"}};
  return names;
}

// The encodings' names come from their registry (encodings.h), in its order.
const EnumNames<PosEncoding>& names_of(PosEncoding) {
  static const EnumNames<PosEncoding> names = [] {
    EnumNames<PosEncoding> out;
    for (const auto& t : encoding_registry()) out.emplace_back(t.id, t.name);
    return out;
  }();
  return names;
}

const EnumNames<Precision>& names_of(Precision) {
  static const EnumNames<Precision> names = {{Precision::kFp32, "fp32"},
                                             {Precision::kBf16, "bf16"}};
  return names;
}

const EnumNames<EvalSplit>& names_of(EvalSplit) {
  static const EnumNames<EvalSplit> names = {{EvalSplit::kValid, "valid"},
                                             {EvalSplit::kTest, "test"}};
  return names;
}

const EnumNames<CheckpointChoice>& names_of(CheckpointChoice) {
  static const EnumNames<CheckpointChoice> names = {{CheckpointChoice::kBest, "best"},
                                                    {CheckpointChoice::kLast, "last"}};
  return names;
}

template <typename E>
std::vector<std::string> valid_names(E any) {
  std::vector<std::string> out;
  for (const auto& [value, name] : names_of(any)) out.push_back(name);
  return out;
}

template <typename E>
std::string enum_to_string(E value) {
  for (const auto& [candidate, name] : names_of(value)) {
    if (candidate == value) return name;
  }
  // Only reachable through a cast of an out-of-range integer: a programming error.
  return "<invalid " + std::to_string(static_cast<int>(value)) + ">";
}

template <typename E>
E parse_enum(const std::string& name, const std::string& key_path) {
  for (const auto& [value, candidate] : names_of(E{})) {
    if (name == candidate) return value;
  }
  throw InputError(key_path + ": " + json(name).dump() + " is not valid; expected one of " +
                   join(valid_names(E{})));
}

template <typename E>
void read_enum(const json& v, const std::string& path, E& out) {
  if (!v.is_string()) {
    throw InputError(path + " must be a string, one of " + join(valid_names(E{})) + "; got " +
                     shown(v));
  }
  out = parse_enum<E>(v.get<std::string>(), path);
}

}  // namespace

namespace config_keys {

void read_value(const json& v, const std::string& path, TokenizerKind& out) {
  read_enum(v, path, out);
}
void read_value(const json& v, const std::string& path, PosEncoding& out) {
  read_enum(v, path, out);
}
void read_value(const json& v, const std::string& path, Precision& out) { read_enum(v, path, out); }

std::vector<std::string> enum_names(TokenizerKind any) { return valid_names(any); }
std::vector<std::string> enum_names(PosEncoding any) { return valid_names(any); }
std::vector<std::string> enum_names(Precision any) { return valid_names(any); }
std::vector<std::string> enum_names(EvalSplit any) { return valid_names(any); }

}  // namespace config_keys

std::string to_string(TokenizerKind kind) { return enum_to_string(kind); }
std::string to_string(PosEncoding encoding) { return enum_to_string(encoding); }
std::string to_string(Precision precision) { return enum_to_string(precision); }

std::string to_string(EvalSplit split) { return enum_to_string(split); }
std::string to_string(CheckpointChoice choice) { return enum_to_string(choice); }
EvalSplit parse_eval_split(const std::string& name, const std::string& key_path) {
  return parse_enum<EvalSplit>(name, key_path);
}
CheckpointChoice parse_checkpoint_choice(const std::string& name, const std::string& key_path) {
  return parse_enum<CheckpointChoice>(name, key_path);
}

TokenizerKind parse_tokenizer_kind(const std::string& name, const std::string& key_path) {
  return parse_enum<TokenizerKind>(name, key_path);
}
PosEncoding parse_pos_encoding(const std::string& name, const std::string& key_path) {
  return parse_enum<PosEncoding>(name, key_path);
}
Precision parse_precision(const std::string& name, const std::string& key_path) {
  return parse_enum<Precision>(name, key_path);
}

}  // namespace txl
