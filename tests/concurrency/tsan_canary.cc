// A deliberate data race, built only in ThreadSanitizer builds: the test that runs it expects it to
// fail, proving that TSan is active in the concurrency suite's build and that the suppressions
// (tsan.supp) do not hide a plain race.
#include <thread>

namespace {
int shared_counter = 0;  // NOLINT: racy on purpose
}

int main() {
  std::thread a([] {
    for (int i = 0; i < 100000; ++i) ++shared_counter;
  });
  std::thread b([] {
    for (int i = 0; i < 100000; ++i) ++shared_counter;
  });
  a.join();
  b.join();
  return shared_counter == -1;  // uses the value; 0 (success) when TSan does not stop it
}
