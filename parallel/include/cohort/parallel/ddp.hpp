// DistributedDataParallel: data-parallel training of one nn::Module over a comm::Communicator,
// shaped like torch.nn.parallel.DistributedDataParallel: it IS a Module that wraps the model, and
// goes wherever a model goes (Trainer, a hand-written loop, a Sequential).
//
//   parallel::DistributedDataParallel ddp(model, comm);   // or nn::make<...>(model, comm)
//   loss.forward(ddp.forward(x), y);                      // rank 0's buffers first (one broadcast)
//   ddp.backward(loss.backward(), false);                 // gradients averaged when it returns
//   optimizer.step();
//
// Why it is shaped this way: Module::backward fires a grad-ready hook as each parameter's
// gradient becomes final, in reverse registration order. DDP groups parameters into buckets in
// that order (the first bucket small, so communication starts early) and, from inside the hook,
// starts a bucket's asynchronous collective as soon as its last gradient is final, then polls
// (Work::test()) the outstanding ones on every later hook: backends without a progress thread
// (shm) only advance on the calling thread, so polling is what lets communication overlap the
// rest of backward. When the wrapped model's backward returns, DDP's backward waits for the rest
// and writes the averaged gradients back into every Parameter::grad: nothing to wire by hand.
// How a bucket is reduced (plain, host-staged, bf16, deterministic) is a Reducer, one per file
// under parallel/reducers/.
//
// Names: the wrapper adds no prefix (unlike PyTorch's "module."): ddp.named_parameters() and
// ddp.state_dict() are exactly the wrapped model's, so a checkpoint saved from either loads into
// the plain model (and into PyTorch's plain model). A PyTorch DDP checkpoint with "module." keys
// must have the prefix stripped first, as in PyTorch.
//
// Contracts:
//  - Every rank must build the same model (names and shapes, checked at construction) and run the
//    same sequence of synchronised backward passes; buckets are issued in a fixed order (bucket 0
//    first) on every rank, whatever order their gradients finish in.
//  - Parameters with requires_grad must be f32; gradients are averaged (sum / world size).
//  - Move the model to its device before wrapping it (buckets live on the parameters' device).
//  - Single-threaded: the DDP object, its hooks and its backward run on the thread that calls
//    backward.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/collectives/communicator.hpp"
#include "cohort/core/tensor.hpp"
#include "cohort/layers/module.hpp"

