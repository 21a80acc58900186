// libtxl_spm.so: sentencepiece behind the C interface of txl/data/spm_plugin.h. Only this
// file sees sentencepiece's headers; txl loads it with dlopen (see that header for why).
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "txl/data/spm_plugin.h"

namespace sentencepiece::logging {
void SetMinLogLevel(int level);
}  // namespace sentencepiece::logging

namespace {

// The non-empty lines of a text, as sentencepiece's trainer reads them.
class LineIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(std::string_view text) : text_(text) { advance(); }
  bool done() const override { return done_; }
  void Next() override { advance(); }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  void advance() {
    while (pos_ < text_.size()) {
      size_t end = text_.find('\n', pos_);
      if (end == std::string_view::npos) end = text_.size();
      line_.assign(text_.substr(pos_, end - pos_));
      pos_ = end + 1;
      if (!line_.empty()) return;
    }
    done_ = true;
  }
  std::string_view text_;
  size_t pos_ = 0;
  std::string line_;
  bool done_ = false;
};

// Loaded with RTLD_DEEPBIND, this plugin and sentencepiece must never write to std::cerr or
// std::cout: their references bind to libstdc++'s own (never constructed) stream objects,
// not to the executable's copies, and writing crashes. sentencepiece writes only through its
// LOG macro, which its minimum log level gates; at FATAL only a fatal error (which aborts
// anyway) would write. SetMinLogLevel is exported by libsentencepiece but not declared in its
// public headers.
const int kQuiet = [] {
  sentencepiece::logging::SetMinLogLevel(3);
  return 0;
}();

void put_error(const std::string& message, char* error, size_t size) {
  if (error == nullptr || size == 0) return;
  std::strncpy(error, message.c_str(), size - 1);
  error[size - 1] = '\0';
}

sentencepiece::SentencePieceProcessor& processor(void* p) {
  return *static_cast<sentencepiece::SentencePieceProcessor*>(p);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int txl_spm_train(const char* args, const char* text,
                                                         size_t text_size, char** model,
                                                         size_t* model_size, char* error,
                                                         size_t error_size) {
  try {
    std::string bytes;
    sentencepiece::util::Status status;
    sentencepiece::SetRandomGeneratorSeed(1);
    LineIterator lines(std::string_view(text, text_size));
    status = sentencepiece::SentencePieceTrainer::Train(args, &lines, &bytes);
    if (!status.ok()) {
      put_error(status.ToString(), error, error_size);
      return 1;
    }
    *model = static_cast<char*>(std::malloc(bytes.size()));
    if (*model == nullptr) {
      put_error("out of memory", error, error_size);
      return 1;
    }
    std::memcpy(*model, bytes.data(), bytes.size());
    *model_size = bytes.size();
    return 0;
  } catch (const std::exception& e) {
    put_error(e.what(), error, error_size);
    return 1;
  }
}

__attribute__((visibility("default"))) void* txl_spm_load(const char* model, size_t model_size,
                                                          char* error, size_t error_size) {
  auto* p = new sentencepiece::SentencePieceProcessor();
  const auto status = p->LoadFromSerializedProto(std::string_view(model, model_size));
  if (!status.ok()) {
    put_error(status.ToString(), error, error_size);
    delete p;
    return nullptr;
  }
  return p;
}

__attribute__((visibility("default"))) void txl_spm_free(void* p) {
  delete static_cast<sentencepiece::SentencePieceProcessor*>(p);
}

__attribute__((visibility("default"))) int txl_spm_size(void* p) {
  return processor(p).GetPieceSize();
}

__attribute__((visibility("default"))) int txl_spm_special(void* p, int which) {
  return which == 0 ? processor(p).unk_id() : processor(p).eos_id();
}

__attribute__((visibility("default"))) const char* txl_spm_piece(void* p, int id) {
  return processor(p).IdToPiece(id).c_str();
}

__attribute__((visibility("default"))) int64_t txl_spm_encode(void* p, const char* line,
                                                              size_t line_size, int32_t* out,
                                                              int64_t capacity) {
  std::vector<int> ids;
  if (!processor(p).Encode(std::string_view(line, line_size), &ids).ok()) return -1;
  const auto n = static_cast<int64_t>(ids.size());
  for (int64_t i = 0; i < n && i < capacity; ++i) out[i] = ids[static_cast<size_t>(i)];
  return n;
}

__attribute__((visibility("default"))) int64_t txl_spm_decode(void* p, const int32_t* ids,
                                                              int64_t count, char* out,
                                                              int64_t capacity) {
  std::string text;
  if (!processor(p).Decode(std::vector<int>(ids, ids + count), &text).ok()) return -1;
  const auto n = static_cast<int64_t>(text.size());
  if (n <= capacity) std::memcpy(out, text.data(), text.size());
  return n;
}

__attribute__((visibility("default"))) void txl_spm_release(char* buffer) { std::free(buffer); }

}  // extern "C"
