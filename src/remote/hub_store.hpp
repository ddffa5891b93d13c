// HubStore: one Hugging Face Hub repository at one revision as a Store. Objects are paths in
// the repository; a whole repository ("") means its first weight file present
// (model.safetensors.index.json, model.safetensors, then the pytorch_model.bin pair) and a
// GGUF quantization tag its .gguf file or split set; either way every file then comes from the
// one commit the revision named when the checkpoint was opened. Files come through HubClient
// (the Hub cache, offline mode, ranged reads: remote/hub_client.hpp).
#pragma once

#include <memory>
#include <mutex>

#include "ballast/source.hpp"
#include "io/store.hpp"
#include "remote/hub_client.hpp"

namespace ballast {

class HubStore final : public Store {
 public:
  HubStore(std::shared_ptr<const RemoteContext> remote, HuggingFaceSource source,
           ReadMode read_mode);

  std::string named() const override { return source_.filename; }
  // Finds the weight files a whole repository or a tag means, and pins the revision to its
  // commit (online).
  std::vector<std::string> expand(const std::string& object) override;
  // A whole repository exists when it has model.safetensors[.index.json].
  bool exists(const std::string& object) override;
  ShardInput open(const std::string& object) override;
  std::vector<std::byte> read_small(const std::string& object, uint64_t max_bytes) override;
  std::string sibling(const std::string& object, std::string_view relative) const override;
  std::string describe(const std::string& object) const override;
  std::string identity() const override;
  bool remote() const override { return true; }

 private:
  std::shared_ptr<HubClient> hub() const;
  // The repository path a whole repository means.
  std::string weight_file(const HubClient& hub) const;

  std::shared_ptr<const RemoteContext> remote_;
  HuggingFaceSource source_;
  ReadMode read_mode_;
  std::string revision_;  // the source's, then the commit it names once expanded
  mutable std::mutex hub_mutex_;
  mutable std::shared_ptr<HubClient> hub_;  // made on first use
};

}  // namespace ballast
