"""In-place and out= forms of the pointwise ops: on contiguous tensors and
on views, mixed dtypes, CPU's refusals (casts, broadcasting into a smaller
tensor, overlap), and out= of the right shape, resized, a view, another
dtype or device."""
import warnings

import pytest
import torch
import torch_pjrt

from conftest import dtype_id
from _pointwise_check import (
    NAN, bdata, check, cpu_fallbacks_of, fdata, idata, raises_like_cpu, same)

pytestmark = pytest.mark.usefixtures("no_leaks")


# ---- in-place ---------------------------------------------------------------------

INPLACE = {
    "add_": ("aten::add", torch.Tensor.add_),
    "sub_": ("aten::sub", torch.Tensor.sub_),
    "mul_": ("aten::mul", torch.Tensor.mul_),
    "div_": ("aten::div", torch.Tensor.div_),
}
IP = pytest.mark.parametrize("op", list(INPLACE))


@IP
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int32,
                                   torch.int64, torch.complex64], ids=dtype_id)
def test_inplace_contiguous(op, dtype):
    aten, m = INPLACE[op]
    if op == "div_" and not (dtype.is_floating_point or dtype.is_complex):
        return  # int.div_ is rejected, see test_inplace_int_rejects_float_result
    x, y = bdata(dtype, (4, 5), 70, zeros=False), bdata(dtype, (4, 5), 71, zeros=False)

    def tensor_form(a, b):
        r = m(a, b)
        assert r is a
        return a
    same(aten, tensor_form, x, y)
    same(aten, lambda a: m(a, 3), x)
    same(aten, lambda a: m(a, -2), x)
    if dtype.is_floating_point or dtype.is_complex:
        same(aten, lambda a: m(a, 0.5), x)
    same(aten, lambda a, b: m(a, b[1]), x, y)                    # broadcast row
    same(aten, lambda a, b: m(a, b[:, :1]), x, y)                # broadcast column
    same(aten, lambda a, b: m(a, b.t().t()[::1]), x, y)
    same(aten, lambda a: m(a, a), x)                             # fully aliased operand
    if op in ("add_", "sub_"):
        same(aten, lambda a, b: m(a, b, alpha=2), x, y)


VIEWS = {
    "cols": lambda a: a[:, 1:3],
    "t": lambda a: a.t(),
    "rows_step": lambda a: a[::2],
    "row": lambda a: a[1],
    "col_step": lambda a: a[:, ::2],
    "t_slice": lambda a: a.t()[1:4],
    "flat_slice": lambda a: a.view(-1)[3:11],
    "diag_strided": lambda a: a.as_strided((3,), (7,), 1),
}


@IP
@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("other", ["scalar", "tensor"])
def test_inplace_on_view(op, view, other):
    """x[:, 1:3].add_(1), x.t().mul_(2), x[::2].sub_(y), ...: the whole base
    afterwards, and aliases of the base see the write."""
    aten, m = INPLACE[op]
    v = VIEWS[view]
    x0 = fdata(torch.float32, (6, 6), 0.5, 4, 72, (NAN,))
    vshape = v(x0).shape
    y0 = fdata(torch.float32, vshape, 0.5, 4, 73)
    operand = (lambda t: 2.5) if other == "scalar" else (lambda t: t)

    e = x0.clone()
    ealias = e.view(-1)
    m(v(e), operand(y0))

    x = x0.to("tpu")
    y = y0.to("tpu")
    alias_flat = x.view(-1)
    alias_t = x.t()
    alias_tail = x[2:]
    ver = x._version
    torch_pjrt.reset_fallbacks()
    r = m(v(x), operand(y))
    fb = cpu_fallbacks_of([aten])
    check(x, e)
    check(r, v(e))
    check(alias_flat, ealias)
    check(alias_t, e.t())
    check(alias_tail, e[2:])
    assert x._version > ver, "version counter not bumped by an in-place write"
    assert not fb, f"ran on the CPU (fallback), not natively: {fb}"


