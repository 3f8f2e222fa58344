// The convolution family on the host: oneDNN's primitives behind the three convolution ops: what
// cuDNN is to the CUDA device (backends/cuda/conv2d.cpp), and what PyTorch's CPU path runs for
// float NCHW convolutions. op_table.cpp routes the calls here; a case oneDNN refuses falls back to
// the shared per-image im2col + GEMM path (backends/common/ops/conv2d.hpp), as does everything when
// COHORT_HOST_CONV=im2col.
//
// Layouts. The op contract is NCHW / OIHW in the caller's buffers. oneDNN's fast kernels want
// blocked layouts (nChw16c, OIhw16i16o); the primitives are created with format `any` and the
// operands reordered into the layout the primitive chose, and the results back, as PyTorch's
// mkldnn_convolution does through ideep. Where the chosen layout is the plain one (oneDNN's gemm
// kernels, the first layer's nchw source) no reorder runs.
//
// Contract details the primitives do not cover themselves:
//   - backward filter accumulates (dw += ...): oneDNN overwrites diff_weights, so it writes into
//     scratch and a reorder with a sum post-op adds that into dw;
//   - dbias (+= sum dy, each channel in double) stays on the shared kernel, as on CUDA;
//   - forward fuses the bias; the activation runs on the shared kernel afterwards (one pass over
//     y), because oneDNN's fused ReLU turns NaN into 0 where torch.relu (and the contract) pass it
//     through, and a NaN must reach the loss's finite check.
//
// Algorithm: 3x3 stride-1 f32 convolutions with at least 16 input and 16 output channels and
// outputs of at least 4x4 (backward data: 8x8; algo_for) run oneDNN's Winograd kernels (F(4x4,
// 3x3): 2.25x fewer multiplications); the rest, and all of them with COHORT_HOST_CONV_ALGO=direct,
// run oneDNN's direct kernels, what PyTorch's CPU convolutions run. On the MNIST CNN's conv2 (64
// x 32 x 26 x 26 -> 64) forward, backward data and backward filter took 5.7 + 8.1 + 6.2 ms against
// direct's 13.6 + 13.6 + 12.8 on one core (AMD EPYC, avx512_core); with fewer channels Winograd was
// slower (conv1, 1 -> 32: forward 2.5 against 0.44 ms), hence the 16. Its rounding is coarser: one
// forward's largest error against a double-precision reference was 1.3-2.0e-6 of the largest
// output, direct's 2.7-3.8e-7 (docs/benchmarks/compute.md, "Winograd convolutions"). That is
// within the parity table's tolerances, but whole models' gradients move by up to 0.8% of their
// tensor's largest value against PyTorch (models_golden states the bound; direct stays within
// 1e-3), hence the switch back to direct for runs that must track PyTorch's rounding. cuDNN's
// heuristics pick Winograd algorithms on the GPU the same way, and PyTorch's GPU convolutions
// default to TF32, coarser still. Its forward and backward data compute each output on one thread
// as direct's do (bit for bit the same at 1 and 2 threads), and its backward filter, like direct's,
// is made with the configured count. A case whose Winograd primitive oneDNN refuses (an ISA
// without avx512_core) runs direct.
//
// Primitives are created once per shape, direction and activation (tens of milliseconds each) and
// kept for the life of the process. Executing a primitive concurrently from several threads is
// allowed; each thread has its own stream and its own scratch (user-managed scratchpads), so two
// threads sharing the host device share nothing mutable here.
//
// Determinism: forward and backward data compute every output element on one thread in a fixed
// order. Backward filter reduces over the batch across threads, so its rounding depends on the
// configured thread count (plan_threads()); under cohort::deterministic_algorithms() it runs the
// per-image path instead, whose order is fixed (as the CUDA device restricts cuDNN to its
// deterministic algorithms).
#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "cohort/core/autocast.hpp"
#include "cohort/core/error.hpp"
#include "cohort/core/math_mode.hpp"
#include "cohort/devices.hpp"
#include "conv2d.hpp"
#include "host_device.hpp"
#include "onednn.hpp"
#include "scratch.hpp"
#include "thread_governor.hpp"

