# Warnings for the project's own code: link mmtune_warnings PRIVATE (never exported).
include_guard(GLOBAL)
add_library(mmtune_warnings INTERFACE)
target_compile_options(mmtune_warnings INTERFACE -Wall -Wextra -Wpedantic)
