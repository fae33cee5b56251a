/* The kernel runner: a program built for a target (ARM64, Hexagon, ... ) that runs the Halide
 * kernels linked into it on request. `mmtune verify` starts it on the target (natively, under
 * qemu, over ssh or adb) and speaks to it over its standard streams; everything else of the gate
 * (inputs, reference, poison, comparison) stays on the host. Portable C99 without a C library:
 * the platform gives only runner_io.h (io_posix.c, targets/hexagon/platform.c).
 *
 * Protocol (little-endian, as every target mmtune builds for):
 *   request  u32 magic 'MMTR', u32 op
 *     op 1 (list):  reply u32 magic, u32 count, then per kernel u32 length, name bytes, u32 args
 *     op 2 (call):  u32 kernel index, u32 argument count, then per argument
 *                     u32 kind: 0 scalar: u32 type code, u32 bits, u64 value (low bytes)
 *                               1 buffer: u32 type code, u32 bits, u32 lanes, u32 dimensions,
 *                                 per dimension i32 min, i32 extent, i32 stride; i64 offset of the
 *                                 lowest element from the buffer's origin (elements, <= 0);
 *                                 u64 bytes of the span, then those bytes
 *                   reply u32 magic, i32 result (0: ran; < 0: refused or failed, see message),
 *                   u32 message length, message bytes, u32 entries (0 when refused, else the
 *                   number of buffer arguments), then per buffer argument in order
 *                   u32 argument index, u32 guard flags (1: a byte before the span changed,
 *                   2: a byte after it), u64 bytes, the bytes (output buffers; 0 for inputs)
 *     op 3 (measure): u32 repetitions (>= 1), then as op 2; the kernel runs that many times in a
 *                   row between two marks (mmtune_io_mark: the count of a qemu instruction counter,
 *                   targets/qemu/insn_count.c) and the platform's clock; the reply is op 2's
 *                   (outputs of the last run) followed by u64 nanoseconds the runs took (0: the
 *                   platform has no clock)
 *     op 0 (quit):  exit 0
 * Every buffer is placed between two guard regions of a fixed pattern, checked after the call. */
#include <stddef.h>
#include <stdint.h>

#include "HalideRuntime.h"
#include "runner_io.h"

/* A GPU kernel leaves its outputs on the device: they are copied back before the reply. Weak, so
 * that runtimes without device support (freestanding Hexagon) link without them. */
#pragma weak halide_copy_to_host
#pragma weak halide_device_free
#pragma weak halide_device_sync

#define MAGIC 0x52544d4du /* "MMTR" */
#define GUARD 256
#define MAX_ARGS 64
#define MAX_DIMS 8

struct mmtune_runner_kernel {
  const char* name;
  int (*argv_fn)(void**);
  const struct halide_filter_metadata_t* (*metadata)(void);
};
/* The kernels linked in: a table the build generates (mmtune verify). */
extern const struct mmtune_runner_kernel mmtune_runner_kernels[];
extern const int mmtune_runner_kernel_count;

static char message[4096];
static size_t message_length;

static void append_message(const char* s) {
  while (*s && message_length + 1 < sizeof message) message[message_length++] = *s++;
  message[message_length] = 0;
}

static void capture_error(void* user_context, const char* msg) {
  (void)user_context;
  append_message(msg);
}

static void fail(const char* why) {
  size_t n = 0;
  while (why[n]) ++n;
  mmtune_io_write_err("kernel_runner: ", 15);
  mmtune_io_write_err(why, n);
  mmtune_io_write_err("\n", 1);
  mmtune_io_exit(2);
}

/* Reads exactly n bytes; returns 0 at a clean end of input before the first byte. */
static int read_exact(void* buf, size_t n, int eof_ok) {
  uint8_t* p = (uint8_t*)buf;
  size_t got = 0;
  while (got < n) {
    long r = mmtune_io_read(p + got, n - got);
    if (r == 0 && got == 0 && eof_ok) return 0;
    if (r <= 0) fail("the request stream ended or failed mid-message");
    got += (size_t)r;
  }
  return 1;
}

static void write_exact(const void* buf, size_t n) {
  const uint8_t* p = (const uint8_t*)buf;
  while (n > 0) {
    long w = mmtune_io_write(p, n);
    if (w <= 0) fail("cannot write the reply");
    p += w;
    n -= (size_t)w;
  }
}

