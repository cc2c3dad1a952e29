"""CUDA C sources of the CUDA backend's fused kernels, as plain module-level strings.

Nothing here needs CuPy, so the sources can be read, checked and compiled anywhere
(``burnpy_cuda.kernels`` builds them into CuPy kernels on first use). Two kinds:

* Elementwise specs for ``cupy.ElementwiseKernel``: ``T`` is CuPy's placeholder for the
  arrays' dtype and ``W`` the type computed in, typedef'd by ``preamble(work)``: float for
  float16 and float32, double for float64, as the CPU backend widens 16-bit floats to float32.
  Each body is the CPU backend's formula (``burnpy_cpu/array_ops``) in the same operation
  order, so results differ from it only in rounding (the device's math library, FMA
  contraction); the Adam step equals the composed default bit for bit.
* Row kernels (softmax, log_softmax, cross entropy, layer norm and their backwards): one
  CUDA block per row of a C-contiguous ``[rows, c]`` array, built by ``row_source(dtype)``.
  The source comes in pieces (storage helpers, math, block reductions, kernels) so that a
  host test can compile the kernels with stand-ins for the device-specific ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Work type ``W`` per dtype name: 16-bit floats are computed in float32.
WORK_TYPES: dict[str, str] = {"float16": "float", "float32": "float", "float64": "double"}

#: Storage type ``T`` of the row kernels per dtype name (float16 as its 16 raw bits).
ROW_STORAGE_TYPES: dict[str, str] = {"float16": "unsigned short", "float32": "float",
                                     "float64": "double"}


@dataclass(frozen=True, eq=False)
class ElementwiseSpec:
    """One ``cupy.ElementwiseKernel``: CuPy's parameter lists, the loop body and the NVRTC
    options (``--fmad=false`` where results must round as the composed ops do). Compared and
    hashed by identity: each spec is a module constant."""

    name: str
    in_params: str
    out_params: str
    body: str
    options: tuple[str, ...] = ()


_CONSTANTS = {
    "BP_INV_SQRT_2": 1.0 / math.sqrt(2.0),
    "BP_INV_SQRT_2PI": 1.0 / math.sqrt(2.0 * math.pi),
    "BP_SQRT_2_OVER_PI": math.sqrt(2.0 / math.pi),
    "BP_GELU_CUBIC": 0.044715,
    "BP_GELU_CUBIC_3": 3.0 * 0.044715,
}

#: Helpers shared by the elementwise bodies (after ``typedef ... W;``). The constants are the
#: CPU backend's Python floats, printed exactly; bodies round them to ``W`` as NumPy rounds a
#: Python scalar to the array's dtype.
ELEMENTWISE_HELPERS = "".join(f"#define {k} ({v!r})\n" for k, v in _CONSTANTS.items()) + r"""
// NaN-propagating max, as numpy.maximum: a NaN in either operand wins.
__device__ __forceinline__ W bp_max(W a, W b) {
  return (b > a || b != b) ? b : a;
}
// exp(min(z, 0)) / (1 + exp(-|z|)): no overflow, full relative accuracy in both tails.
__device__ __forceinline__ W bp_sigmoid(W z) {
  return exp(z < W(0) ? z : W(0)) / (W(1) + exp(-fabs(z)));
}
// log(1 + exp(z)) = max(z, 0) + log1p(exp(-|z|)), exact for every z.
__device__ __forceinline__ W bp_softplus(W z) {
  return (z > W(0) ? z : W(0)) + log1p(exp(-fabs(z)));
}
"""


def preamble(work: str) -> str:
    """The ``preamble`` of every elementwise kernel computing in ``work`` (float or double)."""
    return f"typedef {work} W;\n{ELEMENTWISE_HELPERS}"


RELU = ElementwiseSpec("relu", "T x", "T y", "y = W(x) <= W(0) ? T(W(0)) : x;")

# grad where output > 0 or is NaN, else 0 (also for a non-finite grad).
RELU_BACKWARD = ElementwiseSpec("relu_backward", "T output, T grad", "T dx",
                                "dx = W(output) <= W(0) ? T(W(0)) : grad;")

# max(x, slope x) for slope <= 1, else min; slope x is rounded to T first, as the CPU does.
LEAKY_RELU = ElementwiseSpec("leaky_relu", "T x, float64 slope", "T y", r"""
W a = W(x);
W b = W(T(a * W(slope)));
W r = b != b ? b : (slope <= 1.0 ? (b > a ? b : a) : (b < a ? b : a));
y = T(r);
""")

GELU = ElementwiseSpec("gelu", "T x", "T y", r"""
W v = W(x);
y = T(W(0.5) * v * erfc(v * W(-BP_INV_SQRT_2)));
""")

GELU_TANH = ElementwiseSpec("gelu_tanh", "T x", "T y", r"""
W v = W(x);
W u = (v + W(BP_GELU_CUBIC) * (v * v * v)) * W(BP_SQRT_2_OVER_PI);
y = T(v * bp_sigmoid(W(2) * u));
""")

GELU_BACKWARD = ElementwiseSpec("gelu_backward", "T x, T grad", "T dx", r"""
W v = W(x);
W v2 = v * v;
W cdf = W(0.5) * erfc(v * W(-BP_INV_SQRT_2));
W deriv = cdf + v * (exp(W(-0.5) * v2) * W(BP_INV_SQRT_2PI));
dx = T(W(grad) * deriv);
""")

GELU_TANH_BACKWARD = ElementwiseSpec("gelu_tanh_backward", "T x, T grad", "T dx", r"""
W v = W(x);
W v2 = v * v;
W u = (v + W(BP_GELU_CUBIC) * (v2 * v)) * W(BP_SQRT_2_OVER_PI);
W du = (W(1) + W(BP_GELU_CUBIC_3) * v2) * W(BP_SQRT_2_OVER_PI);
W s = bp_sigmoid(W(2) * u);
W deriv = s + W(2) * v * s * bp_sigmoid(W(-2) * u) * du;
dx = T(W(grad) * deriv);
""")

SIGMOID = ElementwiseSpec("sigmoid", "T x", "T y", "y = T(bp_sigmoid(W(x)));")

# grad * ((1 - output) * output) with each product rounded to T, as the CPU computes it.
SIGMOID_BACKWARD = ElementwiseSpec("sigmoid_backward", "T output, T grad", "T dx", r"""
W s = W(output);
dx = T(W(grad) * W(T(W(T(W(1) - s)) * s)));
""")

LOG_SIGMOID = ElementwiseSpec("log_sigmoid", "T x", "T y", r"""
W v = W(x);
y = T((v < W(0) ? v : W(0)) - log1p(exp(-fabs(v))));
""")

LOG_SIGMOID_BACKWARD = ElementwiseSpec("log_sigmoid_backward", "T x, T grad", "T dx",
                                       "dx = T(W(grad) * bp_sigmoid(-W(x)));")

SILU = ElementwiseSpec("silu", "T x", "T y", "W v = W(x);\ny = T(v * bp_sigmoid(v));")

SOFTPLUS = ElementwiseSpec("softplus", "T x, float64 beta", "T y", r"""
W v = W(x);
y = T(beta == 1.0 ? bp_softplus(v) : bp_softplus(v * W(beta)) / W(beta));
""")

# Adam/AdamW as the composed default (OptimOps.adam_step) computes it: every intermediate
# is rounded to T (``t``) as each composed op returns a T array, the scalars come from the
# host rounded as the composed scalar ops round them (``kernel_ops.adam_arguments``: for
# float16 the multipliers kept in float32 and eps rounded to float16, torch's rule) and
# nothing is contracted into an FMA, so results equal the composed default's bit for bit in
# every dtype (``t`` is a no-op but for float16). ``first``: no moments yet (exp_avg and
# exp_avg_sq are then unread placeholders); ``decay_mode`` 0 none, 1 decoupled (``decay`` =
# 1 - lr * weight_decay), 2 L2 (``decay`` = weight_decay); ``bias2`` = 1 / sqrt(1 -
# beta2^step), ``step_size`` = lr / (1 - beta1^step).
_ADAM_PARAMS = ("T param, T grad, T exp_avg, T exp_avg_sq, int32 first, int32 decay_mode, "
                "float64 decay, float64 beta1, float64 one_minus_beta1, float64 beta2, "
                "float64 one_minus_beta2, float64 bias2, float64 eps, float64 step_size")
_ADAM_MOMENTS = r"""
auto t = [](W a) { return W(T(a)); };
W p = W(param);
W g = W(grad);
if (decay_mode == 1) {
  p = t(p * W(decay));
} else if (decay_mode == 2) {
  g = t(g + t(p * W(decay)));
}
const W g2 = t(t(g * g) * W(one_minus_beta2));
W m, v;
if (first) {
  m = t(g * W(one_minus_beta1));
  v = g2;
} else {
  m = t(t(W(exp_avg) * W(beta1)) + t(g * W(one_minus_beta1)));
  v = t(t(W(exp_avg_sq) * W(beta2)) + g2);
}
"""
_ADAM_UPDATE = r"""
W denom = t(t(t(sqrt(second)) * W(bias2)) + W(eps));
new_param = T(p - t(t(m / denom) * W(step_size)));
new_avg = T(m);
new_sq = T(v);
"""
ADAM = ElementwiseSpec(
    "adam", _ADAM_PARAMS, "T new_param, T new_avg, T new_sq",
    _ADAM_MOMENTS + "W second = v;" + _ADAM_UPDATE, ("--fmad=false",))

# AMSGrad: the update divides by max(max_exp_avg_sq, v) (v alone while ``has_max`` is 0, the
# first AMSGrad step, where max_exp_avg_sq is an unread placeholder), which becomes new_max.
ADAM_AMSGRAD = ElementwiseSpec(
    "adam_amsgrad", _ADAM_PARAMS + ", T max_exp_avg_sq, int32 has_max",
    "T new_param, T new_avg, T new_sq, T new_max",
    _ADAM_MOMENTS + "W second = has_max ? bp_max(W(max_exp_avg_sq), v) : v;\n"
    "new_max = T(second);" + _ADAM_UPDATE, ("--fmad=false",))

ELEMENTWISE_SPECS: tuple[ElementwiseSpec, ...] = (
    RELU, RELU_BACKWARD, LEAKY_RELU, GELU, GELU_TANH, GELU_BACKWARD, GELU_TANH_BACKWARD,
    SIGMOID, SIGMOID_BACKWARD, LOG_SIGMOID, LOG_SIGMOID_BACKWARD, SILU, SOFTPLUS, ADAM,
    ADAM_AMSGRAD)

#: Loads into and stores from ``W``, and a NaN: float16 as raw bits converted by PTX
#: instructions, so no header is needed.
ROW_STORAGE_HELPERS = r"""
__device__ __forceinline__ float bp_load(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ float bp_load(float v) { return v; }
__device__ __forceinline__ double bp_load(double v) { return v; }
__device__ __forceinline__ void bp_store(unsigned short* p, float v) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
  *p = h;
}
__device__ __forceinline__ void bp_store(float* p, float v) { *p = v; }
__device__ __forceinline__ void bp_store(double* p, double v) { *p = v; }
__device__ __forceinline__ W bp_nan() {
  return W(__longlong_as_double(0x7ff8000000000000LL));
}
"""

#: Device-independent helpers of the row kernels.
ROW_MATH = r"""
// NaN-propagating max, as NumPy's: a NaN in either operand wins.
__device__ __forceinline__ W bp_max(W a, W b) {
  return (b > a || b != b) ? b : a;
}
// The column of a row's target, wrapped like a NumPy index; -1 when it is out of range.
__device__ __forceinline__ long long bp_column(long long t, long long c) {
  if (t < 0) t += c;
  return (t >= 0 && t < c) ? t : -1;
}
"""

#: Block-wide max (NaN-propagating) and sum; blockDim.x is a multiple of 32, at most 1024.
#: Every thread gets the same result, combined in the same order.
ROW_REDUCTIONS = r"""
__device__ W bp_block_max(W v, W* scratch) {
  for (int o = 16; o > 0; o >>= 1) v = bp_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();  // the previous reduction's reads of scratch are done
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  W r = scratch[0];
  for (int w = 1; w < (int)(blockDim.x >> 5); ++w) r = bp_max(r, scratch[w]);
  return r;
}
template <typename S> __device__ S bp_block_sum(S v, S* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  S r = scratch[0];
  for (int w = 1; w < (int)(blockDim.x >> 5); ++w) r += scratch[w];
  return r;
}
"""

#: The row kernels, after ``typedef <storage> T; typedef <work> W;`` and the pieces above.
#: A target outside [-c, c) that is not ignore_index gives NaN instead of reading out of
#: bounds; a negative one counts from the end, as NumPy indexing does. Layer norm's weight
#: and bias may be null pointers (CuPy passes None as NULL): absent.
ROW_KERNELS = r"""
// Max and sum(exp(x - max)) of one row, NaN-propagating like NumPy's max.
__device__ void bp_row_stats(const T* x, long long c, W* scratch, W* peak, W* total) {
  W m = bp_load(x[0]);
  for (long long i = threadIdx.x; i < c; i += blockDim.x) m = bp_max(m, bp_load(x[i]));
  m = bp_block_max(m, scratch);
  W s = W(0);
  for (long long i = threadIdx.x; i < c; i += blockDim.x) s += exp(bp_load(x[i]) - m);
  *peak = m;
  *total = bp_block_sum(s, scratch);
}

