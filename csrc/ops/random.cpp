// Kernel glue for the random ops: CPU's argument checks and messages, the
// generator's key (seed, offset) as a runtime argument, and the result
// written into self (in-place forms) or returned. The lowerings are in
// src/ops/random.c; the generator is in generator.cpp.
#include <ATen/Dispatch.h>
#include <ATen/Dispatch_v2.h>
#include <ATen/ExpandUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <mutex>

#include "graph.h"
#include "ops/write.h"
#include "tensor.h"
#include "generator.h"
#include "glue.h"

extern "C" {
#include "ops/attrs.h"
}
#include <ATen/ATen.h>

namespace torch_pjrt {


namespace {

using at::Scalar;
using at::Tensor;
using Gen = std::optional<at::Generator>;

TpuGeneratorImpl* generator_for(const Gen& gen, const Tensor& t) {
  return at::get_generator_or_default<TpuGeneratorImpl>(gen, default_generator(t.device().index()));
}

// Adds the key for a draw of `words` 32-bit words: an int64[2] (seed,
// offset) runtime argument; the generator's offset moves past the draw.
// While a graph is captured the key is a graph parameter drawn anew on every
// run (graph.cpp), so a compiled dropout gets fresh numbers each step.
void add_key(OpArgs& a, TpuGeneratorImpl* gen, uint64_t words, int device) {
  if (tpj_rt_buffer_t* traced = traced_rng_key(gen, words, device)) {
    a.buffer(traced);
    return;
  }
  tpj_rt_buffer_t* buf = upload_rng_key(gen, words, device);
  a.owned.push_back(buf);
  a.buffer(buf);
}

// float64 results are computed in float64, everything else in float32.
at::ScalarType compute_of(at::ScalarType t) { return t == at::kDouble ? at::kDouble : at::kFloat; }
uint64_t words_per(at::ScalarType compute) { return compute == at::kDouble ? 2 : 1; }

// Draws into a fresh tensor shaped like self and writes it into self (any
// view). `input`, when given, is the op's tensor operand (before the key).
Tensor& draw_into(Tensor& self, const char* op, const Gen& gen, uint64_t words_per_elem,
                  std::initializer_list<Scalar> scalars, at::ScalarType scalar_type,
                  c10::ArrayRef<int64_t> attrs = {}, const Tensor* input = nullptr) {
  check_supported(self, op);
  // A tpu generator passed for a tensor of another device dispatches here
  // (the generator's key wins); answer as that device's kernel would.
  TORCH_CHECK(self.device().is_privateuseone(), "Expected a '", self.device().type(),
              "' device type for generator but found 'tpu'");
  if (self.numel() == 0) return self;
  c10::DeviceGuard guard(self.device());
  int dev = self.device().index();
  Tensor out = at::empty(self.sizes(), self.options());
  OpArgs a;
  if (input) add_operand(a, *input, dev);
  add_key(a, generator_for(gen, self), words_per_elem * static_cast<uint64_t>(self.numel()), dev);
  for (const Scalar& s : scalars) a.scalar(s, scalar_type, dev);
  run_op(op, dev, a, attrs, {out});
  assign_result(self, out, op);
  return self;
}

// ---- uniform_, normal_, exponential_ ---------------------------------------

Tensor& uniform_(Tensor& self, double from, double to, Gen gen) {
  if (self.is_complex()) {
    Tensor real = at::view_as_real(self);
    uniform_(real, from, to, gen);
    return self;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()),
                              "\"check_uniform_bounds\" not implemented for '",
                              self.scalar_type(), "'");
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "uniform_", [&] {
    const auto min = static_cast<double>(std::numeric_limits<scalar_t>::lowest());
    const auto max = static_cast<double>(std::numeric_limits<scalar_t>::max());
    TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from,
                " > to=", to);
    TORCH_CHECK((to - from) <= max, "uniform_ expects to-from <= std::numeric_limits<",
                toString(self.scalar_type()), ">::max(), but found to=", to, " and from=", from,
                " which result in to-from to exceed the limit");
    TORCH_CHECK(from >= min && from <= max, "from is out of bounds for ", self.dtype());
    TORCH_CHECK(to >= min && to <= max, "to is out of bounds for ", self.dtype());
  });
  return draw_into(self, "aten::uniform_", gen, words_per(compute_of(self.scalar_type())),
                   {from, to}, self.scalar_type());
}

