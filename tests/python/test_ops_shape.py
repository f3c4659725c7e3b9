"""Shape ops against PyTorch's CPU kernels: cat and stack (dtypes,
promotion, legacy empty tensors, many pieces, devices, errors), tril/triu,
flip, roll, the constant/reflect/replicate pads and their backward,
channel_shuffle and repeat_interleave."""
import pytest
import torch
import torch.nn.functional as F
import torch_pjrt
from conftest import dtype_id
from conftest import make
from _op_check import CHECK_TOL, NativeOnly, check_close  # noqa: F401 (shared helpers)
import re
import warnings
from _op_check import CHECK_TOL, NativeOnly, check_close  # noqa: F401 (shared helpers)
from conftest import assert_bitwise_equal, make
from _op_check import NativeOnly, check_close

pytestmark = pytest.mark.usefixtures("no_leaks")


TOL = {
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
    torch.float32: dict(rtol=1e-5, atol=1e-6),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.complex64: dict(rtol=1e-5, atol=1e-6),
}


EXACT = dict(rtol=0, atol=0)


def check(actual, expected, tol=None):
    """actual (tpu) matches expected (cpu): device type, dtype, shape, values."""
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, f"{actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{tuple(actual.shape)} != {tuple(expected.shape)}"
    if tol is None:
        tol = TOL.get(expected.dtype, EXACT)
    torch.testing.assert_close(actual.detach().cpu(), expected.detach(), equal_nan=True, **tol)


class Fallbacks:
    """Records the CPU fallbacks taken inside the block whose op name starts
    with one of `prefixes` ("aten::clamp" covers "aten::clamp_min.out")."""

    def __init__(self, *prefixes):
        self.prefixes = prefixes
        self.seen = {}

    def __enter__(self):
        torch.tpu.synchronize()
        torch_pjrt.reset_fallbacks()
        return self

    def __exit__(self, *exc):
        torch.tpu.synchronize()
        self.seen = {k: v for k, v in torch_pjrt.fallbacks().items()
                     if k.startswith(self.prefixes)}
        return False

    def assert_native(self):
        assert not self.seen, f"ran on the CPU fallback (not native): {self.seen}"


def randn(shape, seed=0, dtype=torch.float32, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype)


def ints(shape, seed=0, lo=-5, hi=6, dtype=torch.int64):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi, shape, generator=g).to(dtype)


def bools(shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 2, shape, generator=g).bool()


def raises_like_cpu(fn, cpu_args, tpu_args, accept=()):
    """fn(*tpu_args) raises the same exception type as fn(*cpu_args), with
    the CPU message (first line) or one of `accept` in its message."""
    with pytest.raises(Exception) as cpu_exc:
        fn(*cpu_args)
    cpu_type = type(cpu_exc.value)
    cpu_msg = str(cpu_exc.value).splitlines()[0]
    cpu_exc.value.__traceback__ = None
    del cpu_exc
    try:
        r = fn(*tpu_args)
        torch.tpu.synchronize()
        del r
    except Exception as e:  # noqa: BLE001 - compared with CPU's below
        tpu_type, msg = type(e), str(e)
        e.__traceback__ = None
        del e
    else:
        pytest.fail(f"tpu did not raise; CPU raised {cpu_type.__name__}: {cpu_msg}")
    del tpu_args, cpu_args
    assert issubclass(tpu_type, cpu_type), (
        f"tpu raised {tpu_type.__name__}: {msg!r}; CPU raised {cpu_type.__name__}: {cpu_msg!r}")
    assert cpu_msg in msg or any(a in msg for a in accept), (
        f"tpu message {msg!r} lacks CPU's {cpu_msg!r}" + (f" or any of {accept}" if accept else ""))


def _mf_data(dtype, shape, seed):
    if dtype == torch.bool:
        return bools(shape, seed)
    if dtype.is_complex:
        return torch.complex(randn(shape, seed), randn(shape, seed + 1))
    if dtype.is_floating_point:
        return randn(shape, seed, dtype=dtype)
    return ints(shape, seed, lo=0, hi=50, dtype=dtype)


CAT_OPS = ("aten::cat",)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int32, torch.int64, torch.int8, torch.uint8,
                                   torch.bool, torch.complex64], ids=dtype_id)
