// Prepacked B: layouts of the kernels' schedules, and the packing itself.
#include "runtime/host/packed_b.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "reference/error.h"

namespace mmtune {
namespace {

std::string param(const std::map<std::string, std::string>& schedule, const std::string& key,
                  const std::string& fallback) {
  auto it = schedule.find(key);
  return it == schedule.end() || it->second.empty() ? fallback : it->second;
}

int int_param(const std::map<std::string, std::string>& schedule, const std::string& key,
              int fallback) {
  const std::string v = param(schedule, key, std::to_string(fallback));
  try {
    return std::stoi(v);
  } catch (const std::exception&) {
    MMTUNE_CHECK(false, "schedule parameter " << key << "=" << v << " is not an integer");
  }
}

// The vector width in bits of a Halide target's natural vectors (schedules/target_info.cc).
int vector_bits(const std::string& target) {
  std::vector<std::string> parts;
  std::stringstream ss(target);
  for (std::string p; std::getline(ss, p, '-');) parts.push_back(p);
  MMTUNE_CHECK(!parts.empty(), "empty target");
  if (parts[0] == "x86") {
    bool avx512 = false, avx = false;
    for (const std::string& p : parts) {
      avx512 = avx512 || p.rfind("avx512", 0) == 0;
      avx = avx || p == "avx" || p == "avx2";
    }
    return avx512 ? 512 : avx ? 256 : 128;
  }
  if (parts[0] == "arm") return 128;
  if (parts[0] == "hexagon") return 1024;  // HVX 128-byte vectors
  MMTUNE_CHECK(false, "no CPU vector width known for target " << target);
}

}  // namespace

std::string PanelLayout::to_string() const {
  if (!packs()) return "B as it is (the kernel packs none)";
  std::ostringstream os;
  os << "panels of " << panel << " columns";
  if (k_group > 1) os << ", K in groups of " << k_group;
  if (group_align > 1) os << " padded to multiples of " << group_align;
  return os.str();
}

PanelLayout panel_layout(const std::string& target,
                         const std::map<std::string, std::string>& schedule, int acc_bits,
                         bool exact, bool dot8) {
  const std::string tmpl = param(schedule, "template", "cpu_matmul");
  // arm_matmul and hvx_matmul are cpu_matmul's register-tiled schedule with their own tables: the
  // same layout.
  MMTUNE_CHECK(tmpl == "cpu_matmul" || tmpl == "arm_matmul" || tmpl == "hvx_matmul",
               "no prepacked layout known for schedule template " << tmpl);
  const int width = int_param(schedule, "vector_width", 0);
  const int lanes = width > 0 ? width : std::max(1, vector_bits(target) / acc_bits);
  PanelLayout l;
  l.panel = int_param(schedule, "tile_vectors", 4) * lanes;
  const std::string pack = param(schedule, "pack_b", "true");
  l.pack_b = pack == "true" || pack == "1";
  l.k_group = exact ? int_param(schedule, "k_group", 1) : 1;
  l.dot8 = dot8;
  l.strip = int_param(schedule, "n_block", 256);
  const std::string amx = param(schedule, "amx", "false");
  if (amx == "true" || amx == "1") l.group_align = 16;  // schedules::kAmxTileGroups
  return l;
}

int64_t packed_groups(int64_t k, const PanelLayout& l) {
  const int64_t g = l.k_group;
  const int64_t groups = (k + g - 1) / g;
  if (!l.dot8) return groups;
  // build_dot8_matmul: nb blocks of bg groups, at most 2^15 products a block.
  const int64_t max_groups = (int64_t{1} << 15) / g;
  const int64_t nb = (groups + max_groups - 1) / max_groups;
  const int64_t a = l.group_align;
  const int64_t bg = ((groups + nb - 1) / std::max<int64_t>(nb, 1) + a - 1) / a * a;
  return nb * bg;
}

int64_t packed_panels(int64_t n, const PanelLayout& l) {
  const int64_t step = l.strip > 0 ? l.strip : l.panel;
  return (n + step - 1) / step * step / l.panel;
}

namespace {

// pack_b_panels for elements of type E (one of the unsigned integers of the element's size: only
// bits move). B is read row by row, front to back; each row of B lands in every panel as a run of
// `panel` elements, `g` apart (one run per group row when K is grouped). Columns past N repeat
// column N - 1, as the kernels' clamped reads of B do; rows past K stay zero.
template <class E>
void pack_rows(const E* src, int64_t k, int64_t n, int64_t panel, int64_t g, int64_t groups,
               int64_t panels, E* dst) {
  if constexpr (sizeof(E) == 1) {
    if (g == 4) {
      // 8-bit values in groups of 4 (the dot-product kernels): a whole group of 4 rows at a time,
      // a column's 4 values side by side, so that each write runs along the panel. Rows past K
      // (the last group's) read as zero.
      static const E zeros[1] = {0};
      for (int64_t kg = 0; kg < (k + 3) / 4; ++kg) {
        const E* r[4];
        int64_t step[4];  // 1 along a row of B, 0 on the zero row
        for (int64_t kk = 0; kk < 4; ++kk) {
          const bool in_b = kg * 4 + kk < k;
          r[kk] = in_b ? src + (kg * 4 + kk) * n : zeros;
          step[kk] = in_b ? 1 : 0;
        }
        for (int64_t jp = 0; jp < panels; ++jp) {
          E* out = dst + (kg + groups * jp) * 4 * panel;
          const int64_t c0 = jp * panel;
          const int64_t whole = std::clamp<int64_t>(n - c0, 0, panel);
          const E *a = r[0] + c0 * step[0], *b = r[1] + c0 * step[1], *c = r[2] + c0 * step[2],
                  *d = r[3] + c0 * step[3];
          if (step[3] == 1) {  // a whole group
            int64_t jj = 0;
#if defined(__SSE2__)
            // 16 columns at a time: the 4 rows' bytes interleaved by two rounds of unpacks (bytes
            // of rows 0/1 and 2/3 paired, then the pairs), 64 bytes out (SSE2: every x86-64 CPU).
            // The scalar loop alone: 0.13 ns a value of B at 256^2 and 512^2 in the AMX layout on a
            // Xeon, 0.10 with this.
            for (; jj + 16 <= whole; jj += 16) {
              auto load = [](const E* x) {
                return _mm_loadu_si128(reinterpret_cast<const __m128i*>(x));
              };
              const __m128i ra = load(a + jj), rb = load(b + jj), rc = load(c + jj),
                            rd = load(d + jj);
              const __m128i ab_lo = _mm_unpacklo_epi8(ra, rb), ab_hi = _mm_unpackhi_epi8(ra, rb);
              const __m128i cd_lo = _mm_unpacklo_epi8(rc, rd), cd_hi = _mm_unpackhi_epi8(rc, rd);
              __m128i* o = reinterpret_cast<__m128i*>(out + 4 * jj);
              _mm_storeu_si128(o, _mm_unpacklo_epi16(ab_lo, cd_lo));
              _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(ab_lo, cd_lo));
              _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(ab_hi, cd_hi));
              _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(ab_hi, cd_hi));
            }
#endif
            for (; jj < whole; ++jj) {
              out[4 * jj] = a[jj];
              out[4 * jj + 1] = b[jj];
              out[4 * jj + 2] = c[jj];
              out[4 * jj + 3] = d[jj];
            }
          } else {
            for (int64_t jj = 0; jj < whole; ++jj) {
              out[4 * jj] = a[jj * step[0]];
              out[4 * jj + 1] = b[jj * step[1]];
              out[4 * jj + 2] = c[jj * step[2]];
              out[4 * jj + 3] = d[jj * step[3]];
            }
          }
          for (int64_t jj = whole; jj < panel; ++jj) {
            for (int64_t kk = 0; kk < 4; ++kk) out[4 * jj + kk] = r[kk][(n - 1) * step[kk]];
          }
        }
      }
      return;
    }
  }
  for (int64_t kr = 0; kr < k; ++kr) {
    const E* row = src + kr * n;
    const int64_t kg = kr / g, kk = kr % g;
    for (int64_t jp = 0; jp < panels; ++jp) {
      E* out = dst + (kg + groups * jp) * g * panel + kk;
      const int64_t c0 = jp * panel;
      const int64_t whole = std::clamp<int64_t>(n - c0, 0, panel);
      if (g == 1) {
        std::memcpy(out, row + c0, static_cast<std::size_t>(whole) * sizeof(E));
      } else {
        for (int64_t jj = 0; jj < whole; ++jj) out[jj * g] = row[c0 + jj];
      }
      const E last = row[n - 1];
      for (int64_t jj = whole; jj < panel; ++jj) out[jj * g] = last;
    }
  }
}

}  // namespace

