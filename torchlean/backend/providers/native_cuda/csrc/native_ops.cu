// torchlean_native_ext: the native-cuda provider's entry points.
//
// Provenance: every native_cuda capsule names this file
// (`torchlean/backend/providers/native_cuda/csrc/native_ops.cu`) and `<op_label>_forward`
// defined below; native_cuda.direct_attention names `direct_attention_forward`.
//
// torchlean's own kernels (kernels.cuh) implement direct attention, hard-masked softmax,
// selective scan, smooth max pooling and the seeded sources.  The other ops compose ATen calls
// (cuBLAS, cuDNN, cuFFT underneath), so their reduction order is implementation-defined.
//
// Every entry point first validates its arguments (device, dtype, contiguity, ranks, sizes,
// overflow-checked element counts, op-specific domains) with TL_CHECK_VALUE / TL_CHECK_INDEX
// (native_ops.h), which the bindings raise as Python exceptions; nothing aborts the process.
// Results are fresh contiguous buffers that alias no input.
//
// Built with TORCHLEAN_EMULATE (emu/native_ops_emu.cpp), the same file runs on the CPU: tensors
// live on the CPU and the own kernels run in the cooperative-thread emulator.
#include "native_ops.h"

#include <ATen/Dispatch.h>
#include <c10/core/DeviceGuard.h>
#ifndef TORCHLEAN_EMULATE
#include <c10/cuda/CUDAStream.h>
#endif
#include <c10/util/safe_numerics.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>

#include "kernels.cuh"

namespace torchlean_native {
namespace {

#ifdef TORCHLEAN_EMULATE
constexpr c10::DeviceType kDeviceType = c10::DeviceType::CPU;
constexpr const char* kDeviceName = "cpu";
// The emulated device has one stream, handle 0.
inline cudaStream_t current_stream(c10::Device /*device*/, std::int64_t& handle) {
  handle = 0;
  return nullptr;
}
inline int device_index_of(const at::Tensor& /*t*/) { return 0; }
#else
constexpr c10::DeviceType kDeviceType = c10::DeviceType::CUDA;
constexpr const char* kDeviceName = "cuda";
// torch's current stream on `device` and its raw handle (torch.cuda.current_stream().cuda_stream).
inline cudaStream_t current_stream(c10::Device device, std::int64_t& handle) {
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device.index()).stream();
  handle = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(stream));
  return stream;
}
inline int device_index_of(const at::Tensor& t) { return static_cast<int>(t.device().index()); }
#endif

// The most blocks a launch of one thread per work item takes (its kernel's grid-stride loop covers
// the rest): tl::kMaxGridBlocks, or fewer under set_max_element_blocks.
std::atomic<std::int64_t> max_element_blocks{tl::kMaxGridBlocks};

inline unsigned int element_blocks(std::int64_t n) {
  return tl::element_blocks(n, max_element_blocks.load());
}

// The stream an own kernel of `op` launches on: torch's current stream of `device`, on which
// ATen allocated, filled and will free the buffers the kernel touches.  `handle` (the entry
// point's last argument) must name that stream: a handle of another stream, another device's or
// a stale one is refused here, before any launch, rather than cast and launched on (review137 F1).
cudaStream_t launch_stream(const char* op, std::int64_t handle, c10::Device device) {
  std::int64_t current = 0;
  const cudaStream_t stream = current_stream(device, current);
  TL_CHECK_VALUE(handle == current, "torchlean_native_ext.", op, ": stream handle ", handle,
                 " is not the current stream of ", device, " (handle ", current,
                 "); pass torch.cuda.current_stream(device).cuda_stream");
  return stream;
}

using at::IntArrayRef;

std::string shape_text(IntArrayRef sizes) {
  std::ostringstream text;
  text << "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) text << (i ? ", " : "") << sizes[i];
  text << "]";
  return text.str();
}

// Product of `sizes`, refusing negative extents and int64 overflow.
std::int64_t checked_numel(const char* op, const char* what, IntArrayRef sizes) {
  std::int64_t total = 1;
  for (const std::int64_t size : sizes) {
    TL_CHECK_VALUE(size >= 0, "torchlean_native_ext.", op, ": ", what, " has a negative extent ",
                   shape_text(sizes));
    TL_CHECK_VALUE(!c10::mul_overflows(total, size, &total), "torchlean_native_ext.", op, ": ",
                   what, " element count overflows int64 for shape ", shape_text(sizes));
  }
  return total;
}

std::int64_t checked_mul(const char* op, const char* what, std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  TL_CHECK_VALUE(!c10::mul_overflows(a, b, &out), "torchlean_native_ext.", op, ": ", what,
                 " overflows int64 (", a, " * ", b, ")");
  return out;
}

std::int64_t checked_add(const char* op, const char* what, std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  TL_CHECK_VALUE(!c10::add_overflows(a, b, &out), "torchlean_native_ext.", op, ": ", what,
                 " overflows int64 (", a, " + ", b, ")");
  return out;
}

// checked_numel for a result this entry point allocates: its contiguous strides (products of the
// trailing extents, an empty extent counting as 1) and its size in bytes fit int64 too, which
// torch would otherwise refuse with its own error.
std::int64_t checked_result_shape(const char* op, const char* what, IntArrayRef sizes,
                                  std::int64_t element_size) {
  const std::int64_t numel = checked_numel(op, what, sizes);
  std::int64_t stride = 1;
  for (std::size_t i = sizes.size(); i-- > 1;) {
    TL_CHECK_VALUE(!c10::mul_overflows(stride, std::max<std::int64_t>(sizes[i], 1), &stride),
                   "torchlean_native_ext.", op, ": ", what, " ", shape_text(sizes),
                   " has strides beyond int64");
  }
  std::int64_t bytes = 0;
  TL_CHECK_VALUE(!c10::mul_overflows(numel, element_size, &bytes), "torchlean_native_ext.", op,
                 ": ", what, " ", shape_text(sizes), " needs more than int64 bytes (",
                 element_size, " per element)");
  return numel;
}

// Defined, on this build's device, contiguous, with a representable element count.
void check_buffer(const char* op, const char* name, const at::Tensor& t) {
  TL_CHECK_VALUE(t.defined(), "torchlean_native_ext.", op, ": ", name, " is missing");
  TL_CHECK_VALUE(t.device().type() == kDeviceType, "torchlean_native_ext.", op, ": ", name,
                 " is on device ", t.device().str(), "; this build accepts ", kDeviceName,
                 " tensors");
  TL_CHECK_VALUE(t.is_contiguous(), "torchlean_native_ext.", op, ": ", name, " of shape ",
                 shape_text(t.sizes()),
                 " is not contiguous (flat row-major buffers are required)");
  checked_numel(op, name, t.sizes());
}

// A float32/float64 buffer.
void check_float(const char* op, const char* name, const at::Tensor& t) {
  check_buffer(op, name, t);
  const at::ScalarType dtype = t.scalar_type();
  TL_CHECK_VALUE(dtype == at::kFloat || dtype == at::kDouble, "torchlean_native_ext.", op, ": ",
                 name, " has dtype ", dtype, "; accepted: float32, float64");
}

// A float buffer with the dtype and device of `ref`.
void check_like(const char* op, const char* name, const at::Tensor& t, const char* ref_name,
                const at::Tensor& ref) {
  check_float(op, name, t);
  TL_CHECK_VALUE(t.scalar_type() == ref.scalar_type(), "torchlean_native_ext.", op, ": ", name,
                 " has dtype ", t.scalar_type(), " but ", ref_name, " has dtype ",
                 ref.scalar_type());
  TL_CHECK_VALUE(t.device() == ref.device(), "torchlean_native_ext.", op, ": ", name,
                 " is on ", t.device().str(), " but ", ref_name, " is on ",
                 ref.device().str());
}

void check_same_shape(const char* op, const char* name, const at::Tensor& t, const char* ref_name,
                      const at::Tensor& ref) {
  TL_CHECK_VALUE(t.sizes() == ref.sizes(), "torchlean_native_ext.", op, ": ", name,
                 " has shape ", shape_text(t.sizes()), " but ", ref_name, " has shape ",
                 shape_text(ref.sizes()));
}

// A backward's cotangent g has the shape of the forward's result.
void check_cotangent(const char* op, const at::Tensor& g, IntArrayRef shape) {
  TL_CHECK_VALUE(g.sizes() == shape, "torchlean_native_ext.", op, ": g has shape ",
                 shape_text(g.sizes()), "; expected ", shape_text(shape));
}

void check_rank(const char* op, const char* name, const at::Tensor& t, std::int64_t lo,
                std::int64_t hi) {
  TL_CHECK_VALUE(t.dim() >= lo && t.dim() <= hi, "torchlean_native_ext.", op, ": ", name,
                 " has rank ", t.dim(), " (shape ", shape_text(t.sizes()), "); accepted ranks ",
                 lo, "..", hi);
}

void check_mask(const char* op, const char* name, const at::Tensor& mask, const at::Tensor& ref) {
  check_buffer(op, name, mask);
  TL_CHECK_VALUE(mask.scalar_type() == at::kBool, "torchlean_native_ext.", op, ": ", name,
                 " has dtype ", mask.scalar_type(),
                 "; accepted: bool (True = allowed; an additive bias is a separate operation)");
  TL_CHECK_VALUE(mask.device() == ref.device(), "torchlean_native_ext.", op, ": ", name,
                 " is on ", mask.device().str(), " but the scores are on ",
                 ref.device().str());
}

void check_index(const char* op, const at::Tensor& index, const at::Tensor& ref, std::int64_t dim,
                 std::int64_t extent) {
  check_buffer(op, "index", index);
  TL_CHECK_VALUE(index.scalar_type() == at::kLong, "torchlean_native_ext.", op,
                 ": index has dtype ", index.scalar_type(), "; accepted: int64");
  TL_CHECK_VALUE(index.device() == ref.device(), "torchlean_native_ext.", op, ": index is on ",
                 index.device().str(), " but the data is on ", ref.device().str());
  TL_CHECK_VALUE(index.dim() == ref.dim(), "torchlean_native_ext.", op, ": index has rank ",
                 index.dim(), " but the data has rank ", ref.dim());
  if (index.numel() == 0) return;
  // Checked on the host before launch: an out-of-range index must be an exception, never a
  // device-side assertion that poisons the CUDA context.
  const at::Tensor bad = index.lt(0).logical_or(index.ge(extent));
  if (bad.any().item<bool>()) {
    const std::int64_t first = index.masked_select(bad).flatten()[0].item<std::int64_t>();
    TL_CHECK_INDEX(false, "torchlean_native_ext.", op, ": index value ", first,
                   " is out of range (accepted: values in [0, ", extent, ") along dimension ",
                   dim, ")");
  }
}

std::int64_t wrap_dim(const char* op, std::int64_t dim, std::int64_t rank) {
  const std::int64_t lo = rank == 0 ? -1 : -rank;
  const std::int64_t hi = rank == 0 ? 0 : rank - 1;
  TL_CHECK_VALUE(dim >= lo && dim <= hi, "torchlean_native_ext.", op, ": dim ", dim,
                 " is out of range for rank ", rank, " (accepted ", lo, "..", hi, ")");
  return dim < 0 ? dim + std::max<std::int64_t>(rank, 1) : dim;
}

bool aliases(const at::Tensor& a, const at::Tensor& b) {
  return a.defined() && b.defined() && a.is_alias_of(b);
}

// A contiguous result that shares storage with none of `inputs`.
at::Tensor own(const at::Tensor& result, std::initializer_list<at::Tensor> inputs) {
  for (const at::Tensor& input : inputs) {
    if (aliases(result, input)) return result.clone(at::MemoryFormat::Contiguous);
  }
  return result.contiguous();
}

at::Tensor own_list(const at::Tensor& result, const std::vector<at::Tensor>& inputs) {
  for (const at::Tensor& input : inputs) {
    if (aliases(result, input)) return result.clone(at::MemoryFormat::Contiguous);
  }
  return result.contiguous();
}

// ---- shared checks of op families -------------------------------------------------------------

void check_unary(const char* op, const at::Tensor& x) { check_float(op, "x", x); }

void check_unary_backward(const char* op, const at::Tensor& g, const at::Tensor& x,
                          const at::Tensor& out) {
  check_float(op, "x", x);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  check_same_shape(op, "g", g, "x", x);
  check_same_shape(op, "out", out, "x", x);
}

// The broadcast of two shapes (trailing axes aligned, extents equal or 1; numpy/PyTorch rules), or
// nothing when they do not broadcast (the caller refuses with its own message).
std::optional<std::vector<std::int64_t>> broadcast_sizes(IntArrayRef a, IntArrayRef b) {
  const std::size_t rank = std::max(a.size(), b.size());
  std::vector<std::int64_t> shape(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t sa = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    const std::int64_t sb = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (sa != sb && sa != 1 && sb != 1) return std::nullopt;
    shape[i] = sa == 1 ? sb : sa;
  }
  return shape;
}

std::vector<std::int64_t> broadcast_shape(const char* op, const at::Tensor& a,
                                          const at::Tensor& b) {
  const auto shape = broadcast_sizes(a.sizes(), b.sizes());
  TL_CHECK_VALUE(shape.has_value(), "torchlean_native_ext.", op, ": shapes ",
                 shape_text(a.sizes()), " and ", shape_text(b.sizes()), " do not broadcast");
  checked_result_shape(op, "broadcast result", *shape, a.element_size());
  return *shape;
}

void check_binary(const char* op, const at::Tensor& a, const at::Tensor& b) {
  check_float(op, "a", a);
  check_like(op, "b", b, "a", a);
  broadcast_shape(op, a, b);
}

void check_binary_backward(const char* op, const at::Tensor& g, const at::Tensor& a,
                           const at::Tensor& b, const at::Tensor& out) {
  check_binary(op, a, b);
  check_like(op, "g", g, "a", a);
  check_like(op, "out", out, "a", a);
  const std::vector<std::int64_t> shape = broadcast_shape(op, a, b);
  check_cotangent(op, g, shape);
  check_same_shape(op, "out", out, "g", g);
}

// Sum a broadcast cotangent back to an input's shape, as a fresh buffer.
at::Tensor reduce_to(const at::Tensor& grad, const at::Tensor& input, const at::Tensor& g) {
  return own(grad.sum_to_size(input.sizes()), {g, input});
}

Grads one(const at::Tensor& t) { return Grads{t}; }

// ---- spatial geometry --------------------------------------------------------------------------

// The largest window parameter ATen's pooling and transposed-convolution kernels take (they hold
// them in 32-bit ints); a convolution takes any int64 (reference.spatial_guards.
// window_parameter_limit).  check_spatial_params takes one of the two as its `limit`.
constexpr std::int64_t kInt32Window = 2147483647;
constexpr std::int64_t kInt64Window = std::numeric_limits<std::int64_t>::max();

void check_spatial_params(const char* op, std::int64_t rank, const Ints& kernel,
                          const Ints& stride, const Ints& padding, const Ints* dilation,
                          std::int64_t limit) {
  TL_CHECK_VALUE(rank >= 1, "torchlean_native_ext.", op,
                 ": kernel must name at least one spatial axis");
  TL_CHECK_VALUE(static_cast<std::int64_t>(stride.size()) == rank &&
                        static_cast<std::int64_t>(padding.size()) == rank &&
                        (dilation == nullptr ||
                         static_cast<std::int64_t>(dilation->size()) == rank),
                 "torchlean_native_ext.", op, ": kernel, stride, padding",
                 dilation ? ", dilation" : "", " must all have ", rank, " entries");
  for (std::int64_t ax = 0; ax < rank; ++ax) {
    const std::size_t i = static_cast<std::size_t>(ax);
    TL_CHECK_VALUE(kernel[i] >= 1, "torchlean_native_ext.", op, ": kernel[", ax, "] = ",
                   kernel[i], " must be >= 1");
    TL_CHECK_VALUE(stride[i] >= 1, "torchlean_native_ext.", op, ": stride[", ax, "] = ",
                   stride[i], " must be >= 1");
    TL_CHECK_VALUE(padding[i] >= 0, "torchlean_native_ext.", op, ": padding[", ax, "] = ",
                   padding[i], " must be >= 0");
    if (dilation != nullptr) {
      TL_CHECK_VALUE((*dilation)[i] >= 1, "torchlean_native_ext.", op, ": dilation[", ax,
                     "] = ", (*dilation)[i], " must be >= 1");
    }
    if (limit == kInt32Window) {
      const std::pair<const char*, std::int64_t> params[] = {
          {"kernel", kernel[i]}, {"stride", stride[i]}, {"padding", padding[i]},
          {"dilation", dilation != nullptr ? (*dilation)[i] : 1}};
      for (const auto& [name, value] : params) {
        TL_CHECK_VALUE(value <= kInt32Window, "torchlean_native_ext.", op, ": ", name, "[", ax,
                       "] = ", value, " is too large (accepted: at most ", kInt32Window,
                       " = 2**31 - 1; ATen's pooling and transposed-convolution kernels hold "
                       "window parameters in 32-bit ints)");
      }
    }
  }
}

