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

// Seconds since the unit began: the record's own count, or (databases written before it was
// kept) since the strategy's first record in the unit.
double unit_seconds(const Record& r, double first_elapsed) {
  if (r.extra.contains("unit_s")) return r.extra.value("unit_s", 0.0);
  return r.extra.value("elapsed_s", 0.0) - first_elapsed;
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

std::string render_report(const std::vector<Record>& records, const std::string& target) {
  std::vector<const Record*> mine;
  for (const Record& r : records) {
    if (r.target == target) mine.push_back(&r);
  }
  std::map<std::string, int> outcomes;
  for (const Record* r : mine) ++outcomes[outcome_name(r->outcome)];
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
  os << "<p>" << mine.size() << " candidate records:";
  for (const auto& [name, n] : outcomes) os << " " << esc(name) << " " << n << ";";
  os << " every passed candidate matched the reference bit for bit on its gate battery before it "
        "was timed.</p>\n";

  // Units: identity x bucket.
  std::map<std::pair<std::string, std::string>, std::vector<const Record*>> units;
  for (const Record* r : mine) units[{r->identity, r->bucket}].push_back(r);
  const schedules::TargetInfo info = schedules::target_info(target);

  os << "<h2>Winners</h2><table><tr><th>identity</th><th>bucket</th><th>shape</th>"
        "<th>winner</th><th>G/s</th><th>default G/s</th><th>speed-up</th><th>candidates</th>"
        "<th>passed</th><th>incorrect</th></tr>\n";
  for (const auto& [unit, rs] : units) {
    std::vector<Record> copy;
    for (const Record* r : rs) copy.push_back(*r);
    const auto best = best_records(copy);
    const Record* win = best.empty() ? nullptr : best.begin()->second.record;
    double default_rate = 0;
    std::string winner_name = "-";
    try {
      const KernelIdentity id = parse_identity_spec(unit.first);
      const nlohmann::json def = schedules::default_schedule(info, accumulator_of(id));
      for (const Record* r : rs) {
        if (r->schedule == def && r->outcome == Outcome::kPassed &&
            r->extra.value("stage", "") != "final")
          default_rate = r->rate;
      }
      if (win) {
        winner_name = kernel_name(
            id.op, id.params, win->schedule.get<schedules::Schedule>().generator_params(), target);
      }
    } catch (const std::exception&) {
    }
    int passed = 0, incorrect = 0;
    for (const Record* r : rs) {
      passed += r->outcome == Outcome::kPassed;
      incorrect += r->outcome == Outcome::kIncorrect;
    }
    const auto& shape = rs.front()->shape;
    os << "<tr><td>" << esc(unit.first) << "</td><td>" << esc(unit.second) << "</td><td>"
       << shape.at(0) << "x" << shape.at(1) << "x" << shape.at(2) << "</td><td>" << esc(winner_name)
       << "</td><td class=\"n\">" << (win ? gops(win->rate) : "-") << "</td><td class=\"n\">"
       << (default_rate > 0 ? gops(default_rate) : "-") << "</td><td class=\"n\">";
    if (win && default_rate > 0) {
      os << std::fixed << std::setprecision(2) << win->rate / default_rate << "x";
    } else {
      os << "-";
    }
    os << "</td><td class=\"n\">" << rs.size() << "</td><td class=\"n\">" << passed
       << "</td><td class=\"n\">" << incorrect << "</td></tr>\n";
  }
  os << "</table>\n<h2>Convergence</h2>\n<p>Best rate found so far against the number of "
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
      if (r->extra.value("stage", "") == "final") continue;
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
      os << esc(strategy) << ": best " << gops(c.best) << " G/s; 95 % of it after "
         << c.candidates_to_95 << " of " << c.candidates << " candidates, " << std::fixed
         << std::setprecision(0) << c.seconds_to_95 << " s. ";
    }
    os << "</p></div>\n";
  }
  os << "</body></html>\n";
  return os.str();
}

}  // namespace mmtune::tune
