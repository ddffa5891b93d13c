// Choosing a folder's model files (see folder_choice.hpp for the rules).
#include "loader/folder_choice.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ballast/error.hpp"
#include "formats/gguf/gguf_split.hpp"

namespace ballast {
namespace {

namespace fs = std::filesystem;

struct Family {
  std::string_view name;
  std::vector<std::string_view> file_suffixes;
  std::vector<std::string_view> index_suffixes;
  std::vector<std::string_view> canonical_stems;  // in order of preference
};

const std::array<Family, 5>& families() {
  static const std::array<Family, 5> all = {{
      {"safetensors",
       {".safetensors"},
       {".safetensors.index.json"},
       {"model", "diffusion_pytorch_model"}},
      {"PyTorch",
       {".bin", ".pt", ".pth"},
       {".bin.index.json", ".pt.index.json", ".pth.index.json"},
       {"pytorch_model", "diffusion_pytorch_model"}},
      {"GGUF", {".gguf"}, {}, {}},
      {"ONNX", {".onnx"}, {}, {}},
      {"NumPy", {".npz", ".npy"}, {}, {}},
  }};
  return all;
}

// A weight-like file of one family: `stem` is its name less the family's suffix.
struct Candidate {
  fs::path path;
  std::string stem;
};

struct Listing {
  std::vector<Candidate> files, indexes;
};

// The folder's weight-like files by family, each list sorted by name.
std::vector<Listing> list_folder(const fs::path& folder, const Os& os) {
  std::vector<Listing> by_family(families().size());
  for (const FolderEntry& item : os.list_folder(folder)) {
    if (!item.regular_file) continue;
    const std::string name = item.path.filename().string();
    auto stem_of = [&](std::string_view suffix) {
      return name.ends_with(suffix) && name.size() > suffix.size()
                 ? std::optional(name.substr(0, name.size() - suffix.size()))
                 : std::nullopt;
    };
    for (size_t f = 0; f < families().size(); ++f) {
      std::optional<std::string> stem;
      bool index = false;
      for (auto suffix : families()[f].index_suffixes)
        if (!stem && (stem = stem_of(suffix))) index = true;
      for (auto suffix : families()[f].file_suffixes)
        if (!stem) stem = stem_of(suffix);
      if (!stem) continue;
      (index ? by_family[f].indexes : by_family[f].files).push_back({item.path, *stem});
      break;
    }
  }
  for (auto& listing : by_family)
    for (auto* list : {&listing.files, &listing.indexes})
      std::sort(list->begin(), list->end(),
                [](const Candidate& a, const Candidate& b) { return a.path < b.path; });
  return by_family;
}

std::string names_of(const std::vector<Candidate>& candidates) {
  std::vector<std::string> names;
  for (const auto& c : candidates) names.push_back(c.path.filename().string());
  if (names.size() > 5) {
    names.resize(5);
    names.push_back("...");
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

[[noreturn]] void ambiguous(const fs::path& folder, std::string_view what,
                            const std::vector<Candidate>& candidates) {
  throw Error(ErrorCode::invalid_argument,
              fmt::format("folder holds {} {} that are not one model ({}); name the file",
                          candidates.size(), what, names_of(candidates)),
              {.source = folder.string()});
}

// What sets a file of the safetensors or PyTorch family aside from the default choice.
enum class Role { weights, adapter, variant, training, consolidated };

Role role_of(const Candidate& c, const Family& family) {
  const std::string name = c.path.filename().string();
  if (c.stem.starts_with("adapter_model")) return Role::adapter;
  if (c.stem == "consolidated" || c.stem.starts_with("consolidated.")) return Role::consolidated;
  static const std::set<std::string, std::less<>> training = {
      "training_args.bin", "optimizer.pt", "optimizer.bin", "scheduler.pt", "scaler.pt"};
  if (training.contains(name) || c.stem.starts_with("rng_state")) return Role::training;
  const auto dot = c.stem.find('.');
  if (dot != std::string::npos &&
      std::ranges::find(family.canonical_stems, std::string_view(c.stem).substr(0, dot)) !=
          family.canonical_stems.end())
    return Role::variant;
  return Role::weights;
}

std::string_view reason_for(Role role) {
  switch (role) {
    case Role::adapter: return "a LoRA adapter; name the file to load it";
    case Role::variant: return "a variant of the model's weights; name the file to load it";
    case Role::training: return "training state, not model weights";
    case Role::consolidated: return "the same weights in Mistral's consolidated layout";
    case Role::weights: break;
  }
  return "not part of the chosen model";
}

// "NAME-00001-of-00003": the shard set's name, the shard's number and the set's size.
struct ShardName {
  std::string set;
  unsigned number = 0, total = 0;
};

std::optional<ShardName> shard_name(std::string_view stem) {
  constexpr std::string_view of = "-of-";
  if (stem.size() < 17 || stem.substr(stem.size() - 9, of.size()) != of ||
      stem[stem.size() - 15] != '-')
    return std::nullopt;
  auto number = [](std::string_view digits) -> std::optional<unsigned> {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
    return value;
  };
  auto n = number(stem.substr(stem.size() - 14, 5));
  auto total = number(stem.substr(stem.size() - 5));
  if (!n || !total || *n == 0 || *n > *total) return std::nullopt;
  return ShardName{std::string(stem.substr(0, stem.size() - 15)), *n, *total};
}

// The one complete shard set among `files`, if any; several sets, or one with shards missing,
// are errors.
std::optional<std::vector<Candidate>> shard_set(const fs::path& folder,
                                                const std::vector<Candidate>& files) {
  std::map<std::pair<std::string, unsigned>, std::map<unsigned, Candidate>> sets;
  for (const auto& c : files)
    if (auto s = shard_name(c.stem)) sets[{s->set, s->total}].emplace(s->number, c);
  if (sets.empty()) return std::nullopt;
  if (sets.size() > 1) {
    std::vector<Candidate> firsts;
    for (const auto& [key, shards] : sets) firsts.push_back(shards.begin()->second);
    ambiguous(folder, "shard sets", firsts);
  }
  const auto& [key, shards] = *sets.begin();
  if (shards.size() != key.second)
    throw Error(ErrorCode::not_found,
                fmt::format("the shard set {} is incomplete: {} of its {} shards are present and "
                            "there is no shard index",
                            key.first, shards.size(), key.second),
                {.source = folder.string()});
  std::vector<Candidate> set;
  for (const auto& [n, c] : shards) set.push_back(c);
  return set;
}

std::optional<Candidate> canonical(const std::vector<Candidate>& candidates, const Family& family) {
  for (auto stem : family.canonical_stems)
    for (const auto& c : candidates)
      if (c.stem == stem) return c;
  return std::nullopt;
}

// Steps a-e of the rules for the safetensors and PyTorch families; empty when the family holds
// nothing but training state.
FolderChoice choose_hf_family(const fs::path& folder, const Listing& listing,
                              const Family& family) {
  FolderChoice choice;
  for (const auto& c : listing.files) choice.family.push_back(c.path);
  auto take = [&](std::vector<Candidate> chosen) {
    for (const auto& c : chosen) choice.files.push_back(c.path);
    return choice;
  };
  if (!listing.indexes.empty()) {
    std::vector<Candidate> plain, variants;
    for (const auto& c : listing.indexes)
      (role_of(c, family) == Role::weights ? plain : variants).push_back(c);
    auto index = canonical(listing.indexes, family);
    if (!index && plain.size() > 1) ambiguous(folder, "shard indexes", plain);
    if (!index && plain.empty() && variants.size() > 1)
      ambiguous(folder, "shard indexes", variants);
    if (!index) index = plain.empty() ? variants.front() : plain.front();
    choice.index = index->path;
    for (const auto& c : listing.indexes)
      if (c.path != index->path)
        choice.ignored.push_back({c.path.filename().string(), "another shard index"});
    return choice;
  }
  if (auto file = canonical(listing.files, family)) return take({*file});
  std::vector<Candidate> rest, set_aside, consolidated;
  for (const auto& c : listing.files) {
    const Role role = role_of(c, family);
    if (role == Role::weights) rest.push_back(c);
    if (role == Role::consolidated) consolidated.push_back(c);
    if (role == Role::adapter || role == Role::variant) set_aside.push_back(c);
  }
  if (auto set = shard_set(folder, rest)) return take(std::move(*set));
  if (consolidated.size() > 1) ambiguous(folder, "consolidated files", consolidated);
  if (consolidated.size() == 1) return take(consolidated);
  if (rest.size() > 1) ambiguous(folder, fmt::format("{} files", family.name), rest);
  if (rest.size() == 1) return take(rest);
  if (set_aside.size() > 1) ambiguous(folder, fmt::format("{} files", family.name), set_aside);
  return take(set_aside);
}

// A GGUF folder: one file or one split set, once multimodal projectors are set aside.
FolderChoice choose_gguf(const fs::path& folder, const Listing& listing, const Os& os) {
  FolderChoice choice;
  std::vector<Candidate> models;
  for (const auto& c : listing.files) {
    choice.family.push_back(c.path);
    if (c.stem.starts_with("mmproj") && listing.files.size() > 1)
      choice.ignored.push_back(
          {c.path.filename().string(), "a multimodal projector; name the file"});
    else
      models.push_back(c);
  }
  if (models.empty()) models = listing.files;
  const std::vector<std::string> siblings = gguf_split_siblings(models.front().path.string());
  if (siblings.empty() && models.size() > 1) ambiguous(folder, "GGUF files", models);
  if (siblings.empty()) {
    choice.files.push_back(models.front().path);
    return choice;
  }
  std::vector<std::string> missing;
  for (const auto& name : siblings) {
    struct stat st {};
    if (os.stat(name.c_str(), &st) != 0) missing.push_back(fs::path(name).filename().string());
    choice.files.emplace_back(name);
  }
  if (!missing.empty())
    throw Error(ErrorCode::not_found,
                fmt::format("the GGUF split set is incomplete: {} of its {} shards are missing "
                            "({}{})",
                            missing.size(), siblings.size(), missing.front(),
                            missing.size() > 1 ? ", ..." : ""),
                {.source = models.front().path.string()});
  if (models.size() != siblings.size()) ambiguous(folder, "GGUF files", models);
  return choice;
}

FolderChoice choose_in_family(const fs::path& folder, const Listing& listing, const Family& family,
                              const Os& os) {
  if (!family.index_suffixes.empty()) return choose_hf_family(folder, listing, family);
  if (family.name == "GGUF") return choose_gguf(folder, listing, os);
  if (family.name == "ONNX" && listing.files.size() > 1)
    ambiguous(folder, "ONNX files", listing.files);
  FolderChoice choice;
  for (const auto& c : listing.files) {
    choice.files.push_back(c.path);
    choice.family.push_back(c.path);
  }
  return choice;
}

}  // namespace

FolderChoice choose_folder_files(const fs::path& folder, const Os& os) {
  const std::vector<Listing> listings = list_folder(folder, os);
  for (size_t f = 0; f < listings.size(); ++f) {
    if (listings[f].files.empty() && listings[f].indexes.empty()) continue;
    FolderChoice choice = choose_in_family(folder, listings[f], families()[f], os);
    if (!choice.index && choice.files.empty()) continue;
    std::set<fs::path> chosen(choice.files.begin(), choice.files.end());
    if (choice.index) chosen.insert(*choice.index);
    for (const auto& c : listings[f].files)
      if (!choice.index && !chosen.contains(c.path))
        choice.ignored.push_back(
            {c.path.filename().string(), std::string(reason_for(role_of(c, families()[f])))});
    for (size_t other = 0; other < listings.size(); ++other) {
      if (other == f) continue;
      for (const auto* list : {&listings[other].indexes, &listings[other].files})
        for (const auto& c : *list)
          choice.ignored.push_back({c.path.filename().string(),
                                    fmt::format("a {} file; the folder's {} files were chosen",
                                                families()[other].name, families()[f].name)});
    }
    std::sort(choice.ignored.begin(), choice.ignored.end(),
              [](const IgnoredFile& a, const IgnoredFile& b) { return a.name < b.name; });
    return choice;
  }
  throw Error(ErrorCode::not_found,
              "folder holds no weight files (looked for model.safetensors[.index.json], "
              "*.safetensors, pytorch_model.bin[.index.json], *.bin, *.pt, *.pth, *.gguf, "
              "*.onnx, *.npz and *.npy)",
              {.source = folder.string()});
}

}  // namespace ballast
