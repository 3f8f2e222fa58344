// shm point-to-point: send and recv over each ordered pair's ring in the segment (p2p.hpp), in
// chunks, progressing alongside the collectives; a message that arrives before its recv is posted
// is buffered by the receiver.
#include "shm/p2p.hpp"

#include <cstring>


namespace cohort::comm::shm {

namespace {
// "shm send (to rank 1, tag 3, 16 x u8)": shm's own order of the fields (OpDesc::str() puts the
// count first); kept so that messages read as they always have.
std::string p2p_text(const char* dir, const OpDesc& d) {
  return std::string("shm ") + detail::op_kind_name(d.kind) + " (" + dir + " rank " +
         std::to_string(d.peer) + ", tag " + std::to_string(d.tag) + ", " +
         std::to_string(d.count) + " x " + dtype_name(d.dtype) + ")";
}
}  // namespace

SendOp::SendOp(std::shared_ptr<Engine> engine, const void* buf, std::size_t count, DType dtype,
               int peer, int tag, Timeout timeout)
    : Op(std::move(engine), detail::op_desc(OpKind::send, count, dtype, ReduceOp::sum, peer, tag),
         timeout),
      buf_(static_cast<const std::uint8_t*>(buf)),
      bytes_(count * dtype_size(dtype)) {}

bool SendOp::advance() {
  const Segment& seg = eng.seg();
  RingCtl& ring = seg.ring(eng.rank, desc.peer);
  const std::uint64_t payload = eng.params.ring_slot_bytes - kRingHeaderBytes;
  while (!finished_) {
    const std::uint64_t head = ring.head.v.load(std::memory_order_relaxed);
    if (head - ring.tail.v.load(std::memory_order_acquire) >= eng.params.ring_slots) return false;
    char* slot = seg.ring_slot(eng.rank, desc.peer, head);
    const std::uint64_t chunk = std::min(payload, bytes_ - offset_);
    const RingSlotHeader h{desc.tag, bytes_, offset_, chunk};
    std::memcpy(slot, &h, sizeof(h));
    if (chunk) std::memcpy(slot + kRingHeaderBytes, buf_ + offset_, chunk);
    ring.head.v.store(head + 1, std::memory_order_release);
    eng.count_move();
    offset_ += chunk;
    finished_ = offset_ == bytes_;
  }
  return true;
}

void SendOp::blocked(std::vector<int>* ranks, std::string* what) const {
  *ranks = {desc.peer};
  *what = "it has not received: " + std::to_string(offset_) + " of " + std::to_string(bytes_) +
          " bytes are in the ring";
}

std::string SendOp::describe() const { return p2p_text("to", desc); }

RecvOp::RecvOp(std::shared_ptr<Engine> engine, void* buf_, std::size_t count, DType dtype,
               int peer, int tag, Timeout timeout)
    : Op(std::move(engine), detail::op_desc(OpKind::recv, count, dtype, ReduceOp::sum, peer, tag),
         timeout),
      buf(static_cast<std::uint8_t*>(buf_)),
      bytes(count * dtype_size(dtype)) {}

bool RecvOp::advance() {
  if (delivered) return true;
  if (!matched) eng.claim_unexpected(*this);
  if (from_unexpected) eng.take_unexpected(*this);
  return delivered;
}

void RecvOp::blocked(std::vector<int>* ranks, std::string* what) const {
  *ranks = {desc.peer};
  *what = matched ? "its message is only partly here"
                  : "no message with tag " + std::to_string(desc.tag) + " from it yet";
}

std::string RecvOp::describe() const { return p2p_text("from", desc); }

// --- the engine's side ---

void Engine::post_recv(const std::shared_ptr<RecvOp>& op) {
  recvs_[static_cast<std::size_t>(op->desc.peer)].push_back(op);
  claim_unexpected(*op);
}

bool Engine::claim_unexpected(RecvOp& op) {
  for (auto it = unexpected_[op.desc.peer].begin(); it != unexpected_[op.desc.peer].end(); ++it) {
    if (it->claimed || it->tag != op.desc.tag) continue;
    it->claimed = true;
    op.matched = true;
    op.from_unexpected = true;
    op.unexpected = it;
    return true;
  }
  return false;
}

void Engine::take_unexpected(RecvOp& op) {
  auto it = op.unexpected;
  if (!it->complete) return;
  if (it->data.size() != op.bytes)
    fail_locked(op.describe() + " expects " + std::to_string(op.bytes) + " bytes but rank " +
                std::to_string(op.desc.peer) + " sent " + std::to_string(it->data.size()));
  if (op.bytes) std::memcpy(op.buf, it->data.data(), op.bytes);
  unexpected_[op.desc.peer].erase(it);
  op.delivered = true;
}

bool Engine::drain_incoming() {
  bool moved = false;
  for (int s = 0; s < world; ++s) {
    RingCtl& ring = seg_->ring(s, rank);
    Incoming& in = incoming_[static_cast<std::size_t>(s)];
    for (;;) {
      const std::uint64_t tail = ring.tail.v.load(std::memory_order_relaxed);
      if (tail == ring.head.v.load(std::memory_order_acquire)) break;
      const char* slot = seg_->ring_slot(s, rank, tail);
      RingSlotHeader h;
      std::memcpy(&h, slot, sizeof(h));
      if (!in.active) {
        // A new message: the earliest unmatched recv from s with this tag, or a buffer.
        in = Incoming{};
        in.active = true;
        in.total = h.msg_bytes;
        for (auto& r : recvs_[static_cast<std::size_t>(s)]) {
          if (r->matched || r->desc.tag != h.tag) continue;
          if (r->bytes != h.msg_bytes)
            fail_locked(r->describe() + " expects " + std::to_string(r->bytes) + " bytes but rank " +
                        std::to_string(s) + " sent " + std::to_string(h.msg_bytes));
          r->matched = true;
          in.recv = r.get();
          in.target = r->buf;
          break;
        }
        if (!in.recv) {
          auto& list = unexpected_[static_cast<std::size_t>(s)];
          list.push_back(Unexpected{h.tag, std::vector<std::uint8_t>(h.msg_bytes)});
          in.unexpected = std::prev(list.end());
          in.target = in.unexpected->data.data();
        }
      }
      if (h.chunk_bytes) std::memcpy(in.target + h.offset, slot + kRingHeaderBytes, h.chunk_bytes);
      ring.tail.v.store(tail + 1, std::memory_order_release);
      in.received += h.chunk_bytes;
      moved = true;
      ++moves_;
      if (in.received == in.total) {
        if (in.recv)
          in.recv->delivered = true;
        else
          in.unexpected->complete = true;
        in.active = false;
      }
    }
  }
  return moved;
}

}  // namespace cohort::comm::shm
