// Streams, stream guards, events, and the per-thread current device and stream.
#include <catch2/catch.hpp>
#include <thread>

#include "kiln/kiln.hpp"
#include "support/test_support.hpp"

using namespace kiln;
using kiln::test::random_vector;

TEST_CASE("streams, stream guards and events", "[runtime][gpu]") {
  Stream s(true);
  CHECK(current_stream().is_null());
  {
    StreamGuard use(s);
    CHECK(current_stream() == s);
    CHECK(current_stream_handle() == s.handle());
    auto h = random_vector<float>(1 << 20);
    Event start, stop;
    start.record();
    auto a = asarray(h);  // copies on s
    stop.record();
    stop.synchronize();
    CHECK(stop.query());
    CHECK(Event::elapsed_ms(start, stop) >= 0.0f);
    CHECK(a.get<float>() == h);
  }
  CHECK(current_stream().is_null());
  s.synchronize();
  CHECK(s.query());
}

TEST_CASE("each host thread has its own current device and stream", "[runtime][gpu]") {
  int n = device_count();
  Stream mine(true);
  StreamGuard use(mine);
  cudaStream_t other_thread_stream = reinterpret_cast<cudaStream_t>(std::uintptr_t(1));
  int other_thread_device = -1;
  auto h = random_vector<float>(100);
  std::vector<float> round_trip;
  std::exception_ptr failed;
  std::thread t([&] {  // Catch2 assertions are not thread-safe: check on this thread after join
    try {
      set_current_device(n - 1);
      other_thread_device = current_device();
      other_thread_stream = current_stream_handle();
      round_trip = asarray(h).get<float>();
    } catch (...) {
      failed = std::current_exception();
    }
  });
  t.join();
  if (failed) std::rethrow_exception(failed);
  CHECK(round_trip == h);
  CHECK(other_thread_device == n - 1);
  CHECK(other_thread_stream == nullptr);  // the other thread never chose a stream
  CHECK(current_device() == 0);
  CHECK(current_stream_handle() == mine.handle());
  auto& p = device_properties(0);
  CHECK(p.multiprocessor_count > 0);
  CHECK(p.arch() >= 70);
  CHECK_THROWS_AS(device_properties(n), ValueError);
}
