// The torch headers (nearly) every glue file includes, precompiled once per
// build by setup.py and put in front of every file (-include): parsing them
// was most of each file's compile time. Only third-party headers belong
// here; a header of ours would rebuild the PCH, and so everything, on every
// change to it.
#pragma once

#include <ATen/ATen.h>
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>
