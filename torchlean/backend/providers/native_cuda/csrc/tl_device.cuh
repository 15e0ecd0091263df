// Portability layer for torchlean's own kernels.
//
// The kernels in kernels.cuh are plain CUDA C++.  This header supplies what they need from the
// toolkit (dim3, intrinsics, dynamic shared memory, launches).  With TORCHLEAN_EMULATE defined
// the same kernel sources are compiled by the host C++ compiler and run on the CPU by the
// cooperative-thread emulator in emu/tl_emulator.h, so that CI machines without a GPU execute
// the real kernel code (warp shuffles, barriers, tiling) against float64 oracles.
#pragma once

#include <cmath>
#include <cstdint>

#ifdef TORCHLEAN_EMULATE

#include "emu/tl_emulator.h"

#define TL_GLOBAL inline
#define TL_DEVICE inline
#define TL_HOST_DEVICE inline
#define TL_DYNAMIC_SMEM(T, name) T* name = reinterpret_cast<T*>(::tl_emu::shared_memory())
#define TL_LAUNCH(kernel, grid, block, smem_bytes, stream, ...)                       \
  ::tl_emu::launch(reinterpret_cast<const void*>(kernel), (grid), (block), (smem_bytes), \
                   [&]() { kernel(__VA_ARGS__); })
#define TL_UNROLL

namespace tl {
// The emulated device's opt-in limit (227 KiB, an H100/H200's, unless a test sets another with
// tl_emu::set_shared_memory_limit); launches above it fail as on a GPU.
inline int max_dynamic_smem_optin(int /*device*/) { return ::tl_emu::shared_memory_limit(); }
// As on a GPU: above 48 KiB a kernel's launches need this opt-in (the emulator refuses them
// without it, as cudaLaunchKernel does); as the CUDA build, to the device's limit.
template <class Kernel>
inline void allow_dynamic_smem(Kernel kernel, int bytes, int device) {
  if (bytes <= 48 * 1024) return;
  ::tl_emu::opt_in_shared_memory(reinterpret_cast<const void*>(kernel),
                                 static_cast<std::size_t>(max_dynamic_smem_optin(device)));
}
inline void check_launch(const char* /*what*/) {}
}  // namespace tl

#else  // real CUDA build

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#define TL_GLOBAL __global__
#define TL_DEVICE __device__ __forceinline__
#define TL_HOST_DEVICE __host__ __device__ __forceinline__
#define TL_DYNAMIC_SMEM(T, name)                              \
  extern __shared__ __align__(16) unsigned char tl_smem_raw[]; \
  T* name = reinterpret_cast<T*>(tl_smem_raw)
#define TL_LAUNCH(kernel, grid, block, smem_bytes, stream, ...) \
  kernel<<<(grid), (block), (smem_bytes), (stream)>>>(__VA_ARGS__)
// Unroll the next loop (compile-time trip counts: keeps per-row/per-column arrays in registers).
#define TL_UNROLL _Pragma("unroll")

namespace tl {
// A CUDA runtime call failed.  A std::runtime_error rather than c10::Error (TORCH_CHECK): it
// captures no C++ backtrace, and the bindings raise it as RuntimeError with this message (see
// torchlean_native::Refusal in native_ops.h for why).
[[noreturn]] inline void fail(const std::string& what) {
  throw std::runtime_error("torchlean_native_ext: " + what);
}

// A CUDA runtime call failed with `err`: clear the runtime's last error (so that a later,
// unrelated launch check does not report it as its own; review137 F4), then fail.
[[noreturn]] inline void fail_call(const std::string& what, cudaError_t err) {
  (void)cudaGetLastError();
  fail(what + cudaGetErrorString(err));
}

// Largest dynamic shared memory a block may opt into on `device` (bytes).
inline int max_dynamic_smem_optin(int device) {
  int value = 0;
  const cudaError_t err =
      cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (err != cudaSuccess) fail_call("cannot query shared memory limit: ", err);
  return value;
}
// Kernels that need more than the default 48 KiB of dynamic shared memory must opt in.  The
// attribute is a per-function (and device) cap, not a reservation: it is raised to the device's
// limit, the same value from every thread, so that concurrent launches of one kernel with
// different sizes cannot lower it under one another (review137 F3).  Callers check that
// `bytes` fits that limit first (check_smem).
template <class Kernel>
inline void allow_dynamic_smem(Kernel kernel, int bytes, int device) {
  if (bytes <= 48 * 1024) return;
  // dynamic plus the kernel's static __shared__ must fit the opt-in limit (ours have no static
  // shared memory today; a kernel that gains some keeps a valid cap: review145 F10)
  cudaFuncAttributes attributes{};
  const cudaError_t query = cudaFuncGetAttributes(&attributes, kernel);
  if (query != cudaSuccess) fail_call("cannot read a kernel's attributes: ", query);
  const int limit = max_dynamic_smem_optin(device) - static_cast<int>(attributes.sharedSizeBytes);
  const cudaError_t err =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, limit);
  if (err != cudaSuccess) {
    fail_call("cannot allow " + std::to_string(limit) + " bytes of shared memory: ", err);
  }
}
inline void check_launch(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    fail(std::string(what) + " kernel launch failed: " + cudaGetErrorString(err));
  }
}
}  // namespace tl

#endif