@pytest.mark.parametrize("dim", [0, 1, -1], ids=str)
def test_cat(dtype, dim):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    shapes = [tuple(s if i != (dim % 3) else n for i, s in enumerate(sh))
              for sh, n in zip(shapes, (1, 2, 3))]
    xs = [_mf_data(dtype, s, seed=52 + i) for i, s in enumerate(shapes)]
    with Fallbacks(*CAT_OPS) as fb:
        r = torch.cat([x.to("tpu") for x in xs], dim)
        r2 = torch.concat([x.to("tpu") for x in xs], dim=dim)
    check(r, torch.cat(xs, dim), EXACT)
    check(r2, torch.cat(xs, dim), EXACT)
    fb.assert_native()


@pytest.mark.parametrize("dtypes", [(torch.int32, torch.float32), (torch.float32, torch.float64),
                                    (torch.float16, torch.bfloat16), (torch.bool, torch.uint8),
                                    (torch.int8, torch.uint8), (torch.int64, torch.bool),
                                    (torch.complex64, torch.float64),
                                    (torch.int32, torch.float16, torch.int64)],
                         ids=lambda ds: "+".join(dtype_id(d) for d in ds))
def test_cat_mixed_dtypes_promote(dtypes):
    xs = [_mf_data(d, (2, 3), seed=60 + i) for i, d in enumerate(dtypes)]
    with Fallbacks(*CAT_OPS) as fb:
        r = torch.cat([x.to("tpu") for x in xs], 0)
        r1 = torch.cat([x.to("tpu") for x in xs], 1)
    e = torch.cat(xs, 0)
    assert e.dtype == torch.result_type(xs[0], xs[1]) or len(xs) > 2
    check(r, e, EXACT)
    check(r1, torch.cat(xs, 1), EXACT)
    fb.assert_native()


def test_cat_legacy_empty_tensor():
    # A (0,) tensor is skipped whatever the other tensors' shapes (legacy);
    # it still takes part in type promotion, like CPU.
    x = randn((2, 3), seed=70)
    e0 = torch.empty(0)
    e64 = torch.empty(0, dtype=torch.float64)
    i = ints((3,), seed=71)
    with Fallbacks(*CAT_OPS) as fb:
        rs = [
            (torch.cat([x.to("tpu"), e0.to("tpu")], 0), torch.cat([x, e0], 0)),
            (torch.cat([e0.to("tpu"), x.to("tpu"), e0.to("tpu")], 1), torch.cat([e0, x, e0], 1)),
            (torch.cat([x.to("tpu"), e64.to("tpu")], 0), torch.cat([x, e64], 0)),
            (torch.cat([i.to("tpu"), e64.to("tpu")]), torch.cat([i, e64])),
            (torch.cat([e0.to("tpu"), e0.to("tpu")]), torch.cat([e0, e0])),
        ]
    assert rs[2][1].dtype == torch.float64
    for r, e in rs:
        check(r, e, EXACT)
    fb.assert_native()


def test_cat_zero_size_along_dim():
    x = randn((3, 4), seed=72)
    z0, z1 = torch.zeros((0, 4)), torch.zeros((3, 0))
    with Fallbacks(*CAT_OPS) as fb:
        rs = [
            (torch.cat([x.to("tpu"), z0.to("tpu")], 0), torch.cat([x, z0], 0)),
            (torch.cat([z0.to("tpu"), x.to("tpu"), z0.to("tpu")], 0), torch.cat([z0, x, z0], 0)),
            (torch.cat([z1.to("tpu"), x.to("tpu")], 1), torch.cat([z1, x], 1)),
            (torch.cat([z0.to("tpu"), z0.to("tpu")], 0), torch.cat([z0, z0], 0)),
            (torch.cat([z1.to("tpu"), z1.to("tpu")], 0), torch.cat([z1, z1], 0)),  # (6, 0)
        ]
    for r, e in rs:
        check(r, e, EXACT)
    fb.assert_native()


@pytest.mark.parametrize("n", [1, 63, 64, 65, 100, 200], ids=str)
def test_cat_many_tensors(n):
    xs = [torch.full((2, 1 + i % 3), float(i)) for i in range(n)]
    with Fallbacks(*CAT_OPS) as fb:
        r = torch.cat([x.to("tpu") for x in xs], 1)
        r0 = torch.cat([x.to("tpu").t() for x in xs], 0)
    check(r, torch.cat(xs, 1), EXACT)
    check(r0, torch.cat([x.t() for x in xs], 0), EXACT)
    fb.assert_native()


