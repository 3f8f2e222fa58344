# Sourced by every bench/*.sh right after its `set`: prints one line naming the CPU the figures
# come from, so that a figure copied into docs/benchmarks/ carries its machine. The kind is what
# decides the host kernels: AVX2 (oneDNN's jit:avx2), AVX-512 (jit:avx512_core; bf16 where the CPU
# has avx512_bf16) or AVX-512 + AMX; ONEDNN_MAX_CPU_ISA, when set, caps oneDNN below the CPU's kind.
cpu_line() {
  local model flags kind cap
  model=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo 2>/dev/null | head -n1)
  flags=" $(sed -n 's/^flags\s*: //p' /proc/cpuinfo 2>/dev/null | head -n1) "
  case "$flags" in
    *" amx_tile "*) kind="AVX-512 + AMX" ;;
    *" avx512f "*) kind="AVX-512" ;;
    *" avx2 "*) kind="AVX2 only" ;;
    *) kind="no AVX2" ;;
  esac
  case "$flags" in *" avx512_bf16 "*) kind="$kind, avx512_bf16" ;; esac
  cap=${ONEDNN_MAX_CPU_ISA:+; oneDNN capped at ONEDNN_MAX_CPU_ISA=$ONEDNN_MAX_CPU_ISA}
  echo "cpu: ${model:-unknown} ($kind), $(nproc) CPUs$cap; $(date -u '+%Y-%m-%d %H:%M UTC')"
}
cpu_line
