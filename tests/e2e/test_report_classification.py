"""``report diff`` / ``rescore`` on real val50 runs: MobileNet v2 quant, reference kernels vs CPU path."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import VAL50, runs_fixture
from scipy.stats import binomtest
from shared_runs import fake_run_dir

from evalharness.report.commands import entry as cli

MODEL = "model=mobilenet_v2_1.0_224_quant"
FLIPPED = ["ILSVRC2012_val_00000947.JPEG", "ILSVRC2012_val_00002721.JPEG"]


# reference and cpu on val50, cpu on the first 10 images
runs = runs_fixture(
    [*VAL50, MODEL],
    {"reference": ["delegate=reference"], "cpu": ["delegate=cpu"], "cpu10": ["task.num_images=10"]},
)


def report(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_diff_lists_exactly_the_two_changed_images_with_mcnemar(runs, capsys):
    code, out, _ = report(capsys, "diff", runs["reference"], runs["cpu"], "--format", "json")
    assert code == 0
    doc = json.loads(out)
    cls = doc["classification"]
    changes = {c["id"]: c for c in cls["top1_changes"]}
    assert sorted(changes) == FLIPPED
    # 947: reference right, CPU wrong (the only discordant pair); 2721: wrong in both, top-1 changed.
    assert changes[FLIPPED[0]] | {"a_rank": 0} == {
        "id": FLIPPED[0],
        "kind": "regression",
        "label": "cradle",
        "a_top1": "cradle",
        "b_top1": "diaper, nappy, napkin",
        "a_rank": 0,
        "b_rank": 1,
    }
    assert changes[FLIPPED[1]]["kind"] == "changed"
    assert (cls["regressions"], cls["improvements"], cls["discordant"]) == (1, 0, 1)
    assert cls["mcnemar_p"] == pytest.approx(binomtest(1, 1, 0.5).pvalue, rel=1e-12)
    assert cls["top1_agreement"] == 0.96 and 0 < cls["top5_overlap"] <= 1
    top1 = next(r for r in doc["metrics"] if r["name"] == "top1")
    assert (top1["a"], top1["b"], top1["delta"]) == (0.76, 0.74, -0.02)
    assert doc["verdict"].startswith("B is not significantly different from A (McNemar p=1.00, 1 discordant")

    code, text, _ = report(capsys, "diff", runs["reference"], runs["cpu"])
    assert code == 0
    assert all(name in text for name in FLIPPED) and "A right -> B wrong" in text
    assert "B is not significantly different from A" in text.splitlines()[-1]
    for heading in ("Metrics", "Latency", "Model and delegation", "Paired top-1", "Verdict"):
        assert f"\n{heading}\n" in text
    code, markdown, _ = report(capsys, "diff", runs["reference"], runs["cpu"], "--format", "markdown")
    assert "| top1 | 0.7600 | 0.7400 | -0.0200 | -2.6% |" in markdown


def test_json_report_is_deterministic(runs, capsys):
    first = report(capsys, "diff", runs["reference"], runs["cpu"], "--format", "json")[1]
    second = report(capsys, "diff", runs["reference"], runs["cpu"], "--format", "json")[1]
    assert first == second and first.endswith("}\n")


def test_diff_refuses_runs_on_other_images(runs, capsys):
    code, out, err = report(capsys, "diff", runs["cpu"], runs["cpu10"] / "metrics.json")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: runs are not comparable: dataset differs")
    assert "sample count differs: 50 vs 10" in err


def test_gate_exit_codes_both_ways(runs, capsys):
    a, b = runs["reference"], runs["cpu"]
    code, _, err = report(capsys, "diff", a, b, "--fail-if", "top1<-0.005", "--fail-if", "size_bytes>+0%")
    assert code == 1
    head, power = err.split("; ", 1)
    assert head == "regression: top1<-0.005: top1 0.76 -> 0.74 (change -0.02)" and err.count("\n") == 1
    # a threshold 50 paired images cannot tell from noise is said beside the result
    assert power.startswith("50 paired images cannot resolve a change of 0.005") and "~1568 images" in power
    rules = ["top1<-0.05", "regressions>1", "size_bytes>+0%"]
    code, out, err = report(capsys, "diff", a, b, *(arg for rule in rules for arg in ("--fail-if", rule)))
    assert (code, err) == (0, "")
    assert "| ok" not in out and "top1<-0.05" in out
    # Relative rule on a deterministic quantity: coverage 0.97 (cpu) -> 0 (reference) is -100 %.
    code, _, err = report(capsys, "diff", b, a, "--fail-if", "coverage<-50%", "--format", "json")
    assert code == 1 and "coverage<-50%" in err


@pytest.mark.parametrize(
    "rule,message",
    [
        ("top1<<0", "expected METRIC OP NUMBER"),
        ("AP<0", "unknown metric 'AP'"),
        ("mcnemar_p<5%", "property of the pair"),
    ],
)
def test_bad_rules_are_usage_errors(runs, capsys, rule, message):
    code, _, err = report(capsys, "diff", runs["reference"], runs["cpu"], "--fail-if", rule)
    assert code == 2 and message in err and err.startswith("error: ")


def test_different_preprocessing_warns_and_blocks_gating_until_allowed(runs, capsys, tmp_path):
    changed = tmp_path / "pil"
    shutil.copytree(runs["cpu"], changed)
    doc = json.loads((changed / "metrics.json").read_text())
    doc["provenance"]["preprocessing"]["resize"] = "pil_bilinear"
    fake_run_dir(changed, doc)
    code, out, err = report(capsys, "diff", runs["reference"], changed)
    assert code == 0 and "WARNING: preprocessing differs: resize 'tflite_bilinear' vs 'pil_bilinear'" in out
    assert err == "warning: preprocessing differs: resize 'tflite_bilinear' vs 'pil_bilinear'\n"
    code, _, err = report(capsys, "diff", runs["reference"], changed, "--fail-if", "top1<-0.5")
    assert code == 2 and "refusing to gate runs whose preprocessing differs" in err
    allow = "--allow-different-preprocessing"
    code, out, err = report(capsys, "diff", runs["reference"], changed, "--fail-if", "top1<-0.5", allow)
    assert (code, err) == (0, "") and "warning (acknowledged): preprocessing differs" in out


def test_diff_names_the_changed_confusions_and_tests_each_class(runs, capsys):
    """val50: cradle -> diaper appears, coho's wrong answer moves; no class survives Holm's correction."""
    code, out, _ = report(capsys, "diff", runs["reference"], runs["cpu"], "--format", "json")
    cls = json.loads(out)["classification"]
    pairs = {
        (r["truth"].split(",")[0], r["predicted"].split(",")[0]): r["delta"] for r in cls["confusion_changes"]
    }
    assert pairs == {("cradle", "diaper"): 1, ("coho", "gar"): 1, ("coho", "barracouta"): -1}
    per_class = cls["per_class"]
    assert per_class["correction"] == "holm" and per_class["significant"] == []
    [cradle] = per_class["changed"]
    assert (cradle["label"].split(",")[0], cradle["a_only"], cradle["b_only"], cradle["p"]) == (
        "cradle",
        1,
        0,
        1.0,
    )
    metrics = json.loads((runs["cpu"] / "metrics.json").read_text())["metrics"]
    rows = metrics["analysis"]["per_class"]
    assert (
        sum(r["images"] for r in rows) == 50 and sum(r["correct"] for r in rows) == metrics["correct"]["top1"]
    )
    code, text, _ = report(capsys, "diff", runs["reference"], runs["cpu"])
    assert "cradle -> diaper    0  1     +1" in text and "after the correction: none" in text


def test_one_runs_per_class_table_has_wilson_intervals(runs, capsys):
    code, text, _ = report(capsys, "analysis", runs["cpu"], "--max-rows", "3")
    assert code == 0 and "Per-class top-1 (47 classes present, lowest first)" in text
    assert "[0.000, 0.793]" in text and "cradle -> diaper" in text  # Wilson of 0/1; a confusion


def test_html_report_embeds_plot_and_thumbnails(runs, capsys, tmp_path):
    target = tmp_path / "diff.html"
    code, _, _ = report(capsys, "diff", runs["reference"], runs["cpu"], "--format", "html", "-o", target)
    assert code == 0
    page = target.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert "http" not in page.split("<svg")[0]  # nothing loaded from elsewhere
    assert page.count("<svg") == 1 and "summary statistics only" in page
    assert page.count('src="data:image/jpeg;base64,') == 2


def test_rescore_reproduces_stored_imagenet_metrics(runs, capsys):
    code, out, _ = report(capsys, "rescore", runs["cpu"], "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["reproduced"] and doc["mismatches"] == []
    # top1..top10, correct.top1..top10, num_scored; schema 2: intervals.method/confidence/top1..top10;
    # schema 4: analysis.per_class/classes_present/confusions/confusions_total
    assert doc["compared"] == 37
    code, out, _ = report(capsys, "rescore", runs["cpu"], "--top-k", "5")
    assert code == 0 and "reproduced: all 22 recomputed values equal" in out  # 11 + 7 interval + 4 analysis
    code, _, err = report(capsys, "rescore", runs["cpu"], "--top-k", "11")
    assert code == 2 and "store top-10" in err


def test_rescore_reports_a_tampered_number(runs, capsys, tmp_path):
    tampered = tmp_path / "run"
    shutil.copytree(runs["reference"], tampered)
    doc = json.loads((tampered / "metrics.json").read_text())
    doc["metrics"]["top1"] = 0.78
    fake_run_dir(tampered, doc)
    code, out, _ = report(capsys, "rescore", tampered)
    assert code == 1 and "NOT reproduced: 1 of 37 values differ" in out and "0.78" in out  # schema 4: 37


def test_each_kind_of_difference_has_its_own_flag(runs, capsys, tmp_path):
    """Another label set (class names in order) is gated with --allow-different-labels; the old
    --allow-different-preprocessing still covers it, with a one-line note naming the new flag."""
    changed = tmp_path / "relabelled"
    shutil.copytree(runs["cpu"], changed)
    doc = json.loads((changed / "metrics.json").read_text())
    doc["provenance"]["labels"]["names_sha256"] = "0" * 64
    fake_run_dir(changed, doc)
    gate = ("--fail-if", "top1<-0.5")
    code, _, err = report(capsys, "diff", runs["reference"], changed, *gate)
    assert code == 2 and "label set differs" in err and "pass --allow-different-labels if" in err
    code, out, err = report(capsys, "diff", runs["reference"], changed, *gate, "--allow-different-labels")
    assert (code, err) == (0, "") and "warning (acknowledged): label set differs" in out
    old_flag = "--allow-different-preprocessing"
    code, out, err = report(capsys, "diff", runs["reference"], changed, *gate, old_flag)
    (note,) = err.splitlines()
    assert code == 0 and note.startswith("note: ") and "pass --allow-different-labels" in note
    # a flag for another kind does not cover it
    doc["provenance"]["preprocessing"]["resize"] = "pil_bilinear"
    fake_run_dir(changed, doc)
    code, _, err = report(capsys, "diff", runs["reference"], changed, *gate, "--allow-different-labels")
    assert code == 2 and "pass --allow-different-preprocessing if" in err
