// torchlean's own device kernels (float32 and float64, templated on the scalar type T).
//
//   * direct attention, forward and backward: hard-mask zero-numerator semantics, tiled through
//     shared memory with an online softmax (Dao 2023, FlashAttention-2 loop order: one block per
//     query tile, looping over key tiles with a running max, denominator and accumulator); the
//     score matrix is never materialised.  The forward saves each row's logsumexp; the backward
//     recomputes probabilities from it (dQ per query tile, dK/dV per key tile, no atomics);
//   * hard-masked softmax over the last axis, forward and backward;
//   * the diagonal selective scan h_t = A(_t) * h_{t-1} + B(_t) * x_t and its reverse recurrence;
//   * smooth max pooling (1/beta) log sum exp(beta v) over each window, and its VJP;
//   * the splitmix64 counter-based uniform and Bernoulli sources.
//
// Blocked (masked) positions are *selected away*: they never enter a max, a sum or a product, so a
// NaN or infinity stored at a blocked position cannot reach any result.  A row with no allowed
// key is zero (fully blocked); a row whose allowed scores are all -inf is NaN (softmax's 0 / 0,
// as the reference provider and torch.softmax of an all -inf row); the attention forward tells
// the two apart by tracking whether a row has seen an allowed key separately from its running
// max.  All launches use the stream handed in by the caller.  Host-side launch helpers live at
// the end of this file.
#pragma once

#include <algorithm>

#include "tl_device.cuh"

namespace tl {

constexpr unsigned int kFullMask = 0xffffffffu;
constexpr int kWarpSize = 32;

// ---------------------------------------------------------------------------------------------
// scalar helpers
// ---------------------------------------------------------------------------------------------

TL_DEVICE float tl_exp(float x) { return expf(x); }
TL_DEVICE double tl_exp(double x) { return exp(x); }
TL_DEVICE float tl_log(float x) { return logf(x); }
TL_DEVICE double tl_log(double x) { return log(x); }

template <class T>
TL_DEVICE T neg_inf() {
  return -static_cast<T>(INFINITY);
}

template <class T>
TL_DEVICE T quiet_nan() {
  return static_cast<T>(NAN);
}

template <class T>
TL_DEVICE bool is_nan(T x) {
  return x != x;
}

// max that propagates NaN from either side, so that warp reductions give every lane the same value
template <class T>
TL_DEVICE T nan_max(T a, T b) {
  return (is_nan(b) || b > a) ? b : a;
}

template <class T>
TL_DEVICE T nan_min(T a, T b) {
  return (is_nan(b) || b < a) ? b : a;
}

// Butterfly reductions: every lane ends with the same value (each step combines x and y with the
// commutative operation on both partners).
template <class T>
TL_DEVICE T warp_max(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    v = nan_max(v, __shfl_xor_sync(kFullMask, v, offset));
  }
  return v;
}

template <class T>
TL_DEVICE T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// Merge two (running max, running sum of exp(x - max)) pairs; -inf max means "empty".
template <class T>
TL_DEVICE void merge_softmax_stats(T& m, T& l, T m2, T l2) {
  const T merged = nan_max(m, m2);
  const T a = (m == neg_inf<T>()) ? T(0) : l * tl_exp(m - merged);
  const T b = (m2 == neg_inf<T>()) ? T(0) : l2 * tl_exp(m2 - merged);
  m = merged;
  l = a + b;
}

// ---------------------------------------------------------------------------------------------
// direct attention
// ---------------------------------------------------------------------------------------------

struct AttentionShape {
  std::int64_t batch;        // folded (batch, head) axis
  std::int64_t nq;           // queries per batch entry
  std::int64_t nk;           // keys per batch entry
  std::int64_t d;            // query/key width
  std::int64_t dv;           // value width
  // Mask layout (a broadcast mask is never copied per (batch, head)): batch entry b's mask starts
  // at element sum over t < 2 of ((b / mask_div[t]) % mask_mod[t]) * mask_stride[t] (two runs of
  // the batch axes along which the mask varies; an unused run is div 1, mod 1, stride 0); its
  // row i starts mask_row_stride elements after row i - 1 (0: one row for every query) and its
  // keys are contiguous.
  std::int64_t mask_div[2];
  std::int64_t mask_mod[2];
  std::int64_t mask_stride[2];
  std::int64_t mask_row_stride;
};

TL_DEVICE std::int64_t attention_mask_offset(const AttentionShape& s, std::int64_t b) {
  return ((b / s.mask_div[0]) % s.mask_mod[0]) * s.mask_stride[0] +
         ((b / s.mask_div[1]) % s.mask_mod[1]) * s.mask_stride[1];
}

// Tiles: a block of kAttnWarps warps owns ROWS rows (or keys) per warp, kAttnWarps * ROWS per
// block tile (32 with the default ROWS = kAttnRows, 8 with kAttnMinRows); the other operand
// streams through shared memory kAttnBc = 32 at a time, one per lane.  The host picks the largest
// ROWS whose shared memory fits the device (attention_rows_that_fit below), so float64 heads up
// to d = dv = 256 run forward and backward on a device with 227 KiB per block.
constexpr int kAttnWarps = 8;
constexpr int kAttnRows = 4;                       // rows (or keys) per warp, default tile
constexpr int kAttnMinRows = 1;                    // rows per warp of the smallest tile
constexpr int kAttnBc = kWarpSize;                 // 32 keys per tile, one per lane
constexpr int kAttnThreads = kAttnWarps * kWarpSize;
constexpr int kAttnMaxWidth = 256;                 // d and dv limit (8 columns per lane)

