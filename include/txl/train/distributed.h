// Data-parallel training on torch's own c10d: a TCPStore for the rendezvous and a Gloo
// process group for the collectives (all-reduce, all-gather, barrier) on CPU.
//
// The launch convention is torchrun's: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
// MASTER_PORT in the environment (`txl train --nproc N` sets them for N local processes;
// several machines start one process per rank with the same MASTER_ADDR:MASTER_PORT, the
// address of rank 0). Without WORLD_SIZE (or with 1) a process trains alone and nothing here
// talks to the network.
//
// A rank that dies closes its connections, and the others' next collective fails at once
// with an error naming the operation (`txl train --nproc` then stops them all). A rank that
// hangs is given up after the timeout (TXL_DIST_TIMEOUT_S, default 600 s: generous, so that
// a slow checkpoint write on rank 0 never trips it). Every wait honours it, the joining
// included: where LibTorch cannot bound a wait, a watchdog (platform/watchdog.h) ends the
// process (exit 1) shortly after the timeout, with one line saying what did not answer.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "txl/model/memory.h"
#include "txl/torch_pch.h"

namespace txl {

struct DistributedEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;  // ranks on this machine (LOCAL_WORLD_SIZE): they share its cores
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::chrono::seconds timeout{600};
};

// From the environment; a malformed or inconsistent value throws InputError naming the
// variable (e.g. RANK=3 with WORLD_SIZE=2), as does RANK without WORLD_SIZE or WORLD_SIZE > 1
// without RANK.
DistributedEnv distributed_env_from_environment();

// Whether this txl was built with Gloo (CMakeLists.txt: its headers beside LibTorch's), and,
// where not, the sentence that says so to a user asking for several processes.
bool gloo_built();
std::string gloo_missing_reason();

class Distributed {
 public:
  // World size 1: no process group, every collective is the identity. Otherwise joins the
  // rendezvous at master_addr:master_port (rank 0 serves it) within the timeout.
  explicit Distributed(const DistributedEnv& env);
  ~Distributed();
  Distributed(const Distributed&) = delete;
  Distributed& operator=(const Distributed&) = delete;

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  bool is_root() const { return env_.rank == 0; }
  int local_world_size() const { return env_.local_world_size; }
  bool active() const { return env_.world_size > 1; }

  // Replaces every defined gradient by its mean over the ranks (one flat buffer, one
  // all-reduce).
  void average_gradients(const std::vector<torch::Tensor>& parameters);
  double sum(double value);    // over the ranks
  int64_t max(int64_t value);  // over the ranks
  // Every rank's tensor (same shape and dtype on all ranks), concatenated along dim 0 in
  // rank order.
  torch::Tensor gather_rows(const torch::Tensor& local);
  void barrier();

 private:
  DistributedEnv env_;
  struct Group;
  std::unique_ptr<Group> group_;
};

// The one process of a run that trains alone: world size 1, no process group, every
// collective the identity. What training uses when it is given no Distributed, so that no
// code path asks whether there is one.
Distributed& single_process();

// This rank's rows of a global [B, ...] batch: B / world contiguous rows (all of them for
// one process).
torch::Tensor local_rows(const Distributed& dist, const torch::Tensor& global);

// Every rank's memory as one [B, M, C] per layer, in rank order (what a checkpoint holds);
// collective: every rank calls it.
Memory gather_memory(Distributed& dist, const Memory& local);

// Data-parallel dropout: with more than one rank, reseeds `generator` from (seed, step, rank)
// so ranks draw independent masks and a resumed run redraws the same ones; one process keeps
// its generator's stream (checkpointed as it is).
void seed_dropout(const Distributed& dist, at::Generator& generator, int64_t seed, int64_t step);

}  // namespace txl
