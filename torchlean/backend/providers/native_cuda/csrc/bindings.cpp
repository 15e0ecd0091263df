// Python bindings of torchlean_native_ext (torch.utils.cpp_extension; the module name comes from
// TORCH_EXTENSION_NAME).  Each function forwards to the entry point of the same name in
// native_ops.cu; argument names match stubs/torchlean_native_ext.pyi.
#include <torch/extension.h>

#include <new>
#include <stdexcept>
#include <utility>

#include "native_ops.h"

#ifdef TORCHLEAN_EMULATE
#include "emu/tl_emulator.h"
#endif

namespace py = pybind11;
namespace tn = torchlean_native;

namespace {

[[noreturn]] void raise_here(PyObject* type, const char* message) {
  PyErr_SetString(type, message);
  throw py::error_already_set();
}

py::object torch_attr(const char* name) { return py::module_::import("torch").attr(name); }

// Raises the exception being handled as a Python exception, inside this module.  A refusal
// (tn::Refusal, from TL_CHECK_VALUE / TL_CHECK_INDEX) becomes ValueError / IndexError with the
// check's message.  An ATen error (c10::Error) becomes the type torch's own translation gives
// (torch/csrc/Exceptions.h: torch.OutOfMemoryError, torch.AcceleratorError with its error_code,
// torch.linalg.LinAlgError, ValueError, IndexError, TypeError, NotImplementedError, BufferError,
// else RuntimeError), with the message without the C++ backtrace.  A standard exception becomes
// what pybind11 would give (MemoryError, ValueError, IndexError, OverflowError, else
// RuntimeError).  Anything else (pybind11's own, thread cancellation) is rethrown as is.
[[noreturn]] void raise_in_module() {
  try {
    throw;
  } catch (const py::error_already_set&) {
    throw;
  } catch (const tn::Refusal& refusal) {
    raise_here(refusal.kind() == tn::Refusal::Kind::INDEX ? PyExc_IndexError : PyExc_ValueError,
               refusal.what());
  } catch (const c10::OutOfMemoryError& error) {
    raise_here(torch_attr("OutOfMemoryError").ptr(), error.what_without_backtrace());
  } catch (const c10::AcceleratorError& error) {
    const py::object type = torch_attr("AcceleratorError");
    const py::object value = type(error.what_without_backtrace(), error.get_error_code());
    value.attr("error_code") = error.get_error_code();
    PyErr_SetObject(type.ptr(), value.ptr());
    throw py::error_already_set();
  } catch (const c10::LinAlgError& error) {
    raise_here(torch_attr("linalg").attr("LinAlgError").ptr(), error.what_without_backtrace());
  } catch (const c10::ValueError& error) {
    raise_here(PyExc_ValueError, error.what_without_backtrace());
  } catch (const c10::IndexError& error) {
    raise_here(PyExc_IndexError, error.what_without_backtrace());
  } catch (const c10::TypeError& error) {
    raise_here(PyExc_TypeError, error.what_without_backtrace());
  } catch (const c10::NotImplementedError& error) {
    raise_here(PyExc_NotImplementedError, error.what_without_backtrace());
  } catch (const c10::BufferError& error) {
    raise_here(PyExc_BufferError, error.what_without_backtrace());
  } catch (const c10::Error& error) {
    raise_here(PyExc_RuntimeError, error.what_without_backtrace());
  } catch (const std::bad_alloc& error) {
    raise_here(PyExc_MemoryError, error.what());
  } catch (const std::out_of_range& error) {
    raise_here(PyExc_IndexError, error.what());
  } catch (const std::overflow_error& error) {
    raise_here(PyExc_OverflowError, error.what());
  } catch (const std::invalid_argument& error) {
    raise_here(PyExc_ValueError, error.what());
  } catch (const std::domain_error& error) {
    raise_here(PyExc_ValueError, error.what());
  } catch (const std::length_error& error) {
    raise_here(PyExc_ValueError, error.what());
  } catch (const std::range_error& error) {
    raise_here(PyExc_ValueError, error.what());
  } catch (const std::exception& error) {
    raise_here(PyExc_RuntimeError, error.what());
  }
}

// Refusing<&f>::call is f, with its exceptions raised as Python exceptions right here
// (raise_in_module): pybind11 restores an error_already_set before consulting any exception
// translator, so no refusal, ATen error or standard exception leaves this module as a C++
// exception (see tn::Refusal for why).
template <auto Fn>
struct Refusing;

template <typename R, typename... Args, R (*Fn)(Args...)>
struct Refusing<Fn> {
  static R call(Args... args) {
    try {
      return Fn(std::forward<Args>(args)...);
    } catch (...) {
      raise_in_module();
    }
  }
};

#ifdef TORCHLEAN_EMULATE
void emulation_noop_kernel() {}

// Test seam of the emulator's shared-memory opt-in (tl_emu::opt_in_shared_memory): a launch above
// 48 KiB needs one, as cudaFuncSetAttribute on a GPU.  `opt_in` 0 launches without any.
void emulation_launch_with_shared_memory(std::int64_t bytes, std::int64_t opt_in) {
  if (bytes < 0 || opt_in < 0) throw std::invalid_argument("bytes and opt_in must be >= 0");
  const void* kernel = reinterpret_cast<const void*>(&emulation_noop_kernel);
  tl_emu::forget_shared_memory_opt_in(kernel);
  if (opt_in > 0) tl_emu::opt_in_shared_memory(kernel, static_cast<std::size_t>(opt_in));
  tl_emu::launch(kernel, dim3(1), dim3(32), static_cast<std::size_t>(bytes), [] { emulation_noop_kernel(); });
}

void emulation_vote_kernel(const std::int64_t* votes, std::int64_t live, bool diverge,
                           std::int64_t* out) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x * blockDim.x + threadIdx.x);
  if (static_cast<std::int64_t>(threadIdx.x) >= live && diverge) {
    // undefined on a GPU: these threads meet the vote's barriers with plain ones
    __syncthreads();
    __syncthreads();
    out[t] = -1;
    return;
  }
  if (static_cast<std::int64_t>(threadIdx.x) >= live) {
    // whole warps exchange 1 through their slots, then exit: a later vote must not count them
    out[t] = -static_cast<std::int64_t>(__shfl_sync(0xffffffffu, 1, 0));
    return;
  }
  out[t] = __syncthreads_or(static_cast<int>(votes[t]));
  __syncthreads_or(1);  // every slot written again before the next block (and vote) reads them
}