namespace cohort::parallel {

namespace detail {
class Reducer;
}
}  // namespace cohort::parallel
namespace cohort::optim {
class Optimizer;
class GradScaler;
}
namespace cohort::parallel {

struct DDPOptions {
  // MiB of gradient per bucket (a larger parameter gets a bucket of its own).
  double bucket_cap_mb = 25;
  // Cap of bucket 0 (the last layers' gradients): small, so communication starts early.
  double first_bucket_mb = 1;
  // In training mode and outside no_sync(), forward() first copies rank 0's buffers (batch-norm
  // running statistics) to every rank: one broadcast of all buffers packed together, none for a
  // model without buffers.
  bool broadcast_buffers = true;
  // All-reduce gradients as bf16 (half the bytes, about 3 significant digits), then average.
  bool bf16_compression = false;
  // All-reduce gradients as f16 (half the bytes, about 3.3 significant digits, largest 65504),
  // divided by the world size before the rounding (PyTorch's fp16_compress_hook). Not together
  // with bf16_compression.
  bool f16_compression = false;
  // Gradients become views into the buckets (PyTorch's gradient_as_bucket_view): backward writes
  // them straight into the memory the all-reduce runs on, which saves a copy into the bucket and
  // one back per bucket per step, and the separate gradient memory. Every reducer keeps its
  // bucket as one flat f32 buffer on the parameters' device, so this holds for all of them
  // (compression, the deterministic mode and host staging copy from that buffer). A gradient
  // replaced by another tensor after construction is copied as before, so nothing is
  // lost; when the DDP module is destroyed, gradients get memory of their own again.
  bool gradient_as_bucket_view = true;
  // Fixed reduction order: every bucket is all-gathered and summed locally in rank order
  // 0..n-1 on the host, so the average of given gradients depends neither on the backend's
  // reduction algorithm nor on where the bucket lives: bit-identical on shm, ucx and nccl (costs
  // n times the receive bytes of an all-reduce).
  bool deterministic = false;
  // ZeRO stage 1: the optimizer state sharded (ZeroRedundancyOptimizer's idea, DeepSpeed's
  // stage 1) with an even element-wise split. 0 (the default) is plain DDP. With 1, every bucket
  // is split into world-size equal chunks (the bucket padded with zeros to a multiple), chunk k
  // owned by rank k: backward reduce-scatters the gradients instead of all-reducing them (each
  // rank gets the average of its chunks; the rest of its buckets is zeroed), an optimizer built
  // over shard_parameters() (make_zero_optimizer, cohort/parallel/zero.hpp) keeps state for and
  // updates only the owned elements, and its step() ends with gather_parameters(), one in-place
  // all-gather per bucket, after which every rank holds the whole updated model. Communication
  // per step: 2 x (n-1)/n of the parameters' elements, DDP's; memory: parameters and gradients
  // whole, optimizer state / n. With deterministic, the chunks are summed in rank order as the
  // deterministic reducer does: bit-identical weights to a deterministic DDP. Needs host
  // parameters and gradient_as_bucket_view; no compression.
  // With 2 (ZeRO stage 2, FSDP's SHARD_GRAD_OP without the parameter sharding) the gradients are
  // sharded too: no whole gradient is kept between steps. The model's Parameter::grad tensors are
  // released (undefined) at construction. When backward first needs one of a bucket's gradients
  // (ensure_grad, as its module's backward begins; Parameter::grad_source), the bucket is taken
  // from the caching allocator (zeros) and its gradients become views into it; they are released
  // again when the bucket is issued, and the bucket goes back once its reduce-scatter is done,
  // its average added to a persistent chunk-sized gradient shard (what shard_parameters'
  // gradients view). At most two issued buckets are not yet given back: taking a third first
  // waits for the oldest's reduce-scatter. Backward's peak is those and the buckets being filled,
  // not the whole gradient. So after backward the model's Parameter::grad is undefined (read the
  // averaged gradient through the optimizer's shards), and memory between steps is parameters
  // whole, gradients and optimizer state / n. Inside no_sync() the whole gradients accumulate as
  // ever until the synchronised backward. Same communication, same bits as stage 1 (one rank: stage
  // 1's layout, nothing to shard). With 3 (ZeRO stage 3, FSDP's FULL_SHARD / fully_shard) the
  // parameters are sharded too: the model is cut into units (shard_units), each unit's trainable
  // parameters form one bucket, and between steps a rank holds only its chunk of each (values,
  // gradients and optimizer state: 16P/n with Adam). A unit's values exist only while it runs: its
  // forward all-gathers them (blocking if not prefetched), and frees them after
  // (reshard_after_forward); its backward gathers them again and frees them when its gradients are
  // final; the parameters outside every unit (the root unit) are gathered by DDP's forward and
  // freed when its backward ends. Between uses a value is Tensor::released (shape and dtype kept,
  // no memory): read, save or load the whole model inside summon_full_params() (weights_digest
  // does so itself; state_dict and save_model outside it see released values). With prefetch the
  // next unit's gather is issued when a unit starts (forward: the order of the last forward;
  // backward: the reverse), so at most one unit beyond the running one is gathered. Communication
  // per step: 3 x (n-1)/n of the units' elements (forward gather, backward gather, reduce-scatter)
  // and 2 x of the root unit's; the same bits as DDP with deterministic. Eval forwards gather too:
  // every rank must run as many (the Trainer's evaluate agrees on the most test batches a rank has,
  // and a rank with fewer repeats its last batch).
  int zero_stage = 0;
  // Stage 3: the modules (dotted paths as Module::path(), "layer1.0", "features.3") each gathered
  // as one unit. Units must not nest, and each must hold a parameter that requires a gradient.
  // Empty (the default): the root's children with parameters, where a child with more than
  // bucket_cap_mb of them and no parameters of its own is split into its children, recursively
  // (FSDP's size-based wrap policy): ResNet's stages into blocks, the ViT's encoder into layers.
  std::vector<std::string> shard_units;
  // Stage 3: free a unit's values after its forward (FSDP's reshard_after_forward, the default);
  // false keeps them until its backward (one gather a step less, the whole model alive during
  // backward's start).
  bool reshard_after_forward = true;
  // Stage 3: gather the next unit while one runs (FSDP's forward and backward prefetch).
  bool prefetch = true;
  // Hybrid sharding (FSDP's HYBRID_SHARD, and _HYBRID_SHARD_ZERO2 at stage 2): with zero_stage
  // >= 1 and 0 < shard_group_size < the group's size (which it must divide), the state is
  // sharded only inside shard groups of this many consecutive ranks (one host, say) and
  // replicated across the size / shard_group_size groups: rank r holds chunk r % s of every
  // bucket, as do its replicas r % s, r % s + s, ... (the replica group). Backward
  // reduce-scatters over the shard group, then all-reduces the chunk over the replica group;
  // the step's all-gathers (stage 3: every gather) stay inside the shard group, whose links are
  // the fast ones. Memory is the stage's formula for n = shard_group_size; communication per
  // step 2(s-1)/s of the buckets inside the group (stage 3: 3(s-1)/s) plus (g-1) chunks of 1/s
  // across, g = size / s (the subgroup's direct all-reduce: a ring's share at g = 2). With
  // deterministic the bits are a deterministic DDP's (every rank's contribution summed in
  // global rank order). The groups are comm::make_subgroup's, on the DDP's communicator
  // (rebuilt by rebind, where a new size that s does not divide takes the smallest divisor of
  // it above s). 0 (the default) or the group's size: one shard group, no replica.
  int shard_group_size = 0;
};

// 16 hex digits: FNV-1a over `model`'s state_dict (names, shapes and values, read to the host).
// Equal digests mean bit-identical weights and buffers.
std::string weights_digest(const nn::Module& model);

class DistributedDataParallel : public nn::Module {
 public:
  // Checks that every rank has the same parameter names and shapes (throws cohort::Error naming
  // the first differing parameter, both shapes and the rank, on every rank), copies rank 0's
  // parameters and buffers to every rank (one broadcast each per 16 MiB), builds the buckets and
  // registers the grad-ready hook on `model`. Collective: every rank must construct its DDP at the
  // same point. Blocks.
  DistributedDataParallel(nn::ModulePtr model, std::shared_ptr<comm::Communicator> comm,
                          DDPOptions options = {});
  // Removes the grad-ready hooks on the wrapped model (this object's and any others).
  ~DistributedDataParallel() override;

