#include "txl/platform/onednn.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "txl/util/env.h"

#ifdef TXL_HAS_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace txl {

namespace {

bool switched_off() { return env_is("TXL_ONEDNN", "0"); }

}  // namespace

#ifdef TXL_HAS_ONEDNN

namespace {

const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
#if DNNL_VERSION_MAJOR >= 3
    case dnnl::cpu_isa::avx2_vnni_2:
      return "avx2_vnni_2";
    case dnnl::cpu_isa::avx512_core_fp16:
      return "avx512_core_fp16";
    case dnnl::cpu_isa::avx512_core_amx_fp16:
      return "avx512_core_amx_fp16";
#endif
    default:
      return "other";
  }
}

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::memory::desc describe(const torch::Tensor& t, dnnl::memory::data_type type) {
  return dnnl::memory::desc(dnnl::memory::dims(t.sizes().begin(), t.sizes().end()), type,
                            dnnl::memory::dims(t.strides().begin(), t.strides().end()));
}

// The primitive for one combination of dtype, shapes, strides, bias and thread count (a
// primitive keeps the thread count it was made with); null where oneDNN has only its
// reference implementation for it (or none). Creating one JIT-compiles a kernel, so they are
// kept: a training step asks for the same few dozen combinations every time. Sampling asks
// for a new one per length, so the cache is emptied when it grows past kMaxCached.
using CachedMatmul = std::shared_ptr<const dnnl::matmul>;
constexpr size_t kMaxCached = 512;
std::atomic<int64_t> kernels_made{0};  // primitives find_or_create has made, ever

std::vector<int64_t> cache_key(const torch::Tensor& a, const torch::Tensor& b,
                               const torch::Tensor& bias) {
  std::vector<int64_t> key = {static_cast<int64_t>(a.scalar_type()), a.dim(),
                              bias.defined() ? bias.stride(0) : 0, at::get_num_threads()};
  for (const auto& t : {a, b}) {
    key.insert(key.end(), t.sizes().begin(), t.sizes().end());
    key.insert(key.end(), t.strides().begin(), t.strides().end());
  }
  return key;
}

// bias [n] as oneDNN reads it: [1, ..., 1, n], broadcast over the output's other dimensions.
dnnl::memory::desc describe_bias(const torch::Tensor& bias, int64_t rank,
                                 dnnl::memory::data_type type) {
  dnnl::memory::dims dims(static_cast<size_t>(rank), 1), strides(static_cast<size_t>(rank), 0);
  dims.back() = bias.size(0);
  strides.back() = bias.stride(0);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[static_cast<size_t>(d)] =
        strides[static_cast<size_t>(d) + 1] * dims[static_cast<size_t>(d) + 1];
  return dnnl::memory::desc(dims, type, strides);
}

// The matmul's primitive description, bias optional (an empty desc): oneDNN 2.x made it
// from an operation descriptor, 3.x from the memory descriptors directly.
dnnl::matmul::primitive_desc describe_matmul(const dnnl::engine& engine,
                                             const dnnl::memory::desc& a,
                                             const dnnl::memory::desc& b,
                                             const dnnl::memory::desc& bias,
                                             const dnnl::memory::desc& out) {
#if DNNL_VERSION_MAJOR >= 3
  return dnnl::matmul::primitive_desc(engine, a, b, bias, out);
#else
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, bias, out), engine);
#endif
}

CachedMatmul find_or_create(const torch::Tensor& a, const torch::Tensor& b,
                            const torch::Tensor& bias, const torch::Tensor& out,
                            dnnl::memory::data_type type) {
  auto& engine = cpu_engine();  // made before the cache, so destroyed after its primitives
  static std::mutex mutex;
  static std::map<std::vector<int64_t>, CachedMatmul> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = cache_key(a, b, bias);
  auto found = cache.find(key);
  if (found != cache.end()) return found->second;
  if (cache.size() >= kMaxCached) cache.clear();
  kernels_made.fetch_add(1);
  CachedMatmul entry;
  try {
    const auto pd =
        describe_matmul(engine, describe(a, type), describe(b, type),
                        bias.defined() ? describe_bias(bias, a.dim(), type) : dnnl::memory::desc(),
                        describe(out, type));
    // "ref:any" loops element by element: LibTorch's path is faster than that.
    if (std::string(pd.impl_info_str()).rfind("ref", 0) != 0)
      entry = std::make_shared<const dnnl::matmul>(pd);
  } catch (const dnnl::error&) {
    // Shapes or strides it does not take: leave the entry empty.
  }
  cache.emplace(std::move(key), entry);
  return entry;
}

// Whether oneDNN can read t as described: a stride of 0 (an expanded dimension) is not a
// layout it accepts, and empty tensors need no product.
bool describable(const torch::Tensor& t) {
  if (t.numel() == 0) return false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.stride(d) == 0 && t.size(d) > 1) return false;
  return true;
}

}  // namespace

int64_t onednn_matmul_kernels_made() { return kernels_made.load(); }

