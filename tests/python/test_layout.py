"""Output layout: a new result has the strides CPU gives it (issue 19 item 4).

Elementwise ops follow TensorIterator (the inputs' memory order: a
transposed input gives a transposed result, channels_last stays
channels_last); conv, batch norm and pooling keep channels_last as CPU does.
Each case compares values, strides and is_contiguous(memory_format=...) with
CPU, and what strides make visible: .view() raising, as_strided reading the
same elements."""
import copy
import itertools

import pytest
import torch
import torch.nn.functional as F

import torch_pjrt  # noqa: F401

from _op_check import NativeOnly

TOL = dict(rtol=1e-5, atol=1e-5)
FORMATS = (torch.contiguous_format, torch.channels_last)


def same_layout(t, c, what=""):
    """t (tpu) has c's (CPU) shape, dtype, strides, and values."""
    assert t.device.type == "tpu"
    assert t.shape == c.shape, what
    assert t.dtype == c.dtype, what
    assert t.stride() == c.stride(), f"{what}: strides {t.stride()} != CPU's {c.stride()}"
    for mf in FORMATS:
        if c.dim() == 4 or mf is torch.contiguous_format:
            assert t.is_contiguous(memory_format=mf) == c.is_contiguous(memory_format=mf), (what, mf)
    torch.testing.assert_close(t.cpu(), c, equal_nan=True, **TOL)


# Views of a base tensor (shape (2, 3, 4, 5) unless named), applied alike on
# CPU and tpu: permutations, channels_last, slices, broadcasts, size-1 dims.
def _perm(*p):
    return lambda b: b.permute(*p)


LAYOUTS_4D = {
    "contiguous": lambda b: b,
    "t01": _perm(1, 0, 2, 3),
    "t23": _perm(0, 1, 3, 2),
    "rev": _perm(3, 2, 1, 0),
    "p2031": _perm(2, 0, 3, 1),
    "channels_last": lambda b: b.contiguous(memory_format=torch.channels_last),
    "sliced": lambda b: b[:, :, ::2],
    "sliced_t": lambda b: b[:, :, ::2].transpose(1, 3),
    "expanded": lambda b: b[:, :1].expand(2, 3, 4, 5),
}


def _base(shape=(2, 3, 4, 5), seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=dtype)


def pair(layout, shape=(2, 3, 4, 5), seed=0, dtype=torch.float32):
    """The same view of the same values on CPU and on tpu."""
    b = _base(shape, seed, dtype)
    c = layout(b)
    t = layout(b.to("tpu"))
    assert t.stride() == c.stride()
    return c, t


UNARY = {
    "exp": torch.exp,
    "neg": torch.neg,
    "abs": torch.abs,
    "sin": torch.sin,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "floor": torch.floor,
    "erf": torch.erf,
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "hardtanh": F.hardtanh,
    "leaky_relu": F.leaky_relu,
    "elu": F.elu,
    "softplus": F.softplus,
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "mish": F.mish,
    "threshold": lambda x: F.threshold(x, 0.1, 2.0),
    "hardshrink": F.hardshrink,
    "clamp": lambda x: x.clamp(-0.5, 0.5),
    "clamp_min": lambda x: x.clamp(min=0.0),
    "mul_scalar": lambda x: x * 2.0,
    "add_scalar": lambda x: x + 1,
    "rsub": lambda x: 1 - x,
    "pow_scalar": lambda x: x.abs() ** 1.5,
    "gt_scalar": lambda x: x > 0,
    "to_f64": lambda x: x.to(torch.float64),
    "to_int": lambda x: (x * 4).to(torch.int32),
    "to_f16": lambda x: x.to(torch.float16),
    "clone": torch.clone,
    "nan_to_num": torch.nan_to_num,
    "lgamma": torch.lgamma,
    "sign": torch.sign,
    "logit": lambda x: torch.logit(x.sigmoid()),
    "square": torch.square,
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS_4D))
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_layout(op, layout):
    c, t = pair(LAYOUTS_4D[layout])
    f = UNARY[op]
    with NativeOnly():
        r = f(t)
    same_layout(r, f(c), f"{op} of {layout}")