  // Inherited from nn::Module, with these meanings:
  //   forward(x)   in training mode, outside no_sync() and with broadcast_buffers: sync_buffers()
  //                (collective; nothing when the model has no buffers), then model.forward(x).
  //                In eval mode no communication: rank 0 may evaluate alone.
  //   backward(g, need_input_grad)   model.backward(g, ...); buckets start as their gradients
  //                become final; before it returns, every bucket is complete and each
  //                Parameter::grad holds the average over ranks (collective; blocks). Inside
  //                no_sync() it only accumulates locally.
  //   set_grad_sync(on)   what no_sync() sets; the Trainer uses it for gradient accumulation.

  // RAII guard: while alive, forward and backward communicate nothing: gradients accumulate
  // locally (+=). The first backward after it ends all-reduces the accumulated sum, as in PyTorch.
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp);
    ~NoSync();
    NoSync(NoSync&& other) noexcept;
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;
    NoSync& operator=(NoSync&&) = delete;

   private:
    DistributedDataParallel* ddp_;
    bool previous_;
  };
  NoSync no_sync() { return NoSync(*this); }
  void set_grad_sync(bool on) override { syncing_ = on; }

  // Copies every buffer (batch-norm running statistics, counters) from rank 0 with one broadcast
  // of all of them packed together; nothing when the model has none. Collective; blocks.
  void sync_buffers();

  // Completes the buckets of the last synchronised backward: waits, averages over ranks and
  // writes the averages into each parameter's grad. Buckets whose gradients never became final
  // (a parameter unused in this backward) are issued here with the gradient as it stands, so
  // ranks stay in step. DDP's backward calls it; call it yourself only after calling the WRAPPED
  // model's backward directly. No-op when nothing is pending. Blocks; collective.
  void finish_gradients();

  // Elastic training (cohort/parallel/elastic.hpp): moves this DDP onto `comm`, a new group
  // (the survivors of a failed one, or a grown one). The step in flight is abandoned: its
  // collectives on the old communicator are not waited for (it has failed, or its peers are
  // gone), the gradients are zeroed, the buckets get new reducers on `comm` (same layout), and
  // the parameters and buffers of rank `root` of the new group are copied to every rank (one
  // broadcast each), after the same-model check. Collective over `comm`; blocks.
  // ZeRO (zero_stage >= 1): the new group may have another size. The buckets are split anew for
  // it (padding, each rank's chunk), the pieces shard_parameters() handed out become this rank's
  // new ranges (the same Parameter objects, other shapes), and what lived in the old split is
  // void: the optimizer's state of those pieces (a lost rank's share is gone with it) and, at
  // stage 3, the values' shards (zeros; no whole value is broadcast). Load a sharded checkpoint
  // (train::load_sharded_checkpoint) before the next step: the Trainer does (elastic training
  // with ZeRO, docs/PARALLEL.md); an optimizer stepped before it throws naming the buffer.
  // Stage 3 inside summon_full_params() on every old member (a growth): root's whole values are
  // broadcast as at stage 0, which the joiners' constructors pair with, and each rank's shard
  // is cut from them.
  void rebind(std::shared_ptr<comm::Communicator> comm, int root = 0);

  // --- ZeRO stages 1 and 2 (DDPOptions::zero_stage; parallel/zero.cpp) ---
  // For each of `params` (parameters of the wrapped model that require a gradient, in any
  // order), the part this rank owns, as a Parameter of its own: value a view of the owned
  // elements of the parameter's value, grad a view of the same elements of its bucket (stage 1)
  // or of the bucket's gradient shard (stage 2): the averaged gradient after backward. A parameter this rank owns nothing of gets a piece of zero
  // elements, so every rank's optimizer has the same parameters and groups. Throws for a
  // parameter that is not the wrapped model's or without zero_stage.
  std::vector<ParameterPtr> shard_parameters(const std::vector<ParameterPtr>& params) const;
  // Registers gather_parameters() as `optimizer`'s step post-hook: an optimizer over
  // shard_parameters() then leaves every rank with the whole updated model after each step.
  void attach_optimizer(optim::Optimizer& optimizer);
  // Every rank's owned parameter elements to every rank: per bucket, the owned chunk of the
  // parameters is written into the bucket (stage 2: a scratch bucket, two alive at most) and
  // all-gathered in place, the parameters are read back from it, and the bucket is zeroed (its
  // gradients were spent). Collective; blocks.
  void gather_parameters();
  // torch's FSDP clip_grad_norm_: nn::clip_grad_norm of the whole averaged gradient, at any
  // zero_stage, and its total norm returned on every rank. Stage 0: the model's own gradients.
  // Stages 1 and 2: each rank's owned pieces (shard_parameters' gradients), their partial norms
  // summed (the largest, for norm_type infinity) over the ranks in one all-reduce of two f64, so
  // every rank clips its shard by the one coefficient DDP would use (nn::clip_grad_norm over the
  // shards alone would take one rank's shard for the whole). After backward, before the step;
  // collective at stages 1 and 2 (every rank calls it, with the same arguments).
  double clip_grad_norm(double max_norm, double norm_type = 2.0, bool error_if_nonfinite = false);
  // A GradScaler of an optimizer over shard_parameters() (FSDP's ShardedGradScaler): each rank
  // unscales and checks only its shard, so the verdict "an inf or NaN was found" is all-reduced
  // (max) in unscale(), and every rank skips the same steps. A no-op at zero_stage 0, where the
  // gradients are whole and averaged. The scaler must not outlive this DDP.
  void shard_grad_scaler(optim::GradScaler& scaler);
  // Stage 3: every unit's values gathered on every rank while the guard lives (FSDP's
  // summon_full_params), so that the model can be read or written whole: state_dict, a digest,
  // load_state_dict. With writeback, what the values hold when the guard ends becomes each rank's
  // shard (a loaded checkpoint is kept, each rank keeping its chunk); without, changes are lost.
  // Memory: the whole model while it lives. Collective both when made and when it ends (every
  // rank, not inside forward or backward). At stages 0-2 it does nothing.
  class FullParams {
   public:
    FullParams(FullParams&& other) noexcept;
    FullParams(const FullParams&) = delete;
    FullParams& operator=(const FullParams&) = delete;
    FullParams& operator=(FullParams&&) = delete;
    ~FullParams();

   private:
    friend class DistributedDataParallel;
    FullParams(DistributedDataParallel* ddp, bool writeback);
    DistributedDataParallel* ddp_;
    bool writeback_;
  };
  FullParams summon_full_params(bool writeback = true);
  // Stage 3: each unit's path ("" for the root unit) and its parameter names, in bucket order
  // (the order their gradients are reduce-scattered). Empty at stages 0-2.
  std::vector<std::pair<std::string, std::vector<std::string>>> shard_unit_layout() const;

  // ZeRO (stages 1-3): how the parameters that require a gradient are split, for sharded
  // checkpoints (train/sharded_checkpoint.hpp). One piece per such parameter, in registration
  // order: the flat element range [begin, end) of it that rank `rank` of this group owns
  // (possibly empty; shard_parameters' pieces for that rank), and, for this rank only, `values`:
  // a flat view of those elements (stage 3: of the unit's shard, the values' home; stages 1-2: of
  // the parameter). Every rank can compute every rank's ranges; no communication.
  struct ShardPiece {
    std::string name;
    Shape shape;  // the whole parameter's
    std::int64_t begin = 0, end = 0;
    Tensor values;  // `rank` == this rank only
  };
  std::vector<ShardPiece> shard_pieces(int rank) const;
  // The index in shard_pieces() of a piece that shard_parameters() returned (the optimizer's
  // parameters), or -1 for any other Parameter.
  int shard_piece_index(const Parameter& piece) const;

  // Elements this rank owns (parameters' and padding) over all buckets: the optimizer's share.
  std::int64_t owned_elements() const;
  // f32 elements of every bucket, padding included (what the collectives move).
  std::int64_t bucket_elements() const;

  // 16 hex digits: FNV-1a over this rank's state_dict (names, shapes and values, read to host).
  // Stage 3: of the whole model, gathered (summon_full_params): collective there.
  std::string weights_digest() const;
  // All-gathers the 64-bit digest; true when every rank holds the same weights. Collective.
  bool weights_identical_across_ranks();

  struct Stats {
    double comm_wait_s = 0;  // time spent waiting for collectives after the model's backward
    double allreduce_s = 0;  // wall time with at least one bucket in flight (issue -> completion)
    double overlap_s = 0;    // the part of allreduce_s before the model's backward ended
    int buckets = 0;         // buckets per synchronised step
    std::int64_t steps = 0;  // synchronised backward passes (that communicated)
  };
  // Totals over all steps so far (last_step(): the most recent step only).
  Stats stats() const { return total_; }
  Stats last_step() const { return last_; }

  // --- introspection (tests, docs) ---
  // Parameter names per bucket, bucket 0 first (issued first).
  std::vector<std::vector<std::string>> bucket_layout() const;
  // The reducer of each bucket: "plain", "host_staged", "bf16", "f16" or "deterministic".
  std::vector<std::string> bucket_reducers() const;
  // Parameter names in the order the grad-ready hook saw them in the last synchronised backward.
  const std::vector<std::string>& last_ready_order() const { return ready_order_; }

  // The wrapped model (to save a checkpoint of it, or to reach its layers).
  nn::Module& module() { return *model_; }
  const nn::Module& module() const { return *model_; }
  comm::Communicator& communicator() { return *comm_; }
  // ZeRO: the ranks the state is sharded over (the communicator itself, or with hybrid sharding
  // this rank's shard group), and with hybrid sharding the ranks holding the same chunk (null
  // otherwise). Rank k of the shard group owns chunk k of every bucket (shard_pieces(k)).
  comm::Communicator& shard_communicator() const { return shard_comm_ ? *shard_comm_ : *comm_; }
  comm::Communicator* replica_communicator() const { return replica_comm_.get(); }
  const DDPOptions& options() const { return opt_; }

 protected:
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override;

 private:
  struct Bucket;
  struct Unit;                      // stage 3 (zero3.cpp)
  void check_zero_options() const;  // zero.cpp
  void make_shard_groups();         // zero.cpp: hybrid sharding's groups on comm_
  struct Retired;
  void reshard_onto_group(Retired& old);     // zero.cpp: rebind()'s new split, before its broadcast
  void place_new_shards(bool whole_values);  // and after it and attach_buckets: shards, pieces
  // --- stage 3 (zero3.cpp) ---
  bool shards_values() const { return opt_.zero_stage >= 3; }
  void plan_units();          // units_ and their members, in bucket order (before the buckets)
  void shard_values();        // after the buckets: each unit's shard, values released, hooks set
  // Each unit's shard for the current group: the values copied in (construction) or zeros.
  void place_unit_shards(bool copy_values);
  void gather_unit(Unit& u);  // issues its all-gather (nothing if gathering or alive)
  void materialize_unit(Unit& u);  // waits for it; the values become views of the gathered bucket
  void release_unit(Unit& u);      // values released, the gathered bucket given back
  void unit_pre_forward(Unit& u);
  void unit_pre_backward(Unit& u);
  void begin_sharded_forward();   // the root unit gathered, the forward order restarted
  void end_sharded_step();        // every unit still gathered released (waits for prefetches)
  void write_back_unit(Unit& u);  // its owned chunk of the values into its shard
  void form_buckets();            // construction: the parameters into buckets (stage 3: the units')
  void attach_buckets();          // construction: reducers, and the gradients' home
  void on_grad_ready(int index);
  void view_gradients_in(Bucket& b);
  void view_released_gradients_in(Bucket& b);  // stage 2: the bucket taken, grads viewed
  void launch_ready_buckets();
  void sync_buffers_now();
  void finish_gradients_now();
  void launch(Bucket& b);
  bool releases_gradients() const;  // ZeRO stage 2 at more than one rank
  // Stage 2: buckets launched and not yet given back, at most, when another is taken (FSDP's
  // limit_all_gathers keeps two in flight likewise).
  static constexpr int kReleasedInFlight = 2;
  void give_back_released_buckets(int keep);
  void poll();
  std::vector<Tensor> gradients_of(const Bucket& b) const;

  nn::ModulePtr model_;
  std::shared_ptr<comm::Communicator> comm_;
  std::shared_ptr<comm::Communicator> shard_comm_, replica_comm_;  // hybrid sharding only
  DDPOptions opt_;
  std::vector<NamedParameter> params_;  // requires_grad ones, registration order
  // What shard_parameters() handed out: each piece and the index of its parameter in params_.
  mutable std::vector<std::pair<std::weak_ptr<Parameter>, int>> pieces_;
  struct OwnedRange {
    std::int64_t begin, end;  // of the parameter's flat elements
    std::int64_t at;          // where they start in the owner's chunk of the bucket
  };
  OwnedRange owned_range(std::size_t index, std::int64_t rank) const;  // zero.cpp
  Tensor owned_values(std::size_t index, const OwnedRange& r) const;   // this rank's range
  // What rebind() left behind: the old group's reducers and communicator, freed with this DDP.
  struct Retired {
    std::shared_ptr<comm::Communicator> comm, shard_comm, replica_comm;
    std::vector<std::unique_ptr<detail::Reducer>> reducers;
    std::vector<comm::WorkHandle> work;  // stage 3: the units' gathers in flight
    std::vector<Tensor> buffers;         // and what they gather into
  };
  std::vector<Retired> retired_;
  std::vector<int> bucket_of_;          // per parameter
  std::vector<int> slot_of_;            // per parameter: its position in its bucket
  std::vector<std::unique_ptr<Bucket>> buckets_;
  std::vector<std::unique_ptr<Unit>> units_;               // stage 3: units_[i] is bucket i's
  std::vector<Unit*> forward_order_, last_forward_order_;  // units as their forwards ran
  bool has_buffers_ = false;
  bool syncing_ = true;          // false inside no_sync()
  bool in_step_ = false;         // a synchronised backward started, not yet finished
  std::size_t next_launch_ = 0;  // buckets issue in index order
  std::vector<std::string> ready_order_;
  Stats total_, last_;
};

}  // namespace cohort::parallel
