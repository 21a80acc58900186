// Differences between two resolved configurations (JSON), for the messages that refuse a
// resume or a checkpoint written by another model.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace txl {

// Keys ("section.key") whose values differ between two resolved configs, as
// "model.d_model: 16 vs 32", skipping the keys in `ignore`. A key one side lacks and the other
// holds at its default is no difference (a config written before the key existed).
std::vector<std::string> config_differences(const nlohmann::json& a, const nlohmann::json& b,
                                            const std::vector<std::string>& ignore = {});

}  // namespace txl
