// ballast: load model weights fast, safely and exactly. This header includes the whole API.
#pragma once

#include "ballast/byte_source.hpp"
#include "ballast/config.hpp"
#include "ballast/device.hpp"
#include "ballast/dtype.hpp"
#include "ballast/error.hpp"
#include "ballast/format.hpp"
#include "ballast/hash.hpp"
#include "ballast/limits.hpp"
#include "ballast/loader.hpp"
#include "ballast/metadata.hpp"
#include "ballast/parser.hpp"
#include "ballast/source.hpp"
#include "ballast/spec.hpp"
#include "ballast/storage.hpp"
#include "ballast/tensor.hpp"
#include "ballast/transform.hpp"
