// The model's tensors under txl's names and the reference's (weight_names.h): one list of
// slots, name -> the model's tensor (or a slice of it), read for export and written for import.
#include "txl/run/weight_names.h"

#include <spdlog/fmt/fmt.h>

#include <map>
#include <set>

#include "txl/model/adaptive_softmax.h"
#include "txl/util/error.h"

namespace txl {

namespace {

struct Slot {
  std::string name;      // the file's name
  torch::Tensor target;  // the model's tensor or a view of it; for `derived`, the value
  std::string txl_name;  // the model's name it stands for ("" when derived)
  bool derived = false;  // computed from the config (pos_emb.inv_freq): checked, not loaded
};

using Params = std::map<std::string, torch::Tensor>;

Params model_tensors(TransformerLM& model) {
  Params p;
  for (const auto& item : model->named_parameters()) p[item.key()] = item.value();
  for (const auto& item : model->named_buffers()) p[item.key()] = item.value();
  return p;
}

std::vector<Slot> txl_slots(const Params& p) {
  std::vector<Slot> slots;
  for (const auto& [name, t] : p) slots.push_back({name, t, name});
  return slots;
}

// The reference's sinusoid frequencies, 1 / 10000^(2i / C), as its PositionalEmbedding holds them.
torch::Tensor inverse_frequencies(int64_t d_model) {
  return 1.0 / torch::pow(10000.0, torch::arange(0.0, double(d_model), 2.0) / double(d_model));
}

class ReferenceSlots {
 public:
  explicit ReferenceSlots(const Params& p) : p_(p) {}

  void add(const std::string& name, const std::string& txl_name) {
    const auto it = p_.find(txl_name);
    TORCH_CHECK(it != p_.end(), "no model tensor ", txl_name);
    slots_.push_back({name, it->second, txl_name});
  }
  void add_slice(const std::string& name, const std::string& txl_name, int64_t from, int64_t n) {
    add(name, txl_name);
    slots_.back().target = slots_.back().target.narrow(0, from, n);
  }
  void add_derived(const std::string& name, torch::Tensor value) {
    slots_.push_back({name, std::move(value), "", true});
  }
  std::vector<Slot> take() { return std::move(slots_); }

