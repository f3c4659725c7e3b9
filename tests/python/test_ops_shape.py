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
from test_ops_activation import Fallbacks, TOL, check, ints, raises_like_cpu, randn  # noqa: F401 (shared helpers)
from test_ops_create import TOL as TOL_create, check as check_create, native, raises_like_cpu as raises_like_cpu_create, rand  # noqa: F401 (shared helpers)
from test_ops_distance import check as check_grads  # noqa: F401 (shared helpers)
from test_ops_index import same_error  # noqa: F401 (shared helpers)
from test_ops_pointwise_clamp_fill import _mf_data, bools  # noqa: F401 (shared helpers)

pytestmark = pytest.mark.usefixtures("no_leaks")


EXACT = dict(rtol=0, atol=0)


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


GRAD_TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-9, atol=1e-9),
       torch.bfloat16: dict(rtol=2e-2, atol=2e-2), torch.float16: dict(rtol=2e-3, atol=2e-3)}


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_pad_backward(mode):
    torch.manual_seed(0)
    check_grads(lambda x: F.pad(x, (2, 1), mode=mode), torch.randn(2, 3, 5))
    check_grads(lambda x: F.pad(x, (1, 3, 2, 0), mode=mode), torch.randn(2, 4, 5).transpose(1, 2))
    check_grads(lambda x: F.pad(x, (1, 2, 0, 1, 2, 1), mode=mode), torch.randn(1, 2, 3, 4, 5))
    check_grads(lambda x: F.pad(x, (2, 2), mode=mode), torch.randn(3, 6).bfloat16(), dtype=torch.bfloat16)


def test_replicate_negative_pad_backward_and_grad_input_out():
    torch.manual_seed(1)
    check_grads(lambda x: F.pad(x, (-1, 2, 3, -2), mode="replicate"), torch.randn(2, 5, 6))
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
    check_grads(lambda x: F.channel_shuffle(x, 3), x)
    check_grads(lambda x: F.channel_shuffle(x, 2), x.transpose(2, 3))
    xi = torch.arange(24).view(1, 12, 2)
    torch.testing.assert_close(F.channel_shuffle(xi.to("tpu"), 4).cpu(), F.channel_shuffle(xi, 4))


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


def test_cat_out_overlapping_an_input_raises_like_cpu():
    for make_out in (lambda x: x, lambda x: x[:1], lambda x: x.view(-1)):
        x = torch.tensor([[-0.75], [0.5]])
        with pytest.raises(RuntimeError) as cpu:
            torch.cat([x, x], out=make_out(x))
        y = t(torch.tensor([[-0.75], [0.5]]))
        with pytest.raises(RuntimeError) as tpu:
            torch.cat([y, y], out=make_out(y))
        assert str(tpu.value).splitlines()[0] == str(cpu.value).splitlines()[0]
        torch.testing.assert_close(y.cpu(), torch.tensor([[-0.75], [0.5]]))
    # a separate out still works
    o = t(torch.empty(0))
    torch.testing.assert_close(torch.cat([y, y], out=o).cpu(), torch.cat([x, x]))