def test_cat_100_pieces_of_a_split():
    x = randn((100, 7), seed=73)
    t = x.to("tpu")
    with Fallbacks(*CAT_OPS) as fb:
        r = torch.cat(list(t.split(1, 0)), 0)
        r1 = torch.cat(list(t.t().split(1, 1)), 1)
    check(r, x, EXACT)
    check(r1, x.t(), EXACT)
    fb.assert_native()


def test_cat_noncontiguous_pieces():
    a, b = randn((4, 6), seed=74), randn((6, 4), seed=75)
    c = randn((3, 1), seed=76)
    ta, tb, tc = a.to("tpu"), b.to("tpu"), c.to("tpu")
    with Fallbacks(*CAT_OPS) as fb:
        rs = [
            (torch.cat([ta, tb.t()], 0), torch.cat([a, b.t()], 0)),
            (torch.cat([ta[::2], tb.t()[1::2]], 1), torch.cat([a[::2], b.t()[1::2]], 1)),
            (torch.cat([ta[:3, ::2], tc.expand(3, 5)], -1),
             torch.cat([a[:3, ::2], c.expand(3, 5)], -1)),
            (torch.cat([ta[:, 1], tb[2]], 0), torch.cat([a[:, 1], b[2]], 0)),
            (torch.cat([ta, ta], 0), torch.cat([a, a], 0)),   # the same tensor twice
        ]
    for r, e in rs:
        check(r, e, EXACT)
    fb.assert_native()


def test_cat_on_second_device():
    xs = [randn((2, 3), seed=77 + i) for i in range(3)]
    with Fallbacks(*CAT_OPS) as fb:
        r = torch.cat([x.to("tpu:1") for x in xs], 1)
        s = torch.stack([x.to("tpu:1") for x in xs])
    assert r.device == torch.device("tpu:1") and s.device == torch.device("tpu:1")
    check(r, torch.cat(xs, 1), EXACT)
    check(s, torch.stack(xs), EXACT)
    fb.assert_native()


def test_cat_feeds_autograd():
    a, b = randn((2, 3), seed=80), randn((4, 3), seed=81)
    w = randn((6, 3), seed=82)

    def grads(a, b, w):
        a = a.detach().clone().requires_grad_()
        b = b.detach().clone().requires_grad_()
        torch.cat([a, b], 0).mul(w).sum().backward()
        return a.grad, b.grad

    with Fallbacks(*CAT_OPS) as fb:
        ga, gb = grads(a.to("tpu"), b.to("tpu"), w.to("tpu"))
    ea, eb = grads(a, b, w)
    check(ga, ea, EXACT)
    check(gb, eb, EXACT)
    fb.assert_native()


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3], ids=str)
def test_stack(dim):
    xs = [randn((2, 3), seed=83 + i) for i in range(4)]
    with Fallbacks(*CAT_OPS) as fb:
        r = torch.stack([x.to("tpu") for x in xs], dim)
        r2 = torch.stack([x.to("tpu").t().t() for x in xs], dim=dim)
    check(r, torch.stack(xs, dim), EXACT)
    check(r2, torch.stack(xs, dim), EXACT)
    fb.assert_native()


def test_stack_variants():
    xs = [randn((3,), seed=90 + i) for i in range(3)]
    ts = [x.to("tpu") for x in xs]
    ss = [torch.tensor(float(i)) for i in range(5)]
    mixed = [ints((3,), seed=95), randn((3,), seed=96, dtype=torch.float64)]
    with Fallbacks(*CAT_OPS) as fb:
        rs = [
            (torch.stack(ts), torch.stack(xs)),
            (torch.stack([s.to("tpu") for s in ss]), torch.stack(ss)),     # 0-d -> 1-d
            (torch.stack([m.to("tpu") for m in mixed], 1), torch.stack(mixed, 1)),
            (torch.vstack(ts), torch.vstack(xs)),
            (torch.hstack(ts), torch.hstack(xs)),
            (torch.stack([t[::2] for t in ts]), torch.stack([x[::2] for x in xs])),
        ]
    for r, e in rs:
        check(r, e, EXACT)
    fb.assert_native()


def test_cat_mismatched_shapes_raise_like_cpu():
    a, b = torch.zeros(2, 4), torch.zeros(3, 3)
    raises_like_cpu(lambda x, y: torch.cat([x, y], 0), (a, b), (a.to("tpu"), b.to("tpu")))


