// Python bindings of torchlean_native_ext (torch.utils.cpp_extension; the module name comes from
// TORCH_EXTENSION_NAME).  Each function forwards to the entry point of the same name in
// native_ops.cu; argument names match stubs/torchlean_native_ext.pyi.
#include <torch/extension.h>

#include "native_ops.h"

#ifdef TORCHLEAN_EMULATE
#include "emu/tl_emulator.h"
#endif

namespace py = pybind11;
namespace tn = torchlean_native;

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "torchlean native-cuda kernels (csrc/native_ops.cu)";
  m.def("device_type", &tn::device_type);
  m.def("matmul_forward", &tn::matmul_forward, py::arg("a"), py::arg("b"));
  m.def("matmul_backward", &tn::matmul_backward,
        py::arg("g"), py::arg("a"), py::arg("b"), py::arg("out"));
  m.def("linear_forward", &tn::linear_forward, py::arg("x"), py::arg("weight"), py::arg("bias"));
  m.def("linear_backward", &tn::linear_backward,
        py::arg("g"), py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("out"));
  m.def("mse_loss_forward", &tn::mse_loss_forward, py::arg("a"), py::arg("b"));
  m.def("mse_loss_backward", &tn::mse_loss_backward,
        py::arg("g"), py::arg("a"), py::arg("b"), py::arg("out"));
  m.def("relu_forward", &tn::relu_forward, py::arg("x"));
  m.def("relu_backward", &tn::relu_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  m.def("gelu_forward", &tn::gelu_forward, py::arg("x"), py::arg("approximate"));
  m.def("gelu_backward", &tn::gelu_backward,
        py::arg("g"), py::arg("x"), py::arg("out"), py::arg("approximate"));
  m.def("add_forward", &tn::add_forward, py::arg("a"), py::arg("b"));
  m.def("add_backward", &tn::add_backward,
        py::arg("g"), py::arg("a"), py::arg("b"), py::arg("out"));
  m.def("sub_forward", &tn::sub_forward, py::arg("a"), py::arg("b"));
  m.def("sub_backward", &tn::sub_backward,
        py::arg("g"), py::arg("a"), py::arg("b"), py::arg("out"));
  m.def("mul_forward", &tn::mul_forward, py::arg("a"), py::arg("b"));
  m.def("mul_backward", &tn::mul_backward,
        py::arg("g"), py::arg("a"), py::arg("b"), py::arg("out"));
  m.def("scale_forward", &tn::scale_forward, py::arg("x"), py::arg("factor"));
  m.def("scale_backward", &tn::scale_backward,
        py::arg("g"), py::arg("x"), py::arg("out"), py::arg("factor"));
  m.def("abs_forward", &tn::abs_forward, py::arg("x"));
  m.def("abs_backward", &tn::abs_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  m.def("sqrt_forward", &tn::sqrt_forward, py::arg("x"));
  m.def("sqrt_backward", &tn::sqrt_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  m.def("clamp_forward", &tn::clamp_forward, py::arg("x"), py::arg("lo"), py::arg("hi"));
  m.def("clamp_backward", &tn::clamp_backward,
        py::arg("g"), py::arg("x"), py::arg("out"), py::arg("lo"), py::arg("hi"));
  m.def("max_forward", &tn::max_forward, py::arg("a"), py::arg("b"));
  m.def("max_backward", &tn::max_backward,
        py::arg("g"), py::arg("a"), py::arg("b"), py::arg("out"));
  m.def("min_forward", &tn::min_forward, py::arg("a"), py::arg("b"));
  m.def("min_backward", &tn::min_backward,
        py::arg("g"), py::arg("a"), py::arg("b"), py::arg("out"));
  m.def("sigmoid_forward", &tn::sigmoid_forward, py::arg("x"));
  m.def("sigmoid_backward", &tn::sigmoid_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  m.def("tanh_forward", &tn::tanh_forward, py::arg("x"));
  m.def("tanh_backward", &tn::tanh_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  m.def("softplus_forward", &tn::softplus_forward, py::arg("x"));
  m.def("softplus_backward", &tn::softplus_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  m.def("exp_forward", &tn::exp_forward, py::arg("x"));
  m.def("exp_backward", &tn::exp_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  m.def("sin_forward", &tn::sin_forward, py::arg("x"));
  m.def("sin_backward", &tn::sin_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  m.def("cos_forward", &tn::cos_forward, py::arg("x"));
  m.def("cos_backward", &tn::cos_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  m.def("log_forward", &tn::log_forward, py::arg("x"));
  m.def("log_backward", &tn::log_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  m.def("inv_forward", &tn::inv_forward, py::arg("x"));
  m.def("inv_backward", &tn::inv_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  m.def("safe_log_forward", &tn::safe_log_forward, py::arg("x"), py::arg("eps"));
  m.def("safe_log_backward", &tn::safe_log_backward,
        py::arg("g"), py::arg("x"), py::arg("out"), py::arg("eps"));
  m.def("log_softmax_forward", &tn::log_softmax_forward, py::arg("x"), py::arg("dim"));
  m.def("log_softmax_backward", &tn::log_softmax_backward,
        py::arg("g"), py::arg("x"), py::arg("out"), py::arg("dim"));
  m.def("softmax_forward", &tn::softmax_forward, py::arg("x"), py::arg("dim"));
  m.def("softmax_backward", &tn::softmax_backward,
        py::arg("g"), py::arg("x"), py::arg("out"), py::arg("dim"));
  m.def("hard_masked_softmax_forward", &tn::hard_masked_softmax_forward,
        py::arg("x"), py::arg("mask"), py::arg("stream"));
  m.def("hard_masked_softmax_backward", &tn::hard_masked_softmax_backward,
        py::arg("g"), py::arg("x"), py::arg("mask"), py::arg("out"), py::arg("stream"));
  m.def("reduce_sum_forward", &tn::reduce_sum_forward,
        py::arg("x"), py::arg("dims"), py::arg("keepdim"));
  m.def("reduce_sum_backward", &tn::reduce_sum_backward,
        py::arg("g"), py::arg("x"), py::arg("out"), py::arg("dims"), py::arg("keepdim"));
  m.def("reduce_mean_forward", &tn::reduce_mean_forward,
        py::arg("x"), py::arg("dims"), py::arg("keepdim"));
  m.def("reduce_mean_backward", &tn::reduce_mean_backward,
        py::arg("g"), py::arg("x"), py::arg("out"), py::arg("dims"), py::arg("keepdim"));
  m.def("reshape_forward", &tn::reshape_forward, py::arg("x"), py::arg("shape"));
  m.def("reshape_backward", &tn::reshape_backward,
        py::arg("g"), py::arg("x"), py::arg("out"), py::arg("shape"));
  m.def("permute_forward", &tn::permute_forward, py::arg("x"), py::arg("perm"));
  m.def("permute_backward", &tn::permute_backward,
        py::arg("g"), py::arg("x"), py::arg("out"), py::arg("perm"));
  m.def("broadcast_forward", &tn::broadcast_forward, py::arg("x"), py::arg("shape"));
  m.def("broadcast_backward", &tn::broadcast_backward,
        py::arg("g"), py::arg("x"), py::arg("out"), py::arg("shape"));
  m.def("concat_forward", &tn::concat_forward, py::arg("xs"), py::arg("dim"));
  m.def("concat_backward", &tn::concat_backward,
        py::arg("g"), py::arg("xs"), py::arg("out"), py::arg("dim"));
  m.def("slice_forward", &tn::slice_forward,
        py::arg("x"), py::arg("starts"), py::arg("stops"), py::arg("steps"));
  m.def("slice_backward", &tn::slice_backward,
        py::arg("g"), py::arg("x"), py::arg("out"), py::arg("starts"), py::arg("stops"),
        py::arg("steps"));
  m.def("gather_forward", &tn::gather_forward, py::arg("x"), py::arg("index"), py::arg("dim"));
  m.def("gather_backward", &tn::gather_backward,
        py::arg("g"), py::arg("x"), py::arg("index"), py::arg("out"), py::arg("dim"));
  m.def("scatter_add_forward", &tn::scatter_add_forward,
        py::arg("base"), py::arg("index"), py::arg("src"), py::arg("dim"));
  m.def("scatter_add_backward", &tn::scatter_add_backward,
        py::arg("g"), py::arg("base"), py::arg("index"), py::arg("src"), py::arg("out"),
        py::arg("dim"));
  m.def("rand_uniform_forward", &tn::rand_uniform_forward,
        py::arg("shape"), py::arg("seed"), py::arg("counter"), py::arg("dtype"),
        py::arg("device_index"), py::arg("stream"));
  m.def("bernoulli_mask_forward", &tn::bernoulli_mask_forward,
        py::arg("shape"), py::arg("keep_prob"), py::arg("seed"), py::arg("counter"),
        py::arg("dtype"), py::arg("device_index"), py::arg("stream"));
  m.def("layer_norm_forward", &tn::layer_norm_forward,
        py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("normalized_shape"),
        py::arg("eps"));
  m.def("layer_norm_backward", &tn::layer_norm_backward,
        py::arg("g"), py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("out"),
        py::arg("normalized_shape"), py::arg("eps"));
  m.def("batch_norm_forward", &tn::batch_norm_forward,
        py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("running_mean"),
        py::arg("running_var"), py::arg("eps"));
  m.def("batch_norm_backward", &tn::batch_norm_backward,
        py::arg("g"), py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("running_mean"),
        py::arg("running_var"), py::arg("out"), py::arg("eps"));
  m.def("conv_forward", &tn::conv_forward,
        py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("stride"), py::arg("padding"),
        py::arg("dilation"), py::arg("groups"));
  m.def("conv_backward", &tn::conv_backward,
        py::arg("g"), py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("out"),
        py::arg("stride"), py::arg("padding"), py::arg("dilation"), py::arg("groups"));
  m.def("conv_transpose_forward", &tn::conv_transpose_forward,
        py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("stride"), py::arg("padding"),
        py::arg("output_padding"), py::arg("dilation"), py::arg("groups"));
  m.def("conv_transpose_backward", &tn::conv_transpose_backward,
        py::arg("g"), py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("out"),
        py::arg("stride"), py::arg("padding"), py::arg("output_padding"), py::arg("dilation"),
        py::arg("groups"));
  m.def("max_pool_forward", &tn::max_pool_forward,
        py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"),
        py::arg("dilation"));
  m.def("max_pool_backward", &tn::max_pool_backward,
        py::arg("g"), py::arg("x"), py::arg("out"), py::arg("kernel"), py::arg("stride"),
        py::arg("padding"), py::arg("dilation"));
  m.def("smooth_max_pool_forward", &tn::smooth_max_pool_forward,
        py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"), py::arg("beta"),
        py::arg("stream"));
  m.def("smooth_max_pool_backward", &tn::smooth_max_pool_backward,
        py::arg("g"), py::arg("x"), py::arg("out"), py::arg("kernel"), py::arg("stride"),
        py::arg("padding"), py::arg("beta"), py::arg("stream"));
  m.def("avg_pool_forward", &tn::avg_pool_forward,
        py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"));
  m.def("avg_pool_backward", &tn::avg_pool_backward,
        py::arg("g"), py::arg("x"), py::arg("out"), py::arg("kernel"), py::arg("stride"),
        py::arg("padding"));
  m.def("fft_fno_forward", &tn::fft_fno_forward,
        py::arg("x"), py::arg("weight_real"), py::arg("weight_imag"));
  m.def("fft_fno_backward", &tn::fft_fno_backward,
        py::arg("g"), py::arg("x"), py::arg("weight_real"), py::arg("weight_imag"),
        py::arg("out"));
  m.def("selective_scan_forward", &tn::selective_scan_forward,
        py::arg("a"), py::arg("b"), py::arg("x"), py::arg("h0"), py::arg("stream"));
  m.def("selective_scan_backward", &tn::selective_scan_backward,
        py::arg("g"), py::arg("a"), py::arg("b"), py::arg("x"), py::arg("h0"), py::arg("out"),
        py::arg("stream"));
  m.def("direct_attention_forward", &tn::direct_attention_forward,
        py::arg("q"), py::arg("k"), py::arg("v"), py::arg("mask"), py::arg("scale"),
        py::arg("stream"));
  m.def("direct_attention_backward", &tn::direct_attention_backward,
        py::arg("g"), py::arg("q"), py::arg("k"), py::arg("v"), py::arg("mask"), py::arg("out"),
        py::arg("lse"), py::arg("scale"), py::arg("stream"));
#ifdef TORCHLEAN_EMULATE
  m.def("emulation_set_schedule_seed", &tl_emu::set_schedule_seed, py::arg("seed"),
        "Permute the emulator's thread and block order (0 = index order).");
  m.def("emulation_set_shared_memory_limit", &tl_emu::set_shared_memory_limit, py::arg("bytes"),
        "Emulate a device with this much dynamic shared memory per block (0 = 227 KiB); "
        "returns the previous limit.");
#endif
}
