"""Bad image files, generated here with Pillow/numpy (no binaries in the repository).

Undecodable files (truncated, empty, not an image, decompression bomb): ``loop.strict=true`` stops
the run at the first one with one line naming the path and the reason, and a partial metrics.json;
``loop.strict=false`` skips and lists them while the good images are still scored. Convertible
files (grayscale, CMYK, 16-bit, RGBA, palette, EXIF-rotated) are decoded to RGB, never skipped,
with the pixels checked. Files that are not regular files (symlink loops, broken links, FIFOs)
are refused when the dataset is listed, before the run, in both modes.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import textwrap
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import ASSETS, run_cli, run_inprocess
from PIL import Image, ImageOps

from evalharness.core.errors import DataError, EvalHarnessError
from evalharness.data.decode import MAX_IMAGE_PIXELS, decode_rgb
from evalharness.data.ground_truth import load_ground_truth

GOOD = {"a_parrot.jpg": ("parrot.jpg", "macaw"), "z_chelsea.png": ("chelsea.png", "Egyptian cat")}
HTML = b"<!DOCTYPE html><html><body>404 Not Found</body></html>\n"
LIMIT = f"{MAX_IMAGE_PIXELS}: decompression-bomb guard); downscale it or remove it from the dataset"
LISTING = "fix or remove it (checked when listing, whatever loop.strict)"


# --- generators --------------------------------------------------------------------------------


def _noise(h: int = 48, w: int = 64, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def _blocks() -> np.ndarray:
    """16x96 RGB of six flat 16x16 colour blocks: JPEG keeps flat MCU-aligned blocks exactly."""
    colours = np.array(
        [[255, 0, 0], [0, 255, 0], [0, 0, 255], [250, 200, 30], [20, 120, 220], [128, 128, 128]], np.uint8
    )
    return np.repeat(np.repeat(colours[None], 16, axis=0), 16, axis=1)


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png(path: Path, width: int, height: int, bit_depth: int, colour_type: int, rows=()) -> None:
    """A PNG written chunk by chunk: any declared size, 16-bit colour, streamed pixel rows."""
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, colour_type, 0, 0, 0)
    packer = zlib.compressobj(1)
    data = b"".join(packer.compress(b"\0" + row) for row in rows) + packer.flush()
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", data))
    with path.open("ab") as f:
        f.write(_png_chunk(b"IEND", b""))


def _png16(path: Path, values: np.ndarray, colour_type: int) -> None:
    h, w = values.shape[:2]
    _png(path, w, h, 16, colour_type, [values[y].astype(">u2").tobytes() for y in range(h)])


def _jpeg_bytes(pixels: np.ndarray, **save) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "JPEG", **save)
    return buf.getvalue()


def truncated_jpeg(path: Path) -> None:
    data = _jpeg_bytes(_noise())
    path.write_bytes(data[: len(data) // 2])


def zero_byte(path: Path) -> None:
    path.write_bytes(b"")


def not_an_image(path: Path) -> None:  # e.g. an HTML error page saved under the image's name
    path.write_bytes(HTML)


def huge_declared(path: Path) -> None:  # header only: 30000 x 30000 declared, no pixel data
    _png(path, 30000, 30000, 8, 2)


def huge_10k(path: Path) -> None:
    _png(path, 10000, 10000, 8, 2)


# name in the dataset -> (writer, expected message after "<path>: ")
UNDECODABLE = {
    "b_truncated.JPEG": (
        truncated_jpeg,
        r"cannot decode image \(image file is truncated \(\d+ bytes not processed\)\)",
    ),
    "c_zero_byte.JPEG": (zero_byte, re.escape("cannot decode image (empty file, 0 bytes)")),
    "d_not_an_image.JPEG": (
        not_an_image,
        re.escape(
            f"cannot decode image (not a format Pillow recognises; the file starts with {HTML[:16]!r})"
        ),
    ),
    "e_huge_30k.png": (
        huge_declared,
        re.escape(f"image too large to decode safely (900000000 pixels, limit {LIMIT}"),
    ),
    "f_huge_10k.png": (
        huge_10k,
        re.escape(f"image too large to decode safely (10000x10000, 100000000 pixels, limit {LIMIT}"),
    ),
}


def convertible() -> dict[str, tuple[Callable[[Path], None], np.ndarray, int]]:
    """name -> (writer, expected RGB pixels, tolerance): converted to RGB, never skipped."""
    blocks = _blocks()
    rng = np.random.default_rng(1)
    gray16 = rng.integers(0, 65536, (12, 20), dtype=np.uint16)
    rgb16 = rng.integers(0, 65536, (12, 20, 3), dtype=np.uint16)
    rgba = rng.integers(0, 256, (12, 20, 4), dtype=np.uint8)
    rgba[..., 3] = np.arange(20, dtype=np.uint8) * 13  # alpha varies, 0 included
    palette = rng.integers(0, 256, (8, 3), dtype=np.uint8)
    indices = rng.integers(0, 8, (12, 20), dtype=np.uint8)
    luma = np.asarray(Image.fromarray(blocks).convert("L"))

    def save(image: Image.Image, **kw):
        return lambda path: image.save(path, **kw)

    def paletted(transparency: int | None):
        img = Image.fromarray(indices, "P")
        img.putpalette(palette.tobytes())
        return save(img, format="PNG", **({} if transparency is None else {"transparency": transparency}))

    return {
        "g_gray.JPEG": (save(Image.fromarray(luma), format="JPEG", quality=100), np.stack([luma] * 3, -1), 1),
        "h_cmyk.JPEG": (save(Image.fromarray(blocks).convert("CMYK"), format="JPEG", quality=100), blocks, 2),
        "i_gray16.png": (lambda p: _png16(p, gray16, 0), np.stack([gray16 >> 8] * 3, -1).astype(np.uint8), 0),
        "j_rgb16.png": (lambda p: _png16(p, rgb16, 2), (rgb16 >> 8).astype(np.uint8), 0),
        "k_rgba.png": (save(Image.fromarray(rgba, "RGBA"), format="PNG"), rgba[..., :3], 0),
        "l_palette.png": (paletted(None), palette[indices], 0),
        "m_palette_transparent.png": (paletted(3), palette[indices], 0),
        "n_exif_rotated.JPEG": (_exif_rotated, blocks, 2),
    }


def _exif_rotated(path: Path) -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90 CW to display
    Image.fromarray(_blocks()).save(path, format="JPEG", quality=100, subsampling=0, exif=exif)


CONVERTIBLE = convertible()


def write_dataset(root: Path, names: list[str]) -> Path:
    """root/<names> (good copies, bad and convertible files) + gt.csv; returns the csv."""
    root.mkdir(parents=True, exist_ok=True)
    rows = ["filename,label"]
    for name in names:
        if name in GOOD:
            shutil.copy(ASSETS / "images" / GOOD[name][0], root / name)
        else:
            (UNDECODABLE.get(name) or CONVERTIBLE[name])[0](root / name)
        rows.append(f'{name},"{GOOD.get(name, (None, "macaw"))[1]}"')
    (root / "gt.csv").write_text("\n".join(rows) + "\n")
    return root / "gt.csv"


def csv_run(root: Path, gt: Path, strict: bool) -> list[str]:
    return [
        f"dataset.root={root}",
        f"dataset.ground_truth={gt}",
        "dataset.format=csv",
        f"loop.strict={strict}",
    ]


def predictions(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]


# --- decode_rgb, file by file ------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CONVERTIBLE))
def test_convertible_files_decode_to_the_right_rgb(tmp_path, name):
    writer, expected, tolerance = CONVERTIBLE[name]
    writer(tmp_path / name)
    out = decode_rgb(str(tmp_path / name))
    assert out.dtype == np.uint8 and out.shape == expected.shape
    assert np.abs(out.astype(int) - expected.astype(int)).max() <= tolerance
    if name == "g_gray.JPEG":
        assert np.array_equal(out[..., 0], out[..., 1]) and np.array_equal(out[..., 1], out[..., 2])


def test_exif_orientation_is_not_applied(tmp_path):
    """As TFLite's tool: pixels in stored order, the Orientation tag ignored (documented)."""
    path = tmp_path / "rotated.JPEG"
    _exif_rotated(path)
    with Image.open(path) as img:
        assert img.getexif()[0x0112] == 6
        stored = np.asarray(img.convert("RGB"))
        displayed = np.asarray(ImageOps.exif_transpose(img).convert("RGB"))
    out = decode_rgb(str(path))
    assert out.shape == (16, 96, 3) and displayed.shape == (96, 16, 3)
    assert np.array_equal(out, stored)


