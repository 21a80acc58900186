#include "txl/eval/per_token.h"

#include <spdlog/fmt/fmt.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/text.h"

namespace txl {

void check_per_token_path(const std::string& path) {
  if (!ends_with(path, ".tsv") && !ends_with(path, ".jsonl"))
    throw InputError("--per-token " + path + ": expected a file name ending in .tsv or .jsonl");
}

void write_per_token(const std::string& path, const Vocab& vocab,
                     const std::vector<PerTokenScores>& scores) {
  const bool tsv = ends_with(path, ".tsv");
  std::string out = tsv ? "length\tdocument\tindex\ttoken\tid\tnll\tbits\tcontext\tunk\n" : "";
  for (const auto& s : scores) {
    for (size_t i = 0; i < s.scores.nll.size(); ++i) {
      const double nll = s.scores.nll[i];
      if (std::isnan(nll)) continue;
      const int64_t index = static_cast<int64_t>(i) + 1;  // the target's place
      const int32_t id = (*s.ids)[static_cast<size_t>(index)];
      const std::string& token = vocab.token(id);
      const int unk = id == vocab.unk_id() ? 1 : 0;
      if (tsv) {
        out += fmt::format("{}\t{}\t{}\t{}\t{}\t{:.9g}\t{:.9g}\t{}\t{}\n", s.length,
                           escape_line(s.document), index, escape_line(token), id, nll,
                           nll / std::log(2.0), s.scores.context[i], unk);
      } else {
        out += nlohmann::json{{"length", s.length},
                              {"document", s.document},
                              {"index", index},
                              {"token", token},
                              {"id", id},
                              {"nll", nll},
                              {"bits", nll / std::log(2.0)},
                              {"context", s.scores.context[i]},
                              {"unk", unk}}
                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
               "\n";
      }
    }
  }
  write_file_atomic(path, out);
}

}  // namespace txl
