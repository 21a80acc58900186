#include "txl/eval/per_token.h"

#include <spdlog/fmt/fmt.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "txl/eval/token_words.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/text.h"

namespace txl {

void check_per_token_path(const std::string& path) {
  if (!ends_with(path, ".tsv") && !ends_with(path, ".jsonl"))
    throw InputError("--per-token " + path + ": expected a file name ending in .tsv or .jsonl");
}

namespace {

// Each word's summed NLL over its scored tokens, and the last scored token of each (where the
// word's row carries the sum).
struct WordSums {
  std::vector<double> nll;
  std::vector<int64_t> last;  // token index, -1 for a word with no scored token
};

WordSums word_sums(const TokenWords& words, const std::vector<double>& nll) {
  WordSums sums{std::vector<double>(words.words.size(), 0.0),
                std::vector<int64_t>(words.words.size(), -1)};
  for (size_t i = 0; i < nll.size(); ++i) {
    if (std::isnan(nll[i])) continue;
    const auto index = static_cast<int64_t>(i) + 1;
    const auto w = static_cast<size_t>(words.word_of[static_cast<size_t>(index)]);
    sums.nll[w] += nll[i];
    sums.last[w] = index;
  }
  return sums;
}

// One document's rows at one length.
void add_rows(std::string& out, bool tsv, const Vocab& vocab, const PerTokenScores& s) {
  const TokenWords words = token_words(*s.ids, vocab);
  const WordSums sums = word_sums(words, s.scores.nll);
  for (size_t i = 0; i < s.scores.nll.size(); ++i) {
    const double nll = s.scores.nll[i];
    if (std::isnan(nll)) continue;
    const int64_t index = static_cast<int64_t>(i) + 1;  // the target's place
    const int32_t id = (*s.ids)[static_cast<size_t>(index)];
    const std::string& token = vocab.token(id);
    const int unk = id == vocab.unk_id() ? 1 : 0;
    const int64_t w = words.word_of[static_cast<size_t>(index)];
    const std::string& word = words.words[static_cast<size_t>(w)];
    const bool word_ends = sums.last[static_cast<size_t>(w)] == index;
    const double word_nll = sums.nll[static_cast<size_t>(w)];
    if (tsv) {
      out += fmt::format("{}\t{}\t{}\t{}\t{}\t{:.9g}\t{:.9g}\t{}\t{}\t{}\t{}\t{}\n", s.length,
                         escape_line(s.document), index, escape_line(token), id, nll,
                         nll / std::log(2.0), s.scores.context[i], unk, w, escape_line(word),
                         word_ends ? fmt::format("{:.9g}", word_nll) : "");
    } else {
      out += nlohmann::json{{"length", s.length},
                            {"document", s.document},
                            {"index", index},
                            {"token", token},
                            {"id", id},
                            {"nll", nll},
                            {"bits", nll / std::log(2.0)},
                            {"context", s.scores.context[i]},
                            {"unk", unk},
                            {"word_index", w},
                            {"word", word},
                            {"word_nll", word_ends ? nlohmann::json(word_nll) : nlohmann::json()}}
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
             "\n";
    }
  }
}

}  // namespace

void write_per_token(const std::string& path, const Vocab& vocab,
                     const std::vector<PerTokenScores>& scores) {
  const bool tsv = ends_with(path, ".tsv");
  std::string out =
      tsv ? "length\tdocument\tindex\ttoken\tid\tnll\tbits\tcontext\tunk\tword_index\tword\t"
            "word_nll\n"
          : "";
  for (const auto& s : scores) add_rows(out, tsv, vocab, s);
  write_file_atomic(path, out);
}

}  // namespace txl
