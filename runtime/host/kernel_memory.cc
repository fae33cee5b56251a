// The kernels' memory: large blocks kept per thread between calls (kernel_memory.h).
#include "runtime/host/kernel_memory.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>

namespace mmtune::host {
namespace {

// A block: the previous handler's allocation of kHeader + capacity bytes, handed out kHeader
// bytes in (which keeps the previous handler's alignment: Halide's default aligns to 64 bytes on
// x86, 32 on ARM), the 8 bytes before it holding kMagic in the top 16 bits and the capacity below.
// A pointer of the default handler holds there the address malloc returned, whose top 16 bits
// are 0 in user space: never kMagic.
constexpr std::size_t kHeader = 128;
constexpr uint64_t kMagic = uint64_t{0xA11C} << 48;
constexpr uint64_t kSizeMask = (uint64_t{1} << 48) - 1;

halide_malloc_t previous_malloc = nullptr;
halide_free_t previous_free = nullptr;

struct Kept {
  void* base = nullptr;
  std::size_t capacity = 0;
  halide_free_t free = nullptr;  // the handler it goes back to
};

// Set when this thread's kept blocks are freed at its exit: a block freed or asked for after that
// (by another thread_local's or a static's destructor) bypasses them.
thread_local bool thread_blocks_gone = false;

// This thread's kept blocks; freed (to the previous handler) when the thread exits.
struct ThreadBlocks {
  std::array<Kept, kCachedBlocks> blocks{};
  std::size_t bytes = 0;
  ~ThreadBlocks() {
    thread_blocks_gone = true;
    for (Kept& k : blocks) {
      if (k.base) k.free(nullptr, k.base);
    }
  }
};

ThreadBlocks& thread_blocks() {
  thread_local ThreadBlocks t;
  return t;
}

// This thread's scratch buffers, largest first (empty ones at the end); past the thread's
// exit (scratch_gone), nothing is kept or handed out.
thread_local bool scratch_gone = false;
struct ThreadScratch {
  std::array<Bytes, kScratchBuffers> buffers;
  ~ThreadScratch() { scratch_gone = true; }
};

std::array<Bytes, kScratchBuffers>& thread_scratch() {
  thread_local ThreadScratch scratch;
  return scratch.buffers;
}

uint64_t& word_before(void* ptr) {
  return *reinterpret_cast<uint64_t*>(static_cast<char*>(ptr) - 8);
}

// Capacities rounded up to 64 KiB at and above the kept size (so that calls of nearby sizes share
// blocks), to a multiple of 128 bytes below (Halide wants whole vectors).
std::size_t capacity_for(std::size_t size) {
  const std::size_t step = size >= kCachedBlockBytes ? kCachedBlockBytes : 128;
  return (size + step - 1) / step * step;
}

void* cached_malloc(void* user_context, std::size_t size, halide_malloc_t base_malloc,
                    halide_free_t base_free) {
  const std::size_t capacity = capacity_for(std::max<std::size_t>(size, 1));
  if (capacity >= kCachedBlockBytes && !thread_blocks_gone) {
    ThreadBlocks& t = thread_blocks();
    Kept* best = nullptr;
    for (Kept& k : t.blocks) {
      if (k.base && k.free == base_free && k.capacity >= capacity && k.capacity / 2 <= capacity &&
          (!best || k.capacity < best->capacity))
        best = &k;
    }
    if (best) {
      void* ptr = static_cast<char*>(best->base) + kHeader;
      t.bytes -= best->capacity;
      *best = Kept{};
      return ptr;
    }
  }
  void* base = base_malloc(user_context, kHeader + capacity);
  if (!base) return nullptr;
  void* ptr = static_cast<char*>(base) + kHeader;
  word_before(ptr) = kMagic | capacity;
  return ptr;
}

void cached_free(void* user_context, void* ptr, halide_free_t base_free) {
  if (!ptr) return;
  const uint64_t word = word_before(ptr);
  if ((word & ~kSizeMask) != kMagic) {
    base_free(user_context, ptr);  // allocated before these handlers were installed
    return;
  }
  void* base = static_cast<char*>(ptr) - kHeader;
  const std::size_t capacity = static_cast<std::size_t>(word & kSizeMask);
  if (capacity >= kCachedBlockBytes && !thread_blocks_gone) {
    ThreadBlocks& t = thread_blocks();
    // Kept in a free slot, or in place of a smaller kept block, within the thread's byte budget.
    Kept* slot = nullptr;
    for (Kept& k : t.blocks) {
      if (!k.base) {
        slot = &k;
        break;
      }
      if (k.capacity < capacity && (!slot || k.capacity < slot->capacity)) slot = &k;
    }
    if (slot && t.bytes - slot->capacity + capacity <= kCachedBytes) {
      if (slot->base) slot->free(user_context, slot->base);
      t.bytes = t.bytes - slot->capacity + capacity;
      *slot = Kept{base, capacity, base_free};
      return;
    }
  }
  base_free(user_context, base);
}

// The JIT's base allocation: aligned as Halide's default x86 one (64 bytes; kHeader keeps it).
void* aligned_malloc(void*, std::size_t size) {
  return ::operator new(size, std::align_val_t(64), std::nothrow);
}
void aligned_free(void*, void* ptr) { ::operator delete(ptr, std::align_val_t(64)); }

void* kernel_malloc(void* user_context, std::size_t size) {
  return cached_malloc(user_context, size, previous_malloc, previous_free);
}

void kernel_free(void* user_context, void* ptr) { cached_free(user_context, ptr, previous_free); }

}  // namespace

void* jit_kernel_malloc(std::size_t size) {
  return cached_malloc(nullptr, size, aligned_malloc, aligned_free);
}

void jit_kernel_free(void* ptr) { cached_free(nullptr, ptr, aligned_free); }

void install_kernel_memory(halide_malloc_t (*set_malloc)(halide_malloc_t),
                           halide_free_t (*set_free)(halide_free_t)) {
  static std::once_flag once;
  std::call_once(once, [&] {
    previous_malloc = set_malloc(kernel_malloc);
    previous_free = set_free(kernel_free);
  });
}

Bytes take_scratch(std::size_t size) {
  if (scratch_gone) return Bytes();
  std::array<Bytes, kScratchBuffers>& kept = thread_scratch();
  // The smallest that holds `size`, else the largest (index 0).
  std::size_t pick = 0;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (kept[i].capacity() >= size && kept[i].capacity() > 0) pick = i;
  }
  Bytes b = std::move(kept[pick]);
  kept[pick] = Bytes();
  std::stable_sort(kept.begin(), kept.end(),
                   [](const Bytes& x, const Bytes& y) { return x.capacity() > y.capacity(); });
  b.clear();
  return b;
}