def test_cat_mismatched_ndim_raises_like_cpu():
    a, b = torch.zeros(2, 3), torch.zeros(2, 3, 4)
    raises_like_cpu(lambda x, y: torch.cat([x, y], 0), (a, b), (a.to("tpu"), b.to("tpu")))


def test_cat_zero_dim_raises_like_cpu():
    s = torch.tensor(1.0)
    raises_like_cpu(lambda x: torch.cat([x, x]), (s,), (s.to("tpu"),))


def test_cat_bad_dim_and_empty_list_raise_like_cpu():
    a = torch.zeros(2, 3)
    raises_like_cpu(lambda x: torch.cat([x, x], 2), (a,), (a.to("tpu"),))
    raises_like_cpu(lambda x: torch.cat([x, x], -3), (a,), (a.to("tpu"),))
    raises_like_cpu(lambda x: torch.cat([], 0), (a,), (a.to("tpu"),))


def test_stack_mismatched_shapes_raise_like_cpu():
    a, b = torch.zeros(2, 3), torch.zeros(1, 3)
    raises_like_cpu(lambda x, y: torch.stack([x, y]), (a, b), (a.to("tpu"), b.to("tpu")))
    raises_like_cpu(lambda x, y: torch.stack([x, x], 3), (a, b), (a.to("tpu"), b.to("tpu")))


@pytest.mark.parametrize("devs", [("tpu:0", "tpu:1"), ("tpu:1", "tpu:0"),
                                  ("tpu:0", "tpu:0", "tpu:1")], ids=lambda d: "+".join(d))
def test_cat_across_devices_raises(devs):
    xs = [torch.ones(2, 3, device=d) for d in devs]
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.cat(xs, 0)
        torch.tpu.synchronize()
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.stack(xs, 0)
        torch.tpu.synchronize()


def test_cat_tpu_and_cpu_raises():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.cat([torch.ones(2, 3, device="tpu"), torch.ones(2, 3)], 0)
        torch.tpu.synchronize()


DEV = "tpu"


def t(x):
    return x.to(DEV)


def same_error(fn, cpu_args, exc=RuntimeError):
    """fn raises the same type and first line on tpu as on CPU."""
    with pytest.raises(exc) as cpu:
        fn(*cpu_args)
    with pytest.raises(exc) as tpu:
        fn(*[t(a) if isinstance(a, torch.Tensor) else a for a in cpu_args])
    assert str(tpu.value).split("\n")[0] == str(cpu.value).split("\n")[0]


def test_repeat_interleave():
    x = make(torch.float32, (3, 4), specials=False)
    r = torch.tensor([2, 0, 3])
    with NativeOnly():
        check_close(torch.repeat_interleave(t(r)), torch.repeat_interleave(r))
        r32 = r.int()
        check_close(torch.repeat_interleave(t(r32), output_size=5), torch.repeat_interleave(r32))
        check_close(torch.repeat_interleave(t(x), t(r), dim=0), torch.repeat_interleave(x, r, dim=0))
        check_close(torch.repeat_interleave(t(x), 2, dim=1), torch.repeat_interleave(x, 2, dim=1))
        check_close(torch.repeat_interleave(t(torch.zeros(0, dtype=torch.long))),
              torch.repeat_interleave(torch.zeros(0, dtype=torch.long)))
    same_error(torch.repeat_interleave, (torch.tensor([1, -1]),))
    same_error(torch.repeat_interleave, (torch.tensor([1.0, 2.0]),), NotImplementedError)
    same_error(torch.repeat_interleave, (torch.tensor([[1, 2]]),))
    same_error(lambda a: torch.repeat_interleave(a, output_size=5), (torch.tensor([1, 2]),))


TOL_nn2 = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-9, atol=1e-9),
       torch.bfloat16: dict(rtol=2e-2, atol=2e-2), torch.float16: dict(rtol=2e-3, atol=2e-3)}


