// The table of environment variables against what uses it: every entry is read by the reader
// of its kind and by no other, a name the table lacks is a programming error, the sources read
// the environment only through the readers and only names the table declares, and the
// README's tables list exactly the variables a user may set.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "txl/util/env.h"
#include "txl/util/env_variables.h"

namespace txl {
namespace {

// Unsets `name` for a scope, then restores it.
class Unset {
 public:
  explicit Unset(const char* name) : name_(name) {
    if (const char* old = std::getenv(name)) saved_ = old;
    ::unsetenv(name);
  }
  ~Unset() {
    if (saved_) ::setenv(name_.c_str(), saved_->c_str(), 1);
  }
  Unset(const Unset&) = delete;
  Unset& operator=(const Unset&) = delete;

 private:
  std::string name_;
  std::optional<std::string> saved_;
};

// Each reader, by the name the sources call it, and the kinds it reads.
struct Reader {
  const char* name;
  std::vector<EnvKind> kinds;             // empty: every kind
  std::function<bool(const char*)> read;  // whether it found the variable set
};

const std::vector<Reader>& readers() {
  static const std::vector<Reader> all = {
      {"env_is", {EnvKind::kSwitch}, [](const char* n) { return env_is(n, "1"); }},
      {"env_set", {}, [](const char* n) { return env_set(n); }},
      {"env_int", {EnvKind::kInteger}, [](const char* n) { return env_int(n).has_value(); }},
      {"env_number", {EnvKind::kNumber}, [](const char* n) { return env_number(n).has_value(); }},
      {"env_steps", {EnvKind::kSteps}, [](const char* n) { return !env_steps(n).empty(); }},
      {"env_text",
       {EnvKind::kText, EnvKind::kFlags},
       [](const char* n) { return env_text(n).has_value(); }},
  };
  return all;
}

bool reads(const Reader& r, EnvKind kind) {
  if (r.kinds.empty()) return true;
  for (EnvKind k : r.kinds)
    if (k == kind) return true;
  return false;
}

const EnvVariable* declared(const std::string& name) {
  for (const auto& v : env_variables())
    if (name == v.name) return &v;
  return nullptr;
}

TEST(EnvDeclared, EveryEntryIsReadByItsKindsReadersAndRefusedByTheOthers) {
  for (const auto& v : env_variables()) {
    const Unset unset(v.name);
    for (const auto& r : readers()) {
      SCOPED_TRACE(std::string(r.name) + "(\"" + v.name + "\")");
      if (reads(r, v.kind)) {
        EXPECT_FALSE(r.read(v.name)) << "unset, yet read as set";
      } else {
        EXPECT_THROW(r.read(v.name), std::logic_error);
      }
    }
  }
}

TEST(EnvDeclared, ANameTheTableLacksIsAProgrammingError) {
  const Unset unset("TXL_NOT_DECLARED");
  for (const auto& r : readers()) {
    SCOPED_TRACE(r.name);
    try {
      r.read("TXL_NOT_DECLARED");
      ADD_FAILURE() << "an undeclared name was read";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("TXL_NOT_DECLARED"), std::string::npos) << e.what();
    }
  }
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Checked on the sources as they are, so that a misspelt name on a path no test runs fails
// here rather than with a std::logic_error in a user's hands.
TEST(EnvDeclared, TheSourcesReadOnlyDeclaredNamesAndOnlyThroughTheReaders) {
  const std::filesystem::path root(TXL_SOURCE_DIR);
  const std::regex call(R"(\b(env_[a-z]+)\("([A-Za-z0-9_]+)\")");
  std::vector<std::string> found;
  size_t calls = 0;
  for (const char* dir : {"src", "include", "apps"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root / dir)) {
      if (!entry.is_regular_file()) continue;
      const std::string rel = std::filesystem::relative(entry.path(), root).generic_string();
      std::istringstream in(read_text(entry.path()));
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        const auto comment = line.find("//");
        if (comment != std::string::npos) line.erase(comment);
        const std::string where = rel + ":" + std::to_string(n) + " ";
        if (line.find("getenv") != std::string::npos && rel != "src/util/env.cpp")
          found.push_back(where + "getenv outside the readers (util/env.h)");
        for (std::sregex_iterator m(line.begin(), line.end(), call), end; m != end; ++m) {
          const std::string reader = (*m)[1], name = (*m)[2];
          const Reader* r = nullptr;
          for (const auto& candidate : readers())
            if (reader == candidate.name) r = &candidate;
          if (r == nullptr) continue;  // another function whose name starts with env_
          ++calls;
          const EnvVariable* v = declared(name);
          if (v == nullptr) {
            found.push_back(where + name + " is not in the table");
          } else if (!reads(*r, v->kind)) {
            found.push_back(where + name + " is read with " + reader + ", not as declared");
          }
        }
      }
    }
  }
  EXPECT_GT(calls, 20u) << "the pattern no longer finds the readers' calls";
  std::string list;
  for (const auto& f : found) list += f + "\n";
  EXPECT_TRUE(found.empty()) << list;
}

