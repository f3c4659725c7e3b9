"""torch.compile(backend="tpu"): Dynamo -> AOTAutograd -> one XLA executable.

AOTAutograd hands us functional ATen graphs (forward, backward, inference).
Each graph is partitioned: runs of nodes that the tpu kernels handle are
captured by tracing -- the graph runs once through the ordinary eager
kernels with the C core recording instead of launching, so every op is
lowered by the same C table as in eager mode -- into one StableHLO program,
compiled once per input signature. A node without a tpu kernel (or on the
CPU) splits the graph there and runs eagerly; it is counted in
torch_pjrt.metrics()["graph_splits"] and, when it falls back, in
torch_pjrt.fallbacks(). With TORCH_PJRT_FALLBACK=error a split is an error.

Host work is not a split. An optimizer keeps its step counters as CPU
scalars (as it does on CUDA unless capturable=True), so its graph computes
step + 1, beta ** step, ... on the CPU and copies the new step back into the
input. Nodes that only read CPU values never wait for the device: they run
first, on the CPU, as a prologue; copies of such values into CPU inputs run
last, as an epilogue; the device nodes between them stay one executable that
takes the CPU scalars as runtime parameters. The prologue's foreach ops (one
0-d step tensor per parameter) run as one op over the stacked values, not
one CPU op per parameter (see _stack_host_foreach).

Functional collectives (`_c10d_functional.*`, what DTensor, FSDP2's traced
path and `torch.distributed._functional_collectives` put in a graph) are
split points by design: each runs eagerly through the process group's
backend ("pjrt" for tpu tensors) between captured executables, since across
processes the other ranks' data arrives over the transport, not inside an
XLA program. They are not counted as graph_splits (nothing fell back);
metrics()["graph_collectives"] counts the collectives compiled graphs ran.
"""
from __future__ import annotations

import operator
import os
import threading
import warnings
from typing import Any, Callable

import torch
import torch.fx

from . import _C

_STATS = {"graph_splits": 0, "graph_traces": 0, "graph_eager": 0, "graph_collectives": 0}

# The functional collectives' namespaces: their ops are dispatched to the
# process group (CompositeExplicitAutograd kernels that call the backend), so
# a trace cannot record them; they run eagerly between captured graphs.
_COLLECTIVE_NS = ("_c10d_functional", "c10d_functional", "_c10d_functional_autograd")
# The ops that wait rather than communicate: not counted as collectives.
_COLLECTIVE_WAITS = ("wait_tensor",)


def _fallback_mode() -> str:
    return os.environ.get("TORCH_PJRT_FALLBACK", "warn").lower()


_COMPOSITE = ("CompositeExplicitAutograd", "CompositeImplicitAutograd")


def _has_kernel(name: str) -> bool:
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    return has(name, "PrivateUse1") or any(has(name, k) for k in _COMPOSITE)


class _TraceState(threading.local):
    # on: this thread is tracing a graph; _foreach.py's kernels then run their
    # per-tensor ops into that trace instead of starting one of their own.
    on = False


_trace_state = _TraceState()
# One trace at a time (the C core records one); other threads' eager ops
# and compiled graphs run meanwhile, only a second first-call waits.
_trace_lock = threading.RLock()


def _has_tpu_kernel(op: torch._ops.OpOverload) -> bool:
    """True when the dispatcher reaches a kernel of ours, or a composite one
    that calls other ops, for PrivateUse1 -- not the CPU fallback."""
    name = op.name()
    if _has_kernel(name):
        return True
    if not torch._C._dispatch_has_kernel_for_dispatch_key(
            name, "CompositeExplicitAutogradNonFunctional"):
        return False
    # A structured op's functional form is generic, but it calls the .out
    # kernel, which may be CPU-only (special_zeta); other non-functional
    # composites (copy, slice_scatter) are built from ops we have.
    packet = op.overloadpacket
    if "out" not in packet.overloads():
        return True
    return _has_kernel(packet.out.name() if hasattr(packet.out, "name") else name + ".out")


def _val_devices(val: Any) -> list[torch.device]:
    if isinstance(val, torch.Tensor):
        return [val.device]
    if isinstance(val, (list, tuple)):
        out = []
        for v in val:
            out.extend(_val_devices(v))
        return out
    return []


