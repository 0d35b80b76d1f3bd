"""Test images for the golden models and simulations, and how results are written.

* :func:`load_image` gives a ``[y, x]`` uint16 greyscale test image (values 0..255 for the
  scikit-image samples, :func:`shipped_samples`, the file's values for an image file);
  :func:`load_rgb` a colour one ``[y, x, c]`` and :func:`bayer_rggb` its RGGB mosaic (the
  input conventions of :func:`mapper.apps.app_images`).
* :func:`save_png` writes a greyscale PNG that an image viewer shows correctly, plus the raw
  values as ``.npy`` when they do not fit 8 bits.
* :func:`save_rgb_png` writes a colour ``[y, x, c]`` image as an RGB PNG (an app's red,
  green and blue outputs as one picture).
* :func:`save_comparison` draws input, output and ``|output - golden|`` side by side (grey
  or colour).

The samples are read with ``skimage.data`` from the copies shipped inside scikit-image
(no download); image files with Pillow.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from cgra.errors import MappingError

#: top-left corner (y, x) of the default crop: a region of camera() with edges and corners
#: (the top-left 64x64 corner is flat sky, on which harris finds nothing).
DEFAULT_CROP_ORIGIN = (100, 200)

#: names of the scikit-image sample images :func:`load_image` accepts (``skimage.data.<name>``):
#: camera 512x512 grey, astronaut 512x512 RGB, coffee 400x600 (height x width) RGB.
IMAGES = ("camera", "astronaut", "coffee")

_U16_MAX = 0xFFFF


def camera_crop(width: int = 64, height: int = 64,
                origin: tuple[int, int] = DEFAULT_CROP_ORIGIN) -> np.ndarray:
    """A ``height x width`` crop of ``skimage.data.camera()`` (512x512, 8-bit) as uint16,
    indexed ``[y, x]``, with its top-left corner at ``origin = (y0, x0)``.

    Raises :class:`MappingError` if the crop does not fit in the 512x512 image.
    """
    from skimage import data  # deferred: loads skimage, lazy_loader only when called

    img = data.camera()
    y0, x0 = origin
    if not (0 <= y0 and 0 <= x0 and y0 + height <= img.shape[0] and x0 + width <= img.shape[1]):
        raise MappingError(f"camera_crop: a {width}x{height} crop at (y, x) = {origin} does not "
                           f"fit the {img.shape[1]}x{img.shape[0]} camera image")
    return img[y0:y0 + height, x0:x0 + width].astype(np.uint16)


def _parse_size(size: int | tuple[int, int]) -> tuple[int, int]:
    """``size`` as ``(height, width)``; raises :class:`MappingError` unless both are ints >= 1."""
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        hw = (int(size), int(size))
    elif (isinstance(size, (tuple, list)) and len(size) == 2
          and all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in size)):
        hw = (int(size[0]), int(size[1]))
    else:
        raise MappingError(f"--size {size!r}: give one int (square side) or a (height, width) "
                           f"pair of ints, in pixels")
    if min(hw) < 1:
        raise MappingError(f"--size {size!r}: image sizes must be at least 1 pixel; "
                           f"use a size >= 1")
    return hw


def _rgb_to_grey(rgb: np.ndarray) -> np.ndarray:
    """``(h, w, 3)`` RGB -> ``(h, w)`` float grey with ``skimage.color.rgb2gray`` (ITU-R BT.709
    luma weights), in the units of the input: 0..255 for uint8, 0..65535 for uint16."""
    from skimage.color import rgb2gray  # deferred: loads scipy, skimage, numpy, 2 more only when called

    if rgb.dtype == np.uint8:
        return rgb2gray(rgb) * 255.0
    if rgb.dtype == np.uint16:
        return rgb2gray(rgb) * float(_U16_MAX)
    # rgb2gray keeps float input as is, so the weights apply to the raw values.
    return rgb2gray(rgb.astype(np.float64))


def shipped_samples() -> tuple[str, ...]:
    """Names of the scikit-image samples shipped inside the installed package (no download):
    every ``skimage.data.<name>()`` whose image file ``<name>.png/.jpg`` lies in
    ``skimage/data``: camera, astronaut, coffee, chelsea, coins, moon, ..."""
    from skimage import data  # deferred: loads skimage, lazy_loader only when called

    root = Path(data.__file__).parent
    names = {p.stem for ext in ("png", "jpg") for p in root.glob(f"*.{ext}")}
    return tuple(sorted(n for n in names if callable(getattr(data, n, None))))


def _sample_raw(name: str) -> np.ndarray:
    """The scikit-image sample ``name`` as shipped (``(h, w)`` or ``(h, w, 3|4)``)."""
    from skimage import data  # deferred: loads skimage, lazy_loader only when called

    return np.asarray(getattr(data, name)())


def _sample(name: str) -> np.ndarray:
    """The scikit-image sample ``name`` as ``[y, x]`` uint16 0..255 (colour -> grey)."""
    img = _sample_raw(name)
    if img.ndim == 3:
        img = np.round(_rgb_to_grey(img[..., :3]))
    return np.clip(img, 0, 255).astype(np.uint16)


def _crop(img: np.ndarray, h: int, w: int, source: str) -> np.ndarray:
    """The ``h x w`` crop of :func:`load_image` (camera at :data:`DEFAULT_CROP_ORIGIN`, the
    rest centred); raises :class:`MappingError` when the image is smaller."""
    ih, iw = img.shape[:2]
    check_fits(source, (ih, iw), w, h)
    if source == "camera":
        y0, x0 = min(DEFAULT_CROP_ORIGIN[0], ih - h), min(DEFAULT_CROP_ORIGIN[1], iw - w)
    else:
        y0, x0 = (ih - h) // 2, (iw - w) // 2
    return np.ascontiguousarray(img[y0:y0 + h, x0:x0 + w])


def load_rgb(source: str | os.PathLike[str], size: int | tuple[int, int]) -> np.ndarray:
    """A colour test image ``[y, x, c]`` (``c`` = R, G, B) of shape ``(height, width, 3)``,
    dtype uint16, values 0..255: a shipped scikit-image sample (:func:`shipped_samples`) or an
    image file (converted to 8-bit RGB by Pillow); a grey image gives three equal channels.
    Cropped as :func:`load_image`. Raises :class:`MappingError` (one line naming ``source``)."""
    h, w = _parse_size(size)
    source = os.fspath(source)
    if source in shipped_samples():
        img = _sample_raw(source)
    else:
        path = Path(source).expanduser()
        if not path.is_file():
            raise MappingError(f"--image {source}: not a shipped scikit-image sample "
                               f"({', '.join(shipped_samples())}) and no such file")
        from PIL import Image, UnidentifiedImageError  # deferred: loads PIL only when called
        try:
            with Image.open(path) as im:
                img = np.asarray(im.convert("RGB"))
        except (OSError, UnidentifiedImageError, ValueError, SyntaxError) as e:
            reason = " ".join(str(e).split()) or type(e).__name__
            raise MappingError(f"--image {source}: cannot read the image file ({reason}); "
                               f"give a valid PNG/JPEG/TIFF file") from e
    if img.ndim == 2:
        img = np.stack([img] * 3, axis=-1)
    img = np.clip(img[..., :3], 0, 255).astype(np.uint16)
    return _crop(img, h, w, source)


def image_shape(source: str | os.PathLike[str]) -> tuple[int, int]:
    """``(height, width)`` in pixels of the image ``source``: a shipped scikit-image sample
    (:func:`shipped_samples`) or an image file (its first frame; Pillow reads the header
    only).

    Raises :class:`MappingError` (one line naming ``source``) when ``source`` is neither a
    sample name nor an existing file, or the file is not an image Pillow reads."""
    source = os.fspath(source)
    if source in IMAGES or source in shipped_samples():
        return tuple(int(n) for n in _sample_raw(source).shape[:2])  # type: ignore[return-value]
    path = Path(source).expanduser()
    if not path.is_file():
        raise MappingError(f"--image {source}: not a shipped scikit-image sample "
                           f"({', '.join(shipped_samples())}) and no such file; give a "
                           f"sample name or the path of an image file")
    from PIL import Image, UnidentifiedImageError  # deferred: loads PIL only when called
    try:
        with Image.open(path) as im:
            w, h = im.size
    except (OSError, UnidentifiedImageError, ValueError, SyntaxError) as e:
        reason = " ".join(str(e).split()) or type(e).__name__
        raise MappingError(f"--image {source}: cannot read the image file ({reason}); give a "
                           f"valid PNG/JPEG/TIFF file or one of {', '.join(IMAGES)}") from e
    return int(h), int(w)


def is_sample(source: str | os.PathLike[str]) -> bool:
    """``source`` names a shipped scikit-image sample (not a file)."""
    source = os.fspath(source)
    return source in IMAGES or source in shipped_samples()


def check_fits(source: str | os.PathLike[str], shape: tuple[int, int],
               width: int, height: int) -> None:
    """Refuse a ``width`` x ``height`` crop of image ``source`` whose ``shape`` (``(height,
    width)``, :func:`image_shape`) is smaller: the :class:`MappingError` that
    :func:`load_image` would raise at the sim stage, before any work."""
    ih, iw = shape
    if height > ih or width > iw:
        raise MappingError(f"--image {os.fspath(source)}: the image is {iw}x{ih} (width x "
                           f"height), smaller than the requested {width}x{height}; give at "
                           f"most --width {iw} --height {ih} (`cgra run`, `cgra map`)")


def bayer_rggb(rgb: np.ndarray) -> np.ndarray:
    """The RGGB Bayer mosaic ``[y, x]`` of an RGB image ``[y, x, c]``: R at (even x, even
    y), G at (odd x, even y) and (even x, odd y), B at (odd x, odd y)."""
    rgb = np.asarray(rgb)
    if rgb.ndim != 3 or rgb.shape[2] < 3:
        raise MappingError(f"bayer_rggb: expected an (h, w, 3) RGB image, got {rgb.shape}")
    h, w = rgb.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w]
    chan = np.where((yy % 2 == 0) & (xx % 2 == 0), 0, np.where((yy % 2) & (xx % 2), 2, 1))
    return np.take_along_axis(rgb, chan[..., None], axis=2)[..., 0].copy()


def _read_file(path: Path, source: str) -> np.ndarray:
    """Read an image file (first frame) as ``[y, x]`` uint16 grey; alpha is dropped, colour
    goes through :func:`_rgb_to_grey` and is rounded. Raises :class:`MappingError`."""
    from PIL import Image, UnidentifiedImageError  # deferred: loads PIL only when called

    try:
        with Image.open(path) as im:
            im.load()
            mode = im.mode
            if mode == "1":
                im = im.convert("L")
            elif mode in ("LA", "La"):
                im = im.getchannel("L")
            elif mode == "PA" or (mode == "P" and "transparency" not in im.info):
                im = im.convert("RGB")
            elif mode not in ("L", "I", "F", "RGB", "RGBA", "RGBa") and not mode.startswith("I;16"):
                # palette with transparency, CMYK, YCbCr, LAB, HSV ...
                im = im.convert("RGB")
            arr = np.asarray(im)
    except (OSError, UnidentifiedImageError, ValueError, SyntaxError) as e:
        reason = " ".join(str(e).split()) or type(e).__name__
        raise MappingError(f"--image {source}: cannot read the image file ({reason}); give a "
                           f"valid PNG/JPEG/TIFF file or one of {', '.join(IMAGES)}") from e
    arr = arr.astype(arr.dtype.newbyteorder("="))  # I;16B and big-endian TIFFs
    if arr.ndim == 3:
        arr = _rgb_to_grey(arr[..., :3])
        if arr.size:
            arr = np.round(arr)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.array_equal(arr, np.round(arr)):
            raise MappingError(f"--image {source}: the file holds non-integer pixel values; "
                               f"save it as an 8- or 16-bit integer greyscale image")
    if arr.size and (arr.min() < 0 or arr.max() > _U16_MAX):
        raise MappingError(f"--image {source}: pixel values {arr.min()}..{arr.max()} do not fit "
                           f"16 bits (0..{_U16_MAX}); save it as an 8- or 16-bit image")
    return arr.astype(np.uint16)


def load_image(source: str | os.PathLike[str], size: int | tuple[int, int]) -> np.ndarray:
    """A greyscale test image ``[y, x]`` of shape ``(height, width)``, dtype uint16.

    ``source`` is a name in :data:`IMAGES` or any other sample :func:`shipped_samples` lists
    (``skimage.data.<name>()``, shipped with scikit-image, no download; values 0..255; RGB
    samples go through
    ``skimage.color.rgb2gray`` and are rounded to 0..255) or, if it is not one of those names,
    the path of an image file Pillow reads (PNG, JPEG, TIFF, ...; first frame). From a file,
    8-bit grey keeps its 0..255 values and 16-bit grey its 0..65535 values; RGB/RGBA become
    grey as above in the file's own range (alpha is dropped); a 1-bit image gives 0/255.

    ``size`` is a square side or a ``(height, width)`` pair, in pixels. ``camera`` is cropped
    with its top-left corner at :data:`DEFAULT_CROP_ORIGIN` moved inwards so the crop fits
    (``512`` gives the whole image); every other image is cropped at its centre (for an odd
    margin the extra row/column is left at the bottom/right).

    Raises :class:`MappingError` (one line naming ``source``) when ``source`` is neither a
    sample name nor an existing file, the file is unreadable or corrupt, its values are not
    integers in 0..65535, the image is smaller than ``size`` (both sizes are given), or
    ``size`` is below 1.
    """
    h, w = _parse_size(size)
    source = os.fspath(source)
    if source in IMAGES or source in shipped_samples():
        img = _sample(source)
    else:
        path = Path(source).expanduser()
        if not path.is_file():
            raise MappingError(f"--image {source}: not a shipped scikit-image sample "
                               f"({', '.join(shipped_samples())}) and no such file; give a "
                               f"sample name or the path of an image file")
        img = _read_file(path, source)
    return _crop(img, h, w, source)


def save_png(img: np.ndarray, path: str | os.PathLike[str]) -> list[Path]:
    """Write the 2-D image ``img`` (``[y, x]``, any integer or float dtype) as a greyscale PNG
    an image viewer shows correctly, and return the paths written.

    * Every value an integer in 0..255: an 8-bit (mode ``L``) PNG holding the values as they
      are; returns ``[path]``.
    * Otherwise (values above 255, negative values of a signed array, fractions): the PNG
      shows ``min..max`` scaled linearly to 0..255 (rounded; a constant image gives 0), and
      the raw array (same dtype and values) is saved beside it as ``<stem>.npy``
      (``np.save``); returns ``[path, npy_path]``.

    Raises :class:`MappingError` for an array that is not 2-D, is empty or holds NaN/inf.
    """
    from PIL import Image  # deferred: loads PIL only when called

    path = Path(path)
    arr = np.asarray(img)
    if arr.ndim != 2 or arr.size == 0:
        raise MappingError(f"save_png {path}: need a non-empty 2-D [y, x] image, got shape "
                           f"{arr.shape}; pass one greyscale image")
    if arr.dtype == bool:
        arr = arr.astype(np.uint8)
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise MappingError(f"save_png {path}: the image holds NaN or infinite values; "
                           f"replace them before saving")
    lo, hi = arr.min(), arr.max()
    integral = arr.dtype.kind in "iu" or np.array_equal(arr, np.round(arr))
    if integral and lo >= 0 and hi <= 255:
        Image.fromarray(arr.astype(np.uint8)).save(path, format="PNG")
        return [path]
    span = float(hi) - float(lo)
    if span > 0:
        shown = np.round((arr.astype(np.float64) - float(lo)) * (255.0 / span))
    else:
        shown = np.zeros(arr.shape)
    Image.fromarray(shown.astype(np.uint8)).save(path, format="PNG")
    npy = path.with_suffix(".npy")
    np.save(npy, np.asarray(img))
    return [path, npy]


def save_rgb_png(rgb: np.ndarray, path: str | os.PathLike[str]) -> list[Path]:
    """Write the colour image ``rgb`` (``[y, x, c]``, shape ``(height, width, 3)``, ``c`` =
    R, G, B; any integer or float dtype) as an RGB PNG (mode ``RGB``, 8 bits per channel) and
    return the paths written.

    * Every value an integer in 0..255: the PNG holds the values as they are; returns
      ``[path]``.
    * Otherwise: the three channels are scaled together, ``min..max`` over all of them to
      0..255 (rounded; a constant image gives 0), so the colour balance is kept, and the raw
      array is saved beside it as ``<stem>.npy``; returns ``[path, npy_path]``.

    Raises :class:`MappingError` for an array that is not ``(h, w, 3)``, is empty or holds
    NaN/inf."""
    from PIL import Image  # deferred: loads PIL only when called

    path = Path(path)
    arr = np.asarray(rgb)
    if arr.ndim != 3 or arr.shape[2] != 3 or arr.size == 0:
        raise MappingError(f"save_rgb_png {path}: need a non-empty (height, width, 3) [y, x, c] "
                           f"image, got shape {arr.shape}; stack the R, G, B planes")
    if arr.dtype == bool:
        arr = arr.astype(np.uint8)
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise MappingError(f"save_rgb_png {path}: the image holds NaN or infinite values; "
                           f"replace them before saving")
    lo, hi = arr.min(), arr.max()
    integral = arr.dtype.kind in "iu" or np.array_equal(arr, np.round(arr))
    if integral and lo >= 0 and hi <= 255:
        Image.fromarray(np.ascontiguousarray(arr.astype(np.uint8)), mode="RGB").save(
            path, format="PNG")
        return [path]
    span = float(hi) - float(lo)
    shown = (np.round((arr.astype(np.float64) - float(lo)) * (255.0 / span)) if span > 0
             else np.zeros(arr.shape))
    Image.fromarray(np.ascontiguousarray(shown.astype(np.uint8)), mode="RGB").save(
        path, format="PNG")
    npy = path.with_suffix(".npy")
    np.save(npy, np.asarray(rgb))
    return [path, npy]


def _diff_title(diff: np.ndarray) -> str:
    """``identical`` when ``diff`` is all zero, else the count of differing pixels and the max."""
    n = int(np.count_nonzero(diff))
    if n == 0:
        return "identical"
    m = diff.max()
    m = int(m) if float(m).is_integer() else float(m)
    return f"{n} of {diff.size} pixels differ, max |diff| {m}"


def save_comparison(input_img: np.ndarray, output: np.ndarray, golden: np.ndarray,
                    path: str | os.PathLike[str], title: str = "") -> Path:
    """Write one PNG (matplotlib, Agg) with three panels side by side: the input image, the
    output, and ``|output - golden|``, each titled (the difference panel says ``identical``
    when all zero, else how many pixels differ and the largest difference).

    Each array is grey ``[y, x]`` or colour ``[y, x, c]`` (shape ``(h, w, 3)``, R, G, B:
    drawn in colour; the difference panel of colour images shows the largest difference
    over the three channels); ``output`` and ``golden`` have the same shape, which may be
    smaller than the input's (stencil borders, half-resolution outputs). Every panel is
    drawn at the same scale in pixels, so a smaller output appears smaller. Images whose
    values are all in 0..255 are shown on a fixed 0..255 scale, others from their min to
    max (a colour image's channels together). Returns ``path``.

    Raises :class:`MappingError` when an array is neither 2-D nor ``(h, w, 3)``, is empty,
    or ``output`` and ``golden`` differ in shape.
    """
    import matplotlib  # deferred: loads matplotlib, PIL, numpy, 5 more only when called

    matplotlib.use("Agg")
    from matplotlib.figure import Figure  # deferred: loads matplotlib, PIL, numpy, 7 more only when called

    path = Path(path)
    imgs = [np.asarray(a) for a in (input_img, output, golden)]
    for name, a in zip(("input", "output", "golden"), imgs, strict=True):
        if not (a.ndim == 2 or (a.ndim == 3 and a.shape[2] == 3)) or a.size == 0:
            raise MappingError(f"save_comparison {path}: the {name} image has shape {a.shape}; "
                               f"pass non-empty 2-D [y, x] or (h, w, 3) [y, x, c] arrays")
    inp, out, gold = imgs
    if out.shape != gold.shape:
        raise MappingError(f"save_comparison {path}: output shape {out.shape} differs from "
                           f"golden shape {gold.shape} (height, width); compare equal windows")
    exact = all(a.dtype.kind in "iub" for a in (out, gold))
    wide = np.int64 if exact else np.float64
    diff = np.abs(out.astype(wide) - gold.astype(wide))
    if diff.ndim == 3:                  # colour: the largest difference over R, G, B
        diff = diff.max(axis=2)

    widths = [inp.shape[1], out.shape[1], out.shape[1]]
    height = max(inp.shape[0], out.shape[0])
    panel_in = 4.0 / max(inp.shape[1], inp.shape[0])  # inches per pixel: the input is 4 in.
    fig_w = sum(widths) * panel_in + 1.5
    fig_h = height * panel_in + (1.4 if title else 1.0)
    fig = Figure(figsize=(fig_w, fig_h), layout="constrained")
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": widths})

    def grey(ax, a: np.ndarray, name: str) -> None:
        in_byte = a.min() >= 0 and a.max() <= 255
        if a.ndim == 3:                 # colour: RGB floats in 0..1, channels scaled together
            lo, hi = (0.0, 255.0) if in_byte else (float(a.min()), float(a.max()))
            ax.imshow((a.astype(np.float64) - lo) / max(hi - lo, 1e-12),
                      interpolation="nearest")
        else:
            ax.imshow(a, cmap="gray", interpolation="nearest",
                      vmin=0 if in_byte else None, vmax=255 if in_byte else None)
        ax.set_title(f"{name}\n{a.shape[1]}x{a.shape[0]}", fontsize=9)

    grey(axes[0], inp, "input")
    grey(axes[1], out, "output")
    axes[2].imshow(diff, cmap="magma", interpolation="nearest", vmin=0,
                   vmax=max(float(diff.max()), 1.0))
    axes[2].set_title(f"|output - golden|\n{_diff_title(diff)}", fontsize=9)
    for ax in axes:
        ax.set_anchor("N")
        ax.tick_params(labelsize=7)
    if title:
        fig.suptitle(title)
    fig.savefig(path, format="png", dpi=100)
    return path