static uint32_t read_u32(void) {
  uint32_t v;
  read_exact(&v, 4, 0);
  return v;
}
static int32_t read_i32(void) {
  int32_t v;
  read_exact(&v, 4, 0);
  return v;
}
static uint64_t read_u64(void) {
  uint64_t v;
  read_exact(&v, 8, 0);
  return v;
}
static void write_u32(uint32_t v) { write_exact(&v, 4); }
static void write_u64(uint64_t v) { write_exact(&v, 8); }

static uint8_t guard_byte(size_t i) { return (uint8_t)(0x5A ^ (i * 0x2F)); }

struct arg {
  uint32_t kind;
  uint64_t scalar;
  halide_buffer_t buffer;
  halide_dimension_t dims[MAX_DIMS];
  uint8_t* block; /* guard, span, guard */
  uint64_t bytes;
};

static void list_kernels(void) {
  int i;
  write_u32(MAGIC);
  write_u32((uint32_t)mmtune_runner_kernel_count);
  for (i = 0; i < mmtune_runner_kernel_count; ++i) {
    const char* name = mmtune_runner_kernels[i].name;
    uint32_t n = 0;
    while (name[n]) ++n;
    write_u32(n);
    write_exact(name, n);
    write_u32((uint32_t)mmtune_runner_kernels[i].metadata()->num_arguments);
  }
}

static void reply_refused(const char* why) {
  uint32_t n = 0;
  while (why[n]) ++n;
  write_u32(MAGIC);
  write_u32((uint32_t)-1);
  write_u32(n);
  write_exact(why, n);
  write_u32(0);
}

/* Discards `bytes` of input (the rest of a refused request). */
static void skip(uint64_t bytes) {
  uint8_t scratch[512];
  while (bytes > 0) {
    size_t n = bytes < sizeof scratch ? (size_t)bytes : sizeof scratch;
    read_exact(scratch, n, 0);
    bytes -= n;
  }
}

/* Runs a request's kernel: once (op 2, repetitions 0) or `repetitions` times between marks (op 3).
 */