// The README's "Environment variables" section and docs/environment.md (the other programs'
// variables): their text and the rows of their tables (variable -> what it takes).
struct ReadmeSection {
  std::string text;
  std::map<std::string, std::string> rows;
};

ReadmeSection readme_section() {
  const std::string readme = read_text(std::filesystem::path(TXL_SOURCE_DIR) / "README.md");
  const std::string heading = "### Environment variables\n";
  const auto begin = readme.find(heading);
  EXPECT_NE(begin, std::string::npos) << "README.md has no section " << heading;
  if (begin == std::string::npos) return {};
  const auto end = readme.find("\n## ", begin);
  ReadmeSection section{
      readme.substr(begin, end - begin) + "\n" +
          read_text(std::filesystem::path(TXL_SOURCE_DIR) / "docs" / "environment.md"),
      {}};
  std::istringstream in(section.text);
  const std::regex row(R"(^\| `([A-Za-z0-9_]+)` \| ([^|]*) \|)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    EXPECT_TRUE(section.rows.emplace(m[1], m[2]).second) << m[1] << " has two rows";
  }
  return section;
}

TEST(EnvDeclared, TheReadmeTablesListEveryVariableAUserSetsAndNoOther) {
  const auto section = readme_section();
  for (const auto& v : env_variables()) {
    const bool listed = section.rows.count(v.name) > 0;
    const bool user = v.origin == EnvOrigin::kUser || v.origin == EnvOrigin::kForeign;
    EXPECT_EQ(listed, user) << v.name
                            << (user ? " has no row in README.md's or docs/environment.md's tables"
                                     : " is not a user's and has a row there");
    if (!listed) continue;
    const std::string& takes = section.rows.at(v.name);
    EXPECT_EQ(takes == "0 / 1", v.kind == EnvKind::kSwitch) << v.name << ": " << takes;
    if (v.kind == EnvKind::kInteger) {
      const std::string range = "integer, " + std::to_string(v.lo) + " to " + std::to_string(v.hi);
      EXPECT_EQ(takes.rfind(range, 0), 0u) << v.name << " takes \"" << takes << "\", not " << range;
    }
  }
  for (const auto& [name, takes] : section.rows)
    EXPECT_NE(declared(name), nullptr) << name << " is in README.md but not in the table";
}

TEST(EnvDeclared, TheReadmeNamesEveryTxlVariableAndNoneTheTableLacks) {
  const auto section = readme_section();
  // A name, or a prefix with a star (TXL_INJECT_*).
  const std::regex txl_name(R"(TXL_[A-Z0-9_]*\*?)");
  std::vector<std::string> named;
  for (std::sregex_iterator m(section.text.begin(), section.text.end(), txl_name), end; m != end;
       ++m)
    named.push_back(m->str());
  const auto covers = [](const std::string& mention, const std::string& name) {
    if (!mention.empty() && mention.back() == '*')
      return name.rfind(mention.substr(0, mention.size() - 1), 0) == 0;
    return mention == name;
  };
  for (const auto& v : env_variables()) {
    if (v.origin == EnvOrigin::kForeign) continue;
    bool found = false;
    for (const auto& mention : named) found = found || covers(mention, v.name);
    EXPECT_TRUE(found) << v.name << " is not named in README.md's Environment variables";
  }
  for (const auto& mention : named) {
    if (mention == "TXL_") continue;  // the prefix itself, in the prose
    bool found = false;
    for (const auto& v : env_variables()) found = found || covers(mention, v.name);
    EXPECT_TRUE(found) << mention << " is in README.md's Environment variables, not in the table";
  }
}

}  // namespace
}  // namespace txl
