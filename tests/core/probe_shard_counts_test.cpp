// A probe shard's counts are checked against the rest before a merge reads them (issue 54,
// cause 7): a piece that claims 200 windows but holds 3 records merged into a copy gain of
// 1.99e+250 with exit 0. Now every piece holds one record per window (per pass: 1 to one per
// window), and a merged value outside its quantity's range is refused naming the files, even
// from files whose digest was recomputed after the edit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "txl/probe/probe.h"
#include "txl/probe/probe_shard.h"
#include "txl/probe/probe_shard_file.h"
#include "txl/util/error.h"
#include "txl/util/json.h"

namespace txl {
namespace {

using testing::expect_input_error;

constexpr int64_t kCount = 200;  // copy instances at the one distance

ProbeValues copy_values() {
  ProbeValues v;
  v.seed = 5;
  v.values = {{"span", {3}}, {"distances", {16}}, {"count", {double(kCount)}}};
  return v;
}

// records[i] holds `count` copies of `value`.
nlohmann::json records(int64_t count, double value) {
  return nlohmann::json(std::vector<double>(size_t(count), value));
}

// The copy probe's partial: group 0 (repeated) and group 1 (control), windows [0, 200) each.
nlohmann::json copy_partial(const nlohmann::json& repeated, const nlohmann::json& control) {
  return {{"pieces", {shard_piece(0, 0, kCount, repeated), shard_piece(1, 0, kCount, control)}}};
}

TEST(ProbeShardCounts, APieceWhoseRecordsDoNotMatchItsWindowsIsRefused) {
  const Probe& copy = find_probe("copy", "test");
  const ProbeValues v = copy_values();
  EXPECT_NO_THROW(copy.finish({copy_partial(records(kCount, 2.0), records(kCount, 2.5))}, v));
  for (const int64_t held : {int64_t{3}, kCount - 1, kCount + 1, int64_t{0}}) {
    SCOPED_TRACE(held);
    expect_input_error(
        [&] { copy.finish({copy_partial(records(held, 2.0), records(kCount, 2.5))}, v); },
        {"probe copy", "windows [0, 200)", "holds " + std::to_string(held) + " records",
         "200 (one per window)"});
  }
  // Records that are not a list, and fields of the wrong kind.
  auto partial = copy_partial(records(kCount, 2.0), records(kCount, 2.5));
  partial["pieces"][0]["records"] = 3;
  expect_input_error([&] { copy.finish({partial}, v); }, {"holds no list of records"});
  partial["pieces"][0]["end"] = "200";
  expect_input_error([&] { copy.finish({partial}, v); }, {"no whole number \"end\""});
  expect_input_error([&] { copy.finish({nlohmann::json::object()}, v); }, {"no list of pieces"});
}

TEST(ProbeShardCounts, PerPassRecordsAreBetweenOneAndOnePerWindow) {
  const std::vector<nlohmann::json> two_passes = {
      {{"pieces", {shard_piece(0, 0, 5, nlohmann::json::array({1, 2}))}}}};
  EXPECT_NO_THROW(gather_pieces(two_passes, {5}, "attention"));
  const std::vector<nlohmann::json> too_many = {
      {{"pieces", {shard_piece(0, 0, 2, nlohmann::json::array({1, 2, 3}))}}}};
  expect_input_error([&] { gather_pieces(too_many, {2}, "attention"); },
                     {"holds 3 records", "1 to 2 (one per pass)"});
}

// A shard file whose records were edited and its digest recomputed (the digest is no key):
// the merge refuses it, exit 2's InputError naming the file.
TEST(ProbeShardCounts, AMergedValueOutsideItsRangeIsRefusedNamingTheFiles) {
  const std::string dir = ::testing::TempDir() + "/txl_probe_shard_counts";
  std::filesystem::create_directories(dir);
  const ProbeValues v = copy_values();
  const auto write = [&](const std::string& name, const nlohmann::json& partial) {
    const std::string path = dir + "/" + name;
    std::ofstream(path) << shard_file_json({0, 1}, {{"checkpoint_checksum", "00ff"}}, {},
                                           {{"copy", v, partial, 1.0}})
                               .dump();
    return std::vector<ShardFile>{read_shard_file(path)};
  };
  EXPECT_NO_THROW(merge_probe_shards(
      write("fine.json", copy_partial(records(kCount, 2.0), records(kCount, 2.5)))));
  expect_input_error(
      [&] {
        merge_probe_shards(
            write("short.json", copy_partial(records(3, 2.0), records(kCount, 2.5))));
      },
      {"holds 3 records", dir + "/short.json"});
  expect_input_error(
      [&] {
        merge_probe_shards(
            write("huge.json", copy_partial(records(kCount, -1.99e250), records(kCount, 2.5))));
      },
      {"--merge: probe copy's merged", "outside", dir + "/huge.json"});
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace txl
