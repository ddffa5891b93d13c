// TensorSpec: one request to the loader — which tensor, from where, in what form.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ballast/device.hpp"
#include "ballast/dtype.hpp"
#include "ballast/source.hpp"
#include "ballast/tensor.hpp"
#include "ballast/transform.hpp"

namespace ballast {

struct TensorSpec {
  // Tensor name in the checkpoint. May be empty when the source names exactly one tensor
  // (FileSource::tensor_name, a single .npy, a bare torch.save(tensor)).
  std::string name;
  // Expected shape of the result (after transformations); empty accepts what the file says.
  Shape shape;
  // Expected dtype of the result (after transformations); to convert, add a Cast step.
  std::optional<DType> dtype;
  Device device = Device::cpu();
  WeightSource source;
  std::vector<Transformation> transformations;
};

}  // namespace ballast