TL_DEVICE bool attention_allowed(const unsigned char* mask, std::int64_t i, std::int64_t j,
                                 const AttentionShape& s) {
  return i < s.nq && j < s.nk && (mask == nullptr || mask[i * s.mask_row_stride + j] != 0);
}

// A block-wide vote, which is also the barrier before a shared tile is reused: whether any
// (query, key) pair of rows [i0, i0 + rows) x keys [j0, j0 + cols) is allowed.  A tile with none
// adds nothing to any result (its weights, score cotangents and products are all selected away),
// so the kernels skip it: a causal mask skips about half of the tiles.  Every thread of the block
// must call it with the same arguments.  Without a mask every tile in range counts as allowed.
TL_DEVICE bool attention_tile_allowed(const unsigned char* mask, std::int64_t i0, std::int64_t rows,
                                      std::int64_t j0, std::int64_t cols, const AttentionShape& s) {
  int any = mask == nullptr ? 1 : 0;
  for (std::int64_t idx = threadIdx.x; idx < rows * cols && any == 0; idx += kAttnThreads) {
    any = attention_allowed(mask, i0 + idx / cols, j0 + idx % cols, s) ? 1 : 0;
  }
  return __syncthreads_or(any) != 0;
}

// Forward.  One block per (batch entry, tile of kBr query rows); warp w owns rows
// [w * ROWS, (w + 1) * ROWS) of the tile; lane j scores key k0 + j of each key tile.
// Lane owns value columns lane + 32 * c for c < CPL.
template <class T, int CPL, int ROWS>
TL_GLOBAL void attention_forward_kernel(const T* __restrict__ q, const T* __restrict__ k,
                                        const T* __restrict__ v,
                                        const unsigned char* __restrict__ mask,
                                        T* __restrict__ out, T* __restrict__ lse,
                                        AttentionShape s, T scale) {
  TL_DYNAMIC_SMEM(T, smem);
  constexpr int kBr = kAttnWarps * ROWS;  // rows (keys) per block tile
  const std::int64_t d = s.d;
  const std::int64_t dv = s.dv;
  T* sQ = smem;                         // kBr x d
  T* sK = sQ + kBr * d;                 // kAttnBc x (d + 1), padded against bank conflicts
  T* sV = sK + kAttnBc * (d + 1);       // kAttnBc x dv

  const std::int64_t tiles = (s.nq + kBr - 1) / kBr;
  const std::int64_t block = static_cast<std::int64_t>(blockIdx.x);
  const std::int64_t b = block / tiles;
  const std::int64_t q0 = (block % tiles) * kBr;
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % kWarpSize;
  const int warp = tid / kWarpSize;

  const T* qb = q + b * s.nq * d;
  const T* kb = k + b * s.nk * d;
  const T* vb = v + b * s.nk * dv;
  const unsigned char* mb = mask == nullptr ? nullptr : mask + attention_mask_offset(s, b);

  for (std::int64_t idx = tid; idx < kBr * d; idx += kAttnThreads) {
    const std::int64_t i = q0 + idx / d;
    sQ[idx] = i < s.nq ? qb[i * d + idx % d] : T(0);
  }

  // Per row: running max m, denominator l, accumulator acc, and whether any allowed key has been
  // seen -- kept apart from m, because a row whose allowed scores are all -inf (a -inf key, or
  // finite inputs whose product overflows) keeps m = -inf although it is not fully blocked.
  T m[ROWS];
  T l[ROWS];
  T acc[ROWS][CPL];
  bool seen[ROWS];
  TL_UNROLL for (int r = 0; r < ROWS; ++r) {
    m[r] = neg_inf<T>();
    l[r] = T(0);
    seen[r] = false;
    TL_UNROLL for (int c = 0; c < CPL; ++c) acc[r][c] = T(0);
  }

  for (std::int64_t k0 = 0; k0 < s.nk; k0 += kAttnBc) {
    // the previous tile is no longer read; a tile of blocked pairs only is skipped
    if (!attention_tile_allowed(mb, q0, kBr, k0, kAttnBc, s)) continue;
    for (std::int64_t idx = tid; idx < kAttnBc * d; idx += kAttnThreads) {
      const std::int64_t row = idx / d;
      const std::int64_t col = idx % d;
      const std::int64_t j = k0 + row;
      sK[row * (d + 1) + col] = j < s.nk ? kb[j * d + col] : T(0);
    }
    for (std::int64_t idx = tid; idx < kAttnBc * dv; idx += kAttnThreads) {
      const std::int64_t j = k0 + idx / dv;
      sV[idx] = j < s.nk ? vb[j * dv + idx % dv] : T(0);
    }
    __syncthreads();

    const std::int64_t j = k0 + lane;
    T score[ROWS];
    TL_UNROLL for (int r = 0; r < ROWS; ++r) score[r] = T(0);
    const T* krow = sK + lane * (d + 1);
    for (std::int64_t t = 0; t < d; ++t) {
      const T kv = krow[t];
      TL_UNROLL for (int r = 0; r < ROWS; ++r) score[r] += sQ[(warp * ROWS + r) * d + t] * kv;
    }

    TL_UNROLL for (int r = 0; r < ROWS; ++r) {
      const std::int64_t i = q0 + warp * ROWS + r;
      const bool allowed = attention_allowed(mb, i, j, s);
      const T sv = allowed ? score[r] * scale : neg_inf<T>();  // blocked: selected away
      const unsigned int bits = __ballot_sync(kFullMask, allowed);
      seen[r] = seen[r] || bits != 0u;
      const T m_new = nan_max(m[r], warp_max(sv));
      if (bits == 0u) continue;  // no allowed key of this row in the tile (uniform)
      // Every allowed score so far is -inf: their weights are exactly 0 (shifting by -inf would
      // make them NaN), but 0 * v still enters acc so that a non-finite v reaches the row as in
      // the reference, whichever key tile it sits in.  Uniform across the warp.
      const bool none_finite = m_new == neg_inf<T>();
      const T alpha = none_finite ? T(1) : tl_exp(m[r] - m_new);  // 0 when m[r] is -inf
      const T p = (allowed && !none_finite) ? tl_exp(sv - m_new) : T(0);
      l[r] = l[r] * alpha + warp_sum(p);
      TL_UNROLL for (int c = 0; c < CPL; ++c) acc[r][c] *= alpha;
      for (int jj = 0; jj < kAttnBc; ++jj) {
        if (((bits >> jj) & 1u) == 0u) continue;  // blocked keys are never read
        const T pj = __shfl_sync(kFullMask, p, jj);
        const T* vrow = sV + jj * dv;
        TL_UNROLL for (int c = 0; c < CPL; ++c) {
          const std::int64_t col = lane + kWarpSize * c;
          if (col < dv) acc[r][c] += pj * vrow[col];
        }
      }
      m[r] = m_new;
    }
  }

  TL_UNROLL for (int r = 0; r < ROWS; ++r) {
    const std::int64_t i = q0 + warp * ROWS + r;
    if (i >= s.nq) continue;
    // No allowed key: the row is zero and its logsumexp -inf (the backward then reads nothing of
    // it).  Allowed keys whose scores are all -inf: softmax normalises 0 by 0, so the row and its
    // logsumexp are NaN (as the reference and torch.softmax of an all -inf row), and the backward
    // propagates NaN from that logsumexp.
    const bool blocked = !seen[r];
    const bool dead = seen[r] && m[r] == neg_inf<T>();
    const T inv = (blocked || dead) ? T(0) : T(1) / l[r];
    T* orow = out + (b * s.nq + i) * dv;
    TL_UNROLL for (int c = 0; c < CPL; ++c) {
      const std::int64_t col = lane + kWarpSize * c;
      if (col < dv) orow[col] = blocked ? T(0) : (dead ? quiet_nan<T>() : acc[r][c] * inv);
    }
    if (lane == 0) {
      lse[b * s.nq + i] = blocked ? neg_inf<T>() : (dead ? quiet_nan<T>() : m[r] + tl_log(l[r]));
    }
  }
}