bool onednn_matmul_enabled() {
  static const bool enabled = !switched_off();
  return enabled;
}

bool onednn_for_layers() {
  // The AVX-512 levels are the names isa_name gives with that prefix.
  static const bool avx512 =
      std::string(isa_name(dnnl::get_effective_cpu_isa())).rfind("avx512", 0) == 0;
  return onednn_matmul_enabled() && avx512;
}

std::string onednn_matmul_status() {
  const auto* v = dnnl::version();
  std::string s = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                  std::to_string(v->patch) + " (" + isa_name(dnnl::get_effective_cpu_isa()) + ")";
  if (!onednn_matmul_enabled()) return s + ", switched off by TXL_ONEDNN=0";
  return onednn_for_layers() ? s + " for fp32 layers and attention products"
                             : s + " for fp32 attention products (layers: the BLAS, faster "
                                   "below AVX-512)";
}

torch::Tensor onednn_matmul(const torch::Tensor& a, const torch::Tensor& b,
                            const torch::Tensor& bias) {
  if (!onednn_matmul_enabled() || !a.is_cpu() || !b.is_cpu()) return {};
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != b.size(-1) ||
                         bias.scalar_type() != a.scalar_type() || !bias.is_cpu()))
    return {};
  if (a.dim() != b.dim() || a.dim() < 2 || a.dim() > 6 || a.size(-1) != b.size(-2)) return {};
  dnnl::memory::data_type type;
  if (a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32) {
    type = dnnl::memory::data_type::f32;
  } else if (a.scalar_type() == torch::kBFloat16 && b.scalar_type() == torch::kBFloat16) {
    type = dnnl::memory::data_type::bf16;
  } else {
    return {};
  }
  if (!describable(a) || !describable(b)) return {};
  std::vector<int64_t> out_sizes(static_cast<size_t>(a.dim()));
  for (int64_t d = 0; d + 2 < a.dim(); ++d) {
    const int64_t sa = a.size(d), sb = b.size(d);
    if (sa != sb && sa != 1 && sb != 1) return {};
    out_sizes[static_cast<size_t>(d)] = std::max(sa, sb);
  }
  out_sizes[out_sizes.size() - 2] = a.size(-2);
  out_sizes.back() = b.size(-1);
  auto out = torch::empty(out_sizes, a.options().requires_grad(false));
  const auto primitive = find_or_create(a, b, bias, out, type);
  if (!primitive) return {};
  auto& engine = cpu_engine();
  dnnl::stream stream(engine);
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, dnnl::memory(describe(a, type), engine, a.data_ptr())},
      {DNNL_ARG_WEIGHTS, dnnl::memory(describe(b, type), engine, b.data_ptr())},
      {DNNL_ARG_DST, dnnl::memory(describe(out, type), engine, out.data_ptr())}};
  if (bias.defined())
    args.emplace(DNNL_ARG_BIAS,
                 dnnl::memory(describe_bias(bias, a.dim(), type), engine, bias.data_ptr()));
  primitive->execute(stream, args);
  stream.wait();
  return out;
}

bool onednn_sgemm(bool a_t, bool b_t, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (!onednn_matmul_enabled()) return false;
  const auto status =
      dnnl_sgemm(a_t ? 'T' : 'N', b_t ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  TORCH_CHECK(status == dnnl_success, "oneDNN sgemm failed (status ", static_cast<int>(status),
              ") for m ", m, ", n ", n, ", k ", k);
  return true;
}

#else  // no oneDNN headers at build time

int64_t onednn_matmul_kernels_made() { return 0; }

bool onednn_matmul_enabled() { return false; }

bool onednn_for_layers() { return false; }

std::string onednn_matmul_status() {
  return switched_off() ? "not built in (and TXL_ONEDNN=0)"
                        : "not built in (no oneDNN headers at build time: libdnnl-dev)";
}

torch::Tensor onednn_matmul(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&) {
  return {};
}

bool onednn_sgemm(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t, const float*,
                  int64_t, float, float*, int64_t) {
  return false;
}

#endif

void torch_sgemm(bool a_t, bool b_t, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  TORCH_CHECK(beta == 0.0f || beta == 1.0f, "torch_sgemm takes beta 0 or 1, got ", beta);
  // x as stored ([rows, cols], rows ld apart), transposed when t.
  const auto view = [](const float* x, int64_t rows, int64_t cols, int64_t ld, bool t) {
    auto v = torch::from_blob(const_cast<float*>(x), {rows, cols}, {ld, 1}, torch::kFloat32);
    return t ? v.t() : v;
  };
  const auto a_view = a_t ? view(a, k, m, lda, true) : view(a, m, k, lda, false);  // [m, k]
  const auto b_view = b_t ? view(b, n, k, ldb, true) : view(b, k, n, ldb, false);  // [k, n]
  auto c_view = view(c, m, n, ldc, false);                                         // [m, n]
  if (beta == 0.0f) {
    at::mm_out(c_view, a_view, b_view);
  } else {
    c_view.addmm_(a_view, b_view);
  }
}

}  // namespace txl
