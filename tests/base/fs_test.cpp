// write_file_atomic and reading whole files: regular files only (a FIFO is refused without
// blocking, a directory, socket or device without being replaced), links followed.
#include "txl/util/fs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

#include "base_test_util.h"
#include "special_files.h"
#include "txl/data/corpus.h"
#include "txl/util/json.h"

namespace txl {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(WriteFileAtomic, ReplacesContentAndLeavesNoTemporary) {
  const std::string path = ::testing::TempDir() + "/txl_fs_test.txt";
  write_file_atomic(path, "first");
  write_file_atomic(path, "second version");
  EXPECT_EQ(slurp(path), "second version");
  EXPECT_TRUE(is_regular_file(path));
  EXPECT_FALSE(is_directory(path));
}

TEST(WriteFileAtomic, MissingDirectoryIsAnErrorNamingThePath) {
  try {
    write_file_atomic("/nonexistent-dir-txl/x.json", "{}");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir-txl/x.json"), std::string::npos)
        << e.what();
  }
}

namespace fs = std::filesystem;
using testing::contains;
using testing::input_error;
using testing::make_socket;

TEST(FileKinds, EachKindIsToldAndDescribed) {
  const testing::TestDir dir("fs_kinds");
  const std::string fifo = dir.file("fifo"), sock = dir.file("s"), file = dir.file("f");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  make_socket(sock);
  write_file_atomic(file, "x");
  EXPECT_EQ(file_kind(file), FileKind::kRegular);
  EXPECT_EQ(file_kind(dir.path().string()), FileKind::kDirectory);
  EXPECT_EQ(file_kind(fifo), FileKind::kFifo);
  EXPECT_EQ(file_kind(sock), FileKind::kSocket);
  EXPECT_EQ(file_kind("/dev/null"), FileKind::kCharDevice);
  EXPECT_EQ(file_kind(dir.file("absent")), FileKind::kMissing);
  EXPECT_EQ(describe(FileKind::kFifo), "a FIFO (named pipe)");
  EXPECT_EQ(describe(FileKind::kCharDevice), "a character device");
}

// Every writer goes through write_file_atomic: what is not a regular file is refused and left
// exactly as it was (the node keeps its kind), and no temporary is left behind.
TEST(WriteFileAtomic, RefusesDirectoriesFifosAndSocketsAndLeavesThemAlone) {
  const testing::TestDir dir("fs_write_special");
  const std::string fifo = dir.file("out.fifo"), sock = dir.file("out.sock"),
                    sub = dir.file("out.dir");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  make_socket(sock);
  fs::create_directory(sub);
  for (const auto& [path, kind] : std::vector<std::pair<std::string, FileKind>>{
           {fifo, FileKind::kFifo}, {sock, FileKind::kSocket}, {sub, FileKind::kDirectory}}) {
    const std::string message = input_error([&] { write_file_atomic(path, "{}"); });
    EXPECT_TRUE(contains(message, path + ": is " + describe(kind))) << message;
    EXPECT_EQ(file_kind(path), kind) << path;
  }
  // A link to a FIFO: refused through the link, naming both.
  const std::string link = dir.file("link.json");
  fs::create_symlink("out.fifo", link);
  const std::string message = input_error([&] { write_file_atomic(link, "{}"); });
  EXPECT_TRUE(contains(message, link + " (a link to")) << message;
  EXPECT_TRUE(fs::is_symlink(link));
  for (const auto& e : fs::directory_iterator(dir.path())) {
    EXPECT_FALSE(contains(e.path().filename().string(), ".tmp.")) << "left behind: " << e.path();
  }
}

TEST(WriteFileAtomic, WritesThroughAChainOfLinksAndKeepsThem) {
  const testing::TestDir dir("fs_write_link");
  fs::create_directory(dir.path() / "real");
  write_file_atomic(dir.file("real/target.json"), "old");
  fs::create_symlink("real/target.json", dir.file("first"));  // relative to the link's folder
  fs::create_symlink(dir.file("first"), dir.file("second"));  // absolute
  write_file_atomic(dir.file("second"), "new");
  EXPECT_TRUE(fs::is_symlink(dir.file("second")));
  EXPECT_TRUE(fs::is_symlink(dir.file("first")));
  EXPECT_EQ(slurp(dir.file("real/target.json")), "new");
  EXPECT_EQ(link_target(dir.file("second")), dir.path().string() + "/real/target.json");
  // A dangling link: its target is made.
  fs::create_symlink("real/made.json", dir.file("dangling"));
  write_file_atomic(dir.file("dangling"), "made");
  EXPECT_EQ(slurp(dir.file("real/made.json")), "made");
  // A loop of links is named, not followed forever.
  fs::create_symlink(dir.file("loop_b"), dir.file("loop_a"));
  fs::create_symlink(dir.file("loop_a"), dir.file("loop_b"));
  EXPECT_TRUE(contains(input_error([&] { write_file_atomic(dir.file("loop_a"), "x"); }),
                       "too many levels of symbolic links"));
}

// Reading a FIFO would wait for a writer forever: every reader refuses it at once (the test
// would hang, and time out, if one opened it), through a link too.
TEST(ReadRegularFile, FifosDevicesAndDirectoriesAreRefusedAtOnceNamingThem) {
  const testing::TestDir dir("fs_read_special");
  const std::string fifo = dir.file("valid.txt");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  fs::create_symlink("valid.txt", dir.file("link.json"));
  const std::vector<std::pair<std::string, std::function<void()>>> readers = {
      {fifo + ": is a FIFO (named pipe), expected a text file", [&] { read_text_file(fifo); }},
      {dir.file("link.json") + ": is a FIFO (named pipe), expected a JSON file",
       [&] { read_json_file(dir.file("link.json")); }},
      {"/dev/null: is a character device, expected a text file",
       [&] { read_text_file("/dev/null"); }},
      {dir.path().string() + ": is a directory, expected a JSON file",
       [&] { read_json_file(dir.path().string()); }},
      {dir.file("absent") + ": no such file", [&] { read_text_file(dir.file("absent")); }},
  };
  for (const auto& [expected, read] : readers) {
    const std::string message = input_error(read);
    EXPECT_TRUE(contains(message, expected)) << expected << "\ngot: " << message;
  }
  EXPECT_EQ(file_kind(fifo), FileKind::kFifo);
  // A link to a regular file is read through.
  write_file_atomic(dir.file("real.txt"), "through the link");
  fs::create_symlink("real.txt", dir.file("alias.txt"));
  EXPECT_EQ(read_regular_file(dir.file("alias.txt"), "a text file"), "through the link");
}

}  // namespace
}  // namespace txl
