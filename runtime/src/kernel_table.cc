// Kernel selection over the generated table.
#include "runtime/src/kernel_table.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "reference/error.h"

namespace mmtune::runtime {
namespace {

bool in_range(int64_t x, int64_t lo, int64_t hi) { return x >= lo && (hi < 0 || x <= hi); }

// |log2(x / bound)| to the nearer end of [lo, hi]; sizes below 1 count as 1.
double range_distance(int64_t x, int64_t lo, int64_t hi) {
  const double v = std::max<int64_t>(x, 1);
  if (x < lo) return std::log2(static_cast<double>(std::max<int64_t>(lo, 1)) / v);
  if (hi >= 0 && x > hi) return std::log2(v / static_cast<double>(std::max<int64_t>(hi, 1)));
  return 0.0;
}

void append_range(std::ostringstream& os, const char* dim, int64_t lo, int64_t hi) {
  if (lo == 0 && hi < 0) return;
  if (os.tellp() > 0) os << " ";
  os << dim << " " << (lo > 0 ? std::to_string(lo) : "") << ".."
     << (hi >= 0 ? std::to_string(hi) : "");
}

// "M=64 N=64 K=64 on 2 threads"
std::string call_text(int64_t m, int64_t n, int64_t k, int64_t threads) {
  return "M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k) + " on " +
         std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

}  // namespace

bool Bucket::contains(int64_t m, int64_t n, int64_t k, int64_t threads) const {
  return in_range(m, m_min, m_max) && in_range(n, n_min, n_max) && in_range(k, k_min, k_max) &&
         in_range(threads, threads_min, threads_max);
}

double Bucket::distance(int64_t m, int64_t n, int64_t k, int64_t threads) const {
  return range_distance(m, m_min, m_max) + range_distance(n, n_min, n_max) +
         range_distance(k, k_min, k_max) + range_distance(threads, threads_min, threads_max);
}

std::string Bucket::to_string() const {
  std::ostringstream os;
  append_range(os, "m", m_min, m_max);
  append_range(os, "n", n_min, n_max);
  append_range(os, "k", k_min, k_max);
  append_range(os, "threads", threads_min, threads_max);
  const std::string s = os.str();
  return s.empty() ? "any" : s;
}

std::map<std::string, std::string> parse_params(const char* text) {
  std::map<std::string, std::string> params;
  std::istringstream in(text ? text : "");
  for (std::string item; in >> item;) {
    const auto eq = item.find('=');
    MMTUNE_CHECK(eq != std::string::npos && eq > 0, "kernel table parameter '" << item << "'");
    params[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return params;
}

std::vector<IdentityGroup> group_by_identity(const KernelTable& table) {
  std::vector<IdentityGroup> groups;
  for (std::size_t i = 0; i < table.size; ++i) {
    const KernelEntry& e = table.entries[i];
    std::map<std::string, std::string> identity = parse_params(e.identity);
    IdentityGroup* group = nullptr;
    for (IdentityGroup& g : groups) {
      if (g.op == e.op && g.identity == identity) group = &g;
    }
    if (!group) group = &groups.emplace_back(IdentityGroup{e.op, std::move(identity), {}, {}});
    group->entries.push_back(&e);
    group->schedules.push_back(parse_params(e.schedule));
  }
  return groups;
}

const IdentityGroup* find_group(const std::vector<IdentityGroup>& groups, const std::string& op,
                                const std::map<std::string, std::string>& identity) {
  for (const IdentityGroup& g : groups) {
    if (g.op == op && g.identity == identity) return &g;
  }
  return nullptr;
}

Selection select_in_group(const IdentityGroup& group, int64_t m, int64_t n, int64_t k,
                          int64_t threads, bool explain) {
  Selection s;
  // The nearest bucket whose thread range holds `threads` (a kernel tuned for another thread count
  // serves only where no bucket is for this one), else the nearest of all.
  const KernelEntry* nearest = nullptr;
  bool nearest_threads_in = false;
  double best = std::numeric_limits<double>::infinity();
  for (const KernelEntry* e : group.entries) {
    if (e->bucket.contains(m, n, k, threads)) {
      s.kernel = e;
      if (!explain) return s;
      s.reason = "bucket " + e->bucket.to_string() + " contains " + call_text(m, n, k, threads);
      return s;
    }
    const bool threads_in = in_range(threads, e->bucket.threads_min, e->bucket.threads_max);
    if (nearest_threads_in && !threads_in) continue;
    const double d = e->bucket.distance(m, n, k, threads);
    if (d < best || (threads_in && !nearest_threads_in)) {
      best = d;
      nearest = e;
      nearest_threads_in = threads_in;
    }
  }
  s.kernel = nearest;
  if (!explain) return s;
  s.reason = "no bucket contains " + call_text(m, n, k, threads) + "; nearest bucket " +
             nearest->bucket.to_string();
  return s;
}

Selection select_kernel(const KernelTable& table, const std::string& op,
                        const std::map<std::string, std::string>& identity, int64_t m, int64_t n,
                        int64_t k, int64_t threads) {
  const std::vector<IdentityGroup> groups = group_by_identity(table);
  if (const IdentityGroup* g = find_group(groups, op, identity))
    return select_in_group(*g, m, n, k, threads);
  return {nullptr, no_kernel_reason(op, table.target, identity)};
}

std::string no_kernel_reason(const std::string& op, const std::string& targets,
                             const std::map<std::string, std::string>& identity) {
  std::ostringstream why;
  why << "no " << op << " kernel in this build (" << targets << ") computes";
  for (const auto& [key, value] : identity) why << " " << key << "=" << value;
  return why.str();
}

}  // namespace mmtune::runtime
