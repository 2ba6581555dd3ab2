"""The part of the TFLite metadata schema (``metadata_schema.fbs``, identifier ``M001``) that
evalharness reads, declared once as schema text; field slots and enum values are generated from it.

Why not field numbers in the reader: a flatbuffer field is addressed by its slot, which is its
position in the table's declaration (a union takes two: its type tag, then its value). Writing the
numbers by hand beside each read is how they drift; here the declarations are copied in the
schema's own order, slots are counted by :func:`parse`, and the reader asks by name. The wheel
ships no generated metadata code (``ai_edge_litert`` has only the model schema), and the one
published package that has it (``tflite-support``) pins TensorFlow-era dependencies.

Each table, union and enum is declared up to the last member read, every member before it in
the schema's order, so the counted slots are the schema's; members after those are left out
(flatbuffers only append, so a later schema version changes nothing here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SCHEMA = """
table ModelMetadata {
  name: string; description: string; version: string; subgraph_metadata: [SubGraphMetadata];
  author: string; license: string;
}
table SubGraphMetadata {
  name: string; description: string; input_tensor_metadata: [TensorMetadata];
  output_tensor_metadata: [TensorMetadata];
}
table TensorMetadata {
  name: string; description: string; dimension_names: [string]; content: Content;
  process_units: [ProcessUnit]; stats: Stats; associated_files: [AssociatedFile];
}
table ProcessUnit { options: ProcessUnitOptions; }
table NormalizationOptions { mean: [float]; std: [float]; }
table AssociatedFile { name: string; description: string; type: AssociatedFileType; }
union ProcessUnitOptions { NormalizationOptions, ScoreCalibrationOptions, ScoreThresholdingOptions }
enum AssociatedFileType : byte { UNKNOWN = 0, DESCRIPTIONS = 1, TENSOR_AXIS_LABELS = 2 }
"""

_BLOCK = re.compile(r"\b(table|union|enum)\s+(\w+)[^{]*\{([^}]*)\}", re.S)


@dataclass(frozen=True)
class Schema:
    """Slots of each table's fields (a union field's value slot; its tag is the slot before) and
    the value of each union member and enum name."""

    slots: dict[str, dict[str, int]]
    types: dict[str, dict[str, str]]  # table -> field -> type name (a vector's element type)
    unions: frozenset[str]
    values: dict[str, dict[str, int]]

    def slot(self, table: str, field: str) -> int:
        return self.slots[table][field]


def parse(text: str) -> Schema:
    """Slots counted as flatc counts them: one per field in declaration order, two for a union
    (``<field>_type`` first). Union members are numbered from 1 (0 is NONE); enums as written."""
    blocks = [(kind, name, body) for kind, name, body in _BLOCK.findall(text)]
    unions = frozenset(name for kind, name, _ in blocks if kind == "union")
    slots: dict[str, dict[str, int]] = {}
    types: dict[str, dict[str, str]] = {}
    values: dict[str, dict[str, int]] = {}
    for kind, name, body in blocks:
        if kind == "table":
            fields, kinds, slot = {}, {}, 0
            for decl in filter(None, (d.strip() for d in body.split(";"))):
                field, type_name = (part.strip() for part in decl.split(":", 1))
                if type_name in unions:
                    fields[f"{field}_type"] = slot
                    slot += 1
                fields[field], kinds[field] = slot, type_name.strip("[]")
                slot += 1
            slots[name], types[name] = fields, kinds
        else:
            members = [m.strip() for m in body.split(",") if m.strip()]
            if kind == "union":
                values[name] = {m: i for i, m in enumerate(members, start=1)}
            else:
                values[name] = {m.split("=")[0].strip(): int(m.split("=")[1]) for m in members}
    return Schema(slots, types, unions, values)


METADATA = parse(SCHEMA)
