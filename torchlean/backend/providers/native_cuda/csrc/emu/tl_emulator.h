// A small, deterministic CUDA execution emulator for torchlean's own kernels.
//
// Every CUDA thread of a block runs as a cooperative fiber (ucontext) on the calling host
// thread.  Fibers run until they reach a synchronisation point (__syncthreads, __syncthreads_or
// or a warp collective) and the scheduler releases a barrier only when every participant has
// arrived, so barriers, votes, shuffles and ballots have their CUDA meaning.  The emulator also
// reports what the hardware leaves undefined:
//   * a warp collective that not all 32 lanes of the warp reach (divergent shuffle),
//   * a block whose threads can make no progress (deadlock, e.g. a divergent __syncthreads),
//   * a block whose threads meet at different barriers (__syncthreads_or and __syncthreads),
//   * a block size that is not a whole number of warps,
//   * a grid with an empty dimension (a GPU refuses it: "invalid configuration argument").
// The schedule seed (set_schedule_seed) permutes the order in which runnable fibers and blocks
// run; a kernel whose results depend on that order has a race.
//
// Only what torchlean's kernels use is provided.  Included by ../tl_device.cuh when
// TORCHLEAN_EMULATE is defined; never part of the CUDA build.
#pragma once

#include <ucontext.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1)
      : x(x_), y(y_), z(z_) {}
};
using cudaStream_t = void*;

namespace tl_emu {

enum class State { Runnable, BlockBarrier, WarpBarrier, Done };

struct Fiber {
  ucontext_t context{};
  dim3 thread_idx;
  unsigned int linear = 0;
  State state = State::Runnable;
  bool at_vote = false;  // at a BlockBarrier: inside __syncthreads_or rather than __syncthreads
};

struct Block {
  dim3 grid_dim;
  dim3 block_dim;
  dim3 block_idx;
  std::vector<Fiber> fibers;
  std::vector<std::unique_ptr<char[]>> stacks;
  std::vector<unsigned char> shared;
  std::vector<std::uint64_t> slots;  // one exchange slot per thread (warp collectives)
  ucontext_t scheduler{};
  Fiber* current = nullptr;
  const std::function<void()>* body = nullptr;
  std::exception_ptr failure;  // first exception thrown by device code
};

constexpr std::size_t kStackBytes = 256 * 1024;
constexpr unsigned int kFullMask = 0xffffffffu;

inline Block*& active_block() {
  static thread_local Block* block = nullptr;
  return block;
}

inline std::uint64_t& schedule_seed() {
  static thread_local std::uint64_t seed = 0;
  return seed;
}

// 0 runs fibers and blocks in index order; any other value permutes both, per pass.
inline void set_schedule_seed(std::uint64_t seed) { schedule_seed() = seed; }

constexpr int kDefaultSharedMemoryLimit = 227 * 1024;  // an H100/H200's opt-in limit per block

inline int& shared_memory_limit_slot() {
  static int limit = kDefaultSharedMemoryLimit;
  return limit;
}

// The dynamic shared memory a block may use on the emulated device (bytes).
inline int shared_memory_limit() { return shared_memory_limit_slot(); }

// Emulate a device with `bytes` of dynamic shared memory per block (0: the default, 227 KiB), so
// that tests exercise the tile choices of smaller GPUs.  Returns the previous limit.
inline int set_shared_memory_limit(int bytes) {
  if (bytes < 0) throw std::invalid_argument("tl_emu: a shared memory limit must be >= 0 bytes");
  const int previous = shared_memory_limit_slot();
  shared_memory_limit_slot() = bytes == 0 ? kDefaultSharedMemoryLimit : bytes;
  return previous;
}

// Dynamic shared memory a launch may use without opting in (cudaFuncSetAttribute).
constexpr std::size_t kDefaultDynamicSharedMemory = 48 * 1024;

struct SharedMemoryOptIns {
  std::mutex mutex;
  std::map<const void*, std::size_t> bytes;  // kernel -> cudaFuncAttributeMaxDynamicSharedMemorySize
};

inline SharedMemoryOptIns& shared_memory_opt_ins() {
  static SharedMemoryOptIns opt_ins;
  return opt_ins;
}

// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes): a GPU refuses
// more than its opt-in limit; the attribute then holds for every later launch of that kernel.
inline void opt_in_shared_memory(const void* kernel, std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(shared_memory_limit())) {
    throw std::runtime_error("tl_emu: cannot reserve " + std::to_string(bytes) +
                             " bytes of shared memory; the emulated device allows " +
                             std::to_string(shared_memory_limit()));
  }
  SharedMemoryOptIns& opt_ins = shared_memory_opt_ins();
  std::lock_guard<std::mutex> lock(opt_ins.mutex);
  opt_ins.bytes[kernel] = bytes;
}