extern "C" __global__ void burnpy_softmax_rows(const T* x, T* y, long long c) {
  __shared__ W scratch[32];
  const long long off = (long long)blockIdx.x * c;
  W peak, total;
  bp_row_stats(x + off, c, scratch, &peak, &total);
  for (long long i = threadIdx.x; i < c; i += blockDim.x)
    bp_store(y + off + i, exp(bp_load(x[off + i]) - peak) / total);
}

extern "C" __global__ void burnpy_log_softmax_rows(const T* x, T* y, long long c) {
  __shared__ W scratch[32];
  const long long off = (long long)blockIdx.x * c;
  W peak, total;
  bp_row_stats(x + off, c, scratch, &peak, &total);
  const W lse = log(total);
  for (long long i = threadIdx.x; i < c; i += blockDim.x)
    bp_store(y + off + i, (bp_load(x[off + i]) - peak) - lse);
}

// logsumexp(row) - row[target]; exactly 0 on an ignored row (whatever its logits hold).
extern "C" __global__ void burnpy_cross_entropy_rows(
    const T* x, const long long* target, T* loss, long long c, long long ignore_index) {
  __shared__ W scratch[32];
  const long long row = blockIdx.x;
  const long long off = row * c;
  W peak, total;
  bp_row_stats(x + off, c, scratch, &peak, &total);
  if (threadIdx.x == 0) {
    const bool kept = target[row] != ignore_index;
    const long long col = bp_column(kept ? target[row] : 0, c);
    const W picked = col < 0 ? bp_nan() : bp_load(x[off + col]);
    bp_store(loss + row, kept ? (log(total) + peak) - picked : W(0));
  }
}

