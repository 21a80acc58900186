// `txl eval --shard K/N` and `txl eval --merge FILES`: the probes split across processes
// (probe/probe_shard.h), each process scoring a block of every probe's windows into a shard
// file, and the merge printing and writing what one process would have.
#pragma once

#include <string>
#include <vector>

#include "txl/cli/eval_options.h"

namespace txl {

// txl eval --run DIR --probes ... --shard K/N --json FILE: shard K of N of the probes, written
// as a shard file. No perplexity is computed (it is not a probe; txl eval without --shard
// computes it). `given`: the option names on the command line, for the refusals.
int run_probe_shard(const EvalCliOptions& o, const std::string& run_dir, const std::string& shard,
                    const std::vector<std::string>& given);

// txl eval --merge FILES... [--json OUT]: the probes' tables and JSON section, as one process.
int run_probe_merge(const std::vector<std::string>& files, const std::string& json_path,
                    const std::vector<std::string>& given);

}  // namespace txl
