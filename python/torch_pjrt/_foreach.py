"""Eager foreach ops as one launch each.

PyTorch's optimizers update their parameters with `torch._foreach_*` ops over
lists. Without a tpu kernel each of those runs PyTorch's per-tensor fallback,
one launch per tensor: an eager AdamW step of a 29-parameter model was 232
launches. Here the overloads torch.optim uses trace their per-tensor ops once
into one graph (torch.compile's runner, _compile._Traced), cached by the
lists' signature. Every scalar -- Python numbers, scalar lists (an
optimizer's step sizes change every step), alpha, value, a lerp weight -- is
a runtime 0-d argument, never a constant of the graph. Lists that are not all
float32 or float64 tensors on one tpu device run the per-tensor loop, as
before.
"""
from __future__ import annotations

import torch

from . import _compile

_FLOATS = (torch.float32, torch.float64)
_LIB = torch.library.Library("aten", "IMPL")


def _eligible(lists, others=()) -> bool:
    first = lists[0]
    if len(first) < 2 or not isinstance(first[0], torch.Tensor):
        return False
    dev = first[0].device
    if dev.type != "tpu":
        return False
    for lst in lists:
        if len(lst) != len(first):
            return False
        for t in lst:
            if not isinstance(t, torch.Tensor) or t.device != dev or t.dtype not in _FLOATS:
                return False
    for t in others:
        if not (t.device == dev or (t.device.type == "cpu" and t.dim() == 0)):
            return False
    return True


def _num(v) -> torch.Tensor:
    # float64 0-d: against a float tensor it promotes as the Python number would
    return torch.tensor(float(v), dtype=torch.float64)


def _register(name: str, n_lists: int, per_tensor, scalars: str = "none", kw=None,
              returns: bool = False) -> None:
    """scalars: "none"; "one", a Scalar argument; "list", a ScalarList (one
    per tensor); "tensor", a Tensor argument (0-d CPU, or on the lists'
    device); "kw", a Scalar that may come by keyword, kw = (name, default)."""

    def apply(lists, scalar):
        # The per-element loop, shared by the traced body and the fallback:
        # scalar is one value, or a sequence of one per tensor ("list").
        outs = []
        for i in range(len(lists[0])):
            elems = [lst[i] for lst in lists]
            if scalars == "list":
                elems.append(scalar[i])
            elif scalars != "none":
                elems.append(scalar)
            r = per_tensor(*elems)
            if returns:
                outs.append(r)
        return outs

    def body(n, *flat):
        rest = flat[n_lists * n:]
        scalar = rest if scalars == "list" else (rest[0] if rest else None)
        return tuple(apply([flat[i * n:(i + 1) * n] for i in range(n_lists)], scalar))

    runner = _compile._Traced(body)

    def loop(lists, scalar):
        outs = apply(lists, scalar)
        return outs if returns else None

    def kernel(*args, **kwargs):
        lists = list(args[:n_lists])
        extra = args[n_lists:]
        if scalars == "kw":
            scalar = extra[0] if extra else kwargs.get(kw[0], kw[1])
        else:
            scalar = extra[0] if extra else None
        ok = not _compile._trace_state.on and _eligible(lists, [scalar] if scalars == "tensor" else [])
        if ok and scalars == "list":
            ok = len(scalar) == len(lists[0]) and all(
                isinstance(v, (int, float)) for v in scalar)
        elif ok and scalars in ("one", "kw"):
            ok = isinstance(scalar, (int, float))
        if not ok:
            return loop(lists, scalar)
        flat = [t for lst in lists for t in lst]
        if scalars == "list":
            # an optimizer's per-parameter scalars are mostly one value (one
            # step count): one 0-d tensor per distinct value, keyed by its
            # exact bits (0.0 == -0.0 as a dict key, not as a divisor)
            made: dict = {}
            for v in scalar:
                k = float(v).hex()
                t = made.get(k)
                if t is None:
                    t = made[k] = _num(v)
                flat.append(t)
        elif scalars in ("one", "kw"):
            flat.append(_num(scalar))
        elif scalars == "tensor":
            flat.append(scalar)
        out = runner.call([len(lists[0])] + flat, False)
        return list(out) if returns else None

    _LIB.impl(name, kernel, "PrivateUse1")


# Every scalar is a runtime 0-d argument (a baked one would be a constant
# buffer the cached graph holds for good), so alpha, value and weight are
# applied with a multiply: value * t1 * t2, then the add, as CPU's addcmul
# orders it; self + value * t1 / t2 for addcdiv.
_register("_foreach_mul_.Scalar", 1, lambda t, s: t.mul_(s), "one")
_register("_foreach_mul_.List", 2, lambda t, o: t.mul_(o))
_register("_foreach_mul_.Tensor", 1, lambda t, s: t.mul_(s), "tensor")
_register("_foreach_div_.Scalar", 1, lambda t, s: t.div_(s), "one")
_register("_foreach_div_.ScalarList", 1, lambda t, s: t.div_(s), "list")
_register("_foreach_add_.Scalar", 1, lambda t, s: t.add_(s), "one")
_register("_foreach_add_.List", 2, lambda t, o, a: t.add_(o * a), "kw", ("alpha", 1))
_register("_foreach_lerp_.Scalar", 2, lambda t, e, w: t.add_((e - t) * w), "kw", ("weight", None))
_register("_foreach_addcmul_.Scalar", 3, lambda t, a, b, v: t.add_(v * a * b), "kw", ("value", 1))
_register("_foreach_addcdiv_.Scalar", 3, lambda t, a, b, v: t.add_(v * a / b), "kw", ("value", 1))
_register("_foreach_addcdiv_.ScalarList", 3, lambda t, a, b, v: t.add_(v * a / b), "list")
_register("_foreach_add.List", 2, lambda t, o, a: t + o * a, "kw", ("alpha", 1), returns=True)
_register("_foreach_sqrt", 1, lambda t: torch.sqrt(t), returns=True)