void return_scratch(Bytes&& bytes) {
  if (bytes.capacity() == 0 || bytes.capacity() > kCachedBytes || scratch_gone) return;
  std::array<Bytes, kScratchBuffers>& kept = thread_scratch();
  // In place of the smallest kept (or an empty slot) when larger.
  Bytes& smallest = kept.back();
  if (bytes.capacity() <= smallest.capacity()) return;
  smallest = std::move(bytes);
  std::stable_sort(kept.begin(), kept.end(),
                   [](const Bytes& x, const Bytes& y) { return x.capacity() > y.capacity(); });
}

const Tensor& ScratchTensor::transpose_of(const void* data, DType t, int64_t rows, int64_t cols) {
  return_scratch(std::move(tensor_.bytes));
  const std::size_t bytes = static_cast<std::size_t>(rows * cols) * dtype_size(t);
  tensor_.dtype = t;
  tensor_.shape = {cols, rows};
  tensor_.bytes = take_scratch(bytes);
  tensor_.bytes.resize(bytes);  // default-initialized: every element is written below
  transpose_bytes(data, tensor_.bytes.data(), rows, cols, dtype_size(t));
  return tensor_;
}

std::size_t kept_blocks() {
  const ThreadBlocks& t = thread_blocks();
  return static_cast<std::size_t>(
      std::count_if(t.blocks.begin(), t.blocks.end(), [](const Kept& k) { return k.base; }));
}

std::size_t kept_bytes() { return thread_blocks().bytes; }

}  // namespace mmtune::host
