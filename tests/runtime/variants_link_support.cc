// The variant suites' shape categories and random tensors (tests/variants/variant_support.h),
// compiled into the runtime tests as they are, not copied.
#include "tests/variants/variant_support.cc"
