"""out= overloads served by their native functional kernel (csrc/ops/outform.cpp):
values vs CPU, the out's final shape and strides, resize_output's warning for
a non-empty out of the wrong shape, non-contiguous outs, dtype casting and
CPU's errors, multi-output ops, overlap errors, and that nothing falls back —
while an out= overload whose functional form is not native, or whose out
dtype changes the computation, still runs CPU's kernel (counted)."""
import warnings

import pytest
import torch

import torch_pjrt

pytestmark = pytest.mark.usefixtures("no_leaks")

DEV = "tpu"


def t(x):
    return x.to(DEV)


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)


def run_both(fn, args, out_cpu, tol=None):
    """fn(*args, out=...) on CPU and on tpu; returns (cpu out, tpu out)."""
    out_tpu = out_cpu.to(DEV) if isinstance(out_cpu, torch.Tensor) else tuple(
        o.to(DEV) for o in out_cpu)
    if isinstance(out_cpu, torch.Tensor) and not out_cpu.is_contiguous():
        out_tpu = out_tpu.as_strided(out_cpu.size(), out_cpu.stride())
    targs = [a.to(DEV) if isinstance(a, torch.Tensor) else a for a in args]
    r_cpu = fn(*args, out=out_cpu)
    r_tpu = fn(*targs, out=out_tpu)
    pairs = [(r_cpu, r_tpu)] if isinstance(r_cpu, torch.Tensor) else list(zip(r_cpu, r_tpu))
    outs = [(out_cpu, out_tpu)] if isinstance(out_cpu, torch.Tensor) else list(zip(out_cpu, out_tpu))
    for (c, t), (oc, ot) in zip(pairs, outs):
        assert t is ot, "the out= form must return its out tensor"
        assert t.device.type == DEV
        assert t.dtype == c.dtype and t.shape == c.shape and t.stride() == c.stride(), (
            t.dtype, c.dtype, t.shape, c.shape, t.stride(), c.stride())
        torch.testing.assert_close(t.cpu(), c, equal_nan=True, **(tol or dict(rtol=1e-5, atol=1e-5)))
    return r_cpu, r_tpu


def native():
    torch.tpu.synchronize()
    torch_pjrt.reset_fallbacks()


def assert_native():
    torch.tpu.synchronize()
    assert torch_pjrt.fallbacks() == {}, torch_pjrt.fallbacks()


CASES = [
    # (name, fn, args, out shape, out dtype)
    ("pow.Tensor_Scalar_out", lambda x, out: torch.pow(x, 3, out=out), (rand(3, 4),), (3, 4),
     torch.float32),
    ("norm.out", lambda x, out: torch.ops.aten.norm.out(x, 2, [1], False, out=out), (rand(3, 4),),
     (3,), torch.float32),
    ("mm.out", lambda a, b, out: torch.mm(a, b, out=out), (rand(3, 4), rand(4, 5, seed=1)), (3, 5),
     torch.float32),
    ("addmm.out", lambda c, a, b, out: torch.addmm(c, a, b, beta=0.5, alpha=2, out=out),
     (rand(5), rand(3, 4), rand(4, 5, seed=1)), (3, 5), torch.float32),
    ("amax.out", lambda x, out: torch.amax(x, 1, out=out), (rand(3, 4),), (3,), torch.float32),
    ("sum.IntList_out", lambda x, out: torch.sum(x, 0, out=out), (rand(3, 4),), (4,),
     torch.float32),
    ("threshold.out", lambda x, out: torch._C._nn.threshold(x, 0.1, -1.0, out=out) if False else
     torch.ops.aten.threshold.out(x, 0.1, -1.0, out=out), (rand(3, 4),), (3, 4), torch.float32),
    ("sqrt.out", lambda x, out: torch.sqrt(x, out=out), (rand(3, 4).abs(),), (3, 4), torch.float32),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_out_form_right_shape(case):
    _, fn, args, shape, dtype = case
    native()
    run_both(fn, args, torch.empty(shape, dtype=dtype), tol=dict(rtol=1e-5, atol=1e-4))
    assert_native()


@pytest.mark.parametrize("case", CASES[:3], ids=[c[0] for c in CASES[:3]])
def test_out_form_resizes_empty_silently_and_warns_for_wrong_shape(case):
    _, fn, args, shape, dtype = case
    native()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_both(fn, args, torch.empty(0, dtype=dtype))
    with pytest.warns(UserWarning, match="An output with one or more elements was resized") as rec:
        out = torch.empty(7, dtype=dtype, device=DEV)
        targs = [a.to(DEV) for a in args]
        r = fn(*targs, out=out)
    assert len([w for w in rec if "was resized" in str(w.message)]) == 1, "warned once"
    assert r.shape == fn(*args, out=torch.empty(0, dtype=dtype)).shape
    assert_native()


def test_non_contiguous_outs():
    native()
    x = rand(4, 6)
    # A transposed out of the right shape is written through its strides.
    out = torch.empty(6, 4).t()
    run_both(lambda a, out: torch.pow(a, 2, out=out), (x,), out)
    # A strided slice of a bigger tensor: only the slice changes.
    big = torch.zeros(4, 12)
    big_t = big.to(DEV)
    torch.pow(x.to(DEV), 2, out=big_t[:, ::2])
    torch.pow(x, 2, out=big[:, ::2])
    torch.testing.assert_close(big_t.cpu(), big)
    # A reduction into a column of a matrix.
    m = torch.zeros(3, 2)
    m_t = m.to(DEV)
    torch.amax(t(x[:3]), 1, out=m_t[:, 1])
    torch.amax(x[:3], 1, out=m[:, 1])
    torch.testing.assert_close(m_t.cpu(), m)
    assert_native()


def test_pointwise_out_casts_to_a_wider_dtype():
    native()
    x = torch.arange(-3, 9).reshape(3, 4)
    run_both(lambda a, out: torch.pow(a, 2, out=out), (x,), torch.empty(3, 4, dtype=torch.float64))
    run_both(lambda a, out: torch.pow(a, 2, out=out), (rand(3, 4),),
             torch.empty(3, 4, dtype=torch.float64))
    assert_native()


def test_cat_out_casts_into_another_dtype_natively():
    # cat only moves values, so its result cast into out is exact: FSDP2's
    # _chunk_cat writes bf16 gradients into an f32 buffer through cat.out.
    native()
    parts = (rand(2, 3, dtype=torch.bfloat16), rand(4, 3, dtype=torch.bfloat16, seed=1))
    run_both(lambda a, b, out: torch.cat([a, b], out=out), parts, torch.empty(6, 3))
    assert_native()


def test_pointwise_out_refuses_a_narrowing_dtype_like_cpu():
    x = rand(3, 4)
    with pytest.raises(RuntimeError) as cpu:
        torch.pow(x, 2, out=torch.empty(3, 4, dtype=torch.long))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output "
                                           "type Long") as tpu:
        torch.pow(x.to(DEV), 2, out=torch.empty(3, 4, dtype=torch.long, device=DEV))
    assert str(tpu.value).split("\n")[0] == str(cpu.value).split("\n")[0]