@IP
def test_inplace_int_and_broadcast_view(op):
    aten, m = INPLACE[op]
    dt = torch.float32 if op == "div_" else torch.int32
    x0 = bdata(dt, (4, 6), 74, zeros=False)
    y0 = bdata(dt, (6,), 75, zeros=False)
    if op == "div_":
        y0 = y0.abs() + 1

    def f(a, b):
        m(a[1:3, ::2], b[::2])
        m(a.t()[::3], 2)
        return a
    same(aten, f, x0, y0)


@IP
def test_inplace_mixed_dtype_operand(op):
    aten, m = INPLACE[op]
    x = fdata(torch.float32, (3, 4), 0.5, 4, 76)
    same(aten, lambda a, b: m(a, b), x, idata(torch.int64, (3, 4), 1, 9, 77))
    same(aten, lambda a, b: m(a, b), x, fdata(torch.float64, (4,), 0.5, 4, 78))
    same(aten, lambda a, b: m(a, b), x, fdata(torch.float16, (3, 1), 0.5, 4, 79))
    same(aten, lambda a: m(a, torch.tensor(1.5)), x)             # 0-d CPU tensor
    same(aten, lambda a: m(a, torch.tensor(3, device=a.device)), x)


@IP
def test_inplace_zero_dim_and_empty(op):
    aten, m = INPLACE[op]
    same(aten, lambda a: m(a, 2), torch.tensor(3.5))
    same(aten, lambda a, b: m(a, b), torch.tensor(3.5), torch.tensor(-1.25))
    same(aten, lambda a: m(a, 2), torch.empty(0, 3))
    same(aten, lambda a, b: m(a, b), torch.empty(2, 0), torch.empty(1, 0))


def test_inplace_int_rejects_float_result():
    a = torch.arange(4)
    raises_like_cpu(lambda t: t.add_(1.5), a, match="can't be cast")
    raises_like_cpu(lambda t: t.add_(torch.ones(4, device=t.device)), a, match="can't be cast")
    raises_like_cpu(lambda t: t.sub_(0.5), a, match="can't be cast")
    raises_like_cpu(lambda t: t.mul_(0.5), a, match="can't be cast")
    raises_like_cpu(lambda t: t.div_(2), a, match="can't be cast")
    raises_like_cpu(lambda t: t[1:].div_(t[1:]), a, match="can't be cast")
    raises_like_cpu(lambda t: t.float().add_(1j), a, match="can't be cast")


def test_inplace_int_rejected_leaves_tensor_unchanged():
    a0 = torch.arange(6).view(2, 3)
    a = a0.to("tpu")
    with pytest.raises(RuntimeError, match="can't be cast"):
        a.add_(1.5)
    check(a, a0)


def test_inplace_broadcast_to_bigger_rejected_like_cpu():
    # self cannot be broadcast to the operand's shape
    raises_like_cpu(lambda a, b: a.add_(b), torch.ones(3), torch.ones(2, 3))


def test_inplace_overlapping_rejected_like_cpu():
    raises_like_cpu(lambda a: a[1:].add_(a[:-1]), torch.arange(5.0),
                    match="single memory location")
    raises_like_cpu(lambda a: a[:1].expand(3, 4).mul_(2), torch.ones(3, 4),
                    match="single memory location")


def test_inplace_chain_on_same_view():
    x0 = fdata(torch.float32, (5, 5), 0.5, 4, 80)

    def f(a):
        v = a[1:4, 1:4]
        v.add_(1).mul_(3).sub_(a[0, 1:4]).div_(2)
        a.t()[0].mul_(-1)
        return a
    same(("aten::add", "aten::mul", "aten::sub", "aten::div"), f, x0)


# ---- out= ---------------------------------------------------------------------

OUT = {
    "add": ("aten::add", torch.add),
    "mul": ("aten::mul", torch.mul),
    "sub": ("aten::sub", torch.sub),
    "div": ("aten::div", torch.div),
}
OP_OUT = pytest.mark.parametrize("op", list(OUT))


def _out_operands(seed):
    return fdata(torch.float32, (3, 4), 0.5, 4, seed), fdata(torch.float32, (3, 4), 0.5, 4, seed + 1)


