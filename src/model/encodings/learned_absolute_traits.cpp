// learned_absolute's traits (config/encodings.h): what it is and costs, without torch. Built into
// txl_base; the numbers mirror its module in learned_absolute.cpp.
#include <string>

#include "txl/config/encoding_traits_helpers.h"

namespace txl {

EncodingTraits learned_absolute_traits() {
  EncodingTraits t = encoding_named(
      PosEncoding::kLearnedAbsolute, "learned_absolute",
      "q.k; a learned table P[t] of max_len positions added to the embeddings (GPT-2)");
  t.length_limit_key = "max_len";
  t.options = {{"max_len", 1024, 1, 1 << 24, true, "learned_absolute: positions in the table",
                /*shapes=*/true}};
  t.aids = {ExtrapolationAid::kInterpolate};
  t.model_parameters = [](const ModelConfig& c) {
    return encoding_option(c, "max_len") * static_cast<double>(c.d_model);
  };
  // A training segment reads a row per position, with no memory before it.
  t.check = [](const ModelConfig& c, const TrainConfig& t) -> std::string {
    const int64_t rows = encoding_option_int(c, "max_len");
    const bool drawn = t.tgt_len_max > t.tgt_len;
    const int64_t longest = drawn ? t.tgt_len_max : t.tgt_len;
    if (rows >= longest) return "";
    const std::string key = drawn ? "train.tgt_len_max" : "train.tgt_len";
    return "model.max_len (" + std::to_string(rows) + ") must be at least " + key + " (" +
           std::to_string(longest) + "): the learned table of pos_encoding learned_absolute " +
           "has one row per position of a training segment; raise model.max_len or lower " + key;
  };
  return t;
}

}  // namespace txl
