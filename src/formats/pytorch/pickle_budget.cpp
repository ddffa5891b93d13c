// The materialisation budget of a checkpoint's pickles (see pickle_budget.hpp).
#include "formats/pytorch/pickle_budget.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "util/checked.hpp"

namespace ballast {
namespace {

constexpr uint64_t kAllowance = 16ULL << 20;

}  // namespace

PickleBudget::PickleBudget(const Limits& limits, uint64_t pickle_bytes, std::string source)
    : limit_(std::min(
          limits.max_pickle_materialized_bytes,
          checked_add(
              kAllowance,
              checked_mul(pickle_bytes, limits.max_pickle_amplification).value_or(UINT64_MAX))
              .value_or(UINT64_MAX))),
      source_(std::move(source)) {}

void PickleBudget::charge(uint64_t bytes, std::string_view what) {
  auto total = checked_add(used_, bytes);
  if (!total || *total > limit_)
    throw Error(ErrorCode::limit_exceeded,
                fmt::format("materialising {} ({} bytes, {} so far) would pass the pickle's "
                            "budget of {} bytes: 16 MiB plus max_pickle_amplification bytes per "
                            "pickle byte, at most max_pickle_materialized_bytes",
                            what, bytes, used_, limit_),
                {.source = source_});
  used_ = *total;
}

}  // namespace ballast