namespace cohort::host {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

enum class Dir { forward, backward_data, backward_filter };

enum class Algo { direct, winograd };

// COHORT_HOST_CONV_ALGO: winograd (the default, where algo_for allows) or direct (above).
bool read_winograd() {
  const char* v = std::getenv("COHORT_HOST_CONV_ALGO");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "winograd") == 0) return true;
  if (std::strcmp(v, "direct") == 0) return false;
  ::cohort::detail::throw_error(
      __FILE__, __LINE__, "", "host",
      ::cohort::detail::concat("COHORT_HOST_CONV_ALGO='", v,
                               "' is not a host convolution algorithm: use winograd (the "
                               "default) or direct"));
}

// The algorithm a case asks oneDNN for first, per direction. Winograd computes 4x4 output
// tiles, so small maps waste most of each (measured on one core, 64 images, 3x3, the same
// channels in and out, direct against Winograd, forward + backward data + backward filter: 8x8
// outputs at 64 channels 8.6 against 5.0 ms, 4x4 at 128 channels 9.0 against 6.9 but backward
// data alone 2.7 against 4.7, 2x2 at 256 channels 11.1 against 13.6, 1x1 at 512 23.8 against
// 53.1): forward and backward filter from 4x4 outputs, backward data from 8x8.
Algo algo_for(Dir dir, const Conv2dArgs& a) {
  static const bool winograd = read_winograd();
  const std::int64_t side = std::min(a.oh, a.ow);
  return winograd && a.r == 3 && a.s == 3 && a.stride_h == 1 && a.stride_w == 1 && a.dil_h == 1 &&
                 a.dil_w == 1 && a.groups == 1 && a.compute == DType::f32 && a.c >= 16 &&
                 a.k >= 16 && side >= (dir == Dir::backward_data ? 8 : 4)
             ? Algo::winograd
             : Algo::direct;
}

dnnl::algorithm dnnl_algo(Algo a) {
  return a == Algo::winograd ? dnnl::algorithm::convolution_winograd
                             : dnnl::algorithm::convolution_direct;
}

ConvPath read_path() {
  const char* v = std::getenv("COHORT_HOST_CONV");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "auto") == 0) return ConvPath::onednn;
  if (std::strcmp(v, "onednn") == 0) return ConvPath::onednn;
  if (std::strcmp(v, "im2col") == 0) return ConvPath::im2col;
  ::cohort::detail::throw_error(
      __FILE__, __LINE__, "", "host",
      ::cohort::detail::concat("COHORT_HOST_CONV='", v,
                               "' is not a host convolution path: use onednn (the default) or "
                               "im2col"));
}

dnnl::engine& engine() { return onednn_engine(); }
dnnl::stream& thread_stream() { return onednn_stream(); }

// Per-thread buffers, one per role, reused across calls (the op returns before the next call on
// this thread starts). A buffer grows to the largest need. It is released when it holds more than
// 16 MiB and no call of the last 256 on this thread needed a quarter of it: an evaluation at batch
// 1000 (mnist_cnn's conv2 output alone is 147 MB) then does not keep its buffers through the
// training that follows, while a model whose layers need very different sizes (ResNet9: 2 to
// 32 MiB per step) never reallocates within its steps.
constexpr std::size_t kReleaseAbove = std::size_t{16} << 20;
constexpr int kReleaseWindow = 256;
enum Slot { slot_src, slot_wei, slot_dst, slot_pad, slot_count };
void* slot_buffer(Slot slot, std::size_t bytes) {
  struct Buffer : ScratchBuffer {
    std::size_t window_max = 0;  // the largest need of this window's calls
    int calls = 0;
  };
  thread_local Buffer bufs[slot_count];
  Buffer& b = bufs[slot];
  if (bytes > b.window_max) b.window_max = bytes;
  if (++b.calls == kReleaseWindow) {
    if (b.n > kReleaseAbove && b.window_max < b.n / 4) b.release();
    b.calls = 0;
    b.window_max = 0;
  }
  return b.get(bytes, "a oneDNN convolution");
}

struct Dims {
  memory::dims src, wei, dst, strides, dilates, pad_l, pad_r;
  tag wei_tag;
};