@pytest.mark.parametrize("name", sorted(UNDECODABLE))
def test_undecodable_file_is_one_line_naming_path_and_reason(tmp_path, name):
    UNDECODABLE[name][0](tmp_path / name)
    start = time.perf_counter()
    with pytest.raises(DataError) as exc:
        decode_rgb(str(tmp_path / name))
    assert time.perf_counter() - start < 2.0
    assert re.fullmatch(re.escape(f"{tmp_path / name}: ") + UNDECODABLE[name][1], str(exc.value))


def test_decompression_bomb_is_refused_before_decoding(tmp_path):
    """A valid, tiny (compressed) 10000x10000 PNG: refused from its header, peak RSS stays small."""
    path = tmp_path / "bomb.png"
    row = bytes(10000)
    _png(path, 10000, 10000, 8, 0, (row for _ in range(10000)))
    assert path.stat().st_size < 1_000_000
    probe = textwrap.dedent(
        f"""
        import re, sys
        from evalharness.data.preprocess import decode_rgb
        from evalharness.core.errors import DataError
        try:
            decode_rgb({str(path)!r})
        except DataError as exc:
            print(exc)
        # VmHWM: this process image's own peak (ru_maxrss can carry the parent's RSS across exec)
        status = open("/proc/self/status").read()
        print(int(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)) // 1024)
        """
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    message, peak_mb = proc.stdout.splitlines()
    assert message.startswith(f"{path}: image too large to decode safely (10000x10000, 100000000 pixels")
    assert int(peak_mb) < 250, "decoding 10000x10000 (300 MB as RGB) would exceed this"


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: os.symlink(p.name, p), "symlink loop (too many levels of symbolic links)"),
        (lambda p: os.symlink("/nonexistent/x.JPEG", p), "broken symlink to /nonexistent/x.JPEG"),
        (os.mkfifo, "not a regular file"),
    ],
    ids=["symlink_loop", "broken_symlink", "fifo"],
)
def test_not_a_regular_file(tmp_path, make, reason):
    """decode_rgb alone (COCO file names, direct callers) refuses them too, and never blocks on a FIFO."""
    path = tmp_path / "x.JPEG"
    make(path)
    with pytest.raises(DataError) as exc:
        decode_rgb(str(path))
    assert str(exc.value) == f"{path}: cannot read image ({reason})"


