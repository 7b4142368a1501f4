// The benches' one quantile rule, so that their tables read alike.
#ifndef ACCELSCHED_BENCH_QUANTILE_H_
#define ACCELSCHED_BENCH_QUANTILE_H_

#include <algorithm>
#include <cstddef>
#include <vector>

namespace accelsched {

// The sample at rank floor(q x n) of `v` sorted (the largest for q = 1); 0
// for no samples.
inline double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

}  // namespace accelsched

#endif  // ACCELSCHED_BENCH_QUANTILE_H_