// Undo opt_in_shared_memory (test seam: a kernel as it is before its first opt-in).
inline void forget_shared_memory_opt_in(const void* kernel) {
  SharedMemoryOptIns& opt_ins = shared_memory_opt_ins();
  std::lock_guard<std::mutex> lock(opt_ins.mutex);
  opt_ins.bytes.erase(kernel);
}

// The bytes a launch of `kernel` may request: 48 KiB, or what it opted into.
inline std::size_t shared_memory_allowed(const void* kernel) {
  SharedMemoryOptIns& opt_ins = shared_memory_opt_ins();
  std::lock_guard<std::mutex> lock(opt_ins.mutex);
  const auto found = opt_ins.bytes.find(kernel);
  return found == opt_ins.bytes.end() ? kDefaultDynamicSharedMemory
                                      : std::max(found->second, kDefaultDynamicSharedMemory);
}

inline Block& require_block() {
  Block* block = active_block();
  if (block == nullptr || block->current == nullptr) {
    throw std::logic_error("tl_emu: device code ran outside an emulated launch");
  }
  return *block;
}

inline unsigned char* shared_memory() { return require_block().shared.data(); }

inline void yield_at(State state) {
  Block& block = require_block();
  Fiber* fiber = block.current;
  fiber->state = state;
  swapcontext(&fiber->context, &block.scheduler);
}

inline void fiber_entry() {
  Block& block = require_block();
  try {
    (*block.body)();
  } catch (...) {
    if (!block.failure) block.failure = std::current_exception();
  }
  block.current->state = State::Done;
  // Returning resumes uc_link, the scheduler.
}

inline void require_full_mask(unsigned int mask, const char* what) {
  if (mask != kFullMask) {
    throw std::logic_error(std::string("tl_emu: ") + what +
                           " is only emulated with the full warp mask");
  }
}