// (softmax(row) - one_hot(target)) * grad[row]; exactly 0 on an ignored row.
extern "C" __global__ void burnpy_cross_entropy_backward_rows(
    const T* x, const long long* target, const T* grad, T* dx, long long c,
    long long ignore_index) {
  __shared__ W scratch[32];
  const long long row = blockIdx.x;
  const long long off = row * c;
  W peak, total;
  bp_row_stats(x + off, c, scratch, &peak, &total);
  const bool kept = target[row] != ignore_index;
  const long long col = bp_column(kept ? target[row] : 0, c);
  const W scale = bp_load(grad[row]);
  for (long long i = threadIdx.x; i < c; i += blockDim.x) {
    W e = exp(bp_load(x[off + i]) - peak) / total;
    if (i == col) e -= W(1);
    bp_store(dx + off + i, kept ? (col < 0 ? bp_nan() : e) * scale : W(0));
  }
}

// Mean and 1 / sqrt(var + eps) of one row, accumulated in double whatever T and W are (as
// the CPU's row kernels do: a float32 row far from zero keeps its digits), the biased variance
// summing squared deviations from the mean (a second pass: no cancellation).
__device__ void bp_row_moments(const T* x, long long c, double eps, double* scratch,
                               double* mean, W* invstd) {
  double s = 0.0;
  for (long long i = threadIdx.x; i < c; i += blockDim.x) s += (double)bp_load(x[i]);
  const double m = bp_block_sum(s, scratch) / (double)c;
  double q = 0.0;
  for (long long i = threadIdx.x; i < c; i += blockDim.x) {
    const double d = (double)bp_load(x[i]) - m;
    q += d * d;
  }
  *mean = m;
  *invstd = W(1.0 / sqrt(bp_block_sum(q, scratch) / (double)c + eps));
}

