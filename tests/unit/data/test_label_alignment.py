"""Index ground truth lines up with a model's labels by count and order, whatever the spelling."""

from __future__ import annotations

from evalharness.data.label_alignment import align, names_of

DATASET = ["tench, Tinca tinca", "goldfish, Carassius auratus", "pay-phone, pay-station", "crane", "crane"]


def test_same_names_line_up_with_no_difference():
    aligned = align(dict(enumerate(DATASET)), len(DATASET), DATASET)
    assert aligned.offset == 0 and aligned.differing == () and aligned.problem == ""


def test_background_first_line_is_an_offset_of_one_and_spellings_may_differ():
    model = ["background", "tench", "Goldfish", "pay-phone", "crane", "crane"]
    aligned = align(dict(enumerate(DATASET)), len(DATASET), model)
    assert aligned.offset == 1 and aligned.differing == ()  # a shared name is the same class
    model[2] = "gold fish (Carassius)"
    aligned = align(dict(enumerate(DATASET)), len(DATASET), model)
    assert aligned.offset == 1 and aligned.differing == ((1, DATASET[1], "gold fish (Carassius)"),)
    note = aligned.note("synset_words.txt", "model labels")
    assert "5 classes of synset_words.txt line up by index" in note and "1 name(s) differ" in note


def test_count_and_order_mismatches_are_refused_with_the_reason():
    names = dict(enumerate(DATASET))
    assert align(names, len(DATASET), DATASET[:-1]).problem.startswith("count: 5 classes against 4")
    shifted = [*DATASET[1:], "zebra"]  # one class lost at the top, one added at the end
    assert align(names, len(DATASET), shifted).problem.startswith("order: class 1 'goldfish")
    unrelated = ["a", "b", "c", "d", "e"]
    assert align(names, len(DATASET), unrelated).problem.startswith("names: only 0 of 5")


def test_a_partial_class_list_checks_only_the_classes_named():
    aligned = align({2: "pay-phone"}, None, ["background", *DATASET])
    assert aligned.offset == 1 and aligned.count == 1
    assert align({2: "pay-phone"}, None, DATASET, "1").problem.startswith("order")


def test_names_fold_case_underscores_and_split_commas():
    assert names_of("Pay_Phone, pay-station ,") == {"pay phone", "pay-station"}
