// Entry points of the torchlean_native_ext extension (definitions in native_ops.cu).
//
// One `<op_label>_forward` per native-cuda op and one `<op_label>_backward` per differentiable
// op, plus `direct_attention_forward/backward`.  Conventions:
//   * tensors are contiguous (flat row-major), float32 or float64, on the extension's device;
//   * `<op>_backward(g, *inputs, out, *params)` returns one cotangent per input, already reduced
//     to that input's shape; an undefined tensor (None in Python) for inputs that are not
//     differentiable (masks, indices) or absent (optional bias);
//   * entry points that launch torchlean's own kernels take the CUDA stream handle last; it must
//     be the current stream of the tensors' device (torchlean passes that one), and any other
//     handle is refused before a launch (launch_stream in native_ops.cu): results and
//     temporaries (direct attention's delta, smooth_max_pool's window statistics) are allocated
//     and freed on the current stream, with no record_stream for another;
//   * every entry point validates its arguments with TL_CHECK_VALUE / TL_CHECK_INDEX before any
//     launch; a failed check throws a `Refusal`, which the bindings (bindings.cpp) raise in Python
//     as ValueError (refused arguments) or IndexError (index values).
#pragma once

#include <ATen/ATen.h>
#include <c10/util/StringUtil.h>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace torchlean_native {

// A refused argument.  The checks throw this rather than c10::Error (TORCH_CHECK_VALUE): it
// captures no C++ backtrace, and the bindings turn it into the Python exception inside this module,
// so a refusal never passes through torch's exception translation.  On the one GPU machine seen
// (torch 2.11.0+cu130, Python 3.12.3, GCC 13.3) every c10::Error thrown by this extension killed
// the process with SIGSEGV; the cause was not established (issue 7).
class Refusal : public std::exception {
 public:
  enum class Kind { VALUE, INDEX };
  Refusal(Kind kind, std::string message) : kind_(kind), message_(std::move(message)) {}
  Kind kind() const noexcept { return kind_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  Kind kind_;
  std::string message_;
};

[[noreturn]] inline void refuse(Refusal::Kind kind, std::string message) {
  throw Refusal(kind, std::move(message));
}

}  // namespace torchlean_native

// TL_CHECK_VALUE(cond, parts...): unless `cond`, refuse with the message c10::str(parts...)
// (Python ValueError).  TL_CHECK_INDEX: the same for an index value (Python IndexError).
#define TL_CHECK_VALUE(cond, ...) TL_CHECK_AS(VALUE, cond, __VA_ARGS__)
#define TL_CHECK_INDEX(cond, ...) TL_CHECK_AS(INDEX, cond, __VA_ARGS__)
#define TL_CHECK_AS(kind, cond, ...)                                                      \
  do {                                                                                    \
    if (C10_UNLIKELY(!(cond))) {                                                          \
      ::torchlean_native::refuse(::torchlean_native::Refusal::Kind::kind,                 \
                                 ::c10::str(__VA_ARGS__));                                \
    }                                                                                     \
  } while (false)

namespace torchlean_native {

using Tensor = at::Tensor;
using OptTensor = std::optional<at::Tensor>;
using Grads = std::vector<at::Tensor>;
using Ints = std::vector<std::int64_t>;

// Name of the device the build executes on: "cuda", or "cpu" for the host emulation build.
std::string device_type();

// accumulation
Tensor matmul_forward(const Tensor& a, const Tensor& b);
Grads matmul_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& out);
Tensor linear_forward(const Tensor& x, const Tensor& weight, const OptTensor& bias);
Grads linear_backward(const Tensor& g, const Tensor& x, const Tensor& weight,
                      const OptTensor& bias, const Tensor& out);
Tensor mse_loss_forward(const Tensor& a, const Tensor& b);
Grads mse_loss_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& out);

// pointwise
Tensor relu_forward(const Tensor& x);
Grads relu_backward(const Tensor& g, const Tensor& x, const Tensor& out);
Tensor gelu_forward(const Tensor& x, const std::string& approximate);
Grads gelu_backward(const Tensor& g, const Tensor& x, const Tensor& out,
                    const std::string& approximate);