template <class T>
inline std::uint64_t to_bits(T value) {
  static_assert(sizeof(T) <= sizeof(std::uint64_t) && std::is_trivially_copyable<T>::value,
                "warp collectives exchange at most 64-bit trivially copyable values");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

template <class T>
inline T from_bits(std::uint64_t bits) {
  T value;
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

// Publish `bits` for this lane, wait for the warp, read lane `source`'s slot, wait again.
inline std::uint64_t exchange(std::uint64_t bits, unsigned int source) {
  Block& block = require_block();
  const unsigned int linear = block.current->linear;
  const unsigned int base = linear - (linear % 32u);
  block.slots[linear] = bits;
  yield_at(State::WarpBarrier);
  const std::uint64_t result = require_block().slots[base + (source & 31u)];
  yield_at(State::WarpBarrier);
  return result;
}

inline unsigned int lane_id() { return require_block().current->linear % 32u; }

inline void release_barriers(Block& block) {
  const std::size_t n = block.fibers.size();
  bool released = false;
  for (std::size_t base = 0; base < n; base += 32) {
    std::size_t waiting = 0;
    std::size_t done = 0;
    for (std::size_t lane = 0; lane < 32; ++lane) {
      const State state = block.fibers[base + lane].state;
      waiting += state == State::WarpBarrier ? 1 : 0;
      done += state == State::Done ? 1 : 0;
    }
    if (waiting == 32) {
      for (std::size_t lane = 0; lane < 32; ++lane) {
        block.fibers[base + lane].state = State::Runnable;
      }
      released = true;
    } else if (waiting > 0) {
      throw std::logic_error("tl_emu: divergent warp collective in block (" +
                             std::to_string(block.block_idx.x) + ", " +
                             std::to_string(block.block_idx.y) + "), warp " +
                             std::to_string(base / 32) + ": " + std::to_string(waiting) +
                             " of 32 lanes arrived, " + std::to_string(done) + " exited");
    }
  }
  if (released) return;
  std::size_t at_barrier = 0;
  std::size_t live = 0;
  for (const Fiber& fiber : block.fibers) {
    live += fiber.state != State::Done ? 1 : 0;
    at_barrier += fiber.state == State::BlockBarrier ? 1 : 0;
  }
  if (live > 0 && at_barrier == live) {
    std::size_t votes = 0;
    for (const Fiber& fiber : block.fibers) {
      votes += fiber.state == State::BlockBarrier && fiber.at_vote ? 1 : 0;
    }
    if (votes != 0 && votes != at_barrier) {
      // undefined on a GPU: the block's threads must all reach the same barrier
      throw std::logic_error("tl_emu: divergent block barriers in block (" +
                             std::to_string(block.block_idx.x) + ", " +
                             std::to_string(block.block_idx.y) + "): " + std::to_string(votes) +
                             " threads at __syncthreads_or, " + std::to_string(at_barrier - votes) +
                             " at __syncthreads");
    }
    for (Fiber& fiber : block.fibers) {
      if (fiber.state == State::BlockBarrier) fiber.state = State::Runnable;
    }
    return;
  }
  throw std::logic_error("tl_emu: deadlock in block (" + std::to_string(block.block_idx.x) +
                         ", " + std::to_string(block.block_idx.y) + ")");
}

inline void run_block(Block& block, std::mt19937_64* rng) {
  std::vector<std::size_t> order(block.fibers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  for (std::size_t i = 0; i < block.fibers.size(); ++i) {
    Fiber& fiber = block.fibers[i];
    fiber.state = State::Runnable;
    getcontext(&fiber.context);
    fiber.context.uc_stack.ss_sp = block.stacks[i].get();
    fiber.context.uc_stack.ss_size = kStackBytes;
    fiber.context.uc_link = &block.scheduler;
    makecontext(&fiber.context, &fiber_entry, 0);
  }
  while (true) {
    if (rng != nullptr) std::shuffle(order.begin(), order.end(), *rng);
    for (const std::size_t i : order) {
      Fiber& fiber = block.fibers[i];
      if (fiber.state != State::Runnable) continue;
      block.current = &fiber;
      swapcontext(&block.scheduler, &fiber.context);
      if (block.failure) std::rethrow_exception(block.failure);
    }
    block.current = nullptr;
    const bool all_done = std::all_of(block.fibers.begin(), block.fibers.end(),
                                      [](const Fiber& f) { return f.state == State::Done; });
    if (all_done) return;
    release_barriers(block);
  }
}

// The most dynamic shared memory one launch requested (take_largest_shared_memory).
inline std::size_t& largest_shared_memory_slot() {
  static std::size_t bytes = 0;
  return bytes;
}
// The most dynamic shared memory (bytes) one launch requested since the last call; resets it, so
// a test sees which tile a kernel ran on.
inline std::int64_t take_largest_shared_memory() {
  const std::size_t bytes = largest_shared_memory_slot();
  largest_shared_memory_slot() = 0;
  return static_cast<std::int64_t>(bytes);
}

// Run `body` (a launch of `kernel`) once per thread of a (grid, block) launch with `shared_bytes`
// of dynamic shared memory.  Blocks run one after another; the calling thread's exceptions
// propagate.
inline void launch(const void* kernel, dim3 grid, dim3 block_dim, std::size_t shared_bytes,
                   const std::function<void()>& body) {
  const std::size_t threads =
      static_cast<std::size_t>(block_dim.x) * block_dim.y * block_dim.z;
  if (threads == 0 || threads > 1024 || threads % 32 != 0) {
    throw std::invalid_argument("tl_emu: block size " + std::to_string(threads) +
                                " is not a whole number of warps in 32..1024");
  }
  if (shared_bytes > static_cast<std::size_t>(shared_memory_limit())) {
    // a GPU refuses such a launch (cudaErrorInvalidValue)
    throw std::runtime_error("tl_emu: the launch requests " + std::to_string(shared_bytes) +
                             " bytes of dynamic shared memory; the emulated device allows " +
                             std::to_string(shared_memory_limit()));
  }
  if (shared_bytes > shared_memory_allowed(kernel)) {
    // a GPU refuses it too (cudaErrorInvalidValue): above 48 KiB a kernel must opt in first
    throw std::runtime_error("tl_emu: invalid argument: the launch requests " +
                             std::to_string(shared_bytes) +
                             " bytes of dynamic shared memory, more than the kernel opted into "
                             "with cudaFuncSetAttribute (" +
                             std::to_string(shared_memory_allowed(kernel)) + " bytes)");
  }
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) {
    // a GPU refuses an empty grid (cudaErrorInvalidConfiguration, "invalid configuration
    // argument"): callers must return before launching when there is no work
    throw std::runtime_error("tl_emu: invalid configuration argument: grid (" +
                             std::to_string(grid.x) + ", " + std::to_string(grid.y) + ", " +
                             std::to_string(grid.z) + ") has an empty dimension");
  }
  if (active_block() != nullptr) {
    throw std::logic_error("tl_emu: nested launches are not supported");
  }
  largest_shared_memory_slot() = std::max(largest_shared_memory_slot(), shared_bytes);
  Block block;
  block.grid_dim = grid;
  block.block_dim = block_dim;
  block.body = &body;
  block.fibers.resize(threads);
  block.slots.assign(threads, 0);
  block.stacks.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) {
    block.stacks.emplace_back(new char[kStackBytes]);
    Fiber& fiber = block.fibers[i];
    fiber.linear = static_cast<unsigned int>(i);
    fiber.thread_idx = dim3(static_cast<unsigned int>(i % block_dim.x),
                            static_cast<unsigned int>((i / block_dim.x) % block_dim.y),
                            static_cast<unsigned int>(i / (block_dim.x * block_dim.y)));
  }
  std::vector<dim3> blocks;
  for (unsigned int z = 0; z < grid.z; ++z)
    for (unsigned int y = 0; y < grid.y; ++y)
      for (unsigned int x = 0; x < grid.x; ++x) blocks.emplace_back(x, y, z);
  std::unique_ptr<std::mt19937_64> rng;
  if (schedule_seed() != 0) {
    rng = std::make_unique<std::mt19937_64>(schedule_seed());
    std::shuffle(blocks.begin(), blocks.end(), *rng);
  }
  struct Reset {
    ~Reset() { active_block() = nullptr; }
  } reset;
  active_block() = &block;
  for (const dim3& index : blocks) {
    block.block_idx = index;
    // Fresh, poisoned shared memory per block: reading what was never written shows as NaN
    // patterns rather than as the previous block's data.
    block.shared.assign(shared_bytes, 0xff);
    run_block(block, rng.get());
  }
}

}  // namespace tl_emu

