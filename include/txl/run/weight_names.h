// A model's tensors under the names another program gives them, both ways.
//
// txl:       LibTorch's names of the model's parameters and buffers (blocks.N.attn.qkv.weight).
// reference: the names and shapes of the Transformer-XL reference's MemTransformerLM state dict
//            (kimiyoung/transformer-xl, pytorch/mem_transformer.py) with per-layer biases
//            (untie_r): word_emb.emb_layers.I.weight, word_emb.emb_projs.I, pos_emb.inv_freq,
//            layers.N.dec_attn.{qkv_net,o_net,r_net}.weight, .layer_norm.{weight,bias},
//            .r_w_bias (txl's u), .r_r_bias (v), layers.N.pos_ff.CoreNet.{0,3}.{weight,bias},
//            .layer_norm, crit.out_layers.I.{weight,bias}, crit.out_projs.I,
//            crit.cluster_weight, crit.cluster_bias. Only the relative encoding with post-norm
//            has them all; anything else is refused naming what has no place there. A tied
//            tensor appears under each of its names, as in a state dict; reading, tied names
//            must hold equal values, and one model-level r_w_bias / r_r_bias (the reference's
//            default, untie_r off) is given to every layer.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "txl/model/transformer.h"
#include "txl/run/weight_file.h"

namespace txl {

enum class WeightNaming { kTxl, kReference };
WeightNaming parse_weight_naming(const std::string& name, const std::string& option);
const char* to_string(WeightNaming naming);

// Copies of the model's tensors (CPU), in a fixed order.
std::vector<NamedTensor> named_weights(TransformerLM& model, WeightNaming naming);

// Copies `tensors` into the model. Every name the model needs and `tensors` lacks, every one it
// does not know and every shape that differs are listed together in one InputError naming
// `source`; a floating-point tensor of another precision is converted.
void load_named_weights(TransformerLM& model, const std::vector<NamedTensor>& tensors,
                        WeightNaming naming, const std::string& source);

// The same with the values read on demand: `index` gives every tensor's name, shape and dtype
// (its tensors may be on the meta device, as WeightReader::index() gives them), and every one
// is checked against the model before read(i) is asked for any value; then each is read,
// copied into the model and let go, one at a time, so that loading holds the model and one
// tensor of the file, never the whole file.
using ReadTensor = std::function<torch::Tensor(size_t)>;
void load_named_weights(TransformerLM& model, const std::vector<NamedTensor>& index,
                        const ReadTensor& read, WeightNaming naming, const std::string& source);

}  // namespace txl
