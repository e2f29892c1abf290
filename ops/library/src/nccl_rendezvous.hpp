#pragma once
// Internal: the file rendezvous and the timeout setting, shared by the communicator code.
#include <chrono>
#include <filesystem>

#include "kiln/library/collectives.hpp"

namespace kiln::nccl::detail {

/// KILN_NCCL_TIMEOUT (seconds) or 300 s; ValueError when the variable is malformed.
std::chrono::milliseconds default_timeout();
/// options.timeout, else default_timeout(); ValueError when not positive.
std::chrono::milliseconds timeout_of(const CommunicatorOptions& options);

/// Publishes the id file at `file` atomically and exclusively (a temporary beside it, then
/// link(2), which fails when the file exists): ValueError when it exists or cannot be written.
void publish_id_file(const std::filesystem::path& file, const IdFile& contents);
/// Waits (polling) until `file` exists, then parses it: TimeoutError after `timeout`,
/// ValueError when it exists but is not an id file.
IdFile wait_for_id_file(const std::filesystem::path& file, std::chrono::milliseconds timeout);

}  // namespace kiln::nccl::detail