// dilation * (kernel - 1) + 1 and in + 2 * pad, refusing int64 overflow.
std::int64_t window_span(const char* op, std::int64_t ax, std::int64_t kernel,
                         std::int64_t dilation) {
  std::int64_t span = 0;
  TL_CHECK_VALUE(!c10::mul_overflows(dilation, kernel - 1, &span) &&
                     !c10::add_overflows(span, std::int64_t{1}, &span),
                 "torchlean_native_ext.", op, ": spatial axis ", ax, " has a window span ",
                 "dilation * (kernel - 1) + 1 beyond int64 (dilation ", dilation, ", kernel ",
                 kernel, ")");
  return span;
}

std::int64_t padded_extent(const char* op, std::int64_t ax, std::int64_t in, std::int64_t pad) {
  std::int64_t padded = 0;
  TL_CHECK_VALUE(!c10::mul_overflows(pad, std::int64_t{2}, &padded) &&
                     !c10::add_overflows(padded, in, &padded),
                 "torchlean_native_ext.", op, ": spatial axis ", ax, " has a padded extent ", in,
                 " + 2 * ", pad, " beyond int64");
  return padded;
}

// Output extent of a window op along one axis (floor mode); refuses empty outputs.
std::int64_t window_out(const char* op, std::int64_t ax, std::int64_t in, std::int64_t kernel,
                        std::int64_t stride, std::int64_t pad, std::int64_t dilation) {
  const std::int64_t span = window_span(op, ax, kernel, dilation);
  TL_CHECK_VALUE(padded_extent(op, ax, in, pad) >= span, "torchlean_native_ext.", op,
                 ": spatial axis ", ax, " has extent ", in, " + 2 * padding ", pad,
                 " smaller than the window span ", span);
  return (in + 2 * pad - span) / stride + 1;
}

// Pooling via ATen's 2-D/3-D kernels: leading axes fold into channels; 1-D pools as 2-D (1, k).
struct FoldedPool {
  at::Tensor input;        // (C, 1, W) / (C, H, W) / (C, D, H, W)
  Ints kernel, stride, padding, dilation;
  std::vector<std::int64_t> out_shape;  // leading + output spatial shape
};

// A window made of padding only (possible when the dilation exceeds the input extent) is refused,
// as reference.spatial_guards: ATen's max pool backward then scatters to an index outside the
// input.  With padding <= kernel / 2 only such axes can have one, and they have few windows.
void check_windows_read_input(const char* op, std::int64_t ax, std::int64_t in, std::int64_t kernel,
                              std::int64_t stride, std::int64_t padding, std::int64_t dilation,
                              std::int64_t out) {
  if (dilation <= in) return;
  for (std::int64_t o = 0; o < out; ++o) {
    bool reads = false;
    for (std::int64_t t = 0; t < kernel && !reads; ++t) {
      const std::int64_t pos = o * stride + t * dilation - padding;
      reads = pos >= 0 && pos < in;
    }
    TL_CHECK_VALUE(reads, "torchlean_native_ext.", op, ": window ", o, " on spatial axis ", ax,
                   " covers only padding (input size ", in, ", kernel ", kernel, ", dilation ",
                   dilation, ", padding ", padding,
                   "); accepted: geometries where every window reads an input element");
  }
}

// torch's pools accept an empty batch only ("tensor with optional 0 dim batch size"): with a
// batch axis (rank >= spatial + 2) every other axis must be non-empty, without one every axis.
void check_pool_extents(const char* op, const at::Tensor& x, std::int64_t rank) {
  const std::int64_t first = x.dim() >= rank + 2 ? 1 : 0;
  for (std::int64_t i = first; i < x.dim(); ++i) {
    TL_CHECK_VALUE(x.size(i) >= 1, "torchlean_native_ext.", op, ": x has shape ",
                   shape_text(x.sizes()), " with an empty axis ", i,
                   "; accepted: C >= 1 and spatial extents >= 1, only the batch N may be 0 (as "
                   "torch pools)");
  }
}

FoldedPool fold_pool(const char* op, const at::Tensor& x, const Ints& kernel, const Ints& stride,
                     const Ints& padding, const Ints& dilation) {
  const std::int64_t rank = static_cast<std::int64_t>(kernel.size());
  TL_CHECK_VALUE(rank >= 1 && rank <= 3, "torchlean_native_ext.", op, ": ", rank,
                 " spatial axes requested; accepted 1..3");
  check_spatial_params(op, rank, kernel, stride, padding, &dilation, kInt32Window);
  TL_CHECK_VALUE(x.dim() >= rank + 1, "torchlean_native_ext.", op, ": x has rank ", x.dim(),
                 "; a ", rank, "-d pool needs at least one leading (channel) axis");
  check_pool_extents(op, x, rank);
  FoldedPool folded;
  std::int64_t channels = 1;
  for (std::int64_t i = 0; i < x.dim() - rank; ++i) {
    channels = checked_mul(op, "channel count", channels, x.size(i));
    folded.out_shape.push_back(x.size(i));
  }
  std::vector<std::int64_t> in_shape{channels};
  if (rank == 1) {
    in_shape.push_back(1);
    folded.kernel = {1, kernel[0]};
    folded.stride = {1, stride[0]};
    folded.padding = {0, padding[0]};
    folded.dilation = {1, dilation[0]};
  } else {
    folded.kernel = kernel;
    folded.stride = stride;
    folded.padding = padding;
    folded.dilation = dilation;
  }
  for (std::int64_t ax = 0; ax < rank; ++ax) {
    const std::size_t i = static_cast<std::size_t>(ax);
    const std::int64_t in = x.size(x.dim() - rank + ax);
    TL_CHECK_VALUE(padding[i] <= kernel[i] / 2, "torchlean_native_ext.", op, ": padding[",
                   ax, "] = ", padding[i], " exceeds half the kernel size ", kernel[i]);
    const std::int64_t out = window_out(op, ax, in, kernel[i], stride[i], padding[i], dilation[i]);
    check_windows_read_input(op, ax, in, kernel[i], stride[i], padding[i], dilation[i], out);
    folded.out_shape.push_back(out);
    in_shape.push_back(in);
  }
  checked_result_shape(op, "the result", folded.out_shape, x.element_size());
  folded.input = x.reshape(in_shape);
  return folded;
}

tl::PoolGeometry pool_geometry(const char* op, const at::Tensor& x, const Ints& kernel,
                               const Ints& stride, const Ints& padding,
                               std::vector<std::int64_t>& out_shape) {
  const std::int64_t rank = static_cast<std::int64_t>(kernel.size());
  TL_CHECK_VALUE(rank >= 1 && rank <= tl::kMaxPoolRank, "torchlean_native_ext.", op, ": ",
                 rank, " spatial axes requested; accepted 1..", tl::kMaxPoolRank);
  check_spatial_params(op, rank, kernel, stride, padding, nullptr, kInt32Window);
  TL_CHECK_VALUE(x.dim() >= rank + 1, "torchlean_native_ext.", op, ": x has rank ", x.dim(),
                 "; a ", rank, "-d pool needs at least one leading (channel) axis");
  check_pool_extents(op, x, rank);
  for (std::int64_t ax = 0; ax < rank; ++ax) {
    const std::size_t i = static_cast<std::size_t>(ax);
    // every window then holds at least one input cell
    TL_CHECK_VALUE(padding[i] <= kernel[i] / 2, "torchlean_native_ext.", op, ": padding[",
                   ax, "] = ", padding[i], " exceeds half the kernel size ", kernel[i]);
  }
  tl::PoolGeometry g{};
  g.rank = static_cast<int>(rank);
  g.channels = 1;
  out_shape.clear();
  for (std::int64_t i = 0; i < x.dim() - rank; ++i) {
    g.channels = checked_mul(op, "channel count", g.channels, x.size(i));
    out_shape.push_back(x.size(i));
  }
  g.in_size = 1;
  g.out_size = 1;
  g.kernel_size = 1;
  for (std::int64_t ax = 0; ax < rank; ++ax) {
    const std::size_t i = static_cast<std::size_t>(ax);
    g.in[ax] = x.size(x.dim() - rank + ax);
    g.kernel[ax] = kernel[i];
    g.stride[ax] = stride[i];
    g.pad[ax] = padding[i];
    g.out[ax] = window_out(op, ax, g.in[ax], kernel[i], stride[i], padding[i], 1);
    out_shape.push_back(g.out[ax]);
    g.in_size = checked_mul(op, "input window volume", g.in_size, g.in[ax]);
    g.out_size = checked_mul(op, "output volume", g.out_size, g.out[ax]);
    g.kernel_size = checked_mul(op, "kernel volume", g.kernel_size, kernel[i]);
  }
  checked_mul(op, "output element count", g.channels, g.out_size);
  checked_result_shape(op, "the result", out_shape, x.element_size());
  return g;
}

void check_beta(const char* op, double beta, at::ScalarType dtype) {
  const double limit = dtype == at::kFloat ? static_cast<double>(std::numeric_limits<float>::max())
                                           : std::numeric_limits<double>::max();
  TL_CHECK_VALUE(std::isfinite(beta) && beta != 0.0 && std::fabs(beta) <= limit,
                 "torchlean_native_ext.", op, ": beta = ", beta,
                 " must be finite and nonzero in the input dtype");
  if (dtype == at::kFloat) {
    TL_CHECK_VALUE(static_cast<float>(beta) != 0.0f, "torchlean_native_ext.", op,
                   ": beta = ", beta, " underflows to zero in float32");
  }
}

std::uint64_t stream_key(std::uint64_t seed, std::uint64_t counter) {
  return tl::splitmix64(seed + counter);  // keyOf(seed, counter), arithmetic mod 2^64
}

at::TensorOptions source_options(const char* op, const std::string& dtype,
                                 std::int64_t device_index) {
  TL_CHECK_VALUE(dtype == "float32" || dtype == "float64", "torchlean_native_ext.", op,
                 ": dtype ", dtype, " is not accepted; accepted: float32, float64");
  TL_CHECK_VALUE(device_index >= 0, "torchlean_native_ext.", op, ": device index ",
                 device_index, " must be >= 0");
  const at::ScalarType scalar = dtype == "float32" ? at::kFloat : at::kDouble;
#ifdef TORCHLEAN_EMULATE
  return at::TensorOptions().dtype(scalar).device(at::kCPU);
#else
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) {
    (void)cudaGetLastError();  // do not leave the error for the next launch check to report
    devices = 0;
  }
  TL_CHECK_VALUE(device_index < devices, "torchlean_native_ext.", op, ": device index ",
                 device_index, " names no CUDA device (", devices, " visible)");
  return at::TensorOptions().dtype(scalar).device(
      at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device_index)));
#endif
}

}  // namespace

std::string device_type() { return kDeviceName; }

// =================================================================================================
// accumulation: matmul, linear, mse_loss
// =================================================================================================

namespace {
// The shape of matmul(a, b) by torch.matmul's rules: a 1-D operand is promoted (a to a row, b to a
// column) and the added axis dropped from the result; the batch axes (all but the last two)
// broadcast.  Refuses ranks outside 1..8, differing contraction sizes and batch axes that do not
// broadcast.
std::vector<std::int64_t> matmul_shape(const char* op, const at::Tensor& a, const at::Tensor& b) {
  check_rank(op, "a", a, 1, 8);
  check_rank(op, "b", b, 1, 8);
  const std::int64_t ka = a.size(-1);
  const std::int64_t kb = b.dim() == 1 ? b.size(0) : b.size(-2);
  TL_CHECK_VALUE(ka == kb, "torchlean_native_ext.", op, ": contraction sizes differ: a ",
                 shape_text(a.sizes()), " @ b ", shape_text(b.sizes()));
  const auto batch =
      broadcast_sizes(a.sizes().slice(0, std::max<std::int64_t>(a.dim() - 2, 0)),
                      b.sizes().slice(0, std::max<std::int64_t>(b.dim() - 2, 0)));
  TL_CHECK_VALUE(batch.has_value(), "torchlean_native_ext.", op, ": batch axes of a ",
                 shape_text(a.sizes()), " and b ", shape_text(b.sizes()), " do not broadcast");
  std::vector<std::int64_t> shape = *batch;
  if (a.dim() >= 2) shape.push_back(a.size(-2));
  if (b.dim() >= 2) shape.push_back(b.size(-1));
  checked_result_shape(op, "the product", shape, a.element_size());
  return shape;
}
}  // namespace

Tensor matmul_forward(const Tensor& a, const Tensor& b) {
  constexpr const char* op = "matmul_forward";
  check_float(op, "a", a);
  check_like(op, "b", b, "a", a);
  matmul_shape(op, a, b);
  c10::DeviceGuard guard(a.device());
  return own(at::matmul(a, b), {a, b});
}

Grads matmul_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& out) {
  constexpr const char* op = "matmul_backward";
  check_float(op, "a", a);
  check_like(op, "b", b, "a", a);
  check_like(op, "g", g, "a", a);
  check_like(op, "out", out, "a", a);
  check_cotangent(op, g, matmul_shape(op, a, b));
  check_same_shape(op, "out", out, "g", g);
  c10::DeviceGuard guard(a.device());
  const at::Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  const at::Tensor b2 = b.dim() == 1 ? b.unsqueeze(-1) : b;
  at::Tensor g2 = g;
  if (a.dim() == 1 && b.dim() == 1) {
    g2 = g.reshape({1, 1});
  } else if (a.dim() == 1) {
    g2 = g.unsqueeze(-2);
  } else if (b.dim() == 1) {
    g2 = g.unsqueeze(-1);
  }
  const at::Tensor ga =
      at::matmul(g2, b2.transpose(-1, -2)).sum_to_size(a2.sizes()).reshape(a.sizes());
  const at::Tensor gb =
      at::matmul(a2.transpose(-1, -2), g2).sum_to_size(b2.sizes()).reshape(b.sizes());
  return {own(ga, {g, a, b}), own(gb, {g, a, b})};
}

Tensor linear_forward(const Tensor& x, const Tensor& weight, const OptTensor& bias) {
  constexpr const char* op = "linear_forward";
  check_float(op, "x", x);
  check_like(op, "weight", weight, "x", x);
  check_rank(op, "x", x, 1, 8);
  check_rank(op, "weight", weight, 2, 2);
  TL_CHECK_VALUE(x.size(-1) == weight.size(1), "torchlean_native_ext.", op, ": x ",
                 shape_text(x.sizes()), " does not match weight (out, in) ",
                 shape_text(weight.sizes()));
  if (bias.has_value()) {
    check_like(op, "bias", *bias, "x", x);
    TL_CHECK_VALUE(bias->dim() == 1 && bias->size(0) == weight.size(0), "torchlean_native_ext.",
                   op, ": bias has shape ", shape_text(bias->sizes()), "; expected [",
                   weight.size(0), "]");
  }
  c10::DeviceGuard guard(x.device());
  return own(at::linear(x, weight, bias), {x, weight});
}