Shape packed_shape(int64_t k, int64_t n, const PanelLayout& l) {
  // Grouped: G groups of g rows per panel; else K rows per panel. Rows of d0 = g * panel elements.
  const int64_t g = l.k_group, groups = g > 1 ? packed_groups(k, l) : k;
  return {groups * packed_panels(n, l), g * l.panel};
}

Tensor pack_b_panels(const Tensor& b, const PanelLayout& l, Bytes storage) {
  MMTUNE_CHECK(b.rank() == 2, "pack_b_panels of " << describe(b));
  if (!l.packs()) return b;
  const int64_t k = b.shape[0], n = b.shape[1];
  MMTUNE_CHECK(k > 0 && n > 0, "pack_b_panels of " << describe(b));
  const int64_t panel = l.panel, g = l.k_group;
  const int64_t panels = packed_panels(n, l);
  // Panel jp's group kg (of G; K rows when not grouped) is row kg + G * jp, and
  // B[kg * g + kk][jp * panel + jj] its element kk + g * jj.
  Tensor p;
  p.dtype = b.dtype;
  p.shape = packed_shape(k, n, l);
  p.bytes = std::move(storage);
  p.bytes.resize(static_cast<std::size_t>(p.shape[0] * p.shape[1]) * dtype_size(b.dtype));
  const int64_t groups = p.shape[0] / panels;
  const uint8_t* src = b.bytes.data();
  uint8_t* dst = p.bytes.data();
  // The K padding zero: in each panel, the group rows past K's whole groups (the last partial
  // group's too; the 8-bit path below writes that one whole). Everything else is written below.
  const std::size_t row_bytes = static_cast<std::size_t>(g * panel) * dtype_size(b.dtype);
  for (int64_t jp = 0; jp < panels; ++jp) {
    std::memset(dst + static_cast<std::size_t>(jp * groups + k / g) * row_bytes, 0,
                static_cast<std::size_t>(groups - k / g) * row_bytes);
  }
  switch (dtype_size(b.dtype)) {
    case 1:
      pack_rows(src, k, n, panel, g, groups, panels, dst);
      break;
    case 2:
      pack_rows(reinterpret_cast<const uint16_t*>(src), k, n, panel, g, groups, panels,
                reinterpret_cast<uint16_t*>(dst));
      break;
    case 4:
      pack_rows(reinterpret_cast<const uint32_t*>(src), k, n, panel, g, groups, panels,
                reinterpret_cast<uint32_t*>(dst));
      break;
    case 8:
      pack_rows(reinterpret_cast<const uint64_t*>(src), k, n, panel, g, groups, panels,
                reinterpret_cast<uint64_t*>(dst));
      break;
    default:
      MMTUNE_CHECK(
          false, "pack_b_panels of " << describe(b) << ": no element size " << dtype_size(b.dtype));
  }
  return p;
}

