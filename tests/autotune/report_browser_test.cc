// report.html opened in headless Chromium (Debian's chromium, installed by scripts/bootstrap) as a
// user opens it: the rendered DOM has every chart (the roofline among them) and every table, the
// page logs nothing to the console, loads no file but itself and requests nothing from the
// network, and a screenshot of it is a non-blank PNG of the window's size. A planted page (a
// script error, a missing image, a remote image) shows that each of these checks can fail.
#include <gtest/gtest.h>
#include <png.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "autotune/kernel_key.h"
#include "autotune/tune_inputs.h"
#include "autotune/tune_report.h"
#include "autotune/tuning_db.h"
#include "schedules/schedule.h"
#include "tests/support/cli_runner.h"

namespace mmtune::testing {
namespace {

using tune::Outcome;
using tune::Record;

constexpr int kWidth = 1280, kHeight = 1600;

// Chromium: $MMTUNE_CHROMIUM, else `chromium` on the PATH; empty when there is none.
std::string chromium_path() {
  if (const char* v = std::getenv("MMTUNE_CHROMIUM"); v && *v) return v;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin");
  for (std::string d; std::getline(dirs, d, ':');) {
    std::string p = d + "/chromium";
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

struct BrowserRun {
  int exit_code = -1;
  std::string dom, log, net_log;
  double seconds = 0;
};

class ReportInBrowser : public CliFixture {
 protected:
  // Opens `html` in headless Chromium with a profile, HOME and caches in this test's folder: the
  // DOM after rendering, the browser's log (console messages, file loads) and its network log; a
  // screenshot of the window to shot.png.
  BrowserRun open(const std::string& html) {
    const std::string chromium = chromium_path();
    EXPECT_FALSE(chromium.empty())
        << "Debian's chromium is not installed (no `chromium` on the PATH and no "
           "$MMTUNE_CHROMIUM): run scripts/bootstrap, which installs it";
    BrowserRun r;
    if (chromium.empty()) return r;
    const std::string home = path("home");
    const std::string cmd =
        "HOME='" + home + "' XDG_CONFIG_HOME='" + home + "/.config' XDG_CACHE_HOME='" + home +
        "/.cache' timeout 120 '" + chromium +
        "' --headless=new --no-sandbox --disable-gpu --no-first-run"
        " --disable-background-networking --user-data-dir='" +
        path("profile") + "' --enable-logging=stderr --v=0 --vmodule=file_url_loader_factory=1" +
        " --log-net-log='" + path("net.json") + "' --window-size=" + std::to_string(kWidth) + "," +
        std::to_string(kHeight) + " --screenshot='" + path("shot.png") + "' --dump-dom 'file://" +
        html + "'";
    const auto t0 = std::chrono::steady_clock::now();
    const CliResult c = sh(cmd);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.exit_code = c.exit_code;
    r.dom = c.out;
    r.log = c.err;
    r.net_log = slurp(path("net.json"));
    return r;
  }
};

// What went wrong in the page: console messages (the report has no script, so any message is an
// error: an uncaught exception, a failed load, a CSP violation), files loaded besides the page
// itself, and network requests the page made (the browser's own requests have no origin).
std::vector<std::string> page_errors(const BrowserRun& r, const std::string& page_url) {
  std::vector<std::string> errors;
  std::istringstream lines(r.log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(":CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos) {
      errors.push_back("console: " + line);
    }
    const std::string load = "FileURLLoader::Start: ";
    if (const auto at = line.find(load); at != std::string::npos) {
      const std::string url = line.substr(at + load.size());
      if (url != page_url) errors.push_back("file load: " + url);
    }
  }
  // Every request's initiator: "not an origin" for the browser's own, the page's origin otherwise.
  const std::string key = "\"initiator\":\"";
  for (std::size_t at = 0; (at = r.net_log.find(key, at)) != std::string::npos;) {
    at += key.size();
    const std::string initiator = r.net_log.substr(at, r.net_log.find('"', at) - at);
    if (initiator == "not an origin") continue;
    const std::size_t url_at = r.net_log.rfind("\"url\":\"", at);
    const std::string url =
        url_at == std::string::npos
            ? "?"
            : r.net_log.substr(url_at + 7, r.net_log.find('"', url_at + 7) - url_at - 7);
    errors.push_back("network request by the page (initiator " + initiator + "): " + url);
  }
  return errors;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = 0; (p = text.find(what, p)) != std::string::npos; p += what.size()) ++n;
  return n;
}

struct Png {
  int width = 0, height = 0;
  std::vector<uint8_t> rgba;
};

// Decodes a PNG file (libpng's simplified API); empty on failure, with `why` saying so.
Png read_png(const std::string& file, std::string& why) {
  Png out;
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, file.c_str())) {
    why = image.message;
    return out;
  }
  image.format = PNG_FORMAT_RGBA;
  std::vector<uint8_t> pixels(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr)) {
    why = image.message;
    png_image_free(&image);
    return out;
  }
  out.width = static_cast<int>(image.width);
  out.height = static_cast<int>(image.height);
  out.rgba = std::move(pixels);
  return out;
}