BINARY = {
    "add": torch.add,
    "add_alpha": lambda a, b: torch.add(a, b, alpha=0.5),
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "maximum": torch.maximum,
    "atan2": torch.atan2,
    "lt": torch.lt,
    "eq": torch.eq,
    "pow": lambda a, b: a.abs() ** b,
    "remainder": torch.remainder,
    "hypot": torch.hypot,
    "logaddexp": torch.logaddexp,
    "copysign": torch.copysign,
    "where": lambda a, b: torch.where(a > 0, a, b),
    "clamp_t": lambda a, b: torch.clamp(a, min=b),
    "lerp": lambda a, b: torch.lerp(a, b, 0.3),
    "addcmul": lambda a, b: torch.addcmul(a, a, b, value=0.5),
    "xlogy": lambda a, b: torch.xlogy(a.abs(), b.abs()),
}

# Two inputs of one shape in mixed layouts: the first input's order decides,
# broadcast dims abstain, ties go to the next input.
def _ordered(*p):
    inv = [p.index(i) for i in range(len(p))]
    return lambda b: b.permute(*p).contiguous().permute(*inv)


SAME_SHAPE = {  # name: (base shape, view with shape (2, 3, 4, 5))
    "contiguous": ((2, 3, 4, 5), lambda b: b),
    "o1023": ((2, 3, 4, 5), _ordered(1, 0, 2, 3)),
    "o3210": ((2, 3, 4, 5), _ordered(3, 2, 1, 0)),
    "o2031": ((2, 3, 4, 5), _ordered(2, 0, 3, 1)),
    "channels_last": ((2, 3, 4, 5), LAYOUTS_4D["channels_last"]),
    "sliced": ((2, 3, 8, 5), lambda b: b[:, :, ::2]),
    "sliced_t": ((2, 5, 8, 3), lambda b: b[:, :, ::2].permute(0, 3, 2, 1)),
    "expanded": ((2, 3, 4, 5), lambda b: b[:, :1].expand(2, 3, 4, 5)),
}
MIXED = [
    ("contiguous", "o1023"), ("o1023", "contiguous"), ("o1023", "o3210"),
    ("channels_last", "contiguous"), ("contiguous", "channels_last"),
    ("channels_last", "channels_last"), ("o3210", "o3210"), ("o2031", "sliced_t"),
    ("expanded", "o3210"), ("sliced", "channels_last"), ("sliced_t", "o2031"),
]


@pytest.mark.parametrize("layouts", MIXED, ids=["-".join(m) for m in MIXED])
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_layout(op, layouts):
    (sa, la), (sb, lb) = SAME_SHAPE[layouts[0]], SAME_SHAPE[layouts[1]]
    (ca, ta), (cb, tb) = pair(la, shape=sa), pair(lb, shape=sb, seed=1)
    f = BINARY[op]
    with NativeOnly():
        r = f(ta, tb)
    same_layout(r, f(ca, cb), f"{op} of {layouts}")


# Broadcasting: operands of other shapes and ranks, 0-d tensors, size-1 dims.
BROADCAST = {
    "row": ((2, 3, 4, 5), (5,), lambda a, b: (a.permute(0, 3, 1, 2), b.view(1, 5, 1, 1))),
    "col_t": ((4, 3), (4, 1), lambda a, b: (a.t(), b.t())),
    "outer": ((3, 1), (1, 4), lambda a, b: (a, b)),
    "outer_t": ((3, 1), (4, 1), lambda a, b: (a, b.t())),
    "cl_bias": ((2, 3, 4, 5), (3,),
                lambda a, b: (a.contiguous(memory_format=torch.channels_last), b.view(1, 3, 1, 1))),
    "cl_bias_first": ((2, 3, 4, 5), (3,),
                      lambda a, b: (b.view(1, 3, 1, 1), a.contiguous(memory_format=torch.channels_last))),
    "zero_d": ((3, 4), (), lambda a, b: (a.t(), b)),
    "size1": ((3, 1, 4), (3, 1, 4), lambda a, b: (a.permute(2, 1, 0), b.permute(2, 1, 0))),
    "size1_mixed": ((3, 1, 4), (4, 1, 3), lambda a, b: (a.permute(2, 1, 0), b)),
    "expand_t": ((4, 1), (3, 4), lambda a, b: (a.expand(4, 3), b.t())),
    "empty": ((0, 3), (0, 3), lambda a, b: (a.t(), b.t())),
    "rank3": ((2, 3, 4), (4, 3, 2), lambda a, b: (a, b.permute(2, 1, 0))),
}


