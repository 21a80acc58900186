// The checkpoint container: a fixed header (magic, format version, the lengths and XXH64
// checksums of two blocks) followed by the meta block (JSON text) and the payload (a
// LibTorch archive). The layout is in checkpoint.h; this file knows bytes, not tensors.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace txl {

inline constexpr const char* kCheckpointFormat = "txl-checkpoint";
inline constexpr int kCheckpointVersion = 2;

// Writes the file atomically (util/fs.h): header, `meta`, then the payload as
// `write_payload` hands it over piece by piece, never held whole (a 150M-parameter run's
// weights and AdamW state are 1.8 GB; joined in memory they took three times that).
using PayloadSink = std::function<void(const void* data, size_t size)>;
void write_checkpoint_file(const std::string& path, const std::string& meta,
                           const std::function<void(const PayloadSink&)>& write_payload);

// The file's meta block, with header and meta checksum verified; when `payload` is given,
// the payload is read and verified too. Every problem is an InputError naming the file:
// missing, a directory, empty, truncated, foreign (with what it looks like), another format
// version, a checksum that does not match.
std::string read_checkpoint_file(const std::string& path, std::string* payload);

}  // namespace txl
