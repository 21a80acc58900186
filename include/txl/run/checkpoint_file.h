// The checkpoint container: a fixed header (magic, format version, the lengths and XXH64
// checksums of two blocks) followed by the meta block (JSON text) and the payload (a
// LibTorch archive). The layout is in checkpoint.h; this file knows bytes, not tensors.
#pragma once

#include <cstddef>
#include <cstdint>
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

// The file's meta block, with header and meta checksum verified. When `read_payload` is
// given, the payload's checksum is verified too, reading it in pieces (never held whole:
// the archive LibTorch loads from is read in place), and then `read_payload` is called with
// the meta, a reader of the payload's bytes (position, buffer, count -> bytes read) and its
// size, on the same open file. Every problem is an InputError naming the file: missing, a
// directory, empty, truncated, foreign (with what it looks like), another format version, a
// checksum that does not match.
using PayloadRead = std::function<size_t(uint64_t pos, void* buf, size_t size)>;
using PayloadReader =
    std::function<void(const std::string& meta, const PayloadRead& read, uint64_t size)>;
std::string read_checkpoint_file(const std::string& path, const PayloadReader& read_payload);

}  // namespace txl
