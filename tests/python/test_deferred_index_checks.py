"""torch_pjrt.deferred_index_checks(): eager ops check index tensors on tpu
on the device instead of waiting for their values on the host. Values are
the same as CPU's; a bad index does not raise at the call but at the next
wait on the device, with the op's check named; outside the context (and in
other threads) checks stay on the host and raise at the call."""
import threading

import pytest
import torch
import torch_pjrt

DEV = "tpu"


def test_values_match_cpu(no_leaks):
    x = torch.randn(10, 4)
    idx = torch.tensor([1, 3, 9, 0])
    src = torch.randn(4, 4)
    with torch_pjrt.deferred_index_checks():
        d, di = x.to(DEV), idx.to(DEV)
        got = {
            "index": d[di],
            "index_select": d.index_select(0, di),
            "gather": torch.gather(d, 0, di[:, None].expand(4, 4)),
            "index_copy": d.clone().index_copy_(0, di, src.to(DEV)),
            "embedding": torch.nn.functional.embedding(di, d),
        }
        got = {k: v.cpu() for k, v in got.items()}
    want = {
        "index": x[idx],
        "index_select": x.index_select(0, idx),
        "gather": torch.gather(x, 0, idx[:, None].expand(4, 4)),
        "index_copy": x.clone().index_copy_(0, idx, src),
        "embedding": torch.nn.functional.embedding(idx, x),
    }
    for k in want:
        torch.testing.assert_close(got[k], want[k], rtol=0, atol=0, msg=k)


@pytest.mark.parametrize("op, message", [
    (lambda d, i: d.index_select(0, i), r"index out of range in self \(found by a device-side"),
    (lambda d, i: d[i], r"^index out of bounds for dimension 0 with size 10 \(found by a device-"),
    (lambda d, i: d.clone().index_copy_(0, i, torch.ones(2, 4, device=DEV)),
     r"index_copy_\(\): index out of bounds for dimension 0 with size 10 \(found by a device-side"),
])
def test_bad_index_fails_the_next_wait(op, message):
    d = torch.randn(10, 4, device=DEV)
    bad = torch.tensor([1, 10]).to(DEV)
    with torch_pjrt.deferred_index_checks():
        y = op(d, bad)  # returns without waiting for the index
        with pytest.raises(RuntimeError, match=message):
            torch.tpu.synchronize()
    # the failure is reported once; the device goes on working
    assert d.sum().item() == pytest.approx(d.cpu().sum().item(), rel=1e-5)
    del y


def test_host_checks_outside_and_in_other_threads():
    d = torch.randn(10, 4, device=DEV)
    bad = torch.tensor([1, 10]).to(DEV)
    with pytest.raises(IndexError, match="index out of range in self"):
        d.index_select(0, bad)  # the default: at the call
    seen = []

    def other():
        try:
            d.index_select(0, bad)
        except IndexError as e:
            seen.append(str(e))

    with torch_pjrt.deferred_index_checks():
        with torch_pjrt.deferred_index_checks():  # nests
            pass
        t = threading.Thread(target=other)
        t.start()
        t.join()
        # a host index is still checked at the call
        with pytest.raises(IndexError, match="index out of range in self"):
            d.index_select(0, torch.tensor([10]))
    assert seen and "index out of range in self" in seen[0]
    with pytest.raises(IndexError, match="index out of range in self"):
        d.index_select(0, bad)  # restored on exit
