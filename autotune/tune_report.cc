// report.html: tables and inline SVG charts from the tuning database.
#include "autotune/tune_report.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "autotune/kernel_key.h"
#include "autotune/kernel_naming.h"
#include "autotune/tune_inputs.h"
#include "autotune/tune_machine.h"
#include "autotune/tune_remote.h"
#include "reference/registry.h"

namespace mmtune::tune {
namespace {

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// The unit of the report's rates: G/s (this machine's or a device's clock), or operations per
// instruction (the qemu proxy cost of a cross target). Set once per report by render_report.
struct RateUnit {
  double scale = 1e9;
  const char* label = "G/s";
  int digits = 2;
};
RateUnit g_unit;

std::string gops(double rate) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(g_unit.digits) << rate / g_unit.scale;
  return os.str();
}

struct Point {
  double x, y;
};

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"};

// A line chart of best-so-far curves, one per series, linear axes from 0.
std::string line_chart(const std::string& title, const std::string& x_label,
                       const std::map<std::string, std::vector<Point>>& series) {
  const double w = 420, h = 240, left = 56, right = 12, top = 26, bottom = 40;
  double max_x = 1e-9, max_y = 1e-9;
  for (const auto& [name, pts] : series) {
    for (const Point& p : pts) {
      max_x = std::max(max_x, p.x);
      max_y = std::max(max_y, p.y);
    }
  }
  auto sx = [&](double x) { return left + (w - left - right) * x / max_x; };
  auto sy = [&](double y) { return h - bottom - (h - top - bottom) * y / max_y; };
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  os << "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\""
     << h << "\" viewBox=\"0 0 " << w << " " << h << "\" role=\"img\">"
     << "<title>" << esc(title) << "</title>"
     << "<text x=\"" << left << "\" y=\"16\" class=\"t\">" << esc(title) << "</text>"
     << "<line x1=\"" << left << "\" y1=\"" << h - bottom << "\" x2=\"" << w - right << "\" y2=\""
     << h - bottom << "\" stroke=\"#444\"/>"
     << "<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\"" << h - bottom
     << "\" stroke=\"#444\"/>";
  for (int i = 0; i <= 4; ++i) {
    const double y = max_y * i / 4, x = max_x * i / 4;
    os << "<text x=\"" << left - 4 << "\" y=\"" << sy(y) + 4 << "\" text-anchor=\"end\">"
       << std::setprecision(1) << y / 1e9 << "</text>"
       << "<text x=\"" << sx(x) << "\" y=\"" << h - bottom + 14 << "\" text-anchor=\"middle\">"
       << std::setprecision(0) << x << "</text>" << std::setprecision(1);
  }
  os << "<text x=\"" << (left + w - right) / 2 << "\" y=\"" << h - 6 << "\" text-anchor=\"middle\">"
     << esc(x_label) << "</text>"
     << "<text x=\"12\" y=\"" << (top + h - bottom) / 2 << "\" transform=\"rotate(-90 12 "
     << (top + h - bottom) / 2 << ")\" text-anchor=\"middle\">best " << g_unit.label << "</text>";
  int ci = 0;
  for (const auto& [name, pts] : series) {
    const char* color = kColors[ci % 5];
    os << "<polyline class=\"curve\" fill=\"none\" stroke=\"" << color
       << "\" stroke-width=\"2\" points=\"";
    for (const Point& p : pts) os << sx(p.x) << "," << sy(p.y) << " ";
    os << "\"/>";
    os << "<text x=\"" << w - right - 4 << "\" y=\"" << top + 14 * (ci + 1)
       << "\" text-anchor=\"end\" fill=\"" << color << "\">" << esc(name) << "</text>";
    ++ci;
  }
  os << "</svg>";
  return os.str();
}

// Seconds since the unit began: the record's own count, or (databases written before it was
// kept) since the strategy's first record in the unit.
double unit_seconds(const Record& r, double first_elapsed) {
  if (r.extra.contains("unit_s")) return r.extra.value("unit_s", 0.0);
  return r.extra.value("elapsed_s", 0.0) - first_elapsed;
}

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

// An axis label of a log scale: 0.01, 0.5, 20, 3000.
std::string sig(double v) {
  std::ostringstream os;
  if (v >= 1) {
    os << std::fixed << std::setprecision(0) << v;
  } else {
    os << std::setprecision(3) << v;
  }
  return os.str();
}

struct RooflinePoint {
  double intensity, rate;  // FLOP/byte, FLOP/s
  std::string identity, label;
  bool baseline;
};

// The roofline, log-log: the roof min(peak, intensity x bandwidth) of each measured thread count
// (the run's solid, the others dashed) and every point, winners filled, baselines hollow, one
// color per identity.
std::string roofline_chart(const nlohmann::json& machine, const std::vector<RooflinePoint>& points,
                           const std::vector<std::string>& identities) {
  const int run_threads = machine.value("run_threads", 1);
  const double w = 800, h = 440, left = 70, right = 270, top = 30, bottom = 46;
  struct Roof {
    int threads;
    double peak, bandwidth;
  };
  std::vector<Roof> roofs;
  for (const nlohmann::json& e : machine["peak"]) {
    const int t = e.value("threads", 0);
    const double peak = machine_figure(machine, "peak", "flops", t);
    const double bw = machine_figure(machine, "bandwidth", "bytes_per_s", t);
    if (peak > 0 && bw > 0) roofs.push_back({t, peak, bw});
  }
  double x_lo = 1e300, x_hi = 0, y_lo = 1e300, y_hi = 0;
  for (const Roof& r : roofs) {
    const double ridge = r.peak / r.bandwidth;
    x_lo = std::min(x_lo, ridge / 16);
    x_hi = std::max(x_hi, ridge * 16);
    y_hi = std::max(y_hi, r.peak * 2);
  }
  for (const RooflinePoint& p : points) {
    x_lo = std::min(x_lo, p.intensity / 2);
    x_hi = std::max(x_hi, p.intensity * 2);
    y_lo = std::min(y_lo, p.rate / 2);
    y_hi = std::max(y_hi, p.rate * 2);
  }
  for (const Roof& r : roofs) y_lo = std::min(y_lo, r.bandwidth * x_lo);
  // Whole decades.
  x_lo = std::pow(10, std::floor(std::log10(x_lo)));
  x_hi = std::pow(10, std::ceil(std::log10(x_hi)));
  y_lo = std::pow(10, std::floor(std::log10(y_lo)));
  y_hi = std::pow(10, std::ceil(std::log10(y_hi)));
  const double plot_w = w - left - right, plot_h = h - top - bottom;
  auto sx = [&](double x) {
    return left +
           plot_w * (std::log10(x) - std::log10(x_lo)) / (std::log10(x_hi) - std::log10(x_lo));
  };
  auto sy = [&](double y) {
    return top + plot_h -
           plot_h * (std::log10(y) - std::log10(y_lo)) / (std::log10(y_hi) - std::log10(y_lo));
  };
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  os << "<svg id=\"roofline\" class=\"chart roofline\" xmlns=\"http://www.w3.org/2000/svg\" "
        "width=\""
     << w << "\" height=\"" << h << "\" viewBox=\"0 0 " << w << " " << h << "\" role=\"img\">"
     << "<title>Roofline: attainable FLOP/s = min(peak, intensity x bandwidth)</title>"
     << "<text x=\"" << left << "\" y=\"18\" class=\"t\">Roofline (" << run_threads
     << " thread(s) per kernel; measured peak and STREAM bandwidth)</text>";
  // Decade grid and labels.
  for (double x = x_lo; x <= x_hi * 1.001; x *= 10) {
    os << "<line x1=\"" << sx(x) << "\" y1=\"" << top << "\" x2=\"" << sx(x) << "\" y2=\""
       << top + plot_h << "\" stroke=\"#e4e4e4\"/><text x=\"" << sx(x) << "\" y=\""
       << top + plot_h + 14 << "\" text-anchor=\"middle\">" << sig(x) << "</text>";
  }
  for (double y = y_lo; y <= y_hi * 1.001; y *= 10) {
    os << "<line x1=\"" << left << "\" y1=\"" << sy(y) << "\" x2=\"" << left + plot_w << "\" y2=\""
       << sy(y) << "\" stroke=\"#e4e4e4\"/><text x=\"" << left - 4 << "\" y=\"" << sy(y) + 4
       << "\" text-anchor=\"end\">" << sig(y / 1e9) << "</text>";
  }
  os << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << plot_w << "\" height=\""
     << plot_h << "\" fill=\"none\" stroke=\"#444\"/>"
     << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << h - 8
     << "\" text-anchor=\"middle\">arithmetic intensity, FLOP per byte of operands and "
        "output</text>"
     << "<text x=\"14\" y=\"" << top + plot_h / 2 << "\" transform=\"rotate(-90 14 "
     << top + plot_h / 2 << ")\" text-anchor=\"middle\">GFLOP/s (G op/s)</text>";
  // The roofs: the kernel's thread count solid, the others dashed.
  for (const Roof& r : roofs) {
    const bool mine = r.threads == run_threads;
    const double ridge = r.peak / r.bandwidth;
    const double x0 = std::max(x_lo, y_lo / r.bandwidth);
    os << "<path class=\"roof\" d=\"M" << sx(x0) << "," << sy(r.bandwidth * x0) << " L" << sx(ridge)
       << "," << sy(r.peak) << " L" << sx(x_hi) << "," << sy(r.peak) << "\" fill=\"none\" stroke=\""
       << (mine ? "#222" : "#999") << "\" stroke-width=\"" << (mine ? 2.5 : 1.5) << "\""
       << (mine ? "" : " stroke-dasharray=\"6 4\"") << ">"
       << "<title>" << r.threads << " thread(s): peak " << fixed(r.peak / 1e9, 1)
       << " GFLOP/s, bandwidth " << fixed(r.bandwidth / 1e9, 1) << " GB/s, ridge "
       << fixed(ridge, 2) << " FLOP/byte</title></path>";
  }
  // The points.
  auto color_of = [&](const std::string& identity) {
    const auto it = std::find(identities.begin(), identities.end(), identity);
    return kColors[static_cast<std::size_t>(it - identities.begin()) % 5];
  };
  for (const RooflinePoint& p : points) {
    const char* color = color_of(p.identity);
    const double x = sx(p.intensity), y = sy(p.rate);
    if (p.baseline) {
      os << "<rect class=\"baseline\" x=\"" << x - 4.5 << "\" y=\"" << y - 4.5
         << "\" width=\"9\" height=\"9\" fill=\"white\" stroke=\"" << color
         << "\" stroke-width=\"2\">";
    } else {
      os << "<circle class=\"winner\" cx=\"" << x << "\" cy=\"" << y << "\" r=\"5\" fill=\""
         << color << "\" stroke=\"white\">";
    }
    os << "<title>" << esc(p.label) << ": " << fixed(p.rate / 1e9, 2) << " G/s at "
       << fixed(p.intensity, 2) << " FLOP/byte</title>" << (p.baseline ? "</rect>" : "</circle>");
  }
  // Legend: identities, then the markers.
  const double lx = left + plot_w + 12;
  double ly = top + 10;
  for (const std::string& id : identities) {
    os << "<circle cx=\"" << lx + 5 << "\" cy=\"" << ly - 4 << "\" r=\"5\" fill=\"" << color_of(id)
       << "\"/><text x=\"" << lx + 14 << "\" y=\"" << ly << "\">" << esc(id) << "</text>";
    ly += 16;
  }
  os << "<circle cx=\"" << lx + 5 << "\" cy=\"" << ly + 8 << "\" r=\"5\" fill=\"#777\"/><text x=\""
     << lx + 14 << "\" y=\"" << ly + 12 << "\">mmtune winner</text>"
     << "<rect x=\"" << lx + 0.5 << "\" y=\"" << ly + 20 << "\" width=\"9\" height=\"9\""
     << " fill=\"white\" stroke=\"#777\" stroke-width=\"2\"/><text x=\"" << lx + 14 << "\" y=\""
     << ly + 29 << "\">baseline</text>";
  // The roofs' legend: thread count, peak, bandwidth.
  ly += 52;
  for (const Roof& r : roofs) {
    const bool mine = r.threads == run_threads;
    os << "<line x1=\"" << lx << "\" y1=\"" << ly - 4 << "\" x2=\"" << lx + 10 << "\" y2=\""
       << ly - 4 << "\" stroke=\"" << (mine ? "#222" : "#999") << "\" stroke-width=\""
       << (mine ? 2.5 : 1.5) << "\"" << (mine ? "" : " stroke-dasharray=\"3 2\"") << "/><text x=\""
       << lx + 14 << "\" y=\"" << ly << "\">" << r.threads
       << " thread(s): " << fixed(r.peak / 1e9, 1) << " GFLOP/s, " << fixed(r.bandwidth / 1e9, 1)
       << " GB/s</text>";
    ly += 16;
  }
  os << "</svg>";
  return os.str();
}

// Bytes per unit of each term of a call's size (1, M, N, K, MN, MK, KN) for one identity.
struct ByteTerms {
  double c1 = 0, m = 0, n = 0, k = 0, mn = 0, mk = 0, kn = 0;
  bool ok = false;
};

ByteTerms byte_terms(const KernelIdentity& id) {
  // A call at M=2, N=3, K=5: every element count (1, 2, 3, 5, 6, 10, 15) names its dimensions.
  ByteTerms t;
  try {
    std::mt19937_64 rng(1);
    const OpCall call = make_call(id, 2, 3, 5, DataKind::kRandom, rng);
    std::vector<const Tensor*> tensors;
    for (const auto& [name, tensor] : call.inputs) tensors.push_back(&tensor);
    const Tensor out = run_reference(call.op, call.inputs, call.attrs);
    tensors.push_back(&out);
    for (const Tensor* x : tensors) {
      const double size = static_cast<double>(dtype_size(x->dtype));
      switch (x->numel()) {
        case 1:
          t.c1 += size;
          break;
        case 2:
          t.m += size;
          break;
        case 3:
          t.n += size;
          break;
        case 5:
          t.k += size;
          break;
        case 6:
          t.mn += size;
          break;
        case 10:
          t.mk += size;
          break;
        case 15:
          t.kn += size;
          break;
        default:
          return t;  // not a 2-D product's operand: unknown
      }
    }
    t.ok = true;
  } catch (const std::exception&) {
  }
  return t;
}

std::string ratio(double num, double den) {
  if (!(num > 0) || !(den > 0)) return "-";
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << num / den << "x";
  return os.str();
}

// A baseline gated on its bucket's own shape only (--baseline-gate bucket).
bool bucket_gated(const Record& r) {
  return r.gate.is_object() && r.gate.value("scope", "") == "bucket";
}

// What became of a record, in a sentence: "passed", or the outcome and why (an incorrect one: the
// gate's first mismatch).
std::string outcome_text(const Record& r) {
  std::string text = outcome_name(r.outcome);
  if (r.outcome == Outcome::kPassed) return text;
  const nlohmann::json m =
      r.gate.is_object() ? r.gate.value("first_mismatch", nlohmann::json()) : nlohmann::json();
  if (m.is_object()) {
    std::ostringstream os;
    os << ": case " << m.value("case", "?");
    if (m.contains("shape")) os << " " << m["shape"].dump();
    if (m.contains("data")) os << " (" << m.value("data", "?") << " data)";
    if (m.contains("index")) {
      os << ", element " << m["index"].dump() << " is " << m.value("actual", "?")
         << " where the reference has " << m.value("expected", "?");
    } else if (m.contains("violation")) {
      os << ", " << m.value("violation", "?");
    }
    return text + os.str();
  }
  if (!r.detail.empty()) text += ": " + r.detail;
  return text;
}

}  // namespace