// Backward, dQ.  One block per (batch entry, query tile); lane j handles key k0 + j.
//   p_ij = exp(scale * q_i.k_j - lse_i) (allowed only), dp_ij = dO_i.v_j,
//   ds_ij = p_ij (dp_ij - delta_i), dQ_i = scale * sum_j ds_ij k_j.
// Lane owns query/key columns lane + 32 * c.
template <class T, int CPL, int ROWS>
TL_GLOBAL void attention_backward_dq_kernel(const T* __restrict__ q, const T* __restrict__ k,
                                            const T* __restrict__ v,
                                            const unsigned char* __restrict__ mask,
                                            const T* __restrict__ dout,
                                            const T* __restrict__ lse,
                                            const T* __restrict__ delta, T* __restrict__ dq,
                                            AttentionShape s, T scale) {
  TL_DYNAMIC_SMEM(T, smem);
  constexpr int kBr = kAttnWarps * ROWS;  // rows (keys) per block tile
  const std::int64_t d = s.d;
  const std::int64_t dv = s.dv;
  T* sQ = smem;                       // kBr x d
  T* sdO = sQ + kBr * d;              // kBr x dv
  T* sK = sdO + kBr * dv;             // kAttnBc x (d + 1)
  T* sV = sK + kAttnBc * (d + 1);     // kAttnBc x (dv + 1)

  const std::int64_t tiles = (s.nq + kBr - 1) / kBr;
  const std::int64_t block = static_cast<std::int64_t>(blockIdx.x);
  const std::int64_t b = block / tiles;
  const std::int64_t q0 = (block % tiles) * kBr;
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % kWarpSize;
  const int warp = tid / kWarpSize;

  const T* qb = q + b * s.nq * d;
  const T* kb = k + b * s.nk * d;
  const T* vb = v + b * s.nk * dv;
  const T* gb = dout + b * s.nq * dv;
  const unsigned char* mb = mask == nullptr ? nullptr : mask + attention_mask_offset(s, b);

  for (std::int64_t idx = tid; idx < kBr * d; idx += kAttnThreads) {
    const std::int64_t i = q0 + idx / d;
    sQ[idx] = i < s.nq ? qb[i * d + idx % d] : T(0);
  }
  for (std::int64_t idx = tid; idx < kBr * dv; idx += kAttnThreads) {
    const std::int64_t i = q0 + idx / dv;
    sdO[idx] = i < s.nq ? gb[i * dv + idx % dv] : T(0);
  }

  T row_lse[ROWS];
  T row_delta[ROWS];
  T acc[ROWS][CPL];
  bool attends[ROWS];  // the row has an allowed key (the same in every lane: from ballots)
  TL_UNROLL for (int r = 0; r < ROWS; ++r) {
    const std::int64_t i = q0 + warp * ROWS + r;
    row_lse[r] = i < s.nq ? lse[b * s.nq + i] : neg_inf<T>();
    row_delta[r] = i < s.nq ? delta[b * s.nq + i] : T(0);
    attends[r] = false;
    TL_UNROLL for (int c = 0; c < CPL; ++c) acc[r][c] = T(0);
  }

  for (std::int64_t k0 = 0; k0 < s.nk; k0 += kAttnBc) {
    if (!attention_tile_allowed(mb, q0, kBr, k0, kAttnBc, s)) continue;
    for (std::int64_t idx = tid; idx < kAttnBc * d; idx += kAttnThreads) {
      const std::int64_t row = idx / d;
      const std::int64_t j = k0 + row;
      sK[row * (d + 1) + idx % d] = j < s.nk ? kb[j * d + idx % d] : T(0);
    }
    for (std::int64_t idx = tid; idx < kAttnBc * dv; idx += kAttnThreads) {
      const std::int64_t row = idx / dv;
      const std::int64_t j = k0 + row;
      sV[row * (dv + 1) + idx % dv] = j < s.nk ? vb[j * dv + idx % dv] : T(0);
    }
    __syncthreads();

    const std::int64_t j = k0 + lane;
    T score[ROWS];
    T dp[ROWS];
    TL_UNROLL for (int r = 0; r < ROWS; ++r) {
      score[r] = T(0);
      dp[r] = T(0);
    }
    const T* krow = sK + lane * (d + 1);
    for (std::int64_t t = 0; t < d; ++t) {
      const T kv = krow[t];
      TL_UNROLL for (int r = 0; r < ROWS; ++r) score[r] += sQ[(warp * ROWS + r) * d + t] * kv;
    }
    const T* vrow = sV + lane * (dv + 1);
    for (std::int64_t t = 0; t < dv; ++t) {
      const T vv = vrow[t];
      TL_UNROLL for (int r = 0; r < ROWS; ++r) dp[r] += sdO[(warp * ROWS + r) * dv + t] * vv;
    }

    TL_UNROLL for (int r = 0; r < ROWS; ++r) {
      const std::int64_t i = q0 + warp * ROWS + r;
      const bool allowed = attention_allowed(mb, i, j, s);
      const T p = allowed ? tl_exp(score[r] * scale - row_lse[r]) : T(0);
      const T ds = allowed ? p * (dp[r] - row_delta[r]) : T(0);
      const unsigned int bits = __ballot_sync(kFullMask, allowed);
      attends[r] = attends[r] || bits != 0u;
      for (int jj = 0; jj < kAttnBc; ++jj) {
        if (((bits >> jj) & 1u) == 0u) continue;
        const T dsj = __shfl_sync(kFullMask, ds, jj);
        const T* kj = sK + jj * (d + 1);
        TL_UNROLL for (int c = 0; c < CPL; ++c) {
          const std::int64_t col = lane + kWarpSize * c;
          if (col < d) acc[r][c] += dsj * kj[col];
        }
      }
    }
  }

  TL_UNROLL for (int r = 0; r < ROWS; ++r) {
    const std::int64_t i = q0 + warp * ROWS + r;
    if (i >= s.nq) continue;
    T* row = dq + (b * s.nq + i) * d;
    TL_UNROLL for (int c = 0; c < CPL; ++c) {
      const std::int64_t col = lane + kWarpSize * c;
      // a fully blocked row is 0, also when the scale is inf in T (0 * inf would be NaN)
      if (col < d) row[col] = attends[r] ? acc[r][c] * scale : T(0);
    }
  }
}

