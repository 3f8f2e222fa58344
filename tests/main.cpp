// doctest's main, shared by every doctest binary under tests/.
//
// Some tolerances depend on the kernels the CPU runs (oneDNN picks AVX2, AVX-512 or AMX code; the
// collectives' reductions are target_clones). They were measured on three x86-64 kinds: AVX2 only
// (Zen 3), AVX-512 (Zen 4) and AVX-512 + AMX (Sapphire Rapids); ONEDNN_MAX_CPU_ISA=AVX2 gives the
// first on the others (CI runs the quick unit entries so). On another kind each binary says so in
// one line before its tests, so that a tolerance failure there reads as what it may be.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace {

// The flags of the first processor in /proc/cpuinfo (empty where there is none: not Linux/x86).
std::set<std::string> cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

void say_if_unmeasured_cpu() {
  const char* why = nullptr;
  std::string cap;
  if (const char* v = std::getenv("ONEDNN_MAX_CPU_ISA")) cap = v;
  const auto flags = cpu_flags();
  const bool avx2 = flags.count("avx2") && flags.count("fma");
  if (!cap.empty() && cap != "ALL" && cap.rfind("AVX2", 0) != 0 && cap.rfind("AVX512", 0) != 0 &&
      cap.rfind("AVX10", 0) != 0) {
    why = "ONEDNN_MAX_CPU_ISA caps oneDNN below AVX2";
  } else if (!flags.empty() && !avx2) {  // AVX-512 CPUs all have AVX2 and FMA too
    why = "this CPU has no AVX2 + FMA";
  }
  if (why == nullptr) return;
  std::fprintf(stderr,
               "cohort tests: %s; the numerical tolerances were measured with AVX2, AVX-512 and "
               "AVX-512 + AMX kernels only, so a tolerance failure here may be these kernels' "
               "rounding, not a bug\n",
               why);
}

}  // namespace

int main(int argc, char** argv) {
  say_if_unmeasured_cpu();
  doctest::Context context(argc, argv);
  return context.run();
}