Tensor& normal_(Tensor& self, double mean, double std, Gen gen) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  if (self.is_complex()) {
    Tensor real = at::view_as_real(self);
    normal_(real, mean, std / std::sqrt(2.0), gen);
    return self;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()),
                              "\"normal_kernel_cpu\" not implemented for '", self.scalar_type(),
                              "'");
  at::ScalarType c = compute_of(self.scalar_type());
  return draw_into(self, "aten::normal_", gen, 2 * words_per(c), {mean, std}, c);
}

Tensor& exponential_(Tensor& self, double lambd, Gen gen) {
  TORCH_CHECK(lambd > 0.0, "exponential_ expects lambda > 0.0, but found lambda=", lambd);
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "Exponential distribution is a continuous probability distribution. dtype must "
              "be a floating point but you specified ", self.scalar_type());
  at::ScalarType c = compute_of(self.scalar_type());
  return draw_into(self, "aten::exponential_", gen, words_per(c), {lambd}, c);
}

// normal with tensor mean and/or std: mean + std * z, shaped and typed as
// CPU's normal (the broadcast of mean and std; the tensor operand's dtype).
Tensor normal_tensors(const Tensor& mean, const Tensor& std, const Tensor& like,
                      at::IntArrayRef shape, bool std_is_tensor, Gen gen) {
  if (std_is_tensor) {
    TORCH_CHECK(!std.is_complex(), "normal expects standard deviation to be non-complex");
    TORCH_CHECK(std.numel() == 0 || tracing() || at::amin(std).item<double>() >= 0.0,
                "normal expects all elements of std >= 0.0");
  }
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(like.scalar_type()),
                              "\"normal_kernel_cpu\" not implemented for '", like.scalar_type(),
                              "'");
  const char* op = "aten::normal.Tensor_Tensor";
  check_supported(like, op);
  c10::Device dev = common_device(op, {&mean, &std});
  c10::DeviceGuard guard(dev);
  Tensor out = at::empty(shape, like.options().device(dev));
  if (out.numel() == 0) return out;
  at::ScalarType c = compute_of(out.scalar_type());
  OpArgs a;
  add_key(a, generator_for(gen, out), 2 * words_per(c) * static_cast<uint64_t>(out.numel()),
          dev.index());
  add_operand(a, mean, dev.index());
  add_operand(a, std, dev.index());
  run_op(op, dev.index(), a, {}, {out});
  return out;
}

Tensor normal_tt(const Tensor& mean, const Tensor& std, Gen gen) {
  auto shape = at::infer_size(mean.sizes(), std.sizes());
  return normal_tensors(mean, std, mean, shape, true, gen);
}

Tensor normal_tf(const Tensor& mean, double std, Gen gen) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  Tensor s = at::scalar_tensor(std, at::TensorOptions().dtype(mean.scalar_type()));
  return normal_tensors(mean, s, mean, mean.sizes(), false, gen);
}

Tensor normal_ft(double mean, const Tensor& std, Gen gen) {
  Tensor m = at::scalar_tensor(mean, at::TensorOptions().dtype(std.scalar_type()));
  return normal_tensors(m, std, std, std.sizes(), true, gen);
}

// ---- bernoulli_ --------------------------------------------------------------

Tensor& bernoulli_float(Tensor& self, double p, Gen gen) {
  TORCH_CHECK(0 <= p && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  at::ScalarType c = compute_of(self.scalar_type());
  return draw_into(self, "aten::bernoulli_.float", gen, words_per(c), {p}, c);
}

Tensor& bernoulli_tensor(Tensor& self, const Tensor& p, Gen gen) {
  const char* op = "aten::bernoulli_.Tensor";
  check_supported(p, op);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(p.scalar_type()), "\"bernoulli_tensor_cpu_p_\" "
                              "not implemented for '", p.scalar_type(), "'");
  (void)at::infer_size(self.sizes(), p.sizes());  // raises when p does not broadcast
  TORCH_CHECK(at::is_expandable_to(p.sizes(), self.sizes()), "bernoulli_: p of shape ", p.sizes(),
              " cannot be expanded to self of shape ", self.sizes());
  if (self.numel() == 0) return self;
  common_device(op, {&self, &p});
  if (p.numel() > 0 && !tracing()) {
    // CPU checks every p on the host; one small download of (min, max).
    Tensor lohi = at::stack({at::amin(p), at::amax(p)}).cpu();
    double lo = lohi[0].item<double>(), hi = lohi[1].item<double>();
    TORCH_CHECK(lo >= 0 && hi <= 1, "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  "
                "(Could this error message be improved?  If so, please report an enhancement "
                "request to PyTorch.)");
  }
  return draw_into(self, op, gen, words_per(compute_of(p.scalar_type())), {}, at::kFloat, {}, &p);
}