# --- whole runs ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(UNDECODABLE))
def test_strict_run_stops_at_the_bad_file_with_partial_metrics(tmp_path, name):
    root = tmp_path / "data"
    gt = write_dataset(root, ["a_parrot.jpg", name])
    run_dir = tmp_path / "run"
    with pytest.raises(EvalHarnessError) as exc:
        run_inprocess(csv_run(root, gt, strict=True), run_dir)
    reason = f"{re.escape(str(root / name))}: {UNDECODABLE[name][1]}"
    assert "\n" not in str(exc.value)
    tail = re.escape(f"); partial results in {run_dir / 'metrics.json'}")
    assert re.fullmatch(rf"run stopped early \({reason}{tail}", str(exc.value))
    doc = json.loads((run_dir / "metrics.json").read_text())
    assert doc["status"] == "partial" and re.fullmatch(reason, doc["stop_reason"])
    assert doc["skipped"] == [] and doc["metrics"]["num_scored"] == 1 and doc["metrics"]["num_images"] == 2
    assert [p["id"] for p in predictions(run_dir)] == ["a_parrot.jpg"]


def test_lenient_run_skips_lists_and_counts_bad_files_and_scores_the_rest(tmp_path):
    root = tmp_path / "data"
    names = sorted([*GOOD, *UNDECODABLE, *CONVERTIBLE])
    gt = write_dataset(root, names)
    run_dir = tmp_path / "run"
    doc = run_inprocess(csv_run(root, gt, strict=False), run_dir)
    assert doc["status"] == "complete" and doc["stop_reason"] is None
    assert [s["sample"] for s in doc["skipped"]] == sorted(UNDECODABLE)
    for skipped in doc["skipped"]:
        pattern = f"{re.escape(str(root / skipped['sample']))}: {UNDECODABLE[skipped['sample']][1]}"
        assert re.fullmatch(pattern, skipped["reason"])
    metrics = doc["metrics"]
    scored = sorted([*GOOD, *CONVERTIBLE])
    assert (metrics["num_images"], metrics["num_skipped"], metrics["num_scored"]) == (
        len(names),
        len(UNDECODABLE),
        len(scored),
    )
    assert sorted(p["id"] for p in predictions(run_dir)) == scored
    assert metrics["top1"] == metrics["correct"]["top1"] / len(scored)  # denominator: scored images
    assert doc["predictions"]["count"] == len(scored)


