// State moved as bytes between the ranks of an elastic group (internal to train/): a file's bytes,
// written back on the other side, and a blob broadcast with its size. The files live in /dev/shm
// (memory) on both sides, only while they are read or written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cohort/collectives/communicator.hpp"

namespace cohort::train::detail {

// Errors name the path.
std::vector<std::uint8_t> read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::uint8_t* p, std::size_t n);
// Broadcasts `blob` from `root` (its size first); returns it on every rank. `moved_s`: the
// payload's broadcast alone (the size's broadcast waits for the root to have the state ready).
std::vector<std::uint8_t> broadcast_blob(comm::Communicator& c, std::vector<std::uint8_t> blob,
                                         int root, double* moved_s = nullptr);

}  // namespace cohort::train::detail