def check_nn2(fn, *inputs, dtype=torch.float32, grad=True, tol=None, seed=0):
    """fn on CPU and on tpu (inputs that are float tensors get gradients):
    outputs, then gradients for a random cotangent, compared; no fallback."""
    tol = tol or TOL_nn2[dtype]
    cpu = [x.detach().clone().requires_grad_(grad and x.is_floating_point())
           if isinstance(x, torch.Tensor) else x for x in inputs]
    dev = [x.detach().to("tpu").requires_grad_(grad and x.is_floating_point())
           if isinstance(x, torch.Tensor) else x for x in inputs]
    torch.tpu.synchronize()
    torch_pjrt.reset_fallbacks()
    oc, od = fn(*cpu), fn(*dev)
    oc = oc if isinstance(oc, tuple) else (oc,)
    od = od if isinstance(od, tuple) else (od,)
    for a, e in zip(od, oc):
        torch.testing.assert_close(a.cpu(), e, equal_nan=True, **tol)
    if grad:
        g = torch.Generator().manual_seed(seed)
        cot = torch.randn(oc[0].shape, generator=g, dtype=torch.float32).to(oc[0].dtype)
        (oc[0] * cot).sum().backward()
        (od[0] * cot.to("tpu")).sum().backward()
        for xc, xd in zip(cpu, dev):
            if isinstance(xc, torch.Tensor) and xc.requires_grad:
                torch.testing.assert_close(xd.grad.cpu(), xc.grad, equal_nan=True, **tol)
    torch.tpu.synchronize()
    assert torch_pjrt.fallbacks() == {}, torch_pjrt.fallbacks()
    return od


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_pad_backward(mode):
    torch.manual_seed(0)
    check_nn2(lambda x: F.pad(x, (2, 1), mode=mode), torch.randn(2, 3, 5))
    check_nn2(lambda x: F.pad(x, (1, 3, 2, 0), mode=mode), torch.randn(2, 4, 5).transpose(1, 2))
    check_nn2(lambda x: F.pad(x, (1, 2, 0, 1, 2, 1), mode=mode), torch.randn(1, 2, 3, 4, 5))
    check_nn2(lambda x: F.pad(x, (2, 2), mode=mode), torch.randn(3, 6).bfloat16(), dtype=torch.bfloat16)


def test_replicate_negative_pad_backward_and_grad_input_out():
    torch.manual_seed(1)
    check_nn2(lambda x: F.pad(x, (-1, 2, 3, -2), mode="replicate"), torch.randn(2, 5, 6))
    g, x = torch.randn(2, 3, 8), torch.randn(2, 3, 5)
    exp = torch.ops.aten.reflection_pad1d_backward(g, x, [2, 1])
    out = torch.empty(0, device="tpu")
    torch_pjrt.reset_fallbacks()
    r = torch.ops.aten.reflection_pad1d_backward.grad_input(g.to("tpu"), x.to("tpu"), [2, 1],
                                                             grad_input=out)
    assert r is out
    torch.testing.assert_close(out.cpu(), exp)
    assert torch_pjrt.fallbacks() == {}


def test_channel_shuffle():
    x = torch.arange(2 * 6 * 3 * 2, dtype=torch.float32).view(2, 6, 3, 2)
    check_nn2(lambda x: F.channel_shuffle(x, 3), x)
    check_nn2(lambda x: F.channel_shuffle(x, 2), x.transpose(2, 3))
    xi = torch.arange(24).view(1, 12, 2)
    torch.testing.assert_close(F.channel_shuffle(xi.to("tpu"), 4).cpu(), F.channel_shuffle(xi, 4))


TOL_create = {
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=8e-3, atol=8e-3),
    torch.float32: dict(rtol=1.3e-6, atol=1e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
}


def check_create(actual, expected, tol=TOL_create):
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, f"{actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{tuple(actual.shape)} != {tuple(expected.shape)}"
    t = tol.get(expected.dtype, dict(rtol=0, atol=0))
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, **t)


def native(f, *args, tol=TOL_create):
    """f(*args, device) on tpu matches f(*args, 'cpu'), with no fallback."""
    expected = f(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args], "cpu")
    targs = [a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args]
    torch_pjrt.reset_fallbacks()
    actual = f(*targs, "tpu")
    fb = torch_pjrt.fallbacks()
    check_create(actual, expected, tol)
    assert fb == {}, f"ran on the CPU (fallback): {fb}"
    return actual


def raises_like_cpu_create(f, *args):
    with pytest.raises(Exception) as cpu_err:
        f(*args, "cpu")
    with pytest.raises(type(cpu_err.value)) as tpu_err:
        r = f(*[a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args], "tpu")
        if isinstance(r, torch.Tensor):
            r.cpu()
    first = str(cpu_err.value).splitlines()[0]
    assert re.search(re.escape(first), str(tpu_err.value)), (str(tpu_err.value), first)