@pytest.mark.parametrize("case", sorted(BROADCAST))
@pytest.mark.parametrize("op", ["add", "mul", "where", "lt", "addcmul", "lerp"])
def test_broadcast_layout(op, case):
    sa, sb, views = BROADCAST[case]
    ca, cb = views(_base(sa), _base(sb, seed=1))
    ta, tb = views(_base(sa).to("tpu"), _base(sb, seed=1).to("tpu"))
    f = BINARY[op]
    same_layout(f(ta, tb), f(ca, cb), f"{op} of {case}")


def test_python_scalar_with_tensor():
    # A wrapped number is an operand of another shape: TensorIterator's
    # general path, not its same-shape fast path.
    c, t = pair(lambda b: b.as_strided((2, 3, 1), (1, 2, 7)), shape=(8,))
    same_layout(t + 1.5, c + 1.5)
    same_layout(t.exp(), c.exp())
    ct, tt = pair(lambda b: b.as_strided((2, 3, 1), (1, 2, 7)), shape=(8,), seed=3)
    same_layout(t + tt, c + ct)


def test_issue_reproducer():
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    c = x.t().exp()
    t = x.to("tpu").t().exp()
    assert t.stride() == c.stride() == (1, 3)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        c.view(6)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.view(6)
    # as_strided reads memory order: the same elements as CPU.
    same_layout(t.as_strided((6,), (1,)), c.as_strided((6,), (1,)))
    same_layout(t.as_strided((2, 2), (2, 1), 1), c.as_strided((2, 2), (2, 1), 1))
    same_layout(t.reshape(6), c.reshape(6))
    same_layout(t.contiguous(), c.contiguous())


def test_chained_ops_read_memory_order():
    c, t = pair(LAYOUTS_4D["p2031"])
    for f in (torch.exp, torch.sin, lambda x: x * x + 1, lambda x: x.sum(1)):
        c, t = f(c), f(t)
        same_layout(t, c)


def test_frexp_layout():
    c, t = pair(LAYOUTS_4D["t23"])
    (cm, ce), (tm, te) = torch.frexp(c), torch.frexp(t)
    same_layout(tm, cm)
    same_layout(te, ce)


@pytest.mark.parametrize("layout", ["o1023", "channels_last", "sliced_t"])
def test_in_place_and_out(layout):
    c, t = pair(SAME_SHAPE[layout][1], shape=SAME_SHAPE[layout][0])
    c2, t2 = pair(LAYOUTS_4D["contiguous"], seed=2)
    # In place keeps self's strides, whatever the result's layout.
    cc, tc = c2.clone(), t2.clone()
    cc.add_(c)
    tc.add_(t)
    same_layout(tc, cc)
    if layout != "sliced_t":
        cs, ts = c.clone(), t.clone()
        cs.mul_(c2)
        ts.mul_(t2)
        same_layout(ts, cs)
        cs.exp_()
        ts.exp_()
        same_layout(ts, cs)
    # out= of the right shape keeps its strides; a resized one takes the
    # result's.
    co, to = torch.empty_like(c2), torch.empty_like(t2)
    torch.exp(c, out=co)
    torch.exp(t, out=to)
    same_layout(to, co)
    co, to = torch.empty(0), torch.empty(0, device="tpu")
    torch.add(c, 1, out=co)
    torch.add(t, 1, out=to)
    same_layout(to, co)


@pytest.mark.parametrize("layout", ["t01", "rev", "channels_last", "sliced_t", "expanded"])
def test_copies_keep_layout(layout):
    c, t = pair(LAYOUTS_4D[layout])
    for f in (torch.clone, lambda x: x.to(torch.float64), lambda x: x.contiguous(),
              lambda x: x.contiguous(memory_format=torch.channels_last),
              lambda x: torch.empty_like(x).copy_(x), lambda x: x.cpu().to("tpu") if x.is_cpu
              else x.cpu()):
        r = f(t)
        if r.device.type == "cpu":
            r = r.to("tpu")
        same_layout(r, f(c) if f(c).device.type == "cpu" else f(c).cpu())


def test_autograd_grads_follow_layout():
    c, t = pair(LAYOUTS_4D["p2031"])
    c.requires_grad_()
    t = t.detach().requires_grad_()
    for x in (c, t):
        y = (F.gelu(x) * x.sigmoid() + F.silu(x)).exp()
        y.sum().backward()
    same_layout(t.grad, c.grad)