Dims dims_of(const Conv2dArgs& a) {
  Dims d;
  d.src = {a.n, a.c, a.h, a.w};
  d.dst = {a.n, a.k, a.oh, a.ow};
  if (a.groups == 1) {
    d.wei = {a.k, a.c, a.r, a.s};
    d.wei_tag = tag::oihw;
  } else {
    d.wei = {a.groups, a.k / a.groups, a.c / a.groups, a.r, a.s};
    d.wei_tag = tag::goihw;
  }
  d.strides = {a.stride_h, a.stride_w};
  d.dilates = {a.dil_h - 1, a.dil_w - 1};  // oneDNN counts the gaps, PyTorch the step
  d.pad_l = {a.pad_h, a.pad_w};
  // The right padding that makes oneDNN's output extent equal the contract's (floor division
  // drops trailing input rows PyTorch never reads; that is a smaller, possibly negative, pad_r).
  d.pad_r = {(a.oh - 1) * a.stride_h + a.dil_h * (a.r - 1) + 1 - a.h - a.pad_h,
             (a.ow - 1) * a.stride_w + a.dil_w * (a.s - 1) + 1 - a.w - a.pad_w};
  return d;
}

// One operand's way between the caller's plain buffer and the primitive's layout.
struct Operand {
  memory::desc plain, want;
  bool reorder = false;
  dnnl::reorder to_want, to_plain;  // whichever directions this operand needs
};

Operand operand(const memory::dims& dims, tag plain_tag, const memory::desc& want, bool in,
                bool out, bool accumulate = false) {
  Operand o;
  o.plain = memory::desc(dims, dt::f32, plain_tag);
  o.want = want;
  o.reorder = want != o.plain || accumulate;
  if (!o.reorder) return o;
  if (in) o.to_want = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), o.plain, engine(), want));
  if (out) {
    dnnl::primitive_attr attr;
    if (accumulate) {  // plain += result
      dnnl::post_ops po;
      po.append_sum(1.0f);
      attr.set_post_ops(po);
    }
    o.to_plain = dnnl::reorder(
        dnnl::reorder::primitive_desc(engine(), want, engine(), o.plain, attr));
  }
  return o;
}

// A created primitive with its operands' ways in and out.
struct Plan {
  dnnl::primitive prim;
  Operand src, wei, dst;   // forward: src=x, wei=w, dst=y; backward data: src=dx, dst=dy;
  memory::desc bias;       // backward filter: src=x, wei=dw (accumulating), dst=dy
  std::size_t scratchpad_bytes = 0;
  Algo algo = Algo::direct;  // what oneDNN agreed to
};

using i64 = std::int64_t;
// The thread count is part of the key: oneDNN fixes a primitive's thread count when it creates
// it, so a primitive made for 2 threads would keep using 2 after the governor dropped to 1, and
// would wait forever in a forked child, where only 1 exists (thread_governor.hpp). See
// plan_threads() for the count each direction is made with.
using Key = std::tuple<int, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64,
                       i64, i64, bool, int, int, int>;

// Forward and backward data compute each output on one thread, so their values do not depend on
// the count (checked bit for bit at 1 and 2 threads on every shape of bench/conv_shapes.txt) and
// they follow the governor's current count. Backward filter splits the batch's sum between the
// threads, so its rounding depends on the count: it is made with the configured count
// (cohort::host_threads()), never the governor's momentary one, so that a run's values do not
// depend on what else was running (a training run repeated under load gave other weights).
int plan_threads(Dir dir) {
  if (in_forked_child()) return 1;
  return dir == Dir::backward_filter ? configure_threads().threads : omp_get_max_threads();
}

Key key_of(Dir dir, const Conv2dArgs& a, bool bias, int threads, Algo algo) {
  return Key{static_cast<int>(dir),
             a.n,
             a.c,
             a.h,
             a.w,
             a.k,
             a.r,
             a.s,
             a.stride_h,
             a.stride_w,
             a.pad_h,
             a.pad_w,
             a.dil_h,
             a.dil_w,
             a.groups,
             a.oh,
             a.ow,
             bias,
             threads,
             static_cast<int>(a.compute),
             static_cast<int>(algo)};
}

// The type the primitive reads its inputs in: bf16 under autocast (the reorders into the
// primitive's layout round the caller's f32 to nearest even), else f32. Results stay f32.
dt input_type(const Conv2dArgs& a) { return a.compute == DType::bf16 ? dt::bf16 : dt::f32; }

dnnl::convolution_forward::primitive_desc forward_pd(const Conv2dArgs& a, const Dims& d, bool bias,
                                                     const dnnl::primitive_attr& attr, Algo algo) {
  const dt t = input_type(a);
  const memory::desc any_src(d.src, t, tag::any), any_wei(d.wei, t, tag::any),
      any_dst(d.dst, dt::f32, tag::any);
  const memory::desc bias_md = bias ? memory::desc({a.k}, dt::f32, tag::x) : memory::desc();
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, dnnl_algo(algo), any_src,
                                       any_wei, bias_md, any_dst, d.strides, d.dilates, d.pad_l,
                                       d.pad_r);
  return dnnl::convolution_forward::primitive_desc(desc, attr, engine());
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

