// CPU matmul template parameters: JSON, generator parameters, validation, sampling.
#include "schedules/cpu/matmul_params.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "reference/error.h"

namespace mmtune::schedules {
namespace {

int parse_int(const std::map<std::string, std::string>& gp, const std::string& key, int fallback) {
  auto it = gp.find(key);
  if (it == gp.end()) return fallback;
  try {
    std::size_t used = 0;
    const int v = std::stoi(it->second, &used);
    if (used == it->second.size()) return v;
  } catch (const std::exception&) {
  }
  invalid("schedule", "generator parameter ", key, "=", it->second, " is not an integer");
}

bool parse_bool(const std::map<std::string, std::string>& gp, const std::string& key, bool fallback) {
  auto it = gp.find(key);
  if (it == gp.end()) return fallback;
  if (it->second == "true" || it->second == "1") return true;
  if (it->second == "false" || it->second == "0") return false;
  invalid("schedule", "generator parameter ", key, "=", it->second, " is not true or false");
}

}  // namespace

int CpuMatmulParams::lanes(const TargetInfo& t, int acc_bits) const {
  return vector_width > 0 ? vector_width : std::max(1, t.vector_bits / acc_bits);
}

std::optional<std::string> CpuMatmulParams::validate(const TargetInfo& t, int acc_bits, bool integer_sum) const {
  std::ostringstream why;
  if (tile_rows < 1 || tile_rows > 16) why << "tile_rows=" << tile_rows << " is outside 1..16";
  else if (tile_vectors < 1 || tile_vectors > 8) why << "tile_vectors=" << tile_vectors << " is outside 1..8";
  else if (vector_width < 0 || (vector_width & (vector_width - 1)) != 0 || vector_width > 64)
    why << "vector_width=" << vector_width << " is not 0 or a power of two up to 64";
  else if (k_unroll < 1 || k_unroll > 16) why << "k_unroll=" << k_unroll << " is outside 1..16";
  else if (n_block < 0) why << "n_block=" << n_block << " is negative";
  else if (k_group != 1 && k_group != 2 && k_group != 4) why << "k_group=" << k_group << " is not 1, 2 or 4";
  else if (k_group > 1 && !integer_sum)
    why << "k_group=" << k_group << " regroups the K sum, which only exact integer sums allow";
  else if (k_group > 1 && !pack_b) why << "k_group=" << k_group << " needs pack_b (B is packed in K groups)";
  else if (m_block < 0 || (m_block > 0 && m_block % tile_rows != 0))
    why << "m_block=" << m_block << " is not 0 or a multiple of tile_rows=" << tile_rows;
  else if (k_block < 0) why << "k_block=" << k_block << " is negative";
  else if (k_block > 0 && (n_block == 0 || m_block == 0 || k_group != 1))
    why << "k_block=" << k_block << " needs n_block and m_block (the accumulators of one block live in memory)"
        << " and k_group=1";
  else if (n_block > 0 && n_block % tile_columns(t, acc_bits) != 0)
    why << "n_block=" << n_block << " is not a multiple of the tile width " << tile_columns(t, acc_bits);
  else {
    // Accumulators + one register per loaded B vector + one broadcast of A must fit the register
    // file, or the tile spills and the kernel is slow (it stays correct).
    const int regs_per_vector = std::max(1, lanes(t, acc_bits) * acc_bits / std::max(1, t.vector_bits));
    const int needed = (tile_rows * tile_vectors + tile_vectors + 1) * regs_per_vector;
    if (needed > t.vector_registers) {
      why << "a " << tile_rows << "x" << tile_vectors << " tile of " << lanes(t, acc_bits) << "-lane "
          << acc_bits << "-bit vectors needs " << needed << " vector registers; " << t.isa << " has "
          << t.vector_registers;
    }
  }
  const std::string s = why.str();
  if (s.empty()) return std::nullopt;
  return s;
}

std::map<std::string, std::string> CpuMatmulParams::generator_params() const {
  return {{"tile_rows", std::to_string(tile_rows)},
          {"tile_vectors", std::to_string(tile_vectors)},
          {"vector_width", std::to_string(vector_width)},
          {"k_unroll", std::to_string(k_unroll)},
          {"n_block", std::to_string(n_block)},
          {"pack_b", pack_b ? "true" : "false"},
          {"parallel", parallel ? "true" : "false"},
          {"k_group", std::to_string(k_group)},
          {"m_block", std::to_string(m_block)},
          {"k_block", std::to_string(k_block)},
          {"specialize_tails", specialize_tails ? "true" : "false"}};
}

CpuMatmulParams CpuMatmulParams::from_generator_params(const std::map<std::string, std::string>& gp) {
  CpuMatmulParams p;
  p.tile_rows = parse_int(gp, "tile_rows", p.tile_rows);
  p.tile_vectors = parse_int(gp, "tile_vectors", p.tile_vectors);
  p.vector_width = parse_int(gp, "vector_width", p.vector_width);
  p.k_unroll = parse_int(gp, "k_unroll", p.k_unroll);
  p.n_block = parse_int(gp, "n_block", p.n_block);
  p.pack_b = parse_bool(gp, "pack_b", p.pack_b);
  p.parallel = parse_bool(gp, "parallel", p.parallel);
  p.k_group = parse_int(gp, "k_group", p.k_group);
  p.m_block = parse_int(gp, "m_block", p.m_block);
  p.k_block = parse_int(gp, "k_block", p.k_block);
  p.specialize_tails = parse_bool(gp, "specialize_tails", p.specialize_tails);
  return p;
}

std::string CpuMatmulParams::tag(const TargetInfo& t, int acc_bits) const {
  std::ostringstream os;
  os << tile_rows << "x" << tile_columns(t, acc_bits) << "k" << k_unroll;
  if (n_block) os << "n" << n_block;
  if (pack_b) os << "p";
  if (parallel) os << "t";
  if (k_group > 1) os << "g" << k_group;
  if (m_block) os << "m" << m_block;
  if (k_block) os << "b" << k_block;
  if (specialize_tails) os << "s";
  return os.str();
}

bool CpuMatmulParams::operator==(const CpuMatmulParams& o) const {
  return generator_params() == o.generator_params();
}

void to_json(nlohmann::json& j, const CpuMatmulParams& p) {
  j = nlohmann::json{{"template", "cpu_matmul"},  {"tile_rows", p.tile_rows},
                     {"tile_vectors", p.tile_vectors}, {"vector_width", p.vector_width},
                     {"k_unroll", p.k_unroll},     {"n_block", p.n_block},
                     {"pack_b", p.pack_b},         {"parallel", p.parallel},
                     {"k_group", p.k_group},       {"m_block", p.m_block},
                     {"k_block", p.k_block},
                     {"specialize_tails", p.specialize_tails}};
}

void from_json(const nlohmann::json& j, CpuMatmulParams& p) {
  if (!j.is_object()) invalid("schedule", "cpu_matmul parameters must be a JSON object, got ", j.dump());
  p = CpuMatmulParams{};
  for (const auto& [k, v] : j.items()) {
    auto want_int = [&](int& field) {
      if (!v.is_number_integer()) invalid("schedule", "cpu_matmul parameter ", k, "=", v.dump(), " is not an integer");
      field = v.get<int>();
    };
    auto want_bool = [&](bool& field) {
      if (!v.is_boolean()) invalid("schedule", "cpu_matmul parameter ", k, "=", v.dump(), " is not true or false");
      field = v.get<bool>();
    };
    if (k == "template") {
      if (v != "cpu_matmul") invalid("schedule", "template ", v.dump(), " is not cpu_matmul");
    } else if (k == "tile_rows") want_int(p.tile_rows);
    else if (k == "tile_vectors") want_int(p.tile_vectors);
    else if (k == "vector_width") want_int(p.vector_width);
    else if (k == "k_unroll") want_int(p.k_unroll);
    else if (k == "n_block") want_int(p.n_block);
    else if (k == "pack_b") want_bool(p.pack_b);
    else if (k == "parallel") want_bool(p.parallel);
    else if (k == "k_group") want_int(p.k_group);
    else if (k == "m_block") want_int(p.m_block);
    else if (k == "k_block") want_int(p.k_block);
    else if (k == "specialize_tails") want_bool(p.specialize_tails);
    else invalid("schedule", "cpu_matmul has no parameter '", k, "'");
  }
}

CpuMatmulParams default_params(const TargetInfo& t, int acc_bits) {
  CpuMatmulParams p;
  if (p.validate(t, acc_bits)) {
    p.tile_rows = 4;
    p.tile_vectors = 2;
    p.n_block = 0;
  }
  MMTUNE_CHECK(!p.validate(t, acc_bits), "no default cpu_matmul parameters fit " << t.target);
  return p;
}

CpuMatmulParams sample(const CpuMatmulSpace& s, const TargetInfo& t, int acc_bits, bool integer_sum,
                       std::mt19937_64& rng) {
  auto pick = [&](const std::vector<int>& v) {
    return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)];
  };
  for (int attempt = 0; attempt < 10000; ++attempt) {
    CpuMatmulParams p;
    p.tile_rows = pick(s.tile_rows);
    p.tile_vectors = pick(s.tile_vectors);
    p.vector_width = pick(s.vector_width);
    p.k_unroll = pick(s.k_unroll);
    p.n_block = pick(s.n_block);
    // A strip must hold whole tiles: round the drawn block up to the tile width.
    if (p.n_block) {
      const int w = p.tile_columns(t, acc_bits);
      p.n_block = (p.n_block + w - 1) / w * w;
    }
    p.pack_b = pick(s.pack_b) != 0;
    p.parallel = pick(s.parallel) != 0;
    p.k_group = integer_sum ? pick(s.k_group) : 1;
    // A row block holds whole tiles: round the drawn block up to tile_rows.
    p.m_block = pick(s.m_block);
    if (p.m_block) p.m_block = (p.m_block + p.tile_rows - 1) / p.tile_rows * p.tile_rows;
    p.specialize_tails = pick(s.specialize_tails) != 0;
    p.k_block = pick(s.k_block);
    if (!p.validate(t, acc_bits, integer_sum)) return p;
  }
  MMTUNE_CHECK(false, "no valid cpu_matmul parameters in the space for " << t.target);
}

}  // namespace mmtune::schedules
