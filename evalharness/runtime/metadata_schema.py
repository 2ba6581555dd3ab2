"""The part of the TFLite metadata schema (``metadata_schema.fbs``, identifier ``M001``) that
evalharness reads, declared once as schema text; field slots, enum values and the reader's accessor
classes are generated from it (as ``flatc --python`` generates ``schema_py_generated`` for the model).

Why not field numbers in the reader: a flatbuffer field is addressed by its slot, which is its
position in the table's declaration (a union takes two: its type tag, then its value). Writing the
numbers by hand beside each read is how they drift; here the declarations are copied in the
schema's own order, slots are counted by :func:`parse`, and the reader asks by name. The wheel
ships no generated metadata code (``ai_edge_litert`` has only the model schema), and the one
published package that has it (``tflite-support``) pins TensorFlow-era dependencies.

Each table, union and enum is declared up to the last member read, every member before it in
the schema's order, so the counted slots are the schema's; members after those are left out
(flatbuffers only append, so a later schema version changes nothing here).

A reader asks :meth:`Schema.root` for the root table and reads each field as the attribute the
schema names (``root.subgraph_metadata[0].input_tensor_metadata``; ``unit.options``: a union's value
as its member's table, None for a member not declared here). Only these generated accessors touch
table offsets, as the generated model schema's do.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import flatbuffers
from flatbuffers import number_types as nt
from flatbuffers.table import Table

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

_BLOCK = re.compile(r"\b(table|union|enum)\s+(\w+)\s*(?::\s*(\w+))?\s*\{([^}]*)\}", re.S)
_SCALARS = {"byte": nt.Int8Flags, "ubyte": nt.Uint8Flags, "float": nt.Float32Flags, "int": nt.Int32Flags}


@dataclass(frozen=True)
class Schema:
    """Slots of each table's fields (a union field's value slot; its tag is the slot before), their
    types, the value of each union member and enum name, and the accessor classes made from them."""

    slots: dict[str, dict[str, int]]
    types: dict[str, dict[str, str]]  # table -> field -> type name (a vector's element type)
    unions: frozenset[str]
    values: dict[str, dict[str, int]]
    vectors: dict[str, frozenset[str]] = field(default_factory=dict)  # table -> its vector fields
    views: dict[str, type[View]] = field(default_factory=dict, compare=False, repr=False)

    def slot(self, table: str, name: str) -> int:
        return self.slots[table][name]

    def root(self, data: bytes | bytearray, table: str) -> Any:
        """The root table of the finished flatbuffer ``data``, read through ``table``'s accessors."""
        buf = bytearray(data)
        return self.view(table)(Table(buf, flatbuffers.encode.Get(nt.UOffsetTFlags.packer_type, buf, 0)))

    def view(self, table: str) -> type[View]:
        """The accessor class of ``table``: one property per field, generated once."""
        if table not in self.views:
            getters = {name: property(_getter(self, table, name)) for name in self.slots[table]}
            self.views[table] = type(table, (View,), getters)
        return self.views[table]


class View:
    """A table of the metadata flatbuffer; its fields are the generated properties of a subclass."""

    def __init__(self, tab: Table) -> None:
        self._tab = tab


def _getter(schema: Schema, table: str, name: str) -> Callable[[View], Any]:
    """The accessor of field ``name``: a string (None when absent), a table (None), a list of
    strings, tables or numbers ([] when absent), a scalar or enum (0 when absent); a union's value
    as its member's table, by the tag in ``<field>_type`` (None for a member not declared here)."""
    slot, kind = 4 + 2 * schema.slot(table, name), schema.types[table][name]
    scalar = _SCALARS.get(kind)
    vector = name in schema.vectors.get(table, frozenset())
    members = {v: k for k, v in schema.values.get(kind, {}).items()} if kind in schema.unions else {}

    def table_at(tab: Table, at: int, of: str) -> View:
        return schema.view(of)(Table(tab.Bytes, tab.Indirect(at)))

    def read(view: View) -> Any:
        tab = view._tab
        o = tab.Offset(slot)
        if vector and not o:
            return []
        if vector and scalar is not None:
            return [float(v) if kind == "float" else int(v) for v in tab.GetVectorAsNumpy(scalar, o)]
        if vector:
            items = [tab.Vector(o) + 4 * j for j in range(tab.VectorLen(o))]
            if kind == "string":
                return [tab.String(at).decode(errors="replace") for at in items]
            return [table_at(tab, at, kind) for at in items]
        if scalar is not None:
            return tab.Get(scalar, o + tab.Pos) if o else 0
        if not o:
            return None
        if kind == "string":
            return tab.String(o + tab.Pos).decode(errors="replace")
        if members:
            member = members.get(getattr(view, f"{name}_type"))
            return table_at(tab, o + tab.Pos, member) if member in schema.slots else None
        return table_at(tab, o + tab.Pos, kind)

    return read


def parse(text: str) -> Schema:
    """Slots counted as flatc counts them: one per field in declaration order, two for a union
    (``<field>_type`` first, a ubyte). Union members are numbered from 1 (0 is NONE); enums as
    written, read as their underlying type."""
    blocks = _BLOCK.findall(text)
    unions = frozenset(name for kind, name, _, _ in blocks if kind == "union")
    bases = {name: base for kind, name, base, _ in blocks if kind == "enum"}
    slots: dict[str, dict[str, int]] = {}
    types: dict[str, dict[str, str]] = {}
    vectors: dict[str, frozenset[str]] = {}
    values: dict[str, dict[str, int]] = {}
    for kind, name, _, body in blocks:
        if kind == "table":
            fields: dict[str, int] = {}
            kinds: dict[str, str] = {}
            listed = set()
            for decl in filter(None, (d.strip() for d in body.split(";"))):
                member, type_name = (part.strip() for part in decl.split(":", 1))
                if type_name in unions:
                    fields[f"{member}_type"], kinds[f"{member}_type"] = len(fields), "ubyte"
                element = type_name.strip("[]")
                fields[member], kinds[member] = len(fields), bases.get(element, element)
                if type_name.startswith("["):
                    listed.add(member)
            slots[name], types[name], vectors[name] = fields, kinds, frozenset(listed)
        else:
            members = [m.strip() for m in body.split(",") if m.strip()]
            if kind == "union":
                values[name] = {m: i for i, m in enumerate(members, start=1)}
            else:
                values[name] = {m.split("=")[0].strip(): int(m.split("=")[1]) for m in members}
    return Schema(slots, types, unions, values, vectors)


METADATA = parse(SCHEMA)
