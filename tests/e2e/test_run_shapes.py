"""`cgra run` on non-square images and colour outputs (issue 41, item 3), on the 8x8 design:
a 100x37 and a 37x100 image file run bit-exact (the file's own shape by default, or
``--width``/``--height``), and camera_pipeline's ``<app>.png`` is one RGB picture of its
red, green and blue outputs."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mapper.apps import app_images, build_app, load_app_image, lower_app
from mapper.images import camera_crop
from mapper.interp import run_outputs

CGRA = Path(sys.executable).with_name("cgra")


def _cgra(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(CGRA), *map(str, args)], capture_output=True, text=True)


@pytest.mark.parametrize("width, height, given", [(100, 37, False), (37, 100, True)])
def test_gaussian_on_a_non_square_image_is_bit_exact(small_design, harness, tmp_path, width,
                                                      height, given):
    """gaussian on a ``width`` x ``height`` camera crop saved as a PNG: by the file's own
    shape (no size option) or by ``--width``/``--height``; the output is (w - 2) x (h - 2),
    matches both golden models, and equals the numpy interpreter run here on the file."""
    img = camera_crop(width, height).astype(np.uint8)
    src = tmp_path / f"crop_{width}x{height}.png"
    Image.fromarray(img).save(src)
    out = tmp_path / "run"
    sizes = ["--width", width, "--height", height] if given else []
    r = _cgra("run", "gaussian", "--design", small_design, "--out", out, "--image", src, *sizes)
    assert r.returncode == 0, r.stderr
    assert f"{width - 2}x{height - 2} output matches numpy and Halide bit-exactly" in r.stdout
    if not given:
        assert f"image {src}: {width}x{height} (width x height), its own size" in r.stderr
    rep = json.loads((out / "run_report.json").read_text())
    assert rep["size"] == [width, height]
    assert rep["output_shape"] == [height - 2, width - 2]
    assert rep["match"] == {"numpy": True, "halide": True}
    want = run_outputs(lower_app("gaussian", width, height), {"input": img.astype(np.uint16)})
    with Image.open(out / "gaussian.png") as im:
        got = np.asarray(im)
    assert got.shape == (height - 2, width - 2)
    assert np.array_equal(got.astype(np.int64), want["blur"].astype(np.int64))


def test_camera_pipeline_writes_an_rgb_composite(app_run):
    """camera_pipeline (red, green, blue outputs): ``camera_pipeline.png`` is an RGB PNG whose
    three channels are the three output planes (each also equal to the numpy interpreter),
    and ``compare.png`` is drawn in colour."""
    r = app_run("camera_pipeline")
    assert list(r.outputs) == ["red", "green", "blue"]
    with Image.open(r.out_dir / "camera_pipeline.png") as im:
        assert im.mode == "RGB"
        rgb = np.asarray(im)
    assert rgb.shape == (30, 30, 3)
    pipe = build_app("camera_pipeline", 64, 64)
    inputs = app_images(pipe, load_app_image(pipe, "camera", (64, 64)))
    gold = run_outputs(lower_app("camera_pipeline", 64, 64), inputs)
    for c, name in enumerate(("red", "green", "blue")):
        assert np.array_equal(rgb[..., c].astype(np.int64), r.outputs[name].astype(np.int64))
        assert np.array_equal(rgb[..., c].astype(np.int64), gold[name].astype(np.int64))
        with Image.open(r.out_dir / f"camera_pipeline_{name}.png") as plane:
            assert np.array_equal(np.asarray(plane), rgb[..., c])
    assert not np.array_equal(rgb[..., 0], rgb[..., 2])       # a colour picture
    with Image.open(r.out_dir / "compare.png") as im:
        cmp = np.asarray(im.convert("RGB")).astype(np.int64)
    # colour panels: somewhere a pixel whose channels differ (a grey drawing has none)
    assert np.count_nonzero(np.ptp(cmp, axis=2) > 40) > 100




def test_a_colour_input_is_drawn_in_colour(small_design, harness, tmp_path):
    """rgb_luma (colour input, one grey output) on the chelsea sample (an orange cat):
    ``rgb_luma.png`` stays 8-bit grey, and ``compare.png`` shows the colour input (not the
    plane streamed in)."""
    out = tmp_path / "run"
    r = _cgra("run", "rgb_luma", "--design", small_design, "--out", out, "--image",
              "chelsea", "--size", 32)
    assert r.returncode == 0, r.stderr
    with Image.open(out / "rgb_luma.png") as im:
        assert im.mode == "L" and im.size == (32, 32)
    with Image.open(out / "compare.png") as im:
        cmp = np.asarray(im.convert("RGB")).astype(np.int64)
    assert np.count_nonzero(np.ptp(cmp, axis=2) > 40) > 100
