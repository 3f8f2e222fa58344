// What the host's oneDNN paths share (conv2d.cpp's convolutions, gemm.cpp's bf16 matmul): one CPU
// engine, one stream per thread, and whether oneDNN's instruction set here computes bf16 natively.
// Internal header (oneDNN types stay out of public headers).
#pragma once

#include <dnnl.hpp>

namespace cohort::host {

// The process's CPU engine. Never destroyed: primitives may run during static destruction of a
// user's objects. Inline, so every translation unit shares the one instance.
inline dnnl::engine& onednn_engine() {
  static dnnl::engine* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *e;
}

// The calling thread's stream: ops on the host run on the calling thread.
inline dnnl::stream& onednn_stream() {
  thread_local dnnl::stream s(onednn_engine());
  return s;
}

// AVX-512 BF16 or AMX in oneDNN's effective ISA (what autocast bf16 needs; cohort-doctor's amp line).
inline bool bf16_native() {
  static const bool native = [] {
    const unsigned isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
  }();
  return native;
}

inline const char* bf16_missing_reason() {
  return "this CPU has neither AVX-512 BF16 nor AMX (oneDNN would emulate bf16, slower than f32)";
}

}  // namespace cohort::host
