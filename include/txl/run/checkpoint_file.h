// The checkpoint container: a fixed header (magic, format version, the lengths and XXH64
// checksums of two blocks) followed by the meta block (JSON text) and the payload (a
// LibTorch archive). The layout is in checkpoint.h; this file knows bytes, not tensors.
#pragma once

#include <string>

namespace txl {

inline constexpr const char* kCheckpointFormat = "txl-checkpoint";
inline constexpr int kCheckpointVersion = 2;

// The whole file for `meta` and `payload`, header first.
std::string encode_checkpoint_file(const std::string& meta, const std::string& payload);

// The file's meta block, with header and meta checksum verified; when `payload` is given,
// the payload is read and verified too. Every problem is an InputError naming the file:
// missing, a directory, empty, truncated, foreign (with what it looks like), another format
// version, a checksum that does not match.
std::string read_checkpoint_file(const std::string& path, std::string* payload);

}  // namespace txl
