// Vocabulary: token strings <-> integer ids, saved in a run directory as vocab.json.
//
// Ids are dense 0..size()-1. Every vocabulary holds <unk> (tokens never seen in training
// map to it); word and subword vocabularies also hold <eos> (one per line end). A subword
// vocabulary (bpe, unigram) is its sentencepiece model's pieces, and the model itself is
// saved beside vocab.json as tokenizer.model.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "txl/config/config.h"
#include "txl/data/subword_model.h"

namespace txl {

inline constexpr const char* kUnkToken = "<unk>";
inline constexpr const char* kEosToken = "<eos>";
// A subword vocabulary's model, next to its vocab.json.
inline constexpr const char* kSubwordModelFile = "tokenizer.model";

class Vocab {
 public:
  Vocab() = default;
  // `tokens` must be distinct and contain kUnkToken; order defines the ids.
  Vocab(TokenizerKind kind, std::vector<std::string> tokens);
  // A subword vocabulary (kind kBpe or kUnigram): the model's pieces, in id order.
  Vocab(TokenizerKind kind, std::shared_ptr<const SubwordModel> model);

  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  TokenizerKind kind() const { return kind_; }
  bool contains(const std::string& token) const;
  int64_t id(const std::string& token) const;  // unk_id() when absent
  const std::string& token(int64_t id) const;  // throws std::out_of_range for a bad id
  int64_t unk_id() const { return unk_id_; }
  const std::vector<std::string>& tokens() const { return tokens_; }
  // The subword model, or null for char and word vocabularies.
  const SubwordModel* subword() const { return subword_.get(); }

  // FNV-1a 64 over kind, tokens and a subword model's bytes: identifies a vocabulary in
  // checkpoints and compare.
  uint64_t checksum() const;

  nlohmann::json to_json() const;
  // `source` names the file for messages; malformed content throws InputError. A subword
  // vocabulary reads its model from kSubwordModelFile in the folder of `source`.
  static Vocab from_json(const nlohmann::json& j, const std::string& source);
  // Atomic: temp file then rename (a subword model is written first, beside `path`).
  void save(const std::string& path) const;
  static Vocab load(const std::string& path);  // InputError naming the path on any problem

 private:
  TokenizerKind kind_ = TokenizerKind::kChar;
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> index_;
  int64_t unk_id_ = -1;
  std::shared_ptr<const SubwordModel> subword_;
};

bool operator==(const Vocab& a, const Vocab& b);

}  // namespace txl