// Backward, dK and dV.  One block per (batch entry, tile of kBr keys); warp w owns keys
// [w * ROWS, (w + 1) * ROWS) of the tile; lane i handles query q0 + i of each query
// tile.  dV_j = sum_i p_ij dO_i,  dK_j = scale * sum_i ds_ij q_i.
template <class T, int CPL, int ROWS>
TL_GLOBAL void attention_backward_dkdv_kernel(const T* __restrict__ q, const T* __restrict__ k,
                                              const T* __restrict__ v,
                                              const unsigned char* __restrict__ mask,
                                              const T* __restrict__ dout,
                                              const T* __restrict__ lse,
                                              const T* __restrict__ delta, T* __restrict__ dk,
                                              T* __restrict__ dvv, AttentionShape s, T scale) {
  TL_DYNAMIC_SMEM(T, smem);
  constexpr int kBr = kAttnWarps * ROWS;  // rows (keys) per block tile
  const std::int64_t d = s.d;
  const std::int64_t dv = s.dv;
  T* sK = smem;                        // kBr keys x d
  T* sV = sK + kBr * d;                // kBr keys x dv
  T* sQ = sV + kBr * dv;               // kAttnBc queries x (d + 1)
  T* sdO = sQ + kAttnBc * (d + 1);     // kAttnBc queries x (dv + 1)
  T* sL = sdO + kAttnBc * (dv + 1);    // kAttnBc
  T* sD = sL + kAttnBc;                // kAttnBc

  const std::int64_t tiles = (s.nk + kBr - 1) / kBr;
  const std::int64_t block = static_cast<std::int64_t>(blockIdx.x);
  const std::int64_t b = block / tiles;
  const std::int64_t k0 = (block % tiles) * kBr;
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % kWarpSize;
  const int warp = tid / kWarpSize;

  const T* qb = q + b * s.nq * d;
  const T* kb = k + b * s.nk * d;
  const T* vb = v + b * s.nk * dv;
  const T* gb = dout + b * s.nq * dv;
  const unsigned char* mb = mask == nullptr ? nullptr : mask + attention_mask_offset(s, b);

  for (std::int64_t idx = tid; idx < kBr * d; idx += kAttnThreads) {
    const std::int64_t j = k0 + idx / d;
    sK[idx] = j < s.nk ? kb[j * d + idx % d] : T(0);
  }
  for (std::int64_t idx = tid; idx < kBr * dv; idx += kAttnThreads) {
    const std::int64_t j = k0 + idx / dv;
    sV[idx] = j < s.nk ? vb[j * dv + idx % dv] : T(0);
  }

  T acc_k[ROWS][CPL];
  T acc_v[ROWS][CPL];
  bool attended[ROWS];  // some query attends the key (the same in every lane: from ballots)
  TL_UNROLL for (int r = 0; r < ROWS; ++r) {
    attended[r] = false;
    TL_UNROLL for (int c = 0; c < CPL; ++c) {
      acc_k[r][c] = T(0);
      acc_v[r][c] = T(0);
    }
  }

  for (std::int64_t q0 = 0; q0 < s.nq; q0 += kAttnBc) {
    if (!attention_tile_allowed(mb, q0, kAttnBc, k0, kBr, s)) continue;
    for (std::int64_t idx = tid; idx < kAttnBc * d; idx += kAttnThreads) {
      const std::int64_t row = idx / d;
      const std::int64_t i = q0 + row;
      sQ[row * (d + 1) + idx % d] = i < s.nq ? qb[i * d + idx % d] : T(0);
    }
    for (std::int64_t idx = tid; idx < kAttnBc * dv; idx += kAttnThreads) {
      const std::int64_t row = idx / dv;
      const std::int64_t i = q0 + row;
      sdO[row * (dv + 1) + idx % dv] = i < s.nq ? gb[i * dv + idx % dv] : T(0);
    }
    if (tid < kAttnBc) {
      const std::int64_t i = q0 + tid;
      sL[tid] = i < s.nq ? lse[b * s.nq + i] : neg_inf<T>();
      sD[tid] = i < s.nq ? delta[b * s.nq + i] : T(0);
    }
    __syncthreads();

    const std::int64_t i = q0 + lane;
    T score[ROWS];
    T dp[ROWS];
    TL_UNROLL for (int r = 0; r < ROWS; ++r) {
      score[r] = T(0);
      dp[r] = T(0);
    }
    const T* qrow = sQ + lane * (d + 1);
    for (std::int64_t t = 0; t < d; ++t) {
      const T qv = qrow[t];
      TL_UNROLL for (int r = 0; r < ROWS; ++r) score[r] += qv * sK[(warp * ROWS + r) * d + t];
    }
    const T* grow = sdO + lane * (dv + 1);
    for (std::int64_t t = 0; t < dv; ++t) {
      const T gv = grow[t];
      TL_UNROLL for (int r = 0; r < ROWS; ++r) dp[r] += gv * sV[(warp * ROWS + r) * dv + t];
    }

    TL_UNROLL for (int r = 0; r < ROWS; ++r) {
      const std::int64_t j = k0 + warp * ROWS + r;
      const bool allowed = attention_allowed(mb, i, j, s);
      const T p = allowed ? tl_exp(score[r] * scale - sL[lane]) : T(0);
      const T ds = allowed ? p * (dp[r] - sD[lane]) : T(0);
      const unsigned int bits = __ballot_sync(kFullMask, allowed);
      attended[r] = attended[r] || bits != 0u;
      for (int ii = 0; ii < kAttnBc; ++ii) {
        if (((bits >> ii) & 1u) == 0u) continue;  // blocked queries are never read
        const T pi = __shfl_sync(kFullMask, p, ii);
        const T dsi = __shfl_sync(kFullMask, ds, ii);
        const T* gi = sdO + ii * (dv + 1);
        const T* qi = sQ + ii * (d + 1);
        TL_UNROLL for (int c = 0; c < CPL; ++c) {
          const std::int64_t col = lane + kWarpSize * c;
          if (col < dv) acc_v[r][c] += pi * gi[col];
          if (col < d) acc_k[r][c] += dsi * qi[col];
        }
      }
    }
  }

  TL_UNROLL for (int r = 0; r < ROWS; ++r) {
    const std::int64_t j = k0 + warp * ROWS + r;
    if (j >= s.nk) continue;
    T* krow = dk + (b * s.nk + j) * d;
    T* vrow = dvv + (b * s.nk + j) * dv;
    TL_UNROLL for (int c = 0; c < CPL; ++c) {
      const std::int64_t col = lane + kWarpSize * c;
      // a key no query attends gets 0, also when the scale is inf in T (0 * inf would be NaN)
      if (col < d) krow[col] = attended[r] ? acc_k[r][c] * scale : T(0);
      if (col < dv) vrow[col] = acc_v[r][c];
    }
  }
}