static void call_kernel(uint32_t repetitions) {
  static struct arg args[MAX_ARGS];
  void* argv[MAX_ARGS];
  const uint32_t index = read_u32();
  const uint32_t count = read_u32();
  const char* refused = 0;
  const struct halide_filter_metadata_t* md = 0;
  uint32_t i;
  int rc;
  uint64_t start, elapsed = 0;
  if (count > MAX_ARGS) fail("too many arguments");
  if (index >= (uint32_t)mmtune_runner_kernel_count) {
    refused = "no kernel of that index is linked into the runner";
  } else {
    md = mmtune_runner_kernels[index].metadata();
    if ((uint32_t)md->num_arguments != count)
      refused = "the argument count differs from the kernel's";
  }
  for (i = 0; i < count; ++i) {
    struct arg* a = &args[i];
    a->kind = read_u32();
    a->block = 0;
    a->bytes = 0;
    if (a->kind == 0) {
      const uint32_t code = read_u32(), bits = read_u32();
      a->scalar = read_u64();
      if (md && !refused &&
          (md->arguments[i].kind != halide_argument_kind_input_scalar ||
           md->arguments[i].type.code != code || md->arguments[i].type.bits != bits)) {
        refused = "a scalar argument's kind or type differs from the kernel's";
      }
      argv[i] = &a->scalar;
    } else {
      const uint32_t code = read_u32(), bits = read_u32(), lanes = read_u32(), dims = read_u32();
      uint32_t d;
      int64_t offset;
      uint64_t k;
      if (dims > MAX_DIMS) fail("too many buffer dimensions");
      for (d = 0; d < dims; ++d) {
        a->dims[d].min = read_i32();
        a->dims[d].extent = read_i32();
        a->dims[d].stride = read_i32();
        a->dims[d].flags = 0;
      }
      offset = (int64_t)read_u64();
      a->bytes = read_u64();
      if (md && !refused &&
          (md->arguments[i].kind == halide_argument_kind_input_scalar ||
           md->arguments[i].type.code != code || md->arguments[i].type.bits != bits ||
           (uint32_t)md->arguments[i].dimensions != dims)) {
        refused = "a buffer argument's kind, type or dimensions differ from the kernel's";
      }
      if (refused) {
        skip(a->bytes);
        continue;
      }
      a->block = (uint8_t*)mmtune_io_alloc((size_t)a->bytes + 2 * GUARD);
      if (!a->block) fail("out of memory for a buffer");
      for (k = 0; k < GUARD; ++k) {
        a->block[k] = guard_byte(k);
        a->block[GUARD + a->bytes + k] = guard_byte(GUARD + k);
      }
      read_exact(a->block + GUARD, (size_t)a->bytes, 0);
      a->buffer.device = 0;
      a->buffer.device_interface = 0;
      a->buffer.host = a->block + GUARD - offset * (int64_t)((bits + 7) / 8);
      a->buffer.flags = 0;
      a->buffer.type.code = (uint8_t)code;
      a->buffer.type.bits = (uint8_t)bits;
      a->buffer.type.lanes = (uint16_t)lanes;
      a->buffer.dimensions = (int32_t)dims;
      a->buffer.dim = a->dims;
      a->buffer.padding = 0;
      argv[i] = &a->buffer;
    }
  }
  if (refused) {
    reply_refused(refused);
    if (repetitions > 0) write_u64(0);
    for (i = 0; i < count; ++i) {
      if (args[i].block) mmtune_io_free(args[i].block);
    }
    return;
  }
  message_length = 0;
  message[0] = 0;
  if (repetitions == 0) {
    rc = mmtune_runner_kernels[index].argv_fn(argv);
  } else {
    uint32_t r;
    mmtune_io_mark(1);
    start = mmtune_io_clock_ns();
    rc = 0;
    for (r = 0; r < repetitions && rc == 0; ++r) rc = mmtune_runner_kernels[index].argv_fn(argv);
    /* A GPU kernel returns once launched: the clock stops when the device has finished. */
    for (i = 0; i < count && halide_device_sync; ++i) {
      if (args[i].kind != 0 && args[i].buffer.device != 0 && rc == 0)
        rc = halide_device_sync(0, &args[i].buffer);
    }
    elapsed = mmtune_io_clock_ns() - start;
    mmtune_io_mark(2);
  }
  for (i = 0; i < count; ++i) {
    halide_buffer_t* b = &args[i].buffer;
    if (args[i].kind == 0 || b->device == 0) continue;
    if (rc == 0 && halide_copy_to_host) rc = halide_copy_to_host(0, b);
    if (halide_device_free) (void)halide_device_free(0, b);
  }
  write_u32(MAGIC);
  write_u32((uint32_t)rc);
  write_u32((uint32_t)message_length);
  write_exact(message, message_length);
  {
    uint32_t buffers = 0;
    for (i = 0; i < count; ++i) buffers += args[i].kind != 0;
    write_u32(buffers);
  }
  for (i = 0; i < count; ++i) {
    struct arg* a = &args[i];
    uint32_t flags = 0;
    uint64_t k;
    if (a->kind == 0) continue;
    for (k = 0; k < GUARD; ++k) {
      if (a->block[k] != guard_byte(k)) flags |= 1;
      if (a->block[GUARD + a->bytes + k] != guard_byte(GUARD + k)) flags |= 2;
    }
    write_u32(i);
    write_u32(flags);
    if (md->arguments[i].kind == halide_argument_kind_output_buffer) {
      write_u64(a->bytes);
      write_exact(a->block + GUARD, (size_t)a->bytes);
    } else {
      write_u64(0);
    }
    mmtune_io_free(a->block);
  }
  if (repetitions > 0) write_u64(elapsed);
}

int main(int argc, char** argv) {
  (void)argc;
  (void)argv;
  halide_set_error_handler(capture_error);
  for (;;) {
    uint32_t magic, op;
    if (!read_exact(&magic, 4, 1)) return 0;
    if (magic != MAGIC) fail("a request without the protocol's magic number");
    op = read_u32();
    if (op == 0) return 0;
    if (op == 1) {
      list_kernels();
    } else if (op == 2) {
      call_kernel(0);
    } else if (op == 3) {
      const uint32_t repetitions = read_u32();
      if (repetitions == 0) fail("a measure request of 0 repetitions");
      call_kernel(repetitions);
    } else {
      fail("an unknown request");
    }
  }
}