 private:
  const Params& p_;
  std::vector<Slot> slots_;
};

void add_input(ReferenceSlots& s, const ModelConfig& c, const ClusterLayout* layout) {
  if (!layout) return s.add("word_emb.emb_layers.0.weight", "embedding.weight");
  if (!layout->projected)
    return s.add("word_emb.emb_layers.0.weight", "adaptive_input.clusters.0.weight");
  for (int64_t i = 0; i < layout->clusters(); ++i) {
    s.add(fmt::format("word_emb.emb_layers.{}.weight", i),
          fmt::format("adaptive_input.clusters.{}.weight", i));
    s.add(fmt::format("word_emb.emb_projs.{}", i), fmt::format("adaptive_input.projs.{}", i));
  }
  (void)c;
}

void add_layers(ReferenceSlots& s, const ModelConfig& c) {
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string a = fmt::format("layers.{}.dec_attn.", l);
    const std::string ta = fmt::format("blocks.{}.attn.", l);
    s.add(a + "qkv_net.weight", ta + "qkv.weight");
    s.add(a + "o_net.weight", ta + "out.weight");
    s.add(a + "layer_norm.weight", ta + "norm.weight");
    s.add(a + "layer_norm.bias", ta + "norm.bias");
    s.add(a + "r_net.weight", ta + "score.w_r.weight");
    s.add(a + "r_w_bias", ta + "score.u");
    s.add(a + "r_r_bias", ta + "score.v");
    const std::string f = fmt::format("layers.{}.pos_ff.", l);
    const std::string tf = fmt::format("blocks.{}.ff.", l);
    s.add(f + "CoreNet.0.weight", tf + "fc1.weight");
    s.add(f + "CoreNet.0.bias", tf + "fc1.bias");
    s.add(f + "CoreNet.3.weight", tf + "fc2.weight");
    s.add(f + "CoreNet.3.bias", tf + "fc2.bias");
    s.add(f + "layer_norm.weight", tf + "norm.weight");
    s.add(f + "layer_norm.bias", tf + "norm.bias");
  }
}

void add_output(ReferenceSlots& s, const ModelConfig& c, const ClusterLayout* layout) {
  if (!layout) {
    s.add("crit.out_layers.0.weight", c.tie_weights ? "embedding.weight" : "output.weight");
    return s.add("crit.out_layers.0.bias", "output_bias");
  }
  const std::string tables = c.tie_weights ? "adaptive_input" : "adaptive_softmax";
  if (!layout->projected) {
    s.add("crit.out_layers.0.weight", tables + ".clusters.0.weight");
    s.add("crit.out_layers.0.bias", "output_bias");
  } else {
    const auto& tie_projs = c.adaptive->tie_projs;
    for (int64_t i = 0; i < layout->clusters(); ++i) {
      s.add(fmt::format("crit.out_layers.{}.weight", i),
            fmt::format("{}.clusters.{}.weight", tables, i));
      s.add_slice(fmt::format("crit.out_layers.{}.bias", i), "output_bias",
                  layout->bounds[size_t(i)], layout->size(i));
      const bool tied = size_t(i) < tie_projs.size() && tie_projs[size_t(i)];
      s.add(fmt::format("crit.out_projs.{}", i),
            fmt::format("{}.projs.{}", tied ? "adaptive_input" : "adaptive_softmax", i));
    }
  }
  if (layout->clusters() > 1) {
    s.add("crit.cluster_weight", "adaptive_softmax.cluster_weight");
    s.add("crit.cluster_bias", "adaptive_softmax.cluster_bias");
  }
}

std::vector<Slot> reference_slots(TransformerLM& model, const Params& p) {
  const ModelConfig& c = model->config();
  if (c.pos_encoding != PosEncoding::kRelative) {
    throw InputError(fmt::format(
        "--names reference: the reference's MemTransformerLM names are for model.pos_encoding "
        "\"relative\"; this run's is \"{}\" (use --names txl)",
        to_string(c.pos_encoding)));
  }
  if (c.pre_norm) {
    throw InputError(
        "--names reference: model.pre_norm true has a final layer norm (final_norm) that the "
        "reference's model does not have (use --names txl)");
  }
  std::optional<ClusterLayout> layout;
  if (c.adaptive) layout = cluster_layout(*c.adaptive, c.d_model, model->vocab_size());
  ReferenceSlots s(p);
  add_input(s, c, layout ? &*layout : nullptr);
  s.add_derived("pos_emb.inv_freq", inverse_frequencies(c.d_model));
  add_layers(s, c);
  add_output(s, c, layout ? &*layout : nullptr);
  auto slots = s.take();
  std::set<std::string> used;
  for (const auto& slot : slots) used.insert(slot.txl_name);
  for (const auto& [name, t] : p) {
    if (!used.count(name))
      throw InputError("--names reference: the model's " + name +
                       " has no place in the reference's MemTransformerLM (use --names txl)");
  }
  return slots;
}

std::vector<Slot> slots_of(TransformerLM& model, const Params& p, WeightNaming naming) {
  return naming == WeightNaming::kTxl ? txl_slots(p) : reference_slots(model, p);
}

std::string shape_text(const torch::Tensor& t) {
  return fmt::format("[{}]", fmt::join(t.sizes(), ", "));
}

// The name each slot asks for -> the index of the file's tensor that fills it. The reference's
// default keeps one r_w_bias / r_r_bias for all layers: each layer gets it.
std::map<std::string, size_t> by_name(const std::vector<NamedTensor>& tensors, WeightNaming naming,
                                      int64_t n_layer) {
  std::map<std::string, size_t> out;
  for (size_t i = 0; i < tensors.size(); ++i) out[tensors[i].name] = i;
  if (naming != WeightNaming::kReference) return out;
  for (const char* bias : {"r_w_bias", "r_r_bias"}) {
    const auto shared = out.find(bias);
    if (shared == out.end()) continue;
    bool per_layer = false;
    for (int64_t l = 0; l < n_layer; ++l)
      per_layer = per_layer || out.count(fmt::format("layers.{}.dec_attn.{}", l, bias));
    if (per_layer) continue;  // both kinds: the shared one is reported as not known
    for (int64_t l = 0; l < n_layer; ++l)
      out[fmt::format("layers.{}.dec_attn.{}", l, bias)] = shared->second;
    out.erase(shared);
  }
  return out;
}

}  // namespace

