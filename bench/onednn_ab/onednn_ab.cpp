// oneDNN versions side by side on the MNIST CNN's convolutions (forward, backward data, backward
// weights, with the reorders from and to the plain layouts cohort keeps) and fc1's three matmuls:
// the median ms of 30 runs after 5. The same source builds against oneDNN 2.x (Debian's) and 3.x
// (Intel's wheels); bench/onednn_ab/run.sh builds and runs it against each (issue 34: measure
// before choosing a newer oneDNN).
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

static engine eng(engine::kind::cpu, 0);
static stream st(eng);

double time_ms(const std::function<void()>& f) {
  for (int i = 0; i < 5; ++i) f();
  std::vector<double> v;
  for (int i = 0; i < 30; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    st.wait();
    v.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void conv(const char* name, memory::dim n, memory::dim c, memory::dim h, memory::dim k) {
  const memory::dim oh = h - 2;
  memory::dims src{n, c, h, h}, wei{k, c, 3, 3}, bia{k}, dst{n, k, oh, oh}, s{1, 1}, p{0, 0};
  auto any = [](const memory::dims& d) { return memory::desc(d, dt::f32, tag::any); };
  memory::desc src_p(src, dt::f32, tag::nchw), wei_p(wei, dt::f32, tag::oihw),
      dst_p(dst, dt::f32, tag::nchw), bia_md(bia, dt::f32, tag::x);
#if DNNL_VERSION_MAJOR >= 3
  auto fpd = convolution_forward::primitive_desc(eng, prop_kind::forward_training,
                                                 algorithm::convolution_direct, any(src), any(wei),
                                                 bia_md, any(dst), s, p, p);
  auto dpd = convolution_backward_data::primitive_desc(eng, algorithm::convolution_direct, any(src),
                                                       any(wei), any(dst), s, p, p, fpd);
  auto wpd = convolution_backward_weights::primitive_desc(
      eng, algorithm::convolution_direct, any(src), any(wei), bia_md, any(dst), s, p, p, fpd);
#else
  auto fpd = convolution_forward::primitive_desc(
      convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct,
                                any(src), any(wei), bia_md, any(dst), s, p, p),
      eng);
  auto dpd = convolution_backward_data::primitive_desc(
      convolution_backward_data::desc(algorithm::convolution_direct, any(src), any(wei), any(dst),
                                      s, p, p),
      eng, fpd);
  auto wpd = convolution_backward_weights::primitive_desc(
      convolution_backward_weights::desc(algorithm::convolution_direct, any(src), any(wei), bia_md,
                                         any(dst), s, p, p),
      eng, fpd);
#endif
  memory msrc(fpd.src_desc(), eng), mwei(fpd.weights_desc(), eng), mdst(fpd.dst_desc(), eng),
      mbia(bia_md, eng);
  memory mdsrc(dpd.diff_src_desc(), eng), mdwei(wpd.diff_weights_desc(), eng),
      mddst(wpd.diff_dst_desc(), eng), mdbia(bia_md, eng);
  // Plain user layouts in and out, as cohort keeps them: count the reorders too.
  memory usrc(src_p, eng), udst(dst_p, eng), uwei(wei_p, eng);
  auto r_src = reorder(usrc, msrc), r_dst = reorder(mdst, udst), r_ddst = reorder(udst, mddst),
       r_dsrc = reorder(mdsrc, usrc);
  convolution_forward f(fpd);
  convolution_backward_data d(dpd);
  convolution_backward_weights w(wpd);
  const double tf = time_ms([&] {
    if (fpd.src_desc() != src_p) r_src.execute(st, usrc, msrc);
    f.execute(st, {{DNNL_ARG_SRC, msrc},
                   {DNNL_ARG_WEIGHTS, mwei},
                   {DNNL_ARG_BIAS, mbia},
                   {DNNL_ARG_DST, mdst}});
    if (fpd.dst_desc() != dst_p) r_dst.execute(st, mdst, udst);
  });
  const double td = time_ms([&] {
    if (wpd.diff_dst_desc() != dst_p) r_ddst.execute(st, udst, mddst);
    d.execute(st,
              {{DNNL_ARG_DIFF_DST, mddst}, {DNNL_ARG_WEIGHTS, mwei}, {DNNL_ARG_DIFF_SRC, mdsrc}});
    if (dpd.diff_src_desc() != src_p) r_dsrc.execute(st, mdsrc, usrc);
  });
  const double tw = time_ms([&] {
    w.execute(st, {{DNNL_ARG_SRC, msrc},
                   {DNNL_ARG_DIFF_DST, mddst},
                   {DNNL_ARG_DIFF_WEIGHTS, mdwei},
                   {DNNL_ARG_DIFF_BIAS, mdbia}});
  });
  std::printf("%-34s fwd %7.3f  bwd-data %7.3f  bwd-weights %7.3f  sum %7.3f ms  (%s)\n", name, tf,
              td, tw, tf + td + tw, fpd.impl_info_str());
}

void mm(const char* name, memory::dim m, memory::dim k, memory::dim n) {
  memory::desc a({m, k}, dt::f32, tag::ab), b({k, n}, dt::f32, tag::ab),
      c({m, n}, dt::f32, tag::ab);
#if DNNL_VERSION_MAJOR >= 3
  auto pd = matmul::primitive_desc(eng, a, b, c);
#else
  auto pd = matmul::primitive_desc(matmul::desc(a, b, c), eng);
#endif
  memory ma(a, eng), mb(b, eng), mc(c, eng);
  matmul p(pd);
  const double t = time_ms([&] {
    p.execute(st, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
  });
  std::printf("%-34s %7.3f ms  (%s)\n", name, t, pd.impl_info_str());
}

int main() {
  const dnnl_version_t* v = dnnl_version();
  std::printf("oneDNN %d.%d.%d\n", v->major, v->minor, v->patch);
  conv("conv1 64x1x28x28 -> 32, 3x3", 64, 1, 28, 32);
  conv("conv2 64x32x26x26 -> 64, 3x3", 64, 32, 26, 64);
  mm("fc1 fwd 64x9216 * 9216x128", 64, 9216, 128);
  mm("fc1 dW 9216x64 * 64x128", 9216, 64, 128);
  mm("fc1 dX 64x128 * 128x9216", 64, 128, 9216);
  return 0;
}
