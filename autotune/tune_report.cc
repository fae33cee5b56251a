// report.html: tables and inline SVG charts from the tuning database.
#include "autotune/tune_report.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "autotune/kernel_key.h"
#include "autotune/kernel_naming.h"
#include "autotune/tune_inputs.h"

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

std::string gops(double rate) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << rate / 1e9;
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
     << (top + h - bottom) / 2 << ")\" text-anchor=\"middle\">best G/s</text>";
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

std::string render_report(const std::vector<Record>& records, const std::string& target) {
  std::vector<const Record*> mine;
  for (const Record& r : records) {
    if (r.target == target) mine.push_back(&r);
  }
  std::map<std::string, int> outcomes, baseline_outcomes;
  int candidates = 0, baselines = 0;
  for (const Record* r : mine) {
    if (is_baseline(*r)) {
      ++baselines;
      ++baseline_outcomes[outcome_name(r->outcome)];
    } else {
      ++candidates;
      ++outcomes[outcome_name(r->outcome)];
    }
  }
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
     << "<title>mmtune autotune report: " << esc(target) << "</title><style>"
     << "body{font:14px/1.4 sans-serif;margin:24px;color:#222}"
     << "table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:3px 8px;"
        "text-align:left}th{background:#f3f3f3}td.n{text-align:right}"
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
  if (baselines > 0) {
    os << " " << baselines << " baseline records:";
    for (const auto& [name, n] : baseline_outcomes) os << " " << esc(name) << " " << n << ";";
    os << " baselines are never winners.";
  }
  os << "</p>\n";

  // Units: identity x bucket.
  std::map<std::pair<std::string, std::string>, std::vector<const Record*>> units;
  for (const Record* r : mine) units[{r->identity, r->bucket}].push_back(r);
  const schedules::TargetInfo info = schedules::target_info(target);

  // Per unit: its winner, the template default's rate and record, the baselines.
  struct UnitView {
    const Record* win = nullptr;
    std::string winner_name = "-";
    const Record* def = nullptr;
    std::vector<const Record*> baselines;   // by name
    const Record* best_baseline = nullptr;  // the fastest passed one
  };
  std::map<std::pair<std::string, std::string>, UnitView> views;
  os << "<h2>Winners</h2><table><tr><th>identity</th><th>bucket</th><th>shape</th>"
        "<th>winner</th><th>G/s</th><th>default G/s</th><th>speed-up</th>"
        "<th>best baseline</th><th>vs best baseline</th><th>candidates</th>"
        "<th>passed</th><th>incorrect</th></tr>\n";
  for (const auto& [unit, all] : units) {
    UnitView& view = views[unit];
    std::vector<const Record*> rs;
    for (const Record* r : all) {
      if (is_baseline(*r)) {
        view.baselines.push_back(r);
        if (r->outcome == Outcome::kPassed && r->rate > 0 &&
            (!view.best_baseline || r->rate > view.best_baseline->rate))
          view.best_baseline = r;
      } else {
        rs.push_back(r);
      }
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
    os << "<tr><td>" << esc(unit.first) << "</td><td>" << esc(unit.second) << "</td><td>"
       << shape.at(0) << "x" << shape.at(1) << "x" << shape.at(2) << "</td><td>" << esc(winner_name)
       << "</td><td class=\"n\">" << (win ? gops(win->rate) : "-") << "</td><td class=\"n\">"
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

  // The winner against the template default and every baseline, per unit.
  bool any_baseline = false;
  for (const auto& [unit, view] : views) any_baseline |= !view.baselines.empty();
  if (any_baseline) {
    os << "<h2>Against the baselines</h2>\n<p>Per identity and bucket, the winner against the "
          "template's default schedule and each baseline measured on the same shape (Halide's "
          "autoschedulers on the same algorithm, through the same gate and timing; other "
          "baselines as their records say). A baseline that failed shows its outcome and why; "
          "winner / baseline above 1 means the winner is faster.</p>\n";
  }
  for (const auto& [unit, view] : views) {
    if (view.baselines.empty()) continue;
    const double win_rate = view.win ? view.win->rate : 0;
    os << "<h3>" << esc(unit.first) << " &mdash; " << esc(unit.second) << "</h3>"
       << "<table class=\"baselines\"><tr><th>kernel</th><th>outcome</th><th>G/s</th>"
          "<th>winner / it</th><th>compile s</th><th>note</th></tr>\n";
    auto row = [&](const std::string& name, const Record* r, const std::string& note) {
      os << "<tr><td>" << esc(name) << "</td><td>" << (r ? esc(outcome_text(*r)) : "-")
         << "</td><td class=\"n\">"
         << (r && r->outcome == Outcome::kPassed && r->rate > 0 ? gops(r->rate) : "-")
         << "</td><td class=\"n\">"
         << (r && r->outcome == Outcome::kPassed ? ratio(win_rate, r->rate) : "-")
         << "</td><td class=\"n\">";
      if (r && r->extra.contains("compile_s") && r->extra["compile_s"].is_number()) {
        os << std::fixed << std::setprecision(1) << r->extra["compile_s"].get<double>();
      } else {
        os << "-";
      }
      os << "</td><td>" << esc(note) << "</td></tr>\n";
    };
    row("winner: " + view.winner_name, view.win, "");
    row("template default", view.def, view.def ? "" : "not in the database");
    for (const Record* b : view.baselines) {
      std::string note;
      if (b->extra.contains("note") && b->extra["note"].is_string())
        note = b->extra["note"].get<std::string>();
      if (bucket_gated(*b))
        note += std::string(note.empty() ? "" : "; ") + "gated on the bucket's shape only";
      row(baseline_name(*b), b, note);
    }
    os << "</table>\n";
  }
  os << "<h2>Convergence</h2>\n<p>Best rate found so far against the number of "
        "candidates tried and against the run's elapsed time, per search strategy.</p>\n";
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
        by_time[strategy].push_back({r->extra.value("elapsed_s", 0.0) - t0, best});
      }
    }
    os << "<div class=\"unit\"><h3>" << esc(unit.first) << " &mdash; " << esc(unit.second)
       << "</h3>" << line_chart(unit.first + " " + unit.second, "candidates", by_count)
       << line_chart(unit.first + " " + unit.second, "seconds", by_time) << "</div>\n";
  }
  os << "</body></html>\n";
  return os.str();
}

}  // namespace mmtune::tune