Grads linear_backward(const Tensor& g, const Tensor& x, const Tensor& weight,
                      const OptTensor& bias, const Tensor& out) {
  constexpr const char* op = "linear_backward";
  check_float(op, "x", x);
  check_like(op, "weight", weight, "x", x);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  check_rank(op, "x", x, 1, 8);
  check_rank(op, "weight", weight, 2, 2);
  check_same_shape(op, "g", g, "out", out);
  const IntArrayRef lead = x.sizes().slice(0, static_cast<std::size_t>(x.dim() - 1));
  TL_CHECK_VALUE(g.dim() == x.dim() && g.sizes().slice(0, lead.size()) == lead &&
                        g.size(-1) == weight.size(0) && x.size(-1) == weight.size(1),
                 "torchlean_native_ext.", op, ": g ", shape_text(g.sizes()), ", x ",
                 shape_text(x.sizes()), " and weight ", shape_text(weight.sizes()),
                 " do not agree");
  c10::DeviceGuard guard(x.device());
  // rows counted explicitly: reshape({-1, 0}) cannot infer them when a feature extent is 0
  const std::int64_t rows = checked_numel(op, "x's leading axes", lead);
  const at::Tensor g2 = g.reshape({rows, weight.size(0)});
  const at::Tensor x2 = x.reshape({rows, weight.size(1)});
  const at::Tensor gx = at::matmul(g, weight);
  const at::Tensor gw = at::matmul(g2.transpose(0, 1), x2);
  at::Tensor gb;
  if (bias.has_value()) {
    check_like(op, "bias", *bias, "x", x);
    gb = g2.sum(0);
  }
  return {own(gx, {g, x, weight}), own(gw, {g, x, weight}),
          gb.defined() ? own(gb, {g}) : at::Tensor()};
}

Tensor mse_loss_forward(const Tensor& a, const Tensor& b) {
  constexpr const char* op = "mse_loss_forward";
  check_float(op, "a", a);
  check_like(op, "b", b, "a", a);
  check_same_shape(op, "b", b, "a", a);
  c10::DeviceGuard guard(a.device());
  if (a.numel() == 0) {
    // a mean over no element is NaN, as torch.nn.functional.mse_loss (and the reference kernel)
    return at::full({}, std::numeric_limits<double>::quiet_NaN(), a.options());
  }
  const at::Tensor diff = a - b;
  return (diff * diff).sum() / static_cast<double>(a.numel());
}

Grads mse_loss_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& out) {
  constexpr const char* op = "mse_loss_backward";
  check_float(op, "a", a);
  check_like(op, "b", b, "a", a);
  check_same_shape(op, "b", b, "a", a);
  check_like(op, "g", g, "a", a);
  check_like(op, "out", out, "a", a);
  TL_CHECK_VALUE(g.dim() == 0 && out.dim() == 0, "torchlean_native_ext.", op,
                 ": g and out must be scalars (rank 0)");
  c10::DeviceGuard guard(a.device());
  // an empty input has empty cotangents; the guard keeps 2 / n finite for them
  const double n = a.numel() == 0 ? 1.0 : static_cast<double>(a.numel());
  const at::Tensor ga = (a - b) * g * (2.0 / n);
  return {ga, -ga};
}

// =================================================================================================
// pointwise
// =================================================================================================

Tensor relu_forward(const Tensor& x) {
  check_unary("relu_forward", x);
  c10::DeviceGuard guard(x.device());
  return at::relu(x);
}

Grads relu_backward(const Tensor& g, const Tensor& x, const Tensor& out) {
  check_unary_backward("relu_backward", g, x, out);
  c10::DeviceGuard guard(x.device());
  // torch's threshold_backward(g, out, 0): 0 where out <= 0, else g (so g at a NaN input)
  return one(at::where(out <= 0, at::zeros({}, g.options()), g));
}

void check_gelu_mode(const char* op, const std::string& approximate) {
  TL_CHECK_VALUE(approximate == "tanh" || approximate == "none", "torchlean_native_ext.", op,
                 ": approximate = ", approximate, " is not accepted; accepted: tanh, none");
}

// Phi(x) = erfc(-x / sqrt 2) / 2, the standard normal CDF without the cancellation of
// (1 + erf(x / sqrt 2)) / 2 for negative x (below about -8 at::gelu's "none" form is -0.0 and its
// gradient loses the Phi term). As the reference, erfc is evaluated in float64 and rounded to x's
// dtype (in float32, erfc of the rounded -x / sqrt 2 is up to ~150 ulp off near x = -13).
Tensor normal_cdf(const Tensor& x) {
  return at::erfc(x.to(at::kDouble) * -M_SQRT1_2).to(x.scalar_type()) * 0.5;
}

Tensor gelu_forward(const Tensor& x, const std::string& approximate) {
  check_unary("gelu_forward", x);
  check_gelu_mode("gelu_forward", approximate);
  c10::DeviceGuard guard(x.device());
  if (approximate == "tanh") return at::gelu(x, approximate);
  return x * normal_cdf(x);
}

Grads gelu_backward(const Tensor& g, const Tensor& x, const Tensor& out,
                    const std::string& approximate) {
  check_unary_backward("gelu_backward", g, x, out);
  check_gelu_mode("gelu_backward", approximate);
  c10::DeviceGuard guard(x.device());
  if (approximate == "tanh") return one(at::gelu_backward(g, x, approximate));
  // g * (Phi(x) + x * phi(x)), phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
  const Tensor pdf = at::exp(x * x * -0.5) * (M_2_SQRTPI * M_SQRT1_2 * 0.5);
  return one(g * (pdf * x + normal_cdf(x)));
}

Tensor add_forward(const Tensor& a, const Tensor& b) {
  check_binary("add_forward", a, b);
  c10::DeviceGuard guard(a.device());
  return a + b;
}

Grads add_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_binary_backward("add_backward", g, a, b, out);
  c10::DeviceGuard guard(a.device());
  return {reduce_to(g, a, g), reduce_to(g, b, g)};
}

Tensor sub_forward(const Tensor& a, const Tensor& b) {
  check_binary("sub_forward", a, b);
  c10::DeviceGuard guard(a.device());
  return a - b;
}

Grads sub_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_binary_backward("sub_backward", g, a, b, out);
  c10::DeviceGuard guard(a.device());
  return {reduce_to(g, a, g), reduce_to(-g, b, g)};
}

Tensor mul_forward(const Tensor& a, const Tensor& b) {
  check_binary("mul_forward", a, b);
  c10::DeviceGuard guard(a.device());
  return a * b;
}

Grads mul_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_binary_backward("mul_backward", g, a, b, out);
  c10::DeviceGuard guard(a.device());
  return {reduce_to(g * b, a, g), reduce_to(g * a, b, g)};
}

Tensor scale_forward(const Tensor& x, double factor) {
  check_unary("scale_forward", x);
  c10::DeviceGuard guard(x.device());
  return x * factor;
}

Grads scale_backward(const Tensor& g, const Tensor& x, const Tensor& out, double factor) {
  check_unary_backward("scale_backward", g, x, out);
  c10::DeviceGuard guard(x.device());
  return one(g * factor);
}

Tensor abs_forward(const Tensor& x) {
  check_unary("abs_forward", x);
  c10::DeviceGuard guard(x.device());
  return at::abs(x);
}

Grads abs_backward(const Tensor& g, const Tensor& x, const Tensor& out) {
  check_unary_backward("abs_backward", g, x, out);
  c10::DeviceGuard guard(x.device());
  return one(g * at::sign(x));
}

Tensor sqrt_forward(const Tensor& x) {
  check_unary("sqrt_forward", x);
  c10::DeviceGuard guard(x.device());
  return at::sqrt(x);
}

Grads sqrt_backward(const Tensor& g, const Tensor& x, const Tensor& out) {
  check_unary_backward("sqrt_backward", g, x, out);
  c10::DeviceGuard guard(x.device());
  return one(g / (2.0 * out));
}

void check_clamp_bounds(const char* op, double lo, double hi) {
  TL_CHECK_VALUE(!std::isnan(lo) && !std::isnan(hi) && lo <= hi, "torchlean_native_ext.", op,
                 ": bounds [", lo, ", ", hi, "] must be ordered and not NaN");
}

// A bound rounded to x's dtype (to nearest, ties to even), a float32 overflow giving +-inf: the
// reference's x.dtype.type(bound).  at::clamp refuses a finite bound beyond float32's range
// instead; its comparisons (ge/le) round the same way.  Float32 rounding overflows from half an
// ulp (2**103) above FLT_MAX on, where the tie goes to infinity.
double bound_in(double bound, at::ScalarType dtype) {
  if (dtype != at::kFloat || !std::isfinite(bound)) return bound;
  constexpr double kMax = std::numeric_limits<float>::max();
  if (std::fabs(bound) >= kMax + std::ldexp(1.0, 103)) {
    return std::copysign(std::numeric_limits<double>::infinity(), bound);
  }
  if (std::fabs(bound) > kMax) return std::copysign(kMax, bound);
  return static_cast<double>(static_cast<float>(bound));
}

Tensor clamp_forward(const Tensor& x, double lo, double hi) {
  check_unary("clamp_forward", x);
  check_clamp_bounds("clamp_forward", lo, hi);
  c10::DeviceGuard guard(x.device());
  return at::clamp(x, bound_in(lo, x.scalar_type()), bound_in(hi, x.scalar_type()));
}

Grads clamp_backward(const Tensor& g, const Tensor& x, const Tensor& out, double lo, double hi) {
  check_unary_backward("clamp_backward", g, x, out);
  check_clamp_bounds("clamp_backward", lo, hi);
  c10::DeviceGuard guard(x.device());
  const double low = bound_in(lo, x.scalar_type());
  const double high = bound_in(hi, x.scalar_type());
  return one(at::where(x.ge(low).logical_and(x.le(high)), g, at::zeros({}, g.options())));
}

// d max(a, b) (PyTorch's maximum/minimum backward): ties split g evenly, the loser gets 0 and
// every other entry g, so a NaN comparison (neither side loses) gives g to both operands.
Grads extremum_backward(const at::Tensor& g, const at::Tensor& a, const at::Tensor& b,
                        bool is_max) {
  const at::Tensor zero = at::zeros({}, g.options());
  const at::Tensor a_loses = is_max ? a.lt(b) : a.gt(b);
  const at::Tensor b_loses = is_max ? b.lt(a) : b.gt(a);
  const at::Tensor tie = a.eq(b);
  const at::Tensor half = g * 0.5;
  const at::Tensor ga = at::where(tie, half, at::where(a_loses, zero, g));
  const at::Tensor gb = at::where(tie, half, at::where(b_loses, zero, g));
  return {reduce_to(ga, a, g), reduce_to(gb, b, g)};
}

Tensor max_forward(const Tensor& a, const Tensor& b) {
  check_binary("max_forward", a, b);
  c10::DeviceGuard guard(a.device());
  return at::maximum(a, b);
}

Grads max_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_binary_backward("max_backward", g, a, b, out);
  c10::DeviceGuard guard(a.device());
  return extremum_backward(g, a, b, true);
}

Tensor min_forward(const Tensor& a, const Tensor& b) {
  check_binary("min_forward", a, b);
  c10::DeviceGuard guard(a.device());
  return at::minimum(a, b);
}

Grads min_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_binary_backward("min_backward", g, a, b, out);
  c10::DeviceGuard guard(a.device());
  return extremum_backward(g, a, b, false);
}

Tensor sigmoid_forward(const Tensor& x) {
  check_unary("sigmoid_forward", x);
  c10::DeviceGuard guard(x.device());
  return at::sigmoid(x);
}

Grads sigmoid_backward(const Tensor& g, const Tensor& x, const Tensor& out) {
  check_unary_backward("sigmoid_backward", g, x, out);
  c10::DeviceGuard guard(x.device());
  // from x, as the reference: e / (1 + e)^2 with e = exp(-|x|); g * out * (1 - out) cancels where
  // out rounds to 1 (review166 F1)
  const at::Tensor e = at::exp(-at::abs(x));
  const at::Tensor p = e + 1.0;
  return one(g * (e / (p * p)));
}

Tensor tanh_forward(const Tensor& x) {
  check_unary("tanh_forward", x);
  c10::DeviceGuard guard(x.device());
  return at::tanh(x);
}

Grads tanh_backward(const Tensor& g, const Tensor& x, const Tensor& out) {
  check_unary_backward("tanh_backward", g, x, out);
  c10::DeviceGuard guard(x.device());
  // from x, as the reference: 4e / (1 + e)^2 with e = exp(-2|x|); g * (1 - out^2) cancels where
  // out rounds to +-1 (review166 F1)
  const at::Tensor e = at::exp(at::abs(x) * -2.0);
  const at::Tensor p = e + 1.0;
  return one(g * (e * 4.0 / (p * p)));
}

// softplus(x) = log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)), stable for every finite x.
at::Tensor stable_softplus(const at::Tensor& x) {
  return at::clamp_min(x, 0.0) + at::log1p(at::exp(-at::abs(x)));
}

Tensor softplus_forward(const Tensor& x) {
  check_unary("softplus_forward", x);
  c10::DeviceGuard guard(x.device());
  return stable_softplus(x);
}

Grads softplus_backward(const Tensor& g, const Tensor& x, const Tensor& out) {
  check_unary_backward("softplus_backward", g, x, out);
  c10::DeviceGuard guard(x.device());
  return one(g * at::sigmoid(x));
}

Tensor exp_forward(const Tensor& x) {
  check_unary("exp_forward", x);
  c10::DeviceGuard guard(x.device());
  return at::exp(x);
}

Grads exp_backward(const Tensor& g, const Tensor& x, const Tensor& out) {
  check_unary_backward("exp_backward", g, x, out);
  c10::DeviceGuard guard(x.device());
  return one(g * out);
}

Tensor sin_forward(const Tensor& x) {
  check_unary("sin_forward", x);
  c10::DeviceGuard guard(x.device());
  return at::sin(x);
}

Grads sin_backward(const Tensor& g, const Tensor& x, const Tensor& out) {
  check_unary_backward("sin_backward", g, x, out);
  c10::DeviceGuard guard(x.device());
  return one(g * at::cos(x));
}

Tensor cos_forward(const Tensor& x) {
  check_unary("cos_forward", x);
  c10::DeviceGuard guard(x.device());
  return at::cos(x);
}

Grads cos_backward(const Tensor& g, const Tensor& x, const Tensor& out) {
  check_unary_backward("cos_backward", g, x, out);
  c10::DeviceGuard guard(x.device());
  return one(-g * at::sin(x));
}

Tensor log_forward(const Tensor& x) {
  check_unary("log_forward", x);
  c10::DeviceGuard guard(x.device());
  return at::log(x);
}

Grads log_backward(const Tensor& g, const Tensor& x, const Tensor& out) {
  check_unary_backward("log_backward", g, x, out);
  c10::DeviceGuard guard(x.device());
  return one(g / x);
}

Tensor inv_forward(const Tensor& x) {
  check_unary("inv_forward", x);
  c10::DeviceGuard guard(x.device());
  return at::reciprocal(x);
}

Grads inv_backward(const Tensor& g, const Tensor& x, const Tensor& out) {
  check_unary_backward("inv_backward", g, x, out);
  c10::DeviceGuard guard(x.device());
  return one(-g * (out * out));  // torch's grouping: 0 * (out^2 = inf) is NaN, as torch
}

// safe_log's eps (the Python guard also refuses one that rounds to 0 or inf in x's dtype)
void check_eps(const char* op, double eps) {
  TL_CHECK_VALUE(std::isfinite(eps) && eps > 0.0, "torchlean_native_ext.", op, ": eps = ", eps,
                 " must be finite and > 0");
}

// safe_log(x) = log(softplus(x) + eps)  (anchor-runtime.md 4.3)
Tensor safe_log_forward(const Tensor& x, double eps) {
  check_unary("safe_log_forward", x);
  check_eps("safe_log_forward", eps);
  c10::DeviceGuard guard(x.device());
  return at::log(stable_softplus(x) + eps);
}

Grads safe_log_backward(const Tensor& g, const Tensor& x, const Tensor& out, double eps) {
  check_unary_backward("safe_log_backward", g, x, out);
  check_eps("safe_log_backward", eps);
  c10::DeviceGuard guard(x.device());
  return one(g * at::sigmoid(x) / (stable_softplus(x) + eps));
}

// =================================================================================================
// softmax family
// =================================================================================================

Tensor log_softmax_forward(const Tensor& x, std::int64_t dim) {
  constexpr const char* op = "log_softmax_forward";
  check_unary(op, x);
  const std::int64_t axis = wrap_dim(op, dim, x.dim());
  c10::DeviceGuard guard(x.device());
  return at::log_softmax(x, axis);
}

