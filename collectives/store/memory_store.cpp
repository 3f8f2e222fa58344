// The in-process store: a map under a mutex, with a condition variable for waiters. Used by
// single-process groups and by tests that run ranks as threads.
#include <condition_variable>
#include <map>
#include <mutex>

#include "cohort/collectives/store.hpp"
#include "store/store_util.hpp"

namespace cohort::comm {
namespace {

class MemoryStore final : public Store {
 public:
  void set(const std::string& key, const std::vector<std::uint8_t>& value) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      data_[key] = value;
    }
    cv_.notify_all();
  }

  std::vector<std::uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mu_);
    wait_locked(lock, {key}, timeout);
    return data_.at(key);
  }

  std::int64_t add(const std::string& key, std::int64_t delta) override {
    std::int64_t v;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = data_.find(key);
      v = (it == data_.end() ? 0 : detail::decode_counter(address(), key, it->second)) + delta;
      data_[key] = detail::encode_counter(v);
    }
    cv_.notify_all();
    return v;
  }

  bool check(const std::vector<std::string>& keys) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& k : keys)
      if (!data_.count(k)) return false;
    return true;
  }

  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mu_);
    wait_locked(lock, keys, timeout);
  }

  std::string address() const override { return "memory"; }

 private:
  void wait_locked(std::unique_lock<std::mutex>& lock, const std::vector<std::string>& keys,
                   std::chrono::milliseconds timeout) {
    const auto all = [&] {
      for (const auto& k : keys)
        if (!data_.count(k)) return false;
      return true;
    };
    if (cv_.wait_for(lock, timeout, all)) return;
    std::vector<std::string> missing;
    for (const auto& k : keys)
      if (!data_.count(k)) missing.push_back(k);
    detail::throw_store_timeout(address(), missing, timeout);
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<std::uint8_t>> data_;
};

}  // namespace

std::shared_ptr<Store> make_memory_store() { return std::make_shared<MemoryStore>(); }

}  // namespace cohort::comm
