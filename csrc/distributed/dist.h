// csrc/distributed: the c10d backend "pjrt" (backend.cpp) over one transport
// (src/dist/transport.h), and the transports written in C++ (the host-staging
// one over gloo). Shared by this room only.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <chrono>

#include "common.h"

extern "C" {
#include "dist/transport.h"
}

namespace torch_pjrt {

// A transport over a c10d Backend that takes CPU tensors (gloo). Owned by the
// caller (destroy()).
tpj_dist_transport_t* make_gloo_transport(c10::intrusive_ptr<c10d::Backend> pg,
                                          std::chrono::milliseconds timeout);

// The "pjrt" c10d Backend over transport t (which it owns from now on).
c10::intrusive_ptr<c10d::Backend> make_pjrt_backend(tpj_dist_transport_t* t,
                                                    std::chrono::milliseconds timeout);

// The transport's name when b is a "pjrt" backend, "" otherwise.
std::string transport_name(const c10::intrusive_ptr<c10d::Backend>& b);

}  // namespace torch_pjrt
