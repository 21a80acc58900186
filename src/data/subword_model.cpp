#include "txl/data/subword_model.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>

#include "txl/data/spm_plugin.h"
#include "txl/data/text_scan.h"
#include "txl/util/env.h"
#include "txl/util/error.h"

#ifndef TXL_SPM_PLUGIN_NAME
#define TXL_SPM_PLUGIN_NAME "libtxl_spm.so"
#endif

namespace txl {

namespace {

// More sentences than this are sampled (with a fixed seed), as sentencepiece advises: its
// trainer holds every sentence in memory.
constexpr int64_t kMaxTrainSentences = 2'000'000;
// sentencepiece's own floor for max_sentence_length.
constexpr size_t kMinSentenceBytes = 4192;
constexpr size_t kErrorBytes = 1024;

// The plugin's functions (txl/data/spm_plugin.h), resolved once.
struct Plugin {
  std::string problem;  // why it is unavailable ("" when loaded)
  txl_spm_train_fn train = nullptr;
  txl_spm_load_fn load = nullptr;
  txl_spm_free_fn free = nullptr;
  txl_spm_size_fn size = nullptr;
  txl_spm_special_fn special = nullptr;
  txl_spm_piece_fn piece = nullptr;
  txl_spm_encode_fn encode = nullptr;
  txl_spm_decode_fn decode = nullptr;
  txl_spm_release_fn release = nullptr;
};

// Where the plugin may be: $TXL_SPM_PLUGIN alone when it is set (a missing file or one that
// is not the plugin is then the problem reported, not passed over for another copy), else
// beside the running executable, then the build folder.
std::vector<std::string> plugin_candidates() {
  std::vector<std::string> out;
  if (const auto path = env_text("TXL_SPM_PLUGIN")) return {*path};
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) out.push_back((exe.parent_path() / TXL_SPM_PLUGIN_NAME).string());
#ifdef TXL_SPM_PLUGIN_BUILD_PATH
  out.push_back(TXL_SPM_PLUGIN_BUILD_PATH);
#endif
  return out;
}

template <class F>
void resolve(void* handle, const char* name, F* out, std::string& problem) {
  *out = reinterpret_cast<F>(::dlsym(handle, name));
  if (*out == nullptr && problem.empty()) problem = std::string("the plugin lacks ") + name;
}

Plugin open_plugin() {
  Plugin p;
  void* handle = nullptr;
  std::string tried;
  for (const auto& path : plugin_candidates()) {
    if (!std::filesystem::exists(path)) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (handle != nullptr) break;
    const char* why = ::dlerror();
    tried += (tried.empty() ? "" : ", ") + path + " (" + (why ? why : "cannot load") + ")";
  }
  if (handle == nullptr) {
    p.problem = "the sentencepiece plugin " + std::string(TXL_SPM_PLUGIN_NAME) +
                " was not found (looked for " + tried + "; set TXL_SPM_PLUGIN to its path)";
    return p;
  }
  resolve(handle, "txl_spm_train", &p.train, p.problem);
  resolve(handle, "txl_spm_load", &p.load, p.problem);
  resolve(handle, "txl_spm_free", &p.free, p.problem);
  resolve(handle, "txl_spm_size", &p.size, p.problem);
  resolve(handle, "txl_spm_special", &p.special, p.problem);
  resolve(handle, "txl_spm_piece", &p.piece, p.problem);
  resolve(handle, "txl_spm_encode", &p.encode, p.problem);
  resolve(handle, "txl_spm_decode", &p.decode, p.problem);
  resolve(handle, "txl_spm_release", &p.release, p.problem);
  return p;  // never closed: models may live until exit
}

const Plugin& plugin() {
  static const Plugin p = open_plugin();
  return p;
}

const Plugin& plugin_or_throw(const std::string& source) {
  const Plugin& p = plugin();
  if (!p.problem.empty()) {
    throw InputError(source + ": the bpe and unigram tokenizers need sentencepiece, but " +
                     p.problem);
  }
  return p;
}

// "Internal: ./src/x.cc(660) [check] Vocabulary size too high (9). ..." -> the sentence.
std::string reason(const std::string& text) {
  const size_t bracket = text.rfind("] ");
  return bracket == std::string::npos ? text : text.substr(bracket + 2);
}

// A training failure's reason as txl's settings can answer it: sentencepiece's advice names
// its own command-line flags (--character_coverage, ...), which txl does not have, so each
// sentence naming one is dropped and txl's key named instead.
std::string training_reason(const std::string& text) {
  std::string kept;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(". ", start);
    end = end == std::string::npos ? text.size() : end + 1;
    const std::string sentence = text.substr(start, end - start);
    const bool names_flag = sentence.find("--") != std::string::npos ||
                            sentence.find("character_coverage") != std::string::npos;
    if (!names_flag) kept += sentence;
    start = end;
  }
  while (!kept.empty() && kept.back() == ' ') kept.pop_back();
  if (!kept.empty() && kept.back() != '.') kept += '.';
  // "Vocabulary size is smaller than required_chars. 100 vs 274.": the least size it takes.
  const size_t vs = kept.find(" vs ");
  if (kept.find("required_chars") != std::string::npos && vs != std::string::npos) {
    const std::string needed =
        kept.substr(vs + 4, kept.find_first_not_of("0123456789", vs + 4) - vs - 4);
    if (!needed.empty()) return kept + " In txl, raise data.vocab_size to at least " + needed;
  }
  return kept + " In txl, change data.vocab_size (or the training split)";
}

