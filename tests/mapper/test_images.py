"""mapper.images: test images (skimage samples, files), PNG output a viewer shows correctly,
and the input/output/difference comparison figure."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from skimage import data

from cgra.errors import MappingError
from mapper.images import (DEFAULT_CROP_ORIGIN, IMAGES, camera_crop, load_image,
                           save_comparison, save_png)


def test_image_names():
    assert IMAGES == ("camera", "astronaut", "coffee")
    assert DEFAULT_CROP_ORIGIN == (100, 200)


def test_camera_crop_is_known_slice():
    img = load_image("camera", 64)
    assert img.dtype == np.uint16 and img.shape == (64, 64)
    assert np.array_equal(img, data.camera()[100:164, 200:264])
    assert np.array_equal(img, camera_crop(64, 64))


def test_camera_crop_moves_inwards_and_whole_image():
    # 400 rows from y0 = 100 fit exactly; 400 columns from x0 = 200 do not: x0 -> 112
    assert np.array_equal(load_image("camera", 400), data.camera()[100:500, 112:512])
    assert np.array_equal(load_image("camera", 512), data.camera())
    # (height, width) pair
    assert np.array_equal(load_image("camera", (16, 32)), data.camera()[100:116, 200:232])


@pytest.mark.parametrize("name", ["astronaut", "coffee"])
def test_rgb_samples_grey_uint16(name):
    img = load_image(name, (48, 40))
    assert img.shape == (48, 40) and img.dtype == np.uint16
    assert 0 <= img.min() < img.max() <= 255


def test_coffee_centre_crop_uses_rgb2gray():
    from skimage.color import rgb2gray

    grey = np.round(rgb2gray(data.coffee()) * 255)  # coffee is 400x600 (height x width)
    img = load_image("coffee", (100, 200))
    assert np.array_equal(img, grey[150:250, 200:400])
    assert load_image("coffee", (400, 600)).shape == (400, 600)


def test_png_roundtrip_8bit(tmp_path):
    rng = np.random.default_rng(7)
    a = rng.integers(0, 256, size=(20, 30), dtype=np.uint8)
    p = tmp_path / "a.png"
    Image.fromarray(a).save(p)
    img = load_image(str(p), (20, 30))
    assert img.dtype == np.uint16 and np.array_equal(img, a)
    # centre crop of a file: margins (20-10)//2 = 5 rows, (30-11)//2 = 9 columns
    assert np.array_equal(load_image(p, (10, 11)), a[5:15, 9:20])


def test_png_roundtrip_16bit_keeps_values(tmp_path):
    a = (np.arange(12 * 9, dtype=np.uint16).reshape(12, 9) * 600)  # up to 64200
    p = tmp_path / "b.png"
    Image.fromarray(a).save(p)
    with Image.open(p) as im:
        assert im.mode == "I;16"
    assert np.array_equal(load_image(str(p), (12, 9)), a)


def test_rgba_file_drops_alpha(tmp_path):
    a = np.zeros((4, 4, 4), dtype=np.uint8)
    a[..., 0], a[..., 1], a[..., 2], a[..., 3] = 100, 100, 100, 0  # grey 100, transparent
    p = tmp_path / "c.png"
    Image.fromarray(a).save(p)
    with Image.open(p) as im:
        assert im.mode == "RGBA"
    assert np.array_equal(load_image(str(p), 4), np.full((4, 4), 100, np.uint16))


def test_save_png_8bit(tmp_path):
    a = np.arange(256, dtype=np.uint16).reshape(16, 16)
    paths = save_png(a, tmp_path / "out.png")
    assert paths == [tmp_path / "out.png"]
    assert not (tmp_path / "out.npy").exists()
    with Image.open(paths[0]) as im:
        assert im.mode == "L" and im.size == (16, 16)
        assert np.array_equal(np.asarray(im), a)


def test_save_png_wide_values_scaled_plus_npy(tmp_path):
    a = np.array([[0, 150], [300, 300]], dtype=np.uint16)
    paths = save_png(a, tmp_path / "wide.png")
    assert paths == [tmp_path / "wide.png", tmp_path / "wide.npy"]
    with Image.open(paths[0]) as im:
        assert im.mode == "L"
        assert np.array_equal(np.asarray(im), [[0, 128], [255, 255]])  # 150/300*255 = 127.5
    raw = np.load(paths[1])
    assert raw.dtype == np.uint16 and np.array_equal(raw, a)


def test_save_png_negative_signed(tmp_path):
    a = np.array([[-10, 0], [5, 10]], dtype=np.int16)
    paths = save_png(a, tmp_path / "s.png")
    assert len(paths) == 2
    with Image.open(paths[0]) as im:
        assert np.array_equal(np.asarray(im), [[0, 128], [191, 255]])  # (v+10)/20*255
    raw = np.load(paths[1])
    assert raw.dtype == np.int16 and np.array_equal(raw, a)


def test_save_png_then_load_roundtrip(tmp_path):
    a = load_image("camera", 32)
    (p,) = save_png(a, tmp_path / "cam.png")
    assert np.array_equal(load_image(str(p), 32), a)


@pytest.mark.parametrize("source,size,text", [
    ("lunar_surface", 8, "--image lunar_surface: not a shipped scikit-image sample (astronaut, "
                         "brick, camera,"),
    ("camera", 0, "--size 0: image sizes must be at least 1 pixel"),
    ("camera", (8, -1), "at least 1 pixel"),
    ("camera", 513, "the image is 512x512 (width x height), smaller than the requested 513x513"),
    ("coffee", (401, 10), "the image is 600x400 (width x height), smaller than the requested 10x401"),
])
def test_errors(source, size, text):
    with pytest.raises(MappingError) as e:
        load_image(source, size)
    assert text in str(e.value)
    assert "\n" not in str(e.value)


def test_error_corrupt_file(tmp_path):
    p = tmp_path / "bad.png"
    p.write_bytes(b"\x89PNG\r\n\x1a\n not really a png")
    with pytest.raises(MappingError, match=r"--image .*bad\.png: cannot read the image file"):
        load_image(str(p), 4)


def test_error_file_too_small(tmp_path):
    p = tmp_path / "small.png"
    Image.fromarray(np.zeros((5, 7), np.uint8)).save(p)
    with pytest.raises(MappingError, match=r"the image is 7x5 \(width x height\), smaller than "
                                           r"the requested 8x8"):
        load_image(str(p), 8)


def test_save_comparison(tmp_path):
    inp = load_image("camera", 32)
    out = inp[1:-1, 1:-1].astype(np.int64) * 2  # a 3x3 stencil shrinks 32 -> 30
    gold = out.copy()
    gold[4, 5] += 9
    p = save_comparison(inp, out, gold, tmp_path / "cmp.png", title="test")
    assert p == tmp_path / "cmp.png" and p.stat().st_size > 0
    with Image.open(p) as im:
        im.load()
        assert im.format == "PNG" and im.size[0] > im.size[1] > 0


def test_save_comparison_titles():
    from mapper.images import _diff_title

    assert _diff_title(np.zeros((3, 3), np.int64)) == "identical"
    d = np.zeros((3, 3), np.int64)
    d[0, 0], d[2, 1] = 9, 4
    assert _diff_title(d) == "2 of 9 pixels differ, max |diff| 9"


def test_save_comparison_shape_mismatch(tmp_path):
    a = np.zeros((8, 8), np.uint16)
    with pytest.raises(MappingError, match="output shape"):
        save_comparison(a, a[1:, :], a, tmp_path / "x.png")
