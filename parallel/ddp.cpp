// DistributedDataParallel (see cohort/parallel/ddp.hpp for the contracts). One file: the bucket
// life cycle (fill -> issue -> poll -> complete -> write back) reads top to bottom here.
#include "cohort/parallel/ddp.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "cohort/core/dtype.hpp"
#include "cohort/core/error.hpp"
#include "cohort/core/trace.hpp"

namespace cohort::parallel {

namespace {

double now_s() { return static_cast<double>(trace::now_us()) * 1e-6; }

std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

// "name:[a, b];name:[c];..." of every parameter, in registration order.
std::string describe_parameters(const nn::Module& m) {
  std::string d;
  for (const auto& p : m.named_parameters()) d += p.name + ":" + p.param->value.shape().str() + ";";
  return d;
}

std::vector<std::pair<std::string, std::string>> parse_description(const std::string& d) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t pos = 0;
  while (pos < d.size()) {
    const std::size_t end = d.find(';', pos);
    const std::string entry =
        d.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    const std::size_t colon = entry.find(':');
    out.emplace_back(entry.substr(0, colon),
                     colon == std::string::npos ? std::string() : entry.substr(colon + 1));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out;
}

// Whether `comm` can read and write `dev`'s memory directly.
bool comm_can_use(const comm::Communicator& comm, const Device& dev) {
  const comm::Capabilities c = comm.capabilities();
  return dev.host_accessible() ? c.host_memory : c.device_memory;
}

// Length of the union of [begin, end) intervals, and of its part before `cut`.
std::pair<double, double> union_length(std::vector<std::pair<double, double>> iv, double cut) {
  std::sort(iv.begin(), iv.end());
  double total = 0, before = 0, cur_b = 0, cur_e = -1;
  bool open = false;
  auto flush = [&] {
    if (!open) return;
    total += cur_e - cur_b;
    before += std::max(0.0, std::min(cur_e, cut) - cur_b);
  };
  for (const auto& [b, e] : iv) {
    if (open && b <= cur_e) {
      cur_e = std::max(cur_e, e);
    } else {
      flush();
      cur_b = b;
      cur_e = e;
      open = true;
    }
  }
  flush();
  return {total, before};
}

}  // namespace

struct DistributedDataParallel::Bucket {
  std::vector<int> members;           // indices into params_
  std::vector<std::int64_t> offsets;  // element offset of each member in the flat buffer
  std::int64_t numel = 0;
  int pending = 0;          // members whose gradient is not final yet this step
  std::vector<char> ready;  // per member, this step
  bool launched = false, done = false;
  bool direct = false;              // flat buffer on the parameters' device (no staging)
  Tensor dev_flat;                  // direct: the flat f32 buffer on that device
  std::vector<float> host;          // staged: the flat f32 buffer on the host
  std::vector<std::uint16_t> bf16;  // bf16 mode: the compressed buffer
  std::vector<float> gathered;      // deterministic mode: every rank's bucket, rank order
  comm::WorkHandle work;
  double issue_t = 0, done_t = 0;
};

DistributedDataParallel::DistributedDataParallel(nn::ModulePtr model,
                                                 std::shared_ptr<comm::Communicator> comm,
                                                 DDPOptions options)
    : model_(std::move(model)), comm_(std::move(comm)), opt_(options) {
  COHORT_CHECK(model_ != nullptr, "DistributedDataParallel: model is null");
  COHORT_CHECK(comm_ != nullptr, "DistributedDataParallel: communicator is null");
  COHORT_CHECK(opt_.bucket_cap_mb > 0 && opt_.first_bucket_mb > 0,
               "DistributedDataParallel: bucket sizes must be > 0 MiB, got bucket_cap_mb=",
               opt_.bucket_cap_mb, ", first_bucket_mb=", opt_.first_bucket_mb);
  check_consistency();

  // Everyone starts from rank 0's weights and buffers.
  for (auto& p : model_->named_parameters()) broadcast_tensor(p.param->value);
  sync_buffers();

  for (const auto& p : model_->named_parameters()) {
    if (!p.param->requires_grad) continue;
    COHORT_CHECK(p.param->value.dtype() == DType::f32, "DistributedDataParallel: parameter '",
                 p.name, "' is ", dtype_name(p.param->value.dtype()), "; only f32 is supported");
    params_.push_back(p);
  }
  if (opt_.bf16_compression) {
    const auto dt = comm_->capabilities().dtypes;
    COHORT_CHECK(dt.empty() || std::find(dt.begin(), dt.end(), DType::bf16) != dt.end(),
                 "DistributedDataParallel: bf16_compression needs a communicator that reduces "
                 "bf16; '",
                 comm_->backend(), "' does not");
  }

  // Buckets in reverse registration order (the order backward finishes gradients): bucket 0 holds
  // the last parameters and is capped at first_bucket_mb so the first all-reduce starts early.
  bucket_of_.assign(params_.size(), -1);
  auto cap_elems = [](double mb) {
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(mb * 1024 * 1024 / sizeof(float)));
  };
  std::unique_ptr<Bucket> cur;
  Device* cur_dev = nullptr;
  for (int i = static_cast<int>(params_.size()) - 1; i >= 0; --i) {
    const Tensor& v = params_[static_cast<std::size_t>(i)].param->value;
    const std::int64_t cap =
        cap_elems(buckets_.empty() ? opt_.first_bucket_mb : opt_.bucket_cap_mb);
    // A bucket is one device's memory; a parameter that would overflow it starts a new one
    // (a parameter larger than the cap gets a bucket of its own).
    if (cur && (cur->numel + v.numel() > cap || cur_dev != &v.device()) && cur->numel > 0) {
      buckets_.push_back(std::move(cur));
    }
    if (!cur) {
      cur = std::make_unique<Bucket>();
      cur_dev = &v.device();
    }
    cur->members.push_back(i);
    cur->offsets.push_back(cur->numel);
    cur->numel += v.numel();
    bucket_of_[static_cast<std::size_t>(i)] = static_cast<int>(buckets_.size());
  }
  if (cur) buckets_.push_back(std::move(cur));
  for (auto& b : buckets_) {
    Device& dev = params_[static_cast<std::size_t>(b->members[0])].param->value.device();
    // Direct only where the communicator can take the device's pointers and reduces them itself;
    // deterministic and bf16 modes compute on the host, and host-accessible memory needs no
    // device tensor (a std::vector is the same memory).
    b->direct = !dev.host_accessible() && comm_can_use(*comm_, dev) && !opt_.deterministic &&
                !opt_.bf16_compression;
    if (b->direct)
      b->dev_flat = Tensor::zeros(Shape{b->numel}, DType::f32, dev);
    else
      b->host.assign(static_cast<std::size_t>(b->numel), 0.0f);
    if (opt_.bf16_compression) b->bf16.assign(static_cast<std::size_t>(b->numel), 0);
    b->ready.assign(b->members.size(), 0);
    b->pending = static_cast<int>(b->members.size());
  }

