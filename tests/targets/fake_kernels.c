/* Hand-written stand-ins for Halide kernels (entry points <name>_argv and <name>_metadata, the two
 * the kernel runner calls), and the two runtime functions it uses, so that the runner's protocol
 * is tested apart from any generated code: a kernel that computes, one that writes past its
 * output, one that reports an error, one that crashes. */
#include <stddef.h>
#include <stdint.h>

#include "HalideRuntime.h"

static halide_error_handler_t handler;

halide_error_handler_t halide_set_error_handler(halide_error_handler_t h) {
  halide_error_handler_t old = handler;
  handler = h;
  return old;
}

/* out(x) = in(x) + delta for x over out's extent, uint8, one dimension. */
static const struct halide_filter_argument_t args[] = {
    {"in", halide_argument_kind_input_buffer, 1, {halide_type_uint, 8, 1}, 0, 0, 0, 0, 0},
    {"delta", halide_argument_kind_input_scalar, 0, {halide_type_int, 32, 1}, 0, 0, 0, 0, 0},
    {"out", halide_argument_kind_output_buffer, 1, {halide_type_uint, 8, 1}, 0, 0, 0, 0, 0},
};
static const struct halide_filter_metadata_t metadata = {1, 3, args, "host", "fake"};

static int add(void** argv, int past_end) {
  const halide_buffer_t* in = (const halide_buffer_t*)argv[0];
  const int32_t delta = *(const int32_t*)argv[1];
  halide_buffer_t* out = (halide_buffer_t*)argv[2];
  const int32_t extent = out->dim[0].extent + past_end;
  int32_t x;
  for (x = 0; x < extent; ++x) {
    const int32_t at = out->dim[0].min + x - in->dim[0].min;
    const uint8_t v = at < in->dim[0].extent ? in->host[at * in->dim[0].stride] : 0;
    out->host[x * out->dim[0].stride] = (uint8_t)(v + delta);
  }
  return 0;
}

int fake_add_argv(void** argv) { return add(argv, 0); }
int fake_past_end_argv(void** argv) { return add(argv, 1); }
int fake_error_argv(void** argv) {
  (void)argv;
  if (handler) handler(NULL, "a planted failure");
  return -7;
}
int fake_crash_argv(void** argv) {
  (void)argv;
  *(volatile int*)(uintptr_t)8 = 1;
  return 0;
}
const struct halide_filter_metadata_t* fake_metadata(void) { return &metadata; }

struct mmtune_runner_kernel {
  const char* name;
  int (*argv_fn)(void**);
  const struct halide_filter_metadata_t* (*metadata)(void);
};
const struct mmtune_runner_kernel mmtune_runner_kernels[] = {
    {"add", fake_add_argv, fake_metadata},
    {"past_end", fake_past_end_argv, fake_metadata},
    {"error", fake_error_argv, fake_metadata},
    {"crash", fake_crash_argv, fake_metadata},
};
const int mmtune_runner_kernel_count = 4;
