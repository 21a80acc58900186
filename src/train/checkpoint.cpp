#include "txl/train/checkpoint.h"

#include <sstream>

#include "txl/util/error.h"
#include "txl/util/fs.h"

namespace txl {

namespace {

nlohmann::json state_to_json(const TrainState& s) {
  return {{"format", kCheckpointFormat},  {"version", kCheckpointVersion},
          {"step", s.step},               {"tokens_seen", s.tokens_seen},
          {"stream_position", s.stream_position}, {"best_valid_ppl", s.best_valid_ppl},
          {"config", s.config},           {"vocab_checksum", std::to_string(s.vocab_checksum)}};
}

TrainState state_from_json(const std::string& text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw InputError(path + ": checkpoint metadata is not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object() || j.value("format", "") != kCheckpointFormat) {
    throw InputError(path + ": not a txl checkpoint (format tag missing)");
  }
  const int version = j.value("version", -1);
  if (version != kCheckpointVersion) {
    throw InputError(path + ": checkpoint format version " + std::to_string(version) +
                     ", this txl reads version " + std::to_string(kCheckpointVersion));
  }
  try {
    TrainState s;
    s.step = j.at("step").get<int64_t>();
    s.tokens_seen = j.at("tokens_seen").get<int64_t>();
    s.stream_position = j.at("stream_position").get<int64_t>();
    s.best_valid_ppl = j.at("best_valid_ppl").get<double>();
    s.config = j.at("config");
    s.vocab_checksum = std::stoull(j.at("vocab_checksum").get<std::string>());
    return s;
  } catch (const std::exception& e) {
    throw InputError(path + ": checkpoint metadata is incomplete (" + e.what() + ")");
  }
}

torch::serialize::InputArchive open_archive(const std::string& path) {
  if (!is_regular_file(path)) throw InputError(path + ": checkpoint file not found");
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const c10::Error& e) {
    throw InputError(path + ": cannot read checkpoint (truncated or corrupted file): " +
                     e.what_without_backtrace());
  }
  return archive;
}

TrainState read_meta(torch::serialize::InputArchive& archive, const std::string& path) {
  c10::IValue meta;
  if (!archive.try_read("meta", meta) || !meta.isString()) {
    throw InputError(path + ": not a txl checkpoint (no metadata)");
  }
  return state_from_json(meta.toStringRef(), path);
}

}  // namespace

void save_checkpoint(const std::string& path, const TrainState& state, TransformerLM& model,
                     torch::optim::Optimizer* optimizer, const Memory& memory) {
  torch::serialize::OutputArchive archive;
  archive.write("meta", c10::IValue(state_to_json(state).dump()));
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
  std::ostringstream bytes;
  archive.save_to(bytes);
  write_file_atomic(path, bytes.str());
}

TrainState read_checkpoint_state(const std::string& path) {
  auto archive = open_archive(path);
  return read_meta(archive, path);
}

LoadedCheckpoint load_checkpoint(const std::string& path, TransformerLM& model,
                                 torch::optim::Optimizer* optimizer) {
  auto archive = open_archive(path);
  LoadedCheckpoint loaded;
  loaded.state = read_meta(archive, path);
  try {
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    model->load(model_archive);
    if (optimizer) {
      torch::serialize::InputArchive opt_archive;
      archive.read("optimizer", opt_archive);
      optimizer->load(opt_archive);
    }
    torch::serialize::InputArchive mem_archive;
    if (archive.try_read("memory", mem_archive)) {
      for (int64_t l = 0; l < model->config().n_layer; ++l) {
        torch::Tensor t;
        mem_archive.read(std::to_string(l), t, /*is_buffer=*/true);
        loaded.memory.layers.push_back(t);
      }
    }
    torch::Tensor rng;
    if (archive.try_read("rng", rng, /*is_buffer=*/true)) {
      auto generator = at::detail::getDefaultCPUGenerator();
      generator.set_state(rng);
    }
  } catch (const c10::Error& e) {
    throw InputError(path + ": checkpoint does not match the model (" + e.what_without_backtrace() + ")");
  }
  return loaded;
}

}  // namespace txl
