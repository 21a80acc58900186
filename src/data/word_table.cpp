#include "txl/data/word_table.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "txl/util/hash.h"

namespace txl {

namespace {

size_t slots_for(size_t words) {
  size_t n = 16;
  while (n < 2 * words) n *= 2;
  return n;
}

}  // namespace

uint64_t hash_word(std::string_view word) { return xxh64(word.data(), word.size()); }

WordTable::WordTable(size_t expected_words) : slots_(slots_for(expected_words)) {
  spans_.reserve(expected_words);
}

std::string_view WordTable::word(int32_t index) const {
  const Span& s = spans_.at(static_cast<size_t>(index));
  return std::string_view(text_).substr(s.offset, s.length);
}

WordTable::Prefix WordTable::prefix_of(std::string_view word) {
  Prefix p;
  const size_t n = std::min<size_t>(word.size(), 16);
  char bytes[16] = {};
  std::memcpy(bytes, word.data(), n);
  std::memcpy(&p.lo, bytes, 8);
  std::memcpy(&p.hi, bytes + 8, 8);
  return p;
}

size_t WordTable::probe(std::string_view word, const Prefix& p, uint64_t h) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.index < 0) return i;
    if (s.hash != h || s.length != word.size() || s.prefix.lo != p.lo || s.prefix.hi != p.hi) {
      continue;
    }
    if (word.size() <= 16) return i;
    const Span& span = spans_[static_cast<size_t>(s.index)];
    if (std::memcmp(text_.data() + span.offset + 16, word.data() + 16, word.size() - 16) == 0) {
      return i;
    }
  }
}

int32_t WordTable::find(const Key& key) const {
  return slots_[probe(key.word, prefix_of(key.word), key.hash)].index;
}

int32_t WordTable::add(const Key& key) {
  const std::string_view word = key.word;
  const uint64_t h = key.hash;
  const Prefix p = prefix_of(word);
  size_t i = probe(word, p, h);
  if (slots_[i].index >= 0) return slots_[i].index;
  if (spans_.size() >= static_cast<size_t>(INT32_MAX)) {
    throw std::length_error("WordTable: more than 2^31 - 1 distinct words");
  }
  if (word.size() > UINT32_MAX) throw std::length_error("WordTable: a word of 4 GB or more");
  if (2 * (spans_.size() + 1) > slots_.size()) {
    grow();
    i = probe(word, p, h);
  }
  const auto index = static_cast<int32_t>(spans_.size());
  spans_.push_back({text_.size(), word.size()});
  text_.append(word);
  slots_[i] = {h, index, static_cast<uint32_t>(word.size()), p};
  return index;
}

void WordTable::grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.index < 0) continue;
    size_t i = s.hash & mask;
    while (slots_[i].index >= 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

}  // namespace txl
