// Test harness of the ucx backend: ranks as threads of this process over an in-memory Store,
// ranks as processes (this binary re-executed) over a directory Store, and typed test data with
// a double / int64 reference. The two stores are small test fixtures implementing store.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cohort/collectives/communicator.hpp"
#include "cohort/collectives/process_group.hpp"
#include "cohort/collectives/store.hpp"

namespace ucxtest {

using cohort::DType;
using cohort::comm::Communicator;
using cohort::comm::ReduceOp;

std::shared_ptr<cohort::comm::Store> memory_store();
// Keys are files in `dir` (written then renamed; add() under flock), so processes can share it.
std::shared_ptr<cohort::comm::Store> directory_store(const std::string& dir);

cohort::comm::ProcessGroupInfo group_info(int rank, int n);

// Creates one ucx communicator per rank (threads, concurrently, over one memory store) and runs
// body(comm) on every rank's thread. Returns the failures ("rank R: what"), empty when all passed.
std::vector<std::string> run_ranks(int n, const std::function<void(Communicator&)>& body);

// Runs this test binary as `n` processes with `args` + rank, waits at most `limit`; returns the
// exit codes (-1 for a process killed at the limit).
std::vector<int> run_processes(int n, const std::vector<std::string>& args,
                               std::chrono::seconds limit);

// ---- typed data ----
constexpr DType kAllDtypes[] = {DType::f32, DType::f64, DType::bf16, DType::f16,
                                DType::i32, DType::i64, DType::u8};
constexpr ReduceOp kAllOps[] = {ReduceOp::sum, ReduceOp::avg, ReduceOp::min, ReduceOp::max};

bool is_float(DType dt);
// The value rank `rank` contributes at index i (salt varies it between ops); exactly
// representable in dt and small enough that sums over 4 ranks neither overflow nor wrap.
double input_value(DType dt, int rank, std::size_t i, int salt);
std::vector<std::uint8_t> make_input(DType dt, int rank, std::size_t count, int salt);
void store_value(DType dt, std::uint8_t* buf, std::size_t i, double v);
double load_value(DType dt, const std::uint8_t* buf, std::size_t i);

// Checks got[i] (i < count) against the reduction over ranks 0..n-1 of input_value(dt, r,
// first + i, salt): exact for integers and min/max, within a rounding bound for float sums.
// Returns "" or a description of the first mismatch.
std::string check_reduced(DType dt, ReduceOp op, int n, const std::uint8_t* got, std::size_t count,
                          std::size_t first, int salt);

}  // namespace ucxtest
