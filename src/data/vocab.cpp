#include "txl/data/vocab.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "txl/data/corpus.h"
#include "txl/data/tokenizers.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/hash.h"
#include "txl/util/json.h"
#include "txl/util/utf8.h"

namespace txl {

namespace {

constexpr const char* kVocabFormat = "txl-vocab";
constexpr int kVocabVersion = 1;

// 0xFF never occurs in UTF-8, so it separates tokens unambiguously.
constexpr unsigned char kChecksumSeparator = 0xFF;

std::string model_path_beside(const std::string& vocab_path) {
  return (std::filesystem::path(vocab_path).parent_path() / kSubwordModelFile).string();
}

// The model a subword vocab.json names: its file beside vocab.json, checked against the
// recorded XXH64 and against the vocabulary's tokens.
std::shared_ptr<const SubwordModel> read_subword_model(const nlohmann::json& j,
                                                       const std::string& source) {
  const auto bad = [&](const std::string& what) { return InputError(source + ": " + what); };
  const auto name = j.find("model");
  const auto hash = j.find("model_xxh64");
  if (name == j.end() || *name != kSubwordModelFile || hash == j.end() || !hash->is_string()) {
    throw bad(std::string("a subword vocabulary needs \"model\": \"") + kSubwordModelFile +
              "\" and \"model_xxh64\"");
  }
  const std::string path = model_path_beside(source);
  if (!std::filesystem::exists(path)) {
    throw InputError(path + ": missing; the subword vocabulary " + source + " needs its model");
  }
  std::string bytes = read_text_file(path);
  if (hex64(xxh64(bytes.data(), bytes.size())) != hash->get<std::string>()) {
    throw InputError(path + ": damaged or replaced (its XXH64 differs from the one " + source +
                     " records)");
  }
  return SubwordModel::load(std::move(bytes), path);
}

// A problem with a vocab.json, named by its source.
InputError vocab_error(const std::string& source, const std::string& what) {
  return InputError(source + ": " + what);
}

// Known keys only, then the format and version this build reads.
void check_vocab_header(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw vocab_error(source, "a vocabulary must be a JSON object");
  for (const auto& item : j.items()) {
    const auto& k = item.key();
    if (k != "format" && k != "version" && k != "tokenizer" && k != "tokens" && k != "model" &&
        k != "model_xxh64") {
      throw vocab_error(source, "unknown key \"" + k +
                                    "\" (allowed: format, version, tokenizer, tokens, model, "
                                    "model_xxh64)");
    }
  }
  const auto format = j.find("format");
  if (format == j.end() || !format->is_string() || *format != kVocabFormat) {
    throw vocab_error(source, "not a txl vocabulary: \"format\" must be \"" +
                                  std::string(kVocabFormat) + "\"" +
                                  (format == j.end() ? " (missing)" : ", got " + format->dump()));
  }
  const auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer() || *version != kVocabVersion) {
    throw vocab_error(source,
                      "unsupported vocabulary version " +
                          (version == j.end() ? std::string("(missing)") : version->dump()) +
                          ", this build reads version " + std::to_string(kVocabVersion));
  }
}

TokenizerKind read_vocab_tokenizer(const nlohmann::json& j, const std::string& source) {
  const auto tokenizer = j.find("tokenizer");
  const std::string name = tokenizer == j.end()     ? "(missing)"
                           : tokenizer->is_string() ? tokenizer->get<std::string>()
                                                    : tokenizer->dump();
  try {
    return parse_tokenizer_kind(name, "\"tokenizer\"");
  } catch (const InputError& e) {
    throw vocab_error(source, e.what());
  }
}

// "tokens": distinct strings the tokenizer accepts, with <unk> (and <eos> where the tokenizer
// ends lines with it).
std::vector<std::string> read_vocab_tokens(const nlohmann::json& j, TokenizerKind kind,
                                           const std::string& source) {
  const TokenizerDef& def = tokenizer_def(kind);
  const auto tokens_it = j.find("tokens");
  if (tokens_it == j.end() || !tokens_it->is_array()) {
    throw vocab_error(source, "\"tokens\" must be an array of strings");
  }
  std::vector<std::string> tokens;
  tokens.reserve(tokens_it->size());
  std::unordered_map<std::string, size_t> seen;
  for (size_t i = 0; i < tokens_it->size(); ++i) {
    const auto& t = (*tokens_it)[i];
    const std::string where = "tokens[" + std::to_string(i) + "]";
    if (!t.is_string()) throw vocab_error(source, where + " must be a string, got " + t.dump());
    const auto& s = t.get_ref<const std::string&>();
    const std::string problem = def.token_problem(s, source);
    if (!problem.empty()) throw vocab_error(source, where + " " + problem);
    const auto [it, fresh] = seen.emplace(s, i);
    if (!fresh) {
      throw vocab_error(
          source, where + " \"" + s + "\" duplicates tokens[" + std::to_string(it->second) + "]");
    }
    tokens.push_back(s);
  }
  if (seen.count(kUnkToken) == 0) {
    throw vocab_error(source, "\"tokens\" lacks " + std::string(kUnkToken));
  }
  if (def.eos_per_line && seen.count(kEosToken) == 0) {
    throw vocab_error(source, "\"tokens\" lacks " + std::string(kEosToken) + " (required by the " +
                                  to_string(kind) + " tokenizer)");
  }
  return tokens;
}

}  // namespace