// ---------------------------------------------------------------------------------------------
// hard-masked softmax over the last axis (one warp per row)
// ---------------------------------------------------------------------------------------------

constexpr int kRowWarps = 8;
constexpr int kRowThreads = kRowWarps * kWarpSize;

// rows x n scores; the mask has mask_rows x n entries and row r uses mask row r % mask_rows.
template <class T>
TL_GLOBAL void hard_masked_softmax_forward_kernel(const T* __restrict__ x,
                                                  const unsigned char* __restrict__ mask,
                                                  T* __restrict__ y, std::int64_t rows,
                                                  std::int64_t n, std::int64_t mask_rows) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowWarps +
                           static_cast<int>(threadIdx.x) / kWarpSize;
  if (row >= rows) return;  // the whole warp leaves together
  const T* xr = x + row * n;
  const unsigned char* mr = mask + (row % mask_rows) * n;
  T* yr = y + row * n;

  // Running (max, sum of exp(x - max)) over the lane's allowed entries.  An allowed NaN or +inf
  // makes the two-pass sum NaN (exp(NaN) or exp(inf - inf) enters it), so it poisons l at once:
  // every allowed weight of the row is then NaN, as torchlean.spec.hard_masked_softmax, however
  // the entries are spread over the lanes.  A row whose allowed entries are all -inf keeps
  // (m, l) = (-inf, 0) and gives exp(-inf - -inf) / 0 = NaN there too.
  T m = neg_inf<T>();
  T l = T(0);
  for (std::int64_t j = lane; j < n; j += kWarpSize) {
    if (mr[j] == 0) continue;  // blocked: never read
    const T value = xr[j];
    if (is_nan(value) || value == -neg_inf<T>()) {
      m = value;
      l = quiet_nan<T>();
    } else if (value > m) {
      l = (m == neg_inf<T>() ? T(0) : l * tl_exp(m - value)) + T(1);
      m = value;
    } else if (value != neg_inf<T>()) {
      l += tl_exp(value - m);  // NaN once l or m is NaN
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    const T m2 = __shfl_xor_sync(kFullMask, m, offset);
    const T l2 = __shfl_xor_sync(kFullMask, l, offset);
    merge_softmax_stats(m, l, m2, l2);
  }
  for (std::int64_t j = lane; j < n; j += kWarpSize) {
    yr[j] = mr[j] != 0 ? tl_exp(xr[j] - m) / l : T(0);
  }
}