// ---- random_ -----------------------------------------------------------------

// The largest value random_ draws without `to`: 2^digits for floats, the
// dtype's max for integers and bool.
int64_t random_to_inc(const Tensor& self) {
  int64_t v = 0;
  AT_DISPATCH_V2(self.scalar_type(), "random_", AT_WRAP([&] {
    if constexpr (std::numeric_limits<scalar_t>::is_integer) {
      v = static_cast<int64_t>(std::numeric_limits<scalar_t>::max());
    } else {
      v = int64_t(1) << std::numeric_limits<scalar_t>::digits;
    }
  }), AT_EXPAND(AT_INTEGRAL_TYPES), AT_EXPAND(AT_FLOATING_TYPES), at::kHalf, at::kBFloat16,
  at::kBool);
  return v;
}

void check_from_to_in_range(const Tensor& self, int64_t from, int64_t to_inc) {
  AT_DISPATCH_V2(self.scalar_type(), "random_", AT_WRAP([&] {
    if constexpr (std::numeric_limits<scalar_t>::is_integer) {
      const auto min = static_cast<int64_t>(std::numeric_limits<scalar_t>::lowest());
      const auto max = static_cast<int64_t>(std::numeric_limits<scalar_t>::max());
      TORCH_CHECK(from >= min && from <= max, "from is out of bounds for ", self.dtype());
      TORCH_CHECK(to_inc >= min && to_inc <= max, "to - 1 is out of bounds for ", self.dtype());
    } else {
      const auto min = static_cast<double>(std::numeric_limits<scalar_t>::lowest());
      const auto max = static_cast<double>(std::numeric_limits<scalar_t>::max());
      TORCH_CHECK(from >= min && from <= max, "from is out of bounds for ", self.dtype());
      TORCH_CHECK(to_inc >= min && to_inc <= max, "to - 1 is out of bounds for ", self.dtype());
    }
  }), AT_EXPAND(AT_INTEGRAL_TYPES), AT_EXPAND(AT_FLOATING_TYPES), at::kHalf, at::kBFloat16,
  at::kBool);
}

// Draws from + (bits mod range); range is unsigned, 0 meaning 2^64.
Tensor& random_range(Tensor& self, const char* op, int64_t from, uint64_t range, Gen gen) {
  TORCH_CHECK(!self.is_complex(), "random_from_to_impl handles only integral, floating-point and "
              "boolean types");
  tpj_attrs_random_t attrs{};
  attrs.mode = static_cast<int64_t>(range) <= 0 ? 2 : (range < (uint64_t(1) << 32) ? 0 : 1);
  return draw_into(self, op, gen, 2, {Scalar(from), Scalar(static_cast<int64_t>(range))},
                   at::kLong, attrs_of(attrs));
}

Tensor& random_full(Tensor& self, Gen gen) {
  check_supported(self, "aten::random_");
  uint64_t to_inc = static_cast<uint64_t>(random_to_inc(self));
  // floats: [0, 2^digits]; integers: [0, max]
  return random_range(self, "aten::random_", 0, to_inc + 1, gen);
}

