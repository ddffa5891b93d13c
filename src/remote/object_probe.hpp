// ObjectProbe: checks a remote object, read by ranges, before it is downloaded whole into a
// cache (the object cache or the Hub cache); it throws to refuse the object, so what a load
// would refuse is never downloaded and nothing hostile lands in a cache.
#pragma once

#include <functional>
#include <memory>

#include "ballast/byte_source.hpp"

namespace ballast {

using ObjectProbe = std::function<void(std::shared_ptr<ByteSource> ranged)>;

}  // namespace ballast
