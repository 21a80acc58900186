// The shape every table of a study report shares: one row per evaluated length, one column
// per group, in markdown.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "txl/study/study_stats.h"

namespace txl {

// "| L | <header(g)> |...\n|---|---|...\n| <row_label(li)> | <cell(g, li)> |...\n" for
// every length index li; row_label defaults to the length itself.
std::string group_table(const std::vector<int64_t>& lengths,
                        const std::vector<const GroupStats*>& groups,
                        const std::function<std::string(const GroupStats&)>& header,
                        const std::function<std::string(const GroupStats&, size_t)>& cell,
                        const std::function<std::string(size_t)>& row_label = {});

// Every group of the study, in order (what most tables show).
std::vector<const GroupStats*> all_groups(const StudyStats& stats);

}  // namespace txl
