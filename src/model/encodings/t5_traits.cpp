// t5's traits (config/encodings.h): what it is and costs, without torch. Built into
// txl_base; the numbers mirror its module in t5.cpp.
#include <string>

#include "txl/config/encoding_traits_helpers.h"

namespace txl {

EncodingTraits t5_traits() {
  EncodingTraits t =
      encoding_named(PosEncoding::kT5, "t5",
                     "q.k + sqrt(D) T[bucket(i-j), h]: learned per layer, log-spaced buckets (T5)");
  t.takes_memory = true;
  t.options = {{"t5_buckets", 32, 2, 4096, true, "t5: number of distance buckets", /*shapes=*/true},
               {"t5_max_distance", 128, 2, 1e9, true, "t5: distance where the last bucket starts"}};
  t.layer_parameters = [](const ModelConfig& c) {
    return encoding_option(c, "t5_buckets") * static_cast<double>(c.n_head);
  };
  // bucket(n) (model/encodings/t5.h) divides by ln(t5_max_distance / E), E = t5_buckets / 2
  // exact buckets: at or below E it divides by 0 or a negative number and indexes outside
  // the table.
  t.check = [](const ModelConfig& c, const TrainConfig& /*t*/) -> std::string {
    const int64_t buckets = encoding_option_int(c, "t5_buckets");
    const int64_t max_distance = encoding_option_int(c, "t5_max_distance");
    const int64_t exact = buckets / 2;
    if (max_distance > exact) return "";
    return "model.t5_max_distance (" + std::to_string(max_distance) +
           ") must be greater than model.t5_buckets / 2 (" + std::to_string(buckets) +
           " / 2 = " + std::to_string(exact) + "): the first " + std::to_string(exact) +
           " buckets hold the distances below " + std::to_string(exact) +
           " exactly, the others are log-spaced from there up to t5_max_distance; raise "
           "model.t5_max_distance to at least " +
           std::to_string(exact + 1) + " or lower model.t5_buckets";
  };
  // No cost beyond q.k: the bias is a gather, no multiply-accumulates.
  return t;
}

}  // namespace txl
