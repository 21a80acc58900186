// The rendezvous store of a distributed run (c10d's TCPStore), made the same way on every
// LibTorch txl builds against.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace txl {

struct TcpStoreSettings {
  std::string host;         // rank 0's address
  std::uint16_t port = 0;   // rank 0 listens here
  bool is_server = false;   // true on rank 0
  std::size_t workers = 1;  // processes in the run, rank 0 included
  std::chrono::milliseconds timeout{600000};
};

// LibTorch 2.4+ defaults TCPStoreOptions::useLibUV to true and fails at once where it was
// built without libuv (Debian 13's 2.6 is): txl always asks for the classic TCP backend,
// which every version has.
c10::intrusive_ptr<c10d::Store> make_tcp_store(const TcpStoreSettings& settings);

}  // namespace txl