  std::unordered_map<const Parameter*, int> index;
  for (std::size_t i = 0; i < params_.size(); ++i)
    index[params_[i].param.get()] = static_cast<int>(i);
  model_->register_grad_ready_hook([this, index](const NamedParameter& p) {
    auto it = index.find(p.param.get());
    if (it == index.end()) return;  // a parameter added after construction: not ours
    on_grad_ready(it->second);
  });
}

DistributedDataParallel::~DistributedDataParallel() {
  model_->clear_grad_ready_hooks();
  // Outstanding ops write into our buffers: let them finish before the buffers go away.
  for (auto& b : buckets_) {
    if (b->work) {
      try {
        b->work->wait();
      } catch (const std::exception&) {
        // A failed communicator cannot be helped here; destructors do not throw.
      }
    }
  }
}

void DistributedDataParallel::check_consistency() {
  const int n = comm_->size();
  if (n == 1) return;
  const std::string mine = describe_parameters(*model_);
  const auto h = static_cast<std::int64_t>(fnv1a(mine.data(), mine.size()));
  std::vector<std::int64_t> hashes(static_cast<std::size_t>(n));
  comm_->allgather(&h, hashes.data(), 1, DType::i64)->wait();
  if (std::all_of(hashes.begin(), hashes.end(), [&](std::int64_t x) { return x == hashes[0]; }))
    return;
  // Mismatch: every rank gathers every descriptor, so every rank raises the same error (no rank
  // is left waiting in a later collective).
  const auto len = static_cast<std::int64_t>(mine.size());
  std::vector<std::int64_t> lens(static_cast<std::size_t>(n));
  comm_->allgather(&len, lens.data(), 1, DType::i64)->wait();
  const std::int64_t maxlen = *std::max_element(lens.begin(), lens.end());
  std::vector<char> padded(static_cast<std::size_t>(maxlen), '\0');
  std::memcpy(padded.data(), mine.data(), mine.size());
  std::vector<char> all(static_cast<std::size_t>(maxlen * n));
  comm_->allgather(padded.data(), all.data(), static_cast<std::size_t>(maxlen), DType::u8)->wait();
  auto desc_of = [&](int r) {
    return std::string(all.data() + static_cast<std::size_t>(r * maxlen),
                       static_cast<std::size_t>(lens[static_cast<std::size_t>(r)]));
  };
  int r = 1;
  while (hashes[static_cast<std::size_t>(r)] == hashes[0]) ++r;
  const auto a = parse_description(desc_of(0)), b = parse_description(desc_of(r));
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  std::ostringstream why;
  why << "DistributedDataParallel: model parameters differ between rank 0 and rank " << r
      << ": first difference at parameter #" << i << ": ";
  if (i < a.size() && i < b.size())
    why << "'" << a[i].first << "' " << a[i].second << " on rank 0, '" << b[i].first << "' "
        << b[i].second << " on rank " << r;
  else if (i < a.size())
    why << "'" << a[i].first << "' " << a[i].second << " on rank 0, missing on rank " << r;
  else
    why << "missing on rank 0, '" << b[i].first << "' " << b[i].second << " on rank " << r;
  COHORT_FAIL(why.str());
}

