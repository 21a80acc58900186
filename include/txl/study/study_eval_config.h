// A study config's "eval" section (study_config.h: StudyEval), read and turned into the
// protocols every cell is evaluated with, and the small JSON readers the study config's
// sections share.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/config/config.h"
#include "txl/study/study_config.h"

namespace txl {

namespace study_json {

// InputError naming `where` unless j is an object whose keys are all in `allowed`.
void check_keys(const nlohmann::json& j, const std::vector<std::string>& allowed,
                const std::string& where);
int64_t read_int(const nlohmann::json& j, const std::string& where);
std::string read_string(const nlohmann::json& j, const std::string& where);
// Refuses anything but a non-empty list without repeated values.
void check_list(const nlohmann::json& j, const std::string& where);

}  // namespace study_json

// The "eval" section (null: every default, lengths and split from the base config).
StudyEval parse_eval(const nlohmann::json& j, const std::string& where, const Config& base);

// Methods x aids (x mem_lens for memory): the protocols every cell is evaluated with.
std::vector<StudyProtocol> make_protocols(const StudyEval& e, const std::string& where);

// The protocols' study keys into a manifest's "eval" object: every declared key with its value
// or default ("stride": 0, "mem_lens": [-1]), a switch only when on ("same_length": true), so
// a manifest written before a key existed stays valid.
void add_study_settings_json(const StudyEval& e, nlohmann::json& j);

}  // namespace txl