// dx_j = y_j (g_j - sum_allowed g_k y_k) at allowed j, exactly 0 at blocked j.
template <class T>
TL_GLOBAL void hard_masked_softmax_backward_kernel(const T* __restrict__ g,
                                                   const T* __restrict__ y,
                                                   const unsigned char* __restrict__ mask,
                                                   T* __restrict__ dx, std::int64_t rows,
                                                   std::int64_t n, std::int64_t mask_rows) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowWarps +
                           static_cast<int>(threadIdx.x) / kWarpSize;
  if (row >= rows) return;
  const T* gr = g + row * n;
  const T* yr = y + row * n;
  const unsigned char* mr = mask + (row % mask_rows) * n;
  T* dr = dx + row * n;
  T dot = T(0);
  for (std::int64_t j = lane; j < n; j += kWarpSize) {
    if (mr[j] != 0) dot += gr[j] * yr[j];
  }
  dot = warp_sum(dot);
  for (std::int64_t j = lane; j < n; j += kWarpSize) {
    dr[j] = mr[j] != 0 ? yr[j] * (gr[j] - dot) : T(0);
  }
}

// ---------------------------------------------------------------------------------------------
// selective scan (one thread per (batch, state) channel, time in order)
// ---------------------------------------------------------------------------------------------

struct ScanShape {
  std::int64_t batch;  // product of the leading axes of x
  std::int64_t len;    // time steps
  std::int64_t state;  // state channels
  bool token;          // coefficients have x's shape (else one per state channel)
};

template <class T>
TL_GLOBAL void selective_scan_forward_kernel(const T* __restrict__ a, const T* __restrict__ bcoef,
                                             const T* __restrict__ x, const T* __restrict__ h0,
                                             T* __restrict__ h, ScanShape s) {
  const std::int64_t channels = s.batch * s.state;
  for (std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       idx < channels; idx += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t bi = idx / s.state;
    const std::int64_t ch = idx % s.state;
    T hv = h0[idx];
    for (std::int64_t t = 0; t < s.len; ++t) {
      const std::int64_t off = (bi * s.len + t) * s.state + ch;
      const T av = s.token ? a[off] : a[ch];
      const T bv = s.token ? bcoef[off] : bcoef[ch];
      hv = av * hv + bv * x[off];
      h[off] = hv;
    }
  }
}

