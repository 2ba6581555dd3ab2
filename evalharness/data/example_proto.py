"""``tf.train.Example`` and the messages inside it, declared once for the protobuf runtime (a
dependency of LiteRT already), without TensorFlow and without a generated ``_pb2`` file.

The messages are those of tensorflow/core/example/{example,feature}.proto, field for field, so the
wire format is TensorFlow's; they live in a pool of their own, so a process that has imported
TensorFlow (whose pool holds ``tensorflow.Example``) sees no clash. Three deliberate departures, all
invisible on the wire: ``Features.feature`` is declared as the repeated entry message a protobuf map
is encoded as, not as a map, so a name given twice is seen twice (a map keeps the last silently) and
a record of hundreds of thousands of names costs no hash table; an entry's ``Feature`` is kept as
its serialized bytes and parsed (:data:`Feature`) only for the names a reader wants, so those names
cost ~44 MB, not ~100 MB (measured on 600,000 names: tests/unit/data/test_decoder_bounds.py); and a
name is ``bytes``, so a name that is not UTF-8 is shown, not a parse failure.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

__all__ = ["DecodeError", "Example", "Feature"]

_F = descriptor_pb2.FieldDescriptorProto
_PACKAGE = "evalharness.tf"

# message -> (field number, name, type, repeated, message type of the field)
_MESSAGES: dict[str, list[tuple[int, str, int, bool, str]]] = {
    "BytesList": [(1, "value", _F.TYPE_BYTES, True, "")],
    "FloatList": [(1, "value", _F.TYPE_FLOAT, True, "")],
    "Int64List": [(1, "value", _F.TYPE_INT64, True, "")],
    "Feature": [
        (1, "bytes_list", _F.TYPE_MESSAGE, False, "BytesList"),
        (2, "float_list", _F.TYPE_MESSAGE, False, "FloatList"),
        (3, "int64_list", _F.TYPE_MESSAGE, False, "Int64List"),
    ],
    "FeatureEntry": [(1, "key", _F.TYPE_BYTES, False, ""), (2, "value", _F.TYPE_BYTES, False, "")],
    "Features": [(1, "feature", _F.TYPE_MESSAGE, True, "FeatureEntry")],
    "Example": [(1, "features", _F.TYPE_MESSAGE, False, "Features")],
}


def _file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="evalharness/tf_example.proto", package=_PACKAGE, syntax="proto3"
    )
    for name, fields in _MESSAGES.items():
        message = proto.message_type.add(name=name)
        for number, field, kind, repeated, of in fields:
            label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
            added = message.field.add(name=field, number=number, type=kind, label=label)
            if of:
                added.type_name = f".{_PACKAGE}.{of}"
    return proto


def _classes() -> tuple[Any, Any]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file())
    found = (pool.FindMessageTypeByName(f"{_PACKAGE}.{name}") for name in ("Example", "Feature"))
    example, feature = (message_factory.GetMessageClass(message) for message in found)
    return example, feature


Example, Feature = _classes()  # Example.features.feature[i].value: a Feature's bytes