std::unique_ptr<Plan> make_plan(Dir dir, const Conv2dArgs& a, bool bias, Algo algo) {
  const Dims d = dims_of(a);
  const dt t = input_type(a);
  auto plan = std::make_unique<Plan>();
  plan->algo = algo;
  // The forward descriptor is every direction's hint (oneDNN's backward kernels are chosen to
  // match the forward's layouts).
  const auto fwd = forward_pd(a, d, dir == Dir::forward && bias, user_scratchpad(), algo);
  switch (dir) {
    case Dir::forward: {
      plan->prim = dnnl::convolution_forward(fwd);
      plan->src = operand(d.src, tag::nchw, fwd.src_desc(), true, false);
      plan->wei = operand(d.wei, d.wei_tag, fwd.weights_desc(), true, false);
      plan->dst = operand(d.dst, tag::nchw, fwd.dst_desc(), false, true);
      plan->bias = fwd.bias_desc();
      plan->scratchpad_bytes = fwd.scratchpad_desc().get_size();
      break;
    }
    case Dir::backward_data: {
      dnnl::convolution_backward_data::desc desc(
          dnnl_algo(algo), memory::desc(d.src, dt::f32, tag::any), memory::desc(d.wei, t, tag::any),
          memory::desc(d.dst, t, tag::any), d.strides, d.dilates, d.pad_l, d.pad_r);
      const dnnl::convolution_backward_data::primitive_desc pd(desc, user_scratchpad(), engine(),
                                                               fwd);
      plan->prim = dnnl::convolution_backward_data(pd);
      plan->src = operand(d.src, tag::nchw, pd.diff_src_desc(), false, true);
      plan->wei = operand(d.wei, d.wei_tag, pd.weights_desc(), true, false);
      plan->dst = operand(d.dst, tag::nchw, pd.diff_dst_desc(), true, false);
      plan->scratchpad_bytes = pd.scratchpad_desc().get_size();
      break;
    }
    case Dir::backward_filter: {
      dnnl::convolution_backward_weights::desc desc(
          dnnl_algo(algo), memory::desc(d.src, t, tag::any), memory::desc(d.wei, dt::f32, tag::any),
          memory::desc(d.dst, t, tag::any), d.strides, d.dilates, d.pad_l, d.pad_r);
      const dnnl::convolution_backward_weights::primitive_desc pd(desc, user_scratchpad(),
                                                                  engine(), fwd);
      plan->prim = dnnl::convolution_backward_weights(pd);
      plan->src = operand(d.src, tag::nchw, pd.src_desc(), true, false);
      plan->wei = operand(d.wei, d.wei_tag, pd.diff_weights_desc(), false, true,
                          /*accumulate=*/true);
      plan->dst = operand(d.dst, tag::nchw, pd.diff_dst_desc(), true, false);
      plan->scratchpad_bytes = pd.scratchpad_desc().get_size();
      break;
    }
  }
  return plan;
}

// nullptr when oneDNN has no primitive for the case (remembered, so it is asked once).
const Plan* plan_for(Dir dir, const Conv2dArgs& a, bool bias) {
  adapt_threads_to_load();  // before the key reads the thread count
  static std::mutex mu;
  static auto* plans = new std::map<Key, std::unique_ptr<Plan>>;  // never destroyed, as the engine
  const int threads = plan_threads(dir);
  const Algo algo = algo_for(dir, a);
  const Key key = key_of(dir, a, bias, threads, algo);
  std::lock_guard<std::mutex> lock(mu);
  auto it = plans->find(key);
  if (it == plans->end()) {
    std::unique_ptr<Plan> p;
    // oneDNN reads the calling thread's OpenMP count when it creates a primitive.
    const int current = omp_get_max_threads();
    if (threads != current) omp_set_num_threads(threads);
    try {
      p = make_plan(dir, a, bias, algo);
    } catch (const dnnl::error&) {
      p = nullptr;  // unsupported shape or layout: direct, else the shared path runs it
    }
    if (p == nullptr && algo == Algo::winograd) try {
        p = make_plan(dir, a, bias, Algo::direct);
      } catch (const dnnl::error&) {
        p = nullptr;
      }
    if (threads != current) omp_set_num_threads(current);
    it = plans->emplace(key, std::move(p)).first;
  }
  return it->second.get();
}

