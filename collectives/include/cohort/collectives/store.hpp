// The rendezvous Store: a small key/value service every rank of a job reaches, used by backends
// to exchange what they need to connect (UCX worker addresses, shm segment names, NCCL unique
// ids). Same semantics as torch.distributed's Store.
//
// Contracts: keys are strings; values are bytes. set() overwrites. get() blocks until the key
// exists or the timeout passes, then throws cohort::Error naming the key, the timeout and the
// store's address. add() creates the key at 0 if absent and returns the new value atomically.
// All methods are safe to call from several threads of one process.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cohort::comm {

class Store {
 public:
  virtual ~Store() = default;
  // Stores `value` under `key`, replacing what was there; returns once the store has it.
  virtual void set(const std::string& key, const std::vector<std::uint8_t>& value) = 0;
  // The value of `key`, waiting up to `timeout` for it to exist; then throws naming the key.
  virtual std::vector<std::uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  // Adds `delta` to the integer at `key` (0 when absent), atomically; returns the new value.
  virtual std::int64_t add(const std::string& key, std::int64_t delta) = 0;
  // True when every key exists, without waiting.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Blocks until every key exists; on timeout throws naming the keys still missing.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  // "tcp://127.0.0.1:29500", "file:///shared/dir", "memory"
  virtual std::string address() const = 0;

  // Convenience for strings.
  void set_string(const std::string& key, const std::string& value) {
    set(key, std::vector<std::uint8_t>(value.begin(), value.end()));
  }
  std::string get_string(const std::string& key, std::chrono::milliseconds timeout) {
    auto v = get(key, timeout);
    return std::string(v.begin(), v.end());
  }
};

// Rank 0 serves (is_server), every rank connects to host:port; connecting retries until the
// timeout, so ranks may start in any order.
std::shared_ptr<Store> make_tcp_store(const std::string& host, int port, bool is_server,
                                      std::chrono::milliseconds timeout);
// Keys as files in a directory every rank sees (a shared file system); atomic via rename.
std::shared_ptr<Store> make_file_store(const std::string& directory);
// In one process, shared by threads (tests run N ranks as threads over it).
std::shared_ptr<Store> make_memory_store();

// A view of `store` that prefixes every key, so several communicators share one store.
std::shared_ptr<Store> make_prefix_store(std::shared_ptr<Store> store, const std::string& prefix);

}  // namespace cohort::comm
