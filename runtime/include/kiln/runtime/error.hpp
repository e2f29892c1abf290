#pragma once
// kiln's exception hierarchy. Every failure kiln reports is a kiln::Error with a
// message a user can act on; catch the derived type to handle one kind of failure.
//
//   try { auto z = k(x, y); }
//   catch (const kiln::TypeError& e) { std::cerr << e.what(); }   // dtype mismatch
//   catch (const kiln::Error& e) { ... }                             // anything else
#include <cstddef>
#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// NVRTC rejected generated or user code. what() holds the kernel name, the NVRTC log
/// and the source with line numbers.
class CompileError : public Error {
 public:
  CompileError(std::string message, std::string log, std::string source)
      : Error(std::move(message)), log_(std::move(log)), source_(std::move(source)) {}
  const std::string& log() const noexcept { return log_; }
  const std::string& source() const noexcept { return source_; }

 private:
  std::string log_, source_;
};

/// A parameter list or kernel name could not be parsed; what() shows the text and position.
class SignatureError : public Error {
 public:
  SignatureError(std::string message, std::size_t position)
      : Error(std::move(message)), position_(position) {}
  std::size_t position() const noexcept { return position_; }

 private:
  std::size_t position_;
};

/// Shapes that cannot be broadcast, reshaped or indexed as asked.
class ShapeError : public Error {
 public:
  using Error::Error;
};

/// A dtype that does not fit: wrong array dtype, impossible cast, wrong host type.
class TypeError : public Error {
 public:
  using Error::Error;
};

/// A subscript out of range, or too many subscripts for the array.
class IndexError : public Error {
 public:
  using Error::Error;
};

/// A value out of range (axis, index, scalar that does not fit a dtype).
class ValueError : public Error {
 public:
  using Error::Error;
};

/// A CUDA runtime or driver call failed; what() names the call, the code and its name.
class CudaError : public Error {
 public:
  CudaError(std::string message, int code) : Error(std::move(message)), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

/// No NVIDIA driver, or no GPU. Work that needs no GPU (codegen, NVRTC, the cache) still runs.
class NoDeviceError : public Error {
 public:
  using Error::Error;
};

/// The memory pool could not satisfy a request even after releasing its cached blocks.
class OutOfMemoryError : public Error {
 public:
  OutOfMemoryError(std::string message, std::size_t requested)
      : Error(std::move(message)), requested_(requested) {}
  std::size_t requested_bytes() const noexcept { return requested_; }

 private:
  std::size_t requested_;
};

/// KILN_DISALLOW_COMPILE=1 is set and a kernel was missing from the cache.
class CacheMissError : public Error {
 public:
  using Error::Error;
};

/// Work a CUDA graph capture cannot record (it waits for the device, reads device memory on
/// the host, runs on the legacy null stream, ...), refused when it is called during a capture
/// and before it touches the device: the capture and the stream stay usable. Also a capture
/// that cannot start (on the null stream, inside another capture) or that CUDA invalidated.
class CaptureError : public Error {
 public:
  using Error::Error;
};

/// NCCL could not be used: the library is missing, is not NCCL or is too old, or an NCCL call
/// failed. code() is NCCL's ncclResult_t, or -1 when the library itself is the problem.
class NcclError : public Error {
 public:
  NcclError(std::string message, int code) : Error(std::move(message)), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

/// A bounded wait ran out: a collective whose peer died or never came, a communicator whose
/// other ranks never joined, a rendezvous file that never appeared. what() says what was
/// waited for, for how long, and what kiln did about it (e.g. aborted the communicator).
class TimeoutError : public Error {
 public:
  using Error::Error;
};

}  // namespace kiln