def _on_tpu(node: torch.fx.Node) -> bool:
    devs = _val_devices(node.meta.get("val"))
    return bool(devs) and all(d.type == "tpu" for d in devs)


# Ops left out of captured graphs and run eagerly between them (see
# run_eagerly); they count as graph splits.
_EAGER_OPS: set[str] = set()


def run_eagerly(*names: str) -> None:
    """Marks custom ops (by "namespace::name") that torch.compile(backend=
    "tpu") must run eagerly rather than capture: ops with a tpu kernel whose
    work depends on host state or on its inputs' values, which one traced
    program cannot replay. vLLM's attention ops are such: they read the
    per-step paged-attention metadata and write a KV cache that is not a
    graph input."""
    _EAGER_OPS.update(names)


def _is_collective(node: torch.fx.Node) -> bool:
    t = node.target
    return (node.op == "call_function" and isinstance(t, torch._ops.OpOverload)
            and t.namespace in _COLLECTIVE_NS)


def _supported(node: torch.fx.Node, producer_ok: dict) -> bool:
    if node.target is operator.getitem:
        src = node.args[0]
        return isinstance(src, torch.fx.Node) and producer_ok.get(src, False)
    if not isinstance(node.target, torch._ops.OpOverload):
        return False
    if node.target.name() in _EAGER_OPS or _is_collective(node):
        return False
    return _on_tpu(node) and _has_tpu_kernel(node.target)


def _describe(node: torch.fx.Node) -> str:
    t = node.target
    return t.name() if isinstance(t, torch._ops.OpOverload) else str(t)


class _Traced(torch.nn.Module):
    """Runs a graph module as captured executables, one per input signature."""

    def __init__(self, gm: torch.fx.GraphModule, consume: tuple = ()):
        super().__init__()
        self.gm = gm
        self.graphs: dict[tuple, Any] = {}
        self.eager_reason: str | None = None
        # Argument positions a consuming call may take (see _consuming).
        self.consume = list(consume)

    @staticmethod
    def _key(args, tensors) -> tuple:
        others = tuple([repr(a) for a, t in zip(args, tensors) if t is None])
        return _C._graph_key(tensors), others

    def _trace(self, args):
        with _trace_lock:
            return self._trace_locked(args)

    def _trace_locked(self, args):
        tensors = [a if isinstance(a, torch.Tensor) else None for a in args]
        _C._trace_begin(tensors)
        _trace_state.on = True
        try:
            with torch.no_grad():
                outs = self.gm(*args)
        except BaseException:
            _C._trace_abort()
            raise
        finally:
            _trace_state.on = False
        flat = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        tensor_pos = [i for i, o in enumerate(flat) if isinstance(o, torch.Tensor)]
        # An output that is a CPU tensor argument passes through unchanged.
        passthrough = {}
        for i in list(tensor_pos):
            o = flat[i]
            if o.device.type != "tpu":
                for j, a in enumerate(args):
                    if a is o:
                        passthrough[i] = j
                tensor_pos.remove(i)
                if i not in passthrough:
                    _C._trace_abort()
                    raise RuntimeError("a graph output is a CPU tensor computed in the graph")
        graph = _C._trace_end(len(args), [flat[i] for i in tensor_pos], self.consume)
        template = [None if isinstance(o, torch.Tensor) else o for o in flat]
        _STATS["graph_traces"] += 1
        return graph, tensor_pos, passthrough, template, isinstance(outs, (list, tuple))

    def forward(self, *args):
        return self.call(list(args), False)

    def call(self, args: list, consume: bool):
        """Runs the graph on args; with consume, empties args and lets the
        launch take the arguments in self.consume (their last use)."""
        if self.eager_reason is not None:
            return self.gm(*args)
        Tensor = torch.Tensor
        tensors = [a if isinstance(a, Tensor) else None for a in args]
        key = self._key(args, tensors)
        entry = self.graphs.get(key)
        if entry is None:
            try:
                entry = self._trace(args)
            except Exception as e:  # a data-dependent op: this graph stays eager
                if _fallback_mode() == "error":
                    raise
                self.eager_reason = f"{type(e).__name__}: {e}"
                _STATS["graph_eager"] += 1
                warnings.warn("torch.compile(backend='tpu'): a graph could not be captured and "
                              f"runs eagerly ({self.eager_reason.splitlines()[0]})")
                return self.gm(*args)
            self.graphs[key] = entry
        graph, tensor_pos, passthrough, template, is_seq = entry
        flat = list(template)
        for i, j in passthrough.items():
            flat[i] = args[j]
        if consume and self.consume:
            args.clear()
            results = graph.run_consuming(tensors, self.consume)  # empties tensors
        else:
            results = graph.run(tensors)
        for i, r in zip(tensor_pos, results):
            flat[i] = r
        return tuple(flat) if is_seq else flat[0]


