"""The metadata reader's field slots, generated from the schema declaration, and a metadata
flatbuffer written with those slots read back by name (no model file needed)."""

from __future__ import annotations

import flatbuffers

from evalharness.runtime.metadata_schema import METADATA, parse
from evalharness.runtime.model_file import ModelFile, _read_tflite_metadata


def test_slots_count_a_union_twice_and_follow_declaration_order():
    s = parse("union U { A, B } table T { x: string; u: U; y: [float]; } enum E : byte { P = 0, Q = 5 }")
    assert s.slots["T"] == {"x": 0, "u_type": 1, "u": 2, "y": 3} and s.types["T"]["y"] == "float"
    assert s.values == {"U": {"A": 1, "B": 2}, "E": {"P": 0, "Q": 5}}


def test_the_slots_the_published_schema_gives():
    """metadata_schema.fbs (M001): the slots every TF-Hub / Model Maker file was written with."""
    assert METADATA.slot("ModelMetadata", "author") == 4 and METADATA.slot("ModelMetadata", "license") == 5
    assert METADATA.slot("TensorMetadata", "process_units") == 4
    assert METADATA.slot("TensorMetadata", "associated_files") == 6
    assert METADATA.slots["ProcessUnit"] == {"options_type": 0, "options": 1}
    assert METADATA.values["AssociatedFileType"]["TENSOR_AXIS_LABELS"] == 2


def _metadata_bytes() -> bytes:
    b = flatbuffers.Builder(256)
    slot = METADATA.slot

    def table(kind: str, fields: dict) -> int:
        b.StartObject(len(METADATA.slots[kind]))
        for name, (kind_of, value) in fields.items():
            if kind_of == "offset":
                b.PrependUOffsetTRelativeSlot(slot(kind, name), value, 0)
            else:
                b.PrependUint8Slot(slot(kind, name), value, 0)
        return b.EndObject()

    def vector(items: list[int]) -> int:
        b.StartVector(4, len(items), 4)
        for item in reversed(items):
            b.PrependUOffsetTRelative(item)
        return b.EndVector()

    def floats(values: list[float]) -> int:
        b.StartVector(4, len(values), 4)
        for v in reversed(values):
            b.PrependFloat32(v)
        return b.EndVector()

    label = b.CreateString("labels.txt")
    mean, std = floats([127.5]), floats([128.0])
    norm = table("NormalizationOptions", {"mean": ("offset", mean), "std": ("offset", std)})
    unit = table("ProcessUnit", {"options_type": ("byte", 1), "options": ("offset", norm)})
    afile = table("AssociatedFile", {"name": ("offset", label), "type": ("byte", 2)})
    inp = table("TensorMetadata", {"process_units": ("offset", vector([unit]))})
    out = table("TensorMetadata", {"associated_files": ("offset", vector([afile]))})
    sub = table(
        "SubGraphMetadata",
        {
            "input_tensor_metadata": ("offset", vector([inp])),
            "output_tensor_metadata": ("offset", vector([out])),
        },
    )
    name, author = b.CreateString("Toy"), b.CreateString("me")
    subs = vector([sub])
    root = table(
        "ModelMetadata",
        {"name": ("offset", name), "author": ("offset", author), "subgraph_metadata": ("offset", subs)},
    )
    b.Finish(root, file_identifier=b"M001")
    return bytes(b.Output())


def test_a_written_metadata_buffer_reads_back_by_name():
    info = ModelFile(path="toy.tflite", inputs=[], outputs=[], op_histogram={}, metadata_buffers=[])
    _read_tflite_metadata(_metadata_bytes(), info)
    assert info.metadata == {"name": "Toy", "author": "me"}
    assert info.normalization == {"mean": [127.5], "std": [128.0]} and info.label_file == "labels.txt"


def test_the_generated_accessors_read_a_written_buffer_by_attribute():
    root = METADATA.root(_metadata_bytes(), "ModelMetadata")
    assert (root.name, root.author, root.version) == ("Toy", "me", None)
    (graph,) = root.subgraph_metadata
    (unit,) = graph.input_tensor_metadata[0].process_units
    assert unit.options_type == METADATA.values["ProcessUnitOptions"]["NormalizationOptions"]
    assert (unit.options.mean, unit.options.std) == ([127.5], [128.0])
    (afile,) = graph.output_tensor_metadata[0].associated_files
    assert (afile.name, afile.type, afile.description) == ("labels.txt", 2, None)
    assert graph.output_tensor_metadata[0].process_units == []


def test_only_the_generated_accessors_touch_table_offsets():
    """Flatbuffers are read through generated accessors only: LiteRT's schema_py_generated for the
    model, metadata_schema's for the metadata; no reader elsewhere reaches into a table."""
    import re
    from pathlib import Path

    package = Path(__file__).resolve().parents[3] / "evalharness"
    raw = re.compile(r"\._tab\b|flatbuffers\.table|\bTable\(|\.Indirect\(|\.VectorLen\(")
    found = [
        f"{path.relative_to(package)}:{n}"
        for path in sorted(package.rglob("*.py"))
        if path.name != "metadata_schema.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if raw.search(line)
    ]
    assert not found, found