std::map<std::string, Convergence> convergence(const std::vector<const Record*>& unit_records) {
  std::map<std::string, std::vector<const Record*>> by_strategy;
  for (const Record* r : unit_records) {
    if (r->extra.value("stage", "").empty())
      by_strategy[r->extra.value("strategy", "?")].push_back(r);
  }
  std::map<std::string, Convergence> out;
  for (auto& [strategy, list] : by_strategy) {
    std::stable_sort(list.begin(), list.end(), [](const Record* a, const Record* b) {
      return a->extra.value("elapsed_s", 0.0) < b->extra.value("elapsed_s", 0.0);
    });
    const double t0 = list.front()->extra.value("elapsed_s", 0.0);
    Convergence c;
    c.candidates = static_cast<int>(list.size());
    for (const Record* r : list) {
      if (r->outcome == Outcome::kPassed) c.best = std::max(c.best, r->rate);
    }
    int n = 0;
    for (const Record* r : list) {
      ++n;
      if (r->outcome == Outcome::kPassed && r->rate >= 0.95 * c.best) {
        c.candidates_to_95 = n;
        c.seconds_to_95 = unit_seconds(*r, t0);
        break;
      }
    }
    out[strategy] = c;
  }
  return out;
}

double call_bytes(const KernelIdentity& id, int64_t m, int64_t n, int64_t k) {
  const ByteTerms t = byte_terms(id);
  if (!t.ok) return 0;
  const double dm = double(m), dn = double(n), dk = double(k);
  return t.c1 + t.m * dm + t.n * dn + t.k * dk + t.mn * dm * dn + t.mk * dm * dk + t.kn * dk * dn;
}

