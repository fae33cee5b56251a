// Files that appear whole or not at all: the .npy writer, the merged tuning database, the tuned
// database and report of `mmtune autotune` all write through here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mmtune {

// Writes every byte of [p, p + n) to `fd`, retrying short and interrupted writes.
bool write_all(int fd, const uint8_t* p, std::size_t n);

// Writes the concatenated `parts` to `path` through a unique temporary file in the same folder,
// synced and renamed over `path`; on any failure the temporary file is removed and `path` is
// untouched. InvalidArgument "<path>: cannot write <what>: <reason>" when the path is a folder,
// its folder does not exist, or an I/O call fails.
void write_file_atomically(const std::string& path, const std::string& what,
                           const std::vector<std::pair<const uint8_t*, std::size_t>>& parts);

// The same for text.
inline void write_file_atomically(const std::string& path, const std::string& what,
                                  const std::string& text) {
  write_file_atomically(path, what, {{reinterpret_cast<const uint8_t*>(text.data()), text.size()}});
}

}  // namespace mmtune