def test_cli_strict_bad_image_exits_1_with_one_error_line(tmp_path):
    root = tmp_path / "data"
    gt = write_dataset(root, ["a_parrot.jpg", "c_zero_byte.JPEG"])
    proc = run_cli(csv_run(root, gt, strict=True), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    reason = f"{root / 'c_zero_byte.JPEG'}: cannot decode image (empty file, 0 bytes)"
    assert len(errors) == 1
    assert re.fullmatch(
        rf"error: run stopped early \({re.escape(reason)}\); partial results in \S+/metrics.json", errors[0]
    )


# --- listing: symlink loops and other non-files -------------------------------------------------


@pytest.mark.parametrize("strict", [True, False])
def test_symlink_loop_in_dataset_dir_is_refused_when_listing(tmp_path, strict):
    """Both modes: one line naming the link, before any image is read (the run never starts)."""
    root = tmp_path / "data"
    gt = write_dataset(root, ["a_parrot.jpg"])
    os.symlink("y_loop.jpg", root / "x_loop.jpg")
    os.symlink("x_loop.jpg", root / "y_loop.jpg")
    start = time.perf_counter()
    with pytest.raises(DataError) as exc:
        run_inprocess(csv_run(root, gt, strict), tmp_path / "run")
    assert time.perf_counter() - start < 10
    reason = "symlink loop (too many levels of symbolic links)"
    assert str(exc.value) == f"{root / 'x_loop.jpg'}: {reason}; {LISTING}"
    assert not (tmp_path / "run" / "predictions.jsonl").exists()


def test_directory_loop_in_flat_dataset_dir_is_not_followed(tmp_path):
    root = tmp_path / "data"
    gt = write_dataset(root, list(GOOD))
    os.symlink(".", root / "loop")
    os.symlink("..", root / "up.jpg")  # a directory with an image extension: not an image, skipped
    samples = load_ground_truth("csv", str(root), str(gt), None, None, None)
    assert [s.key for s in samples] == sorted(GOOD)


def test_imagefolder_link_back_to_the_root_is_refused(tmp_path):
    root = tmp_path / "folder"
    (root / "macaw").mkdir(parents=True)
    shutil.copy(ASSETS / "images" / "parrot.jpg", root / "macaw" / "parrot.jpg")
    os.symlink("..", root / "macaw" / "up")  # inside a class dir: a dir, skipped
    assert [s.key for s in load_ground_truth("imagefolder", str(root), None, None, None, None)] == [
        "macaw/parrot.jpg"
    ]
    os.symlink(".", root / "loop")
    with pytest.raises(DataError) as exc:
        load_ground_truth("imagefolder", str(root), None, None, None, None)
    assert str(exc.value) == (
        f"{root / 'loop'}: links back to {root.resolve()} (a symlink loop), not to a class dir; {LISTING}"
    )


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: os.symlink("/nonexistent/b.JPEG", p), "broken symlink to /nonexistent/b.JPEG"),
        (os.mkfifo, "not a regular file"),
    ],
    ids=["broken_symlink", "fifo"],
)
def test_other_non_files_are_refused_when_listing(tmp_path, make, reason):
    root = tmp_path / "data"
    gt = write_dataset(root, ["a_parrot.jpg"])
    make(root / "b.JPEG")
    with pytest.raises(DataError) as exc:
        load_ground_truth("csv", str(root), str(gt), None, None, None)
    assert str(exc.value) == f"{root / 'b.JPEG'}: {reason}; {LISTING}"