def _count_collectives(gm: torch.fx.GraphModule) -> int:
    return sum(1 for n in gm.graph.nodes
               if _is_collective(n) and n.target._opname not in _COLLECTIVE_WAITS)


class _Collectives(torch.nn.Module):
    """An eager partition holding functional collectives: runs them through
    the process group as they are, and counts them in
    metrics()["graph_collectives"]."""

    def __init__(self, gm: torch.fx.GraphModule):
        super().__init__()
        self.gm = gm
        self.count = _count_collectives(gm)

    def forward(self, *args):
        _STATS["graph_collectives"] += self.count
        return self.gm(*args)


def _consuming(runner: _Traced) -> Callable:
    """The boxed backward runner: AOTAutograd hands it its argument list to
    keep (steal_args) after clearing the autograd context's saved tensors,
    and names the saved activations no output aliases (bw_donated_idxs).
    Taking them lets each be freed when the backward launches instead of
    when it returns, so a compiled step's peak holds activations or new
    gradients, not both. With retain_graph (or create_graph) the saved
    tensors stay in the context and are read again: nothing is taken."""
    keep_graph = torch._C._autograd._get_current_graph_task_keep_graph

    def run(args: list):
        return runner.call(args, not keep_graph())

    run._boxed_call = True  # an attribute of the function: wrappers copy it
    return run


def _on_cpu(node: torch.fx.Node) -> bool:
    devs = _val_devices(node.meta.get("val"))
    return all(d.type == "cpu" for d in devs)


def _host_nodes(gm: torch.fx.GraphModule) -> tuple[set, set]:
    """(prologue, epilogue): nodes computed from CPU values alone, and the
    copies of such values into CPU inputs (the mutation epilogue)."""
    host: set = set()
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            if _on_cpu(node):
                host.add(node)
        elif node.op == "call_function" and _on_cpu(node):
            inputs = node.all_input_nodes
            if all(i in host for i in inputs):
                host.add(node)
    epilogue = {n for n in host if n.op == "call_function"
                and n.target is torch.ops.aten.copy_.default and not n.users
                and isinstance(n.args[0], torch.fx.Node) and n.args[0].op == "placeholder"}
    prologue = {n for n in host if n.op == "call_function" and n not in epilogue}
    return prologue, epilogue


# The elementwise op each host foreach op applies per tensor. Only these,
# with Python-number arguments besides the lists: then one op over the
# stacked 0-d tensors promotes types exactly as the per-tensor ops do.
_HOST_FOREACH = {
    "_foreach_add": torch.add, "_foreach_sub": torch.sub, "_foreach_mul": torch.mul,
    "_foreach_div": torch.div, "_foreach_pow": torch.pow, "_foreach_neg": torch.neg,
    "_foreach_reciprocal": torch.reciprocal, "_foreach_sqrt": torch.sqrt,
    "_foreach_rsqrt": torch.rsqrt, "_foreach_exp": torch.exp, "_foreach_log": torch.log,
    "_foreach_abs": torch.abs, "_foreach_maximum": torch.maximum,
    "_foreach_minimum": torch.minimum,
}


def _host_scalar_list(arg) -> bool:
    """A list of nodes whose values are 0-d CPU tensors of one dtype."""
    if not isinstance(arg, (list, tuple)) or len(arg) < 2:
        return False
    vals = [a.meta.get("val") if isinstance(a, torch.fx.Node) else None for a in arg]
    return all(isinstance(v, torch.Tensor) and v.dim() == 0 and v.device.type == "cpu"
               and v.dtype == vals[0].dtype for v in vals)


