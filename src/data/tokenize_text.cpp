#include "txl/data/tokenize_text.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "txl/data/tokenizer.h"
#include "txl/util/utf8.h"

namespace txl {

namespace {

using Clock = std::chrono::steady_clock;

// How long tokenizing runs before it reports, and how often after that.
constexpr double kFirstReportSeconds = 3.0;
constexpr double kReportEverySeconds = 10.0;

// Chunks of about `target` bytes that end right after a '\n' (the last one at the end).
std::vector<std::string_view> line_chunks(std::string_view text, size_t target) {
  std::vector<std::string_view> chunks;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = std::min(text.size(), start + target);
    if (end < text.size()) {
      const size_t newline = text.find('\n', end);
      end = newline == std::string_view::npos ? text.size() : newline + 1;
    }
    chunks.push_back(text.substr(start, end - start));
    start = end;
  }
  return chunks;
}

void report(const std::string& source, size_t done, size_t total, double seconds) {
  const double mb = 1e-6;
  const double rate = seconds > 0 ? done / seconds : 0;
  const double left = rate > 0 ? (total - done) / rate : 0;
  fmt::print(stderr, "tokenizing {}: {:.0f}% of {:.1f} MB, {:.1f} MB/s, about {:02d}:{:02d} left\n",
             source, 100.0 * done / std::max<size_t>(total, 1), total * mb, rate * mb,
             static_cast<int>(left) / 60, static_cast<int>(left) % 60);
}

}  // namespace

TokenizedSplit tokenize_text(std::string_view text, const Vocab& vocab, const std::string& source,
                             const TokenizeOptions& options) {
  TokenizedSplit out;
  if (text.size() <= options.chunk_bytes) {
    EncodeStats stats;
    out.ids = encode(text, vocab, source, &stats);
    out.unknown = stats.unknown;
    return out;
  }
  // Checked whole first, so an error names the offset in the file, not in a chunk.
  check_utf8(text, source);
  const auto chunks = line_chunks(text, options.chunk_bytes);
  std::vector<std::vector<int32_t>> ids(chunks.size());
  std::vector<int64_t> unknown(chunks.size(), 0);
  std::atomic<size_t> next{0};
  std::atomic<size_t> bytes_done{0};
  const auto work = [&] {
    for (size_t i = next++; i < chunks.size(); i = next++) {
      EncodeStats stats;
      ids[i] = encode(chunks[i], vocab, source, &stats);
      unknown[i] = stats.unknown;
      bytes_done += chunks[i].size();
    }
  };
  const int cores =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  const auto n = static_cast<size_t>(std::clamp<int>(cores, 1, static_cast<int>(chunks.size())));
  std::vector<std::thread> workers;
  std::exception_ptr failure;
  std::mutex failure_mutex;
  std::atomic<size_t> finished{0};
  for (size_t t = 0; t < n; ++t) {
    workers.emplace_back([&] {
      try {
        work();
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();  // the first error is enough
        next = chunks.size();
      }
      ++finished;
    });
  }
  const auto start = Clock::now();
  double next_report = kFirstReportSeconds;
  while (finished < n) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (options.progress && seconds >= next_report && finished < n) {
      report(source, bytes_done, text.size(), seconds);
      next_report = seconds + kReportEverySeconds;
    }
  }
  for (auto& w : workers) w.join();
  if (failure) std::rethrow_exception(failure);
  size_t total = 0;
  for (const auto& c : ids) total += c.size();
  out.ids.reserve(total);
  for (size_t i = 0; i < chunks.size(); ++i) {
    out.ids.insert(out.ids.end(), ids[i].begin(), ids[i].end());
    out.unknown += unknown[i];
  }
  return out;
}

}  // namespace txl
