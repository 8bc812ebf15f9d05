// The grid-stride sweep of the STREAM kernels, run on the host thread by thread: every element
// is visited exactly once, whatever the count and the grid, tails included.
#include "kernels/cuda/stream_sweep.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace truepeak::cuda_detail {
namespace {

TEST(StreamSweep, EveryElementOnceForAnyCountAndGrid) {
  for (const std::int64_t count : {1, 2, 3, 4, 5, 7, 16, 63, 64, 65, 255, 1000, 4097}) {
    for (const std::int64_t threads : {1, 2, 3, 4, 5, 8, 13, 64, 100, 256, 5000}) {
      std::vector<int> visits(static_cast<std::size_t>(count), 0);
      std::vector<std::int64_t> out(static_cast<std::size_t>(count), -1);
      for (std::int64_t first = 0; first < threads; ++first)
        stream_sweep(
            first, threads, count, [&](std::int64_t i) { return 10 * i + 1; },
            [&](std::int64_t i, std::int64_t value) {
              ++visits[static_cast<std::size_t>(i)];
              out[static_cast<std::size_t>(i)] = value;
            });
      for (std::int64_t i = 0; i < count; ++i) {
        ASSERT_EQ(visits[static_cast<std::size_t>(i)], 1)
            << "count " << count << " threads " << threads << " element " << i;
        ASSERT_EQ(out[static_cast<std::size_t>(i)], 10 * i + 1);
      }
    }
  }
}

TEST(StreamSweep, EachThreadLoadsSeveralBeforeItStores) {
  // One thread, stride 1, 6 elements: loads 0-3, stores 0-3, then loads 4-5, stores 4-5.
  std::vector<char> events;
  stream_sweep(
      0, 1, 6,
      [&](std::int64_t i) {
        events.push_back(static_cast<char>('0' + i));
        return i;
      },
      [&](std::int64_t i, std::int64_t) { events.push_back(static_cast<char>('a' + i)); });
  EXPECT_EQ(std::string(events.begin(), events.end()), "0123abcd45ef");
  static_assert(kStreamUnroll == 4, "the expected order above assumes four loads in flight");
}

}  // namespace
}  // namespace truepeak::cuda_detail