def _stack_host_foreach(gm: torch.fx.GraphModule) -> None:
    """Runs a host prologue's foreach ops on stacked values.

    An optimizer's prologue applies ~10 foreach ops (step + 1, beta ** step,
    1 - that, ...) to one 0-d CPU step tensor per parameter. Per tensor on the
    CPU that is ~5 µs an element, ~1.2 ms of host time per compiled AdamW step
    on a 29-parameter model. Each such op becomes one elementwise op over a
    1-D stack of the values; a chain of them stays stacked, and the 0-d values
    the rest of the graph reads are views from one unbind per list. The values
    are the same ops on the same numbers (vectorised math may round the last
    bit differently, as between any two CPU kernels)."""
    graph = gm.graph
    stacked: dict = {}   # unbind node -> the stacked values it splits
    members: dict = {}   # unbind node -> the element nodes read from it, in order
    changed = False
    for node in list(graph.nodes):
        target = node.target
        if not (node.op == "call_function" and isinstance(target, torch._ops.OpOverload)):
            continue
        fn = _HOST_FOREACH.get(target.__name__.split(".", 1)[0])
        lists = [a for a in node.args if isinstance(a, (list, tuple))]
        if (fn is None or node.kwargs or not lists
                or not all(isinstance(a, (list, tuple, int, float, bool)) for a in node.args)
                or not all(_host_scalar_list(a) and len(a) == len(lists[0]) for a in lists)
                or len({a[0].meta["val"].dtype for a in lists}) != 1):
            continue
        elems = {}
        for user in node.users:
            if user.op == "call_function" and user.target is operator.getitem:
                elems[user.args[1]] = user
        if len(elems) != len(node.users):
            continue  # the list itself is used: leave it
        with graph.inserting_before(node):
            args = []
            for a in node.args:
                if not isinstance(a, (list, tuple)):
                    args.append(a)
                    continue
                src = a[0].args[0] if (isinstance(a[0], torch.fx.Node)
                                       and a[0].target is operator.getitem) else None
                if src in stacked and list(a) == members[src]:
                    args.append(stacked[src])  # the previous op's stack, as is
                else:
                    args.append(graph.call_function(torch.stack, (list(a),)))
            out = graph.call_function(fn, tuple(args))
            views = graph.call_function(torch.unbind, (out,))
        stacked[views] = out
        members[views] = [elems.get(i) for i in range(len(lists[0]))]
        for i, g in elems.items():
            g.args = (views, i)
        changed = True
    if changed:
        # the old foreach nodes, and a chain's element views nothing reads
        graph.eliminate_dead_code()
        gm.recompile()


def _merge_host_copies(gm: torch.fx.GraphModule) -> None:
    """An epilogue's copies of new step values into the CPU inputs, as one
    _foreach_copy_ (one dispatch, not one per parameter)."""
    copies = [n for n in gm.graph.nodes if n.op == "call_function"
              and n.target is torch.ops.aten.copy_.default and not n.users and len(n.args) == 2
              and not n.kwargs]
    if len(copies) < 2:
        return
    with gm.graph.inserting_before(copies[0]):
        gm.graph.call_function(torch._foreach_copy_, ([c.args[0] for c in copies],
                                                      [c.args[1] for c in copies]))
    for c in copies:
        gm.graph.erase_node(c)
    gm.recompile()


# Ops that only copy, move or view a constant: evaluated once at compile
# time when every tensor they read is a constant of the graph. Other pure
# ops of constants are folded too while their result is small
# (_FOLD_MAX_NUMEL); factories without inputs only when named here and
# made on the CPU (a device factory is cheap in the graph, and folding it
# would keep its memory between runs).
_FOLDABLE = {"lift_fresh_copy", "lift_fresh", "_to_copy", "clone", "detach", "alias", "view",
             "_unsafe_view", "reshape", "unsqueeze", "squeeze", "expand", "t", "permute",
             "transpose", "slice", "select", "_to_dense"}
