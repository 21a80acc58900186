// A trained subword model (BPE or unigram) from sentencepiece, the field's own library,
// reached through the plugin libtxl_spm.so (data/spm_plugin.h: the interface, and why).
//
// Models are trained so that tokenizing loses nothing and depends on no locale: identity
// normalization, whitespace kept as it is, no dummy prefix (so decoding a list of pieces is
// their concatenation), byte fallback (a character the model lacks becomes its UTF-8 bytes,
// not <unk>). Id 0 is <unk> and id 1 is <eos>, the line end; a line's text never holds '\n'.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "txl/config/config.h"

namespace txl {

// False when the sentencepiece plugin cannot be loaded (bpe and unigram are then refused);
// subword_problem() says why ("" when available).
bool subword_available();
std::string subword_problem();

// The sentencepiece threads a training uses, whatever the machine: the trained model
// depends on it, so a fixed number makes the same corpus give the same model everywhere.
inline constexpr int kSubwordTrainThreads = 4;

class SubwordModel {
 public:
  // Trains on the lines of `train_text` (already checked as UTF-8). `kind` is kBpe or
  // kUnigram. A vocabulary size the text cannot support throws InputError naming
  // data.vocab_size and sentencepiece's reason.
  static std::shared_ptr<const SubwordModel> train(std::string_view train_text, TokenizerKind kind,
                                                   int64_t vocab_size, const std::string& source);
  // A serialized model (the bytes of tokenizer.model); malformed bytes throw InputError
  // naming `source`.
  static std::shared_ptr<const SubwordModel> load(std::string bytes, const std::string& source);

  ~SubwordModel();
  SubwordModel(const SubwordModel&) = delete;
  SubwordModel& operator=(const SubwordModel&) = delete;

  const std::string& bytes() const { return bytes_; }  // the serialized model
  std::vector<std::string> pieces() const;             // by id
  int64_t unk_id() const;
  int64_t eos_id() const;
  // One line (no '\n') -> ids, appended to `out`.
  void encode_line(std::string_view line, std::vector<int32_t>* out) const;
  // Ids without <eos> -> text.
  std::string decode(const std::vector<int>& ids) const;

 private:
  struct Engine;
  SubwordModel(std::string bytes, std::unique_ptr<Engine> engine);
  std::string bytes_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace txl
