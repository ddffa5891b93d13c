// Loads a tensor from an in-memory safetensors file through the installed public API.
#include <ballast/ballast.hpp>

#include <cstdio>
#include <cstring>
#include <string>

int main() {
  const std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string file(8, '\0');
  file[0] = static_cast<char>(header.size());
  file += header;
  const float values[2] = {1.0f, 2.0f};
  file.append(reinterpret_cast<const char*>(values), sizeof values);
  auto memory = ballast::MemorySource::copy_of(std::as_bytes(std::span(file.data(), file.size())));
  auto loader = ballast::make_weight_loader();
  auto t = loader->load_tensor({.name = "w", .source = ballast::WeightSource::memory(memory)});
  std::printf(
      "ballast %s (%d.%d.%d) loaded %s: %s [%lld]\n", std::string(ballast::version()).c_str(),
      BALLAST_VERSION_MAJOR, BALLAST_VERSION_MINOR, BALLAST_VERSION_PATCH, t->name().c_str(),
      std::string(ballast::dtype_name(t->dtype())).c_str(), static_cast<long long>(t->shape()[0]));
  return t->as<float>()[1] == 2.0f ? 0 : 1;
}