void DistributedDataParallel::broadcast_tensor(Tensor& t) {
  if (!t.defined() || t.numel() == 0 || comm_->size() == 1) return;
  if (comm_can_use(*comm_, t.device())) {
    t.device().synchronize();  // queued writes must land before the communicator reads
    comm_->broadcast(t.raw(), static_cast<std::size_t>(t.numel()), t.dtype(), 0)->wait();
    return;
  }
  std::vector<unsigned char> staged(t.nbytes());
  t.device().copy_to_host(staged.data(), t.raw(), staged.size());
  comm_->broadcast(staged.data(), staged.size(), DType::u8, 0)->wait();
  t.device().copy_from_host(t.raw(), staged.data(), staged.size());
}

void DistributedDataParallel::sync_buffers() {
  if (comm_->size() == 1) return;
  trace::Span span("ddp sync_buffers", "comm");
  std::vector<nn::NamedTensor> bufs = model_->named_buffers();
  if (bufs.empty()) return;
  // Broadcast into copies, then load them: modules that keep host copies of buffers (batch
  // norm's batch counter) refresh them in on_state_loaded().
  for (auto& b : bufs) {
    b.tensor = b.tensor.clone();
    broadcast_tensor(b.tensor);
  }
  model_->load_state_dict(bufs, /*strict=*/false);
}

Tensor DistributedDataParallel::forward(const Tensor& x) {
  if (opt_.broadcast_buffers) sync_buffers();
  return model_->forward(x);
}

Tensor DistributedDataParallel::backward(const Tensor& grad, bool need_input_grad) {
  return model_->backward(grad, need_input_grad);
}

