// `txl train --nproc N`: N processes of this executable on this machine, ranks 0..N-1 of one
// data-parallel run (distributed.h), with the environment torchrun would give them
// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT: a free
// port).
//
// The launcher owns its ranks: SIGINT/SIGTERM (stop_signal) is passed to each of them once,
// so they stop together after the same step with one checkpoint (a stop that arrives while
// they start ends the starting); a rank that fails (non-zero exit, or killed) makes the
// launcher SIGTERM the others and SIGKILL what is left after kTerminateGraceSeconds, so
// nothing hangs. The ranks die with the launcher (PDEATHSIG).
#pragma once

#include <atomic>
#include <string>
#include <vector>

namespace txl {

inline constexpr int kTerminateGraceSeconds = 10;

// Runs the ranks with `args` (argv without the program name) and returns the run's exit
// code: 0, the first failing rank's code (128 + signal when killed), or 128 + the stop
// signal when the run was interrupted.
int launch_local_ranks(int nproc, const std::vector<std::string>& args,
                       const std::atomic<int>& stop_signal);

// A TCP port that was free on 127.0.0.1 a moment ago.
int free_local_port();

}  // namespace txl
