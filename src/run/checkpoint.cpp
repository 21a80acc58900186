#include "txl/run/checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "txl/config/config.h"
#include "txl/platform/device.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/hash.h"
#include "txl/util/text.h"

namespace txl {

namespace {

// ---------------------------------------------------------------------------------------------
// The meta block.

nlohmann::json model_config_json(const ModelConfig& model) {
  Config c;
  c.model = model;
  return config_to_json(c).at("model");
}

nlohmann::json optimizer_groups_json(torch::optim::Optimizer* optimizer) {
  nlohmann::json groups = nlohmann::json::array();
  if (!optimizer) return groups;
  for (auto& group : optimizer->param_groups()) {
    auto* adamw = dynamic_cast<torch::optim::AdamWOptions*>(&group.options());
    if (!adamw) continue;
    groups.push_back({{"lr", adamw->lr()},
                      {"beta1", std::get<0>(adamw->betas())},
                      {"beta2", std::get<1>(adamw->betas())},
                      {"eps", adamw->eps()},
                      {"weight_decay", adamw->weight_decay()},
                      {"amsgrad", adamw->amsgrad()}});
  }
  return groups;
}

void restore_optimizer_groups(const nlohmann::json& groups, torch::optim::Optimizer& optimizer,
                              const std::string& path) {
  auto& live = optimizer.param_groups();
  if (!groups.is_array() || groups.size() != live.size()) {
    throw InputError(path + ": the checkpoint's optimizer has " +
                     std::to_string(groups.is_array() ? groups.size() : 0) +
                     " parameter groups, this run's has " + std::to_string(live.size()));
  }
  for (size_t i = 0; i < live.size(); ++i) {
    auto* adamw = dynamic_cast<torch::optim::AdamWOptions*>(&live[i].options());
    if (!adamw) continue;
    const auto& g = groups[i];
    adamw->lr(g.at("lr").get<double>());
    adamw->betas({g.at("beta1").get<double>(), g.at("beta2").get<double>()});
    adamw->eps(g.at("eps").get<double>());
    adamw->weight_decay(g.at("weight_decay").get<double>());
    adamw->amsgrad(g.at("amsgrad").get<bool>());
  }
}

nlohmann::json meta_json(const TrainState& s, const TransformerLM& model,
                         torch::optim::Optimizer* optimizer, const Memory& memory) {
  nlohmann::json meta = {{"format", kCheckpointFormat}, {"version", kCheckpointVersion}};
  write_train_state(s, meta);
  meta["model_config"] = model_config_json(model->config());
  meta["vocab_size"] = model->vocab_size();
  meta["memory_layers"] = memory.layers.size();
  meta["optimizer_groups"] = optimizer_groups_json(optimizer);
  return meta;
}

TrainState state_from_meta(const nlohmann::json& j, const std::string& path) {
  const auto format = j.is_object() ? j.find("format") : j.end();
  if (!j.is_object() || format == j.end() || !format->is_string() || *format != kCheckpointFormat) {
    throw InputError(path + ": not a txl checkpoint (format tag missing)");
  }
  try {
    return read_train_state(j);
  } catch (const std::exception& e) {
    throw InputError(path + ": checkpoint metadata is incomplete or malformed (" + e.what() + ")");
  }
}

nlohmann::json parse_meta(const std::string& text, const std::string& path) {
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw InputError(path + ": checkpoint metadata is not valid JSON (" + e.what() + ")");
  }
}

// The checkpoint must have been written by a model of exactly this shape: a differing key
// would otherwise surface as an opaque tensor-size error from deep inside LibTorch, or, for
// keys that change no shape (dropout, pos_encoding between two relative variants), not at all.
void check_model_matches(const nlohmann::json& meta, const TransformerLM& model,
                         const std::string& path) {
  const nlohmann::json saved =
      meta.contains("model_config") ? meta.at("model_config") : nlohmann::json();
  nlohmann::json a = {{"model", saved}};
  nlohmann::json b = {{"model", model_config_json(model->config())}};
  const auto diffs = config_differences(a, b);
  if (!diffs.empty()) {
    throw InputError(path +
                     ": the checkpoint was written by a different model (checkpoint vs "
                     "this run: " +
                     join(diffs, "; ") + ")");
  }
  const auto found = meta.find("vocab_size");
  const int64_t vocab_size =
      found != meta.end() && found->is_number_integer() ? found->get<int64_t>() : -1;
  if (vocab_size != model->vocab_size()) {
    throw InputError(path + ": the checkpoint's vocabulary has " + std::to_string(vocab_size) +
                     " tokens, this run's has " + std::to_string(model->vocab_size()));
  }
}

// The memory layers saved with the checkpoint (none when it has no "memory" archive).
Memory read_memory(torch::serialize::InputArchive& archive, const nlohmann::json& meta) {
  Memory memory;
  torch::serialize::InputArchive mem_archive;
  if (!archive.try_read("memory", mem_archive)) return memory;
  const int64_t layers = meta.at("memory_layers").get<int64_t>();
  for (int64_t l = 0; l < layers; ++l) {
    torch::Tensor t;
    mem_archive.read(std::to_string(l), t, /*is_buffer=*/true);
    memory.layers.push_back(t);
  }
  return memory;
}

// The CPU generator's state, and on a GPU that device's (dropout draws there): written on a
// GPU and resumed on one, its stream continues; a run resumed on another kind of device
// starts that device's stream afresh.
void restore_generators(torch::serialize::InputArchive& archive, const torch::Device& device) {
  torch::Tensor rng;
  if (archive.try_read("rng", rng, /*is_buffer=*/true)) {
    auto generator = at::detail::getDefaultCPUGenerator();  // a handle sharing the state
    generator.set_state(rng.cpu());
  }
  if (device.is_cuda() && archive.try_read("rng_cuda", rng, /*is_buffer=*/true)) {
    default_generator(device).set_state(rng.cpu());
  }
}

// A writer of the file's section that streams `archive` as LibTorch serialises it.
SectionWriter archive_writer(torch::serialize::OutputArchive& archive) {
  return [&archive](const PayloadSink& sink) {
    archive.save_to([&](const void* data, size_t size) {
      sink(data, size);
      return size;
    });
  };
}

}  // namespace