// Test seam of the emulator's block vote (__syncthreads_or): `blocks` blocks of votes.size() /
// blocks threads (a multiple of 32); thread i of a block votes votes[...] if i < live (a multiple
// of 32), else its warp exchanges 1 with a shuffle and exits (with `diverge`: calls __syncthreads
// twice instead, which the emulator reports).  Returns each thread's vote result (-1 for the
// others).
std::vector<std::int64_t> emulation_block_vote(const std::vector<std::int64_t>& votes,
                                               std::int64_t live, std::int64_t blocks,
                                               bool diverge) {
  if (blocks < 1 || votes.size() % static_cast<std::size_t>(blocks) != 0) {
    throw std::invalid_argument(
        "votes must hold the same number of threads for each of `blocks` >= 1");
  }
  const std::int64_t threads = static_cast<std::int64_t>(votes.size()) / blocks;
  if (threads % 32 != 0 || live % 32 != 0 || live < 0 || live > threads) {
    throw std::invalid_argument("threads and live must be multiples of 32 with live <= threads");
  }
  std::vector<std::int64_t> out(votes.size(), 0);
  const void* kernel = reinterpret_cast<const void*>(&emulation_vote_kernel);
  tl_emu::launch(kernel, dim3(static_cast<unsigned int>(blocks)),
                 dim3(static_cast<unsigned int>(threads)), 0,
                 [&] { emulation_vote_kernel(votes.data(), live, diverge, out.data()); });
  return out;
}
#endif

}  // namespace

