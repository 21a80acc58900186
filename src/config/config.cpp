// Configuration parsing, serialisation and --set overrides (validate() is in validate.cpp).
//
// Each section is described once, by a table of fields (JSON name, member pointer, short
// doc). Parsing, config_to_json, --set overrides and the "valid keys" lists in error messages
// all walk the same tables, so a key added to a table is accepted, written and listed
// everywhere at once. The file stays over 400 lines for that reason: the tables and the
// templates that walk them (Field<S>, for_each_section, read_section, apply_override) would
// otherwise have to move into a header that nothing else should use.
#include "txl/config/config.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <type_traits>
#include <utility>
#include <variant>

#include "txl/config/encodings.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/json.h"
#include "txl/util/text.h"
#include "txl/util/utf8.h"

namespace txl {

namespace {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Enum names: one list per enum serves both to_string and parse_*, so they cannot disagree.

template <typename E>
using EnumNames = std::vector<std::pair<E, const char*>>;

const EnumNames<TokenizerKind>& names_of(TokenizerKind) {
  static const EnumNames<TokenizerKind> names = {{TokenizerKind::kChar, "char"},
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

// ---------------------------------------------------------------------------------------------
// Reading one JSON value into one member. Messages carry the key path but not the source;
// callers prefix the source (file path or --set assignment).

void read_value(const json& v, const std::string& path, int64_t& out) {
  if (!v.is_number_integer()) throw InputError(path + " must be an integer, got " + shown(v));
  if (v.is_number_unsigned() &&
      v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    throw InputError(path + " must be an integer that fits in 64 bits, got " + shown(v));
  }
  out = v.get<int64_t>();
}

void read_value(const json& v, const std::string& path, double& out) {
  // Integers are accepted: "lr": 1 means 1.0.
  if (!v.is_number()) throw InputError(path + " must be a number, got " + shown(v));
  out = v.get<double>();
}

void read_value(const json& v, const std::string& path, bool& out) {
  if (!v.is_boolean()) throw InputError(path + " must be true or false, got " + shown(v));
  out = v.get<bool>();
}

void read_value(const json& v, const std::string& path, std::string& out) {
  if (!v.is_string()) throw InputError(path + " must be a string, got " + shown(v));
  out = v.get<std::string>();
}

void read_value(const json& v, const std::string& path, std::vector<int64_t>& out) {
  if (!v.is_array()) {
    throw InputError(path + " must be a non-empty array of positive integers, got " + shown(v));
  }
  std::vector<int64_t> values;
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t value = 0;
    read_value(v[i], path + "[" + std::to_string(i) + "]", value);
    values.push_back(value);
  }
  out = std::move(values);
}

template <typename E>
void read_enum(const json& v, const std::string& path, E& out) {
  if (!v.is_string()) {
    throw InputError(path + " must be a string, one of " + join(valid_names(E{})) + "; got " +
                     shown(v));
  }
  out = parse_enum<E>(v.get<std::string>(), path);
}

void read_value(const json& v, const std::string& path, TokenizerKind& out) {
  read_enum(v, path, out);
}
void read_value(const json& v, const std::string& path, PosEncoding& out) {
  read_enum(v, path, out);
}
void read_value(const json& v, const std::string& path, Precision& out) { read_enum(v, path, out); }

json write_value(int64_t value) { return value; }
json write_value(double value) { return value; }
json write_value(bool value) { return value; }
json write_value(const std::string& value) { return value; }
json write_value(const std::vector<int64_t>& value) { return value; }
json write_value(TokenizerKind value) { return to_string(value); }
json write_value(PosEncoding value) { return to_string(value); }
json write_value(Precision value) { return to_string(value); }

// ---------------------------------------------------------------------------------------------
// The tables. The member pointer's type is the field's kind; std::visit dispatches on it.

template <typename S>
struct Field {
  const char* name;
  std::variant<int64_t S::*, double S::*, bool S::*, std::string S::*, std::vector<int64_t> S::*,
               TokenizerKind S::*, PosEncoding S::*, Precision S::*>
      member;
  const char* doc;
};

template <typename S>
using Fields = std::vector<Field<S>>;

const Fields<DataConfig>& data_fields() {
  using S = DataConfig;
  static const Fields<S> fields = {
      {"dir", &S::dir, "folder with train.txt, valid.txt, test.txt (required)"},
      {"tokenizer", &S::tokenizer,
       "char (code points) | word (whitespace + <eos>) | bpe | unigram (sentencepiece subwords)"},
      {"min_freq", &S::min_freq, "word: rarer training words become <unk>"},
      {"max_vocab", &S::max_vocab, "word: keep the most frequent N (0 = no limit)"},
      {"vocab_size", &S::vocab_size, "bpe, unigram: the subword vocabulary's size (required)"},
  };
  return fields;
}

const Fields<ModelConfig>& model_fields() {
  using S = ModelConfig;
  static const Fields<S> fields = {
      {"pos_encoding", &S::pos_encoding, "position encoding: one of `txl encodings`"},
      {"n_layer", &S::n_layer, "number of transformer blocks"},
      {"d_model", &S::d_model, "model width; must equal n_head * d_head"},
      {"n_head", &S::n_head, "attention heads"},
      {"d_head", &S::d_head, "width of one head"},
      {"d_inner", &S::d_inner, "feed-forward width"},
      {"dropout", &S::dropout, "dropout on embeddings, positions, attention output, FF"},
      {"dropatt", &S::dropatt, "dropout on attention probabilities"},
      {"pre_norm", &S::pre_norm, "false: post-norm blocks as in Transformer-XL"},
      {"tie_weights", &S::tie_weights, "output layer shares the embedding matrix"},
      {"clamp_len", &S::clamp_len, "relative: cap distances at this value (0 = no cap)"},
      {"max_rel_dist", &S::max_rel_dist, "relative_learned: table of 2*max_rel_dist-1 distances"},
      {"init_std", &S::init_std, "weights start as N(0, init_std)"},
  };
  return fields;
}

const Fields<TrainConfig>& train_fields() {
  using S = TrainConfig;
  static const Fields<S> fields = {
      {"tgt_len", &S::tgt_len, "tokens per segment"},
      {"mem_len", &S::mem_len, "memory length (must be 0 for absolute)"},
      {"tgt_len_max", &S::tgt_len_max,
       "> 0: each step draws its segment length from [tgt_len, tgt_len_max] (0 = fixed)"},
      {"batch_size", &S::batch_size, "number of contiguous streams"},
      {"max_steps", &S::max_steps, "optimizer steps"},
      {"lr", &S::lr, "peak learning rate"},
      {"warmup_steps", &S::warmup_steps, "linear warm-up, then cosine decay"},
      {"min_lr_ratio", &S::min_lr_ratio, "cosine decays to lr * min_lr_ratio"},
      {"weight_decay", &S::weight_decay, "AdamW decoupled weight decay"},
      {"clip", &S::clip, "gradient-norm clip (0 = off)"},
      {"seed", &S::seed, "random seed"},
      {"log_interval", &S::log_interval, "steps between progress lines"},
      {"eval_interval", &S::eval_interval, "steps between validations (0 = only at the end)"},
      {"eval_max_tokens", &S::eval_max_tokens, "validation tokens per evaluation (0 = all)"},
      {"threads", &S::threads, "CPU threads (0 = all cores)"},
      {"device", &S::device, "cpu | cuda | cuda:N | auto (cuda:0 if there is one, else cpu)"},
      {"precision", &S::precision, "fp32 | bf16 (CPU autocast; weights stay fp32)"},
      {"skip_nonfinite", &S::skip_nonfinite,
       "skip steps with a NaN/Inf loss or gradient (false: stop)"},
  };
  return fields;
}

const Fields<EvalConfig>& eval_fields() {
  using S = EvalConfig;
  static const Fields<S> fields = {
      {"lengths", &S::lengths, "evaluated window lengths"},
      {"split", &S::split, "valid | test"},
      {"batch_tokens", &S::batch_tokens, "windows per forward pass ~ batch_tokens / length"},
  };
  return fields;
}

const std::vector<std::string>& section_names() {
  static const std::vector<std::string> names = {"data", "model", "train", "eval"};
  return names;
}

// Calls f(name, fields, section member of Config) for each section, in file order.
template <typename F>
void for_each_section(F&& f) {
  f("data", data_fields(), &Config::data);
  f("model", model_fields(), &Config::model);
  f("train", train_fields(), &Config::train);
  f("eval", eval_fields(), &Config::eval);
}

template <typename S>
std::vector<std::string> key_names(const Fields<S>& fields) {
  std::vector<std::string> names;
  for (const Field<S>& field : fields) names.push_back(field.name);
  return names;
}

template <typename S>
const Field<S>* find_field(const Fields<S>& fields, const std::string& key) {
  for (const Field<S>& field : fields) {
    if (key == field.name) return &field;
  }
  return nullptr;
}

// Keys a section accepts beside its fields: "model" also takes every encoding's options
// (validate() then checks that they belong to the chosen encoding).
template <typename S>
std::vector<std::string> extra_key_names(const S* /*section*/) {
  return {};
}
std::vector<std::string> extra_key_names(const ModelConfig* /*section*/) {
  std::vector<std::string> keys;
  for (const auto& t : encoding_registry()) {
    for (const auto& option : t.options) keys.emplace_back(option.key);
  }
  return keys;
}

template <typename S>
std::string unknown_key_message(const std::string& section, const std::string& key,
                                const Fields<S>& fields) {
  std::vector<std::string> valid = key_names(fields);
  for (auto& extra : extra_key_names(static_cast<const S*>(nullptr))) valid.push_back(extra);
  return "unknown key \"" + section + "." + key + "\"; valid keys in \"" + section +
         "\": " + join(valid) + suggestion(key, valid);
}

std::string unknown_section_message(const std::string& key) {
  return "unknown key \"" + key + "\"; valid top-level keys: " + join(section_names()) +
         suggestion(key, section_names());
}

template <typename S>
void read_field(const Field<S>& field, const json& value, const std::string& path, S& out) {
  std::visit([&](auto member) { read_value(value, path, out.*member); }, field.member);
}

// A key that is no field of the section; returns false when the section has no such key.
template <typename S>
bool read_extra(const json& /*v*/, const std::string& /*key*/, const std::string& /*path*/,
                S& /*out*/) {
  return false;
}
// model: an option of some encoding, stored by name.
bool read_extra(const json& v, const std::string& key, const std::string& path, ModelConfig& out) {
  const EncodingTraits* owner = encoding_with_option(key);
  if (!owner) return false;
  if (find_encoding_option(*owner, key)->integer) {
    int64_t value = 0;
    read_value(v, path, value);
    out.encoding_options[key] = static_cast<double>(value);
  } else {
    double value = 0;
    read_value(v, path, value);
    out.encoding_options[key] = value;
  }
  return true;
}

template <typename S>
void read_section(const json& j, const std::string& name, const Fields<S>& fields, S& out) {
  if (!j.is_object()) throw InputError(name + " must be an object, got " + shown(j));
  for (const auto& [key, value] : j.items()) {
    const Field<S>* field = find_field(fields, key);
    if (field) {
      read_field(*field, value, name + "." + key, out);
    } else if (!read_extra(value, key, name + "." + key, out)) {
      throw InputError(unknown_key_message(name, key, fields));
    }
  }
}

// The chosen encoding's options with defaults filled in, as config_to_json writes them.
void write_encoding_options(const ModelConfig& model, json& out) {
  for (const auto& option : encoding_traits(model.pos_encoding).options) {
    out[option.key] = option.integer ? json(encoding_option_int(model, option.key))
                                     : json(encoding_option(model, option.key));
  }
}

std::string prefixed(const std::string& source, const std::string& message) {
  return source.empty() ? message : source + ": " + message;
}

// Splits "key=value" at the first '='; values may contain '=' themselves.
std::pair<std::string, std::string> split_assignment(const std::string& assignment) {
  const size_t eq = assignment.find('=');
  const std::string usage = "expected section.key=value, e.g. model.n_layer=6";
  if (eq == std::string::npos) throw InputError("--set " + assignment + ": missing '='; " + usage);
  if (eq == 0) throw InputError("--set " + assignment + ": empty key; " + usage);
  return {assignment.substr(0, eq), assignment.substr(eq + 1)};
}

std::optional<json> try_parse_json(const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::exception&) {  // parse_error, and out_of_range for e.g. 1e999
    return std::nullopt;
  }
}

// The JSON value an override's text stands for, given the kind of the key it sets.
template <typename T>
json override_value(const std::string& text, T*) {
  const std::optional<json> parsed = try_parse_json(text);
  if constexpr (std::is_same_v<T, std::string> || std::is_enum_v<T>) {
    // String keys take the text itself unless it was quoted, so data.dir=2024 names a folder.
    return parsed && parsed->is_string() ? *parsed : json(text);
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    if (parsed && parsed->is_array()) return *parsed;
    // Shell-friendly list: eval.lengths=64,128,256 (and eval.lengths=64 for one length).
    json list = json::array();
    if (text.empty()) return list;
    std::stringstream items(text);
    std::string item;
    while (std::getline(items, item, ',')) {
      const std::optional<json> number = try_parse_json(item);
      list.push_back(number ? *number : json(item));
    }
    if (text.back() == ',') list.push_back("");  // getline drops a trailing empty item
    return list;
  } else {
    return parsed ? *parsed : json(text);
  }
}

}  // namespace

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

Config config_from_json(const json& j, const std::string& source) {
  try {
    if (!j.is_object()) {
      throw InputError("the configuration must be a JSON object with sections " +
                       join(section_names()) + ", got " + shown(j));
    }
    const auto& names = section_names();
    for (const auto& item : j.items()) {
      if (std::find(names.begin(), names.end(), item.key()) == names.end()) {
        throw InputError(unknown_section_message(item.key()));
      }
    }
    Config config;
    for_each_section([&](const std::string& name, const auto& fields, auto section) {
      if (j.contains(name)) read_section(j.at(name), name, fields, config.*section);
    });
    // The only key without a default: there is no sensible corpus to fall back on.
    if (!j.contains("data") || !j.at("data").contains("dir")) {
      throw InputError("data.dir is required: the folder with train.txt, valid.txt, test.txt");
    }
    validate(config);
    return config;
  } catch (const InputError& e) {
    throw InputError(prefixed(source, e.what()));
  }
}

json config_to_json(const Config& config) {
  json j = json::object();
  for_each_section([&](const std::string& name, const auto& fields, auto section) {
    json& out = j[name] = json::object();
    for (const auto& field : fields) {
      std::visit([&](auto member) { out[field.name] = write_value((config.*section).*member); },
                 field.member);
    }
  });
  write_encoding_options(config.model, j["model"]);
  return j;
}

void apply_override(json& j, const std::string& assignment) {
  // JSON strings are UTF-8: a value that is not could be neither printed nor saved.
  check_utf8(assignment, "--set " + assignment);
  const auto [raw_key, text] = split_assignment(assignment);
  const std::string context = "--set " + assignment;
  // Tolerate "--set 'model.n_layer = 6'".
  const size_t first = raw_key.find_first_not_of(" \t");
  const size_t last = raw_key.find_last_not_of(" \t");
  const std::string key = first == std::string::npos ? "" : raw_key.substr(first, last - first + 1);
  const size_t dot = key.find('.');
  if (key.empty() || dot == std::string::npos || dot == 0 || dot + 1 == key.size() ||
      key.find('.', dot + 1) != std::string::npos) {
    throw InputError(context + ": the key must be section.key with section one of " +
                     join(section_names()) + ", e.g. model.n_layer=6");
  }
  const std::string section_name = key.substr(0, dot);
  const std::string field_name = key.substr(dot + 1);

  const auto& names = section_names();
  if (std::find(names.begin(), names.end(), section_name) == names.end()) {
    throw InputError(context + ": unknown section \"" + section_name +
                     "\"; valid sections: " + join(names) + suggestion(section_name, names));
  }
  if (j.is_null()) j = json::object();
  if (!j.is_object()) throw InputError(context + ": the configuration is not a JSON object");

  for_each_section([&](const std::string& name, const auto& fields, auto section) {
    if (name != section_name) return;
    using Section = std::remove_reference_t<decltype(Config{}.*section)>;
    const auto* field = find_field(fields, field_name);
    json value;
    // Type errors are reported here, against the --set that caused them, not the file.
    try {
      if (field) {
        std::visit(
            [&](auto member) {
              using T = std::remove_reference_t<decltype(Section{}.*member)>;
              value = override_value(text, static_cast<T*>(nullptr));
            },
            field->member);
        auto scratch = Config{}.*section;
        read_field(*field, value, key, scratch);
      } else {
        value = override_value(text, static_cast<double*>(nullptr));
        auto scratch = Config{}.*section;
        if (!read_extra(value, field_name, key, scratch)) {
          throw InputError(unknown_key_message(name, field_name, fields));
        }
      }
    } catch (const InputError& e) {
      throw InputError(context + ": " + e.what());
    }
    json& target = j[name];
    if (target.is_null()) target = json::object();
    if (!target.is_object()) {
      throw InputError(context + ": \"" + name + "\" in the configuration is not an object, got " +
                       shown(target));
    }
    target[field_name] = std::move(value);
  });
}

}  // namespace txl