_FOLD_FACTORIES = {"arange", "full", "zeros", "ones", "scalar_tensor", "linspace", "eye"}
_FOLD_MAX_NUMEL = 1 << 16


def _foldable(node: torch.fx.Node, consts: dict) -> bool:
    target = node.target
    if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
        return False
    base = target.__name__.split(".", 1)[0]
    flat = []
    torch.fx.node.map_arg((node.args, node.kwargs), flat.append)
    if not all(a in consts for a in flat):
        return False
    if base in _FOLDABLE:
        return bool(flat)
    schema = target._schema
    if schema.is_mutable or torch.Tag.nondeterministic_seeded in target.tags:
        return False
    if not flat and (base not in _FOLD_FACTORIES or _on_tpu(node)):
        return False  # a factory on the device stays in the graph: no memory kept
    val = node.meta.get("val")
    return isinstance(val, torch.Tensor) and val.numel() <= _FOLD_MAX_NUMEL


def _fold_constants(gm: torch.fx.GraphModule) -> None:
    """Folds the copies, moves and views of the graph's constants.

    A tensor made inside forward (`torch.tensor([...])`, transformers'
    sliding-window masks, DeBERTa's relative positions) becomes a constant
    attribute read through `lift_fresh_copy`, often followed by a move to
    the device; `lift_fresh_copy` has no tpu kernel of its own and a CPU
    constant's move runs on the host, so each split the graph. Evaluated
    here once, each chain becomes one constant (on tpu where it was moved
    there) that the captured graph reads."""
    from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

    graph = gm.graph
    consts: dict = {}
    changed = False
    for node in list(graph.nodes):
        if node.op == "get_attr":
            obj = gm
            for part in node.target.split("."):
                obj = getattr(obj, part, None)
            if isinstance(obj, torch.Tensor):
                consts[node] = obj
            continue
        if not _foldable(node, consts):
            continue
        target = node.target
        sub = lambda a: consts[a] if isinstance(a, torch.fx.Node) else a  # noqa: E731
        args = torch.fx.node.map_aggregate(node.args, sub)
        kwargs = torch.fx.node.map_aggregate(node.kwargs, sub)
        if any(isinstance(a, FakeTensor) for a in (*args, *kwargs.values())):
            continue
        # real values: the backend compiles under AOTAutograd's fake mode
        with torch.no_grad(), unset_fake_temporarily():
            value = target(*args, **kwargs)
            if not isinstance(value, torch.Tensor):
                continue
            # A view of a constant stays a view of it: clone, so the folded
            # constant owns its memory.
            value = value.clone() if value._base is not None else value
        name = f"_tpu_folded_{len(consts)}"
        while hasattr(gm, name):
            name += "_"
        gm.register_buffer(name, value, persistent=False)
        with graph.inserting_before(node):
            new = graph.get_attr(name)
        new.meta = dict(node.meta)
        node.replace_all_uses_with(new)
        graph.erase_node(node)
        consts[new] = value
        changed = True
    if changed:
        graph.eliminate_dead_code()
        gm.recompile()


def _partition(gm: torch.fx.GraphModule) -> torch.nn.Module:
    _fold_constants(gm)
    ok: dict = {}
    prologue, epilogue = _host_nodes(gm)
    unsupported: list = []
    collectives: list = []
    for node in gm.graph.nodes:
        if node.op == "call_function":
            ok[node] = _supported(node, ok)
            if (not ok[node] and node.target is not operator.getitem
                    and node not in prologue and node not in epilogue):
                if _is_collective(node):
                    collectives.append(node)
                else:
                    unsupported.append(node)
    if not unsupported and not collectives and not prologue and not epilogue:
        return _Traced(gm)
    names = sorted({_describe(n) for n in unsupported})
    if unsupported and _fallback_mode() == "error":
        raise NotImplementedError(
            "torch.compile(backend='tpu'): no tpu lowering for " + ", ".join(names) +
            " (TORCH_PJRT_FALLBACK=error forbids splitting the graph)")
    _STATS["graph_splits"] += len(unsupported)
    # Consecutive nodes of one kind share a partition; ids grow in graph
    # order, so the partitions form a chain.
    part: dict = {}
    pid, prev = 1, None
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if node in prologue:
            part[node] = 0
            continue
        if node in epilogue:
            continue
        kind = ok[node]
        if prev is not None and kind != prev:
            pid += 1
        part[node] = pid
        prev = kind
    for node in epilogue:
        part[node] = pid + 1
    kinds = {}
    for node, p in part.items():
        kinds[p] = ok[node] and node not in prologue and node not in epilogue

    from torch.fx.passes.split_module import split_module

    def which(node):
        if node in part:
            return part[node]
        # placeholders/get_attr: the first consumer's partition
        for user in node.users:
            if user in part:
                return part[user]
        return 0

    split = split_module(gm, None, which)
    for name, sub in list(split.named_children()):
        p = int(name.rsplit("_", 1)[1])
        if kinds.get(p, False):
            setattr(split, name, _Traced(sub))
        elif _count_collectives(sub):
            setattr(split, name, _Collectives(sub))
        elif p == 0:
            _stack_host_foreach(sub)
        elif p == pid + 1 and epilogue:
            _merge_host_copies(sub)
    return split