// The operand's memory for the primitive: the caller's buffer when no reorder is needed, else
// scratch in the wanted layout (filled from the caller's buffer when `in`).
memory bind(const Operand& o, void* user, Slot slot, bool in, dnnl::stream& s) {
  memory plain(o.plain, engine(), user);
  if (!o.reorder) return plain;
  memory want(o.want, engine(), slot_buffer(slot, o.want.get_size()));
  if (in) o.to_want.execute(s, plain, want);
  return want;
}

void run_plan(const Plan& p, Dir dir, void* src, void* wei, void* dst, const void* bias) {
  dnnl::stream& s = thread_stream();
  const bool src_in = dir != Dir::backward_data, wei_in = dir != Dir::backward_filter,
             dst_in = dir != Dir::forward;
  memory msrc = bind(p.src, src, slot_src, src_in, s);
  memory mwei = bind(p.wei, wei, slot_wei, wei_in, s);
  memory mdst = bind(p.dst, dst, slot_dst, dst_in, s);
  std::unordered_map<int, memory> args;
  if (p.scratchpad_bytes > 0)
    args.emplace(DNNL_ARG_SCRATCHPAD,
                 memory(memory::desc({static_cast<memory::dim>(p.scratchpad_bytes)}, dt::u8,
                                     tag::x),
                        engine(), slot_buffer(slot_pad, p.scratchpad_bytes)));
  switch (dir) {
    case Dir::forward:
      args.emplace(DNNL_ARG_SRC, msrc);
      args.emplace(DNNL_ARG_WEIGHTS, mwei);
      args.emplace(DNNL_ARG_DST, mdst);
      if (bias) args.emplace(DNNL_ARG_BIAS, memory(p.bias, engine(), const_cast<void*>(bias)));
      break;
    case Dir::backward_data:
      args.emplace(DNNL_ARG_DIFF_SRC, msrc);
      args.emplace(DNNL_ARG_WEIGHTS, mwei);
      args.emplace(DNNL_ARG_DIFF_DST, mdst);
      break;
    case Dir::backward_filter:
      args.emplace(DNNL_ARG_SRC, msrc);
      args.emplace(DNNL_ARG_DIFF_WEIGHTS, mwei);
      args.emplace(DNNL_ARG_DIFF_DST, mdst);
      break;
  }
  p.prim.execute(s, args);
  // Results back into the caller's layout (backward filter: added to it).
  if (dir == Dir::forward && p.dst.reorder) {
    memory out(p.dst.plain, engine(), dst);
    p.dst.to_plain.execute(s, mdst, out);
  }
  if (dir == Dir::backward_data && p.src.reorder) {
    memory out(p.src.plain, engine(), src);
    p.src.to_plain.execute(s, msrc, out);
  }
  if (dir == Dir::backward_filter) {
    memory out(p.wei.plain, engine(), wei);
    p.wei.to_plain.execute(s, mwei, out);
  }
  s.wait();
}

bool worth_it(const Conv2dArgs& a) {
  // Every extent fits oneDNN's dims; an empty batch or output is the shared path's (nothing to do).
  return a.n > 0 && a.k > 0 && a.c > 0 && a.oh > 0 && a.ow > 0;
}

template <class F>
bool guarded(const char* op, const Conv2dArgs& a, F&& f) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    ::cohort::detail::throw_error(
        __FILE__, __LINE__, "", "host",
        ::cohort::detail::concat("oneDNN ", op, " failed (status ", static_cast<int>(e.status),
                                 ": ", e.what(), ") for n=", a.n, " c=", a.c, " h=", a.h,
                                 " w=", a.w, " k=", a.k, " r=", a.r, " s=", a.s,
                                 " groups=", a.groups));
  }
}

}  // namespace

ConvPath conv_path() {
  static const ConvPath p = read_path();
  return p;
}


