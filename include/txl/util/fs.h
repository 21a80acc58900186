// File-system helpers shared by every layer.
#pragma once

#include <string>

namespace txl {

// Writes `content` to `path` atomically: a temporary file in the same directory is written,
// flushed and fsync'ed, then renamed over `path`. A crash at any moment leaves either the
// old file or the new one, never a mix. Throws std::runtime_error naming the path on failure.
void write_file_atomic(const std::string& path, const std::string& content);

bool is_directory(const std::string& path);
bool is_regular_file(const std::string& path);

}  // namespace txl