Grads log_softmax_backward(const Tensor& g, const Tensor& x, const Tensor& out, std::int64_t dim) {
  constexpr const char* op = "log_softmax_backward";
  check_unary_backward(op, g, x, out);
  const std::int64_t axis = wrap_dim(op, dim, x.dim());
  c10::DeviceGuard guard(x.device());
  return one(g - at::exp(out) * g.sum(axis, true));
}

Tensor softmax_forward(const Tensor& x, std::int64_t dim) {
  constexpr const char* op = "softmax_forward";
  check_unary(op, x);
  const std::int64_t axis = wrap_dim(op, dim, x.dim());
  c10::DeviceGuard guard(x.device());
  return at::softmax(x, axis);
}

Grads softmax_backward(const Tensor& g, const Tensor& x, const Tensor& out, std::int64_t dim) {
  constexpr const char* op = "softmax_backward";
  check_unary_backward(op, g, x, out);
  const std::int64_t axis = wrap_dim(op, dim, x.dim());
  c10::DeviceGuard guard(x.device());
  return one(out * (g - (g * out).sum(axis, true)));
}

namespace {

// Rows of the last axis, and how many distinct mask rows there are.  The mask's shape must be a
// suffix of the scores' shape (it repeats over the leading axes).
void softmax_rows(const char* op, const at::Tensor& x, const at::Tensor& mask, std::int64_t& rows,
                  std::int64_t& n, std::int64_t& mask_rows) {
  check_rank(op, "x", x, 1, 16);
  check_mask(op, "mask", mask, x);
  check_rank(op, "mask", mask, 1, x.dim());
  const IntArrayRef suffix = x.sizes().slice(static_cast<std::size_t>(x.dim() - mask.dim()));
  TL_CHECK_VALUE(mask.sizes() == suffix, "torchlean_native_ext.", op, ": mask has shape ",
                 shape_text(mask.sizes()), " which is not a suffix of the scores' shape ",
                 shape_text(x.sizes()));
  n = x.size(-1);
  rows = n == 0 ? 0 : x.numel() / n;
  mask_rows = n == 0 ? 0 : mask.numel() / n;
  TL_CHECK_VALUE((rows + tl::kRowWarps - 1) / tl::kRowWarps <=
                        std::numeric_limits<std::int32_t>::max(),
                 "torchlean_native_ext.", op, ": ", rows, " rows exceed the launch limit");
}

template <class T>
void launch_softmax_forward(const at::Tensor& x, const at::Tensor& mask, at::Tensor& y,
                            std::int64_t rows, std::int64_t n, std::int64_t mask_rows,
                            cudaStream_t stream) {
  auto* kernel = &tl::hard_masked_softmax_forward_kernel<T>;
  const unsigned int blocks = static_cast<unsigned int>((rows + tl::kRowWarps - 1) / tl::kRowWarps);
  TL_LAUNCH(kernel, dim3(blocks), dim3(tl::kRowThreads), 0, stream, x.data_ptr<T>(),
            reinterpret_cast<const unsigned char*>(mask.data_ptr<bool>()), y.data_ptr<T>(), rows,
            n, mask_rows);
  tl::check_launch("hard_masked_softmax_forward");
}

template <class T>
void launch_softmax_backward(const at::Tensor& g, const at::Tensor& y, const at::Tensor& mask,
                             at::Tensor& dx, std::int64_t rows, std::int64_t n,
                             std::int64_t mask_rows, cudaStream_t stream) {
  auto* kernel = &tl::hard_masked_softmax_backward_kernel<T>;
  const unsigned int blocks = static_cast<unsigned int>((rows + tl::kRowWarps - 1) / tl::kRowWarps);
  TL_LAUNCH(kernel, dim3(blocks), dim3(tl::kRowThreads), 0, stream, g.data_ptr<T>(),
            y.data_ptr<T>(), reinterpret_cast<const unsigned char*>(mask.data_ptr<bool>()),
            dx.data_ptr<T>(), rows, n, mask_rows);
  tl::check_launch("hard_masked_softmax_backward");
}

}  // namespace

Tensor hard_masked_softmax_forward(const Tensor& x, const Tensor& mask, std::int64_t stream) {
  constexpr const char* op = "hard_masked_softmax_forward";
  check_float(op, "x", x);
  std::int64_t rows = 0, n = 0, mask_rows = 0;
  softmax_rows(op, x, mask, rows, n, mask_rows);
  c10::DeviceGuard guard(x.device());
  const cudaStream_t launch = launch_stream(op, stream, x.device());
  at::Tensor y = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (rows == 0) return y;
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), op, [&] {
    launch_softmax_forward<scalar_t>(x, mask, y, rows, n, mask_rows, launch);
  });
  return y;
}

Grads hard_masked_softmax_backward(const Tensor& g, const Tensor& x, const Tensor& mask,
                                   const Tensor& out, std::int64_t stream) {
  constexpr const char* op = "hard_masked_softmax_backward";
  check_unary_backward(op, g, x, out);
  std::int64_t rows = 0, n = 0, mask_rows = 0;
  softmax_rows(op, x, mask, rows, n, mask_rows);
  c10::DeviceGuard guard(x.device());
  const cudaStream_t launch = launch_stream(op, stream, x.device());
  at::Tensor dx = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (rows > 0) {
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), op, [&] {
      launch_softmax_backward<scalar_t>(g, out, mask, dx, rows, n, mask_rows, launch);
    });
  }
  return {dx, at::Tensor()};
}

// =================================================================================================
// reductions
// =================================================================================================

namespace {

// Normalised, sorted, distinct reduction axes; empty `dims` means every axis.
std::vector<std::int64_t> reduction_axes(const char* op, const at::Tensor& x, const Ints& dims) {
  std::vector<std::int64_t> axes;
  if (dims.empty()) {
    for (std::int64_t i = 0; i < x.dim(); ++i) axes.push_back(i);
    return axes;
  }
  for (const std::int64_t dim : dims) axes.push_back(wrap_dim(op, dim, x.dim()));
  std::sort(axes.begin(), axes.end());
  TL_CHECK_VALUE(std::adjacent_find(axes.begin(), axes.end()) == axes.end(),
                 "torchlean_native_ext.", op, ": reduction axes repeat");
  if (x.dim() == 0) axes.clear();
  return axes;
}

at::Tensor expand_reduced(const char* op, const at::Tensor& g, const at::Tensor& x,
                          const std::vector<std::int64_t>& axes, bool keepdim) {
  std::vector<std::int64_t> kept(x.sizes().begin(), x.sizes().end());
  for (const std::int64_t ax : axes) kept[static_cast<std::size_t>(ax)] = 1;
  std::vector<std::int64_t> expected;
  for (std::int64_t i = 0; i < x.dim(); ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (keepdim || !reduced) expected.push_back(keepdim && reduced ? 1 : x.size(i));
  }
  check_cotangent(op, g, expected);
  return g.reshape(kept).expand(x.sizes()).contiguous();
}

}  // namespace

Tensor reduce_sum_forward(const Tensor& x, const Ints& dims, bool keepdim) {
  constexpr const char* op = "reduce_sum_forward";
  check_unary(op, x);
  const std::vector<std::int64_t> axes = reduction_axes(op, x, dims);
  c10::DeviceGuard guard(x.device());
  return own(x.sum(axes, keepdim), {x});
}

Grads reduce_sum_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Ints& dims,
                          bool keepdim) {
  constexpr const char* op = "reduce_sum_backward";
  check_float(op, "x", x);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  check_same_shape(op, "g", g, "out", out);
  const std::vector<std::int64_t> axes = reduction_axes(op, x, dims);
  c10::DeviceGuard guard(x.device());
  return one(own(expand_reduced(op, g, x, axes, keepdim), {g}));
}

Tensor reduce_mean_forward(const Tensor& x, const Ints& dims, bool keepdim) {
  constexpr const char* op = "reduce_mean_forward";
  check_unary(op, x);
  const std::vector<std::int64_t> axes = reduction_axes(op, x, dims);
  c10::DeviceGuard guard(x.device());
  return own(x.mean(axes, keepdim), {x});
}

Grads reduce_mean_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Ints& dims,
                           bool keepdim) {
  constexpr const char* op = "reduce_mean_backward";
  check_float(op, "x", x);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  check_same_shape(op, "g", g, "out", out);
  const std::vector<std::int64_t> axes = reduction_axes(op, x, dims);
  std::int64_t count = 1;
  for (const std::int64_t ax : axes) count *= x.size(ax);
  c10::DeviceGuard guard(x.device());
  return one(expand_reduced(op, g, x, axes, keepdim) / static_cast<double>(count));
}

// =================================================================================================
// views
// =================================================================================================

Tensor reshape_forward(const Tensor& x, const Ints& shape) {
  constexpr const char* op = "reshape_forward";
  check_float(op, "x", x);
  const std::int64_t n = checked_result_shape(op, "target shape", shape, x.element_size());
  TL_CHECK_VALUE(n == x.numel(), "torchlean_native_ext.", op, ": cannot reshape ",
                 shape_text(x.sizes()), " (", x.numel(), " elements) to ", shape_text(shape),
                 " (", n, " elements)");
  c10::DeviceGuard guard(x.device());
  return own(x.reshape(shape), {x});
}

Grads reshape_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Ints& shape) {
  constexpr const char* op = "reshape_backward";
  check_float(op, "x", x);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  TL_CHECK_VALUE(g.sizes() == IntArrayRef(shape) && out.sizes() == IntArrayRef(shape),
                 "torchlean_native_ext.", op, ": g has shape ", shape_text(g.sizes()),
                 "; expected ", shape_text(shape));
  c10::DeviceGuard guard(x.device());
  return one(own(g.reshape(x.sizes()), {g}));
}

namespace {
void check_permutation(const char* op, const at::Tensor& x, const Ints& perm) {
  TL_CHECK_VALUE(static_cast<std::int64_t>(perm.size()) == x.dim(), "torchlean_native_ext.", op,
                 ": permutation has ", perm.size(), " entries for rank ", x.dim());
  std::vector<bool> seen(perm.size(), false);
  for (const std::int64_t p : perm) {
    TL_CHECK_VALUE(p >= 0 && p < x.dim() && !seen[static_cast<std::size_t>(p)],
                   "torchlean_native_ext.", op, ": ", shape_text(perm),
                   " is not a permutation of 0..", x.dim() - 1);
    seen[static_cast<std::size_t>(p)] = true;
  }
}
}  // namespace

Tensor permute_forward(const Tensor& x, const Ints& perm) {
  constexpr const char* op = "permute_forward";
  check_float(op, "x", x);
  check_permutation(op, x, perm);
  c10::DeviceGuard guard(x.device());
  return own(x.permute(perm), {x});
}

Grads permute_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Ints& perm) {
  constexpr const char* op = "permute_backward";
  check_float(op, "x", x);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  check_permutation(op, x, perm);
  std::vector<std::int64_t> permuted;
  for (const std::int64_t axis : perm) permuted.push_back(x.size(axis));
  check_cotangent(op, g, permuted);
  check_same_shape(op, "out", out, "g", g);
  std::vector<std::int64_t> inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) {
    inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
  }
  c10::DeviceGuard guard(x.device());
  return one(own(g.permute(inverse), {g}));
}

namespace {
void check_broadcast_target(const char* op, const at::Tensor& x, const Ints& shape) {
  checked_result_shape(op, "target shape", shape, x.element_size());
  const std::int64_t rank = static_cast<std::int64_t>(shape.size());
  TL_CHECK_VALUE(rank >= x.dim(), "torchlean_native_ext.", op, ": cannot broadcast ",
                 shape_text(x.sizes()), " to the lower-rank shape ", shape_text(shape));
  for (std::int64_t i = 0; i < x.dim(); ++i) {
    const std::int64_t from = x.size(i);
    const std::int64_t to = shape[static_cast<std::size_t>(rank - x.dim() + i)];
    TL_CHECK_VALUE(from == to || from == 1, "torchlean_native_ext.", op, ": cannot broadcast ",
                   shape_text(x.sizes()), " to ", shape_text(shape));
  }
}
}  // namespace

Tensor broadcast_forward(const Tensor& x, const Ints& shape) {
  constexpr const char* op = "broadcast_forward";
  check_float(op, "x", x);
  check_broadcast_target(op, x, shape);
  c10::DeviceGuard guard(x.device());
  return own(x.expand(shape), {x});
}

Grads broadcast_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Ints& shape) {
  constexpr const char* op = "broadcast_backward";
  check_float(op, "x", x);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  check_broadcast_target(op, x, shape);
  check_cotangent(op, g, shape);
  c10::DeviceGuard guard(x.device());
  return one(reduce_to(g, x, g));
}

namespace {
// The operands of a concatenation along `dim`, and its result's shape.
struct Concat {
  std::int64_t axis;
  std::vector<std::int64_t> shape;
};

Concat check_concat(const char* op, const std::vector<at::Tensor>& xs, std::int64_t dim) {
  TL_CHECK_VALUE(!xs.empty(), "torchlean_native_ext.", op, ": needs at least one tensor");
  check_float(op, "xs[0]", xs[0]);
  check_rank(op, "xs[0]", xs[0], 1, 16);
  const std::int64_t axis = wrap_dim(op, dim, xs[0].dim());
  for (std::size_t i = 1; i < xs.size(); ++i) {
    const std::string name = "xs[" + std::to_string(i) + "]";
    check_like(op, name.c_str(), xs[i], "xs[0]", xs[0]);
    bool compatible = xs[i].dim() == xs[0].dim();
    for (std::int64_t d = 0; compatible && d < xs[0].dim(); ++d) {
      compatible = d == axis || xs[i].size(d) == xs[0].size(d);
    }
    TL_CHECK_VALUE(compatible, "torchlean_native_ext.", op, ": ", name, " has shape ",
                   shape_text(xs[i].sizes()), " which does not match xs[0] ",
                   shape_text(xs[0].sizes()), " outside axis ", axis);
  }
  std::int64_t total = 0;
  for (const at::Tensor& x : xs) {
    TL_CHECK_VALUE(!c10::add_overflows(total, x.size(axis), &total), "torchlean_native_ext.", op,
                   ": the extents along axis ", axis, " add up to more than int64 can count");
  }
  Concat result{axis, xs[0].sizes().vec()};
  result.shape[static_cast<std::size_t>(axis)] = total;
  checked_result_shape(op, "the result", result.shape, xs[0].element_size());
  return result;
}
}  // namespace

Tensor concat_forward(const std::vector<Tensor>& xs, std::int64_t dim) {
  const std::int64_t axis = check_concat("concat_forward", xs, dim).axis;
  c10::DeviceGuard guard(xs[0].device());
  return own_list(at::cat(xs, axis), xs);
}

Grads concat_backward(const Tensor& g, const std::vector<Tensor>& xs, const Tensor& out,
                      std::int64_t dim) {
  constexpr const char* op = "concat_backward";
  const Concat concat = check_concat(op, xs, dim);
  const std::int64_t axis = concat.axis;
  check_like(op, "g", g, "xs[0]", xs[0]);
  check_like(op, "out", out, "xs[0]", xs[0]);
  std::vector<std::int64_t> sizes;
  for (const at::Tensor& x : xs) sizes.push_back(x.size(axis));
  check_cotangent(op, g, concat.shape);
  check_same_shape(op, "out", out, "g", g);
  c10::DeviceGuard guard(g.device());
  Grads grads;
  for (const at::Tensor& piece : at::split_with_sizes(g, sizes, axis)) {
    grads.push_back(piece.clone(at::MemoryFormat::Contiguous));
  }
  return grads;
}

