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

}  // namespace

void save_checkpoint(const std::string& path, const TrainState& state, TransformerLM& model,
                     torch::optim::Optimizer* optimizer, const Memory& memory) {
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive model_archive;
  model->save(model_archive);
  archive.write("model", model_archive);
  if (optimizer) {
    torch::serialize::OutputArchive opt_archive;
    optimizer->save(opt_archive);
    archive.write("optimizer", opt_archive);
  }
  if (!memory.empty()) {
    torch::serialize::OutputArchive mem_archive;
    for (size_t l = 0; l < memory.layers.size(); ++l) {
      mem_archive.write(std::to_string(l), memory.layers[l], /*is_buffer=*/true);
    }
    archive.write("memory", mem_archive);
  }
  archive.write("rng", at::detail::getDefaultCPUGenerator().get_state(), /*is_buffer=*/true);
  // On a GPU, dropout draws from that device's generator.
  if (model->device().is_cuda()) {
    archive.write("rng_cuda", default_generator(model->device()).get_state(), /*is_buffer=*/true);
  }
  const std::string meta = meta_json(state, model, optimizer, memory).dump();
  write_checkpoint_file(path, meta, [&](const PayloadSink& sink) {
    archive.save_to([&](const void* data, size_t size) {
      sink(data, size);
      return size;
    });
  });
}

bool holds_optimizer_state(const std::string& path) {
  const nlohmann::json meta = parse_meta(read_checkpoint_file(path, nullptr), path);
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
  return state_from_meta(parse_meta(read_checkpoint_file(path, nullptr), path), path);
}

void verify_checkpoint(const std::string& path) {
  const auto nothing = [](const std::string&, const PayloadRead&, uint64_t) {};
  state_from_meta(parse_meta(read_checkpoint_file(path, nothing), path), path);
}

namespace {

// The archive, read in place from the checkpoint file, into the model (and optimizer).
void load_payload(const nlohmann::json& meta, const PayloadRead& read, uint64_t size,
                  const std::string& path, TransformerLM& model, torch::optim::Optimizer* optimizer,
                  LoadedCheckpoint& loaded) {
  // The checksums passed, so the payload is what save_checkpoint wrote; LibTorch can still
  // refuse it (a checkpoint written by another LibTorch, or tensors that do not fit), and
  // its c10::Error carries a backtrace, not a message for the user.
  const char* stage = "the metadata";
  try {
    check_model_matches(meta, model, path);
    stage = "the archive";
    torch::serialize::InputArchive archive;
    archive.load_from(
        read, [size] { return static_cast<size_t>(size); },
        model->device());  // onto the model's
    stage = "the model weights";
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    model->load(model_archive);
    if (optimizer) {
      stage = "the optimizer state";
      torch::serialize::InputArchive opt_archive;
      if (!archive.try_read("optimizer", opt_archive)) {
        throw InputError(weights_only(path));
      }
      optimizer->load(opt_archive);
      restore_optimizer_groups(meta.at("optimizer_groups"), *optimizer, path);
    }
    stage = "the memory";
    loaded.memory = read_memory(archive, meta);
    stage = "the random generator state";
    restore_generators(archive, model->device());
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
  read_checkpoint_file(path,
                       [&](const std::string& meta_text, const PayloadRead& read, uint64_t size) {
                         const nlohmann::json meta = parse_meta(meta_text, path);
                         loaded.state = state_from_meta(meta, path);
                         load_payload(meta, read, size, path, model, optimizer, loaded);
                       });
  return loaded;
}

}  // namespace txl
