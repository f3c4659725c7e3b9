"""Faults raise on every surviving rank instead of hanging or aborting: a
rank passing a tensor of another shape (a clear message on every rank), a
rank missing past the group's timeout, a rank that died. The launcher's
deadline bounds each run, so a hang fails the test."""
import _launch


def _errors(results):
    return [r[1]["error"] for r in results if r[0] == "ok" and "error" in r[1]]


def test_wrong_shape_is_a_clear_error_on_every_rank():
    res = _launch.run(2, "_faults", "wrong_shape", allow_errors=True, timeout=120)
    assert [r[0] for r in res] == ["ok", "ok"], res
    for err in _errors(res):
        assert err and "do not match" in err and "16" in err and "32" in err, err


def test_mismatched_splits_and_collectives():
    res = _launch.run(2, "_faults", "mismatches", timeout=120)
    for out in res:
        assert "expects" in out["a2a"]["error"], out
        assert "different collectives" in out["ops"]["error"], out
        assert out["after"] == [2.0, 2.0, 2.0]


def test_group_timeout_is_honoured():
    res = _launch.run(2, "_faults", "late_rank", allow_errors=True, timeout=120)
    err = res[0][1]["error"]
    assert err and "Timed out" in err, res[0]
    # The group's timeout (3 s), not the launcher's deadline, ended the wait.
    assert res[0][1]["seconds"] < 60, res[0]


def test_dead_rank_raises_on_the_others():
    res = _launch.run(2, "_faults", "dead_rank", allow_errors=True, timeout=120)
    assert res[1][0] == "died"
    err = res[0][1]["error"]
    assert err and "pjrt" in err, res[0]
