// A table of distinct words, for the word tokenizer's counting and lookups: open addressing
// with linear probing over a flat array of (hash, index) slots, the words' bytes kept in one
// buffer of its own. Indices are dense and in the order words were first added, so a table
// filled in text order numbers words by first occurrence. std::unordered_map spends most of
// a 100-million-word corpus chasing its nodes; this spends one probe or two.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace txl {

class WordTable {
 public:
  explicit WordTable(size_t expected_words = 1024);

  // The word's index, adding it (as index size()) when it is new.
  int32_t add(std::string_view word);
  // The word's index, or -1 when it is not in the table.
  int32_t find(std::string_view word) const;

  size_t size() const { return spans_.size(); }
  std::string_view word(int32_t index) const;

 private:
  struct Slot {
    uint64_t hash = 0;
    int32_t index = -1;  // -1: empty
  };
  struct Span {
    size_t offset;
    size_t length;
  };

  // The slot holding `word` (hash `h`), or the empty slot where it would go.
  size_t probe(std::string_view word, uint64_t h) const;
  void grow();

  std::vector<Slot> slots_;  // a power of two, at most half full
  std::vector<Span> spans_;  // index -> the word's bytes in text_
  std::string text_;
};

// The hash WordTable uses (8 bytes at a time, then a 64-bit finalizer).
uint64_t hash_word(std::string_view word);

}  // namespace txl