def test_random_permutations_match_cpu():
    # Every permutation of a rank-4 tensor against a contiguous and a
    # differently permuted operand.
    b = _base()
    for p in itertools.permutations(range(4)):
        for q in ((0, 1, 2, 3), (3, 1, 0, 2)):
            c1, c2 = b.permute(p), _base(seed=4).permute(q).contiguous().permute(
                [q.index(i) for i in range(4)]).permute(p)
            t1, t2 = b.to("tpu").permute(p), c2.to("tpu")
            assert t2.stride() == c2.stride()
            same_layout(t1 * t2, c1 * c2, f"{p} {q}")
            same_layout(torch.where(t1 > 0, t2, t1), torch.where(c1 > 0, c2, c1), f"{p} {q}")


# ---- channels_last through conv, batch norm, activations and pooling ---------

CL = torch.channels_last


def _cl_mods():
    return [torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.Conv2d(4, 4, 3, padding=1, bias=False),
            torch.nn.BatchNorm2d(4), torch.nn.GroupNorm(2, 4)]


@pytest.mark.parametrize("fmt", ["channels_last", "contiguous", "weights_cl"])
def test_channels_last_model_forward_and_backward(fmt):
    torch.manual_seed(0)
    mods = _cl_mods()
    mods_t = [copy.deepcopy(m).to("tpu") for m in mods]
    x = torch.randn(2, 3, 8, 8)
    if fmt == "channels_last":
        x = x.contiguous(memory_format=CL)
    if fmt == "weights_cl":
        for m in mods:
            m.to(memory_format=CL)
        for m in mods_t:
            m.to(memory_format=CL)
    xc = x.clone().requires_grad_()
    xt = x.to("tpu").requires_grad_()
    assert xt.stride() == xc.stride()
    conv, conv2, bn, gn = mods
    convt, conv2t, bnt, gnt = mods_t

    def run(x, conv, conv2, bn, gn):
        outs = []
        h = conv(x); outs.append(("conv", h))
        h = bn(h); outs.append(("bn", h))
        h = F.relu(h); outs.append(("relu", h))
        h = h + conv2(h); outs.append(("residual", h))
        h = F.gelu(h) + F.silu(h); outs.append(("gelu+silu", h))
        h = gn(h); outs.append(("gn", h))
        a = F.max_pool2d(h, 2); outs.append(("maxpool", a))
        b = F.avg_pool2d(h, 3, 1, 1); outs.append(("avgpool", b))
        c = F.adaptive_avg_pool2d(h, (3, 2)); outs.append(("adaptive_avg", c))
        d = F.adaptive_max_pool2d(h, 2); outs.append(("adaptive_max", d))
        loss = (a * a).sum() + (b.sin()).sum() + c.sum() + (d * 2).sum()
        return outs, loss

    oc, lc = run(xc, conv, conv2, bn, gn)
    with NativeOnly():
        ot, lt = run(xt, convt, conv2t, bnt, gnt)
    for (name, c), (_, t) in zip(oc, ot):
        c.retain_grad()
        t.retain_grad()
        same_layout(t, c, f"{fmt} {name}")
    lc.backward()
    with NativeOnly():
        lt.backward()
    for (name, c), (_, t) in zip(oc, ot):
        if c.grad is not None:
            assert t.grad.stride() == c.grad.stride(), f"{fmt} grad of {name}"
    same_layout(xt.grad, xc.grad, f"{fmt} input grad")
    for mc, mt in zip(mods, mods_t):
        for (n, pc), (_, pt) in zip(mc.named_parameters(), mt.named_parameters()):
            assert pt.grad.stride() == pc.grad.stride(), f"{fmt} grad of {n}"
            torch.testing.assert_close(pt.grad.cpu(), pc.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(bnt.running_mean.cpu(), bn.running_mean, **TOL)


def test_channels_last_3d_conv_and_pool():
    x = torch.randn(2, 3, 4, 6, 6).contiguous(memory_format=torch.channels_last_3d)
    w = torch.randn(4, 3, 3, 3, 3)
    c = F.max_pool3d(F.conv3d(x, w, padding=1), 2)
    t = F.max_pool3d(F.conv3d(x.to("tpu"), w.to("tpu"), padding=1), 2)
    same_layout(t, c)
    assert t.is_contiguous(memory_format=torch.channels_last_3d)


def test_compiled_graph_returns_cpu_strides():
    # A captured graph records each output's strides from the eager kernels
    # it traces, so it returns what eager (and CPU) return.
    def f(x, w):
        return torch.exp(x) * 2, F.relu(F.conv2d(x.permute(0, 3, 1, 2).contiguous(
            memory_format=CL), w))

    x = torch.randn(2, 6, 6, 3).permute(0, 2, 1, 3)
    w = torch.randn(4, 3, 3, 3)
    c = f(x, w)
    g = torch.compile(f, backend="tpu")
    for _ in range(2):  # the capture, then the cached graph
        t = g(x.to("tpu"), w.to("tpu"))
        for tt, cc in zip(t, c):
            same_layout(tt, cc)


# flip and sort/argsort write into empty_like(x) / x's densified strides on
# CPU; roll, cat, pad and interpolate into x's suggested memory format
# (channels_last stays, a permuted input gives a contiguous result); dropout
# in eval returns x.
SHAPE_OPS = {
    "flip0": lambda x: x.flip(0),
    "flip13": lambda x: x.flip(1, 3),
    "flip_none": lambda x: torch.flip(x, ()),
    "sort1": lambda x: torch.sort(x, 1)[0],
    "sort_idx3": lambda x: torch.sort(x, dim=-1, descending=True, stable=True)[1],
    "argsort2": lambda x: torch.argsort(x, 2),
    "argsort0_stable": lambda x: torch.argsort(x, dim=0, stable=True, descending=True),
    "roll": lambda x: x.roll(1, 0),
    "roll2": lambda x: x.roll((1, -2), (1, 3)),
    "roll_flat": lambda x: x.roll(3),
    "cat": lambda x: torch.cat([x, x]),
    "cat1": lambda x: torch.cat([x, x], 1),
    "pad": lambda x: F.pad(x, (1, 1)),
    "interpolate": lambda x: F.interpolate(x, scale_factor=2.0, mode="nearest"),
    "dropout_eval": lambda x: F.dropout(x, 0.5, training=False),
}


@pytest.mark.parametrize("layout", [k for k in LAYOUTS_4D if k != "expanded"])
@pytest.mark.parametrize("op", list(SHAPE_OPS))
def test_shape_op_layout_like_cpu(op, layout):
    c, t = pair(LAYOUTS_4D[layout])
    with NativeOnly():
        got = SHAPE_OPS[op](t)
    same_layout(got, SHAPE_OPS[op](c), f"{op} of {layout}")


def test_flip_sort_of_3d_permuted_and_sliced_like_cpu():
    # the fuzzer's reproducers
    x = torch.tensor([[[0.5], [1.0]], [[-2.0], [-0.75]]]).transpose(0, -1)
    same_layout(torch.argsort(x.to("tpu"), dim=1, stable=True, descending=True),
                torch.argsort(x, dim=1, stable=True, descending=True))
    y = torch.arange(24.0).view(2, 3, 4).permute(2, 0, 1)[::2]
    for f in (lambda v: v.flip(0), lambda v: v.sort(1)[0], lambda v: v.sort(2)[1]):
        same_layout(f(y.to("tpu")), f(y))


@pytest.mark.parametrize("layout", [k for k in LAYOUTS_4D if k not in ("expanded", "sliced", "sliced_t")])
def test_glu_and_prelu_forward_backward_layout_like_cpu(layout):
    # glu is a TensorIterator over self's two halves, prelu's backward an
    # elementwise kernel: CPU keeps self's memory order in both
    c, t = pair(LAYOUTS_4D[layout], shape=(2, 4, 6, 4))
    for dim in (1, 2, -1):
        same_layout(F.glu(t, dim), F.glu(c, dim), f"glu({dim}) of {layout}")
    w_c = torch.linspace(-0.5, 1.5, c.shape[1])
    outs = {}
    for name, x in (("cpu", c), ("tpu", t)):
        x = x.detach().requires_grad_()
        w = w_c.to(x.device).requires_grad_()
        y = F.prelu(x, w)
        g = torch.linspace(-1, 1, y.numel()).view(y.shape).to(x.device)
        outs[name] = (y,) + torch.autograd.grad(y, (x, w), g)
    for got, want, what in zip(outs["tpu"], outs["cpu"], ("prelu", "grad_input", "grad_weight")):
        same_layout(got, want, f"{what} of {layout}")
