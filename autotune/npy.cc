// NumPy .npy reading and atomic writing (format 1.0/2.0/3.0, see numpy/lib/format.py).
#include "autotune/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

#include "autotune/atomic_file.h"

namespace mmtune {

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "mmtune's Tensor holds little-endian bytes in host order: a little-endian host is required"
#endif

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;
constexpr std::size_t kArrayAlign = 64;           // numpy's ARRAY_ALIGN
constexpr std::size_t kGrowthAxisMaxDigits = 21;  // numpy's GROWTH_AXIS_MAX_DIGITS
constexpr const char* kSupported =
    "mmtune reads int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, float32, "
    "float64";

// 'text' for messages: printable ASCII kept, everything else as \xNN, cut after `max` characters.
std::string quoted(const std::string& s, std::size_t max = 120) {
  std::string r = "'";
  std::size_t n = 0;
  for (unsigned char c : s) {
    if (n++ == max) {
      r += "...";
      break;
    }
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      r += static_cast<char>(c);
    } else if (c == '\\') {
      r += "\\\\";
    } else if (c == '\n') {
      r += "\\n";
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      r += buf;
    }
  }
  return r + "'";
}

std::string errno_text(int err) { return std::strerror(err); }

// ---------------------------------------------------------------------------------------------
// File reading (POSIX, so that errors are distinguishable from end of file and pipes work too).

