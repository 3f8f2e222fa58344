// Batch norm in training, forward + backward (dx, dgamma, dbeta), on the host at each shape of
// bench/norm_shapes.txt; bench/norm_compare.sh runs it next to bench/norm_bench_torch.py, which
// times the same in PyTorch. Prints "path cohort-host" then one line per shape: name, median ms
// (bench/median_time.hpp).
//
//   norm_bench [--threads N]      (default: OMP_NUM_THREADS as the host sees it)
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "cohort/core/layer_ops.hpp"
#include "cohort/core/tensor.hpp"
#include "cohort/devices.hpp"
#include "median_time.hpp"

using namespace cohort;

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; i += 2)
    if (std::strcmp(argv[i], "--threads") == 0) omp_set_num_threads(std::atoi(argv[i + 1]));
  std::ifstream in(COHORT_BENCH_DIR "/norm_shapes.txt");
  if (!in) {
    std::fprintf(stderr, "norm_bench: cannot read %s\n", COHORT_BENCH_DIR "/norm_shapes.txt");
    return 2;
  }
  std::printf("path cohort-host\n");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string name;
    std::int64_t n, c, h, w;
    ls >> name >> n >> c >> h >> w;
    Device& d = host_device();
    const Shape xs{n, c, h, w};
    const Tensor x = Tensor::uniform(xs, -1, 1, 1, d), dy = Tensor::uniform(xs, -1, 1, 2, d);
    const Tensor g = Tensor::uniform({c}, 0.5f, 1.5f, 3, d), b = Tensor::zeros({c}, DType::f32, d);
    Tensor rm = Tensor::zeros({c}, DType::f32, d), rv = Tensor::full({c}, 1.0, DType::f32, d);
    Tensor y = Tensor::zeros(xs, DType::f32, d), dx = Tensor::zeros(xs, DType::f32, d);
    Tensor sm = Tensor::zeros({c}, DType::f32, d), si = Tensor::zeros({c}, DType::f32, d);
    Tensor dg = Tensor::zeros({c}, DType::f32, d), db = Tensor::zeros({c}, DType::f32, d);
    const double ms = median_ms(
        [&] {
          ops::batch_norm_forward(x, &g, &b, &rm, &rv, y, sm, si, 1e-5f, 0.1f, true);
          ops::batch_norm_backward(x, dy, &g, sm, si, &dx, &dg, &db, true);
        },
        0.3);
    std::printf("%s %.4f\n", name.c_str(), ms);
  }
  return 0;
}