// Reverse recurrence: total_t = g_t + carry; dA_t = total_t h_{t-1}; dB_t = total_t x_t;
// dx_t = total_t B_t; carry = total_t A_t; dh0 = final carry.  With shared coefficients the
// per-channel sums over time are written to da/db as [batch, state] partials.
template <class T>
TL_GLOBAL void selective_scan_backward_kernel(const T* __restrict__ a, const T* __restrict__ bcoef,
                                              const T* __restrict__ x, const T* __restrict__ h0,
                                              const T* __restrict__ h, const T* __restrict__ g,
                                              T* __restrict__ da, T* __restrict__ db,
                                              T* __restrict__ dx, T* __restrict__ dh0,
                                              ScanShape s) {
  const std::int64_t channels = s.batch * s.state;
  for (std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       idx < channels; idx += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t bi = idx / s.state;
    const std::int64_t ch = idx % s.state;
    T carry = T(0);
    T sum_a = T(0);
    T sum_b = T(0);
    for (std::int64_t t = s.len - 1; t >= 0; --t) {
      const std::int64_t off = (bi * s.len + t) * s.state + ch;
      const T total = g[off] + carry;
      const T prev = t > 0 ? h[off - s.state] : h0[idx];
      const T av = s.token ? a[off] : a[ch];
      const T bv = s.token ? bcoef[off] : bcoef[ch];
      const T ga = total * prev;
      const T gb = total * x[off];
      dx[off] = total * bv;
      if (s.token) {
        da[off] = ga;
        db[off] = gb;
      } else {
        sum_a += ga;
        sum_b += gb;
      }
      carry = total * av;
    }
    dh0[idx] = carry;
    if (!s.token) {
      da[idx] = sum_a;
      db[idx] = sum_b;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// smooth max pooling over the trailing `rank` axes; leading axes are folded into channels.
// Window cells in the padding are left out of the window (as PyTorch pools leave padding out of
// a max); the host refuses geometries with a window made of padding only.
// ---------------------------------------------------------------------------------------------

constexpr int kMaxPoolRank = 6;

struct PoolGeometry {
  int rank;
  std::int64_t channels;
  std::int64_t in[kMaxPoolRank];
  std::int64_t out[kMaxPoolRank];
  std::int64_t kernel[kMaxPoolRank];
  std::int64_t stride[kMaxPoolRank];
  std::int64_t pad[kMaxPoolRank];
  std::int64_t in_size;      // product of in
  std::int64_t out_size;     // product of out
  std::int64_t kernel_size;  // product of kernel
};

// Reads window cell `cell` (row-major over the kernel) of output position `opos` into `value`;
// false for a padding cell.
template <class T>
TL_DEVICE bool window_cell(const T* xc, const PoolGeometry& g, const std::int64_t* opos,
                           std::int64_t cell, T& value) {
  std::int64_t kc[kMaxPoolRank];
  for (int ax = g.rank - 1; ax >= 0; --ax) {
    kc[ax] = cell % g.kernel[ax];
    cell /= g.kernel[ax];
  }
  std::int64_t flat = 0;
  for (int ax = 0; ax < g.rank; ++ax) {
    const std::int64_t p = opos[ax] * g.stride[ax] - g.pad[ax] + kc[ax];
    if (p < 0 || p >= g.in[ax]) return false;
    flat = flat * g.in[ax] + p;
  }
  value = xc[flat];
  return true;
}

// The shift of a window whose max or min is `pivot`: the pivot, or 0 when it is infinite (as
// torch.logsumexp does, so inf - inf never arises).
template <class T>
TL_DEVICE T smooth_shift(T pivot) {
  return (pivot == neg_inf<T>() || pivot == -neg_inf<T>()) ? T(0) : pivot;
}

// pivot = max (beta > 0) or min (beta < 0) of the window's input cells (NaN if one is NaN);
// sum = sum over those cells of exp(beta (v - smooth_shift(pivot))) (>= 1 for a finite pivot: the
// pivot cell contributes 1; inf or 0 for an infinite one, giving the formula's +-inf).
template <class T>
TL_DEVICE void smooth_window_stats(const T* xc, const PoolGeometry& g, const std::int64_t* opos,
                                   T beta, T& pivot, T& sum) {
  pivot = beta > T(0) ? neg_inf<T>() : -neg_inf<T>();
  T value = T(0);
  for (std::int64_t cell = 0; cell < g.kernel_size; ++cell) {
    if (!window_cell(xc, g, opos, cell, value)) continue;
    pivot = beta > T(0) ? nan_max(pivot, value) : nan_min(pivot, value);
  }
  const T shift = smooth_shift(pivot);
  sum = T(0);
  for (std::int64_t cell = 0; cell < g.kernel_size; ++cell) {
    if (window_cell(xc, g, opos, cell, value)) sum += tl_exp(beta * (value - shift));
  }
}

TL_DEVICE void unflatten(std::int64_t flat, const std::int64_t* dims, int rank,
                         std::int64_t* coord) {
  for (int ax = rank - 1; ax >= 0; --ax) {
    coord[ax] = flat % dims[ax];
    flat /= dims[ax];
  }
}

// One thread per output element: out = shift + log(sum) / beta; also stores the statistics
// when `stats` is given (pivot, sum per output element), for the backward.
template <class T>
TL_GLOBAL void smooth_max_pool_forward_kernel(const T* __restrict__ x, T* __restrict__ out,
                                              T* __restrict__ stats, PoolGeometry g, T beta) {
  const std::int64_t total = g.channels * g.out_size;
  for (std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       idx < total; idx += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t c = idx / g.out_size;
    std::int64_t opos[kMaxPoolRank];
    unflatten(idx % g.out_size, g.out, g.rank, opos);
    T pivot;
    T sum;
    smooth_window_stats(x + c * g.in_size, g, opos, beta, pivot, sum);
    if (out != nullptr) out[idx] = smooth_shift(pivot) + tl_log(sum) / beta;
    if (stats != nullptr) {
      stats[2 * idx] = pivot;
      stats[2 * idx + 1] = sum;
    }
  }
}

// One thread per input element: dx_i = sum over windows o containing i of
// g_o exp(beta (x_i - pivot_o)) / sum_o; a window with an infinite pivot takes torch.logsumexp's
// weights exp(beta (x_i - out_o)) instead: NaN when x_i is that infinity, else 0 (the quotient
// would be inf / inf at a finite x_i whose term overflows).
template <class T>
TL_GLOBAL void smooth_max_pool_backward_kernel(const T* __restrict__ x, const T* __restrict__ g,
                                               const T* __restrict__ stats, T* __restrict__ dx,
                                               PoolGeometry geo, T beta) {
  const std::int64_t total = geo.channels * geo.in_size;
  for (std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       idx < total; idx += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t c = idx / geo.in_size;
    std::int64_t ipos[kMaxPoolRank];
    unflatten(idx % geo.in_size, geo.in, geo.rank, ipos);
    std::int64_t lo[kMaxPoolRank];
    std::int64_t count[kMaxPoolRank];
    std::int64_t windows = 1;
    for (int ax = 0; ax < geo.rank; ++ax) {
      // o covers i when o * stride - pad <= i <= o * stride - pad + kernel - 1
      const std::int64_t shifted = ipos[ax] + geo.pad[ax];
      std::int64_t first = shifted - geo.kernel[ax] + 1;
      first = first <= 0 ? 0 : (first + geo.stride[ax] - 1) / geo.stride[ax];
      std::int64_t last = shifted / geo.stride[ax];
      if (last > geo.out[ax] - 1) last = geo.out[ax] - 1;
      lo[ax] = first;
      count[ax] = last >= first ? last - first + 1 : 0;
      windows *= count[ax];
    }
    const T value = x[idx];
    T acc = T(0);
    for (std::int64_t w = 0; w < windows; ++w) {
      std::int64_t rest = w;
      std::int64_t oflat = 0;
      std::int64_t ocoord[kMaxPoolRank];
      for (int ax = geo.rank - 1; ax >= 0; --ax) {
        ocoord[ax] = lo[ax] + rest % count[ax];
        rest /= count[ax];
      }
      for (int ax = 0; ax < geo.rank; ++ax) oflat = oflat * geo.out[ax] + ocoord[ax];
      const std::int64_t o = c * geo.out_size + oflat;
      const T pivot = stats[2 * o];
      if (pivot == neg_inf<T>() || pivot == -neg_inf<T>()) {
        acc += g[o] * (value == pivot ? quiet_nan<T>() : T(0));
      } else {
        acc += g[o] * tl_exp(beta * (value - pivot)) / stats[2 * o + 1];
      }
    }
    dx[idx] = acc;
  }
}

// ---------------------------------------------------------------------------------------------
// seeded sources (anchor-runtime.md 1.6): element i = splitmix64(key + i) mod 2^32 / 2^32
// ---------------------------------------------------------------------------------------------

TL_HOST_DEVICE std::uint64_t splitmix64(std::uint64_t x) {
  std::uint64_t z = x + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

template <class T>
TL_DEVICE T uniform_at(std::uint64_t key, std::int64_t i) {
  const std::uint64_t u = splitmix64(key + static_cast<std::uint64_t>(i)) & 0xffffffffULL;
  // u / 2^32 is exact in double; one rounding to T (u < 2^32 so T(u) * 2^-32 is the same value)
  return static_cast<T>(static_cast<double>(u) * 2.3283064365386962890625e-10);
}

template <class T>
TL_GLOBAL void rand_uniform_kernel(T* __restrict__ out, std::int64_t n, std::uint64_t key) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    out[i] = uniform_at<T>(key, i);
  }
}

// 1 where keep > u (strict, both in T), else 0.
template <class T>
TL_GLOBAL void bernoulli_mask_kernel(T* __restrict__ out, std::int64_t n, std::uint64_t key,
                                     T keep) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    out[i] = keep > uniform_at<T>(key, i) ? T(1) : T(0);
  }
}