Tensor add_forward(const Tensor& a, const Tensor& b);
Grads add_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& out);
Tensor sub_forward(const Tensor& a, const Tensor& b);
Grads sub_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& out);
Tensor mul_forward(const Tensor& a, const Tensor& b);
Grads mul_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& out);
Tensor scale_forward(const Tensor& x, double factor);
Grads scale_backward(const Tensor& g, const Tensor& x, const Tensor& out, double factor);
Tensor abs_forward(const Tensor& x);
Grads abs_backward(const Tensor& g, const Tensor& x, const Tensor& out);
Tensor sqrt_forward(const Tensor& x);
Grads sqrt_backward(const Tensor& g, const Tensor& x, const Tensor& out);
Tensor clamp_forward(const Tensor& x, double lo, double hi);
Grads clamp_backward(const Tensor& g, const Tensor& x, const Tensor& out, double lo, double hi);
Tensor max_forward(const Tensor& a, const Tensor& b);
Grads max_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& out);
Tensor min_forward(const Tensor& a, const Tensor& b);
Grads min_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& out);
Tensor sigmoid_forward(const Tensor& x);
Grads sigmoid_backward(const Tensor& g, const Tensor& x, const Tensor& out);
Tensor tanh_forward(const Tensor& x);
Grads tanh_backward(const Tensor& g, const Tensor& x, const Tensor& out);
Tensor softplus_forward(const Tensor& x);
Grads softplus_backward(const Tensor& g, const Tensor& x, const Tensor& out);
Tensor exp_forward(const Tensor& x);
Grads exp_backward(const Tensor& g, const Tensor& x, const Tensor& out);
Tensor sin_forward(const Tensor& x);
Grads sin_backward(const Tensor& g, const Tensor& x, const Tensor& out);
Tensor cos_forward(const Tensor& x);
Grads cos_backward(const Tensor& g, const Tensor& x, const Tensor& out);
Tensor log_forward(const Tensor& x);
Grads log_backward(const Tensor& g, const Tensor& x, const Tensor& out);
Tensor inv_forward(const Tensor& x);
Grads inv_backward(const Tensor& g, const Tensor& x, const Tensor& out);
Tensor safe_log_forward(const Tensor& x, double eps);
Grads safe_log_backward(const Tensor& g, const Tensor& x, const Tensor& out, double eps);

// normalisation over an axis
Tensor log_softmax_forward(const Tensor& x, std::int64_t dim);
Grads log_softmax_backward(const Tensor& g, const Tensor& x, const Tensor& out, std::int64_t dim);
Tensor softmax_forward(const Tensor& x, std::int64_t dim);
Grads softmax_backward(const Tensor& g, const Tensor& x, const Tensor& out, std::int64_t dim);
Tensor hard_masked_softmax_forward(const Tensor& x, const Tensor& mask, std::int64_t stream);
Grads hard_masked_softmax_backward(const Tensor& g, const Tensor& x, const Tensor& mask,
                                   const Tensor& out, std::int64_t stream);

// reductions
Tensor reduce_sum_forward(const Tensor& x, const Ints& dims, bool keepdim);
Grads reduce_sum_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Ints& dims,
                          bool keepdim);
Tensor reduce_mean_forward(const Tensor& x, const Ints& dims, bool keepdim);
Grads reduce_mean_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Ints& dims,
                           bool keepdim);

// views (results are fresh contiguous buffers)
Tensor reshape_forward(const Tensor& x, const Ints& shape);
Grads reshape_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Ints& shape);
Tensor permute_forward(const Tensor& x, const Ints& perm);
Grads permute_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Ints& perm);
Tensor broadcast_forward(const Tensor& x, const Ints& shape);
Grads broadcast_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Ints& shape);
Tensor concat_forward(const std::vector<Tensor>& xs, std::int64_t dim);
Grads concat_backward(const Tensor& g, const std::vector<Tensor>& xs, const Tensor& out,
                      std::int64_t dim);
Tensor slice_forward(const Tensor& x, const Ints& starts, const Ints& stops, const Ints& steps);
Grads slice_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Ints& starts,
                     const Ints& stops, const Ints& steps);
Tensor gather_forward(const Tensor& x, const Tensor& index, std::int64_t dim);
Grads gather_backward(const Tensor& g, const Tensor& x, const Tensor& index, const Tensor& out,
                      std::int64_t dim);
Tensor scatter_add_forward(const Tensor& base, const Tensor& index, const Tensor& src,
                           std::int64_t dim);
Grads scatter_add_backward(const Tensor& g, const Tensor& base, const Tensor& index,
                           const Tensor& src, const Tensor& out, std::int64_t dim);

// seeded sources (forward only)
Tensor rand_uniform_forward(const Ints& shape, std::uint64_t seed, std::uint64_t counter,
                            const std::string& dtype, std::int64_t device_index,
                            std::int64_t stream);
Tensor bernoulli_mask_forward(const Ints& shape, double keep_prob, std::uint64_t seed,
                              std::uint64_t counter, const std::string& dtype,
                              std::int64_t device_index, std::int64_t stream);

// channel-first layers
Tensor layer_norm_forward(const Tensor& x, const OptTensor& weight, const OptTensor& bias,
                          const Ints& normalized_shape, double eps);
