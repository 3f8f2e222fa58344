// The op description every backend shares (collectives/detail/op_desc.hpp): its text, which error
// messages of every backend embed, and its fixed byte layout, which lets ranks compare
// descriptions as raw bytes.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>

#include "detail/op_desc.hpp"

using namespace cohort;
using namespace cohort::comm;
using detail::OpDesc;
using detail::OpKind;
using detail::op_desc;

TEST_SUITE("op_desc") {
  TEST_CASE("str names the op as the backends' messages do") {
    OpDesc d = op_desc(OpKind::allreduce, 1000, DType::f32, ReduceOp::sum);
    d.seq = 2;
    CHECK(d.str() == "allreduce #2 (1000 x f32, sum)");
    d.seq = 0;
    CHECK(d.str() == "allreduce (1000 x f32, sum)");
    d = op_desc(OpKind::reduce_scatter, 8, DType::bf16, ReduceOp::avg);
    d.seq = 7;
    CHECK(d.str() == "reduce_scatter #7 (8 x bf16, avg)");
    d = op_desc(OpKind::broadcast, 16, DType::u8, ReduceOp::sum, 1);
    d.seq = 3;
    CHECK(d.str() == "broadcast #3 (16 x u8, root 1)");
    d = op_desc(OpKind::allgather, 4, DType::i64);
    d.seq = 5;
    CHECK(d.str() == "allgather #5 (4 x i64)");
    d = op_desc(OpKind::barrier, 0, DType::u8);
    d.seq = 4;
    CHECK(d.str() == "barrier #4");
    CHECK(op_desc(OpKind::send, 16, DType::u8, ReduceOp::sum, 1, 3).str() ==
          "send (16 x u8 to rank 1, tag 3)");
    CHECK(op_desc(OpKind::recv, 1, DType::i32, ReduceOp::sum, 1, 7).str() ==
          "recv (1 x i32 from rank 1, tag 7)");
  }

  TEST_CASE("collective or point-to-point") {
    for (OpKind k : {OpKind::allreduce, OpKind::broadcast, OpKind::allgather,
                     OpKind::reduce_scatter, OpKind::barrier})
      CHECK(op_desc(k, 1, DType::f32).collective());
    CHECK_FALSE(op_desc(OpKind::send, 1, DType::f32).collective());
    CHECK_FALSE(op_desc(OpKind::recv, 1, DType::f32).collective());
  }

  TEST_CASE("a plain 32-byte value: equal descriptions are equal bytes") {
    static_assert(std::is_trivially_copyable_v<OpDesc>);
    static_assert(sizeof(OpDesc) == 32);
    OpDesc a = op_desc(OpKind::allreduce, 1 << 20, DType::f32, ReduceOp::max);
    a.seq = 9;
    unsigned char bytes[sizeof(OpDesc)];
    std::memcpy(bytes, &a, sizeof a);
    OpDesc b;
    std::memcpy(&b, bytes, sizeof b);
    CHECK(b.str() == a.str());
    OpDesc c = op_desc(OpKind::allreduce, 1 << 20, DType::f32, ReduceOp::max);
    c.seq = 9;
    CHECK(std::memcmp(&a, &c, sizeof a) == 0);
    c.count += 1;
    CHECK(std::memcmp(&a, &c, sizeof a) != 0);
  }

  // A composing communicator's stages carry its collective's fingerprint (hier).
  TEST_CASE("an outer collective's fingerprint rides in its stages' descriptions") {
    using cohort::comm::detail::outer_collective_tag;
    using cohort::comm::detail::OuterCollective;
    CHECK(outer_collective_tag() == 0);
    CHECK(op_desc(OpKind::allreduce, 4, DType::f32).tag == 0);
    OpDesc sum = op_desc(OpKind::allreduce, 4, DType::f32), avg = sum;
    avg.op = ReduceOp::avg;
    sum.seq = avg.seq = 2;
    std::int32_t sum_tag = 0, avg_tag = 0;
    {
      OuterCollective outer(sum);
      sum_tag = outer_collective_tag();
      CHECK(sum_tag != 0);
      // Every collective kind takes it; send and recv keep their own tags.
      for (OpKind k : {OpKind::allreduce, OpKind::broadcast, OpKind::allgather,
                       OpKind::reduce_scatter, OpKind::barrier})
        CHECK(op_desc(k, 1, DType::f32).tag == sum_tag);
      CHECK(op_desc(OpKind::send, 1, DType::f32, ReduceOp::sum, 1, 7).tag == 7);
      {
        OuterCollective inner(avg);  // nested: the innermost wins, then the outer is back
        avg_tag = outer_collective_tag();
      }
      CHECK(outer_collective_tag() == sum_tag);
      // The stage names it, so two ranks' stages that differ only there read differently.
      char hex[16];
      std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(sum_tag));
      CHECK(op_desc(OpKind::allreduce, 2, DType::f32).str() ==
            std::string("allreduce (2 x f32, sum, stage of collective ") + hex + ")");
      CHECK(op_desc(OpKind::barrier, 0, DType::u8).str() ==
            std::string("barrier (stage of collective ") + hex + ")");
    }
    CHECK(outer_collective_tag() == 0);
    // Outer collectives that differ only in what their stages cannot see (avg and sum both sum;
    // another seq) give different fingerprints; the same one gives the same on every rank.
    CHECK(avg_tag != sum_tag);
    OpDesc later = sum;
    later.seq = 3;
    std::int32_t later_tag = 0, again_tag = 0;
    {
      OuterCollective o(later);
      later_tag = outer_collective_tag();
    }
    {
      OuterCollective o(sum);
      again_tag = outer_collective_tag();
    }
    CHECK(later_tag != sum_tag);
    CHECK(again_tag == sum_tag);
  }
}
