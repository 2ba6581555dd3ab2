"""The resume identity's view of the sample files (data/manifest.py ``stat_digest``): one stat a
file, keyed on (size, mtime_ns, inode, ctime_ns), so a same-size replacement with its mtime
restored is seen."""

from __future__ import annotations

import os

from evalharness.data.manifest import stat_digest


def test_the_resume_identity_sees_a_replacement_with_its_old_size_and_mtime(tmp_path):
    src = tmp_path / "a.jpg"
    src.write_bytes(b"picture one")
    before, st = stat_digest([str(src)]), os.stat(src)
    assert stat_digest([str(src)]) == before
    src.write_bytes(b"picture two")
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert stat_digest([str(src)]) != before
    src.unlink()
    assert stat_digest([str(src)]) not in (before, None)