// A small tuning database as the tuner writes it: two identities x two buckets, each with the
// template's default, a faster candidate, a wrong one, a finalist; BLAS baselines (an int8 one
// wrong on some sums) and a baseline of another kind; the machine's figures.
std::vector<Record> sample_records(const std::string& target) {
  const schedules::TargetInfo info = schedules::target_info(target);
  std::vector<Record> rs;
  struct Unit {
    const char* identity;
    const char* bucket;
    std::vector<int64_t> shape;
    double rate;  // the default's
  };
  const Unit units[] = {
      {"Gemm:float32:contract=fma", "m1.n513-4096.k513-4096", {1, 1024, 1024}, 4e9},
      {"Gemm:float32:contract=fma", "m65-256.n513-4096.k513-1024", {128, 1024, 1024}, 30e9},
      {"QLinearMatMul:uint8,int8,uint8", "m1.n513-4096.k513-4096", {1, 1024, 1024}, 6e9},
      {"QLinearMatMul:uint8,int8,uint8", "m65-256.n513-4096.k513-1024", {128, 1024, 1024}, 60e9},
  };
  for (const Unit& u : units) {
    const KernelIdentity id = tune::parse_identity_spec(u.identity);
    const nlohmann::json def = schedules::default_schedule(info, accumulator_of(id));
    auto add = [&](nlohmann::json schedule, Outcome o, double rate, double t,
                   const std::string& stage = "") {
      Record r;
      r.identity = u.identity;
      r.bucket = u.bucket;
      r.target = target;
      r.schedule = std::move(schedule);
      r.shape = u.shape;
      r.outcome = o;
      r.rate = rate;
      r.samples_s = {1e-4, 1.01e-4, 0.99e-4};
      r.provenance = {{"cpu", "Test CPU"}, {"cores", 2}, {"halide", "21.0.0"}, {"threads", 1}};
      r.extra["strategy"] = "evolutionary";
      r.extra["elapsed_s"] = t;
      if (!stage.empty()) r.extra["stage"] = stage;
      rs.push_back(r);
      return &rs.back();
    };
    nlohmann::json faster = def, wrong = def;
    faster["tile_rows"] = 2;
    wrong["tile_rows"] = 3;
    add(def, Outcome::kPassed, u.rate, 1);
    add(faster, Outcome::kPassed, u.rate * 1.4, 2);
    add(wrong, Outcome::kIncorrect, 0, 3);
    add(faster, Outcome::kPassed, u.rate * 1.35, 4, "final");
    const bool gemm = std::string(u.identity).rfind("Gemm", 0) == 0;
    if (gemm) {
      add({{"baseline", "openblas"}}, Outcome::kPassed, u.rate * 1.6, 0, "baseline")
          ->extra["note"] = "OpenBLAS 0.3.21; not bit-exact: not checked";
      add({{"baseline", "onednn"}}, Outcome::kPassed, u.rate * 1.2, 0, "baseline")->extra["note"] =
          "oneDNN 2.6.3; not bit-exact: not checked";
      // Another kind of baseline (a Halide autoscheduler's), rendered by its name.
      add({{"baseline", "adams2019"}}, Outcome::kPassed, u.rate * 0.9, 0, "baseline");
    } else {
      Record* b = add({{"baseline", "onednn"}}, Outcome::kIncorrect, u.rate * 2, 0, "baseline");
      b->gate = {{"mismatches", 37}, {"outputs", 1024}};
      b->extra["note"] = "oneDNN 2.6.3; the int32 sums only; 37 of 1024 sums differ";
    }
  }
  return rs;
}

nlohmann::json sample_machine() {
  return {{"cpu", "Test CPU"},
          {"cores", 2},
          {"time", "2025-01-01T00:00:00Z"},
          {"seconds", 1.2},
          {"vector", "avx2+fma"},
          {"vector_bits", 256},
          {"peak", {{{"threads", 1}, {"flops", 96e9}}, {{"threads", 2}, {"flops", 190e9}}}},
          {"bandwidth",
           {{{"threads", 1}, {"bytes_per_s", 18e9}}, {{"threads", 2}, {"bytes_per_s", 24e9}}}},
          {"run_threads", 1},
          {"method", "test figures"}};
}

