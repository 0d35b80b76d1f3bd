"""Host runtime: run compiled apps (`cgra run` artifacts) on a platform through the GLB.

In the shape of OpenCL / RDAI (AHA paper §6): :func:`platforms`, :func:`get_device` by
vendor-name-version, :class:`Context` (buffers in the GLB, programs), :class:`CommandQueue`
(write / run / read, :class:`Event`), typed errors (:class:`DeviceError`). Platforms are
plug-ins (the ``cgra_runtime.platforms`` entry-point group, or ``Runtime(extra=(cls,))``);
built in: ``cgra-gen/functional/1`` (:mod:`runtime.functional`) and
``cgra-gen/verilator/1`` (:mod:`runtime.verilator`: the generated array RTL). :mod:`runtime.tiled`
streams an image larger than the GLB through a program in GLB-sized tiles with double
buffering. See docs/glb.md.
"""
from __future__ import annotations

from runtime.api import (Buffer, CommandQueue, Context, Device, Event, Platform, Program,
                         Runtime, get_device, platforms)
from runtime.errors import DeviceError
from runtime.functional import FunctionalPlatform
from runtime.verilator import VerilatorPlatform

__all__ = ["Buffer", "CommandQueue", "Context", "Device", "DeviceError", "Event", "FunctionalPlatform", "Platform",
           "Program", "Runtime", "VerilatorPlatform", "get_device", "platforms"]
