// kforge/core/error.hpp — the exception types every layer throws.
//
// Run-time problems are exceptions with context (STYLE habit 5): the message
// names the op, what was expected and what came. Nothing aborts.
#pragma once

#include <stdexcept>
#include <string>

namespace kforge {

/// Base of every exception kforge throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Tensor shapes or strides do not fit the op. what() names the op, the
/// expected and the actual shape.
class shape_error : public error {
 public:
  using error::error;
};

/// A value (op parameter, dtype, option) is outside what the op accepts.
class argument_error : public error {
 public:
  using error::error;
};

/// The request is valid but this backend or device cannot run it
/// (e.g. f16 on a device without 16-bit storage).
class unsupported_error : public error {
 public:
  using error::error;
};

/// A problem whose tensors would not fit the memory kforge allows itself (a
/// fraction of the host's available RAM, or of a device's heap); thrown
/// before anything is allocated, with the bytes needed and the limit.
class memory_error : public unsupported_error {
 public:
  using unsupported_error::unsupported_error;
};

/// A cache or record file could not be read or parsed.
class cache_error : public error {
 public:
  using error::error;
};

}  // namespace kforge
