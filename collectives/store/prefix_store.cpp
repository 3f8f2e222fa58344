// A view of another store whose keys all start with "<prefix>/": several communicators (or
// several uses of one job's store) never see each other's keys.
#include "cohort/collectives/store.hpp"
#include "cohort/core/error.hpp"

namespace cohort::comm {
namespace {

class PrefixStore final : public Store {
 public:
  PrefixStore(std::shared_ptr<Store> inner, std::string prefix)
      : inner_(std::move(inner)), prefix_(std::move(prefix) + "/") {}

  void set(const std::string& key, const std::vector<std::uint8_t>& value) override {
    inner_->set(prefix_ + key, value);
  }
  std::vector<std::uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) override {
    return inner_->get(prefix_ + key, timeout);
  }
  std::int64_t add(const std::string& key, std::int64_t delta) override {
    return inner_->add(prefix_ + key, delta);
  }
  bool check(const std::vector<std::string>& keys) override { return inner_->check(full(keys)); }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    inner_->wait(full(keys), timeout);
  }
  std::string address() const override { return inner_->address(); }

 private:
  std::vector<std::string> full(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    out.reserve(keys.size());
    for (const auto& k : keys) out.push_back(prefix_ + k);
    return out;
  }
  std::shared_ptr<Store> inner_;
  std::string prefix_;
};

}  // namespace

std::shared_ptr<Store> make_prefix_store(std::shared_ptr<Store> store, const std::string& prefix) {
  COHORT_CHECK(store, "make_prefix_store: null store for prefix '", prefix, "'");
  return std::make_shared<PrefixStore>(std::move(store), prefix);
}

}  // namespace cohort::comm
