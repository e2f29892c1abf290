#pragma once
// Every collective on every dtype class, checked against host references: shared by the
// in-process tests (tests/ops/collectives_gpu_test.cpp) and the rank processes they start
// (tests/programs/nccl_rank.cpp), so one process with all GPUs and one process per GPU run the
// same checks.
#include <span>
#include <string>
#include <vector>

#include "kiln/library/collectives.hpp"

namespace kiln::test {

/// Runs the suite on the communicators this process holds (one per rank it drives; the other
/// ranks run it too, in other processes or on other threads), each step one nccl::group over
/// them. Every rank's inputs are known everywhere (a formula of rank, element and step), so
/// each rank checks its own results against a host reference; outputs are poisoned first and
/// the memory around strided views is checked untouched. Returns one line per mismatch
/// (empty: everything matched). Needs the same communicator size on every rank.
std::vector<std::string> run_collective_suite(std::span<const nccl::Communicator> mine);

/// Sets NCCL_NVLS_ENABLE=0 unless it is set: kiln's tests never enable NVLink multicast.
void keep_nvls_off();

}  // namespace kiln::test
