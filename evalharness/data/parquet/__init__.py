"""The parquet reader (``dataset.format=parquet``), without pyarrow: the footer's schema and row
groups (:mod:`.footer`, in Apache Thrift's compact protocol, :mod:`.thrift`), a column's pages read
from the file (:mod:`.file`), decompressed (:mod:`.compression`; snappy by cramjam or by
:mod:`.snappy`) and decoded (:mod:`.values`: PLAIN, dictionary, RLE and the delta encodings), and
the container reader that lists images and labels from them (:mod:`.parquet_reader`). Every size a file
declares is checked against :mod:`evalharness.data.bounds` before it is allocated.
"""
