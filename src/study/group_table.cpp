#include "txl/study/group_table.h"

#include <spdlog/fmt/fmt.h>

namespace txl {

std::string group_table(const std::vector<int64_t>& lengths,
                        const std::vector<const GroupStats*>& groups,
                        const std::function<std::string(const GroupStats&)>& header,
                        const std::function<std::string(const GroupStats&, size_t)>& cell,
                        const std::function<std::string(size_t)>& row_label) {
  std::string md = "| L |";
  for (const GroupStats* g : groups) md += " " + header(*g) + " |";
  md += "\n|---|";
  for (size_t i = 0; i < groups.size(); ++i) md += "---|";
  md += "\n";
  for (size_t li = 0; li < lengths.size(); ++li) {
    md += "| " + (row_label ? row_label(li) : std::to_string(lengths[li])) + " |";
    for (const GroupStats* g : groups) md += " " + cell(*g, li) + " |";
    md += "\n";
  }
  return md;
}

std::vector<const GroupStats*> all_groups(const StudyStats& stats) {
  std::vector<const GroupStats*> out;
  for (const auto& g : stats.groups) out.push_back(&g);
  return out;
}

}  // namespace txl
