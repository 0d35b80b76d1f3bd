"""`cgra run`'s options without a run (issue 41, items 3 and 7): the input size from
``--size``/``--width``/``--height`` and the image file's own shape, the app listing (`cgra
run --list`, `--help`) and its agreement with `make app`, and the RGB pictures of colour
outputs (mapper.images.save_rgb_png, save_comparison in colour)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from cgra.errors import ConfigError, MappingError
from mapper.apps import APPS, DESIGNS, colour_outputs, build_app
from mapper.apps.dnn import LAYERS
from mapper.cli import app_listing, run_image_size
from mapper.images import save_comparison, save_rgb_png
from mapper.params import DEFAULT_MAX_SIM_CYCLES

ROOT = Path(__file__).resolve().parents[2]
CGRA = Path(sys.executable).with_name("cgra")


def _png(path: Path, width: int, height: int) -> Path:
    Image.fromarray(np.zeros((height, width), np.uint8)).save(path)
    return path


# ---------------------------------------------------------------------------- sizes
def test_size_is_the_square_shorthand():
    assert run_image_size("gaussian", "camera", 32, None, None) == (32, 32, None)
    assert run_image_size("gaussian", "camera", 32, 32, 32) == (32, 32, None)
    assert run_image_size("gaussian", "camera", None, None, None) == (64, 64, None)
    assert run_image_size("gaussian", "camera", None, 100, 37) == (100, 37, None)
    assert run_image_size("gaussian", "camera", None, 100, None) == (100, 64, None)


@pytest.mark.parametrize("size, width, height, bad", [
    (32, 40, None, "--width 40"), (32, None, 16, "--height 16"), (32, 32, 8, "--height 8")])
def test_size_and_width_height_that_disagree_are_refused(size, width, height, bad):
    with pytest.raises(ConfigError) as exc:
        run_image_size("gaussian", "camera", size, width, height)
    assert str(exc.value).startswith(f"--size {size} and {bad}")
    assert "square shorthand for --width N --height N" in str(exc.value)


def test_an_image_file_gives_its_own_shape(tmp_path):
    f = _png(tmp_path / "wide.png", 100, 37)
    assert run_image_size("gaussian", str(f), None, None, None) == (
        100, 37, f"image {f}: 100x37 (width x height), its own size")
    w, h, note = run_image_size("gaussian", str(f), None, 50, None)
    assert (w, h) == (50, 37) and "cropped to 50x37 (the width given)" in note
    assert run_image_size("gaussian", str(f), 30, None, None) == (30, 30, None)


def test_a_large_image_file_is_cropped_to_what_the_run_supports(tmp_path):
    """At most 4096 per side, and width x height within the simulated-cycle budget (aspect
    kept when neither side is given)."""
    f = _png(tmp_path / "big.png", 5000, 3000)
    w, h, note = run_image_size("gaussian", str(f), None, None, None)
    assert w <= 4096 and w * h <= DEFAULT_MAX_SIM_CYCLES and abs(w / h - 5 / 3) < 0.01
    assert note.startswith(f"image {f}: 5000x3000 (width x height), cropped to {w}x{h} "
                           f"(at most 4096 per side; width x height within the simulation "
                           f"budget of {DEFAULT_MAX_SIM_CYCLES} cycles")
    assert run_image_size("gaussian", str(f), None, None, None, unroll=2, max_cycles=10_000)[:2] \
        == (182, 109)                   # 19838 pixels <= 2 x 10000
    assert run_image_size("gaussian", str(f), None, 100, None, max_cycles=10_000)[:2] == (100, 100)


def test_an_image_smaller_than_the_sides_given_is_refused_before_work(tmp_path):
    f = _png(tmp_path / "small.png", 100, 37)
    with pytest.raises(MappingError) as exc:
        run_image_size("gaussian", str(f), None, 100, 64)
    assert str(exc.value) == (f"--image {f}: the image is 100x37 (width x height), smaller "
                              f"than the requested 100x64; give at most --width 100 --height 37 "
                              f"(`cgra run`, `cgra map`)")
    with pytest.raises(MappingError, match="the image is 512x512"):
        run_image_size("gaussian", "camera", None, 600, None)
    with pytest.raises(MappingError, match="no such file"):
        run_image_size("gaussian", str(tmp_path / "missing.png"), None, None, None)


def test_dnn_layers_take_a_square_input():
    assert run_image_size("resnet_layer", "random", None, None, None) == (18, 18, None)
    assert run_image_size("gemm", "random", None, 8, 8) == (8, 8, None)
    with pytest.raises(ConfigError, match="DNN layer gemm takes a square input"):
        run_image_size("gemm", "random", None, 8, 16)


def test_cli_refuses_inconsistent_sizes_before_any_work(tmp_path):
    r = subprocess.run([str(CGRA), "run", "gaussian", "--design", tmp_path / "nodesign",
                        "--out", tmp_path / "run", "--size", "32", "--width", "40"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("error: --size 32 and --width 40 "
                                                        "disagree")
    assert not (tmp_path / "run").exists()
    m = subprocess.run([str(CGRA), "map", "gaussian", "--design", tmp_path / "nodesign",
                        "--out", tmp_path / "map", "--size", "32", "--height", "16"],
                       capture_output=True, text=True)
    assert m.returncode == 2
    assert m.stderr.strip().splitlines()[-1].startswith("error: --size 32 and --height 16 "
                                                        "disagree")
    assert not (tmp_path / "map").exists()


# ---------------------------------------------------------------------------- listing
def test_the_registry_names_a_design_for_every_app_and_layer():
    assert set(DESIGNS) == set(APPS) | set(LAYERS)
    for name, fit in DESIGNS.items():
        assert (ROOT / "configs" / f"{fit.design}.toml").is_file(), name
        assert bool(fit.why) == (fit.design != "small"), name


def test_make_app_picks_the_registrys_design():
    """`make app APP=<app>` runs each app on the design :data:`mapper.apps.DESIGNS` names
    (the Makefile's APP_DESIGN_<app> lines and its bf16 / small fallback)."""
    names = sorted(DESIGNS)
    r = subprocess.run(["make", "-s", "--no-print-directory", "app-designs",
                        f"APPS={' '.join(names)}"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    got = dict(line.split() for line in r.stdout.splitlines())
    assert got == {n: DESIGNS[n].design for n in names}


def test_run_list_and_help_print_the_listing():
    rows = app_listing()
    assert [a for a, _, _ in rows] == sorted(DESIGNS)
    r = subprocess.run([str(CGRA), "run", "--list"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    listed = {ln.split()[0]: ln.split()[1] for ln in r.stdout.splitlines()[1:]}
    assert listed == {a: d for a, d, _ in rows}
    assert "harris" in r.stdout and "more PE tiles than the 8x8 array has" in r.stdout
    h = subprocess.run([str(CGRA), "run", "--help"], capture_output=True, text=True)
    assert h.returncode == 0, h.stderr
    assert "--width" in h.stdout and "--list" in h.stdout
    tail = h.stdout[h.stdout.index("the design each fits"):]
    for a, d, _ in rows:
        assert any(ln.split()[:2] == [a, d] for ln in tail.splitlines()), a


# ---------------------------------------------------------------------------- colour
def test_colour_outputs_are_the_red_green_blue_apps():
    colour = {a for a in APPS if colour_outputs(build_app(a, 16, 16)) is not None}
    assert colour == {"color_correct", "camera_pipeline", "bayer_demosaic"}


def test_save_rgb_png_keeps_bytes_and_scales_wide_values(tmp_path):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (5, 7, 3)).astype(np.uint16)
    assert save_rgb_png(a, tmp_path / "a.png") == [tmp_path / "a.png"]
    with Image.open(tmp_path / "a.png") as im:
        assert im.mode == "RGB" and np.array_equal(np.asarray(im), a.astype(np.uint8))
    wide = a * 4
    paths = save_rgb_png(wide, tmp_path / "w.png")
    assert paths == [tmp_path / "w.png", tmp_path / "w.npy"]
    assert np.array_equal(np.load(tmp_path / "w.npy"), wide)
    with Image.open(tmp_path / "w.png") as im:
        got = np.asarray(im).astype(np.int64)
    lo, hi = int(wide.min()), int(wide.max())
    assert np.array_equal(got, np.round((wide - lo) * 255.0 / (hi - lo)).astype(np.int64))
    with pytest.raises(MappingError, match=r"need a non-empty \(height, width, 3\)"):
        save_rgb_png(a[..., :2], tmp_path / "bad.png")


def test_save_comparison_draws_colour(tmp_path):
    rng = np.random.default_rng(4)
    inp = rng.integers(0, 256, (20, 20, 3))
    out = rng.integers(0, 256, (10, 10, 3))
    p = save_comparison(inp, out, out, tmp_path / "cmp.png")
    with Image.open(p) as im:
        pix = np.asarray(im.convert("RGB")).astype(np.int64)
    assert np.count_nonzero(np.ptp(pix, axis=2) > 40) > 100
    with pytest.raises(MappingError, match=r"\(h, w, 3\)"):
        save_comparison(inp[..., :2], out, out, tmp_path / "bad.png")