Tensor column_sums_mod32(const Tensor& b) {
  MMTUNE_CHECK(b.rank() == 2 && (b.dtype == DType::kInt8 || b.dtype == DType::kUInt8),
               "column_sums_mod32 of " << describe(b));
  const int64_t k = b.shape[0], n = b.shape[1];
  Tensor s(DType::kUInt32, {n});
  uint32_t* out = s.data<uint32_t>();
  // The kernels' rule: each value as int32, summed in uint32 (wrap-around defined). Row by row, so
  // that the inner loop runs along a row of B and the sums; 256 rows at a time in 16-bit partial
  // sums, which hold them exactly (256 x -128 and 256 x 127 in int16, 256 x 255 in uint16), then
  // added to the 32-bit sums: the 16-bit loop vectorizes twice as wide (0.08 -> 0.04 ns a value
  // of B on a Xeon; a sixth of a plain 256^3 u8.s8 call that packed B for itself on AMX).
  constexpr int64_t kRows = 256;
  auto add_rows = [&](const auto* v, auto zero) {
    using Partial = decltype(zero);
    std::vector<Partial> part(static_cast<std::size_t>(n));
    for (int64_t r0 = 0; r0 < k; r0 += kRows) {
      std::fill(part.begin(), part.end(), zero);
      for (int64_t r = r0; r < std::min(k, r0 + kRows); ++r) {
        const auto* row = v + r * n;
        for (int64_t j = 0; j < n; ++j) part[j] = static_cast<Partial>(part[j] + row[j]);
      }
      for (int64_t j = 0; j < n; ++j)
        out[j] += static_cast<uint32_t>(static_cast<int32_t>(part[j]));
    }
  };
  if (b.dtype == DType::kInt8) {
    add_rows(b.data<int8_t>(), int16_t{0});
  } else {
    add_rows(b.data<uint8_t>(), uint16_t{0});
  }
  return s;
}

}  // namespace mmtune
