// Differences between two resolved configurations (JSON), for the messages that refuse a
// resume or a checkpoint written by another model.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/config/config.h"

namespace txl {

// Keys ("section.key") whose values differ between two resolved configs, as
// "model.d_model: 16 vs 32", skipping the keys in `ignore`. A key one side lacks and the other
// holds at its default is no difference (a config written before the key existed).
std::vector<std::string> config_differences(const nlohmann::json& a, const nlohmann::json& b,
                                            const std::vector<std::string>& ignore = {});

// The keys that set a parameter's shape (the model keys and encoding options marked `shapes`
// in their tables; a key an encoding does not read is at its default, as validation requires)
// whose values differ between `a` and `b`, written as config_differences writes them. A
// checkpoint's weights fit a model of the other config exactly when this is empty (and the
// vocabulary is the same).
std::vector<std::string> shape_differences(const Config& a, const Config& b);

}  // namespace txl