class InFile {
 public:
  explicit InFile(const std::string& path) : path_(path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      invalid(path, "is a directory, not a .npy file");
    }
    do {
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    } while (fd_ < 0 && errno == EINTR);
    if (fd_ < 0) invalid(path, "cannot open the .npy file: ", errno_text(errno));
  }
  ~InFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  InFile(const InFile&) = delete;
  InFile& operator=(const InFile&) = delete;

  // Reads up to n bytes into p; returns how many were read (fewer only at end of file).
  std::size_t read(uint8_t* p, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      const std::size_t want = std::min<std::size_t>(n - got, std::size_t{1} << 30);
      const ssize_t r = ::read(fd_, p + got, want);
      if (r < 0) {
        if (errno == EINTR) continue;
        invalid(path_, "cannot read the .npy file: ", errno_text(errno));
      }
      if (r == 0) break;
      got += static_cast<std::size_t>(r);
    }
    return got;
  }

  // Appends up to n bytes to `out`, growing it as data actually arrives (a hostile header cannot
  // make us allocate more than the file holds); returns how many were appended.
  uint64_t read_append(std::vector<uint8_t>& out, uint64_t n) {
    uint64_t got = 0;
    while (got < n) {
      // Geometric growth from 64 KiB: at most twice the bytes actually present are ever allocated.
      const uint64_t step = std::max<uint64_t>(uint64_t{1} << 16, out.size());
      const std::size_t chunk = static_cast<std::size_t>(std::min<uint64_t>(n - got, step));
      const std::size_t old = out.size();
      out.resize(old + chunk);
      const std::size_t r = read(out.data() + old, chunk);
      out.resize(old + r);
      got += r;
      if (r < chunk) break;
    }
    return got;
  }

  // Bytes left until end of file (consumes them).
  uint64_t count_rest() {
    uint64_t n = 0;
    std::vector<uint8_t> buf(1 << 16);
    for (;;) {
      const std::size_t r = read(buf.data(), buf.size());
      n += r;
      if (r < buf.size()) return n;
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// ---------------------------------------------------------------------------------------------
// Header dictionary: a Python literal {'descr': ..., 'fortran_order': ..., 'shape': (...), }.

struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& path, const std::string& text, bool allow_long_suffix)
      : path_(path), s_(text), allow_long_suffix_(allow_long_suffix) {}

  Header parse() {
    Header h;
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip_ws();
    expect('{', "the header must be a Python dict literal starting with '{'");
    skip_ws();
    while (peek() != '}') {
      const std::string key = parse_string("a quoted key");
      skip_ws();
      expect(':', "expected ':' after key " + quoted(key));
      skip_ws();
      if (key == "descr") {
        if (have_descr) fail("key 'descr' appears twice");
        have_descr = true;
        if (peek() == '[') {
          invalid(
              path_,
              "structured dtypes (record arrays, descr is a list of fields) are not supported; ",
              kSupported);
        }
        if (peek() != '\'' && peek() != '"') fail("'descr' must be a quoted dtype string");
        h.descr = parse_string("the 'descr' string");
      } else if (key == "fortran_order") {
        if (have_fortran) fail("key 'fortran_order' appears twice");
        have_fortran = true;
        h.fortran_order = parse_bool();
      } else if (key == "shape") {
        if (have_shape) fail("key 'shape' appears twice");
        have_shape = true;
        h.shape = parse_shape();
      } else {
        fail("unexpected key " + quoted(key) +
             "; a .npy header has exactly the keys 'descr', 'fortran_order' and 'shape'");
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        skip_ws();
      } else if (peek() != '}') {
        fail("expected ',' or '}' after the value of " + quoted(key));
      }
    }
    ++pos_;  // '}'
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected text after the closing '}'");
    if (!have_descr) fail("key 'descr' is missing");
    if (!have_fortran) fail("key 'fortran_order' is missing");
    if (!have_shape) fail("key 'shape' is missing");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    invalid(path_, "malformed .npy header: ", what, " (at header offset ", pos_, " of ", quoted(s_),
            ")");
  }

  int peek() const { return pos_ < s_.size() ? static_cast<unsigned char>(s_[pos_]) : -1; }

  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' ||
                                s_[pos_] == '\r' || s_[pos_] == '\f')) {
      ++pos_;
    }
  }

  void expect(char c, const std::string& what) {
    if (peek() != static_cast<unsigned char>(c)) fail(what);
    ++pos_;
  }

  std::string parse_string(const std::string& what) {
    const int q = peek();
    if (q != '\'' && q != '"') fail("expected " + what);
    ++pos_;
    std::string r;
    for (;;) {
      const int c = peek();
      if (c < 0 || c == '\n') fail("unterminated string");
      ++pos_;
      if (c == q) return r;
      if (c == '\\') fail("escape sequences in strings are not supported");
      r += static_cast<char>(c);
    }
  }

  bool parse_bool() {
    if (s_.compare(pos_, 4, "True") == 0 && !ident_char_at(pos_ + 4)) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0 && !ident_char_at(pos_ + 5)) {
      pos_ += 5;
      return false;
    }
    fail("'fortran_order' must be True or False");
  }

  bool ident_char_at(std::size_t i) const {
    if (i >= s_.size()) return false;
    const char c = s_[i];
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }

  Shape parse_shape() {
    expect('(', "'shape' must be a tuple of integers such as (2, 3), (5,) or ()");
    skip_ws();
    Shape shape;
    bool trailing_comma = false;
    while (peek() != ')') {
      shape.push_back(parse_dim());
      skip_ws();
      trailing_comma = false;
      if (peek() == ',') {
        ++pos_;
        trailing_comma = true;
        skip_ws();
      } else if (peek() != ')') {
        fail("expected ',' or ')' in 'shape'");
      }
    }
    ++pos_;  // ')'
    if (shape.size() == 1 && !trailing_comma) {
      fail("'shape' (" + std::to_string(shape[0]) +
           ") is a parenthesized integer, not a tuple (write (" + std::to_string(shape[0]) + ",))");
    }
    return shape;
  }

  int64_t parse_dim() {
    const std::size_t start = pos_;
    bool negative = false;
    if (peek() == '-' || peek() == '+') {
      negative = peek() == '-';
      ++pos_;
      skip_ws();
    }
    if (peek() < '0' || peek() > '9') fail("expected an integer dimension in 'shape'");
    uint64_t v = 0;
    bool overflow = false;
    while (peek() >= '0' && peek() <= '9') {
      const uint64_t d = static_cast<uint64_t>(peek() - '0');
      if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) overflow = true;
      if (!overflow) v = v * 10 + d;
      ++pos_;
    }
    if (allow_long_suffix_ && peek() == 'L') ++pos_;  // Python 2 long literal (numpy accepts it)
    if (ident_char_at(pos_)) fail("expected an integer dimension in 'shape'");
    const std::string text = s_.substr(start, pos_ - start);
    if (negative && v != 0) {
      invalid(path_, "shape has a negative dimension ", text, "; dimensions must be >= 0");
    }
    if (overflow || v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      invalid(path_, "shape dimension ", text, " is too large (the size overflows 64 bits)");
    }
    return static_cast<int64_t>(v);
  }

  const std::string& path_;
  const std::string& s_;
  bool allow_long_suffix_;
  std::size_t pos_ = 0;
};

