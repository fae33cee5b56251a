// The kernels' memory (runtime/host/kernel_memory.h): Halide's allocations through the installed
// handlers keep their large blocks per thread for the next call, within the thread's budget; small
// blocks and blocks of the previous handler go back at once; the per-call scratch is reused.
// Each test runs on a thread of its own, whose kept blocks start empty and are freed when it ends.
#include "runtime/host/kernel_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "HalideRuntime.h"

namespace mmtune::host {
namespace {

void on_own_thread(const std::function<void()>& body) {
  install_kernel_memory(halide_set_custom_malloc, halide_set_custom_free);
  std::thread t(body);
  t.join();
}

// A block Halide may use: aligned to its vectors, every byte writable.
void* use_block(std::size_t size) {
  void* p = halide_malloc(nullptr, size);
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << size;
  std::memset(p, 0x5A, size);
  return p;
}

TEST(KernelMemory, LargeBlocksAreKeptForTheThreadsNextCall) {
  on_own_thread([] {
    ASSERT_EQ(kept_blocks(), 0u);
    void* p = use_block(300000);
    halide_free(nullptr, p);
    EXPECT_EQ(kept_blocks(), 1u);
    EXPECT_EQ(kept_bytes(), 327680u);  // 300000 rounded up to 64 KiB
    // A nearby size takes it back (at most twice its size); a much smaller one does not.
    void* q = use_block(290000);
    EXPECT_EQ(q, p);
    EXPECT_EQ(kept_blocks(), 0u);
    halide_free(nullptr, q);
    void* small = use_block(70000);  // 128 KiB: the kept 320 KiB is more than twice that
    EXPECT_NE(small, p);
    EXPECT_EQ(kept_blocks(), 1u);
    halide_free(nullptr, small);
    EXPECT_EQ(kept_blocks(), 2u);
    // Blocks under kCachedBlockBytes are not kept.
    void* tiny = use_block(1000);
    halide_free(nullptr, tiny);
    EXPECT_EQ(kept_blocks(), 2u);
    EXPECT_EQ(kept_bytes(), 327680u + 131072u);
  });
}

TEST(KernelMemory, AThreadKeepsAtMostItsBudget) {
  on_own_thread([] {
    // kCachedBlocks blocks kept; a smaller one past them is freed, a larger one replaces the
    // smallest.
    std::vector<void*> blocks;
    for (std::size_t i = 0; i < kCachedBlocks; ++i) blocks.push_back(use_block((i + 2) << 16));
    void* smallest = use_block(std::size_t{1} << 16);
    void* largest = use_block(std::size_t{8} << 20);
    for (void* b : blocks) halide_free(nullptr, b);
    ASSERT_EQ(kept_blocks(), kCachedBlocks);
    const std::size_t before = kept_bytes();
    halide_free(nullptr, smallest);
    EXPECT_EQ(kept_blocks(), kCachedBlocks);
    EXPECT_EQ(kept_bytes(), before);
    halide_free(nullptr, largest);
    EXPECT_EQ(kept_blocks(), kCachedBlocks);
    EXPECT_EQ(kept_bytes(), before - (std::size_t{2} << 16) + (std::size_t{8} << 20));
    // The byte budget: a block that would take the thread past kCachedBytes goes back.
    void* huge = use_block(kCachedBytes - (std::size_t{4} << 20));
    halide_free(nullptr, huge);
    EXPECT_LE(kept_bytes(), kCachedBytes);
    EXPECT_EQ(kept_bytes(), before - (std::size_t{2} << 16) + (std::size_t{8} << 20));
  });
}

TEST(KernelMemory, BlocksOfThePreviousHandlerGoBackToIt) {
  on_own_thread([] {
    // Allocated by Halide's default handler (as before the handlers were installed), freed
    // through the installed one: handed to the default free (ASan checks the pairing).
    void* p = halide_default_malloc(nullptr, 300000);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0, 300000);
    halide_free(nullptr, p);
    EXPECT_EQ(kept_blocks(), 0u);
  });
}

TEST(KernelMemory, TheScratchIsReusedByTheThreadsNextCall) {
  on_own_thread([] {
    Bytes first = take_scratch(500000);
    EXPECT_EQ(first.capacity(), 0u);
    first.resize(500000);
    const uint8_t* large = first.data();
    return_scratch(std::move(first));
    Bytes again = take_scratch(400000);
    EXPECT_EQ(again.data(), large);
    EXPECT_TRUE(again.empty());
    EXPECT_GE(again.capacity(), 500000u);
    return_scratch(std::move(again));
    // Two kept: a request takes the smallest that holds it, else the largest.
    Bytes small(1000);
    const uint8_t* small_storage = small.data();
    return_scratch(std::move(small));
    Bytes s1 = take_scratch(800);
    EXPECT_EQ(s1.data(), small_storage);
    return_scratch(std::move(s1));
    Bytes s2 = take_scratch(2000);
    EXPECT_EQ(s2.data(), large);
    return_scratch(std::move(s2));
    Bytes s3 = take_scratch(900000);  // none holds it: the largest, to grow
    EXPECT_EQ(s3.data(), large);
    return_scratch(std::move(s3));
    // A third, smaller than both kept, is dropped.
    Bytes tiny(100);
    return_scratch(std::move(tiny));
    EXPECT_EQ(take_scratch(0).data(), small_storage);
    EXPECT_EQ(take_scratch(0).data(), large);
    EXPECT_EQ(take_scratch(0).capacity(), 0u);
  });
}

TEST(KernelMemory, AScratchTensorHoldsATransposeAndGivesItsBytesBack) {
  on_own_thread([] {
    Tensor x(DType::kFloat32, {37, 21});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i) - 100.5f;
    const uint8_t* storage = nullptr;
    {
      ScratchTensor t;
      const Tensor& xt = t.transpose_of(x);
      EXPECT_EQ(xt.bytes, transposed(x).bytes);
      EXPECT_EQ(xt.shape, (Shape{21, 37}));
      storage = xt.bytes.data();
    }
    EXPECT_EQ(take_scratch(37 * 21 * 4).data(), storage);
  });
}

}  // namespace
}  // namespace mmtune::host