Tensor& random_from(Tensor& self, int64_t from, std::optional<int64_t> to, Gen gen) {
  check_supported(self, "aten::random_.from");
  uint64_t range;
  if (to) {
    TORCH_CHECK(from < *to, "random_ expects 'from' to be less than 'to', but got from=", from,
                " >= to=", *to);
    check_from_to_in_range(self, from, *to - 1);
    range = static_cast<uint64_t>(*to) - static_cast<uint64_t>(from);
  } else if (from != std::numeric_limits<int64_t>::lowest()) {
    int64_t to_inc = random_to_inc(self);
    check_from_to_in_range(self, from, to_inc);
    range = static_cast<uint64_t>(to_inc) - static_cast<uint64_t>(from) + 1;
  } else {
    auto t = self.scalar_type();
    TORCH_CHECK(t == at::kLong || t == at::kDouble || t == at::kFloat || t == at::kBFloat16,
                "random_from_to_impl handles only int64, double, float and bfloat16 types");
    range = 0;  // all 64 bits
  }
  return random_range(self, "aten::random_.from", from, range, gen);
}

Tensor& random_to(Tensor& self, int64_t to, Gen gen) {
  check_supported(self, "aten::random_.to");
  TORCH_CHECK(0 < to, "random_ expects 'from' to be less than 'to', but got from=0 >= to=", to);
  check_from_to_in_range(self, 0, to - 1);
  return random_range(self, "aten::random_.to", 0, static_cast<uint64_t>(to), gen);
}

// ---- randperm ----------------------------------------------------------------

Tensor& randperm_out(int64_t n, Gen gen, Tensor& out) {
  const char* op = "aten::randperm.generator_out";
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  auto t = out.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isIntegralType(t, false) || t == at::kHalf || t == at::kFloat ||
                                  t == at::kDouble,
                              "\"randperm\" not implemented for '", t, "'");
  // CPU's check_supported_max_int_with_precision
  at::scalar_tensor(n > 0 ? n - 1 : n, at::TensorOptions().dtype(t));
  TORCH_CHECK(t != at::kHalf || n <= (int64_t(1) << 11) + 1,
              "n cannot be greater than 2049 for Half type.");
  TORCH_CHECK(t != at::kFloat || n <= (int64_t(1) << 24) + 1,
              "n cannot be greater than 2^24+1 for Float type.");
  TORCH_CHECK(t != at::kDouble || n <= (int64_t(1) << 53) + 1,
              "n cannot be greater than 2^53+1 for Double type.");
  check_supported(out, op);
  out.resize_({n});
  if (n == 0) return out;
  c10::DeviceGuard guard(out.device());
  int dev = out.device().index();
  Tensor fresh = at::empty({n}, out.options());
  OpArgs a;
  add_key(a, generator_for(gen, out), 2 * static_cast<uint64_t>(n), dev);
  run_op(op, dev, a, {}, {fresh});
  assign_result(out, fresh, op);
  return out;
}

// ---- multinomial -------------------------------------------------------------

// The probabilities' value checks of CPU's multinomial: one host read of
// three flags (CPU and CUDA read the values too). Skipped while a graph is
// traced, where nothing can be read.
void check_multinomial_values(const Tensor& self, bool sampling_kernel) {
  if (tracing()) return;
  // CPU's kernel tests p >= 0 first, so a NaN reads as "< 0" there.
  Tensor flags = at::stack({(self >= 0).logical_not().any(), (self.abs() == INFINITY).any(),
                            (self.sum(-1) == 0).any()})
                     .cpu();
  const bool* f = flags.const_data_ptr<bool>();
  if (sampling_kernel) {
    TORCH_CHECK(!f[0], "invalid multinomial distribution (encountering probability entry < 0)");
    TORCH_CHECK(!f[1], "invalid multinomial distribution (encountering probability entry = "
                       "infinity or NaN)");
  } else {
    TORCH_CHECK(!f[0] && !f[1], "probability tensor contains either `inf`, `nan` or element < 0");
  }
  TORCH_CHECK(!f[2], "invalid multinomial distribution (sum of probabilities <= 0)");
}