std::string training_args(std::string_view text, TokenizerKind kind, int64_t vocab_size) {
  size_t longest = 0;
  int64_t lines = 0;
  for_each_line(text, [&](std::string_view line) {
    longest = std::max(longest, line.size());
    lines += line.empty() ? 0 : 1;
  });
  const size_t max_sentence = std::max(kMinSentenceBytes, longest + 1);
  const bool sample = lines > kMaxTrainSentences;
  return "--model_type=" + std::string(kind == TokenizerKind::kBpe ? "bpe" : "unigram") +
         " --vocab_size=" + std::to_string(vocab_size) +
         " --unk_id=0 --eos_id=1 --eos_piece=<eos> --bos_id=-1 --pad_id=-1"
         " --byte_fallback=true --normalization_rule_name=identity"
         " --remove_extra_whitespaces=false --add_dummy_prefix=false --minloglevel=3" +
         " --num_threads=" + std::to_string(kSubwordTrainThreads) +
         " --max_sentence_length=" + std::to_string(max_sentence) +
         " --input_sentence_size=" + std::to_string(sample ? kMaxTrainSentences : 0) +
         " --shuffle_input_sentence=" + (sample ? "true" : "false");
}

}  // namespace

struct SubwordModel::Engine {
  const Plugin* plugin = nullptr;
  void* processor = nullptr;
  std::vector<std::string> pieces;
  int64_t unk = 0, eos = 1;
  ~Engine() {
    if (processor != nullptr) plugin->free(processor);
  }
};

bool subword_available() { return plugin().problem.empty(); }
std::string subword_problem() { return plugin().problem; }

std::shared_ptr<const SubwordModel> SubwordModel::train(std::string_view train_text,
                                                        TokenizerKind kind, int64_t vocab_size,
                                                        const std::string& source) {
  const Plugin& p = plugin_or_throw(source);
  char* model = nullptr;
  size_t model_size = 0;
  char error[kErrorBytes] = {0};
  if (p.train(training_args(train_text, kind, vocab_size).c_str(), train_text.data(),
              train_text.size(), &model, &model_size, error, sizeof error) != 0) {
    throw InputError("data.vocab_size (" + std::to_string(vocab_size) + "): sentencepiece cannot " +
                     "train a " + to_string(kind) + " model of that size on " + source + ": " +
                     training_reason(reason(error)));
  }
  std::string bytes(model, model_size);
  p.release(model);
  return load(std::move(bytes), source + " (the trained model)");
}

std::shared_ptr<const SubwordModel> SubwordModel::load(std::string bytes,
                                                       const std::string& source) {
  const Plugin& p = plugin_or_throw(source);
  auto engine = std::make_unique<Engine>();
  engine->plugin = &p;
  char error[kErrorBytes] = {0};
  engine->processor = p.load(bytes.data(), bytes.size(), error, sizeof error);
  if (engine->processor == nullptr) {
    throw InputError(source + ": not a sentencepiece model (" + reason(error) + ")");
  }
  engine->unk = p.special(engine->processor, 0);
  engine->eos = p.special(engine->processor, 1);
  if (engine->unk != 0 || engine->eos != 1) {
    throw InputError(source + ": a txl subword model has <unk> at id 0 and <eos> at id 1");
  }
  const int n = p.size(engine->processor);
  for (int id = 0; id < n; ++id) engine->pieces.emplace_back(p.piece(engine->processor, id));
  return std::shared_ptr<const SubwordModel>(new SubwordModel(std::move(bytes), std::move(engine)));
}

std::vector<std::string> SubwordModel::pieces() const { return engine_->pieces; }
int64_t SubwordModel::unk_id() const { return engine_->unk; }
int64_t SubwordModel::eos_id() const { return engine_->eos; }

void SubwordModel::encode_line(std::string_view line, std::vector<int32_t>* out) const {
  const size_t at = out->size();
  // Pieces are rarely shorter than a byte each on average; one retry covers the rest.
  out->resize(at + line.size() + 1);
  int64_t n = engine_->plugin->encode(engine_->processor, line.data(), line.size(),
                                      out->data() + at, static_cast<int64_t>(line.size() + 1));
  if (n > static_cast<int64_t>(line.size() + 1)) {
    out->resize(at + static_cast<size_t>(n));
    n = engine_->plugin->encode(engine_->processor, line.data(), line.size(), out->data() + at, n);
  }
  if (n < 0) throw std::runtime_error("sentencepiece could not encode a line");
  out->resize(at + static_cast<size_t>(n));
}

std::string SubwordModel::decode(const std::vector<int>& ids) const {
  std::vector<int32_t> in(ids.begin(), ids.end());
  std::string text(in.size() * 8 + 16, '\0');
  int64_t n =
      engine_->plugin->decode(engine_->processor, in.data(), static_cast<int64_t>(in.size()),
                              text.data(), static_cast<int64_t>(text.size()));
  if (n > static_cast<int64_t>(text.size())) {
    text.resize(static_cast<size_t>(n));
    n = engine_->plugin->decode(engine_->processor, in.data(), static_cast<int64_t>(in.size()),
                                text.data(), n);
  }
  if (n < 0) throw std::runtime_error("sentencepiece could not decode");
  text.resize(static_cast<size_t>(n));
  return text;
}

SubwordModel::SubwordModel(std::string bytes, std::unique_ptr<Engine> engine)
    : bytes_(std::move(bytes)), engine_(std::move(engine)) {}
SubwordModel::~SubwordModel() = default;

}  // namespace txl