// (x - mean) * invstd * weight + bias per row; a null weight or bias is left out.
extern "C" __global__ void burnpy_layer_norm_rows(
    const T* x, const T* weight, const T* bias, T* y, long long c, double eps) {
  __shared__ double scratch[32];
  const long long off = (long long)blockIdx.x * c;
  double mean;
  W invstd;
  bp_row_moments(x + off, c, eps, scratch, &mean, &invstd);
  for (long long i = threadIdx.x; i < c; i += blockDim.x) {
    W v = W((double)bp_load(x[off + i]) - mean) * invstd;
    if (weight) v *= bp_load(weight[i]);
    if (bias) v += bp_load(bias[i]);
    bp_store(y + off + i, v);
  }
}

// invstd * (gh - mean(gh) - xhat * mean(gh * xhat)) per row, with gh = grad * weight (grad
// for a null weight); also writes xhat (in W) for the host's column sums of grad_weight.
extern "C" __global__ void burnpy_layer_norm_backward_rows(
    const T* x, const T* weight, const T* grad, T* dx, W* xhat, long long c, double eps) {
  __shared__ W scratch[32];
  __shared__ double moments[32];
  const long long off = (long long)blockIdx.x * c;
  double mean;
  W invstd;
  bp_row_moments(x + off, c, eps, moments, &mean, &invstd);
  W sum = W(0), dot = W(0);
  for (long long i = threadIdx.x; i < c; i += blockDim.x) {
    const W h = W((double)bp_load(x[off + i]) - mean) * invstd;
    const W gh = weight ? bp_load(grad[off + i]) * bp_load(weight[i]) : bp_load(grad[off + i]);
    xhat[off + i] = h;
    sum += gh;
    dot += gh * h;
  }
  const W mean_gh = bp_block_sum(sum, scratch) / W(c);
  const W projection = bp_block_sum(dot, scratch) / W(c);
  for (long long i = threadIdx.x; i < c; i += blockDim.x) {
    const W gh = weight ? bp_load(grad[off + i]) * bp_load(weight[i]) : bp_load(grad[off + i]);
    bp_store(dx + off + i, ((gh - mean_gh) - xhat[off + i] * projection) * invstd);
  }
}
"""

ROW_KERNEL_NAMES: tuple[str, ...] = (
    "burnpy_softmax_rows", "burnpy_log_softmax_rows", "burnpy_cross_entropy_rows",
    "burnpy_cross_entropy_backward_rows", "burnpy_layer_norm_rows",
    "burnpy_layer_norm_backward_rows")


def row_source(dtype_name: str) -> str:
    """The CUDA C module of the row kernels for ``float16``, ``float32`` or ``float64``."""
    return (f"typedef {ROW_STORAGE_TYPES[dtype_name]} T;\n"
            f"typedef {WORK_TYPES[dtype_name]} W;\n"
            f"{ROW_STORAGE_HELPERS}{ROW_MATH}{ROW_REDUCTIONS}{ROW_KERNELS}")