namespace {
// One (start, stop, step) per axis: x[start0:stop0:step0, start1:stop1:step1, ...].
void check_slice(const char* op, const at::Tensor& x, const Ints& starts, const Ints& stops,
                 const Ints& steps) {
  const std::size_t rank = static_cast<std::size_t>(x.dim());
  TL_CHECK_VALUE(starts.size() == rank && stops.size() == rank && steps.size() == rank,
                 "torchlean_native_ext.", op,
                 ": starts, stops and steps need one entry per axis (",
                 rank, "); got ", starts.size(), ", ", stops.size(), ", ", steps.size());
  for (std::size_t d = 0; d < rank; ++d) {
    const std::int64_t extent = x.size(static_cast<std::int64_t>(d));
    TL_CHECK_VALUE(steps[d] >= 1, "torchlean_native_ext.", op, ": steps[", d, "] = ", steps[d],
                   " must be >= 1");
    TL_CHECK_VALUE(starts[d] >= 0 && starts[d] <= stops[d] && stops[d] <= extent,
                   "torchlean_native_ext.", op, ": slice [", starts[d], ", ", stops[d],
                   ") is outside 0..", extent, " of axis ", d);
  }
}

at::Tensor slice_view(const at::Tensor& x, const Ints& starts, const Ints& stops,
                      const Ints& steps) {
  at::Tensor view = x;
  for (std::size_t d = 0; d < starts.size(); ++d) {
    view = view.slice(static_cast<std::int64_t>(d), starts[d], stops[d], steps[d]);
  }
  return view;
}
}  // namespace

Tensor slice_forward(const Tensor& x, const Ints& starts, const Ints& stops, const Ints& steps) {
  constexpr const char* op = "slice_forward";
  check_float(op, "x", x);
  check_slice(op, x, starts, stops, steps);
  c10::DeviceGuard guard(x.device());
  return own(slice_view(x, starts, stops, steps), {x});
}

Grads slice_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Ints& starts,
                     const Ints& stops, const Ints& steps) {
  constexpr const char* op = "slice_backward";
  check_float(op, "x", x);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  check_slice(op, x, starts, stops, steps);
  check_same_shape(op, "g", g, "out", out);
  c10::DeviceGuard guard(x.device());
  at::Tensor grad = at::zeros_like(x);
  at::Tensor view = slice_view(grad, starts, stops, steps);
  TL_CHECK_VALUE(g.sizes() == view.sizes(), "torchlean_native_ext.", op, ": g has shape ",
                 shape_text(g.sizes()), "; the slice has shape ", shape_text(view.sizes()));
  view.copy_(g);
  return one(grad);
}

Tensor gather_forward(const Tensor& x, const Tensor& index, std::int64_t dim) {
  constexpr const char* op = "gather_forward";
  check_float(op, "x", x);
  check_rank(op, "x", x, 1, 16);
  const std::int64_t axis = wrap_dim(op, dim, x.dim());
  check_index(op, index, x, axis, x.size(axis));
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    TL_CHECK_VALUE(d == axis || index.size(d) <= x.size(d), "torchlean_native_ext.", op,
                   ": index ", shape_text(index.sizes()), " exceeds x ", shape_text(x.sizes()),
                   " along axis ", d);
  }
  c10::DeviceGuard guard(x.device());
  return at::gather(x, axis, index);
}

Grads gather_backward(const Tensor& g, const Tensor& x, const Tensor& index, const Tensor& out,
                      std::int64_t dim) {
  constexpr const char* op = "gather_backward";
  check_float(op, "x", x);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  check_rank(op, "x", x, 1, 16);
  const std::int64_t axis = wrap_dim(op, dim, x.dim());
  check_index(op, index, x, axis, x.size(axis));
  check_same_shape(op, "g", g, "index", index);
  c10::DeviceGuard guard(x.device());
  return {at::zeros_like(x).scatter_add(axis, index, g), at::Tensor()};
}

namespace {
std::int64_t check_scatter(const char* op, const at::Tensor& base, const at::Tensor& index,
                           const at::Tensor& src, std::int64_t dim) {
  check_float(op, "base", base);
  check_like(op, "src", src, "base", base);
  check_rank(op, "base", base, 1, 16);
  const std::int64_t axis = wrap_dim(op, dim, base.dim());
  check_index(op, index, base, axis, base.size(axis));
  TL_CHECK_VALUE(src.dim() == base.dim(), "torchlean_native_ext.", op, ": src has rank ",
                 src.dim(), " but base has rank ", base.dim());
  for (std::int64_t d = 0; d < base.dim(); ++d) {
    TL_CHECK_VALUE(index.size(d) <= src.size(d) && (d == axis || index.size(d) <= base.size(d)),
                   "torchlean_native_ext.", op, ": index ", shape_text(index.sizes()),
                   " exceeds src ", shape_text(src.sizes()), " or base ",
                   shape_text(base.sizes()), " along axis ", d);
  }
  return axis;
}
}  // namespace

Tensor scatter_add_forward(const Tensor& base, const Tensor& index, const Tensor& src,
                           std::int64_t dim) {
  constexpr const char* op = "scatter_add_forward";
  const std::int64_t axis = check_scatter(op, base, index, src, dim);
  c10::DeviceGuard guard(base.device());
  return base.scatter_add(axis, index, src);
}

Grads scatter_add_backward(const Tensor& g, const Tensor& base, const Tensor& index,
                           const Tensor& src, const Tensor& out, std::int64_t dim) {
  constexpr const char* op = "scatter_add_backward";
  const std::int64_t axis = check_scatter(op, base, index, src, dim);
  check_like(op, "g", g, "base", base);
  check_like(op, "out", out, "base", base);
  check_same_shape(op, "g", g, "base", base);
  c10::DeviceGuard guard(base.device());
  // d src[i] = g[index[i]] where index covers src; src entries outside index's extent get 0.
  at::Tensor gsrc = at::zeros_like(src);
  std::vector<at::indexing::TensorIndex> covered;
  for (std::int64_t d = 0; d < src.dim(); ++d) {
    covered.emplace_back(at::indexing::Slice(0, index.size(d)));
  }
  gsrc.index_put_(covered, at::gather(g, axis, index));
  return {g.clone(at::MemoryFormat::Contiguous), at::Tensor(), gsrc};
}

// =================================================================================================
// seeded sources
// =================================================================================================

namespace {
template <class T>
void launch_uniform(at::Tensor& out, std::uint64_t key, cudaStream_t stream) {
  auto* kernel = &tl::rand_uniform_kernel<T>;
  TL_LAUNCH(kernel, dim3(element_blocks(out.numel())), dim3(tl::kElementThreads), 0, stream,
            out.data_ptr<T>(), out.numel(), key);
  tl::check_launch("rand_uniform_forward");
}

template <class T>
void launch_bernoulli(at::Tensor& out, std::uint64_t key, double keep, cudaStream_t stream) {
  auto* kernel = &tl::bernoulli_mask_kernel<T>;
  TL_LAUNCH(kernel, dim3(element_blocks(out.numel())), dim3(tl::kElementThreads), 0, stream,
            out.data_ptr<T>(), out.numel(), key, static_cast<T>(keep));
  tl::check_launch("bernoulli_mask_forward");
}
}  // namespace

Tensor rand_uniform_forward(const Ints& shape, std::uint64_t seed, std::uint64_t counter,
                            const std::string& dtype, std::int64_t device_index,
                            std::int64_t stream) {
  constexpr const char* op = "rand_uniform_forward";
  const at::TensorOptions options = source_options(op, dtype, device_index);
  checked_result_shape(op, "shape", shape, static_cast<std::int64_t>(options.dtype().itemsize()));
  c10::DeviceGuard guard(options.device());
  const cudaStream_t launch = launch_stream(op, stream, options.device());
  at::Tensor out = at::empty(shape, options);
  if (out.numel() == 0) return out;
  const std::uint64_t key = stream_key(seed, counter);
  AT_DISPATCH_FLOATING_TYPES(out.scalar_type(), op,
                             [&] { launch_uniform<scalar_t>(out, key, launch); });
  return out;
}

Tensor bernoulli_mask_forward(const Ints& shape, double keep_prob, std::uint64_t seed,
                              std::uint64_t counter, const std::string& dtype,
                              std::int64_t device_index, std::int64_t stream) {
  constexpr const char* op = "bernoulli_mask_forward";
  TL_CHECK_VALUE(keep_prob >= 0.0 && keep_prob <= 1.0, "torchlean_native_ext.", op,
                 ": keep_prob = ", keep_prob, " must lie in [0, 1]");
  const at::TensorOptions options = source_options(op, dtype, device_index);
  checked_result_shape(op, "shape", shape, static_cast<std::int64_t>(options.dtype().itemsize()));
  c10::DeviceGuard guard(options.device());
  const cudaStream_t launch = launch_stream(op, stream, options.device());
  at::Tensor out = at::empty(shape, options);
  if (out.numel() == 0) return out;
  const std::uint64_t key = stream_key(seed, counter);
  AT_DISPATCH_FLOATING_TYPES(out.scalar_type(), op, [&] {
    launch_bernoulli<scalar_t>(out, key, keep_prob, launch);
  });
  return out;
}

// =================================================================================================
// normalisation layers
// =================================================================================================

namespace {
void check_layer_norm(const char* op, const at::Tensor& x, const OptTensor& weight,
                      const OptTensor& bias, const Ints& normalized_shape, double eps) {
  check_float(op, "x", x);
  const std::int64_t k = static_cast<std::int64_t>(normalized_shape.size());
  TL_CHECK_VALUE(k >= 1 && k <= x.dim(), "torchlean_native_ext.", op, ": normalized_shape ",
                 shape_text(normalized_shape), " must name 1..", x.dim(), " trailing axes");
  const IntArrayRef tail = x.sizes().slice(static_cast<std::size_t>(x.dim() - k));
  TL_CHECK_VALUE(tail == IntArrayRef(normalized_shape), "torchlean_native_ext.", op,
                 ": normalized_shape ", shape_text(normalized_shape),
                 " is not the trailing shape of x ", shape_text(x.sizes()));
  TL_CHECK_VALUE(std::isfinite(eps) && eps >= 0.0, "torchlean_native_ext.", op, ": eps = ", eps,
                 " must be finite and >= 0");
  if (weight.has_value()) {
    check_like(op, "weight", *weight, "x", x);
    TL_CHECK_VALUE(weight->sizes() == IntArrayRef(normalized_shape), "torchlean_native_ext.",
                   op, ": weight has shape ", shape_text(weight->sizes()), "; expected ",
                   shape_text(normalized_shape));
  }
  if (bias.has_value()) {
    check_like(op, "bias", *bias, "x", x);
    TL_CHECK_VALUE(bias->sizes() == IntArrayRef(normalized_shape), "torchlean_native_ext.", op,
                   ": bias has shape ", shape_text(bias->sizes()), "; expected ",
                   shape_text(normalized_shape));
  }
}
}  // namespace

Tensor layer_norm_forward(const Tensor& x, const OptTensor& weight, const OptTensor& bias,
                          const Ints& normalized_shape, double eps) {
  check_layer_norm("layer_norm_forward", x, weight, bias, normalized_shape, eps);
  c10::DeviceGuard guard(x.device());
  // no row or an empty row: an empty result, as torch, without asking ATen's kernels
  if (x.numel() == 0) return at::empty_like(x, at::MemoryFormat::Contiguous);
  return std::get<0>(at::native_layer_norm(x, normalized_shape, weight, bias, eps));
}

Grads layer_norm_backward(const Tensor& g, const Tensor& x, const OptTensor& weight,
                          const OptTensor& bias, const Tensor& out, const Ints& normalized_shape,
                          double eps) {
  constexpr const char* op = "layer_norm_backward";
  check_layer_norm(op, x, weight, bias, normalized_shape, eps);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  check_same_shape(op, "g", g, "x", x);
  c10::DeviceGuard guard(x.device());
  if (x.numel() == 0) {
    // weight and bias gradients are sums over no row (zeros; empty when a normalised axis is)
    return {at::zeros_like(x), weight.has_value() ? at::zeros_like(*weight) : at::Tensor(),
            bias.has_value() ? at::zeros_like(*bias) : at::Tensor()};
  }
  const auto stats = at::native_layer_norm(x, normalized_shape, weight, bias, eps);
  const auto grads = at::native_layer_norm_backward(
      g, x, normalized_shape, std::get<1>(stats), std::get<2>(stats), weight, bias,
      {true, weight.has_value(), bias.has_value()});
  return {std::get<0>(grads), weight.has_value() ? std::get<1>(grads) : at::Tensor(),
          bias.has_value() ? std::get<2>(grads) : at::Tensor()};
}

namespace {
// Channel axis 1.  With running statistics: normalise with them (evaluation); without: with the
// batch statistics over every axis but 1 (training), leaving no state behind.
void check_batch_norm(const char* op, const at::Tensor& x, const OptTensor& weight,
                      const OptTensor& bias, const OptTensor& running_mean,
                      const OptTensor& running_var, double eps) {
  check_float(op, "x", x);
  check_rank(op, "x", x, 2, 16);
  TL_CHECK_VALUE(std::isfinite(eps) && eps >= 0.0, "torchlean_native_ext.", op, ": eps = ", eps,
                 " must be finite and >= 0");
  TL_CHECK_VALUE(running_mean.has_value() == running_var.has_value(), "torchlean_native_ext.",
                 op, ": running_mean and running_var must be given together");
  const std::int64_t channels = x.size(1);
  const std::pair<const char*, const OptTensor*> params[] = {
      {"weight", &weight}, {"bias", &bias}, {"running_mean", &running_mean},
      {"running_var", &running_var}};
  for (const auto& [name, param] : params) {
    if (!param->has_value()) continue;
    check_like(op, name, **param, "x", x);
    TL_CHECK_VALUE((*param)->dim() == 1 && (*param)->size(0) == channels,
                   "torchlean_native_ext.", op, ": ", name, " has shape ",
                   shape_text((*param)->sizes()), "; expected [", channels, "]");
  }
  TL_CHECK_VALUE(channels >= 1 || (!weight.has_value() && !bias.has_value()),
                 "torchlean_native_ext.", op, ": x has shape ", shape_text(x.sizes()),
                 " with 0 channels and an affine weight or bias; accepted: C >= 1, or C = 0 "
                 "with weight and bias absent (as torch)");
  if (!running_mean.has_value()) {
    TL_CHECK_VALUE(x.numel() == 0 || x.numel() / std::max<std::int64_t>(channels, 1) > 1,
                   "torchlean_native_ext.", op,
                   ": batch statistics need more than one value per channel, got x ",
                   shape_text(x.sizes()));
  }
}
}  // namespace

Tensor batch_norm_forward(const Tensor& x, const OptTensor& weight, const OptTensor& bias,
                          const OptTensor& running_mean, const OptTensor& running_var,
                          double eps) {
  check_batch_norm("batch_norm_forward", x, weight, bias, running_mean, running_var, eps);
  c10::DeviceGuard guard(x.device());
  // no value to normalise (an empty batch, spatial or channel axis): an empty result, as torch's
  // batch_norm; ATen's native_batch_norm refuses an empty input (and on the CPU its evaluation
  // path divides by the batch size)
  if (x.numel() == 0) return at::empty_like(x, at::MemoryFormat::Contiguous);
  const bool training = !running_mean.has_value();
  return std::get<0>(
      at::native_batch_norm(x, weight, bias, running_mean, running_var, training, 0.0, eps));
}

Grads batch_norm_backward(const Tensor& g, const Tensor& x, const OptTensor& weight,
                          const OptTensor& bias, const OptTensor& running_mean,
                          const OptTensor& running_var, const Tensor& out, double eps) {
  constexpr const char* op = "batch_norm_backward";
  check_batch_norm(op, x, weight, bias, running_mean, running_var, eps);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  check_same_shape(op, "g", g, "x", x);
  c10::DeviceGuard guard(x.device());
  if (x.numel() == 0) {
    // weight and bias gradients are sums over no value
    return {at::zeros_like(x), weight.has_value() ? at::zeros_like(*weight) : at::Tensor(),
            bias.has_value() ? at::zeros_like(*bias) : at::Tensor(), at::Tensor(), at::Tensor()};
  }
  const bool training = !running_mean.has_value();
  const auto stats =
      at::native_batch_norm(x, weight, bias, running_mean, running_var, training, 0.0, eps);
  const auto grads = at::native_batch_norm_backward(
      g, x, weight, running_mean, running_var, std::get<1>(stats), std::get<2>(stats), training,
      eps, {true, weight.has_value(), bias.has_value()});
  return {std::get<0>(grads), weight.has_value() ? std::get<1>(grads) : at::Tensor(),
          bias.has_value() ? std::get<2>(grads) : at::Tensor(), at::Tensor(), at::Tensor()};
}

