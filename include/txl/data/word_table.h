// A table of distinct words, for the word tokenizer's counting and lookups: open addressing
// with linear probing over a flat array of 32-byte slots that hold the hash, the length and
// the first 16 bytes of the word, so most lookups read one slot and nothing else (a longer
// word's rest is in one buffer of the table's own). Indices are dense and in the order words
// were first added, so a table filled in text order numbers words by first occurrence.
// std::unordered_map spent most of a 100-million-word corpus chasing its nodes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace txl {

// The hash WordTable uses: the project's XXH64 (util/hash.h).
uint64_t hash_word(std::string_view word);

class WordTable {
 public:
  // A word with its hash, computed once: a caller that knows the words to come prefetches
  // their slots (prefetch) and looks them up a few words later (see Lookahead).
  struct Key {
    std::string_view word;
    uint64_t hash = 0;
  };
  static Key key(std::string_view word) { return {word, hash_word(word)}; }

  explicit WordTable(size_t expected_words = 1024);

  // The word's index, adding it (as index size()) when it is new.
  int32_t add(const Key& key);
  int32_t add(std::string_view word) { return add(key(word)); }
  // The word's index, or -1 when it is not in the table.
  int32_t find(const Key& key) const;
  int32_t find(std::string_view word) const { return find(key(word)); }
  // Asks the CPU to bring the key's first slot into the cache.
  void prefetch(const Key& key) const {
    __builtin_prefetch(&slots_[key.hash & (slots_.size() - 1)]);
  }

  size_t size() const { return spans_.size(); }
  std::string_view word(int32_t index) const;

 private:
  // A word's first 16 bytes, zero-padded: what a slot compares before anything else.
  struct Prefix {
    uint64_t lo = 0, hi = 0;
  };
  struct Slot {
    uint64_t hash = 0;
    int32_t index = -1;  // -1: empty
    uint32_t length = 0;
    Prefix prefix;
  };
  struct Span {
    size_t offset;
    size_t length;
  };

  // The slot holding `word` (prefix `p`, hash `h`), or the empty slot where it would go.
  size_t probe(std::string_view word, const Prefix& p, uint64_t h) const;
  static Prefix prefix_of(std::string_view word);
  void grow();

  std::vector<Slot> slots_;  // a power of two, at most half full
  std::vector<Span> spans_;  // index -> the word's bytes in text_
  std::string text_;
};

// Feeds words to `f(key)` in their order, each kAhead words after its slot was prefetched:
// the lookups of a large table wait on memory, and this way several wait at once.
template <class F>
class Lookahead {
 public:
  Lookahead(const WordTable& table, F f) : table_(table), f_(std::move(f)) {}
  void push(std::string_view word) {
    const WordTable::Key key = WordTable::key(word);
    table_.prefetch(key);
    if (count_ == kAhead) {
      f_(ring_[head_]);
      ring_[head_] = key;
      head_ = (head_ + 1) % kAhead;
    } else {
      ring_[(head_ + count_++) % kAhead] = key;
    }
  }
  // The words still waiting, in order; call once after the last push.
  void flush() {
    for (; count_ > 0; --count_, head_ = (head_ + 1) % kAhead) f_(ring_[head_]);
  }

 private:
  static constexpr size_t kAhead = 16;
  const WordTable& table_;
  F f_;
  WordTable::Key ring_[kAhead];
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace txl
