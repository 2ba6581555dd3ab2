"""The machine's bound on thread and process counts (settings/thread_budget.py): the cgroup's pids limit
(v2 and v1, the tightest ancestor), RLIMIT_NPROC and the cores, and the keys checked against it. The
cgroup fs and the affinity are planted, so these hold on any machine."""

from __future__ import annotations

import pytest

from evalharness.core.errors import ConfigError
from evalharness.loop.engine import LoopSettings
from evalharness.settings import thread_budget as tb
from evalharness.settings.validate import check_counts


def plant(directory, pids_max: str, current: int | None = None) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pids.max").write_text(pids_max + "\n")
    if current is not None:
        (directory / "pids.current").write_text(f"{current}\n")


def proc_cgroup(tmp_path, text: str) -> str:
    path = tmp_path / "proc_self_cgroup"
    path.write_text(text)
    return str(path)


def test_cgroup_v2_the_tightest_of_the_cgroup_and_its_ancestors(tmp_path):
    root = tmp_path / "cg"
    plant(root / "a", "50", 45)  # the parent leaves 5
    plant(root / "a" / "b", "1000", 40)  # this cgroup alone would leave 960
    left, words = tb.pids_left(str(root), proc_cgroup(tmp_path, "0::/a/b\n"))
    assert left == 5 and "pids.max 50 - 45 in use" in words


def test_cgroup_v1_under_the_pids_controller(tmp_path):
    root = tmp_path / "cg"
    plant(root / "pids" / "docker" / "x", "64", 60)
    text = "9:name=systemd:/\n8:pids:/docker/x\n4:memory:/docker/x\n0::/\n"
    assert tb.pids_left(str(root), proc_cgroup(tmp_path, text))[0] == 4


def test_a_containers_own_root_files_without_proc(tmp_path):
    root = tmp_path / "cg"
    plant(root, "512", 12)
    assert tb.pids_left(str(root), str(tmp_path / "no_such_file"))[0] == 500


def test_no_limit_where_pids_max_says_max_or_is_absent(tmp_path):
    root = tmp_path / "cg"
    assert tb.pids_left(str(root), proc_cgroup(tmp_path, "0::/\n")) is None
    plant(root, "max", 7)
    assert tb.pids_left(str(root), proc_cgroup(tmp_path, "0::/\n")) is None


def test_garbage_in_the_files_is_no_limit_not_a_crash(tmp_path):
    root = tmp_path / "cg"
    plant(root, "lots")
    (tmp_path / "proc").write_bytes(b"\xff\xfe::::\n")
    assert tb.pids_left(str(root), str(tmp_path / "proc")) is None


@pytest.mark.parametrize(
    ("cores", "pids", "nproc", "bound", "because"),
    [
        (2, None, None, 16, "8 per core x 2 core(s)"),
        (2, (10, "cgroup pids.max 20 - 10 in use (/x)"), None, 10, "cgroup pids.max"),
        (64, None, 100, 100, "RLIMIT_NPROC 100"),
        (4, (0, "cgroup pids.max 5 - 5 in use (/x)"), 3, 1, "cgroup"),  # never below 1
    ],
)
def test_machine_limit_is_the_lowest_of_cores_pids_and_nproc(monkeypatch, cores, pids, nproc, bound, because):
    monkeypatch.setattr(tb, "available_cores", lambda: cores)
    monkeypatch.setattr(tb, "pids_left", lambda: pids)
    monkeypatch.setattr(tb, "nproc_limit", lambda: nproc)
    limit = tb.machine_limit()
    assert limit.bound == bound and because in limit.because
    assert limit.record()["cores"] == cores


def limit_of(bound: int, cores: int = 2) -> tb.Limit:
    return tb.Limit(bound, f"cgroup pids.max {bound} - 0 in use (/x)", cores, bound, None)


def test_num_threads_above_the_bound_is_one_error_naming_key_value_and_bound(monkeypatch):
    monkeypatch.setattr(tb, "available_cores", lambda: 2)
    with pytest.raises(ConfigError) as err:
        tb.thread_budget(100000, None, limit_of(16))
    text = str(err.value)
    assert "delegate.num_threads=100000" in text and "bound of 16" in text and "\n" not in text
    threads, record = tb.thread_budget(4, None, limit_of(16))  # oversubscribed, within the bound
    assert threads == 4 and record["oversubscribed"] and record["bound"]["bound"] == 16
    with pytest.raises(ConfigError, match="bound of 1 "):
        tb.thread_budget(-1, None, limit_of(1))  # -1: the runtime takes every core


@pytest.mark.parametrize(
    ("threads", "loop", "key"),
    [
        (1, LoopSettings(workers=20), "loop.workers=20"),
        (10, LoopSettings(workers=8), "delegate.num_threads=10 with loop.workers=8: 18 threads"),
        (1, LoopSettings(workers=0, parallel="4x5"), "loop.parallel=4x5"),
        (1, LoopSettings(workers=0, parallel="auto"), "loop.parallel=auto"),
    ],
)
def test_the_other_counts_are_checked_against_the_same_bound(threads, loop, key):
    with pytest.raises(ConfigError, match=key):
        check_counts(limit_of(16, cores=32), threads, loop, None)


def test_the_reference_delegate_and_counts_within_the_bound():
    check_counts(limit_of(16), 8, LoopSettings(workers=8, parallel="2x8"), {"num_threads": 16})
    with pytest.raises(ConfigError, match="task.reference_delegate.num_threads=17"):
        check_counts(limit_of(16), 1, LoopSettings(), {"name": "reference", "num_threads": 17})
