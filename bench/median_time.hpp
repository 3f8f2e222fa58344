// The timing method bench/layers_bench.cpp and bench/attention_bench.cpp share (their Python
// peers, layers_bench_torch.py and attention_bench_torch.py, measure the same way): 3 warm-up calls
// of `step`, then calls for at least `min_time` seconds and at least 5 of them; the median call, in
// milliseconds. On a GPU `step` must end with a synchronisation.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

inline double median_ms(const std::function<void()>& step, double min_time) {
  for (int i = 0; i < 3; ++i) step();
  std::vector<double> times;
  const auto start = std::chrono::steady_clock::now();
  auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  while (since(start) < min_time || times.size() < 5) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    times.push_back(since(t0) * 1e3);
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}