// TL_DEF(name, extra...): binds tn::name as `name` through Refusing; `extra` are pybind11's
// (argument names, docstring).
#define TL_DEF(name, ...) m.def(#name, &Refusing<&tn::name>::call, ##__VA_ARGS__)

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "torchlean native-cuda kernels (csrc/native_ops.cu)";
  TL_DEF(device_type);
  TL_DEF(matmul_forward, py::arg("a"), py::arg("b"));
  TL_DEF(matmul_backward, py::arg("g"), py::arg("a"), py::arg("b"), py::arg("out"));
  TL_DEF(linear_forward, py::arg("x"), py::arg("weight"), py::arg("bias"));
  TL_DEF(linear_backward,
         py::arg("g"), py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("out"));
  TL_DEF(mse_loss_forward, py::arg("a"), py::arg("b"));
  TL_DEF(mse_loss_backward, py::arg("g"), py::arg("a"), py::arg("b"), py::arg("out"));
  TL_DEF(relu_forward, py::arg("x"));
  TL_DEF(relu_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  TL_DEF(gelu_forward, py::arg("x"), py::arg("approximate"));
  TL_DEF(gelu_backward, py::arg("g"), py::arg("x"), py::arg("out"), py::arg("approximate"));
  TL_DEF(add_forward, py::arg("a"), py::arg("b"));
  TL_DEF(add_backward, py::arg("g"), py::arg("a"), py::arg("b"), py::arg("out"));
  TL_DEF(sub_forward, py::arg("a"), py::arg("b"));
  TL_DEF(sub_backward, py::arg("g"), py::arg("a"), py::arg("b"), py::arg("out"));
  TL_DEF(mul_forward, py::arg("a"), py::arg("b"));
  TL_DEF(mul_backward, py::arg("g"), py::arg("a"), py::arg("b"), py::arg("out"));
  TL_DEF(scale_forward, py::arg("x"), py::arg("factor"));
  TL_DEF(scale_backward, py::arg("g"), py::arg("x"), py::arg("out"), py::arg("factor"));
  TL_DEF(abs_forward, py::arg("x"));
  TL_DEF(abs_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  TL_DEF(sqrt_forward, py::arg("x"));
  TL_DEF(sqrt_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  TL_DEF(clamp_forward, py::arg("x"), py::arg("lo"), py::arg("hi"));
  TL_DEF(clamp_backward, py::arg("g"), py::arg("x"), py::arg("out"), py::arg("lo"), py::arg("hi"));
  TL_DEF(max_forward, py::arg("a"), py::arg("b"));
  TL_DEF(max_backward, py::arg("g"), py::arg("a"), py::arg("b"), py::arg("out"));
  TL_DEF(min_forward, py::arg("a"), py::arg("b"));
  TL_DEF(min_backward, py::arg("g"), py::arg("a"), py::arg("b"), py::arg("out"));
  TL_DEF(sigmoid_forward, py::arg("x"));
  TL_DEF(sigmoid_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  TL_DEF(tanh_forward, py::arg("x"));
  TL_DEF(tanh_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  TL_DEF(softplus_forward, py::arg("x"));
  TL_DEF(softplus_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  TL_DEF(exp_forward, py::arg("x"));
  TL_DEF(exp_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  TL_DEF(sin_forward, py::arg("x"));
  TL_DEF(sin_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  TL_DEF(cos_forward, py::arg("x"));
  TL_DEF(cos_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  TL_DEF(log_forward, py::arg("x"));
  TL_DEF(log_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  TL_DEF(inv_forward, py::arg("x"));
  TL_DEF(inv_backward, py::arg("g"), py::arg("x"), py::arg("out"));
  TL_DEF(safe_log_forward, py::arg("x"), py::arg("eps"));
  TL_DEF(safe_log_backward, py::arg("g"), py::arg("x"), py::arg("out"), py::arg("eps"));
  TL_DEF(log_softmax_forward, py::arg("x"), py::arg("dim"));
  TL_DEF(log_softmax_backward, py::arg("g"), py::arg("x"), py::arg("out"), py::arg("dim"));
  TL_DEF(softmax_forward, py::arg("x"), py::arg("dim"));
  TL_DEF(softmax_backward, py::arg("g"), py::arg("x"), py::arg("out"), py::arg("dim"));
  TL_DEF(hard_masked_softmax_forward, py::arg("x"), py::arg("mask"), py::arg("stream"));
  TL_DEF(hard_masked_softmax_backward,
         py::arg("g"), py::arg("x"), py::arg("mask"), py::arg("out"), py::arg("stream"));
  TL_DEF(reduce_sum_forward, py::arg("x"), py::arg("dims"), py::arg("keepdim"));
  TL_DEF(reduce_sum_backward,
         py::arg("g"), py::arg("x"), py::arg("out"), py::arg("dims"), py::arg("keepdim"));
  TL_DEF(reduce_mean_forward, py::arg("x"), py::arg("dims"), py::arg("keepdim"));
  TL_DEF(reduce_mean_backward,
         py::arg("g"), py::arg("x"), py::arg("out"), py::arg("dims"), py::arg("keepdim"));
  TL_DEF(reshape_forward, py::arg("x"), py::arg("shape"));
  TL_DEF(reshape_backward, py::arg("g"), py::arg("x"), py::arg("out"), py::arg("shape"));
  TL_DEF(permute_forward, py::arg("x"), py::arg("perm"));
  TL_DEF(permute_backward, py::arg("g"), py::arg("x"), py::arg("out"), py::arg("perm"));
  TL_DEF(broadcast_forward, py::arg("x"), py::arg("shape"));
  TL_DEF(broadcast_backward, py::arg("g"), py::arg("x"), py::arg("out"), py::arg("shape"));
  TL_DEF(concat_forward, py::arg("xs"), py::arg("dim"));
  TL_DEF(concat_backward, py::arg("g"), py::arg("xs"), py::arg("out"), py::arg("dim"));
  TL_DEF(slice_forward, py::arg("x"), py::arg("starts"), py::arg("stops"), py::arg("steps"));
  TL_DEF(slice_backward,
         py::arg("g"), py::arg("x"), py::arg("out"), py::arg("starts"), py::arg("stops"),
         py::arg("steps"));
  TL_DEF(gather_forward, py::arg("x"), py::arg("index"), py::arg("dim"));
  TL_DEF(gather_backward,
         py::arg("g"), py::arg("x"), py::arg("index"), py::arg("out"), py::arg("dim"));
  TL_DEF(scatter_add_forward, py::arg("base"), py::arg("index"), py::arg("src"), py::arg("dim"));
  TL_DEF(scatter_add_backward,
         py::arg("g"), py::arg("base"), py::arg("index"), py::arg("src"), py::arg("out"),
         py::arg("dim"));
  TL_DEF(rand_uniform_forward,
         py::arg("shape"), py::arg("seed"), py::arg("counter"), py::arg("dtype"),
         py::arg("device_index"), py::arg("stream"));
  TL_DEF(bernoulli_mask_forward,
         py::arg("shape"), py::arg("keep_prob"), py::arg("seed"), py::arg("counter"),
         py::arg("dtype"), py::arg("device_index"), py::arg("stream"));
  TL_DEF(layer_norm_forward,
         py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("normalized_shape"),
         py::arg("eps"));
  TL_DEF(layer_norm_backward,
         py::arg("g"), py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("out"),
         py::arg("normalized_shape"), py::arg("eps"));
  TL_DEF(batch_norm_forward,
         py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("running_mean"),
         py::arg("running_var"), py::arg("eps"));
  TL_DEF(batch_norm_backward,
         py::arg("g"), py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("running_mean"),
         py::arg("running_var"), py::arg("out"), py::arg("eps"));
  TL_DEF(conv_forward,
         py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("stride"), py::arg("padding"),
         py::arg("dilation"), py::arg("groups"));
  TL_DEF(conv_backward,
         py::arg("g"), py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("out"),
         py::arg("stride"), py::arg("padding"), py::arg("dilation"), py::arg("groups"));
  TL_DEF(conv_transpose_forward,
         py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("stride"), py::arg("padding"),
         py::arg("output_padding"), py::arg("dilation"), py::arg("groups"));
  TL_DEF(conv_transpose_backward,
         py::arg("g"), py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("out"),
         py::arg("stride"), py::arg("padding"), py::arg("output_padding"), py::arg("dilation"),
         py::arg("groups"));
  TL_DEF(max_pool_forward, py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"),
        py::arg("dilation"));
  TL_DEF(max_pool_backward,
         py::arg("g"), py::arg("x"), py::arg("out"), py::arg("kernel"), py::arg("stride"),
         py::arg("padding"), py::arg("dilation"));
  TL_DEF(smooth_max_pool_forward,
         py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"), py::arg("beta"),
         py::arg("stream"));
  TL_DEF(smooth_max_pool_backward,
         py::arg("g"), py::arg("x"), py::arg("out"), py::arg("kernel"), py::arg("stride"),
         py::arg("padding"), py::arg("beta"), py::arg("stream"));
  TL_DEF(avg_pool_forward, py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"));
  TL_DEF(avg_pool_backward,
         py::arg("g"), py::arg("x"), py::arg("out"), py::arg("kernel"), py::arg("stride"),
         py::arg("padding"));
  TL_DEF(fft_fno_forward, py::arg("x"), py::arg("weight_real"), py::arg("weight_imag"));
  TL_DEF(fft_fno_backward,
         py::arg("g"), py::arg("x"), py::arg("weight_real"), py::arg("weight_imag"),
         py::arg("out"));
  TL_DEF(selective_scan_forward,
         py::arg("a"), py::arg("b"), py::arg("x"), py::arg("h0"), py::arg("stream"));
  TL_DEF(selective_scan_backward,
         py::arg("g"), py::arg("a"), py::arg("b"), py::arg("x"), py::arg("h0"), py::arg("out"),
         py::arg("stream"));
  TL_DEF(direct_attention_forward,
         py::arg("q"), py::arg("k"), py::arg("v"), py::arg("mask"), py::arg("mask_layout"),
         py::arg("scale"), py::arg("stream"));
  TL_DEF(direct_attention_backward,
         py::arg("g"), py::arg("q"), py::arg("k"), py::arg("v"), py::arg("mask"),
         py::arg("mask_layout"), py::arg("out"), py::arg("lse"), py::arg("scale"),
         py::arg("stream"));
  TL_DEF(set_attention_smallest_tiles, py::arg("on"));
  TL_DEF(set_max_element_blocks, py::arg("blocks"));
#ifdef TORCHLEAN_EMULATE
  m.def("emulation_launch_with_shared_memory", &emulation_launch_with_shared_memory,
        py::arg("bytes"), py::arg("opt_in"),
        "Launch a kernel that does nothing with `bytes` of dynamic shared memory after opting it "
        "into `opt_in` bytes (0: no opt-in), as a GPU accepts or refuses such a launch.");
  m.def("emulation_block_vote", &emulation_block_vote, py::arg("votes"), py::arg("live"),
        py::arg("blocks"), py::arg("diverge") = false,
        "Each thread's __syncthreads_or of `votes` in `blocks` blocks, threads from `live` on "
        "exiting first (-1), or with `diverge` meeting the vote at plain barriers.");
  m.def("emulation_set_schedule_seed", &tl_emu::set_schedule_seed, py::arg("seed"),
        "Permute the emulator's thread and block order (0 = index order).");
  m.def("emulation_set_shared_memory_limit", &tl_emu::set_shared_memory_limit, py::arg("bytes"),
        "Emulate a device with this much dynamic shared memory per block (0 = 227 KiB); "
        "returns the previous limit.");
  m.def("emulation_take_largest_shared_memory", &tl_emu::take_largest_shared_memory,
        "The most dynamic shared memory (bytes) one launch requested since the last call; resets it.");
#endif
}
