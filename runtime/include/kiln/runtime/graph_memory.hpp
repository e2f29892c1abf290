#pragma once
// The device memory of one CUDA graph capture (kiln::capture), as the memory pool hands it
// out during the capture and takes it back after.
//
// A captured kernel's arguments are fixed addresses, so every block a graph may touch must
// stay where it is, and out of everyone else's hands, for as long as the graph can replay:
//   - a Buffer allocated on the capturing stream during the capture gets real memory, not a
//     captured allocation: it exists before the first replay, no replay frees or moves it,
//     and the graph holds it together with the Buffer (small requests share 1 MiB slabs);
//   - a block freed on the capturing stream during the capture (a temporary of the captured
//     work, or an older array whose last handle went away) is adopted by the graph instead of
//     going back to the pool or its small-block reuse;
//   - when the graph is destroyed, every block no Buffer still uses goes back to the pool on
//     its stream, ordered after the graph's last replay (an event on that replay's stream);
//     a Buffer born in the capture that outlives the graph gives its block back when it goes.
// So no block is handed out twice (it is in exactly one of: a live Buffer or graph, the
// pool's reuse lists, the driver's pool) and none is leaked.
//
//   auto g = std::make_shared<kiln::GraphMemory>(device, home_stream);
//   pool.begin_capture(s, g);   // ... captured work allocating on s ...
//   pool.end_capture(s);
//   g->release_graph(&last_replay_stream);  // when the graph is destroyed
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "kiln/runtime/stream.hpp"

namespace kiln {

class GraphMemory {
 public:
  /// Memory of a capture on `device`; blocks born in the capture go back to the pool on
  /// `home`, the stream arrays created in the capture belong to.
  GraphMemory(int device, Stream home);
  ~GraphMemory();
  GraphMemory(const GraphMemory&) = delete;
  GraphMemory& operator=(const GraphMemory&) = delete;

  /// Real device memory for a Buffer born in the capture (nullptr for 0 bytes). Throws
  /// OutOfMemoryError.
  void* allocate(std::size_t bytes);
  /// That Buffer went away: its block stays while the graph lives, else goes back to the pool.
  void release(void* p) noexcept;
  /// A block of `bytes` freed on `stream` (a capturing stream) during the capture.
  void adopt(void* p, std::size_t bytes, const Stream& stream) noexcept;
  /// The graph is gone (or was never made): blocks no Buffer uses go back to the pool, after
  /// the last replay on `last_replay` (nullptr: never replayed).
  void release_graph(const Stream* last_replay) noexcept;

  /// Bytes held from the pool (slabs, blocks, adopted blocks).
  std::size_t bytes() const;
  int device() const noexcept { return device_; }
  const Stream& home() const noexcept { return home_; }

 private:
  struct Chunk {
    std::size_t bytes = 0;  // what the pool gave (or was freed with, for adopted blocks)
    std::size_t used = 0;   // slabs: bytes handed out so far
    int refs = 0;           // the graph, plus each live Buffer in it
    bool slab = false;
    Stream stream;  // where it goes back to the pool
  };
  struct Free {
    void* ptr;
    std::size_t bytes;
    Stream stream;
  };
  void drop_ref(std::map<std::uintptr_t, Chunk>::iterator it, std::vector<Free>& out);
  void give_back(std::vector<Free>& frees) noexcept;

  int device_;
  Stream home_;
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, Chunk> chunks_;  // by base address
  std::uintptr_t slab_ = 0;                 // the slab small requests come from, 0 for none
  bool graph_alive_ = true;
  cudaEvent_t after_replays_ = nullptr;  // recorded after the last replay, once released
  cudaStream_t replay_stream_ = nullptr;
  std::vector<cudaStream_t> waited_;  // streams already ordered after that event
};

}  // namespace kiln
