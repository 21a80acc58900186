// The file a probe shard writes (`txl eval --shard K/N --json FILE`) and the merge of a full
// set of them (`txl eval --merge FILES...`) into the probes' outputs, finished by the same
// code as one process's (run_probes.h: finish_probe).
//
//   {"format": "txl probe shard", "version": 1, "shard": K, "shards": N,
//    "run": {...}, "settings": {...},
//    "probes": [{"name", "options" (seed included), "seconds", "partial"}], "digest"}
//
// "run" says which weights and data were scored (the run directory, the checkpoint file, its
// step and checksum, the split and its checksum) and "settings" what changes the numbers
// (lengths, precision, eval.batch_tokens); the merge compares both as wholes, so the caller
// decides their keys. The digest finds a file edited or damaged after it was written.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/probe/probe_shard.h"
#include "txl/probe/run_probes.h"

namespace txl {

nlohmann::json shard_file_json(const ProbeShard& shard, const nlohmann::json& run,
                               const nlohmann::json& settings,
                               const std::vector<ProbePartial>& probes);

struct ShardFile {
  std::string path;
  ProbeShard shard;
  nlohmann::json run, settings;
  std::vector<ProbePartial> probes;
};

// InputError naming `path` when it cannot be read, is not JSON, or is not a shard file of
// this version (or was edited since it was written).
ShardFile read_shard_file(const std::string& path);

struct MergedProbes {
  nlohmann::json run, settings;      // the shards' (all equal)
  std::vector<ProbeOutput> outputs;  // as one process's run_probes would give them
};

// InputError naming the file and what differs when `files` are not one full set of shards of
// one run: another run or checkpoint, other settings, probes, probe options or seed, another
// N, a shard missing or given twice.
MergedProbes merge_probe_shards(const std::vector<ShardFile>& files);

}  // namespace txl