std::string render_report(const std::vector<Record>& records, const std::string& target,
                          const nlohmann::json& machine) {
  std::vector<const Record*> mine, baselines;
  for (const Record& r : records) {
    if (r.target != target) continue;
    (is_baseline(r) ? baselines : mine).push_back(&r);
  }
  // A cross target tuned by the qemu proxy: its rates are operations per instruction.
  std::string cost;
  for (const Record* r : mine) {
    if (!cost_kind(*r).empty()) cost = cost_kind(*r);
  }
  g_unit = cost == kCostQemuInstructions ? RateUnit{1.0, "op/instr", 3} : RateUnit{};
  std::map<std::string, int> outcomes, baseline_outcomes;
  for (const Record* r : mine) ++outcomes[outcome_name(r->outcome)];
  for (const Record* r : baselines) ++baseline_outcomes[outcome_name(r->outcome)];
  const std::size_t candidates = mine.size();
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
     << "<title>mmtune autotune report: " << esc(target) << "</title><style>"
     << "body{font:14px/1.4 sans-serif;margin:24px;color:#222}"
     << "table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:3px 8px;"
        "text-align:left}th{background:#f3f3f3}td.n{text-align:right}td.note{font-size:12px;"
        "color:#555;max-width:520px}table{font-size:13px}td.b{white-space:nowrap}"
        "td.k{overflow-wrap:anywhere;max-width:300px}"
     << "svg.chart{border:1px solid #ddd;margin:4px 8px 4px 0}svg text{font:11px sans-serif}"
        "svg text.t{font-weight:bold}.unit{margin-bottom:28px}"
     << "</style></head><body>\n";
  os << "<h1>mmtune autotune: " << esc(target) << "</h1>\n";
  if (!mine.empty()) {
    const nlohmann::json& p = mine.front()->provenance;
    os << "<p>" << esc(p.value("cpu", "?")) << ", " << p.value("cores", 0) << " cores; Halide "
       << esc(p.value("halide", "?")) << "; mmtune " << esc(p.value("mmtune", "?")) << "; "
       << esc(p.value("date", "")) << "; " << p.value("threads", 1) << " thread(s) per kernel.</p>";
  }
  os << "<p>" << candidates << " candidate records:";
  for (const auto& [name, n] : outcomes) os << " " << esc(name) << " " << n << ";";
  os << " every passed candidate matched the reference bit for bit on its gate battery before it "
        "was timed.";
  if (!baselines.empty()) {
    os << " " << baselines.size() << " baseline records:";
    for (const auto& [name, n] : baseline_outcomes) os << " " << esc(name) << " " << n << ";";
    os << " baselines are never winners.";
  }
  os << "</p>\n";
  if (!cost.empty()) {
    os << "<p><b>Cost: " << esc(cost) << "</b>: " << esc(cost_description(cost))
       << ". The kernels were built with the target's toolchain and gated bit for bit on the "
          "target (under qemu, or through the runner command).</p>\n";
  }

  // The machine.
  const bool measured = machine.is_object() && machine.contains("peak");
  const int run_threads = measured ? machine.value("run_threads", 1) : 1;
  os << "<h2>This machine</h2>\n";
  if (measured) {
    os << "<table class=\"machine\"><tr><th>CPU</th><td>" << esc(machine.value("cpu", "?")) << ", "
       << machine.value("cores", 0) << " cores</td></tr><tr><th>measured</th><td>"
       << esc(machine.value("time", "?")) << ", at the start of the run, in "
       << fixed(machine.value("seconds", 0.0), 2) << " s</td></tr><tr><th>vector</th><td>"
       << esc(machine.value("vector", "?")) << " (" << machine.value("vector_bits", 0)
       << " bits)</td></tr><tr><th>peak float32 FLOP/s</th><td>";
    for (const nlohmann::json& e : machine["peak"]) {
      os << e.value("threads", 0) << " thread(s): " << fixed(e.value("flops", 0.0) / 1e9, 1)
         << " GFLOP/s<br>";
    }
    os << "</td></tr><tr><th>memory bandwidth (STREAM triad)</th><td>";
    for (const nlohmann::json& e : machine.value("bandwidth", nlohmann::json::array())) {
      os << e.value("threads", 0) << " thread(s): " << fixed(e.value("bytes_per_s", 0.0) / 1e9, 1)
         << " GB/s<br>";
    }
    const double peak = machine_figure(machine, "peak", "flops", run_threads);
    const double bw = machine_figure(machine, "bandwidth", "bytes_per_s", run_threads);
    os << "</td></tr><tr><th>ridge point (" << run_threads << " thread(s))</th><td>"
       << (bw > 0 ? fixed(peak / bw, 2) : "-")
       << " FLOP/byte: kernels below it are bound by memory, above it by arithmetic</td></tr>"
       << "<tr><th>method</th><td class=\"note\">" << esc(machine.value("method", ""))
       << "</td></tr></table>\n";
  } else {
    os << "<p>No machine measurement for this report (the tuner writes one to machine.json at the "
          "start of every run that writes a report): no roofline.</p>\n";
  }

  // Units: identity x bucket (candidates); baselines by unit.
  std::map<std::pair<std::string, std::string>, std::vector<const Record*>> units, unit_baselines;
  for (const Record* r : mine) units[{r->identity, r->bucket}].push_back(r);
  for (const Record* r : baselines) unit_baselines[{r->identity, r->bucket}].push_back(r);
  const schedules::TargetInfo info = schedules::target_info(target);
  std::map<std::pair<std::string, std::string>, const Record*> winners;

  // Per unit: its winner, the template default's rate and record, the baselines.
  struct UnitView {
    const Record* win = nullptr;
    std::string winner_name = "-";
    const Record* def = nullptr;
    std::vector<const Record*> baselines;   // by name
    const Record* best_baseline = nullptr;  // the fastest passed one
  };
  std::map<std::pair<std::string, std::string>, UnitView> views;
  os << "<h2>Winners</h2><table "
        "class=\"winners\"><tr><th>identity</th><th>bucket</th><th>shape</th>"
        "<th>winner</th><th>"
     << g_unit.label << "</th><th>default " << g_unit.label
     << "</th><th>speed-up</th>"
        "<th>best baseline</th><th>vs best baseline</th><th>candidates</th>"
        "<th>passed</th><th>incorrect</th></tr>\n";
  for (const auto& [unit, all] : units) {
    UnitView& view = views[unit];
    const std::vector<const Record*>& rs = all;  // candidates (baselines are apart)
    if (auto b = unit_baselines.find(unit); b != unit_baselines.end()) view.baselines = b->second;
    for (const Record* r : view.baselines) {
      if (r->outcome == Outcome::kPassed && r->rate > 0 &&
          (!view.best_baseline || r->rate > view.best_baseline->rate))
        view.best_baseline = r;
    }
    std::stable_sort(
        view.baselines.begin(), view.baselines.end(),
        [](const Record* a, const Record* b) { return baseline_name(*a) < baseline_name(*b); });
    std::vector<Record> copy;
    for (const Record* r : rs) copy.push_back(*r);
    const auto best = best_records(copy);
    // The winner among the database's records (`copy` ends with this iteration).
    const Record* win =
        best.empty() ? nullptr
                     : rs[static_cast<std::size_t>(best.begin()->second.record - copy.data())];
    view.win = win;
    winners[unit] = win;
    double default_rate = 0;
    std::string winner_name = "-";
    try {
      const KernelIdentity id = parse_identity_spec(unit.first);
      const nlohmann::json def = schedules::default_schedule(info, accumulator_of(id));
      for (const Record* r : rs) {
        if (r->schedule == def && r->extra.value("stage", "") != "final") {
          view.def = r;
          if (r->outcome == Outcome::kPassed) default_rate = r->rate;
        }
      }
      if (win) {
        winner_name = kernel_name(
            id.op, id.params, win->schedule.get<schedules::Schedule>().generator_params(), target);
      }
    } catch (const std::exception&) {
    }
    view.winner_name = winner_name;
    int passed = 0, incorrect = 0;
    for (const Record* r : rs) {
      passed += r->outcome == Outcome::kPassed;
      incorrect += r->outcome == Outcome::kIncorrect;
    }
    const auto& shape = all.front()->shape;
    os << "<tr><td>" << esc(unit.first) << "</td><td class=\"b\">" << esc(unit.second)
       << "</td><td>" << shape.at(0) << "x" << shape.at(1) << "x" << shape.at(2)
       << "</td><td class=\"k\">" << esc(winner_name) << "</td><td class=\"n\">"
       << (win ? gops(win->rate) : "-") << "</td><td class=\"n\">"
       << (default_rate > 0 ? gops(default_rate) : "-") << "</td><td class=\"n\">";
    if (win && default_rate > 0) {
      os << std::fixed << std::setprecision(2) << win->rate / default_rate << "x";
    } else {
      os << "-";
    }
    os << "</td><td>"
       << (view.best_baseline
               ? esc(baseline_name(*view.best_baseline)) + " " + gops(view.best_baseline->rate) +
                     (bucket_gated(*view.best_baseline) ? " (bucket gate)" : "")
               : std::string("-"))
       << "</td><td class=\"n\">"
       << (win && view.best_baseline ? ratio(win->rate, view.best_baseline->rate) : "-")
       << "</td><td class=\"n\">" << rs.size() << "</td><td class=\"n\">" << passed
       << "</td><td class=\"n\">" << incorrect << "</td></tr>\n";
  }
  os << "</table>\n";

  // The roofline.
  std::map<std::string, double> intensity_of;  // "identity|M|N|K" -> FLOP/byte
  auto intensity = [&](const Record& r) {
    const std::string key = r.identity + "|" + std::to_string(r.shape.at(0)) + "|" +
                            std::to_string(r.shape.at(1)) + "|" + std::to_string(r.shape.at(2));
    auto it = intensity_of.find(key);
    if (it != intensity_of.end()) return it->second;
    double v = 0;
    try {
      const double bytes =
          call_bytes(parse_identity_spec(r.identity), r.shape.at(0), r.shape.at(1), r.shape.at(2));
      if (bytes > 0) {
        v = 2.0 * double(r.shape.at(0)) * double(r.shape.at(1)) * double(r.shape.at(2)) / bytes;
      }
    } catch (const std::exception&) {
    }
    return intensity_of[key] = v;
  };
  if (measured) {
    std::vector<RooflinePoint> points;
    std::vector<std::string> identities;
    auto add_identity = [&](const std::string& id) {
      if (std::find(identities.begin(), identities.end(), id) == identities.end())
        identities.push_back(id);
    };
    for (const auto& [unit, win] : winners) {
      if (!win || win->rate <= 0 || intensity(*win) <= 0) continue;
      add_identity(unit.first);
      points.push_back({intensity(*win), win->rate, unit.first,
                        "mmtune winner, " + unit.first + " " + unit.second, false});
    }
    for (const Record* b : baselines) {
      if (b->rate <= 0 || intensity(*b) <= 0) continue;
      add_identity(b->identity);
      points.push_back({intensity(*b), b->rate, b->identity,
                        b->schedule.value("baseline", "?") + ", " + b->identity + " " + b->bucket,
                        true});
    }
    os << "<h2>Roofline</h2>\n<p>Attainable FLOP/s = min(peak, arithmetic intensity &times; memory "
          "bandwidth), from this machine's figures above; each winner (filled) and baseline "
          "(hollow) at its intensity, 2MNK over the bytes of its operands and output (each read "
          "or written once), and its measured rate. Integer kernels count 2MNK integer "
          "operations against the same float32 roof (their own, with 8-bit dot products, is "
          "higher). A point above the bandwidth roof read its operands from a cache (at small "
          "shapes even the rotated input copies fit in the last-level cache) or streamed reads "
          "faster than the triad's mix of reads and writes.</p>\n"
       << roofline_chart(machine, points, identities) << "\n";
  }

  // The baselines against the winners.
  os << "<h2>Baselines</h2>\n";
  if (baselines.empty()) {
    os << "<p>No baseline records.</p>\n";
  } else {
    os << "<p>What other implementations reach on each bucket's shape, timed with the candidates' "
          "protocol on the same data; mmtune &divide; baseline above 1 means the winner is "
          "faster.</p><table class=\"baselines\"><tr><th>identity</th><th>bucket</th>"
          "<th>shape</th><th>baseline</th><th>outcome</th><th>G/s</th><th>winner G/s</th>"
          "<th>mmtune &divide; baseline</th><th>compile s</th><th>note</th></tr>\n";
    for (const auto& [unit, bs] : unit_baselines) {
      const auto w = winners.find(unit);
      const Record* win = w == winners.end() ? nullptr : w->second;
      for (const Record* b : bs) {
        std::string name = b->schedule.is_object() ? b->schedule.value("baseline", "") : "";
        if (name.empty()) name = b->schedule.dump();
        os << "<tr><td>" << esc(unit.first) << "</td><td class=\"b\">" << esc(unit.second)
           << "</td><td>" << b->shape.at(0) << "x" << b->shape.at(1) << "x" << b->shape.at(2)
           << "</td><td>" << esc(name) << "</td><td>" << esc(outcome_text(*b))
           << "</td><td class=\"n\">" << (b->rate > 0 ? gops(b->rate) : "-")
           << "</td><td class=\"n\">" << (win ? gops(win->rate) : "-") << "</td><td class=\"n\">"
           << (win && b->rate > 0 ? fixed(win->rate / b->rate, 2) + "x" : "-")
           << "</td><td class=\"n\">"
           << (b->extra.contains("compile_s") && b->extra["compile_s"].is_number()
                   ? fixed(b->extra["compile_s"].get<double>(), 1)
                   : std::string("-"))
           << "</td><td class=\"note\">" << esc(b->extra.value("note", ""))
           << (bucket_gated(*b) ? " gated on the bucket's shape only" : "")
           << (b->detail.empty() ? "" : " " + esc(b->detail)) << "</td></tr>\n";
      }
    }
    os << "</table>\n";
  }

  os << "<h2>Convergence</h2>\n<p>Best rate found so far against the number of "
        "candidates tried and against the seconds since the unit began, per search strategy; "
        "under each unit, when each strategy first reached 95 % of its own final best.</p>\n";
  {
    // How many units each strategy took to within 95 % of its best in 5 minutes.
    std::map<std::string, std::pair<int, int>> within;  // strategy -> (units in 5 min, units)
    for (const auto& [unit, rs] : units) {
      for (const auto& [strategy, c] : convergence(rs)) {
        auto& [fast, all] = within[strategy];
        ++all;
        fast += c.candidates_to_95 > 0 && c.seconds_to_95 <= 300;
      }
    }
    os << "<p>";
    for (const auto& [strategy, w] : within) {
      os << esc(strategy) << ": 95 % of its final best within 5 minutes in " << w.first << " of "
         << w.second << " units. ";
    }
    os << "</p>\n";
  }
  for (const auto& [unit, rs] : units) {
    std::map<std::string, std::vector<const Record*>> by_strategy;
    for (const Record* r : rs) {
      if (r->extra.value("stage", "") == "final" || is_baseline(*r)) continue;
      by_strategy[r->extra.value("strategy", "?")].push_back(r);
    }
    std::map<std::string, std::vector<Point>> by_count, by_time;
    for (auto& [strategy, list] : by_strategy) {
      std::stable_sort(list.begin(), list.end(), [](const Record* a, const Record* b) {
        return a->extra.value("elapsed_s", 0.0) < b->extra.value("elapsed_s", 0.0);
      });
      const double t0 = list.empty() ? 0 : list.front()->extra.value("elapsed_s", 0.0);
      double best = 0;
      int n = 0;
      for (const Record* r : list) {
        best = std::max(best, r->outcome == Outcome::kPassed ? r->rate : 0.0);
        ++n;
        by_count[strategy].push_back({double(n), best});
        by_time[strategy].push_back({unit_seconds(*r, t0), best});
      }
    }
    os << "<div class=\"unit\"><h3>" << esc(unit.first) << " &mdash; " << esc(unit.second)
       << "</h3>" << line_chart(unit.first + " " + unit.second, "candidates", by_count)
       << line_chart(unit.first + " " + unit.second, "seconds", by_time) << "<p>";
    for (const auto& [strategy, c] : convergence(rs)) {
      os << esc(strategy) << ": best " << gops(c.best) << " " << g_unit.label
         << "; 95 % of it after " << c.candidates_to_95 << " of " << c.candidates << " candidates, "
         << std::fixed << std::setprecision(0) << c.seconds_to_95 << " s. ";
    }
    os << "</p></div>\n";
  }
  os << "</body></html>\n";
  return os.str();
}

}  // namespace mmtune::tune