Grads layer_norm_backward(const Tensor& g, const Tensor& x, const OptTensor& weight,
                          const OptTensor& bias, const Tensor& out, const Ints& normalized_shape,
                          double eps);
Tensor batch_norm_forward(const Tensor& x, const OptTensor& weight, const OptTensor& bias,
                          const OptTensor& running_mean, const OptTensor& running_var,
                          double eps);
Grads batch_norm_backward(const Tensor& g, const Tensor& x, const OptTensor& weight,
                          const OptTensor& bias, const OptTensor& running_mean,
                          const OptTensor& running_var, const Tensor& out, double eps);
Tensor conv_forward(const Tensor& x, const Tensor& weight, const OptTensor& bias,
                    const Ints& stride, const Ints& padding, const Ints& dilation,
                    std::int64_t groups);
Grads conv_backward(const Tensor& g, const Tensor& x, const Tensor& weight, const OptTensor& bias,
                    const Tensor& out, const Ints& stride, const Ints& padding,
                    const Ints& dilation, std::int64_t groups);
Tensor conv_transpose_forward(const Tensor& x, const Tensor& weight, const OptTensor& bias,
                              const Ints& stride, const Ints& padding, const Ints& output_padding,
                              const Ints& dilation, std::int64_t groups);
Grads conv_transpose_backward(const Tensor& g, const Tensor& x, const Tensor& weight,
                              const OptTensor& bias, const Tensor& out, const Ints& stride,
                              const Ints& padding, const Ints& output_padding,
                              const Ints& dilation, std::int64_t groups);
Tensor max_pool_forward(const Tensor& x, const Ints& kernel, const Ints& stride,
                        const Ints& padding, const Ints& dilation);
Grads max_pool_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Ints& kernel,
                        const Ints& stride, const Ints& padding, const Ints& dilation);
Tensor smooth_max_pool_forward(const Tensor& x, const Ints& kernel, const Ints& stride,
                               const Ints& padding, double beta, std::int64_t stream);
Grads smooth_max_pool_backward(const Tensor& g, const Tensor& x, const Tensor& out,
                               const Ints& kernel, const Ints& stride, const Ints& padding,
                               double beta, std::int64_t stream);
Tensor avg_pool_forward(const Tensor& x, const Ints& kernel, const Ints& stride,
                        const Ints& padding);
Grads avg_pool_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Ints& kernel,
                        const Ints& stride, const Ints& padding);

// spectral and sequence operators
Tensor fft_fno_forward(const Tensor& x, const Tensor& weight_real, const Tensor& weight_imag);
Grads fft_fno_backward(const Tensor& g, const Tensor& x, const Tensor& weight_real,
                       const Tensor& weight_imag, const Tensor& out);
Tensor selective_scan_forward(const Tensor& a, const Tensor& b, const Tensor& x, const Tensor& h0,
                              std::int64_t stream);
Grads selective_scan_backward(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& x,
                              const Tensor& h0, const Tensor& out, std::int64_t stream);

// attention module: native_cuda.direct_attention
// mask_layout: [div0, mod0, stride0, div1, mod1, stride1, row_stride], how batch entry b and
// query row i index the (compact, broadcast-free) mask: see tl::AttentionShape.
std::tuple<Tensor, Tensor> direct_attention_forward(const Tensor& q, const Tensor& k,
                                                    const Tensor& v, const OptTensor& mask,
                                                    const Ints& mask_layout,
                                                    std::optional<double> scale,
                                                    std::int64_t stream);
Grads direct_attention_backward(const Tensor& g, const Tensor& q, const Tensor& k,
                                const Tensor& v, const OptTensor& mask, const Ints& mask_layout,
                                const Tensor& out, const Tensor& lse, std::optional<double> scale,
                                std::int64_t stream);
// With `on`, direct attention runs on its smallest tiles (kAttnMinRows) wherever they fit, as a
// device with less shared memory per block would (an sm_86/sm_89 card's 99 KiB, a T4's 64 KiB),
// process-wide; returns the previous setting.  A GPU with room for the default tiles never picks
// the smallest ones itself, so bench/gpu_check.py runs the attention parity cases on them too
// (review178 F2, review185 F1).
bool set_attention_smallest_tiles(bool on);
// At most `blocks` (1 to tl::kMaxGridBlocks, the default) blocks per launch of the kernels that run
// one thread per work item (rand_uniform, bernoulli_mask, smooth_max_pool, selective_scan), whose
// grid-stride loops then cover the rest, process-wide; returns the previous limit.  A launch
// reaches the default only beyond 268 million work items, so bench/gpu_check.py runs those ops'
// multi-block parity cases on 2 blocks too (review208 F1).
std::int64_t set_max_element_blocks(std::int64_t blocks);

}  // namespace torchlean_native