TEST_F(ReportInBrowser, RendersEveryChartAndTableWithoutErrors) {
  const std::string target = "x86-64-linux-avx2-fma";
  const std::string html = path("report.html");
  {
    std::ofstream f(html);
    f << tune::render_report(sample_records(target), target, sample_machine());
  }
  const BrowserRun r = open(html);
  ASSERT_EQ(r.exit_code, 0) << r.log;
  std::cout << "[ chromium ] rendered the report in " << r.seconds << " s\n";
  // The rendered DOM: 4 units x 2 convergence charts, and the roofline with one point per winner
  // (4) and per baseline (2 x 3 Gemm, 2 x 1 QLinearMatMul); the machine, winners and baselines
  // tables, every baseline a row.
  EXPECT_EQ(r.dom.rfind("<!DOCTYPE html>", 0), 0u) << r.dom.substr(0, 200);
  EXPECT_EQ(count(r.dom, "<svg"), 4u * 2 + 1) << r.dom;
  const std::size_t roof = r.dom.find("<svg id=\"roofline\"");
  ASSERT_NE(roof, std::string::npos) << r.dom;
  const std::string roofline = r.dom.substr(roof, r.dom.find("</svg>", roof) - roof);
  EXPECT_EQ(count(roofline, "class=\"winner\""), 4u);
  EXPECT_EQ(count(roofline, "class=\"baseline\""), 8u);
  EXPECT_EQ(count(roofline, "class=\"roof\""), 2u);  // 1 and 2 threads
  EXPECT_EQ(count(r.dom, "<table"), 3u);
  EXPECT_NE(r.dom.find("<table class=\"machine\">"), std::string::npos);
  EXPECT_NE(r.dom.find("96.0 GFLOP/s"), std::string::npos);
  EXPECT_NE(r.dom.find("18.0 GB/s"), std::string::npos);
  const std::size_t table = r.dom.find("<table class=\"baselines\">");
  ASSERT_NE(table, std::string::npos);
  const std::string baselines = r.dom.substr(table, r.dom.find("</table>", table) - table);
  EXPECT_EQ(count(baselines, "<tr>"), 1u + 8u);
  for (const char* name : {">openblas<", ">onednn<", ">adams2019<", ">incorrect<"}) {
    EXPECT_NE(baselines.find(name), std::string::npos) << name;
  }
  EXPECT_EQ(r.dom.find("<script"), std::string::npos);
  for (const std::string& e : page_errors(r, "file://" + html)) ADD_FAILURE() << e;
  // The screenshot: the window's size, not blank (text, table rules and chart colors).
  std::string why;
  const Png png = read_png(path("shot.png"), why);
  ASSERT_FALSE(png.rgba.empty()) << "no readable screenshot: " << why;
  EXPECT_EQ(png.width, kWidth);
  EXPECT_EQ(png.height, kHeight);
  std::size_t ink = 0;
  std::set<uint32_t> colors;
  for (std::size_t i = 0; i + 3 < png.rgba.size(); i += 4) {
    const uint32_t c = png.rgba[i] | png.rgba[i + 1] << 8 | png.rgba[i + 2] << 16;
    if (c != 0xffffff) ++ink;
    if (colors.size() < 1000) colors.insert(c);
  }
  const double share = double(ink) / double(png.width * png.height);
  EXPECT_GT(share, 0.02) << "the screenshot is almost blank";
  EXPECT_LT(share, 0.9) << "the screenshot is almost all ink";
  EXPECT_GT(colors.size(), 20u) << "the screenshot has hardly any colors";
}

// The checks above can fail: a page with a script error, a missing local image and a remote image
// gets all three reported.
TEST_F(ReportInBrowser, ChecksCatchScriptErrorsAndStrayLoads) {
  const std::string html = path("planted.html");
  {
    std::ofstream f(html);
    f << "<!DOCTYPE html><html><body><h1>planted</h1><img src=\"missing.png\">"
         "<img src=\"http://planted.invalid/x.png\"><script>undefined_function();</script>"
         "</body></html>\n";
  }
  const BrowserRun r = open(html);
  ASSERT_EQ(r.exit_code, 0) << r.log;
  const std::vector<std::string> errors = page_errors(r, "file://" + html);
  std::string all;
  for (const std::string& e : errors) all += e + "\n";
  EXPECT_NE(all.find("Uncaught ReferenceError"), std::string::npos) << all << r.log;
  EXPECT_NE(all.find("file load: file://" + path("missing.png")), std::string::npos) << all;
  EXPECT_NE(all.find("http://planted.invalid/x.png"), std::string::npos) << all;
}

}  // namespace
}  // namespace mmtune::testing