WeightNaming parse_weight_naming(const std::string& name, const std::string& option) {
  if (name == "txl") return WeightNaming::kTxl;
  if (name == "reference") return WeightNaming::kReference;
  throw InputError(fmt::format("{} \"{}\" is not valid; expected txl or reference", option, name));
}

const char* to_string(WeightNaming naming) {
  return naming == WeightNaming::kTxl ? "txl" : "reference";
}

std::vector<NamedTensor> named_weights(TransformerLM& model, WeightNaming naming) {
  const Params p = model_tensors(model);
  std::vector<NamedTensor> out;
  for (const auto& slot : slots_of(model, p, naming))
    out.push_back({slot.name, slot.target.detach().to(torch::kCPU).contiguous().clone()});
  return out;
}

void load_named_weights(TransformerLM& model, const std::vector<NamedTensor>& tensors,
                        WeightNaming naming, const std::string& source) {
  load_named_weights(
      model, tensors, [&](size_t i) { return tensors[i].tensor; }, naming, source);
}

void load_named_weights(TransformerLM& model, const std::vector<NamedTensor>& index,
                        const ReadTensor& read, WeightNaming naming, const std::string& source) {
  const Params p = model_tensors(model);
  const auto slots = slots_of(model, p, naming);
  auto given = by_name(index, naming, model->config().n_layer);
  std::vector<std::string> problems;
  std::set<std::string> wanted;
  for (const auto& slot : slots) {
    wanted.insert(slot.name);
    const auto it = given.find(slot.name);
    if (it == given.end()) {
      problems.push_back(fmt::format("missing: {} {}", slot.name, shape_text(slot.target)));
      continue;
    }
    const torch::Tensor& t = index[it->second].tensor;
    if (!t.is_floating_point() && slot.target.is_floating_point()) {
      problems.push_back(
          fmt::format("{} is {}, not floating point", slot.name, c10::toString(t.scalar_type())));
    } else if (t.sizes() != slot.target.sizes()) {
      problems.push_back(fmt::format("{} is {} in the file but {} in the model", slot.name,
                                     shape_text(t), shape_text(slot.target)));
    }
  }
  for (const auto& [name, i] : given)
    if (!wanted.count(name))
      problems.push_back(fmt::format("not in the model: {} {}", name, shape_text(index[i].tensor)));
  if (!problems.empty()) {
    throw InputError(fmt::format("{} ({} names): {} problem(s) with the model's tensors:\n  {}",
                                 source, to_string(naming), problems.size(),
                                 fmt::join(problems, "\n  ")));
  }
  torch::NoGradGuard no_grad;
  std::map<std::string, std::string> first_name;  // model tensor -> the file name loaded into it
  for (const auto& slot : slots) {
    // Read only now, one tensor at a time, every name and shape having matched.
    const auto value =
        read(given.at(slot.name)).to(slot.target.device(), slot.target.scalar_type());
    if (slot.derived) {
      if (!torch::allclose(value, slot.target, 1e-6, 0.0))
        throw InputError(
            fmt::format("{}: {} differs from the sinusoid frequencies txl uses "
                        "(1 / 10000^(2i / d_model))",
                        source, slot.name));
      continue;
    }
    const std::string key = slot.txl_name + fmt::format("@{}", slot.target.storage_offset());
    const auto seen = first_name.find(key);
    if (seen != first_name.end()) {
      if (!torch::equal(value, slot.target))
        throw InputError(
            fmt::format("{}: {} and {} are one tensor in this model (tied by "
                        "model.tie_weights or adaptive.tie_projs) but differ in the file",
                        source, seen->second, slot.name));
      continue;
    }
    first_name[key] = slot.name;
    slot.target.copy_(value);
  }
}

}  // namespace txl