Tensor multinomial_tpu(const Tensor& self, int64_t n_sample, bool replacement, Gen gen) {
  const char* op = "aten::multinomial";
  check_supported(self, op);
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "multinomial only supports floating-point dtypes for input, got: ",
              self.scalar_type());
  TORCH_CHECK(n_sample > 0, "cannot sample n_sample <= 0 samples");
  int64_t categories = self.size(-1);
  TORCH_CHECK(replacement || n_sample <= categories,
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  TORCH_CHECK(categories <= (int64_t(1) << 24), "number of categories cannot exceed 2^24");
  // One sample, or none repeated: the exponential trick; else CPU's kernel.
  bool sampling_kernel = replacement && n_sample > 1;
  check_multinomial_values(self, sampling_kernel);
  int64_t rows = self.dim() == 2 ? self.size(0) : 1;
  std::vector<int64_t> sizes = {n_sample};
  if (self.dim() == 2) sizes.insert(sizes.begin(), rows);
  Tensor out = at::empty(sizes, self.options().dtype(at::kLong));
  if (out.numel() == 0) return out;
  c10::DeviceGuard guard(self.device());
  int dev = self.device().index();
  OpArgs a;
  add_operand(a, self, dev);
  uint64_t draws = static_cast<uint64_t>(rows) * (sampling_kernel ? n_sample : categories);
  add_key(a, generator_for(gen, self), draws * words_per(compute_of(self.scalar_type())), dev);
  tpj_attrs_multinomial_t attrs{};
  attrs.replacement = sampling_kernel;
  run_op(op, dev, a, attrs_of(attrs), {out});
  return out;
}

Tensor& multinomial_out_tpu(const Tensor& self, int64_t n_sample, bool replacement, Gen gen,
                        Tensor& out) {
  TORCH_CHECK(out.device() == self.device(), "multinomial arguments must have the same device");
  TORCH_CHECK(out.scalar_type() == at::kLong, "multinomial expects Long tensor out, got: ",
              out.scalar_type());
  return out_result(out, multinomial_tpu(self, n_sample, replacement, gen),
                    "aten::multinomial.out");
}

// ---- dropout -----------------------------------------------------------------

std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p, std::optional<bool> train) {
  const char* op = "aten::native_dropout";
  check_supported(input, op);
  if (input.numel() == 0) return std::make_tuple(input, at::empty_like(input, input.options()));
  if (train.has_value() && !*train) {
    return std::make_tuple(input.clone(), at::ones_like(input, input.options().dtype(at::kBool)));
  }
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(input.scalar_type()), op,
                              ": dtype ", input.scalar_type(), " is not supported on tpu");
  c10::DeviceGuard guard(input.device());
  int dev = input.device().index();
  Tensor out = at::empty(input.sizes(), input.options());
  Tensor mask = at::empty(input.sizes(), input.options().dtype(at::kBool));
  at::ScalarType c = compute_of(input.scalar_type());
  double keep = 1. - p;
  double scale = keep == 0 ? 0. : 1. / keep;  // CPU's: p = 1 gives zeros, not NaN
  OpArgs a;
  a.tensor(input);
  add_key(a, generator_for(std::nullopt, input), words_per(c) * input.numel(), dev);
  a.scalar(keep, c, dev);
  a.scalar(scale, c, dev);
  tpj_attrs_compute_t attrs{};
  attrs.compute = to_tpj_dtype(c);
  run_op(op, dev, a, attrs_of(attrs), {out, mask});
  return std::make_tuple(out, mask);
}

Tensor native_dropout_backward(const Tensor& grad, const Tensor& mask, double scale) {
  const char* op = "aten::native_dropout_backward";
  TORCH_CHECK(mask.scalar_type() == at::ScalarType::Bool, "Mask should be Bool Scalar Type",
              mask.scalar_type());
  check_supported(grad, op);
  c10::Device dev = common_device(op, {&grad, &mask});
  c10::DeviceGuard guard(dev);
  auto shape = at::infer_size(grad.sizes(), mask.sizes());
  // CPU computes grad * mask * scale: an integer or bool grad times the
  // double scale gives the default float dtype.
  at::ScalarType dt = at::result_type(grad, at::Scalar(scale));
  Tensor out = at::empty(shape, grad.options().dtype(dt));
  at::ScalarType c = compute_of(dt);
  OpArgs a;
  a.tensor(grad);
  a.tensor(mask);
  a.scalar(scale, c, dev.index());
  tpj_attrs_compute_t attrs{};
  attrs.compute = to_tpj_dtype(c);
  run_op(op, dev.index(), a, attrs_of(attrs), {out});
  return out;
}

}  // namespace
}  // namespace torch_pjrt

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace torch_pjrt;
  m.impl("uniform_", TORCH_FN(uniform_));
  m.impl("normal_", TORCH_FN(normal_));
  m.impl("normal.Tensor_Tensor", TORCH_FN(normal_tt));
  m.impl("normal.Tensor_float", TORCH_FN(normal_tf));
  m.impl("normal.float_Tensor", TORCH_FN(normal_ft));
  m.impl("exponential_", TORCH_FN(exponential_));
  m.impl("bernoulli_.float", TORCH_FN(bernoulli_float));
  m.impl("bernoulli_.Tensor", TORCH_FN(bernoulli_tensor));
  m.impl("random_", TORCH_FN(random_full));
  m.impl("random_.from", TORCH_FN(random_from));
  m.impl("random_.to", TORCH_FN(random_to));
  m.impl("randperm.generator_out", TORCH_FN(randperm_out));
  m.impl("multinomial", TORCH_FN(multinomial_tpu));
  m.impl("multinomial.out", TORCH_FN(multinomial_out_tpu));
  m.impl("native_dropout", TORCH_FN(native_dropout));
  m.impl("native_dropout_backward", TORCH_FN(native_dropout_backward));
}

