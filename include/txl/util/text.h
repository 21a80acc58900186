// Small text helpers shared by messages across the tree.
#pragma once

#include <string>
#include <vector>

namespace txl {

// "a, b, c" (or with another separator); "" for no items.
std::string join(const std::vector<std::string>& items, const std::string& separator = ", ");

// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {""}.
std::vector<std::string> split(const std::string& text, char separator);

// `; did you mean "x"?` for the nearest of `valid` when `wrong` is a near miss (a typo, a
// plural, two swapped letters: at most a third of its length in edits), else "".
std::string suggestion(const std::string& wrong, const std::vector<std::string>& valid);

// `s` as one word of a POSIX shell command: unchanged when it holds only safe characters,
// else in single quotes (an embedded ' written '\''), so that a printed command works
// when pasted.
std::string shell_quote(const std::string& s);

// Whether `s` ends with `tail`.
bool ends_with(const std::string& s, const std::string& tail);

// `text` on one line: a backslash, a line end, a carriage return and a tab written \\, \n, \r
// and \t (vocab.txt's tokens, the per-token table's fields).
std::string escape_line(const std::string& text);

// "mm:ss", or "h:mm:ss" from an hour on (negative durations read 00:00).
std::string format_duration(double seconds);

// A size for people: "350 MB" below a gigabyte, "1.4 GB" from one up (decimal units).
std::string format_bytes(double bytes);

}  // namespace txl
