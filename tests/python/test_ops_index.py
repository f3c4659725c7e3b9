"""index_select and embedding (forward and backward) against the CPU, run
natively, with PyTorch's errors for bad indices; index_reduce, put_ and
take; and (below) indexing by tensors: gather, scatter, scatter_add,
scatter_reduce, advanced indexing, index_add/index_copy/index_fill,
masked_select/masked_scatter, nonzero."""
import copy

import pytest
import torch

import torch_pjrt
from conftest import make
from _op_check import CHECK_TOL, NativeOnly, check_close, same_as_cpu  # noqa: F401 (shared helpers)

pytestmark = pytest.mark.usefixtures("no_leaks")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool,
                                   torch.complex64], ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32], ids=str)
def test_index_select_matches_cpu(dtype, dim, index_dtype):
    x = (torch.randn(4, 5, 3) * 10).to(dtype)
    idx = torch.tensor([2, 0, 2, 1], dtype=index_dtype)
    torch_pjrt.reset_fallbacks()
    got = x.to("tpu").index_select(dim, idx.to("tpu")).cpu()
    assert torch.equal(got, x.index_select(dim, idx))
    assert not [k for k in torch_pjrt.fallbacks() if k.startswith("aten::index_select")]


def test_index_select_views_scalars_and_empty():
    x = torch.randn(6, 4)
    idx = torch.tensor([3, 1])
    assert torch.equal(x.t().to("tpu").t().index_select(0, idx.to("tpu")).cpu(),
                       x.index_select(0, idx))
    assert torch.equal(x.to("tpu")[::2].index_select(1, idx.to("tpu")).cpu(),
                       x[::2].index_select(1, idx))
    assert torch.equal(x.to("tpu").index_select(0, torch.tensor(4).to("tpu")).cpu(),
                       x.index_select(0, torch.tensor(4)))
    e = torch.tensor([], dtype=torch.int64)
    assert x.to("tpu").index_select(0, e.to("tpu")).shape == x.index_select(0, e).shape


def test_index_select_out_of_range_raises_like_cpu():
    x = torch.randn(3, 2)
    for bad in ([3], [-1]):
        with pytest.raises(IndexError, match="index out of range in self"):
            x.index_select(0, torch.tensor(bad))
        with pytest.raises(IndexError, match="index out of range in self"):
            x.to("tpu").index_select(0, torch.tensor(bad).to("tpu"))
    with pytest.raises(RuntimeError, match="int32 or int64"):
        x.to("tpu").index_select(0, torch.tensor([0.0]).to("tpu"))


