// The checkpoint container: a fixed header (magic, format version, the lengths and XXH64
// checksums of the blocks) followed by the meta block (JSON text) and the payload sections
// (LibTorch archives): the weights section, then the training section, each with its own
// length and checksum so a reader of the weights never reads the optimizer's bytes. The
// layout is in checkpoint.h; this file knows bytes, not tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace txl {

inline constexpr const char* kCheckpointFormat = "txl-checkpoint";
inline constexpr int kCheckpointVersion = 3;        // the version written
inline constexpr int kOldestCheckpointVersion = 2;  // still read: one payload holding everything

// Writes the file atomically (util/fs.h): header, `meta`, then each section as its writer
// hands it over piece by piece, never held whole (a 150M-parameter run's weights and AdamW
// state are 1.8 GB; joined in memory they took three times that). A null `write_training`
// leaves the training section empty (weights only).
using PayloadSink = std::function<void(const void* data, size_t size)>;
using SectionWriter = std::function<void(const PayloadSink&)>;
void write_checkpoint_file(const std::string& path, const std::string& meta,
                           const SectionWriter& write_weights, const SectionWriter& write_training);

// A reader of one section's bytes, in place from the open file: position, buffer, count ->
// bytes read.
using PayloadRead = std::function<size_t(uint64_t pos, void* buf, size_t size)>;
struct PayloadSection {
  PayloadRead read;  // null for a section that was not asked for
  uint64_t size = 0;
};

// The sections of one file, all read from the same open file (a checkpoint renamed over this
// one meanwhile is not read half and half). In a version 2 file `weights` is its one payload,
// which holds the training state too, and `training` is empty.
struct CheckpointPayload {
  int version = 0;
  PayloadSection weights;   // model/, rng (version 2: everything)
  PayloadSection training;  // optimizer/, memory/; size 0: none (weights only)
};

// Which sections read_checkpoint_file verifies and hands over.
enum class PayloadSections { kWeights, kAll };

// The file's meta block, with header and meta checksum verified: the header's lengths must
// account for the whole file, so a file cut anywhere is refused here, before any section is
// read.
std::string read_checkpoint_meta(const std::string& path);

// The same, and then the checksums of the sections `which` names, verified by reading them in
// pieces (never held whole: the archives LibTorch loads from are read in place); then
// `read_payload`, when given, is called with the meta and those sections. kWeights reads no
// byte of the training section. Every problem is an InputError naming the file: missing, a
// directory, empty, truncated, foreign (with what it looks like), another format version, a
// checksum that does not match (naming the section).
using PayloadReader =
    std::function<void(const std::string& meta, const CheckpointPayload& payload)>;
std::string read_checkpoint_file(const std::string& path, PayloadSections which,
                                 const PayloadReader& read_payload);

}  // namespace txl
