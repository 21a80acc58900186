#include "txl/data/tokenize_text.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "txl/data/text_scan.h"
#include "txl/data/tokenizer.h"
#include "txl/data/tokenizers.h"
#include "txl/util/utf8.h"

namespace txl {

namespace {

using Clock = std::chrono::steady_clock;

// How long tokenizing runs before it reports, and how often after that.
constexpr double kFirstReportSeconds = 3.0;
constexpr double kReportEverySeconds = 10.0;

void report(const std::string& source, size_t done, size_t total, double seconds) {
  const double mb = 1e-6;
  const double rate = seconds > 0 ? done / seconds : 0;
  const double left = rate > 0 ? (total - done) / rate : 0;
  fmt::print(stderr, "tokenizing {}: {:.0f}% of {:.1f} MB, {:.1f} MB/s, about {:02d}:{:02d} left\n",
             source, 100.0 * done / std::max<size_t>(total, 1), total * mb, rate * mb,
             static_cast<int>(left) / 60, static_cast<int>(left) % 60);
}

// One chunked tokenizing: the chunks, what the workers fill in (one slot per chunk, so the
// ids keep the text's order) and how far they are.
struct ChunkedEncode {
  ChunkedEncode(std::vector<std::string_view> chunks_in, const Vocab& vocab_in,
                const std::string& source_in)
      : chunks(std::move(chunks_in)),
        vocab(vocab_in),
        source(source_in),
        ids(chunks.size()),
        unknown(chunks.size(), 0) {}

  const std::vector<std::string_view> chunks;
  const Vocab& vocab;
  const std::string& source;
  std::vector<std::vector<int32_t>> ids;
  std::vector<int64_t> unknown;
  std::atomic<size_t> next{0};  // the next chunk no worker has taken
  std::atomic<size_t> bytes_done{0};
  std::atomic<size_t> finished{0};  // workers done
  std::exception_ptr failure;
  std::mutex failure_mutex;
};

// One worker: encodes the chunks no other worker has taken until none is left. A failure
// stops every worker; the first is kept for the caller.
void encode_chunks(ChunkedEncode& job) {
  try {
    for (size_t i = job.next++; i < job.chunks.size(); i = job.next++) {
      EncodeStats stats;
      job.ids[i] = encode(job.chunks[i], job.vocab, job.source, &stats);
      job.unknown[i] = stats.unknown;
      job.bytes_done += job.chunks[i].size();
    }
  } catch (...) {
    const std::lock_guard<std::mutex> lock(job.failure_mutex);
    if (!job.failure) job.failure = std::current_exception();  // the first error is enough
    job.next = job.chunks.size();
  }
  ++job.finished;
}

size_t worker_count(const TokenizeOptions& options, size_t chunks) {
  const int cores =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  return static_cast<size_t>(std::clamp<int>(cores, 1, static_cast<int>(chunks)));
}

// Returns once `workers` workers have finished; reports progress on the way when asked to.
void wait_reporting(const ChunkedEncode& job, size_t workers, size_t text_bytes, bool progress) {
  const auto start = Clock::now();
  double next_report = kFirstReportSeconds;
  while (job.finished < workers) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (progress && seconds >= next_report && job.finished < workers) {
      report(job.source, job.bytes_done, text_bytes, seconds);
      next_report = seconds + kReportEverySeconds;
    }
  }
}

// The chunks' ids one after the other, and their unknown tokens summed. Each chunk is freed
// (and its memory handed back) once copied, so the ids are held about once, not twice.
TokenizedSplit joined(ChunkedEncode& job) {
  TokenizedSplit out;
  size_t total = 0;
  for (const auto& c : job.ids) total += c.size();
  out.ids.reserve(total);
  for (size_t i = 0; i < job.chunks.size(); ++i) {
    out.ids.insert(out.ids.end(), job.ids[i].begin(), job.ids[i].end());
    std::vector<int32_t>().swap(job.ids[i]);
#if defined(__GLIBC__)
    // txl keeps freed heap memory (platform/allocator.cpp); these chunks are not coming back.
    if (i % 16 == 15) ::malloc_trim(0);
#endif
    out.unknown += job.unknown[i];
  }
  return out;
}

}  // namespace

TokenizedSplit tokenize_text(std::string_view text, const Vocab& vocab, const std::string& source,
                             const TokenizeOptions& options) {
  if (text.size() <= options.chunk_bytes) {
    TokenizedSplit out;
    EncodeStats stats;
    out.ids = encode(text, vocab, source, &stats);
    out.unknown = stats.unknown;
    return out;
  }
  // Checked whole first, so an error names the offset in the file, not in a chunk.
  if (tokenizer_def(vocab.kind()).reads_utf8) check_utf8(text, source);
  ChunkedEncode job(line_chunks(text, options.chunk_bytes), vocab, source);
  const size_t n = worker_count(options, job.chunks.size());
  std::vector<std::thread> workers;
  for (size_t t = 0; t < n; ++t) workers.emplace_back(encode_chunks, std::ref(job));
  wait_reporting(job, n, text.size(), options.progress);
  for (auto& w : workers) w.join();
  if (job.failure) std::rethrow_exception(job.failure);
  return joined(job);
}

}  // namespace txl