// =================================================================================================
// convolution
// =================================================================================================

namespace {
struct ConvParams {
  Ints stride, padding, dilation, output_padding;
  std::int64_t groups;
  bool transposed;
};

// Checks a (transposed) convolution's operands and parameters; returns its output's shape.
std::vector<std::int64_t> check_conv(const char* op, const at::Tensor& x, const at::Tensor& weight,
                                     const OptTensor& bias, const ConvParams& p) {
  check_float(op, "x", x);
  check_like(op, "weight", weight, "x", x);
  check_rank(op, "weight", weight, 3, 5);
  const std::int64_t spatial = weight.dim() - 2;
  TL_CHECK_VALUE(x.dim() == weight.dim(), "torchlean_native_ext.", op, ": x has rank ", x.dim(),
                 "; a ", spatial, "-d convolution takes (batch, channels, ", spatial,
                 " spatial axes)");
  // zero-size rules of torch's convolutions (as reference.spatial_guards): C_in >= 1 (a
  // convolution over 0 input channels is refused: torch returns 0 output channels instead of C_out
  // there, dropping the bias); empty spatial axes only in an empty batch; no empty weight axis
  TL_CHECK_VALUE(p.transposed || x.size(1) >= 1, "torchlean_native_ext.", op, ": x has shape ",
                 shape_text(x.sizes()),
                 " with 0 input channels; accepted: C_in >= 1 (for C_in = 0 torch returns 0 "
                 "output channels instead of C_out, dropping the bias)");
  bool empty_spatial = false;
  for (std::int64_t ax = 2; ax < x.dim(); ++ax) empty_spatial = empty_spatial || x.size(ax) == 0;
  TL_CHECK_VALUE(x.size(1) >= 1 && (x.size(0) == 0 || !empty_spatial), "torchlean_native_ext.",
                 op, ": x has shape ", shape_text(x.sizes()),
                 " with an empty axis; accepted: C_in >= 1 and spatial extents >= 1 unless the "
                 "batch N is 0 (as torch convolutions)");
  TL_CHECK_VALUE(weight.numel() > 0, "torchlean_native_ext.", op, ": weight has shape ",
                 shape_text(weight.sizes()), " with an empty axis; accepted: every axis >= 1");
  const Ints kernel(weight.sizes().begin() + 2, weight.sizes().end());
  check_spatial_params(op, spatial, kernel, p.stride, p.padding, &p.dilation,
                       p.transposed ? kInt32Window : kInt64Window);
  TL_CHECK_VALUE(p.groups >= 1, "torchlean_native_ext.", op, ": groups = ", p.groups,
                 " must be >= 1");
  std::int64_t out_channels = 0;
  std::vector<std::int64_t> spatial_out;
  if (p.transposed) {
    TL_CHECK_VALUE(static_cast<std::int64_t>(p.output_padding.size()) == spatial,
                   "torchlean_native_ext.", op, ": output_padding must have ", spatial,
                   " entries");
    TL_CHECK_VALUE(x.size(1) == weight.size(0) && weight.size(0) % p.groups == 0,
                   "torchlean_native_ext.", op, ": x has ", x.size(1),
                   " channels; weight (in, out/groups, ...) ", shape_text(weight.sizes()),
                   " with groups ", p.groups, " expects ", weight.size(0));
    for (std::int64_t ax = 0; ax < spatial; ++ax) {
      const std::size_t i = static_cast<std::size_t>(ax);
      TL_CHECK_VALUE(p.output_padding[i] >= 0 &&
                            (p.output_padding[i] < p.stride[i] ||
                             p.output_padding[i] < p.dilation[i]),
                     "torchlean_native_ext.", op, ": output_padding[", ax, "] = ",
                     p.output_padding[i], " must be >= 0 and below stride or dilation");
      // ATen's transposed convolution computes its effective kernel, and its backward 2 * padding,
      // in 32-bit ints (reference.spatial_guards.transpose_fault)
      const std::int64_t effective = window_span(op, ax, kernel[i], p.dilation[i]);
      TL_CHECK_VALUE(effective <= kInt32Window, "torchlean_native_ext.", op,
                     ": dilation*(kernel - 1) + 1 = ", effective, " on spatial axis ", ax,
                     " is too large (accepted: at most ", kInt32Window,
                     " = 2**31 - 1; ATen's transposed convolution computes it in 32-bit ints)");
      TL_CHECK_VALUE(x.size(0) == 0 || 2 * p.padding[i] <= kInt32Window, "torchlean_native_ext.",
                     op, ": 2*padding = ", 2 * p.padding[i], " on spatial axis ", ax,
                     " is too large (accepted: at most ", kInt32Window,
                     " = 2**31 - 1 for a non-empty batch; the backward of ATen's transposed "
                     "convolution computes it in 32-bit ints)");
      // (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1; the
      // parameters are below 2**31, the extent is any int64
      const std::int64_t grown =
          checked_mul(op, "(extent - 1) * stride", x.size(2 + ax) - 1, p.stride[i]);
      const std::int64_t rest = effective + p.output_padding[i] - 2 * p.padding[i];
      std::int64_t out = 0;
      TL_CHECK_VALUE(!c10::add_overflows(grown, rest, &out), "torchlean_native_ext.", op,
                     ": spatial axis ", ax, " would have an output extent beyond int64");
      TL_CHECK_VALUE(out >= 1, "torchlean_native_ext.", op, ": spatial axis ", ax,
                     " would have output extent ", out);
      spatial_out.push_back(out);
    }
    out_channels = weight.size(1) * p.groups;
  } else {
    TL_CHECK_VALUE(x.size(1) == weight.size(1) * p.groups && weight.size(0) % p.groups == 0,
                   "torchlean_native_ext.", op, ": x has ", x.size(1),
                   " channels; weight (out, in/groups, ...) ", shape_text(weight.sizes()),
                   " with groups ", p.groups, " expects ", weight.size(1) * p.groups);
    for (std::int64_t ax = 0; ax < spatial; ++ax) {
      const std::size_t i = static_cast<std::size_t>(ax);
      spatial_out.push_back(
          window_out(op, ax, x.size(2 + ax), kernel[i], p.stride[i], p.padding[i], p.dilation[i]));
      // ATen's convolution computes input + 2*padding - dilation*(kernel - 1) - 1 in 32-bit ints
      // (reference.spatial_guards.conv_span_fault); window_out has checked it is >= 0
      const std::int64_t span = padded_extent(op, ax, x.size(2 + ax), p.padding[i]) -
                                window_span(op, ax, kernel[i], p.dilation[i]);
      TL_CHECK_VALUE(x.size(0) == 0 || span <= kInt32Window, "torchlean_native_ext.", op,
                     ": input + 2*padding - dilation*(kernel - 1) - 1 = ", span,
                     " on spatial axis ", ax, " is too large (accepted: at most ", kInt32Window,
                     " = 2**31 - 1 for a non-empty batch; ATen's convolution computes it in "
                     "32-bit ints)");
    }
    out_channels = weight.size(0);
  }
  if (bias.has_value()) {
    check_like(op, "bias", *bias, "x", x);
    TL_CHECK_VALUE(bias->dim() == 1 && bias->size(0) == out_channels, "torchlean_native_ext.",
                   op, ": bias has shape ", shape_text(bias->sizes()), "; expected [",
                   out_channels, "]");
  }
  std::vector<std::int64_t> shape{x.size(0), out_channels};
  shape.insert(shape.end(), spatial_out.begin(), spatial_out.end());
  checked_result_shape(op, "the result", shape, x.element_size());
  return shape;
}

at::Tensor conv_run(const at::Tensor& x, const at::Tensor& weight, const OptTensor& bias,
                    const ConvParams& p) {
  const Ints zeros(p.stride.size(), 0);
  return at::convolution(x, weight, bias, p.stride, p.padding, p.dilation, p.transposed,
                         p.transposed ? p.output_padding : zeros, p.groups);
}

Grads conv_grads(const at::Tensor& g, const at::Tensor& x, const at::Tensor& weight,
                 const OptTensor& bias, const ConvParams& p) {
  const Ints zeros(p.stride.size(), 0);
  const Ints bias_sizes{bias.has_value() ? bias->size(0) : 0};
  at::OptionalIntArrayRef bias_ref = std::nullopt;
  if (bias.has_value()) bias_ref = at::IntArrayRef(bias_sizes);
  const auto grads = at::convolution_backward(
      g, x, weight, bias_ref, p.stride, p.padding, p.dilation, p.transposed,
      p.transposed ? p.output_padding : zeros,
      p.groups, {true, true, bias.has_value()});
  return {std::get<0>(grads), std::get<1>(grads),
          bias.has_value() ? std::get<2>(grads) : at::Tensor()};
}
}  // namespace

Tensor conv_forward(const Tensor& x, const Tensor& weight, const OptTensor& bias,
                    const Ints& stride, const Ints& padding, const Ints& dilation,
                    std::int64_t groups) {
  const ConvParams p{stride, padding, dilation, {}, groups, false};
  check_conv("conv_forward", x, weight, bias, p);
  c10::DeviceGuard guard(x.device());
  return conv_run(x, weight, bias, p).contiguous();
}

Grads conv_backward(const Tensor& g, const Tensor& x, const Tensor& weight, const OptTensor& bias,
                    const Tensor& out, const Ints& stride, const Ints& padding,
                    const Ints& dilation, std::int64_t groups) {
  constexpr const char* op = "conv_backward";
  const ConvParams p{stride, padding, dilation, {}, groups, false};
  const std::vector<std::int64_t> shape = check_conv(op, x, weight, bias, p);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  check_cotangent(op, g, shape);
  check_same_shape(op, "out", out, "g", g);
  c10::DeviceGuard guard(x.device());
  return conv_grads(g, x, weight, bias, p);
}

Tensor conv_transpose_forward(const Tensor& x, const Tensor& weight, const OptTensor& bias,
                              const Ints& stride, const Ints& padding, const Ints& output_padding,
                              const Ints& dilation, std::int64_t groups) {
  const ConvParams p{stride, padding, dilation, output_padding, groups, true};
  check_conv("conv_transpose_forward", x, weight, bias, p);
  c10::DeviceGuard guard(x.device());
  return conv_run(x, weight, bias, p).contiguous();
}

Grads conv_transpose_backward(const Tensor& g, const Tensor& x, const Tensor& weight,
                              const OptTensor& bias, const Tensor& out, const Ints& stride,
                              const Ints& padding, const Ints& output_padding,
                              const Ints& dilation, std::int64_t groups) {
  constexpr const char* op = "conv_transpose_backward";
  const ConvParams p{stride, padding, dilation, output_padding, groups, true};
  const std::vector<std::int64_t> shape = check_conv(op, x, weight, bias, p);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  check_cotangent(op, g, shape);
  check_same_shape(op, "out", out, "g", g);
  c10::DeviceGuard guard(x.device());
  return conv_grads(g, x, weight, bias, p);
}

// =================================================================================================
// pooling
// =================================================================================================

namespace {
std::tuple<at::Tensor, at::Tensor> max_pool_run(const FoldedPool& f) {
  if (f.input.dim() == 3) {
    return at::max_pool2d_with_indices(f.input, f.kernel, f.stride, f.padding, f.dilation, false);
  }
  return at::max_pool3d_with_indices(f.input, f.kernel, f.stride, f.padding, f.dilation, false);
}
}  // namespace

Tensor max_pool_forward(const Tensor& x, const Ints& kernel, const Ints& stride,
                        const Ints& padding, const Ints& dilation) {
  constexpr const char* op = "max_pool_forward";
  check_float(op, "x", x);
  const FoldedPool f = fold_pool(op, x, kernel, stride, padding, dilation);
  c10::DeviceGuard guard(x.device());
  if (x.numel() == 0) return at::empty(f.out_shape, x.options());
  return std::get<0>(max_pool_run(f)).reshape(f.out_shape).contiguous();
}

Grads max_pool_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Ints& kernel,
                        const Ints& stride, const Ints& padding, const Ints& dilation) {
  constexpr const char* op = "max_pool_backward";
  check_float(op, "x", x);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  const FoldedPool f = fold_pool(op, x, kernel, stride, padding, dilation);
  check_cotangent(op, g, f.out_shape);
  c10::DeviceGuard guard(x.device());
  if (x.numel() == 0) return one(at::zeros_like(x));
  const at::Tensor indices = std::get<1>(max_pool_run(f));
  const at::Tensor g_folded = g.reshape(indices.sizes());
  at::Tensor gx;
  if (f.input.dim() == 3) {
    gx = at::max_pool2d_with_indices_backward(g_folded, f.input, f.kernel, f.stride, f.padding,
                                              f.dilation, false, indices);
  } else {
    gx = at::max_pool3d_with_indices_backward(g_folded, f.input, f.kernel, f.stride, f.padding,
                                              f.dilation, false, indices);
  }
  return one(gx.reshape(x.sizes()).contiguous());
}

// ATen's avg_pool3d (CPU and CUDA) refuses an unpadded spatial extent below the kernel size
// (pool3d_shape_check with check_input_size); the 1-d and 2-d pools accept it.  Refused here as
// an argument error (GuardError on the Python side), as reference.spatial_guards.check_avg_pool.
namespace {
void check_avg_pool3d_input(const char* op, const at::Tensor& x, const Ints& kernel) {
  const std::int64_t rank = static_cast<std::int64_t>(kernel.size());
  if (rank != 3) return;
  for (std::int64_t ax = 0; ax < rank; ++ax) {
    const std::int64_t in = x.size(x.dim() - rank + ax);
    TL_CHECK_VALUE(in >= kernel[static_cast<std::size_t>(ax)], "torchlean_native_ext.", op,
                   ": x of shape ", shape_text(x.sizes()), " has spatial extent ", in,
                   " on spatial axis ", ax, ", smaller than kernel_size ",
                   kernel[static_cast<std::size_t>(ax)],
                   " (accepted for a 3-d average pool: every unpadded spatial extent >= "
                   "kernel_size, as torch.nn.functional.avg_pool3d)");
  }
}
}  // namespace

Tensor avg_pool_forward(const Tensor& x, const Ints& kernel, const Ints& stride,
                        const Ints& padding) {
  constexpr const char* op = "avg_pool_forward";
  check_float(op, "x", x);
  const Ints dilation(kernel.size(), 1);
  const FoldedPool f = fold_pool(op, x, kernel, stride, padding, dilation);
  check_avg_pool3d_input(op, x, kernel);
  c10::DeviceGuard guard(x.device());
  if (x.numel() == 0) return at::empty(f.out_shape, x.options());
  // zero padding counts in the divisor (anchor-runtime.md 4.3)
  const at::Tensor y =
      f.input.dim() == 3
          ? at::avg_pool2d(f.input, f.kernel, f.stride, f.padding, false, true, std::nullopt)
          : at::avg_pool3d(f.input, f.kernel, f.stride, f.padding, false, true, std::nullopt);
  return y.reshape(f.out_shape).contiguous();
}

Grads avg_pool_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Ints& kernel,
                        const Ints& stride, const Ints& padding) {
  constexpr const char* op = "avg_pool_backward";
  check_float(op, "x", x);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  const Ints dilation(kernel.size(), 1);
  const FoldedPool f = fold_pool(op, x, kernel, stride, padding, dilation);
  check_avg_pool3d_input(op, x, kernel);
  check_cotangent(op, g, f.out_shape);
  c10::DeviceGuard guard(x.device());
  if (x.numel() == 0) return one(at::zeros_like(x));
  std::vector<std::int64_t> folded_out(f.input.sizes().begin(), f.input.sizes().end());
  const std::int64_t rank = static_cast<std::int64_t>(kernel.size());
  const std::int64_t lead = static_cast<std::int64_t>(f.out_shape.size()) - rank;
  for (std::int64_t ax = 0; ax < rank; ++ax) {
    folded_out[static_cast<std::size_t>(f.input.dim() - rank + ax)] =
        f.out_shape[static_cast<std::size_t>(lead + ax)];
  }
  const at::Tensor g_folded = g.reshape(folded_out);
  const at::Tensor gx =
      f.input.dim() == 3
          ? at::avg_pool2d_backward(g_folded, f.input, f.kernel, f.stride, f.padding, false, true,
                                    std::nullopt)
          : at::avg_pool3d_backward(g_folded, f.input, f.kernel, f.stride, f.padding, false, true,
                                    std::nullopt);
  return one(gx.reshape(x.sizes()).contiguous());
}

