// Point-to-point over shared memory: every ordered pair of ranks (including a rank and itself)
// has a ring of slots in the segment; the sender writes chunks (a header: tag, message size,
// offset, chunk size; then the data) and advances `head`, the receiver copies them out and
// advances `tail`. Messages from one sender arrive in order. The receiver matches each new
// message with its earliest posted recv from that sender with the same tag; a message nobody
// has asked for yet is copied into a private buffer ("unexpected", as in MPI) so the ring keeps
// moving and a sender never waits for its receiver to post.
#pragma once

#include <list>

#include "shm/engine.hpp"

namespace cohort::comm::shm {

// desc.peer is the other rank, desc.tag the message's tag.
class SendOp final : public Op {
 public:
  SendOp(std::shared_ptr<Engine> engine, const void* buf, std::size_t count, DType dtype, int peer,
         int tag, Timeout timeout);
  bool advance() override;
  void blocked(std::vector<int>* ranks, std::string* what) const override;
  std::string describe() const override;

 private:
  const std::uint8_t* buf_;
  std::uint64_t bytes_;
  std::uint64_t offset_ = 0;
  bool finished_ = false;
};

class RecvOp final : public Op {
 public:
  RecvOp(std::shared_ptr<Engine> engine, void* buf, std::size_t count, DType dtype, int peer,
         int tag, Timeout timeout);
  bool advance() override;
  void blocked(std::vector<int>* ranks, std::string* what) const override;
  std::string describe() const override;

  std::uint8_t* const buf;
  const std::uint64_t bytes;
  // Set by the engine: a message is assigned (arriving into buf, or buffered as unexpected).
  bool matched = false;
  bool delivered = false;
  bool from_unexpected = false;
  std::list<Unexpected>::iterator unexpected;  // when from_unexpected
};

}  // namespace cohort::comm::shm
