"""The one candidate runner of compare and compare --chain (run/candidates.py): each candidate's
command line, a compare candidate as the sweep job it would be, a chain step as a single run."""

from __future__ import annotations

from evalharness.run.candidates import single_run, sweep_job


def test_a_compare_candidate_is_the_job_the_multirun_would_number_and_name():
    made = sweep_job("delegate=gpu", ["delegate=gpu", "task.num_images=2"], "/out", 1)
    assert made.args[:3] == ("-m", "delegate=gpu", "task.num_images=2")
    assert made.args[3] == "hydra.sweep.dir=/out"
    subdir = made.args[4]  # conf/hydra/default.yaml's pattern with the job number in place
    assert subdir.startswith("hydra.sweep.subdir='1_${task.name}_") and "hydra.job.num" not in subdir


def test_a_chain_step_is_a_single_run_into_its_directory():
    made = single_run("quant=int8", ["quant=int8"], "/out/1_quant_int8")
    assert made.args == ("quant=int8", "hydra.run.dir=/out/1_quant_int8") and made.label == "quant=int8"