// ---------------------------------------------------------------------------------------------
// dtype descriptors.

struct Descr {
  DType dtype;
  bool big_endian;
};

Descr parse_descr(const std::string& path, const std::string& d) {
  std::size_t i = 0;
  char order = '=';
  if (!d.empty() && (d[0] == '<' || d[0] == '>' || d[0] == '=' || d[0] == '|')) order = d[i++];
  const char kind = i < d.size() ? d[i++] : '\0';
  const std::string rest = d.substr(std::min(i, d.size()));
  const std::string q = quoted(d);

  switch (kind) {
    case 'O':
      invalid(path, "dtype ", q, " (object arrays, pickled Python objects) is not supported; ",
              kSupported);
    case 'b':
    case '?':
      invalid(path, "dtype ", q,
              " (bool) is not supported; store booleans as uint8 (a.astype(np.uint8)); ",
              kSupported);
    case 'c':
      invalid(path, "dtype ", q, " (complex) is not supported; ", kSupported);
    case 'U':
    case 'S':
    case 'a':
      invalid(path, "dtype ", q, " (strings) is not supported; ", kSupported);
    case 'M':
    case 'm':
      invalid(path, "dtype ", q, " (datetime/timedelta) is not supported; ", kSupported);
    case 'V':
      invalid(
          path, "dtype ", q,
          " (raw void bytes, which is how np.save stores ml_dtypes bfloat16/float8 arrays) is not "
          "supported; save their bit patterns instead (a.view(np.uint16) or a.view(np.uint8)) and "
          "read "
          "them with `as` set to the narrow float type; ",
          kSupported);
    default:
      break;
  }

  std::optional<DType> t;
  if (rest == "1") {
    if (kind == 'i') t = DType::kInt8;
    if (kind == 'u') t = DType::kUInt8;
  } else if (rest == "2") {
    if (kind == 'i') t = DType::kInt16;
    if (kind == 'u') t = DType::kUInt16;
    if (kind == 'f') t = DType::kFloat16;
  } else if (rest == "4") {
    if (kind == 'i') t = DType::kInt32;
    if (kind == 'u') t = DType::kUInt32;
    if (kind == 'f') t = DType::kFloat32;
  } else if (rest == "8") {
    if (kind == 'i') t = DType::kInt64;
    if (kind == 'u') t = DType::kUInt64;
    if (kind == 'f') t = DType::kFloat64;
  }
  if (!t) invalid(path, "dtype ", q, " is not supported; ", kSupported);
  if (order == '|' && dtype_size(*t) != 1) {
    invalid(path, "dtype ", q,
            " has byte order '|' (not applicable), which is only valid for 1-byte types; "
            "multi-byte types need '<', '>' or '='");
  }
  return {*t, order == '>' && dtype_size(*t) > 1};
}

bool reinterpretation_allowed(DType stored, DType as) {
  if (stored == as) return true;
  if (stored == DType::kUInt16) return as == DType::kFloat16 || as == DType::kBFloat16;
  if (stored == DType::kUInt8) return is_float8(as);
  return false;
}

void byte_swap(std::vector<uint8_t>& b, std::size_t elem) {
  for (std::size_t i = 0; i + elem <= b.size(); i += elem)
    std::reverse(b.begin() + i, b.begin() + i + elem);
}