void DistributedDataParallel::on_grad_ready(int idx) {
  if (!syncing_ || comm_->size() == 1) return;
  const NamedParameter& p = params_[static_cast<std::size_t>(idx)];
  if (!in_step_) {
    in_step_ = true;
    backward_start_ = now_s();
    ready_order_.clear();
  }
  ready_order_.push_back(p.name);
  Bucket& b = *buckets_[static_cast<std::size_t>(bucket_of_[static_cast<std::size_t>(idx)])];
  const auto pos = static_cast<std::size_t>(std::find(b.members.begin(), b.members.end(), idx) -
                                            b.members.begin());
  COHORT_CHECK(!b.ready[pos] && !b.launched, "DistributedDataParallel: the gradient of '", p.name,
               "' became final twice without finish_gradients() in between; accumulate inside "
               "no_sync() and call finish_gradients() after the last backward of each step");
  b.ready[pos] = 1;
  --b.pending;
  launch_ready_buckets();
  poll();
}

// Issues, in bucket order, every bucket whose gradients are all final: ranks must issue
// collectives in the same order, and gradients may finish in a different bucket order.
void DistributedDataParallel::launch_ready_buckets() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_]->pending == 0)
    launch(*buckets_[next_launch_++]);
}

void DistributedDataParallel::launch(Bucket& b) {
  const auto count = static_cast<std::size_t>(b.numel);
  for (std::size_t k = 0; k < b.members.size(); ++k) {
    const Tensor& g = params_[static_cast<std::size_t>(b.members[k])].param->grad;
    if (b.direct)
      b.dev_flat.slice(b.offsets[k], b.offsets[k] + g.numel()).copy_from(g.reshape({-1}));
    else
      g.device().copy_to_host(b.host.data() + b.offsets[k], g.raw(), g.nbytes());
  }
  b.issue_t = now_s();
  if (opt_.deterministic) {
    b.gathered.resize(count * static_cast<std::size_t>(comm_->size()));
    b.work = comm_->allgather(b.host.data(), b.gathered.data(), count, DType::f32);
  } else if (opt_.bf16_compression) {
    for (std::size_t i = 0; i < count; ++i) b.bf16[i] = float_to_bf16(b.host[i]);
    b.work =
        comm_->allreduce(b.bf16.data(), b.bf16.data(), count, DType::bf16, comm::ReduceOp::sum);
  } else if (b.direct) {
    b.dev_flat.device().synchronize();
    b.work = comm_->allreduce(b.dev_flat.raw(), b.dev_flat.raw(), count, DType::f32,
                              comm::ReduceOp::avg);
  } else {
    b.work = comm_->allreduce(b.host.data(), b.host.data(), count, DType::f32, comm::ReduceOp::avg);
  }
  b.launched = true;
}

// Advances outstanding ops (shm moves only when called) and notes when each one finished.
void DistributedDataParallel::poll() {
  for (std::size_t i = 0; i < next_launch_; ++i) {
    Bucket& b = *buckets_[i];
    if (b.launched && !b.done && b.work->test()) {
      b.done = true;
      b.done_t = now_s();
    }
    if (!b.done) break;  // ops complete in issue order: later ones cannot be done yet
  }
}

void DistributedDataParallel::complete(Bucket& b) {
  if (!b.done) {
    b.work->wait();
    b.done = true;
    b.done_t = now_s();
  }
  const std::size_t count = static_cast<std::size_t>(b.numel);
  const int n = comm_->size();
  if (opt_.deterministic) {
    // Fixed order: rank 0 + rank 1 + ... + rank n-1, then one division, whatever the backend.
    for (std::size_t i = 0; i < count; ++i) {
      float acc = b.gathered[i];
      for (int r = 1; r < n; ++r) acc += b.gathered[static_cast<std::size_t>(r) * count + i];
      b.host[i] = acc / static_cast<float>(n);
    }
  } else if (opt_.bf16_compression) {
    for (std::size_t i = 0; i < count; ++i)
      b.host[i] = bf16_to_float(b.bf16[i]) / static_cast<float>(n);
  }
  for (std::size_t k = 0; k < b.members.size(); ++k) {
    Tensor& g = params_[static_cast<std::size_t>(b.members[k])].param->grad;
    if (b.direct)
      g.copy_from(b.dev_flat.slice(b.offsets[k], b.offsets[k] + g.numel()));
    else
      g.device().copy_from_host(g.raw(), b.host.data() + b.offsets[k], g.nbytes());
  }
  trace::record("allreduce bucket", "comm", static_cast<std::int64_t>(b.issue_t * 1e6),
                static_cast<std::int64_t>((b.done_t - b.issue_t) * 1e6));
}

