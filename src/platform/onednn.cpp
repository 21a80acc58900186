#include "txl/platform/onednn.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#ifdef TXL_HAS_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace txl {

namespace {

bool switched_off() {
  const char* v = std::getenv("TXL_ONEDNN");
  return v != nullptr && std::string(v) == "0";
}

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

// The primitive for one combination of dtype, shapes and strides; null where oneDNN has only
// its reference implementation for it (or none). Creating one JIT-compiles a kernel, so they
// are kept: a training step asks for the same few dozen combinations every time.
struct CachedMatmul {
  std::unique_ptr<dnnl::matmul> primitive;
};

std::vector<int64_t> cache_key(const torch::Tensor& a, const torch::Tensor& b) {
  std::vector<int64_t> key = {static_cast<int64_t>(a.scalar_type()), a.dim()};
  for (const auto& t : {a, b}) {
    key.insert(key.end(), t.sizes().begin(), t.sizes().end());
    key.insert(key.end(), t.strides().begin(), t.strides().end());
  }
  return key;
}

const CachedMatmul& find_or_create(const torch::Tensor& a, const torch::Tensor& b,
                                   const torch::Tensor& out, dnnl::memory::data_type type) {
  static std::mutex mutex;
  static std::map<std::vector<int64_t>, CachedMatmul> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = cache_key(a, b);
  auto found = cache.find(key);
  if (found != cache.end()) return found->second;
  CachedMatmul entry;
  try {
    const dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(describe(a, type), describe(b, type), describe(out, type)),
        cpu_engine());
    // "ref:any" loops element by element: LibTorch's path is faster than that.
    if (std::string(pd.impl_info_str()).rfind("ref", 0) != 0)
      entry.primitive = std::make_unique<dnnl::matmul>(pd);
  } catch (const dnnl::error&) {
    // Shapes or strides it does not take: leave the entry empty.
  }
  return cache.emplace(std::move(key), std::move(entry)).first->second;
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

bool onednn_matmul_enabled() {
  static const bool enabled = !switched_off();
  return enabled;
}

std::string onednn_matmul_status() {
  const auto* v = dnnl::version();
  std::string s = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                  std::to_string(v->patch) + " (" + isa_name(dnnl::get_effective_cpu_isa()) + ")";
  return onednn_matmul_enabled() ? s + " for fp32 layers and attention products"
                                 : s + ", switched off by TXL_ONEDNN=0";
}

torch::Tensor onednn_matmul(const torch::Tensor& a, const torch::Tensor& b) {
  if (!onednn_matmul_enabled() || !a.is_cpu() || !b.is_cpu()) return {};
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
  const auto& cached = find_or_create(a, b, out, type);
  if (!cached.primitive) return {};
  auto& engine = cpu_engine();
  dnnl::stream stream(engine);
  dnnl::memory a_mem(describe(a, type), engine, a.data_ptr());
  dnnl::memory b_mem(describe(b, type), engine, b.data_ptr());
  dnnl::memory out_mem(describe(out, type), engine, out.data_ptr());
  cached.primitive->execute(
      stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, out_mem}});
  stream.wait();
  return out;
}

#else  // no oneDNN headers at build time

bool onednn_matmul_enabled() { return false; }

std::string onednn_matmul_status() {
  return switched_off() ? "not built in (and TXL_ONEDNN=0)"
                        : "not built in (no oneDNN headers at build time: libdnnl-dev)";
}

torch::Tensor onednn_matmul(const torch::Tensor&, const torch::Tensor&) { return {}; }

#endif

}  // namespace txl
