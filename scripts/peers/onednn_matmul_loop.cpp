// The reference a user would write: oneDNN f32 matmul of a linear layer (activations row-major,
// the weights stored as the layer keeps them, W[n][k]: oneDNN's "ba", as truepeak's GEMM points
// take them), random inputs, a warm-up, then a plain timing loop around execute + wait. Prints
// the best and the mean rate.
// Build: g++ -O3 -std=c++17 onednn_matmul_loop.cpp -ldnnl
// Usage: onednn_matmul_loop [size=2048] [iterations=50]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <vector>

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 2048;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 50;
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const dnnl::memory::desc md({n, n}, dt::f32, tag::ab);
  const dnnl::memory::desc weights_md({n, n}, dt::f32, tag::ba);
  dnnl::memory a(md, engine), b(weights_md, engine), c(md, engine);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (dnnl::memory* m : {&a, &b}) {
    float* p = static_cast<float*>(m->get_data_handle());
    for (long i = 0; i < n * n; ++i) p[i] = dist(rng);
  }
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, weights_md, md), engine);
  const dnnl::matmul matmul(pd);
  const std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}};
  for (int i = 0; i < 3; ++i) {
    matmul.execute(stream, args);
    stream.wait();
  }
  double best_s = 1e30, total_s = 0;
  for (int i = 0; i < iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    matmul.execute(stream, args);
    stream.wait();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best_s = std::min(best_s, s);
    total_s += s;
  }
  // A spot check that the loop computed something real: one element against a naive sum.
  const float* pa = static_cast<const float*>(a.get_data_handle());
  const float* pb = static_cast<const float*>(b.get_data_handle());
  const float* pc = static_cast<const float*>(c.get_data_handle());
  double ref = 0;
  for (long k = 0; k < n; ++k) ref += double(pa[(n / 3) * n + k]) * pb[(n / 5) * n + k];
  if (std::abs(ref - pc[(n / 3) * n + n / 5]) > 1e-3 * n) {
    std::fprintf(stderr, "wrong result: %g vs %g\n", pc[(n / 3) * n + n / 5], ref);
    return 1;
  }
  const double flops = 2.0 * n * n * n;
  std::printf("impl %s\n", pd.impl_info_str());
  std::printf("best_flops_per_s %.6e\n", flops / best_s);
  std::printf("mean_flops_per_s %.6e\n", flops * iterations / total_s);
  return 0;
}
