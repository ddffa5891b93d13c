// The pieces every suite that loads the golden corpus through some source shares: the manifest
// paths as test parameters (with short ctest names), an entry by path, the raw layout a raw
// file's entry describes, and the check that a source yields the manifest's tensors.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ballast/ballast.hpp"

namespace ballast::test {

// Manifest paths of the entries `keep` accepts (all when empty); {"absent"} when there are none,
// so a suite without the corpus still instantiates (and skips).
std::vector<std::string> golden_case_paths(
    const std::function<bool(const nlohmann::json&)>& keep = {});
// A test name made of the path's letters and digits.
std::string golden_case_name(const testing::TestParamInfo<std::string>& info);
// The manifest entry of `path`.
const nlohmann::json& golden_entry(const std::string& path);
// For an entry of format raw: sets the source's format and the layout the manifest gives.
void apply_golden_raw_layout(const nlohmann::json& entry, WeightSource& source);
// An entry expected to fail must fail to load; any other must report its format and load every
// listed tensor with the listed sha256.
void expect_golden_tensors(WeightLoader& loader, const WeightSource& source,
                           const nlohmann::json& entry);

}  // namespace ballast::test