def test_non_pointwise_out_dtype_errors_like_cpu():
    a, b = rand(3, 4), rand(4, 5)
    with pytest.raises(RuntimeError) as cpu:
        torch.mm(a, b, out=torch.empty(3, 5, dtype=torch.float64))
    with pytest.raises(RuntimeError) as tpu:
        torch.mm(a.to(DEV), b.to(DEV), out=torch.empty(3, 5, dtype=torch.float64, device=DEV))
    assert str(tpu.value).split("\n")[0] == str(cpu.value).split("\n")[0]
    with pytest.raises(RuntimeError) as cpu:
        torch.amax(a, 1, out=torch.empty(3, dtype=torch.float64))
    with pytest.raises(RuntimeError) as tpu:
        torch.amax(a.to(DEV), 1, out=torch.empty(3, dtype=torch.float64, device=DEV))
    assert str(tpu.value).split("\n")[0] == str(cpu.value).split("\n")[0]


def test_reduction_whose_out_dtype_changes_the_result_runs_cpus_kernel():
    # sum(..., out=int64) sums truncated values on CPU: not the functional sum
    # cast, so the call goes to CPU's kernel (counted) and agrees with it.
    x = torch.tensor([[0.6, 0.7], [1.5, -0.9]])
    native()
    out = torch.empty(2, dtype=torch.long, device=DEV)
    torch.sum(x.to(DEV), 0, out=out)
    expected = torch.sum(x, 0, out=torch.empty(2, dtype=torch.long))
    assert torch.equal(out.cpu(), expected)
    torch.tpu.synchronize()
    assert "aten::sum.IntList_out" in torch_pjrt.fallbacks()


def test_multi_output_out_form():
    native()
    x = rand(4, 5)
    run_both(lambda a, out: torch.max(a, 1, out=out), (x,),
             (torch.empty(4), torch.empty(4, dtype=torch.long)))
    run_both(lambda a, out: torch.aminmax(a, dim=0, out=out), (x,),
             (torch.empty(0), torch.empty(0)))
    assert_native()


def test_partial_overlap_with_an_input_is_refused_like_cpu():
    x = torch.arange(10.0)
    with pytest.raises(RuntimeError) as cpu:
        torch.pow(x[:-1], 2, out=x[1:])
    xt = torch.arange(10.0, device=DEV)
    with pytest.raises(RuntimeError) as tpu:
        torch.pow(xt[:-1], 2, out=xt[1:])
    assert str(tpu.value).split("\n")[0] == str(cpu.value).split("\n")[0]


def test_same_tensor_as_input_and_out():
    native()
    x = rand(3, 4)
    xt = x.to(DEV)
    torch.pow(xt, 2, out=xt)
    torch.pow(x, 2, out=x)
    torch.testing.assert_close(xt.cpu(), x)
    assert_native()


def test_argument_errors_come_from_the_op():
    a, b = rand(3, 4), rand(5, 6)
    with pytest.raises(RuntimeError) as cpu:
        torch.mm(a, b, out=torch.empty(3, 6))
    with pytest.raises(RuntimeError) as tpu:
        torch.mm(a.to(DEV), b.to(DEV), out=torch.empty(3, 6, device=DEV))
    assert str(tpu.value).split("\n")[0] == str(cpu.value).split("\n")[0]


def test_non_native_functional_still_falls_back(monkeypatch):
    # SVD stays on the CPU by design: its out= form must keep the CPU fallback
    x = rand(6).abs() + 1
    m = rand(6).reshape(3, 2)
    native()
    out = torch.empty(6, device=DEV)
    sv = torch.empty(2, device=DEV)
    torch.linalg.svdvals(m.to(DEV), out=sv)
    torch.testing.assert_close(sv.cpu(), torch.linalg.svdvals(m))
    torch.tpu.synchronize()
    assert any("svd" in k for k in torch_pjrt.fallbacks()), torch_pjrt.fallbacks()
    # ... and TORCH_PJRT_FALLBACK=error refuses it, but not a native out= form.
    monkeypatch.setenv("TORCH_PJRT_FALLBACK", "error")
    with pytest.raises(NotImplementedError, match="has no tpu lowering"):
        torch.linalg.svdvals(m.to(DEV), out=sv)
    torch.pow(x.to(DEV), 2, out=out)
    torch.testing.assert_close(out.cpu(), x.pow(2))