def rand(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if not dtype.is_floating_point:
        return torch.randint(-50, 50, shape, generator=g).to(dtype)
    return torch.randn(shape, generator=g).to(dtype)


@pytest.mark.parametrize("fn", [torch.tril, torch.triu], ids=["tril", "triu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool],
                         ids=dtype_id)
def test_tril_triu(fn, dtype):
    x = rand((2, 4, 5), dtype)
    for k in (0, 1, -2, 7, -9):
        native(lambda a, dev: fn(a, k), x)
    native(lambda a, dev: fn(a.transpose(1, 2), 1), x)
    name = fn.__name__
    native(lambda a, dev: getattr(a, name + "_")(-1), x)
    native(lambda a, dev: (getattr(a[0], name + "_")(1), a)[1], x)  # in place on a view
    native(lambda a, dev: fn(a, 0, out=torch.empty(0, dtype=dtype, device=dev)), x)
    raises_like_cpu_create(lambda a, dev: fn(a), rand((4,), dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool], ids=dtype_id)
def test_flip_roll(dtype):
    x = rand((3, 4, 5), dtype)
    for dims in ((0,), (-1,), (0, 2), (), (2, 1, 0)):
        native(lambda a, dev: torch.flip(a, dims), x)
    native(lambda a, dev: a.transpose(0, 2).flip(0), x)
    native(lambda a, dev: torch.fliplr(a), x)
    native(lambda a, dev: torch.flipud(a), x)
    for shifts, dims in ((1, 0), (-2, 2), (7, 1), ((1, 2), (0, 1)), (3, None), (-13, None),
                         ((0, 5), (2, 1))):
        native(lambda a, dev: torch.roll(a, shifts, dims), x)
    native(lambda a, dev: a.t().roll(1, 0), rand((4, 5), dtype))
    raises_like_cpu_create(lambda a, dev: torch.flip(a, (0, 0)), x)
    raises_like_cpu_create(lambda a, dev: torch.flip(a, (3,)), x)
    raises_like_cpu_create(lambda a, dev: torch.roll(a, (1, 2), (0,)), x)
    raises_like_cpu_create(lambda a, dev: torch.roll(a, (1, 2)), x)
    raises_like_cpu_create(lambda a, dev: torch.roll(a, 1, 5), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=dtype_id)
def test_constant_pad(dtype):
    x = rand((2, 3, 4), dtype)
    for pad, value in (((1, 2), 0), ((1, 1, 2, 0), 3), ((0, 0, 0, 0, 1, 1), -1),
                       ((-1, 2), 0), ((-1, -1, 1, 0), 5)):
        native(lambda a, dev: F.pad(a, pad, value=value), x)
    native(lambda a, dev: F.pad(a.transpose(1, 2), (1, 1)), x)
    native(lambda a, dev: torch.constant_pad_nd(a, (2, 2), 1), x)
    raises_like_cpu_create(lambda a, dev: F.pad(a, (1, 2, 3)), x)
    raises_like_cpu_create(lambda a, dev: F.pad(a, (1,) * 8), x)
    raises_like_cpu_create(lambda a, dev: F.pad(a, (-3, -2)), x)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_edge_pad(mode):
    x1, x2, x3 = rand((2, 3, 6)), rand((2, 3, 5, 6)), rand((1, 2, 3, 4, 5))
    native(lambda a, dev: F.pad(a, (2, 3), mode=mode), x1)
    native(lambda a, dev: F.pad(a, (1, 2, 3, 0), mode=mode), x2)
    native(lambda a, dev: F.pad(a, (1, 0, 2, 2, 1, 1), mode=mode), x3)
    native(lambda a, dev: F.pad(a.transpose(2, 3), (1, 1, 1, 1), mode=mode), x2)
    native(lambda a, dev: F.pad(a, (1, 2), mode=mode), rand((3, 5)))  # unbatched
    native(lambda a, dev: F.pad(a, (2, 1, 1, 1), mode=mode), rand((2, 3, 5, 6), torch.bfloat16))
    if mode == "reflect":
        raises_like_cpu_create(lambda a, dev: F.pad(a, (6, 1), mode=mode), x1)
