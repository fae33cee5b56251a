// The kernel runner's protocol (targets/runner/kernel_runner.c and autotune/remote_runner.cc) on
// hand-written kernels (fake_kernels.c) built natively: results come back, a write past a buffer,
// a kernel's error, a refused call and a runner that dies are each reported, naming the kernel.
#include "autotune/remote_runner.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "autotune/cross_build.h"
#include "autotune/process.h"
#include "reference/error.h"

namespace mmtune {
namespace {

namespace fs = std::filesystem;

std::string source_dir() {
  const char* env = std::getenv("MMTUNE_SOURCE_DIR");
  return env != nullptr ? env : MMTUNE_SOURCE_DIR_DEFAULT;
}

// This process's scratch folder (runners, logs, counts), removed when the process exits.
fs::path scratch_dir() {
  struct Scratch {
    fs::path dir = fs::temp_directory_path() / ("mmtune_fake_runner_" + std::to_string(::getpid()));
    ~Scratch() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  };
  static const Scratch scratch;
  fs::create_directories(scratch.dir);
  return scratch.dir;
}

// The runner linked with the fake kernels by `compiler` (a C compiler and its flags) into `name`.
std::string build_fake_runner(std::vector<std::string> compiler, const std::string& name) {
  const fs::path dir = scratch_dir();
  const std::string src = source_dir();
  std::string out = (dir / name).string();
  const std::string halide_include = std::string("-I") + MMTUNE_HALIDE_INCLUDE_DIR;
  compiler.insert(compiler.end(),
                  {"-O1", "-std=gnu11", "-I" + src + "/targets/runner", halide_include,
                   src + "/targets/runner/kernel_runner.c", src + "/targets/runner/io_posix.c",
                   src + "/tests/targets/fake_kernels.c", "-o", out});
  const int rc = run_logged(compiler, (dir / (name + ".log")).string());
  EXPECT_EQ(rc, 0) << log_tail((dir / (name + ".log")).string(), 20);
  return out;
}

// The runner linked with the fake kernels, built once.
const std::string& fake_runner() {
  static const std::string exe = build_fake_runner({"/usr/bin/cc"}, "runner");
  return exe;
}

KernelKey key_of(const std::string& name) {
  KernelKey k;
  k.identity.op = "Fake";
  k.identity.generator = "fake_" + name;
  return k;
}

std::map<std::string, std::string> functions() {
  std::map<std::string, std::string> f;
  for (const char* name : {"add", "past_end", "error", "crash", "missing"})
    f[key_of(name).to_string()] = name;
  return f;
}

struct Buffers {
  std::vector<uint8_t> in = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<uint8_t> out = std::vector<uint8_t>(8, 0xEE);
  halide_dimension_t in_dim{0, 8, 1, 0}, out_dim{0, 8, 1, 0};
  halide_buffer_t in_buf{}, out_buf{};
  Buffers() {
    in_buf.host = in.data();
    in_buf.type = halide_type_of<uint8_t>();
    in_buf.dimensions = 1;
    in_buf.dim = &in_dim;
    out_buf = in_buf;
    out_buf.host = out.data();
    out_buf.dim = &out_dim;
  }
  std::vector<KernelArg> args(int32_t delta) {
    return {KernelArg::of(&in_buf), KernelArg::of(delta), KernelArg::of(&out_buf)};
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(RemoteRunner, ListsItsKernelsAndReturnsTheOutputs) {
  RemoteRunner r("{exe} {args}", fake_runner(), functions(), fake_runner() + ".stderr");
  EXPECT_EQ(r.kernels(), (std::vector<std::string>{"add", "past_end", "error", "crash"}));
  Buffers b;
  r.call(key_of("add"), b.args(10));
  EXPECT_EQ(b.out, (std::vector<uint8_t>{11, 12, 13, 14, 15, 16, 17, 18}));
  EXPECT_EQ(b.in, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8}));  // inputs are not sent back
  // A strided output with a non-zero origin: only its elements travel, and land in place.
  std::vector<uint8_t> wide(9, 0);
  halide_dimension_t dim{2, 5, 2, 0};
  b.out_buf.host = wide.data();
  b.out_buf.dim = &dim;
  b.in_dim = {2, 8, 1, 0};
  r.call(key_of("add"), b.args(1));
  EXPECT_EQ(wide, (std::vector<uint8_t>{2, 0, 3, 0, 4, 0, 5, 0, 6}));
  EXPECT_EQ(r.calls(), 2);
}

TEST(RemoteRunner, AWriteOutsideABufferIsCaught) {
  RemoteRunner r("{exe} {args}", fake_runner(), functions(), fake_runner() + ".stderr");
  Buffers b;
  const std::string why = error_of([&] { r.call(key_of("past_end"), b.args(1)); });
  EXPECT_NE(why.find("past_end"), std::string::npos) << why;
  EXPECT_NE(why.find("argument 2: the kernel wrote past the end of the buffer"), std::string::npos)
      << why;
  // The runner goes on serving calls.
  r.call(key_of("add"), b.args(0));
  EXPECT_EQ(b.out, b.in);
}

TEST(RemoteRunner, AKernelsErrorAndARefusedCallAreReported) {
  RemoteRunner r("{exe} {args}", fake_runner(), functions(), fake_runner() + ".stderr");
  Buffers b;
  std::string why = error_of([&] { r.call(key_of("error"), b.args(1)); });
  EXPECT_NE(why.find("failed on the target (code -7): a planted failure"), std::string::npos)
      << why;
  // A scalar where the kernel has a buffer: refused before the kernel runs.
  why = error_of([&] {
    r.call(key_of("add"),
           {KernelArg::of(int32_t{1}), KernelArg::of(int32_t{1}), KernelArg::of(&b.out_buf)});
  });
  EXPECT_NE(why.find("refused the call of add"), std::string::npos) << why;
  EXPECT_NE(why.find("differs from the kernel's"), std::string::npos) << why;
  why = error_of([&] { r.call(key_of("missing"), b.args(1)); });
  EXPECT_NE(why.find("has no function missing"), std::string::npos) << why;
  why = error_of([&] { r.call(key_of("other"), b.args(1)); });
  EXPECT_NE(why.find("was not built with"), std::string::npos) << why;
  r.call(key_of("add"), b.args(2));
  EXPECT_EQ(b.out[0], 3);
}

TEST(RemoteRunner, ARunnerThatDiesIsReportedWithItsStatus) {
  RemoteRunner r("{exe} {args}", fake_runner(), functions(), fake_runner() + ".stderr");
  Buffers b;
  const std::string why = error_of([&] { r.call(key_of("crash"), b.args(1)); });
  EXPECT_NE(why.find("ended its replies early"), std::string::npos) << why;
  EXPECT_NE(why.find("killed by signal 11"), std::string::npos) << why;
}

TEST(RemoteRunner, MeasuredCallsRepeatTheKernelAndReportTheTargetsClock) {
  RemoteRunner r("{exe} {args}", fake_runner(), functions(), fake_runner() + ".stderr");
  Buffers b;
  r.set_repetitions(200);
  r.call(key_of("add"), b.args(3));
  EXPECT_EQ(b.out, (std::vector<uint8_t>{4, 5, 6, 7, 8, 9, 10, 11}));  // the last run's output
  EXPECT_EQ(r.measured_calls(), 1);
  EXPECT_GT(r.measured_ns(), 0u);
  // A refused measured call leaves the stream in step: the next call is answered.
  const std::string why = error_of([&] {
    r.call(key_of("add"),
           {KernelArg::of(int32_t{1}), KernelArg::of(int32_t{1}), KernelArg::of(&b.out_buf)});
  });
  EXPECT_NE(why.find("refused the call of add"), std::string::npos) << why;
  r.set_repetitions(0);
  r.reset_measured();
  r.call(key_of("add"), b.args(1));
  EXPECT_EQ(b.out[0], 2);
  EXPECT_EQ(r.measured_calls(), 0);
}

// The proxy cost: the qemu plugin counts the guest instructions between the runner's marks, the
// same count for the same call, more for more repetitions, nothing for unmeasured calls.
TEST(RemoteRunner, TheQemuInstructionCounterCountsTheMeasuredRunsRepeatably) {
  if (verify::find_program("aarch64-linux-gnu-gcc").empty() ||
      verify::find_program("qemu-aarch64").empty())
    GTEST_SKIP()
        << "aarch64-linux-gnu-gcc or qemu-aarch64 missing (scripts/bootstrap installs them)";
  const std::string exe =
      build_fake_runner({verify::find_program("aarch64-linux-gnu-gcc"), "-static"}, "runner_arm64");
  const fs::path dir = scratch_dir();
  const std::string plugin = verify::counting_plugin(dir.string());
  const std::string counts = (dir / "counts.txt").string();
  fs::remove(counts);
  RemoteRunner r("qemu-aarch64 -cpu max -plugin " + plugin + ",out=" + counts + " {exe} {args}",
                 exe, functions(), exe + ".stderr");
  Buffers b;
  r.call(key_of("add"), b.args(1));  // not measured: no count
  for (int reps : {1, 1, 5}) {
    r.set_repetitions(reps);
    r.call(key_of("add"), b.args(reps));
    EXPECT_EQ(b.out[7], 8 + reps);
  }
  std::ifstream in(counts);
  std::vector<uint64_t> n;
  for (uint64_t c = 0; in >> c;) n.push_back(c);
  ASSERT_EQ(n.size(), 3u);
  EXPECT_GT(n[0], 8u);  // at least one instruction per element
  EXPECT_EQ(n[0], n[1]);
  // Four more runs of the kernel over 8 bytes: more instructions, and the same per run.
  EXPECT_GT(n[2], n[0]);
  EXPECT_EQ((n[2] - n[0]) % 4, 0u);
}

TEST(RemoteRunner, ACommandWithoutItsProgramIsRefused) {
  EXPECT_NE(error_of([] {
              (void)runner_command_line("qemu-aarch64 -cpu max", "x");
            }).find("has no {exe}"),
            std::string::npos);
  EXPECT_EQ(runner_command_line("ssh b {exe} {args}", "/tmp/it's"), "ssh b '/tmp/it'\\''s' ");
  const std::string why = error_of([] {
    RemoteRunner r("/nonexistent/emulator {exe}", fake_runner(), functions(),
                   fake_runner() + ".stderr2");
  });
  EXPECT_NE(why.find("exited with status 127"), std::string::npos) << why;
}

}  // namespace
}  // namespace mmtune
