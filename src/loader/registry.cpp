// The registry of named WeightLoader implementations and the factory.
#include <map>
#include <mutex>

#include "ballast/error.hpp"
#include "ballast/loader.hpp"
#include "loader/config_check.hpp"
#include "loader/default_loader.hpp"

namespace ballast {
namespace {

struct Loaders {
  std::mutex mutex;
  std::map<std::string, WeightLoaderMaker> makers{{"default", make_default_loader}};
};

Loaders& loaders() {
  static Loaders l;
  return l;
}

}  // namespace

void register_weight_loader(const std::string& name, WeightLoaderMaker maker) {
  if (!maker) throw Error(ErrorCode::invalid_argument, "register_weight_loader: empty maker");
  auto& l = loaders();
  std::lock_guard lock(l.mutex);
  l.makers[name] = std::move(maker);
}

std::vector<std::string> registered_weight_loaders() {
  auto& l = loaders();
  std::lock_guard lock(l.mutex);
  std::vector<std::string> names;
  for (const auto& [name, maker] : l.makers) names.push_back(name);
  return names;
}

std::unique_ptr<WeightLoader> make_weight_loader(const WeightLoaderConfig& config,
                                                 const std::string& name) {
  check_weight_loader_config(config);  // for every loader, registered ones too
  WeightLoaderMaker maker;
  {
    auto& l = loaders();
    std::lock_guard lock(l.mutex);
    auto it = l.makers.find(name);
    if (it == l.makers.end())
      throw Error(ErrorCode::not_found, "no weight loader is registered as '" + name + "'");
    maker = it->second;
  }
  return maker(config);
}

}  // namespace ballast