void save_checkpoint(const std::string& path, const TrainState& state, TransformerLM& model,
                     torch::optim::Optimizer* optimizer, const Memory& memory) {
  torch::serialize::OutputArchive weights;  // what every reader needs
  torch::serialize::OutputArchive model_archive;
  model->save(model_archive);
  weights.write("model", model_archive);
  weights.write("rng", at::detail::getDefaultCPUGenerator().get_state(), /*is_buffer=*/true);
  // On a GPU, dropout draws from that device's generator.
  if (model->device().is_cuda()) {
    weights.write("rng_cuda", default_generator(model->device()).get_state(), /*is_buffer=*/true);
  }
  torch::serialize::OutputArchive training;  // what only a resumed run needs
  if (optimizer) {
    torch::serialize::OutputArchive opt_archive;
    optimizer->save(opt_archive);
    training.write("optimizer", opt_archive);
  }
  if (!memory.empty()) {
    torch::serialize::OutputArchive mem_archive;
    for (size_t l = 0; l < memory.layers.size(); ++l) {
      mem_archive.write(std::to_string(l), memory.layers[l], /*is_buffer=*/true);
    }
    training.write("memory", mem_archive);
  }
  const std::string meta = meta_json(state, model, optimizer, memory).dump();
  const bool has_training = optimizer || !memory.empty();
  write_checkpoint_file(path, meta, archive_writer(weights),
                        has_training ? archive_writer(training) : SectionWriter());
}

bool holds_optimizer_state(const std::string& path) {
  const nlohmann::json meta = parse_meta(read_checkpoint_meta(path), path);
  state_from_meta(meta, path);  // a txl checkpoint at all
  const auto groups = meta.find("optimizer_groups");
  return groups != meta.end() && groups->is_array() && !groups->empty();
}

std::string weights_only(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  return path +
         ": holds weights only (no optimizer state: txl import writes such a run), so "
         "training cannot resume from it; use txl train --config FILE --init-from " +
         shell_quote(dir) + " to fine-tune it (a new run from its weights; FILE: " + dir +
         "/config.json, or any config of the same model shape)";
}

TrainState read_checkpoint_state(const std::string& path) {
  return state_from_meta(parse_meta(read_checkpoint_meta(path), path), path);
}

void verify_checkpoint(const std::string& path) {
  const std::string meta = read_checkpoint_file(path, PayloadSections::kAll, nullptr);
  state_from_meta(parse_meta(meta, path), path);
}

