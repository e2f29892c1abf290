#pragma once
// kiln: JIT-compiled GPU kernels and NumPy-style arrays for C++20. The one header users include.
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/dtype.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/memory.hpp"
#include "kiln/runtime/module.hpp"
#include "kiln/runtime/ndarray.hpp"
#include "kiln/runtime/scalar.hpp"
#include "kiln/runtime/shape.hpp"
#include "kiln/runtime/stream.hpp"
#include "kiln/ops/creation.hpp"
#include "kiln/ops/elementwise_kernel.hpp"
