"""Test images for the golden models and simulations."""
from __future__ import annotations

import numpy as np

from cgra.errors import MappingError

#: top-left corner (y, x) of the default crop: a region of camera() with edges and corners
#: (the top-left 64x64 corner is flat sky, on which harris finds nothing).
DEFAULT_CROP_ORIGIN = (100, 200)


def camera_crop(width: int = 64, height: int = 64,
                origin: tuple[int, int] = DEFAULT_CROP_ORIGIN) -> np.ndarray:
    """A ``height x width`` crop of ``skimage.data.camera()`` (512x512, 8-bit) as uint16,
    indexed ``[y, x]``, with its top-left corner at ``origin = (y0, x0)``.

    Raises :class:`MappingError` if the crop does not fit in the 512x512 image.
    """
    from skimage import data

    img = data.camera()
    y0, x0 = origin
    if not (0 <= y0 and 0 <= x0 and y0 + height <= img.shape[0] and x0 + width <= img.shape[1]):
        raise MappingError(f"camera_crop: a {width}x{height} crop at (y, x) = {origin} does not "
                           f"fit the {img.shape[1]}x{img.shape[0]} camera image")
    return img[y0:y0 + height, x0:x0 + width].astype(np.uint16)
