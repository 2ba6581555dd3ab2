"""loop.parallel's pure parts: the setting, the candidate splits, the shard processes' overrides."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from shared_runs import fake_run_dir

from evalharness.core.errors import ConfigError, EvalHarnessError
from evalharness.run.parallel import _take_over, candidates, list_container_once, shard_overrides
from evalharness.settings.child_processes import check_parallel as check
from evalharness.settings.child_processes import parse_parallel as parse
from evalharness.tasks.definition import Abilities


def test_parse_accepts_off_auto_and_p_by_t_only():
    assert parse("off") == "off" and parse("AUTO") == "auto" and parse("2x1") == (2, 1)
    for bad in ("3", "0x2", "2x", "x2", "two"):
        with pytest.raises(ConfigError, match="use off, auto or PxT"):
            parse(bad)


def test_candidates_split_the_cores_exactly():
    assert candidates(2) == [(1, 2), (2, 1)]
    assert candidates(16) == [(1, 16), (2, 8), (4, 4), (8, 2), (16, 1)]
    assert candidates(1) == [(1, 1)]


def test_shard_overrides_replace_what_the_parent_sets():
    given = ["model=m", "loop.parallel=auto", "delegate.num_threads=4", "dataset.shard.count=1", "+x=1",
             "loop.lanes=4"]  # fmt: skip
    out = shard_overrides(given, 2, 1, 1, "/r/parallel/shard_1")
    assert out == [
        "model=m",
        "+x=1",
        "loop.parallel=off",
        "dataset.shard.count=2",
        "dataset.shard.index=1",
        "delegate.num_threads=1",
        "loop.lanes=1",  # P x T fills the cores: no instances side by side in a shard
        "hydra.run.dir=/r/parallel/shard_1",
        "loop.progress=false",
    ]


class _Task:
    name = "t"

    def __init__(self, mergeable: bool) -> None:
        self.abilities = Abilities(sample_key="id" if mergeable else None)


def test_check_refuses_what_cannot_be_sharded_and_merged():
    check("off", _Task(False), 4, False)  # off: nothing to check
    with pytest.raises(ConfigError, match="cannot be split into shards"):
        check("auto", _Task(False), 1, True)
    with pytest.raises(ConfigError, match="drop dataset.shard.count=2"):
        check("2x1", _Task(True), 2, True)
    with pytest.raises(ConfigError, match="repeats the command line"):
        check("2x1", _Task(True), 1, False)
    with pytest.raises(ConfigError, match="the delegate runs on an accelerator"):
        check("auto", _Task(True), 1, True, accelerator=True)
    check("2x1", _Task(True), 1, True, accelerator=True)  # an explicit split is the user's to give


def test_a_run_already_there_is_refused_continued_or_replaced_like_a_single_run(tmp_path):
    """The parent takes a single run's claim: the same refusals, the same lock, and a single run's
    interrupted predictions are never replaced by a parallel resume."""
    from evalharness.core.errors import EvalHarnessError
    from evalharness.rundir.state import claim, release

    run, config = str(tmp_path), {"task": {"name": "t"}, "loop": {}}
    take = lambda resume, overwrite: _take_over(run, config, resume, overwrite, True)  # noqa: E731
    claim(run, config, {}, resume=False, overwrite=False, can_resume=True)  # another writer holds it
    release(run)
    (tmp_path / "parallel" / "shard_0").mkdir(parents=True)
    fake_run_dir(tmp_path, {"status": "complete"})
    with pytest.raises(EvalHarnessError, match="already holds a complete run; loop.resume=true"):
        take(False, False)
    with pytest.raises(EvalHarnessError, match="nothing to resume"):
        take(True, False)
    fake_run_dir(tmp_path, {"status": "partial"})
    take(True, False)  # the parent's record goes, shards stay
    release(run)
    assert not (tmp_path / "metrics.json").exists() and (tmp_path / "parallel" / "shard_0").is_dir()
    fake_run_dir(tmp_path, {"status": "complete"})
    take(False, True)
    release(run)
    assert not (tmp_path / "metrics.json").exists() and not (tmp_path / "parallel").exists()


def test_a_single_interrupted_run_is_not_resumed_in_parallel(tmp_path):
    from evalharness.rundir.state import claim, release

    run, config = str(tmp_path), {"task": {"name": "t"}, "loop": {}}
    claim(run, config, {}, resume=False, overwrite=False, can_resume=True)
    release(run)
    fake_run_dir(tmp_path, predictions=[{"id": "a", "latency_ms": 1.0}])
    before = (tmp_path / "predictions.jsonl").read_bytes()
    with pytest.raises(ConfigError, match="not split by loop.parallel"):
        _take_over(run, config, True, False, True)
    with pytest.raises(EvalHarnessError, match="already holds an interrupted run; loop.resume=true") as exc:
        _take_over(run, config, False, False, True)
    assert exc.type is EvalHarnessError
    assert (tmp_path / "predictions.jsonl").read_bytes() == before


def test_op_profile_is_refused_where_it_could_not_be_kept_or_run():
    from evalharness.settings.validate import check_op_profile

    check_op_profile(True, 1, "host", "off")
    check_op_profile(False, 8, "adb", "auto")  # not asked for: nothing to refuse
    for args, words in (
        ((True, 1, "host", "2x1"), "the merged run would keep no profile"),
        ((True, 8, "host", "off"), "use loop.batch_size=1"),
        ((True, 1, "adb", "off"), "use runner=host"),
    ):
        with pytest.raises(ConfigError, match=words):
            check_op_profile(*args)


def test_a_resume_with_another_split_is_refused_before_anything_is_touched(tmp_path):
    from evalharness.rundir.state import claim, release

    run, config = str(tmp_path), {"task": {"name": "t"}, "loop": {}}
    claim(run, config, {}, resume=False, overwrite=False, can_resume=True)
    release(run)
    for i in range(2):
        (tmp_path / "parallel" / f"shard_{i}").mkdir(parents=True)
    fake_run_dir(tmp_path, {"status": "interrupted"})
    for split in ("3x1", "auto"):
        with pytest.raises(ConfigError, match="give its split, loop.parallel=2xT"):
            _take_over(run, config, True, False, True, split)
        assert (tmp_path / "metrics.json").read_text() == '{"status": "interrupted"}'
    _take_over(run, config, True, False, True, "2x1")
    release(run)
    assert not (tmp_path / "metrics.json").exists()


def test_a_split_run_resumes_only_as_one(tmp_path):
    from evalharness.run.parallel import refuse_unsplit_resume

    refuse_unsplit_resume(str(tmp_path), True)  # nothing split here
    (tmp_path / "parallel" / "shard_0").mkdir(parents=True)
    (tmp_path / "parallel" / "shard_1").mkdir()
    refuse_unsplit_resume(str(tmp_path), False)  # not a resume: the claim decides
    with pytest.raises(ConfigError, match="resume it with loop.parallel=2xT"):
        refuse_unsplit_resume(str(tmp_path), True)


def test_a_container_is_listed_once_before_the_shard_processes(tmp_path):
    """P shard processes would each hash every image of the dataset; the parent lists it once into
    the kept shard indexes, which they then read. A folder, or no index dir, is left to them."""
    from types import SimpleNamespace

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from pack_containers import tiny_items, write_webdataset  # noqa: PLC0415

    from evalharness.tasks.definition import Abilities  # noqa: PLC0415

    root = write_webdataset(tiny_items(), tmp_path / "w", shards=2)
    index_dir = tmp_path / "index"
    labelled = SimpleNamespace(abilities=Abilities())
    for fmt, kept in (("val_txt", None), ("auto", None), ("auto", index_dir), ("webdataset", index_dir)):
        dataset = SimpleNamespace(root=root, format=fmt, index_dir=kept, split="auto")
        list_container_once(SimpleNamespace(dataset=dataset, definition=labelled))  # type: ignore[arg-type]
        listed = sorted(index_dir.glob("webdataset-[0-9a-f]*.json")) if index_dir.exists() else []
        assert len(listed) == (0 if kept is None else 2)
    # a task whose ground truth lies beside the container (COCO's JSON, dataset.format=coco): its
    # images alone, listed as its shard processes list them
    dataset = SimpleNamespace(root=root, format="coco", index_dir=index_dir, split="auto")
    images_alone = SimpleNamespace(abilities=Abilities(container_labels=False))
    list_container_once(SimpleNamespace(dataset=dataset, definition=images_alone))  # type: ignore[arg-type]
    assert len(list(index_dir.glob("webdataset-images-*.json"))) == 2
