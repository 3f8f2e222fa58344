// Argument checks shared by every backend, so that each op reports bad arguments the same way
// (with the values at fault) whatever the backend. They throw cohort::Error attributed to
// `backend`.
#pragma once

#include <cstddef>

#include "cohort/collectives/communicator.hpp"

namespace cohort::comm::detail {

// recv may equal send (in place); any other overlap is an error. The dtype must be reducible.
void check_allreduce(const char* backend, const void* send, const void* recv, std::size_t count,
                     DType dtype);
void check_broadcast(const char* backend, const void* buf, std::size_t count, DType dtype, int root,
                     int size);
// In place only as send == recv + rank * count (elements); other overlap is an error.
void check_allgather(const char* backend, const void* send, const void* recv, std::size_t count,
                     DType dtype, int rank, int size);
// In place only as recv == send + rank * count (elements); other overlap is an error.
void check_reduce_scatter(const char* backend, const void* send, const void* recv,
                          std::size_t count, DType dtype, int rank, int size);
void check_p2p(const char* backend, const char* op, const void* buf, std::size_t count, DType dtype,
               int peer, int size);

}  // namespace cohort::comm::detail