_WARNED_DYNAMIC = False


def _runner(gm: torch.fx.GraphModule, example_inputs) -> torch.nn.Module:
    global _WARNED_DYNAMIC
    if not _WARNED_DYNAMIC and any(isinstance(a, torch.SymInt) for a in example_inputs):
        _WARNED_DYNAMIC = True
        warnings.warn("torch.compile(backend='tpu') compiles static shapes: with dynamic shapes "
                      "each new shape is captured and compiled once (results stay correct; "
                      "see torch_pjrt.bucket_size for bounding the number of shapes)")

    return _partition(gm)


def _boxed(runner: torch.nn.Module) -> Callable:
    """AOTAutograd's boxed calling convention (one list argument); a whole
    graph is called without nn.Module's per-call hook machinery."""
    if isinstance(runner, _Traced):
        def run(args: list):
            return runner.call(args, False)
    else:
        def run(args: list):
            return runner(*args)
    run._boxed_call = True  # an attribute of the function: wrappers copy it
    return run


def _compile_graph(gm: torch.fx.GraphModule, example_inputs) -> Callable:
    return _boxed(_runner(gm, example_inputs))


def _bw_donated_idxs() -> list:
    """The backward's arguments that are saved activations aliasing no input
    or output of either graph (AOTAutograd's bw_donated_idxs; empty when the
    backward may run twice, under retain_graph)."""
    ctx = torch._guards.TracingContext.try_get()
    meta = getattr(ctx, "fw_metadata", None) if ctx is not None else None
    return list(getattr(meta, "bw_donated_idxs", None) or ())


def _compile_backward(gm: torch.fx.GraphModule, example_inputs) -> Callable:
    donated = _bw_donated_idxs()
    runner = _runner(gm, example_inputs)
    if not donated or not isinstance(runner, _Traced):
        return _boxed(runner)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    runner.consume = [i for i in donated if i < len(placeholders)
                      and isinstance(placeholders[i].meta.get("val"), torch.Tensor)]
    return _consuming(runner)


def _decompositions() -> dict:
    """Core-ATen decompositions for the ops without a tpu kernel only: an op
    we lower natively stays whole."""
    from torch._decomp import core_aten_decompositions

    table = {}
    for op, fn in core_aten_decompositions().items():
        if isinstance(op, torch._ops.OpOverload) and not _has_tpu_kernel(op):
            table[op] = fn
    return table


def tpu_backend(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    """The Dynamo backend registered as "tpu"."""
    from torch._dynamo.backends.common import aot_autograd

    from torch._functorch.partitioners import min_cut_rematerialization_partition

    # The min-cut partitioner saves fewer activations for the backward,
    # recomputing cheap pointwise ops inside it (fused in the same
    # executable), so a compiled step holds less memory at its peak than
    # the default partitioner's save-everything choice.
    backend = aot_autograd(fw_compiler=_compile_graph, bw_compiler=_compile_backward,
                           partition_fn=min_cut_rematerialization_partition,
                           decompositions=_decompositions(),
                           keep_inference_input_mutations=True)
    return backend(gm, example_inputs)


def stats() -> dict:
    return dict(_STATS)