namespace {
template <class T>
void launch_smooth_forward(const at::Tensor& x, at::Tensor& out, const tl::PoolGeometry& geo,
                           double beta, cudaStream_t stream) {
  auto* kernel = &tl::smooth_max_pool_forward_kernel<T>;
  TL_LAUNCH(kernel, dim3(element_blocks(geo.channels * geo.out_size)),
            dim3(tl::kElementThreads), 0, stream, x.data_ptr<T>(), out.data_ptr<T>(),
            static_cast<T*>(nullptr), geo, static_cast<T>(beta));
  tl::check_launch("smooth_max_pool_forward");
}

template <class T>
void launch_smooth_backward(const at::Tensor& x, const at::Tensor& g, at::Tensor& dx,
                            const tl::PoolGeometry& geo, double beta, cudaStream_t stream) {
  at::Tensor stats = at::empty({geo.channels * geo.out_size * 2}, x.options());
  auto* stats_kernel = &tl::smooth_max_pool_forward_kernel<T>;
  TL_LAUNCH(stats_kernel, dim3(element_blocks(geo.channels * geo.out_size)),
            dim3(tl::kElementThreads), 0, stream, x.data_ptr<T>(), static_cast<T*>(nullptr),
            stats.data_ptr<T>(), geo, static_cast<T>(beta));
  tl::check_launch("smooth_max_pool_backward (window statistics)");
  auto* kernel = &tl::smooth_max_pool_backward_kernel<T>;
  TL_LAUNCH(kernel, dim3(element_blocks(geo.channels * geo.in_size)),
            dim3(tl::kElementThreads), 0, stream, x.data_ptr<T>(), g.data_ptr<T>(),
            stats.data_ptr<T>(), dx.data_ptr<T>(), geo, static_cast<T>(beta));
  tl::check_launch("smooth_max_pool_backward");
}
}  // namespace

Tensor smooth_max_pool_forward(const Tensor& x, const Ints& kernel, const Ints& stride,
                               const Ints& padding, double beta, std::int64_t stream) {
  constexpr const char* op = "smooth_max_pool_forward";
  check_float(op, "x", x);
  check_beta(op, beta, x.scalar_type());
  std::vector<std::int64_t> out_shape;
  const tl::PoolGeometry geo = pool_geometry(op, x, kernel, stride, padding, out_shape);
  c10::DeviceGuard guard(x.device());
  const cudaStream_t launch = launch_stream(op, stream, x.device());
  at::Tensor out = at::empty(out_shape, x.options());
  if (out.numel() == 0) return out;
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), op, [&] {
    launch_smooth_forward<scalar_t>(x, out, geo, beta, launch);
  });
  return out;
}

Grads smooth_max_pool_backward(const Tensor& g, const Tensor& x, const Tensor& out,
                               const Ints& kernel, const Ints& stride, const Ints& padding,
                               double beta, std::int64_t stream) {
  constexpr const char* op = "smooth_max_pool_backward";
  check_float(op, "x", x);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  check_beta(op, beta, x.scalar_type());
  std::vector<std::int64_t> out_shape;
  const tl::PoolGeometry geo = pool_geometry(op, x, kernel, stride, padding, out_shape);
  check_cotangent(op, g, out_shape);
  check_same_shape(op, "out", out, "g", g);  // never read, but checked as every operand is
  c10::DeviceGuard guard(x.device());
  const cudaStream_t launch = launch_stream(op, stream, x.device());
  at::Tensor dx = at::zeros_like(x);
  if (x.numel() == 0 || g.numel() == 0) return one(dx);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), op, [&] {
    launch_smooth_backward<scalar_t>(x, g, dx, geo, beta, launch);
  });
  return one(dx);
}

// =================================================================================================
// FNO spectral convolution (1-D, real FFT along the last axis)
//   X = rfft(x) [B, Cin, n/2+1]; Y[b, o, m] = sum_i X[b, i, m] W[m, i, o] for m < modes, 0 above;
//   y = irfft(Y, n) [B, Cout, n];  W = weight_real + i weight_imag, [modes, Cin, Cout].
// Adjoints (anchor-runtime.md 8.3), multiplicity w_k = 1 at DC and Nyquist (even n), else 2:
//   irfft^T g = (w / n) rfft(g) with the DC/Nyquist imaginary parts zeroed;
//   rfft^T G = n irfft(G / w).
// =================================================================================================

namespace {
void check_fno(const char* op, const at::Tensor& x, const at::Tensor& wr, const at::Tensor& wi) {
  check_float(op, "x", x);
  check_like(op, "weight_real", wr, "x", x);
  check_like(op, "weight_imag", wi, "x", x);
  check_rank(op, "x", x, 3, 3);
  check_rank(op, "weight_real", wr, 3, 3);
  check_same_shape(op, "weight_imag", wi, "weight_real", wr);
  const std::int64_t n = x.size(2);
  TL_CHECK_VALUE(n >= 1, "torchlean_native_ext.", op, ": transform length must be positive");
  TL_CHECK_VALUE(wr.size(1) == x.size(1), "torchlean_native_ext.", op, ": x has ", x.size(1),
                 " channels but the weights (modes, in, out) ", shape_text(wr.sizes()),
                 " expect ", wr.size(1));
  TL_CHECK_VALUE(wr.size(0) >= 1 && wr.size(0) <= n / 2 + 1, "torchlean_native_ext.", op,
                 ": ", wr.size(0), " modes requested; a length-", n, " grid has ", n / 2 + 1,
                 " (modes <= grid/2 + 1)");
}

// An empty batch, or 0 input or output channels: no transform to run (ATen's MKL and cuFFT plans
// refuse an empty batch, pytorch/pytorch#174984); every result is then empty or a sum over no
// channel, i.e. zeros.
bool fno_is_empty(const at::Tensor& x, const at::Tensor& wr) {
  return x.size(0) == 0 || x.size(1) == 0 || wr.size(2) == 0;
}

at::Tensor complex_of(const at::Tensor& real, const at::Tensor& imag) {
  return at::complex(real, imag);
}

// multiplicity of each rfft bin: 1 at DC and at Nyquist (even n), 2 elsewhere
at::Tensor bin_multiplicity(std::int64_t n, std::int64_t bins, const at::TensorOptions& options) {
  at::Tensor w = at::full({bins}, 2.0, options);
  w.index_put_({0}, 1.0);
  if (n % 2 == 0) w.index_put_({bins - 1}, 1.0);
  return w;
}
}  // namespace

Tensor fft_fno_forward(const Tensor& x, const Tensor& weight_real, const Tensor& weight_imag) {
  constexpr const char* op = "fft_fno_forward";
  check_fno(op, x, weight_real, weight_imag);
  c10::DeviceGuard guard(x.device());
  const std::int64_t n = x.size(2);
  if (fno_is_empty(x, weight_real)) {
    return at::zeros({x.size(0), weight_real.size(2), n}, x.options());
  }
  const std::int64_t bins = n / 2 + 1;
  const std::int64_t modes = weight_real.size(0);
  const at::Tensor spectrum = at::fft_rfft(x, std::nullopt, -1, std::nullopt);
  const at::Tensor weights = complex_of(weight_real, weight_imag);
  const at::Tensor mixed = at::einsum("bim,mio->bom", {spectrum.narrow(-1, 0, modes), weights});
  at::Tensor full = at::zeros({x.size(0), weight_real.size(2), bins}, spectrum.options());
  full.narrow(-1, 0, modes).copy_(mixed);
  return at::fft_irfft(full, n, -1, std::nullopt).contiguous();
}

Grads fft_fno_backward(const Tensor& g, const Tensor& x, const Tensor& weight_real,
                       const Tensor& weight_imag, const Tensor& out) {
  constexpr const char* op = "fft_fno_backward";
  check_fno(op, x, weight_real, weight_imag);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  check_same_shape(op, "g", g, "out", out);
  TL_CHECK_VALUE(g.dim() == 3 && g.size(0) == x.size(0) && g.size(1) == weight_real.size(2) &&
                        g.size(2) == x.size(2),
                 "torchlean_native_ext.", op, ": g has shape ", shape_text(g.sizes()),
                 "; expected [", x.size(0), ", ", weight_real.size(2), ", ", x.size(2), "]");
  c10::DeviceGuard guard(x.device());
  if (fno_is_empty(x, weight_real)) {
    return {at::zeros_like(x), at::zeros_like(weight_real), at::zeros_like(weight_imag)};
  }
  const std::int64_t n = x.size(2);
  const std::int64_t bins = n / 2 + 1;
  const std::int64_t modes = weight_real.size(0);
  const at::Tensor w = bin_multiplicity(n, bins, x.options());
  // cotangent of the half spectrum Y (irfft adjoint)
  const at::Tensor g_spec =
      at::fft_rfft(g, std::nullopt, -1, std::nullopt) * (w / static_cast<double>(n));
  at::Tensor g_real = at::real(g_spec).clone();
  at::Tensor g_imag = at::imag(g_spec).clone();
  g_imag.select(-1, 0).zero_();
  if (n % 2 == 0) g_imag.select(-1, bins - 1).zero_();
  const at::Tensor gy = complex_of(g_real, g_imag).narrow(-1, 0, modes);
  const at::Tensor spectrum = at::fft_rfft(x, std::nullopt, -1, std::nullopt).narrow(-1, 0, modes);
  const at::Tensor weights = complex_of(weight_real, weight_imag);
  const at::Tensor gw = at::einsum("bim,bom->mio", {at::conj_physical(spectrum), gy});
  const at::Tensor gx_modes = at::einsum("bom,mio->bim", {gy, at::conj_physical(weights)});
  at::Tensor gx_spec = at::zeros({x.size(0), x.size(1), bins}, gx_modes.options());
  gx_spec.narrow(-1, 0, modes).copy_(gx_modes);
  // rfft adjoint
  const at::Tensor gx = at::fft_irfft(gx_spec / w, n, -1, std::nullopt) * static_cast<double>(n);
  return {gx.contiguous(), at::real(gw).contiguous(), at::imag(gw).contiguous()};
}

// =================================================================================================
// selective scan
// =================================================================================================

namespace {
// x [..., L, S]; h0 [..., S]; a, b both [S] (shared) or both x's shape (token-dependent).
tl::ScanShape check_scan(const char* op, const at::Tensor& a, const at::Tensor& b,
                         const at::Tensor& x, const at::Tensor& h0) {
  check_float(op, "x", x);
  check_like(op, "a", a, "x", x);
  check_like(op, "b", b, "x", x);
  check_like(op, "h0", h0, "x", x);
  check_rank(op, "x", x, 2, 16);
  check_same_shape(op, "b", b, "a", a);
  tl::ScanShape s{};
  s.state = x.size(-1);
  s.len = x.size(-2);
  s.batch = s.len == 0 || s.state == 0 ? 0 : x.numel() / (s.len * s.state);
  if (s.len == 0 || s.state == 0) {
    s.batch = 1;
    for (std::int64_t i = 0; i < x.dim() - 2; ++i) s.batch *= x.size(i);
  }
  std::vector<std::int64_t> h_shape(x.sizes().begin(), x.sizes().end() - 2);
  h_shape.push_back(s.state);
  TL_CHECK_VALUE(h0.sizes() == IntArrayRef(h_shape), "torchlean_native_ext.", op,
                 ": h0 has shape ", shape_text(h0.sizes()), "; expected ",
                 shape_text(h_shape));
  if (a.dim() == 1) {
    TL_CHECK_VALUE(a.size(0) == s.state, "torchlean_native_ext.", op, ": shared coefficients ",
                   shape_text(a.sizes()), " must have one entry per state channel (", s.state,
                   ")");
    s.token = false;
  } else {
    TL_CHECK_VALUE(a.sizes() == x.sizes(), "torchlean_native_ext.", op,
                   ": token-dependent coefficients have shape ", shape_text(a.sizes()),
                   "; expected x's shape ", shape_text(x.sizes()), " (or [", s.state,
                   "] for shared coefficients)");
    s.token = true;
  }
  checked_mul(op, "channel count", s.batch, s.state);
  return s;
}

template <class T>
void launch_scan_forward(const at::Tensor& a, const at::Tensor& b, const at::Tensor& x,
                         const at::Tensor& h0, at::Tensor& h, const tl::ScanShape& s,
                         cudaStream_t stream) {
  auto* kernel = &tl::selective_scan_forward_kernel<T>;
  TL_LAUNCH(kernel, dim3(element_blocks(s.batch * s.state)), dim3(tl::kElementThreads), 0,
            stream, a.data_ptr<T>(), b.data_ptr<T>(), x.data_ptr<T>(), h0.data_ptr<T>(),
            h.data_ptr<T>(), s);
  tl::check_launch("selective_scan_forward");
}

template <class T>
void launch_scan_backward(const at::Tensor& a, const at::Tensor& b, const at::Tensor& x,
                          const at::Tensor& h0, const at::Tensor& h, const at::Tensor& g,
                          at::Tensor& da, at::Tensor& db, at::Tensor& dx, at::Tensor& dh0,
                          const tl::ScanShape& s, cudaStream_t stream) {
  auto* kernel = &tl::selective_scan_backward_kernel<T>;
  TL_LAUNCH(kernel, dim3(element_blocks(s.batch * s.state)), dim3(tl::kElementThreads), 0,
            stream, a.data_ptr<T>(), b.data_ptr<T>(), x.data_ptr<T>(), h0.data_ptr<T>(),
            h.data_ptr<T>(), g.data_ptr<T>(), da.data_ptr<T>(), db.data_ptr<T>(),
            dx.data_ptr<T>(), dh0.data_ptr<T>(), s);
  tl::check_launch("selective_scan_backward");
}
}  // namespace

Tensor selective_scan_forward(const Tensor& a, const Tensor& b, const Tensor& x, const Tensor& h0,
                              std::int64_t stream) {
  constexpr const char* op = "selective_scan_forward";
  const tl::ScanShape s = check_scan(op, a, b, x, h0);
  c10::DeviceGuard guard(x.device());
  const cudaStream_t launch = launch_stream(op, stream, x.device());
  at::Tensor h = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (h.numel() == 0) return h;
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), op, [&] {
    launch_scan_forward<scalar_t>(a, b, x, h0, h, s, launch);
  });
  return h;
}

Grads selective_scan_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& x,
                              const Tensor& h0, const Tensor& out, std::int64_t stream) {
  constexpr const char* op = "selective_scan_backward";
  const tl::ScanShape s = check_scan(op, a, b, x, h0);
  check_like(op, "g", g, "x", x);
  check_like(op, "out", out, "x", x);
  check_same_shape(op, "g", g, "x", x);
  check_same_shape(op, "out", out, "x", x);
  c10::DeviceGuard guard(x.device());
  const cudaStream_t launch = launch_stream(op, stream, x.device());
  at::Tensor dx = at::zeros_like(x);
  at::Tensor dh0 = h0.clone(at::MemoryFormat::Contiguous);
  if (x.numel() == 0) {
    // no time steps: h0 passes through nothing, its cotangent is zero
    return {at::zeros_like(a), at::zeros_like(b), dx, dh0.zero_()};
  }
  at::Tensor da = s.token ? at::empty_like(a) : at::empty({s.batch, s.state}, x.options());
  at::Tensor db = s.token ? at::empty_like(b) : at::empty({s.batch, s.state}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), op, [&] {
    launch_scan_backward<scalar_t>(a, b, x, h0, out, g, da, db, dx, dh0, s, launch);
  });
  if (!s.token) {
    // shared coefficients: accumulate the per-channel cotangents over the batch
    da = da.sum(0);
    db = db.sum(0);
  }
  return {da, db, dx, dh0};
}

// =================================================================================================
// direct attention (attention module: native_cuda.direct_attention)
// =================================================================================================

