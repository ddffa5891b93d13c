// The built-in formats, registered through the same registry that custom formats use.
// Order matters for detection: strong magic-number probes first, weak ones (ONNX) last.
#include "formats/builtin.hpp"

#include "ballast/parser.hpp"
#include "formats/gguf/gguf_parser.hpp"
#include "formats/numpy/numpy_parser.hpp"
#include "formats/onnx/onnx_parser.hpp"
#include "formats/pytorch/pytorch_parser.hpp"
#include "formats/raw/raw_parser.hpp"
#include "formats/safetensors/safetensors_parser.hpp"

namespace ballast {

void register_builtin_formats() {
  register_format_parser(make_safetensors_parser());
  register_format_parser(make_pytorch_parser());
  register_format_parser(make_gguf_parser());
  register_format_parser(make_numpy_parser());
  register_format_parser(make_raw_parser());
  register_format_parser(make_onnx_parser());  // weak probe: last
}

}  // namespace ballast