Vocab::Vocab(TokenizerKind kind, std::shared_ptr<const SubwordModel> model)
    : Vocab(kind, model->pieces()) {
  subword_ = std::move(model);
}

Vocab::Vocab(TokenizerKind kind, std::vector<std::string> tokens)
    : kind_(kind), tokens_(std::move(tokens)) {
  index_.reserve(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (!index_.emplace(tokens_[i], static_cast<int64_t>(i)).second) {
      throw std::invalid_argument("Vocab: duplicate token \"" + tokens_[i] + "\"");
    }
  }
  const auto unk = index_.find(kUnkToken);
  if (unk == index_.end()) throw std::invalid_argument("Vocab: tokens lack <unk>");
  unk_id_ = unk->second;
}

bool Vocab::contains(const std::string& token) const { return index_.count(token) != 0; }

int64_t Vocab::id(const std::string& token) const {
  const auto it = index_.find(token);
  return it == index_.end() ? unk_id_ : it->second;
}

const std::string& Vocab::token(int64_t id) const {
  if (id < 0 || id >= size()) {
    throw std::out_of_range("token id " + std::to_string(id) + " outside the vocabulary [0, " +
                            std::to_string(size()) + ")");
  }
  return tokens_[static_cast<size_t>(id)];
}

uint64_t Vocab::checksum() const {
  Fnv1a64 h;
  h.add(to_string(kind_));
  for (const auto& t : tokens_) {
    h.add_byte(kChecksumSeparator);
    h.add(t);
  }
  if (subword_) {
    h.add_byte(kChecksumSeparator);
    h.add(subword_->bytes());
  }
  return h.value();
}

nlohmann::json Vocab::to_json() const {
  nlohmann::json j{{"format", kVocabFormat},
                   {"version", kVocabVersion},
                   {"tokenizer", to_string(kind_)},
                   {"tokens", tokens_}};
  if (subword_) {
    j["model"] = kSubwordModelFile;
    j["model_xxh64"] = hex64(xxh64(subword_->bytes().data(), subword_->bytes().size()));
  }
  return j;
}

Vocab Vocab::from_json(const nlohmann::json& j, const std::string& source) {
  check_vocab_header(j, source);
  const TokenizerKind kind = read_vocab_tokenizer(j, source);
  std::vector<std::string> tokens = read_vocab_tokens(j, kind, source);
  if (!tokenizer_def(kind).subword) return Vocab(kind, std::move(tokens));
  auto model = read_subword_model(j, source);
  if (model->pieces() != tokens) {
    throw vocab_error(source,
                      std::string("\"tokens\" differ from the pieces of ") + kSubwordModelFile);
  }
  return Vocab(kind, std::move(model));
}

void Vocab::save(const std::string& path) const {
  if (subword_) write_file_atomic(model_path_beside(path), subword_->bytes());
  write_file_atomic(path, to_json().dump(1) + "\n");
}

Vocab Vocab::load(const std::string& path) {
  const std::string text = read_regular_file(path, "vocab.json");
  nlohmann::json j;
  try {
    j = parse_json_strict(text, path);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for 1e999
    throw InputError(path + ": invalid JSON: " + e.what());
  }
  return from_json(j, path);
}

bool operator==(const Vocab& a, const Vocab& b) {
  const auto model = [](const Vocab& v) { return v.subword() ? v.subword()->bytes() : ""; };
  return a.kind() == b.kind() && a.tokens() == b.tokens() && model(a) == model(b);
}

}  // namespace txl