@pytest.mark.parametrize("padding_idx", [None, 1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_embedding_forward_backward(padding_idx, dtype):
    torch.manual_seed(0)
    e = torch.nn.Embedding(10, 6, padding_idx=padding_idx, dtype=dtype)
    et = copy.deepcopy(e).to("tpu")
    idx = torch.tensor([[0, 1, 3, 3], [9, 1, 3, 0]])
    g = torch.randn(2, 4, 6, dtype=dtype)
    torch_pjrt.reset_fallbacks()
    yt = et(idx.to("tpu"))
    yc = e(idx)
    torch.testing.assert_close(yt.cpu(), yc, rtol=0, atol=0)
    (yt * g.to("tpu")).sum().backward()
    (yc * g).sum().backward()
    torch.testing.assert_close(et.weight.grad.cpu(), e.weight.grad, rtol=1e-6, atol=1e-6)
    assert torch_pjrt.fallbacks() == {}, torch_pjrt.fallbacks()


def test_embedding_scale_grad_by_freq_is_correct_and_reported():
    e = torch.nn.Embedding(5, 3, scale_grad_by_freq=True)
    et = copy.deepcopy(e).to("tpu")
    idx = torch.tensor([0, 0, 2, 4, 4, 4])
    e(idx).sum().backward()
    torch_pjrt.reset_fallbacks()
    et(idx.to("tpu")).sum().backward()
    torch.testing.assert_close(et.weight.grad.cpu(), e.weight.grad)
    assert torch_pjrt.fallbacks().get("aten::embedding_dense_backward") == 1


def test_embedding_out_of_range_raises_like_cpu():
    e = torch.nn.Embedding(4, 2).to("tpu")
    with pytest.raises(IndexError, match="index out of range in self"):
        e(torch.tensor([4]).to("tpu"))


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


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    x = make(torch.float32, (5, 3), specials=False) / 50
    src = make(torch.float32, (4, 3), seed=1, specials=False) / 50
    idx = torch.tensor([0, 4, 0, 2])
    with NativeOnly():
        check_close(torch.index_reduce(t(x), 0, t(idx), t(src), reduce, include_self=include_self),
              x.index_reduce(0, idx, src, reduce, include_self=include_self))
        xi = torch.arange(15, dtype=torch.int64).reshape(3, 5)
        si = torch.arange(6, dtype=torch.int64).reshape(3, 2) * 3 - 4
        ii = torch.tensor([1, 1])
        check_close(t(xi).index_reduce(1, t(ii), t(si), reduce, include_self=include_self),
              xi.index_reduce(1, ii, si, reduce, include_self=include_self))
        y, yt = x.clone(), t(x)
        y.index_reduce_(0, idx, src, reduce, include_self=include_self)
        yt.index_reduce_(0, t(idx), t(src), reduce, include_self=include_self)
        check_close(yt, y)


def test_index_reduce_errors():
    x, src = torch.zeros(5, 3), torch.ones(4, 3)
    same_error(lambda a, i, s: a.index_reduce(0, i, s, "sum"), (x, torch.tensor([0, 1, 2, 3]), src))
    same_error(lambda a, i, s: a.index_reduce(0, i, s, "prod"), (x, torch.tensor([0, 1]), src))
    with pytest.raises((RuntimeError, IndexError)):
        t(x).index_reduce(0, t(torch.tensor([0, 1, 9, 2])), t(src), "amax")


def test_put_and_take_grad():
    x = make(torch.float32, (3, 4), specials=False)
    idx = torch.tensor([[0, -1], [5, 7]])
    src = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    with NativeOnly():
        for acc in (False, True):
            y, yt = x.clone(), t(x)
            y.put_(idx, src, accumulate=acc)
            yt.put_(t(idx), t(src), accumulate=acc)
            check_close(yt, y)
        yt = t(x).t()  # non-contiguous self
        y = x.t().clone()
        y.put_(idx, src, accumulate=True)
        yt.put_(t(idx), t(src), accumulate=True)
        check_close(yt, y)
        a = x.clone().requires_grad_()
        at_ = t(x).requires_grad_()
        torch.take(at_, t(idx)).sum().backward()
    torch.take(a, idx).sum().backward()
    check_close(at_.grad, a.grad)
    # repeated indices without accumulate: CPU's kernel (last write wins)
    dup = torch.tensor([1, 1, 2])
    torch_pjrt.reset_fallbacks()
    y, yt = x.clone(), t(x)
    y.put_(dup, torch.tensor([5.0, 6.0, 7.0]))
    yt.put_(t(dup), t(torch.tensor([5.0, 6.0, 7.0])))
    check_close(yt, y)
    assert "aten::put_" in torch_pjrt.fallbacks()
    same_error(lambda a, i, s: a.put_(i, s), (x.clone(), torch.tensor([12]), torch.ones(1)),
               IndexError)


DTYPES = [torch.float32, torch.bfloat16, torch.int64]


# (data dtype, index dtype): both index dtypes, without a full cross product
PAIRS = [(torch.float32, torch.int64), (torch.bfloat16, torch.int32), (torch.int64, torch.int32)]


TOL = {torch.float32: dict(atol=1e-5, rtol=1e-5), torch.bfloat16: dict(atol=1e-1, rtol=2e-2),
       torch.int64: dict(atol=0, rtol=0), torch.bool: dict(atol=0, rtol=0)}


def data(dtype, shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype == torch.int64:
        return torch.randint(-50, 50, shape, generator=g)
    return (torch.randn(shape, generator=g) * 4).to(dtype)


def close(got, expected, dtype=None):
    dtype = dtype or expected.dtype
    torch.testing.assert_close(got.cpu(), expected, equal_nan=True,
                               **TOL.get(dtype, TOL[torch.float32]))


@pytest.fixture
def native():
    """Asserts the test's tpu calls ran without a CPU fallback."""
    torch_pjrt.reset_metrics()
    yield
    torch.tpu.synchronize()
    assert torch_pjrt.fallbacks() == {}


def T(x):
    return x.to("tpu")


@pytest.mark.parametrize("dtype,index_dtype", PAIRS, ids=str)
def test_gather_matches_cpu(dtype, index_dtype, native):
    x = data(dtype, (4, 5, 3))
    for dim in (0, 1, -1):
        size = x.size(dim)
        idx = torch.randint(0, size, (3, 2, 3), generator=torch.Generator().manual_seed(dim))
        idx = idx.to(index_dtype)
        close(torch.gather(T(x), dim, T(idx)), torch.gather(x, dim, idx))
    # a non-contiguous self and index, and the out= form
    xt, idx = x.transpose(0, 2), torch.tensor([[[1, 0], [3, 3]]]).to(index_dtype).transpose(1, 2)
    close(torch.gather(T(x).transpose(0, 2), 1, T(idx)), torch.gather(xt, 1, idx))
    out = torch.empty(0, dtype=dtype, device="tpu")
    torch.gather(T(x), 0, T(idx.contiguous()), out=out)
    close(out, torch.gather(x, 0, idx.contiguous()))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_scatter_forms_match_cpu(dtype, native):
    x = data(dtype, (4, 6))
    src = data(dtype, (3, 6), seed=1)
    # unique targets per column, so the overwrite is deterministic
    idx = torch.tensor([[0, 1, 2, 3, 0, 1], [2, 3, 0, 1, 3, 2], [1, 0, 3, 2, 2, 3]])
    close(T(x).scatter(0, T(idx), T(src)), x.scatter(0, idx, src))
    close(T(x).scatter(0, T(idx[:2, :4]), T(src)), x.scatter(0, idx[:2, :4], src))
    close(T(x).scatter(1, T(idx[:, :2]), 7), x.scatter(1, idx[:, :2], 7))
    for reduce in ("add", "multiply"):
        close(T(x).scatter(0, T(idx), T(src), reduce=reduce), x.scatter(0, idx, src, reduce=reduce))
        close(T(x).scatter(0, T(idx), 3, reduce=reduce), x.scatter(0, idx, 3, reduce=reduce))
    close(T(x).scatter_add(0, T(idx), T(src)), x.scatter_add(0, idx, src))
    # in-place (through a view) and out=
    y, yt = x.clone(), T(x)
    y[1:].scatter_(1, idx[:, :3], src)
    yt[1:].scatter_(1, T(idx[:, :3]), T(src))
    close(yt, y)
    y.scatter_add_(0, idx, src)
    yt.scatter_add_(0, T(idx), T(src))
    close(yt, y)
    out = torch.empty(4, 6, dtype=dtype, device="tpu")
    torch.scatter_add(T(x), 0, T(idx), T(src), out=out)
    close(out, torch.scatter_add(x, 0, idx, src))
    torch.scatter(T(x), 1, T(idx), 5, out=out)
    close(out, torch.scatter(x, 1, idx, 5))


def test_scatter_add_duplicates_int32_index_and_negative_dim(native):
    x = torch.randn(3, 5)
    src = torch.randn(3, 40)
    idx = torch.randint(0, 5, (3, 40), generator=torch.Generator().manual_seed(3), dtype=torch.int32)
    torch.testing.assert_close(T(x).scatter_add(-1, T(idx), T(src)).cpu(),
                               x.scatter_add(-1, idx, src), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_matches_cpu(dtype, reduce, native):
    x = data(dtype, (5, 4))
    if dtype != torch.int64 and reduce == "prod":
        x = x / 4 + 1  # keep products in range for bf16
    src = data(dtype, (8, 4), seed=2)
    if dtype != torch.int64 and reduce == "prod":
        src = src / 4
    idx = torch.tensor([0, 2, 2, 4, 0, 2, 1, 2]).view(8, 1).expand(8, 4).contiguous()
    idx[3, 1] = 3
    for include_self in (True, False):
        close(T(x).scatter_reduce(0, T(idx), T(src), reduce, include_self=include_self),
              x.scatter_reduce(0, idx, src, reduce, include_self=include_self))
    y, yt = x.clone(), T(x)
    y.scatter_reduce_(0, idx, src, reduce, include_self=False)
    yt.scatter_reduce_(0, T(idx), T(src), reduce, include_self=False)
    close(yt, y)


def test_scatter_reduce_amax_propagates_nan(native):
    x = torch.tensor([0.0, 1.0, float("nan")])
    src = torch.tensor([float("nan"), 2.0, 3.0, 5.0])
    idx = torch.tensor([0, 0, 2, 1])
    for reduce in ("amax", "amin"):
        for inc in (True, False):
            close(T(x).scatter_reduce(0, T(idx), T(src), reduce, include_self=inc),
                  x.scatter_reduce(0, idx, src, reduce, include_self=inc))


def test_gather_scatter_errors_like_cpu():
    x = torch.zeros(3, 4, device="tpu")
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 1 with size 4"):
        torch.gather(x, 1, T(torch.tensor([[5]])))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 1 with size 4"):
        torch.gather(x, 1, T(torch.tensor([[-1]])))
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x.scatter_add(0, T(torch.tensor([[3]])), x)
    with pytest.raises(RuntimeError, match="index 4 is out of bounds for dimension 1 with size 4"):
        x.scatter_(1, T(torch.tensor([[4]])), 1.0)
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        x.scatter(1, T(torch.tensor([[1]])), T(torch.ones(1, 1, dtype=torch.long)))
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax"):
        x.scatter_reduce(1, T(torch.tensor([[1]])), x, "foo")
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        torch.gather(x, 1, T(torch.tensor([[1.0]])))
    # nothing was written by the failed calls
    assert torch.equal(x.cpu(), torch.zeros(3, 4))


def test_gather_scatter_gradients(native):
    x = torch.randn(4, 5, requires_grad=True)
    src = torch.randn(4, 2, requires_grad=True)
    idx = torch.tensor([[0, 4], [1, 1], [3, 0], [2, 2]])
    xt = x.detach().to("tpu").requires_grad_()
    st = src.detach().to("tpu").requires_grad_()
    g = torch.randn(4, 2)
    torch.gather(x, 1, idx).backward(g)
    torch.gather(xt, 1, T(idx)).backward(T(g))
    close(xt.grad, x.grad)
    x.grad = None
    xt.grad = None
    g2 = torch.randn(4, 5)
    (x.scatter_add(1, idx, src) * 2).backward(g2)
    (xt.scatter_add(1, T(idx), st) * 2).backward(T(g2))
    close(xt.grad, x.grad)
    close(st.grad, src.grad)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_advanced_indexing_matches_cpu(dtype, native):
    x = data(dtype, (5, 6, 7))
    i = torch.tensor([4, 0, -1, 2])
    j = torch.tensor([[1], [-5], [4]], dtype=torch.int32)
    for key in [(i,), (slice(None), i), (i, j), (slice(None), j, i.view(1, 4)),
                (i, slice(1, 4), i), (None, i, None), (Ellipsis, i), (j, slice(None, None, 2), 1)]:
        tkey = tuple(T(k) if isinstance(k, torch.Tensor) else k for k in key)
        close(T(x)[tkey], x[key])
    # non-contiguous self
    close(T(x).transpose(0, 2)[i, :, 1:3], x.transpose(0, 2)[i, :, 1:3])


@pytest.mark.parametrize("dtype", DTYPES + [torch.bool], ids=str)
def test_bool_mask_indexing_and_masked_select(dtype, native):
    x = data(dtype, (4, 5))
    m = data(torch.bool, (4, 5), seed=7)
    close(T(x)[T(m)], x[m])
    close(T(x)[T(m[:, 0])], x[m[:, 0]])
    close(T(x)[:, T(m[0])], x[:, m[0]])
    close(torch.masked_select(T(x), T(m)), torch.masked_select(x, m))
    close(torch.masked_select(T(x), T(m[0])), torch.masked_select(x, m[0]))  # broadcast mask
    out = torch.empty(0, dtype=dtype, device="tpu")
    torch.masked_select(T(x), T(m), out=out)
    close(out, torch.masked_select(x, m))
    none = torch.zeros(4, 5, dtype=torch.bool)
    assert T(x)[T(none)].shape == (0,)


def test_nonzero_and_argwhere(native):
    for x in [torch.tensor([0.0, 1.5, -0.0, float("nan"), 2.0]), torch.randint(0, 3, (3, 4, 2)),
              torch.zeros(2, 3), torch.tensor(5), torch.randint(0, 2, (6,)).bool()]:
        assert torch.equal(torch.nonzero(T(x)).cpu(), torch.nonzero(x))
        assert torch.equal(torch.argwhere(T(x)).cpu(), torch.argwhere(x))
    y = torch.randint(0, 3, (5, 6))
    assert torch.equal(torch.nonzero(T(y).t()).cpu(), torch.nonzero(y.t()))
    for size, fill in ((3, -1), (40, 7), (0, -1)):  # a given size: no host wait
        assert torch.equal(torch.nonzero_static(T(y), size=size, fill_value=fill).cpu(),
                           torch.nonzero_static(y, size=size, fill_value=fill))
    got = torch.nonzero(T(y), as_tuple=True)
    for a, b in zip(got, torch.nonzero(y, as_tuple=True)):
        assert torch.equal(a.cpu(), b)


@pytest.mark.parametrize("dtype,index_dtype", PAIRS, ids=str)
def test_index_put_matches_cpu(dtype, index_dtype, native):
    x = data(dtype, (5, 4))
    i = torch.tensor([3, 0, -1], dtype=index_dtype)
    v = data(dtype, (3, 4), seed=3)
    y, yt = x.clone(), T(x)
    y[i] = v
    yt[T(i)] = T(v)
    close(yt, y)
    y[:, i[:2]] = v[0, :2]  # broadcast values
    yt[:, T(i[:2])] = T(v[0, :2])
    close(yt, y)
    y[i, i] = 3  # a Python number
    yt[T(i), T(i)] = 3
    close(yt, y)
    m = data(torch.bool, (5, 4), seed=4)
    y[m] = v.flatten()[0]
    yt[T(m)] = T(v.flatten()[0])
    close(yt, y)
    # accumulate with duplicate indices: x[idx] += v does not accumulate,
    # index_put_(accumulate=True) does
    d = torch.tensor([1, 1, 4, 1], dtype=index_dtype)
    dv = data(dtype, (4, 4), seed=5)
    y.index_put_((d,), dv, accumulate=True)
    yt.index_put_((T(d),), T(dv), accumulate=True)
    close(yt, y)
    close(torch.index_put(yt, (T(d),), T(dv), True), torch.index_put(y, (d,), dv, True))
    u = torch.tensor([0, 2], dtype=index_dtype)
    y[u] += v[:2]
    yt[T(u)] += T(v[:2])
    close(yt, y)
    # through a view: only the view's elements change
    z, zt = x.clone(), T(x)
    z[1:, 2][torch.tensor([0, 2])] = v[0, :2]
    zt[1:, 2][T(torch.tensor([0, 2]))] = T(v[0, :2])
    close(zt, z)


def test_index_errors_like_cpu():
    x = torch.zeros(3, 4, device="tpu")
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[T(torch.tensor([5]))]
    with pytest.raises(IndexError, match="index -5 is out of bounds for dimension 0 with size 3"):
        x[T(torch.tensor([-5]))]
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1 with size 4"):
        x[T(torch.tensor([0])), T(torch.tensor([4]))]
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x[T(torch.tensor([3]))] = 1.0
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[T(torch.tensor([0])), T(torch.tensor([0])), T(torch.tensor([0]))]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool"):
        x[T(torch.tensor([1.0]))]
    with pytest.raises(IndexError, match=r"The shape of the mask \[2\] at index 0 does not match"):
        x[T(torch.tensor([True, False]))]
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3\] cannot be "
                                           r"broadcast to indexing result of shape \[1, 4\]"):
        x[T(torch.tensor([1]))] = T(torch.ones(3))
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes"):
        x.index_put_((T(torch.tensor([1])),), T(torch.ones(4, dtype=torch.long)))
    with pytest.raises(RuntimeError, match="masked_select: expected BoolTensor for mask"):
        torch.masked_select(x, T(torch.ones(3, 4)))
    assert torch.equal(x.cpu(), torch.zeros(3, 4))


def test_index_gradients(native):
    x = torch.randn(5, 3, requires_grad=True)
    xt = x.detach().to("tpu").requires_grad_()
    i = torch.tensor([4, 0, 4, 4, 1])  # duplicates accumulate in the backward
    g = torch.randn(5, 3)
    x[i].backward(g)
    xt[T(i)].backward(T(g))
    close(xt.grad, x.grad)
    x.grad = None
    xt.grad = None
    g2 = torch.randn(5, 2)
    x[:, torch.tensor([2, 2])].backward(g2)
    xt[:, T(torch.tensor([2, 2]))].backward(T(g2))
    close(xt.grad, x.grad)
    # through index_put: the overwritten elements get no gradient
    v = torch.randn(2, 3, requires_grad=True)
    vt = v.detach().to("tpu").requires_grad_()
    x.grad = None
    xt.grad = None
    x.index_put((torch.tensor([1, 3]),), v).sum().backward()
    xt.index_put((T(torch.tensor([1, 3])),), vt).sum().backward()
    close(xt.grad, x.grad)
    close(vt.grad, v.grad)


@pytest.mark.parametrize("dtype,index_dtype", PAIRS, ids=str)
def test_index_add_copy_fill_match_cpu(dtype, index_dtype, native):
    x = data(dtype, (5, 4, 3))
    for dim in (0, 1, -1):
        n = x.size(dim)
        i = torch.tensor([n - 1, 0, n - 1], dtype=index_dtype)  # a duplicate
        src_shape = list(x.shape)
        src_shape[dim] = 3
        s = data(dtype, tuple(src_shape), seed=dim + 1)
        close(T(x).index_add(dim, T(i), T(s)), x.index_add(dim, i, s))
        close(T(x).index_add(dim, T(i), T(s), alpha=2), x.index_add(dim, i, s, alpha=2))
        u = torch.tensor([n - 1, 0])
        close(T(x).index_copy(dim, T(u), T(s.narrow(dim, 0, 2))),
              x.index_copy(dim, u, s.narrow(dim, 0, 2)))
        f = torch.tensor([-1, 0])
        close(T(x).index_fill(dim, T(f), 3), x.index_fill(dim, f, 3))
        close(T(x).index_fill(dim, T(f), T(torch.tensor(2, dtype=dtype))),
              x.index_fill(dim, f, torch.tensor(2, dtype=dtype)))
    # in-place on a non-contiguous view, and out=
    y, yt = x.clone(), T(x)
    s = data(dtype, (3, 4, 3), seed=9)
    i = torch.tensor([1, 1, 0], dtype=index_dtype)
    y.transpose(0, 1).index_add_(1, i, s.transpose(0, 1))
    yt.transpose(0, 1).index_add_(1, T(i), T(s).transpose(0, 1))
    close(yt, y)
    y.index_copy_(0, torch.tensor([4, 2]), x[:2])
    yt.index_copy_(0, T(torch.tensor([4, 2])), T(x[:2]))
    close(yt, y)
    y.index_fill_(2, torch.tensor([1]), -7)
    yt.index_fill_(2, T(torch.tensor([1])), -7)
    close(yt, y)
    out = torch.empty(0, dtype=dtype, device="tpu")
    torch.index_add(T(x), 0, T(i), T(s[:, :1]).expand(3, 4, 3), out=out)
    close(out, torch.index_add(x, 0, i, s[:, :1].expand(3, 4, 3)))


def test_index_add_copy_fill_errors_like_cpu():
    x = torch.zeros(3, 4, device="tpu")
    one = T(torch.ones(1, 4))
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x.index_add(0, T(torch.tensor([5])), one)
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0 with size 3"):
        x.index_add(0, T(torch.tensor([-1])), one)
    with pytest.raises(IndexError, match=r"index_copy_\(\): index 5 is out of bounds for dimension 0"):
        x.index_copy(0, T(torch.tensor([5])), one)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x.index_fill(0, T(torch.tensor([3])), 1.0)
    with pytest.raises(IndexError, match="Expected dtype int64 for index"):
        x.index_fill(0, T(torch.tensor([1], dtype=torch.int32)), 1.0)
    with pytest.raises(RuntimeError, match=r"self \(Float\) and source \(Long\) must have the same"):
        x.index_add(0, T(torch.tensor([1])), T(torch.ones(1, 4, dtype=torch.long)))
    assert torch.equal(x.cpu(), torch.zeros(3, 4))


def test_index_add_copy_gradients(native):
    x = torch.randn(4, 3, requires_grad=True)
    s = torch.randn(2, 3, requires_grad=True)
    xt = x.detach().to("tpu").requires_grad_()
    st = s.detach().to("tpu").requires_grad_()
    i = torch.tensor([3, 1])
    g = torch.randn(4, 3)
    (x.index_add(0, i, s, alpha=3) * 1).backward(g)
    (xt.index_add(0, T(i), st, alpha=3) * 1).backward(T(g))
    close(xt.grad, x.grad)
    close(st.grad, s.grad)


def test_take_and_masked_select_gradient(native):
    x = torch.randn(4, 5)
    idx = torch.tensor([[0, -1], [19, 7]])
    close(torch.take(T(x), T(idx)), torch.take(x, idx))
    close(torch.take(T(x).t(), T(idx)), torch.take(x.t(), idx))
    xg = x.clone().requires_grad_()
    xt = x.to("tpu").requires_grad_()
    m = x > 0
    g = torch.randn(int(m.sum()))
    torch.masked_select(xg, m).backward(g)
    torch.masked_select(xt, T(m)).backward(T(g))
    close(xt.grad, xg.grad)
    y, yt = torch.zeros(3, 4), T(torch.zeros(3, 4))
    src = torch.arange(20.0).view(4, 5)
    y.masked_scatter_(m[:3, :4], src)
    yt.masked_scatter_(T(m[:3, :4]), T(src))
    close(yt, y)
    close(T(y).masked_scatter(T(m[0, :4]), T(src)), y.masked_scatter(m[0, :4], src))


def test_take_masked_scatter_errors_like_cpu():
    x = torch.zeros(3, device="tpu")
    with pytest.raises(IndexError, match="out of range: tried to access index 3 on a tensor of 3"):
        torch.take(x, T(torch.tensor([3])))
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
        x.masked_scatter_(T(torch.tensor([True, False, True])), T(torch.ones(1)))
    assert torch.equal(x.cpu(), torch.zeros(3))


# ---- issue 19 item 8: empty index and empty results ----

L = torch.long


@pytest.mark.parametrize("case", ["dim0", "dim1", "inplace", "empty_self", "vector"])
def test_index_add_with_an_empty_index_like_cpu(case):
    # the meta function selected element 0 of the empty source: IndexError
    def f(d):
        e = torch.tensor([], dtype=L, device=d)
        if case == "dim0":
            return torch.ones(3, 4, device=d).index_add(0, e, torch.zeros(0, 4, device=d))
        if case == "dim1":
            return torch.ones(3, 4, device=d).index_add(1, e, torch.zeros(3, 0, device=d), alpha=2)
        if case == "inplace":
            return torch.ones(3, 4, device=d).index_add_(0, e, torch.zeros(0, 4, device=d))
        if case == "empty_self":  # CPU adds nothing and checks no index
            return torch.ones(0, 4, device=d).index_add(0, torch.tensor([0], device=d),
                                                       torch.ones(1, 4, device=d))
        return torch.ones(3, device=d).index_add(0, e, torch.zeros(0, device=d))
    same_as_cpu(f)


@pytest.mark.parametrize("src", [(0, 5), (2, 4)], ids=str)
def test_index_add_empty_index_errors_like_cpu(src):
    same_as_cpu(lambda d: torch.ones(3, 4, device=d).index_add(
        0, torch.tensor([], dtype=L, device=d), torch.zeros(src, device=d)))


def test_index_add_empty_index_backward():
    def f(d):
        x = torch.ones(3, 4, device=d, requires_grad=True)
        s = torch.ones(0, 4, device=d, requires_grad=True)
        x.index_add(0, torch.tensor([], dtype=L, device=d), s).sum().backward()
        return [x.grad, s.grad]
    same_as_cpu(f)


@pytest.mark.parametrize("case", range(9))
def test_advanced_index_with_an_empty_result_like_cpu(case):
    def f(d):
        x = torch.arange(6.0, device=d).reshape(2, 3)
        e = torch.tensor([], dtype=L, device=d)
        return [lambda: x[e], lambda: x[:, e], lambda: x[e, e], lambda: x[e, 1:],
                lambda: x[torch.zeros(2, 3, dtype=torch.bool, device=d)],
                lambda: torch.zeros(3, 0, device=d)[torch.tensor([0, 1], device=d)],
                lambda: torch.zeros(0, 3, device=d)[e], lambda: x[torch.zeros(2, 0, dtype=L, device=d)],
                lambda: torch.tensor(1.5, device=d)[torch.tensor(False, device=d)]][case]()
    same_as_cpu(f)


def test_nonzero_strides_like_cpu():
    # CPU's result is (n, ndim) with strides (1, n) (found by tools/fuzz).
    for x in (torch.tensor([[1.0, 0.0, 2.0]]), torch.tensor([[0, 3], [4, 0], [5, 6]]),
              torch.zeros(2, 3), torch.tensor([1, 0, 1, 1])):
        want = torch.nonzero(x)
        got = torch.nonzero(x.to("tpu"))
        assert got.stride() == want.stride() and got.shape == want.shape
        assert torch.equal(got.cpu(), want)


def test_empty_writes_skip_their_checks_like_cpu():
    # Found by tools/fuzz: CPU returns before checking indices or converting
    # the value when nothing is written.
    x = torch.zeros(2, 3, 0)
    idx = torch.tensor([3])
    want = x.clone().index_put_((idx,), torch.zeros(()), accumulate=True)
    got = x.to("tpu").index_put_((idx.to("tpu"),), torch.zeros((), device="tpu"), accumulate=True)
    assert got.shape == want.shape
    u = torch.zeros(1, 1, 1, dtype=torch.uint8)
    e = torch.zeros(1, 1, 0, dtype=torch.long)
    torch.testing.assert_close(torch.scatter(u.to("tpu"), 1, e.to("tpu"), float("-inf")).cpu(),
                               torch.scatter(u, 1, e, float("-inf")))


def test_index_add_and_put_into_an_empty_self_check_like_cpu():
    # CPU's vector index_add kernel checks the index even when self is empty
    same_error(lambda s, i, v: s.index_add_(0, i, v), [torch.empty(0), torch.tensor([0, 0]),
                                                       torch.ones(2)], IndexError)
    same_error(lambda s, i, v: torch.index_add(s, 0, i, v, alpha=2),
               [torch.empty(0, dtype=torch.bfloat16), torch.tensor([0]),
                torch.tensor([-1.0], dtype=torch.bfloat16)], IndexError)
    # ...higher ranks do not
    for s, d, i, v in ((torch.empty(0, 2), 1, torch.tensor([5]), torch.ones(0, 1)),
                       (torch.empty(2, 0), 0, torch.tensor([7]), torch.ones(1, 0))):
        r = s.to("tpu").index_add_(d, t(i), t(v))
        assert r.shape == s.shape
    # index_put_: a non-empty index into a dim of size 0 is out of bounds
    same_error(lambda s, i, v: s.index_put_((i,), v), [torch.empty(0), torch.tensor([0]),
                                                       torch.tensor(1.0)], IndexError)
    same_error(lambda s, i, v: s.index_put_((i,), v, accumulate=True),
               [torch.empty(0, dtype=torch.long), torch.tensor([0]), torch.tensor(-3)], IndexError)
    same_error(lambda s, i, v: s.index_put_((i, i), v), [torch.empty(2, 0), torch.tensor([0]),
                                                          torch.tensor(1.0)], IndexError)
    for s, idx in ((torch.empty(2, 0), (torch.tensor([5]),)),
                   (torch.empty(0), (torch.tensor([], dtype=torch.long),)),
                   (torch.empty(0), (torch.tensor([], dtype=torch.bool),))):
        want = s.clone().index_put_(idx, torch.tensor(1.0))
        got = s.to("tpu").index_put_(tuple(t(i) for i in idx), t(torch.tensor(1.0)))
        assert got.shape == want.shape


def test_index_fill_and_index_select_out_check_order_like_cpu():
    same_error(lambda s, i: s.index_fill_(1, i, 1 + 2j),
               [torch.tensor([[[-0.25]]]), torch.empty(0, dtype=torch.long)])
    same_error(lambda s, i: s.index_fill(0, i, 1j), [torch.ones(3), torch.tensor([0])])
    # index_select's out= dtype is checked before the index
    same_error(lambda s, i, o: torch.index_select(s, 0, i, out=o),
               [torch.tensor([[-4]], dtype=torch.int8), torch.tensor([0, 0, -1]),
                torch.tensor([-1.5])])


def test_indexing_with_an_empty_result_checks_no_index_value_like_cpu():
    # an empty result reads nothing: CPU checks no index value then...
    cases = [(torch.empty((2, 1, 0), dtype=torch.bool), (torch.tensor([1]), torch.tensor([-3]))),
             (torch.empty(2, 0), (torch.tensor([5]),)),
             (torch.empty(3, 2), (torch.tensor([], dtype=torch.long), torch.tensor([9])))]
    for x, idx in cases:
        want = x[idx]
        got = t(x)[tuple(t(i) for i in idx)]
        assert got.shape == want.shape and got.dtype == want.dtype
    # ...but a non-empty index into a dim of size 0 is still out of bounds
    same_error(lambda x, i: x[i, i], [torch.empty(2, 0), torch.tensor([0])], IndexError)


def test_index_fill_of_an_empty_dim_raises_index_error_pinned():
    # CPU's kernel fails inside setStorage (a RuntimeError about storage
    # sizes) for an index into a dim of size 0; tpu raises the IndexError its
    # bounds check gives every other out-of-range index_fill_ index.
    with pytest.raises(RuntimeError, match="setStorage"):
        torch.empty((3, 0)).index_fill_(-1, torch.tensor([0]), -1)
    with pytest.raises(IndexError, match="index 0 is out of bounds for dimension 1 with size 0"):
        t(torch.empty((3, 0))).index_fill_(-1, t(torch.tensor([0])), -1)


def test_index_select_along_dim1_raises_cpus_runtime_error():
    # CPU's kernel for dim 1 of a rank >= 2 tensor names the first bad index
    # in a RuntimeError; other dims raise IndexError
    for x, d, i in ((torch.zeros(5, 5), 1, [4, -1]), (torch.zeros(5, 5).t(), 1, [-1]),
                    (torch.zeros(3, 5, dtype=torch.bool), 1, [7, 9]),
                    (torch.zeros(2, 5, 3), 1, [2, -1]), (torch.zeros(3, 5), 1, 7)):
        same_error(lambda s, j: s.index_select(d, j), [x, torch.tensor(i)], RuntimeError)
    for x, d, i in ((torch.zeros(5, 5), 0, [-1]), (torch.zeros(3, 5, 2), 2, [7, -3]),
                    (torch.zeros(5), 0, [5])):
        same_error(lambda s, j: s.index_select(d, j), [x, torch.tensor(i)], IndexError)


def test_index_add_out_of_range_error_type_follows_cpus_kernel():
    # an int64 index along the first or last dim of a rank >= 2 self names the
    # index (RuntimeError); an int32 index or another dim: IndexError
    il, ii = torch.tensor([-1, 3, 3]), torch.tensor([-1, 3, 3], dtype=torch.int32)
    cases = [(torch.zeros(4, 3), 0, il, torch.ones(3, 3), RuntimeError),
             (torch.zeros(3, 4).t(), 0, il, torch.ones(3, 3), RuntimeError),
             (torch.zeros(3, 4), 1, il, torch.ones(3, 3), RuntimeError),
             (torch.zeros(3, 4, 2), 1, il, torch.ones(3, 3, 2), IndexError),
             (torch.zeros(4, 3), 0, ii, torch.ones(3, 3), IndexError),
             (torch.zeros(3, 4).t(), 0, ii, torch.ones(3, 3), IndexError),
             (torch.zeros(4), 0, il, torch.ones(3), IndexError)]
    for s, d, i, v, exc in cases:
        same_error(lambda a, b, c: a.index_add_(d, b, c), [s, i, v], exc)
    # ...and only with alpha 1
    same_error(lambda a, b, c: torch.index_add(a, -2, b, c, alpha=2),
               [torch.tensor([[True]]), torch.tensor([-1]), torch.tensor([[True]])], IndexError)
    same_error(lambda a, b, c: torch.index_add(a, 0, b, c, alpha=1),
               [torch.zeros(1, 1), torch.tensor([-1]), torch.ones(1, 1)], RuntimeError)


def test_scatter_reduce_mean_of_bool_refused_before_the_index():
    same_error(lambda s, i, v: torch.scatter_reduce(s, 0, i, v, "mean"),
               [torch.tensor([True, False, False]), torch.tensor([-1, -3]),
                torch.tensor([True, False, False])], NotImplementedError)
