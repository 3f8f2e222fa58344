// The argument checks every backend runs before an op (validate.hpp): null buffers, overlaps
// other than the allowed in-place forms, ranks out of range, dtypes that cannot be reduced.
#include "detail/validate.hpp"

#include <cstdint>

#include "cohort/core/error.hpp"
#include "detail/reduce.hpp"

namespace cohort::comm::detail {
namespace {
bool overlap(const void* a, std::size_t na, const void* b, std::size_t nb) {
  const auto pa = reinterpret_cast<std::uintptr_t>(a);
  const auto pb = reinterpret_cast<std::uintptr_t>(b);
  return na && nb && pa < pb + nb && pb < pa + na;
}
}  // namespace

void check_allreduce(const char* backend, const void* send, const void* recv, std::size_t count,
                     DType dtype) {
  COHORT_CHECK_IN(backend, reducible(dtype), "allreduce: dtype ", dtype_name(dtype),
                  " cannot be reduced");
  if (count == 0) return;
  COHORT_CHECK_IN(backend, send && recv, "allreduce: null buffer (send ", send, ", recv ", recv,
                  ") for ", count, " elements");
  const std::size_t bytes = count * dtype_size(dtype);
  COHORT_CHECK_IN(backend, send == recv || !overlap(send, bytes, recv, bytes),
                  "allreduce: send ", send, " and recv ", recv, " overlap (", bytes,
                  " bytes each) without being the same buffer");
}

void check_broadcast(const char* backend, const void* buf, std::size_t count, DType dtype, int root,
                     int size) {
  (void)dtype;
  COHORT_CHECK_IN(backend, root >= 0 && root < size, "broadcast: root ", root,
                  " is not a rank of this group of ", size);
  COHORT_CHECK_IN(backend, count == 0 || buf, "broadcast: null buffer for ", count, " elements");
}

void check_allgather(const char* backend, const void* send, const void* recv, std::size_t count,
                     DType dtype, int rank, int size) {
  if (count == 0) return;
  COHORT_CHECK_IN(backend, send && recv, "allgather: null buffer (send ", send, ", recv ", recv,
                  ") for ", count, " elements");
  const std::size_t bytes = count * dtype_size(dtype);
  const char* own = static_cast<const char*>(recv) + static_cast<std::size_t>(rank) * bytes;
  COHORT_CHECK_IN(backend, send == own || !overlap(send, bytes, recv, bytes * size),
                  "allgather: send ", send, " overlaps recv ", recv,
                  " other than in place (send == recv + rank * count)");
}

void check_reduce_scatter(const char* backend, const void* send, const void* recv,
                          std::size_t count, DType dtype, int rank, int size) {
  COHORT_CHECK_IN(backend, reducible(dtype), "reduce_scatter: dtype ", dtype_name(dtype),
                  " cannot be reduced");
  if (count == 0) return;
  COHORT_CHECK_IN(backend, send && recv, "reduce_scatter: null buffer (send ", send, ", recv ",
                  recv, ") for ", count, " elements");
  const std::size_t bytes = count * dtype_size(dtype);
  const char* own = static_cast<const char*>(send) + static_cast<std::size_t>(rank) * bytes;
  COHORT_CHECK_IN(backend, recv == own || !overlap(send, bytes * size, recv, bytes),
                  "reduce_scatter: recv ", recv, " overlaps send ", send,
                  " other than in place (recv == send + rank * count)");
}

void check_p2p(const char* backend, const char* op, const void* buf, std::size_t count,
               DType dtype, int peer, int size) {
  (void)dtype;
  COHORT_CHECK_IN(backend, peer >= 0 && peer < size, op, ": peer ", peer,
                  " is not a rank of this group of ", size);
  COHORT_CHECK_IN(backend, count == 0 || buf, op, ": null buffer for ", count, " elements");
}

}  // namespace cohort::comm::detail