// Fortran (column-major) bytes -> C (row-major) bytes.
std::vector<uint8_t> fortran_to_c(const std::vector<uint8_t>& f, const Shape& shape,
                                  std::size_t elem) {
  std::vector<uint8_t> c(f.size());
  const std::size_t rank = shape.size();
  const uint64_t n = elem == 0 ? 0 : f.size() / elem;
  if (n == 0) return c;
  std::vector<uint64_t> fstride(rank);  // element strides of the Fortran layout
  uint64_t s = 1;
  for (std::size_t k = 0; k < rank; ++k) {
    fstride[k] = s;
    s *= static_cast<uint64_t>(shape[k]);
  }
  std::vector<int64_t> idx(rank, 0);
  uint64_t src = 0;
  for (uint64_t i = 0; i < n; ++i) {
    std::memcpy(c.data() + i * elem, f.data() + src * elem, elem);
    // Advance the C-order odometer (last index fastest), keeping src = sum idx[k] * fstride[k].
    for (std::size_t k = rank; k-- > 0;) {
      if (++idx[k] < shape[k]) {
        src += fstride[k];
        break;
      }
      src -= fstride[k] * static_cast<uint64_t>(idx[k] - 1);
      idx[k] = 0;
    }
  }
  return c;
}

std::string format_version_text(uint8_t major, uint8_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// ---------------------------------------------------------------------------------------------
// Writing.

std::string python_shape_repr(const Shape& s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  if (s.size() == 1) r += ",";
  return r + ")";
}

// Exactly the bytes numpy's np.save writes before the data of a C-ordered array (format 1.0, or 2.0
// when the header length does not fit in 16 bits).
std::string npy_header_bytes(const Tensor& t) {
  std::string dict = "{'descr': '" + npy_descr(t.dtype) +
                     "', 'fortran_order': False, 'shape': " + python_shape_repr(t.shape) + ", }";
  if (!t.shape.empty()) {
    const std::size_t digits = std::to_string(t.shape[0]).size();
    if (digits < kGrowthAxisMaxDigits) dict.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  for (int major = 1; major <= 2; ++major) {
    const std::size_t len_bytes = major == 1 ? 2 : 4;
    const std::size_t hlen = dict.size() + 1;  // + '\n'
    const std::size_t padlen = kArrayAlign - ((kMagicLen + 2 + len_bytes + hlen) % kArrayAlign);
    const uint64_t total = hlen + padlen;
    if (major == 1 && total > 0xFFFF) continue;
    MMTUNE_CHECK(total <= 0xFFFFFFFFu, "npy header of " << total << " bytes");
    std::string out(kMagic, kMagicLen);
    out += static_cast<char>(major);
    out += '\0';
    for (std::size_t b = 0; b < len_bytes; ++b) out += static_cast<char>((total >> (8 * b)) & 0xFF);
    out += dict;
    out.append(padlen, ' ');
    out += '\n';
    return out;
  }
  MMTUNE_CHECK(false, "unreachable");
}

}  // namespace

std::string npy_descr(DType t) {
  switch (t) {
    case DType::kInt8:
      return "|i1";
    case DType::kUInt8:
      return "|u1";
    case DType::kInt16:
      return "<i2";
    case DType::kUInt16:
      return "<u2";
    case DType::kInt32:
      return "<i4";
    case DType::kUInt32:
      return "<u4";
    case DType::kInt64:
      return "<i8";
    case DType::kUInt64:
      return "<u8";
    case DType::kFloat16:
      return "<f2";
    case DType::kBFloat16:
      return "<u2";
    case DType::kFloat32:
      return "<f4";
    case DType::kFloat64:
      return "<f8";
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
      return "|u1";
  }
  MMTUNE_CHECK(false, "npy_descr of dtype #" << static_cast<int>(t));
}

Tensor read_npy(const std::string& path, std::optional<DType> as) {
  InFile in(path);

  // Magic, version and header length.
  uint8_t pre[12];
  const std::size_t got = in.read(pre, 10);
  if (got < kMagicLen || std::memcmp(pre, kMagic, kMagicLen) != 0) {
    if (got < kMagicLen && std::memcmp(pre, kMagic, got) == 0) {
      invalid(path, "file is too short to be a .npy file (", got,
              " bytes; the magic string alone is 6)");
    }
    invalid(path, "not a .npy file: bad magic (a .npy file starts with \\x93NUMPY, this one with ",
            quoted(std::string(reinterpret_cast<const char*>(pre),
                               std::min<std::size_t>(got, kMagicLen))),
            ")");
  }
  if (got < 8) invalid(path, "file ends inside the .npy format version (", got, " bytes)");
  const uint8_t major = pre[6], minor = pre[7];
  if (!((major == 1 || major == 2 || major == 3) && minor == 0)) {
    invalid(path, "unknown .npy format version ", format_version_text(major, minor),
            "; mmtune reads versions 1.0, 2.0 and 3.0");
  }
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  std::size_t pre_len = got;
  if (len_bytes == 4) pre_len += in.read(pre + 10, 2);
  if (pre_len < 8 + len_bytes) {
    invalid(path, "file ends inside the .npy header length field (", pre_len, " of ", 8 + len_bytes,
            " bytes)");
  }
  uint64_t header_len = 0;
  for (std::size_t b = 0; b < len_bytes; ++b)
    header_len |= static_cast<uint64_t>(pre[8 + b]) << (8 * b);

  // Header text.
  std::vector<uint8_t> hbytes;
  const uint64_t hgot = in.read_append(hbytes, header_len);
  if (hgot < header_len) {
    invalid(path, "file ends inside the .npy header (after ", hgot, " of ", header_len,
            " header bytes; the file is truncated or the header length is wrong)");
  }
  const std::string htext(hbytes.begin(), hbytes.end());
  const Header h = HeaderParser(path, htext, major <= 2).parse();
  const Descr descr = parse_descr(path, h.descr);

  // Sizes: the product of the non-zero dims times the element size must fit in 63 bits (as numpy
  // requires of any array it would create).
  const std::size_t elem = dtype_size(descr.dtype);
  uint64_t nonzero_bytes = elem;
  uint64_t data_bytes = elem;
  for (int64_t d : h.shape) {
    const uint64_t u = static_cast<uint64_t>(d);
    if (d == 0) {
      data_bytes = 0;
      continue;
    }
    if (nonzero_bytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / u) {
      invalid(path, "shape ", shape_str(h.shape), " of ", elem,
              "-byte elements is too large: the size in bytes overflows 64 bits");
    }
    nonzero_bytes *= u;
    data_bytes *= u;
  }
  if (data_bytes > std::numeric_limits<std::size_t>::max() / 2) {
    invalid(path, "shape ", shape_str(h.shape), " is too large for this machine");
  }

  // Reinterpretation.
  DType out_type = descr.dtype;
  if (as) {
    if (!reinterpretation_allowed(descr.dtype, *as)) {
      invalid(path, "cannot read the stored dtype ", dtype_name(descr.dtype), " (", quoted(h.descr),
              ") as ", dtype_name(*as),
              ": a .npy file may be read as its own dtype, or its uint16 bit patterns as "
              "float16/bfloat16, or its uint8 bit patterns as a float8 type");
    }
    out_type = *as;
  }

  // Data.
  std::vector<uint8_t> data;
  const uint64_t dgot = in.read_append(data, data_bytes);
  if (dgot < data_bytes) {
    invalid(path, "file ends after ", dgot, " of ", data_bytes, " data bytes (",
            dtype_name(descr.dtype), " ", shape_str(h.shape), "): the file is truncated");
  }
  const uint64_t extra = in.count_rest();
  if (extra > 0) {
    invalid(path, "file has ", extra, " unexpected trailing bytes after the ", data_bytes,
            " data bytes of ", dtype_name(descr.dtype), " ", shape_str(h.shape));
  }

  if (descr.big_endian) byte_swap(data, elem);
  if (h.fortran_order && h.shape.size() > 1) data = fortran_to_c(data, h.shape, elem);

  Tensor t;
  t.dtype = out_type;
  t.shape = h.shape;
  t.bytes.assign(data.begin(), data.end());
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  const int64_t numel = shape_numel(t.shape, path);
  MMTUNE_CHECK(
      static_cast<uint64_t>(t.bytes.size()) == static_cast<uint64_t>(numel) * dtype_size(t.dtype),
      describe(t) << " holds " << t.bytes.size() << " bytes");
  if (path.empty()) invalid("write_npy", "the output path is empty");
  const std::string header = npy_header_bytes(t);
  write_file_atomically(path, "the .npy file",
                        {{reinterpret_cast<const uint8_t*>(header.data()), header.size()},
                         {t.bytes.data(), t.bytes.size()}});
}

}  // namespace mmtune