// ---------------------------------------------------------------------------------------------
// host-side launch geometry
// ---------------------------------------------------------------------------------------------

constexpr int kElementThreads = 256;
constexpr std::int64_t kMaxGridBlocks = 65535LL * 16;  // grid-stride loops cover the rest

// Blocks of kElementThreads for n work items, at most `cap` (1 <= cap <= kMaxGridBlocks).
inline unsigned int element_blocks(std::int64_t n, std::int64_t cap = kMaxGridBlocks) {
  std::int64_t blocks = (n + kElementThreads - 1) / kElementThreads;
  if (blocks < 1) blocks = 1;
  if (blocks > cap) blocks = cap;
  return static_cast<unsigned int>(blocks);
}

// Columns per lane needed for widths up to `width` (1, 2, 4 or 8; 0 if width > 256).
inline int attention_columns_per_lane(std::int64_t width) {
  if (width <= 32) return 1;
  if (width <= 64) return 2;
  if (width <= 128) return 4;
  if (width <= kAttnMaxWidth) return 8;
  return 0;
}

// Rows (keys) per block tile with `rows` rows per warp.
constexpr std::int64_t attention_tile(int rows) { return static_cast<std::int64_t>(kAttnWarps) * rows; }

// Dynamic shared memory (bytes) of each attention kernel with `rows` rows per warp.
inline std::int64_t attention_forward_smem(std::int64_t d, std::int64_t dv, std::int64_t bytes,
                                           int rows) {
  const std::int64_t br = attention_tile(rows);
  return (br * d + kAttnBc * (d + 1) + kAttnBc * dv) * bytes;
}

inline std::int64_t attention_dq_smem(std::int64_t d, std::int64_t dv, std::int64_t bytes,
                                      int rows) {
  const std::int64_t br = attention_tile(rows);
  return (br * d + br * dv + kAttnBc * (d + 1) + kAttnBc * (dv + 1)) * bytes;
}

inline std::int64_t attention_dkdv_smem(std::int64_t d, std::int64_t dv, std::int64_t bytes,
                                        int rows) {
  const std::int64_t br = attention_tile(rows);
  return (br * d + br * dv + kAttnBc * (d + 1) + kAttnBc * (dv + 1) + 2 * kAttnBc) * bytes;
}

// The backward launches both kernels with one tile; dK/dV needs the most shared memory.
inline std::int64_t attention_backward_smem(std::int64_t d, std::int64_t dv, std::int64_t bytes,
                                            int rows) {
  return std::max(attention_dq_smem(d, dv, bytes, rows), attention_dkdv_smem(d, dv, bytes, rows));
}

// The largest rows per warp (kAttnRows, else kAttnMinRows) whose shared memory, as given by
// smem(rows), is at most `limit`; 0 when even the smallest tile does not fit.
template <class Smem>
inline int attention_rows_that_fit(Smem&& smem, std::int64_t limit, bool smallest = false) {
  if (!smallest && smem(kAttnRows) <= limit) return kAttnRows;
  if (smem(kAttnMinRows) <= limit) return kAttnMinRows;
  return 0;
}

// The largest d + dv whose backward fits `limit` bytes with the smallest tile (-1 if none):
// attention_backward_smem(d, dv, bytes, kAttnMinRows) = ((br + 32) (d + dv) + 128) * bytes.
inline std::int64_t attention_max_width_sum(std::int64_t bytes, std::int64_t limit) {
  const std::int64_t fixed = 2 * kAttnBc + 2 * kAttnBc;  // the +1 paddings and the lse/delta rows
  const std::int64_t per_width = attention_tile(kAttnMinRows) + kAttnBc;
  const std::int64_t elements = limit / bytes - fixed;
  return elements < 0 ? -1 : elements / per_width;
}

}  // namespace tl
