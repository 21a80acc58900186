// "bpe" and "unigram": subword pieces from a sentencepiece model trained on the training
// split (data/subword_model.h), one line at a time with <eos> at every line end.
#include "txl/data/subword_model.h"
#include "txl/data/text_scan.h"
#include "txl/data/tokenizers.h"
#include "txl/util/error.h"

namespace txl {

namespace {

const SubwordModel& model_of(const Vocab& vocab) {
  if (vocab.subword() == nullptr) {
    throw std::logic_error(to_string(vocab.kind()) + " vocabulary without its subword model");
  }
  return *vocab.subword();
}

Vocab subword_build(std::string_view train_text, const DataConfig& config,
                    const std::string& source) {
  check_utf8(train_text, source);
  return Vocab(config.tokenizer,
               SubwordModel::train(train_text, config.tokenizer, config.vocab_size, source));
}

std::vector<int32_t> subword_encode(std::string_view text, const Vocab& vocab,
                                    const std::string& source, EncodeStats* stats) {
  check_utf8(text, source);
  const SubwordModel& model = model_of(vocab);
  const auto eos = static_cast<int32_t>(model.eos_id());
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3);
  for_each_line(text, [&](std::string_view line) {
    model.encode_line(line, &ids);
    ids.push_back(eos);
  });
  if (stats != nullptr) {
    const auto unk = static_cast<int32_t>(model.unk_id());
    stats->tokens = static_cast<int64_t>(ids.size());
    stats->unknown = static_cast<int64_t>(std::count(ids.begin(), ids.end(), unk));
  }
  return ids;
}

// The pieces decoded line by line; <eos> becomes "\n".
std::string subword_decode(const std::vector<int64_t>& ids, const Vocab& vocab) {
  const SubwordModel& model = model_of(vocab);
  std::string out;
  std::vector<int> line;
  for (const int64_t id : ids) {
    vocab.token(id);  // throws for an id outside the vocabulary
    if (id == model.eos_id()) {
      out += model.decode(line);
      out.push_back('\n');
      line.clear();
    } else {
      line.push_back(static_cast<int>(id));
    }
  }
  return out + model.decode(line);
}

// Without a model there are no pieces to split into: only the count has a meaning, for the
// corpus check before training, and words plus line ends are a lower bound (every word is at
// least one piece, every line ends in <eos>).
std::vector<std::string> subword_split(std::string_view /*text*/, const std::string& source) {
  throw std::invalid_argument(source + ": subword tokens depend on the trained model; encode " +
                              "with a vocabulary instead");
}

}  // namespace

const TokenizerDef& bpe_tokenizer() {
  static const TokenizerDef def{
      TokenizerKind::kBpe, true,           true,           false,         true,
      subword_build,       subword_encode, subword_decode, subword_split, count_words_and_line_ends,
      utf8_token_problem};
  return def;
}

const TokenizerDef& unigram_tokenizer() {
  static const TokenizerDef def{TokenizerKind::kUnigram,
                                true,
                                true,
                                false,
                                true,
                                subword_build,
                                subword_encode,
                                subword_decode,
                                subword_split,
                                count_words_and_line_ends,
                                utf8_token_problem};
  return def;
}

}  // namespace txl