namespace {

// The args an entry point runs with: the caller's, with `compute` lowered to f32 (and the notice
// given, or the strict error thrown) where the host cannot honour it. `why_not` is the case's own
// reason for f32 (nullptr when the case itself allows bf16).
Conv2dArgs resolved(const Conv2dArgs& a, const char* op, const char* why_not) {
  Conv2dArgs r = a;
  if (a.compute == DType::f32) return r;
  const char* why = why_not;
  if (a.compute == DType::f16)
    why = "oneDNN 2.6 has no f16 convolution on CPUs (it needs AVX-512 FP16)";
  else if (!bf16_native())
    why = bf16_missing_reason();
  else if (conv_path() != ConvPath::onednn)
    why = "COHORT_HOST_CONV=im2col: the per-image path computes in f32";
  if (why != nullptr) {
    autocast_fell_back(host_device(), a.compute, op, why);
    r.compute = DType::f32;
  }
  return r;
}

// The plan for `a`; for a bf16 case oneDNN has no primitive for, the notice and the f32 plan.
const Plan* plan_or_f32(Dir dir, Conv2dArgs& a, bool bias, const char* op) {
  const Plan* p = plan_for(dir, a, bias);
  if (p == nullptr && a.compute != DType::f32) {
    autocast_fell_back(host_device(), a.compute, op, "oneDNN has no bf16 primitive for this shape");
    a.compute = DType::f32;
    p = plan_for(dir, a, bias);
  }
  return p;
}

}  // namespace

bool onednn_conv_forward(const calls::Conv2dForward& c) {
  Conv2dArgs a = resolved(c.a, "conv2d_forward", nullptr);
  if (conv_path() != ConvPath::onednn || !worth_it(a)) return false;
  return guarded("convolution forward", a, [&] {
    const Plan* p = plan_or_f32(Dir::forward, a, c.bias != nullptr, "conv2d_forward");
    if (p == nullptr) return false;
    run_plan(*p, Dir::forward, const_cast<float*>(c.x), const_cast<float*>(c.w), c.y, c.bias);
    return true;
  });
}

bool onednn_conv_backward_data(const calls::Conv2dBackwardData& c) {
  Conv2dArgs a = resolved(c.a, "conv2d_backward_data", nullptr);
  // Few input channels per group (a first layer's 1 or 3): oneDNN's f32 backward data pads them to
  // a block of 16 and ran 3-7x slower than the per-image path (bench/conv_compare.sh, 1 and 2
  // threads: ResNet9's prep 8.35 against 2.26 ms, the ViT's patch embedding 4.24 against 0.85).
  // Forward and backward filter stay on oneDNN there: even on one thread, faster on 2. Under
  // autocast bf16 oneDNN runs it anyway, so that the op computes in the type asked for.
  const bool few_channels = a.c / a.groups <= 4 && a.compute == DType::f32;
  if (conv_path() != ConvPath::onednn || !worth_it(a) || few_channels) return false;
  return guarded("convolution backward data", a, [&] {
    const Plan* p = plan_or_f32(Dir::backward_data, a, false, "conv2d_backward_data");
    if (p == nullptr) return false;
    run_plan(*p, Dir::backward_data, c.dx, const_cast<float*>(c.w), const_cast<float*>(c.dy),
             nullptr);
    return true;
  });
}

bool onednn_conv_backward_filter(const calls::Conv2dBackwardFilter& c) {
  // Deterministic algorithms: the per-image path, whose order is fixed, in f32 (oneDNN's backward
  // filter splits the batch's sum between threads).
  Conv2dArgs a = resolved(c.a, "conv2d_backward_filter",
                          deterministic_algorithms()
                              ? "deterministic algorithms: backward filter runs the per-image "
                                "path, which computes in f32"
                              : nullptr);
  if (conv_path() != ConvPath::onednn || !worth_it(a) || deterministic_algorithms())
    return false;
  return guarded("convolution backward filter", a, [&] {
    const Plan* p = plan_or_f32(Dir::backward_filter, a, false, "conv2d_backward_filter");
    if (p == nullptr) return false;
    run_plan(*p, Dir::backward_filter, const_cast<float*>(c.x), c.dw, const_cast<float*>(c.dy),
             nullptr);
    return true;
  });
}

const char* onednn_conv_algorithm(const Conv2dArgs& args) {
  Conv2dArgs a = resolved(args, "conv2d_forward", nullptr);
  if (conv_path() != ConvPath::onednn || !worth_it(a)) return "";
  const Plan* p = plan_for(Dir::forward, a, false);
  if (p == nullptr) return "";
  return p->algo == Algo::winograd ? "winograd" : "direct";
}

}  // namespace cohort::host
