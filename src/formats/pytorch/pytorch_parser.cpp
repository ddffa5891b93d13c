// The PyTorch FormatParser (see pytorch_parser.hpp).
#include "formats/pytorch/pytorch_parser.hpp"

#include "formats/pytorch/torch_containers.hpp"
#include "formats/zip/zip_archive.hpp"

namespace ballast {
namespace {

class PytorchParser final : public FormatParser {
 public:
  WeightFormat format() const override { return WeightFormat::pytorch(); }
  std::vector<std::string> extensions() const override { return {".bin", ".pt", ".pth"}; }

  bool probe(std::span<const std::byte> head, uint64_t /*total_size*/) const override {
    return looks_like_torch_zip(head) || looks_like_torch_legacy(head);
  }

  Index parse(const ParseContext& context) const override {
    std::vector<std::byte> head =
        context.source->read(0, std::min<uint64_t>(context.source->size(), 4));
    return looks_like_zip(head) ? parse_torch_zip(context) : parse_torch_legacy(context);
  }
};

}  // namespace

std::shared_ptr<const FormatParser> make_pytorch_parser() {
  return std::make_shared<PytorchParser>();
}

}  // namespace ballast