@OP_OUT
def test_out_right_shape(op):
    aten, f = OUT[op]
    a, b = _out_operands(90)

    def g(x, y):
        o = torch.empty(3, 4, device=x.device)
        r = f(x, y, out=o)
        assert r.data_ptr() == o.data_ptr()
        return o
    same(aten, g, a, b)
    same(aten, lambda x: f(x, 2, out=torch.zeros_like(x)), a)
    same(aten, lambda x, y: f(x, y[0], out=torch.zeros_like(x)), a, b)   # broadcast
    same(aten, lambda x, y: f(x.t(), y.t(), out=torch.zeros(4, 3, device=x.device)), a, b)


def _resize_warned(w):
    return any("resized" in str(x.message) for x in w)


@OP_OUT
@pytest.mark.parametrize("oshape", [(5,), (0,), (2, 2, 3), (4, 3)], ids=str)
def test_out_wrong_shape_is_resized(op, oshape):
    aten, f = OUT[op]
    a, b = _out_operands(91)
    with warnings.catch_warnings(record=True) as wc:
        warnings.simplefilter("always")
        oc = torch.zeros(oshape)
        f(a, b, out=oc)
    ot = torch.zeros(oshape, device="tpu")
    ta, tb = a.to("tpu"), b.to("tpu")
    torch_pjrt.reset_fallbacks()
    with warnings.catch_warnings(record=True) as wt:
        warnings.simplefilter("always")
        r = f(ta, tb, out=ot)
    fb = cpu_fallbacks_of([aten])
    assert r.data_ptr() == ot.data_ptr()
    check(ot, oc)
    assert _resize_warned(wt) == _resize_warned(wc), (
        [str(x.message) for x in wt], [str(x.message) for x in wc])
    assert not fb, f"ran on the CPU (fallback), not natively: {fb}"


OUT_VIEWS = {
    "rows": (lambda base: base[1:4], (6, 4)),
    "cols": (lambda base: base[:, 2:6], (3, 7)),
    "t": (lambda base: base.t(), (4, 3)),
    "step": (lambda base: base[::2, 1::2], (5, 8)),
}


@OP_OUT
@pytest.mark.parametrize("view", list(OUT_VIEWS))
def test_out_is_view(op, view):
    """out= a view of a bigger tpu tensor: the view gets the result, the rest
    of the base is unchanged."""
    aten, f = OUT[op]
    v, bshape = OUT_VIEWS[view]
    a, b = _out_operands(92)
    base0 = fdata(torch.float32, bshape, -9, -5, 93)

    def g(x, y, base):
        alias = base.view(-1)
        o = v(base)
        r = f(x, y, out=o)
        assert r.data_ptr() == o.data_ptr()
        assert r.shape == (3, 4) and r.stride() == o.stride()
        return alias
    same(aten, g, a, b, base0)


@OP_OUT
def test_out_dtype(op):
    aten, f = OUT[op]
    a, b = _out_operands(94)
    # float32 result written into a float64 out
    same(aten, lambda x, y: f(x, y, out=torch.zeros(3, 4, dtype=torch.float64, device=x.device)),
         a, b)
    ai, bi = idata(torch.int32, (3, 4), 1, 9, 95), idata(torch.int32, (3, 4), 1, 9, 96)
    if op == "div":
        raises_like_cpu(lambda x, y: f(x, y, out=torch.zeros(3, 4, dtype=torch.int32,
                                                             device=x.device)),
                        ai, bi, match="can't be cast")
    else:
        # int result into a float out is fine
        same(aten, lambda x, y: f(x, y, out=torch.zeros(3, 4, device=x.device)), ai, bi)
    raises_like_cpu(lambda x, y: f(x, y, out=torch.zeros(3, 4, dtype=torch.int64,
                                                         device=x.device)),
                    a, b, match="can't be cast")


@OP_OUT
def test_out_aliases_input(op):
    aten, f = OUT[op]
    a, b = _out_operands(97)
    same(aten, lambda x, y: f(x, y, out=x), a, b)
    same(aten, lambda x, y: f(x, y, out=y), a, b)


def test_out_on_other_device_rejected():
    a = torch.ones(3, device="tpu:0")
    o = torch.empty(3, device="tpu:1")
    with pytest.raises(RuntimeError):
        torch.add(a, a, out=o)
        o.cpu()