namespace {

// The shapes of the model's parameters, whose storage is then released: load() puts the
// archive's tensors in their place (Tensor::set_), so keeping the model's own until then would
// hold the weights twice at the peak (1.2 GB instead of 0.6 for 151M parameters).
std::vector<std::vector<int64_t>> release_parameters(TransformerLM& model) {
  torch::NoGradGuard no_grad;
  std::vector<std::vector<int64_t>> shapes;
  for (auto& p : model->parameters()) {
    shapes.push_back(p.sizes().vec());
    p.set_(torch::empty({0}, p.options()));
  }
  return shapes;
}

// load() takes the archive's tensors as they are: each must have the shape it replaced.
void check_shapes(TransformerLM& model, const std::vector<std::vector<int64_t>>& shapes,
                  const std::string& path) {
  const auto params = model->named_parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].value().sizes().vec() == shapes.at(i)) continue;
    throw InputError(path + ": the checkpoint's tensor " + params[i].key() + " has shape " +
                     c10::str(params[i].value().sizes()) + ", this model's has " +
                     c10::str(c10::IntArrayRef(shapes[i])));
  }
}

// A section's archive, read in place from the checkpoint file onto `device`.
void open_archive(torch::serialize::InputArchive& archive, const PayloadSection& section,
                  const torch::Device& device) {
  archive.load_from(
      section.read, [size = section.size] { return static_cast<size_t>(size); }, device);
}

// The optimizer state and the memory, from the training section (version 2: from the one
// archive, `weights`).
void load_training(const nlohmann::json& meta, const CheckpointPayload& payload,
                   torch::serialize::InputArchive& weights, torch::optim::Optimizer& optimizer,
                   const torch::Device& device, const char*& stage, const std::string& path,
                   LoadedCheckpoint& loaded) {
  torch::serialize::InputArchive separate;
  torch::serialize::InputArchive& training = payload.version >= 3 ? separate : weights;
  if (payload.version >= 3) {
    if (payload.training.size == 0) throw InputError(weights_only(path));
    stage = "the archive (training section)";
    open_archive(separate, payload.training, device);
  }
  stage = "the optimizer state";
  torch::serialize::InputArchive opt_archive;
  if (!training.try_read("optimizer", opt_archive)) throw InputError(weights_only(path));
  optimizer.load(opt_archive);
  restore_optimizer_groups(meta.at("optimizer_groups"), optimizer, path);
  stage = "the memory";
  loaded.memory = read_memory(training, meta);
}

// The archives, read in place from the checkpoint file, into the model (and optimizer).
void load_payload(const nlohmann::json& meta, const CheckpointPayload& payload,
                  const std::string& path, TransformerLM& model, torch::optim::Optimizer* optimizer,
                  LoadedCheckpoint& loaded) {
  // The checksums passed, so the payload is what save_checkpoint wrote; LibTorch can still
  // refuse it (a checkpoint written by another LibTorch, or tensors that do not fit), and
  // its c10::Error carries a backtrace, not a message for the user.
  const char* stage = "the metadata";
  try {
    check_model_matches(meta, model, path);
    if (optimizer && payload.version >= 3 && payload.training.size == 0) {
      throw InputError(weights_only(path));  // before the weights are read, not after
    }
    const torch::Device device = model->device();
    const auto shapes = release_parameters(model);
    stage = "the archive (weights section)";
    torch::serialize::InputArchive weights;
    open_archive(weights, payload.weights, device);  // onto the model's device
    stage = "the model weights";
    torch::serialize::InputArchive model_archive;
    weights.read("model", model_archive);
    model->load(model_archive);
    check_shapes(model, shapes, path);
    if (optimizer) load_training(meta, payload, weights, *optimizer, device, stage, path, loaded);
    stage = "the random generator state";
    restore_generators(weights, device);
  } catch (const InputError&) {
    throw;
  } catch (const c10::Error& e) {
    throw InputError(path + ": cannot load " + stage + " from the checkpoint (" +
                     e.what_without_backtrace() + ")");
  } catch (const std::exception& e) {
    throw InputError(path + ": cannot load " + stage + " from the checkpoint (" + e.what() + ")");
  }
}

}  // namespace

LoadedCheckpoint load_checkpoint(const std::string& path, TransformerLM& model,
                                 torch::optim::Optimizer* optimizer) {
  LoadedCheckpoint loaded;
  const auto which = optimizer ? PayloadSections::kAll : PayloadSections::kWeights;
  read_checkpoint_file(path, which, [&](const std::string& text, const CheckpointPayload& payload) {
    const nlohmann::json meta = parse_meta(text, path);
    loaded.state = state_from_meta(meta, path);
    load_payload(meta, payload, path, model, optimizer, loaded);
  });
  return loaded;
}

}  // namespace txl