// CUDA built-in variables and intrinsics used by the kernels.
#define threadIdx (::tl_emu::require_block().current->thread_idx)
#define blockIdx (::tl_emu::require_block().block_idx)
#define blockDim (::tl_emu::require_block().block_dim)
#define gridDim (::tl_emu::require_block().grid_dim)

inline void __syncthreads() {
  ::tl_emu::require_block().current->at_vote = false;
  ::tl_emu::yield_at(::tl_emu::State::BlockBarrier);
}

// A block barrier that also returns whether `predicate` is nonzero for any thread of the block
// that has not exited (an exited thread's slot still holds what it last exchanged).
inline int __syncthreads_or(int predicate) {
  ::tl_emu::Block& block = ::tl_emu::require_block();
  block.slots[block.current->linear] = predicate != 0 ? 1u : 0u;
  block.current->at_vote = true;  // both of its barriers (a thread at __syncthreads is divergent)
  ::tl_emu::yield_at(::tl_emu::State::BlockBarrier);
  ::tl_emu::Block& arrived = ::tl_emu::require_block();
  int any = 0;
  for (std::size_t i = 0; i < arrived.fibers.size(); ++i) {
    if (arrived.fibers[i].state != ::tl_emu::State::Done) {
      any |= static_cast<int>(arrived.slots[i] & 1u);
    }
  }
  // a second barrier: no thread may overwrite its slot (a later vote or collective) before every
  // thread has read them all
  ::tl_emu::yield_at(::tl_emu::State::BlockBarrier);
  return any;
}

template <class T>
inline T __shfl_sync(unsigned int mask, T value, int source) {
  ::tl_emu::require_full_mask(mask, "__shfl_sync");
  return ::tl_emu::from_bits<T>(
      ::tl_emu::exchange(::tl_emu::to_bits(value), static_cast<unsigned int>(source)));
}

template <class T>
inline T __shfl_xor_sync(unsigned int mask, T value, int lane_mask) {
  ::tl_emu::require_full_mask(mask, "__shfl_xor_sync");
  const unsigned int source = ::tl_emu::lane_id() ^ static_cast<unsigned int>(lane_mask);
  return ::tl_emu::from_bits<T>(::tl_emu::exchange(::tl_emu::to_bits(value), source));
}

inline unsigned int __ballot_sync(unsigned int mask, int predicate) {
  ::tl_emu::require_full_mask(mask, "__ballot_sync");
  ::tl_emu::Block& block = ::tl_emu::require_block();
  const unsigned int linear = block.current->linear;
  const unsigned int base = linear - (linear % 32u);
  block.slots[linear] = predicate != 0 ? 1u : 0u;
  ::tl_emu::yield_at(::tl_emu::State::WarpBarrier);
  unsigned int bits = 0;
  for (unsigned int lane = 0; lane < 32; ++lane) {
    bits |= static_cast<unsigned int>(::tl_emu::require_block().slots[base + lane] & 1u) << lane;
  }
  ::tl_emu::yield_at(::tl_emu::State::WarpBarrier);
  return bits;
}