namespace {
struct AttentionArgs {
  tl::AttentionShape shape;
  double scale;
  int forward_rows;   // rows per warp of the forward's tile (tl::kAttnRows or tl::kAttnMinRows)
  int backward_rows;  // ... of both backward kernels' tiles
};

// set_attention_smallest_tiles's switch.
std::atomic<bool> attention_smallest_tiles{false};

// Pick the tiles for this device: the default one when its shared memory fits, else the smallest.
// The forward refuses what the backward could not run (a VJP capsule must not accept a forward
// whose backward fails later), naming the bytes needed and allowed and the widest d + d_v that fits.
void plan_attention_tiles(const char* op, AttentionArgs& args, const at::Tensor& q) {
  const tl::AttentionShape& s = args.shape;
  const std::int64_t bytes = static_cast<std::int64_t>(q.element_size());
  const std::int64_t limit = tl::max_dynamic_smem_optin(device_index_of(q));
  const bool smallest = attention_smallest_tiles.load();
  args.backward_rows = tl::attention_rows_that_fit(
      [&](int rows) { return tl::attention_backward_smem(s.d, s.dv, bytes, rows); }, limit, smallest);
  args.forward_rows = tl::attention_rows_that_fit(
      [&](int rows) { return tl::attention_forward_smem(s.d, s.dv, bytes, rows); }, limit, smallest);
  if (args.backward_rows == 0 || args.forward_rows == 0) {
    const std::int64_t needed = std::max(
        tl::attention_backward_smem(s.d, s.dv, bytes, tl::kAttnMinRows),
        tl::attention_forward_smem(s.d, s.dv, bytes, tl::kAttnMinRows));
    TL_CHECK_VALUE(false, "torchlean_native_ext.", op, ": head widths d = ", s.d, ", d_v = ", s.dv,
                   " in ", (q.scalar_type() == at::kDouble ? "float64" : "float32"), " need ", needed,
                   " bytes of shared memory per block for the backward (smallest tile, ",
                   tl::attention_tile(tl::kAttnMinRows), " rows); this device allows ", limit,
                   "; the largest d + d_v that fits is ",
                   tl::attention_max_width_sum(bytes, limit),
                   " (use float32 or smaller head widths)");
  }
}

// The mask layout of tl::AttentionShape from `layout` = [div0, mod0, stride0, div1, mod1, stride1,
// row_stride] (see there): divisors and moduli >= 1, strides >= 0, and every element any batch
// entry, row and key reads lies inside `mask`.
void check_mask_layout(const char* op, const at::Tensor& mask, const Ints& layout,
                       tl::AttentionShape& s) {
  TL_CHECK_VALUE(layout.size() == 7, "torchlean_native_ext.", op, ": mask_layout has ",
                 layout.size(), " entries; accepted: 7 (div0, mod0, stride0, div1, mod1, stride1, ",
                 "row_stride)");
  std::int64_t last = 0;  // the largest element offset read
  for (int t = 0; t < 2; ++t) {
    const std::int64_t div = layout[3 * t], mod = layout[3 * t + 1], stride = layout[3 * t + 2];
    TL_CHECK_VALUE(div >= 1 && mod >= 1 && stride >= 0, "torchlean_native_ext.", op,
                   ": mask_layout run ", t, " is div ", div, ", mod ", mod, ", stride ", stride,
                   "; accepted: div >= 1, mod >= 1, stride >= 0");
    s.mask_div[t] = div;
    s.mask_mod[t] = mod;
    s.mask_stride[t] = stride;
    last = checked_add(op, "mask extent", last, checked_mul(op, "mask extent", mod - 1, stride));
  }
  const std::int64_t row = layout[6];
  TL_CHECK_VALUE(row >= 0, "torchlean_native_ext.", op, ": mask_layout row_stride ", row,
                 " is negative");
  s.mask_row_stride = row;
  if (s.batch == 0 || s.nq == 0 || s.nk == 0) return;  // nothing is read
  last = checked_add(op, "mask extent", last, checked_mul(op, "mask extent", s.nq - 1, row));
  last = checked_add(op, "mask extent", last, s.nk - 1);
  TL_CHECK_VALUE(last < mask.numel(), "torchlean_native_ext.", op, ": mask of shape ",
                 shape_text(mask.sizes()), " has ", mask.numel(),
                 " elements, but its layout reads element ", last, " (n_q = ", s.nq, ", n_k = ",
                 s.nk, ")");
}

// q [BH, nq, d], k [BH, nk, d], v [BH, nk, dv]; mask bool, any shape, read through
// `mask_layout` (check_mask_layout).
AttentionArgs check_attention(const char* op, const at::Tensor& q, const at::Tensor& k,
                              const at::Tensor& v, const OptTensor& mask,
                              const Ints& mask_layout, std::optional<double> scale) {
  check_float(op, "q", q);
  check_like(op, "k", k, "q", q);
  check_like(op, "v", v, "q", q);
  check_rank(op, "q", q, 3, 3);
  check_rank(op, "k", k, 3, 3);
  check_rank(op, "v", v, 3, 3);
  TL_CHECK_VALUE(k.size(0) == q.size(0) && v.size(0) == q.size(0) && k.size(2) == q.size(2) &&
                        v.size(1) == k.size(1),
                 "torchlean_native_ext.", op, ": q ", shape_text(q.sizes()), ", k ",
                 shape_text(k.sizes()), ", v ", shape_text(v.sizes()),
                 " are not (batch, n_q, d), (batch, n_k, d), (batch, n_k, d_v)");
  AttentionArgs args{};
  args.shape.batch = q.size(0);
  args.shape.nq = q.size(1);
  args.shape.nk = k.size(1);
  args.shape.d = q.size(2);
  args.shape.dv = v.size(2);
  for (int t = 0; t < 2; ++t) {
    args.shape.mask_div[t] = 1;
    args.shape.mask_mod[t] = 1;
    args.shape.mask_stride[t] = 0;
  }
  args.shape.mask_row_stride = 0;
  TL_CHECK_VALUE(tl::attention_columns_per_lane(args.shape.d) > 0 &&
                        tl::attention_columns_per_lane(args.shape.dv) > 0,
                 "torchlean_native_ext.", op, ": head widths d = ", args.shape.d,
                 ", d_v = ", args.shape.dv, " exceed the kernel limit ", tl::kAttnMaxWidth);
  if (mask.has_value()) {
    check_mask(op, "mask", *mask, q);
    check_mask_layout(op, *mask, mask_layout, args.shape);
  }
  if (scale.has_value()) {
    TL_CHECK_VALUE(std::isfinite(*scale), "torchlean_native_ext.", op, ": scale = ", *scale,
                   " must be finite");
    args.scale = *scale;
  } else {
    args.scale = args.shape.d > 0 ? 1.0 / std::sqrt(static_cast<double>(args.shape.d)) : 1.0;
  }
  plan_attention_tiles(op, args, q);
  // the smallest tile of either pass gives the most blocks
  const std::int64_t tile = tl::attention_tile(std::min(args.forward_rows, args.backward_rows));
  const std::int64_t tiles_q = (args.shape.nq + tile - 1) / tile;
  const std::int64_t tiles_k = (args.shape.nk + tile - 1) / tile;
  const std::int64_t blocks =
      checked_mul(op, "launch grid", args.shape.batch, std::max(tiles_q, tiles_k));
  TL_CHECK_VALUE(blocks <= std::numeric_limits<std::int32_t>::max(), "torchlean_native_ext.",
                 op, ": ", blocks, " blocks exceed the launch limit");
  return args;
}

void check_smem(const char* op, std::int64_t bytes, int device) {
  const int limit = tl::max_dynamic_smem_optin(device);
  TL_CHECK_VALUE(bytes <= limit, "torchlean_native_ext.", op, ": tiles need ", bytes,
                 " bytes of shared memory; this device allows ", limit,
                 " (use float32 or a smaller head width)");
}

template <class T, int CPL, int ROWS>
void launch_attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const unsigned char* mask, at::Tensor& out, at::Tensor& lse,
                              const AttentionArgs& args, cudaStream_t stream) {
  const tl::AttentionShape& s = args.shape;
  const std::int64_t bytes = tl::attention_forward_smem(s.d, s.dv, sizeof(T), ROWS);
  check_smem("direct_attention_forward", bytes, device_index_of(q));
  auto* kernel = &tl::attention_forward_kernel<T, CPL, ROWS>;
  tl::allow_dynamic_smem(kernel, static_cast<int>(bytes), device_index_of(q));
  const std::int64_t tile = tl::attention_tile(ROWS);
  const std::int64_t blocks = s.batch * ((s.nq + tile - 1) / tile);
  TL_LAUNCH(kernel, dim3(static_cast<unsigned int>(blocks)), dim3(tl::kAttnThreads),
            static_cast<std::size_t>(bytes), stream, q.data_ptr<T>(), k.data_ptr<T>(),
            v.data_ptr<T>(), mask, out.data_ptr<T>(), lse.data_ptr<T>(), s,
            static_cast<T>(args.scale));
  tl::check_launch("direct_attention_forward");
}

template <class T, int CPL, int ROWS>
void launch_attention_backward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const unsigned char* mask, const at::Tensor& g,
                               const at::Tensor& lse, const at::Tensor& delta, at::Tensor& dq,
                               at::Tensor& dk, at::Tensor& dv, const AttentionArgs& args,
                               cudaStream_t stream) {
  const tl::AttentionShape& s = args.shape;
  const int device = device_index_of(q);
  const T scale = static_cast<T>(args.scale);
  const std::int64_t tile = tl::attention_tile(ROWS);
  const std::int64_t bytes = tl::attention_dq_smem(s.d, s.dv, sizeof(T), ROWS);
  check_smem("direct_attention_backward", bytes, device);
  auto* kernel = &tl::attention_backward_dq_kernel<T, CPL, ROWS>;
  tl::allow_dynamic_smem(kernel, static_cast<int>(bytes), device);
  const std::int64_t blocks = s.batch * ((s.nq + tile - 1) / tile);
  TL_LAUNCH(kernel, dim3(static_cast<unsigned int>(blocks)), dim3(tl::kAttnThreads),
            static_cast<std::size_t>(bytes), stream, q.data_ptr<T>(), k.data_ptr<T>(),
            v.data_ptr<T>(), mask, g.data_ptr<T>(), lse.data_ptr<T>(), delta.data_ptr<T>(),
            dq.data_ptr<T>(), s, scale);
  tl::check_launch("direct_attention_backward (dQ)");

  const std::int64_t kv_bytes = tl::attention_dkdv_smem(s.d, s.dv, sizeof(T), ROWS);
  check_smem("direct_attention_backward", kv_bytes, device);
  auto* kv_kernel = &tl::attention_backward_dkdv_kernel<T, CPL, ROWS>;
  tl::allow_dynamic_smem(kv_kernel, static_cast<int>(kv_bytes), device);
  const std::int64_t kv_blocks = s.batch * ((s.nk + tile - 1) / tile);
  TL_LAUNCH(kv_kernel, dim3(static_cast<unsigned int>(kv_blocks)), dim3(tl::kAttnThreads),
            static_cast<std::size_t>(kv_bytes), stream, q.data_ptr<T>(), k.data_ptr<T>(),
            v.data_ptr<T>(), mask, g.data_ptr<T>(), lse.data_ptr<T>(), delta.data_ptr<T>(),
            dk.data_ptr<T>(), dv.data_ptr<T>(), s, scale);
  tl::check_launch("direct_attention_backward (dK, dV)");
}

const unsigned char* mask_pointer(const OptTensor& mask) {
  return mask.has_value() ? reinterpret_cast<const unsigned char*>(mask->data_ptr<bool>())
                          : nullptr;
}

// Calls fn(std::integral_constant<int, CPL>{}, std::integral_constant<int, ROWS>{}) with the
// columns per lane the head widths need and the planned rows per warp.
template <class Fn>
void with_attention_tile(const tl::AttentionShape& s, int rows, Fn&& fn) {
  auto with_rows = [&](auto cpl) {
    if (rows == tl::kAttnRows) {
      fn(cpl, std::integral_constant<int, tl::kAttnRows>{});
    } else {
      fn(cpl, std::integral_constant<int, tl::kAttnMinRows>{});
    }
  };
  switch (tl::attention_columns_per_lane(std::max(s.d, s.dv))) {
    case 1:
      with_rows(std::integral_constant<int, 1>{});
      break;
    case 2:
      with_rows(std::integral_constant<int, 2>{});
      break;
    case 4:
      with_rows(std::integral_constant<int, 4>{});
      break;
    default:
      with_rows(std::integral_constant<int, 8>{});
      break;
  }
}
}  // namespace

std::tuple<Tensor, Tensor> direct_attention_forward(const Tensor& q, const Tensor& k,
                                                    const Tensor& v, const OptTensor& mask,
                                                    const Ints& mask_layout,
                                                    std::optional<double> scale,
                                                    std::int64_t stream) {
  constexpr const char* op = "direct_attention_forward";
  const AttentionArgs args = check_attention(op, q, k, v, mask, mask_layout, scale);
  const tl::AttentionShape& s = args.shape;
  c10::DeviceGuard guard(q.device());
  const cudaStream_t launch = launch_stream(op, stream, q.device());
  at::Tensor out = at::zeros({s.batch, s.nq, s.dv}, q.options());
  at::Tensor lse = at::full({s.batch, s.nq}, -std::numeric_limits<double>::infinity(), q.options());
  if (s.batch == 0 || s.nq == 0 || s.nk == 0) return {out, lse};  // no key: every row is blocked
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), op, [&] {
    with_attention_tile(s, args.forward_rows, [&](auto cpl, auto rows) {
      launch_attention_forward<scalar_t, decltype(cpl)::value, decltype(rows)::value>(
          q, k, v, mask_pointer(mask), out, lse, args, launch);
    });
  });
  return {out, lse};
}

Grads direct_attention_backward(const Tensor& g, const Tensor& q, const Tensor& k,
                                const Tensor& v, const OptTensor& mask, const Ints& mask_layout,
                                const Tensor& out, const Tensor& lse, std::optional<double> scale,
                                std::int64_t stream) {
  constexpr const char* op = "direct_attention_backward";
  const AttentionArgs args = check_attention(op, q, k, v, mask, mask_layout, scale);
  const tl::AttentionShape& s = args.shape;
  check_like(op, "g", g, "q", q);
  check_like(op, "out", out, "q", q);
  check_like(op, "lse", lse, "q", q);
  const std::vector<std::int64_t> out_shape{s.batch, s.nq, s.dv};
  TL_CHECK_VALUE(g.sizes() == IntArrayRef(out_shape) && out.sizes() == IntArrayRef(out_shape),
                 "torchlean_native_ext.", op, ": g and out must have shape ",
                 shape_text(out_shape));
  TL_CHECK_VALUE(lse.sizes() == IntArrayRef({s.batch, s.nq}), "torchlean_native_ext.", op,
                 ": lse has shape ", shape_text(lse.sizes()), "; expected [", s.batch, ", ",
                 s.nq, "]");
  c10::DeviceGuard guard(q.device());
  const cudaStream_t launch = launch_stream(op, stream, q.device());
  at::Tensor dq = at::zeros_like(q);
  at::Tensor dk = at::zeros_like(k);
  at::Tensor dv = at::zeros_like(v);
  if (s.batch == 0 || s.nq == 0 || s.nk == 0) return {dq, dk, dv, at::Tensor()};
  // delta_i = dO_i . O_i = sum_j p_ij dO_i . v_j  (FlashAttention-2's D)
  const at::Tensor delta = (g * out).sum(-1).contiguous();
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), op, [&] {
    with_attention_tile(s, args.backward_rows, [&](auto cpl, auto rows) {
      launch_attention_backward<scalar_t, decltype(cpl)::value, decltype(rows)::value>(
          q, k, v, mask_pointer(mask), g, lse, delta, dq, dk, dv, args, launch);
    });
  });
  return {dq, dk, dv, at::Tensor()};
}

bool set_attention_smallest_tiles(bool on) { return attention_smallest_tiles.exchange(on); }

std::int64_t set_max_element_blocks(std::int64_t blocks) {
  TL_CHECK_VALUE(blocks >= 1 && blocks <= tl::kMaxGridBlocks,
                 "torchlean_native_ext.set_max_element_blocks: blocks = ", blocks,
                 " (accepted: 1 to ", tl::kMaxGridBlocks, ")");
  return max_element_blocks.exchange(blocks);
}

}  // namespace torchlean_native