void DistributedDataParallel::finish_gradients() {
  if (!in_step_) return;  // no synchronised backward since the last call
  const double t_end_backward = now_s();
  {
    trace::Span span("ddp wait", "comm");
    // Buckets with a gradient that never became final (unused parameter): issue them anyway, with
    // the gradient as it stands, so every rank issues the same collectives.
    for (auto& b : buckets_) b->pending = 0;
    launch_ready_buckets();
    for (auto& b : buckets_) {
      if (!b->done) {
        b->work->wait();
        b->done = true;
        b->done_t = now_s();
      }
    }
  }
  const double t_waited = now_s();
  std::vector<std::pair<double, double>> intervals;
  for (auto& b : buckets_) {
    complete(*b);
    intervals.emplace_back(b->issue_t, b->done_t);
  }
  const auto [busy, hidden] = union_length(intervals, t_end_backward);
  last_ = Stats{};
  last_.comm_wait_s = t_waited - t_end_backward;
  last_.allreduce_s = busy;
  last_.overlap_s = hidden;
  last_.buckets = static_cast<int>(buckets_.size());
  last_.steps = 1;
  total_.comm_wait_s += last_.comm_wait_s;
  total_.allreduce_s += last_.allreduce_s;
  total_.overlap_s += last_.overlap_s;
  total_.buckets = last_.buckets;
  total_.steps += 1;
  // Reset for the next step.
  for (auto& b : buckets_) {
    b->pending = static_cast<int>(b->members.size());
    std::fill(b->ready.begin(), b->ready.end(), 0);
    b->launched = b->done = false;
    b->work.reset();
  }
  next_launch_ = 0;
  in_step_ = false;
}

DistributedDataParallel::NoSync::NoSync(DistributedDataParallel& ddp)
    : ddp_(&ddp), previous_(ddp.syncing_) {
  ddp.syncing_ = false;
}
DistributedDataParallel::NoSync::~NoSync() {
  if (ddp_) ddp_->syncing_ = previous_;
}
DistributedDataParallel::NoSync::NoSync(NoSync&& other) noexcept
    : ddp_(other.ddp_), previous_(other.previous_) {
  other.ddp_ = nullptr;
}

std::string DistributedDataParallel::weights_digest() const {
  return parallel::weights_digest(*model_);
}

std::string weights_digest(const nn::Module& model) {
  std::uint64_t h = 1469598103934665603ull;
  for (const auto& e : model.state_dict()) {
    h = fnv1a(e.name.data(), e.name.size(), h);
    const std::string shape = e.tensor.shape().str();
    h = fnv1a(shape.data(), shape.size(), h);
    std::vector<unsigned char> bytes(e.tensor.nbytes());
    e.tensor.device().copy_to_host(bytes.data(), e.tensor.raw(), bytes.size());
    h = fnv1a(bytes.data(), bytes.size(), h);
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

bool DistributedDataParallel::weights_identical_across_ranks() {
  const std::string d = weights_digest();
  const auto mine = static_cast<std::int64_t>(std::stoull(d, nullptr, 16));
  std::vector<std::int64_t> all(static_cast<std::size_t>(comm_->size()));
  comm_->allgather(&mine, all.data(), 1, DType::i64)->wait();
  return std::all_of(all.begin(), all.end(), [&](std::int64_t x) { return x == mine; });
}

std::vector<std::vector<std::string>> DistributedDataParallel::bucket_layout() const {
  std::vector<std::vector<std::string>> out;
  for (const auto& b : buckets_) {
    out.emplace_back();
    for (int m : b->members) out.back().push_back(params_[static_cast<std::size_t>(m)].name);
  }
  return out;
}

}  // namespace cohort::parallel