// log_normal_, cauchy_ and geometric_ on tpu: each is a transform of a
// native draw (normal_ or uniform_, from the same per-device generator, so
// torch.manual_seed reproduces them) by native elementwise ops. Composite
// glue, like PyTorch's CompositeImplicit kernels: no op semantics of its own
// beyond the inverse-CDF formula, and no new lowering. Argument checks and
// their messages are CPU's.
namespace {

using at::Tensor;
using Gen = std::optional<at::Generator>;

// The dtype the draw is made in: float32 for the half types (as CPU's
// kernels compute in float), the tensor's own otherwise.
at::ScalarType draw_dtype(at::ScalarType t) {
  return (t == at::kHalf || t == at::kBFloat16) ? at::kFloat : t;
}

Tensor& log_normal_tpu(Tensor& self, double mean, double std, Gen gen) {
  TORCH_CHECK(std > 0.0, "log_normal_ expects std > 0.0, but found std=", std);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"log_normal_cpu\" not "
                              "implemented for '", self.scalar_type(), "'");
  c10::DeviceGuard guard(self.device());
  Tensor z = at::empty(self.sizes(), self.options().dtype(draw_dtype(self.scalar_type())));
  z.normal_(mean, std, gen);
  self.copy_(z.exp_());
  return self;
}

Tensor& cauchy_tpu(Tensor& self, double median, double sigma, Gen gen) {
  TORCH_CHECK(sigma > 0.0, "cauchy_ expects sigma > 0.0, but found sigma=", sigma);
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "Cauchy distribution is a continuous probability distribution. dtype must be a "
              "floating point but you specified ", self.scalar_type());
  c10::DeviceGuard guard(self.device());
  // inverse CDF: median + sigma * tan(pi * (u - 1/2)), u uniform in [0, 1)
  Tensor u = at::empty(self.sizes(), self.options().dtype(draw_dtype(self.scalar_type())));
  u.uniform_(0.0, 1.0, gen);
  self.copy_(u.sub_(0.5).mul_(M_PI).tan_().mul_(sigma).add_(median));
  return self;
}

Tensor& geometric_tpu(Tensor& self, double p, Gen gen) {
  TORCH_CHECK(0 < p && p < 1, "geometric_ expects p to be in (0, 1), but got p=", p);
  TORCH_CHECK(self.scalar_type() != at::kBool && !self.is_complex(),
              "\"geometric_cpu\" not implemented for '", self.scalar_type(), "'");
  c10::DeviceGuard guard(self.device());
  // number of Bernoulli(p) trials to the first success: ceil(log(u) / log(1 - p)),
  // u uniform in (0, 1) -- 1 - uniform[0, 1) keeps log finite
  at::ScalarType d = self.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  Tensor u = at::empty(self.sizes(), self.options().dtype(d));
  u.uniform_(0.0, 1.0, gen);
  Tensor k = u.neg_().add_(1.0).log_().div_(std::log1p(-p)).ceil_().clamp_min_(1.0);
  self.copy_(k);
  return self;
}
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("log_normal_", TORCH_FN(log_normal_tpu));
  m.impl("cauchy_", TORCH_FN(cauchy_tpu));
  m.impl("geometric_", TORCH_FN(geometric_tpu));
}
