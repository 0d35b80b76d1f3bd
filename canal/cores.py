"""Small cores for the interconnect: an IO core for the array edge and a pass-through test core.

Both follow :mod:`cgra.core`: ``CLK``, ``RESET``, ``clk_en``, ``flush``, data ports by name
(``Bits[w]``, ``Bit`` for 1-bit ports) and ``config_<field>`` inputs (``Bits[w]``).
Ports listed in ``CoreSpec.info["external"]`` are not routed by the interconnect: the tile
passes them through and the array exposes them as top-level ports ``<port>_X<xx>_Y<yy>``
(x, y in two hex digits).
"""
from __future__ import annotations

import functools

from cgra.hdl import m

from cgra.config import ConfigField
from cgra.core import CoreSpec, PortSpec


def _t(width: int):
    return m.Bit if width == 1 else m.Bits[width]


@functools.lru_cache(maxsize=None)
def _io_circuit(circuit_name: str, width: int = 16):
    w = width
    ports = {"clk_en": m.In(m.Bit), "flush": m.In(m.Bit),
             f"f2io_{w}": m.In(m.Bits[w]), f"io2f_{w}": m.Out(m.Bits[w]),
             "f2io_1": m.In(m.Bit), "io2f_1": m.Out(m.Bit),
             f"glb2io_{w}": m.In(m.Bits[w]), f"io2glb_{w}": m.Out(m.Bits[w]),
             "glb2io_1": m.In(m.Bit), "io2glb_1": m.Out(m.Bit)}

    class IOCore(m.Circuit):
        name = circuit_name
        io = m.IO(**ports) + m.ClockIO(has_reset=True)
        m.wire(getattr(io, f"glb2io_{w}"), getattr(io, f"io2f_{w}"))
        io.io2f_1 @= io.glb2io_1
        m.wire(getattr(io, f"f2io_{w}"), getattr(io, f"io2glb_{w}"))
        io.io2glb_1 @= io.f2io_1
    return IOCore


def io_core(name: str = "io_core", tag: str = "I", width: int = 16) -> CoreSpec:
    """The IO core of data width ``width`` (bits, >= 2; ``W`` below): array edge -> fabric
    (``glb2io_W`` -> ``io2f_W``, ``glb2io_1`` -> ``io2f_1``) and fabric -> edge (``f2io_W``
    -> ``io2glb_W``, ``f2io_1`` -> ``io2glb_1``), combinational (0 cycles).
    ``glb2io_*``/``io2glb_*`` are external (array top-level) ports. The circuit is cached
    by ``(name, width)``: give each width its own ``name``. Raises :class:`ValueError` for
    ``width < 2``."""
    if width < 2:
        raise ValueError(f"io_core {name}: data width {width} must be >= 2 (the 1-bit IO is "
                         f"always there)")
    w = width
    ports = (PortSpec(f"f2io_{w}", w, "in"), PortSpec(f"io2f_{w}", w, "out"),
             PortSpec("f2io_1", 1, "in"), PortSpec("io2f_1", 1, "out"),
             PortSpec(f"glb2io_{w}", w, "in"), PortSpec(f"io2glb_{w}", w, "out"),
             PortSpec("glb2io_1", 1, "in"), PortSpec("io2glb_1", 1, "out"))
    return CoreSpec(name, tag, ports, (), functools.partial(_io_circuit, name, w),
                    {"external": (f"glb2io_{w}", f"io2glb_{w}", "glb2io_1", "io2glb_1"),
                     "timing_class": "io"})


@functools.lru_cache(maxsize=None)
def _passthru_circuit(circuit_name: str):
    class PassThru(m.Circuit):
        name = circuit_name
        io = m.IO(clk_en=m.In(m.Bit), flush=m.In(m.Bit),
                  data_in=m.In(m.Bits[16]), data_out=m.Out(m.Bits[16]),
                  bit_in=m.In(m.Bit), bit_out=m.Out(m.Bit),
                  config_data_reg=m.In(m.Bits[1]),
                  config_bit_reg=m.In(m.Bits[1])) + m.ClockIO(has_reset=True)
        dreg = m.Register(m.Bits[16], has_enable=True, reset_type=m.Reset)(name="data_r")
        dreg.I @= io.data_in
        dreg.CE @= io.clk_en
        breg = m.Register(m.Bit, has_enable=True, reset_type=m.Reset)(name="bit_r")
        breg.I @= io.bit_in
        breg.CE @= io.clk_en
        io.data_out @= m.mux([io.data_in, dreg.O], io.config_data_reg[0])
        io.bit_out @= m.mux([io.bit_in, breg.O], io.config_bit_reg[0])
    return PassThru


def passthru_core(name: str = "passthru", tag: str = "p") -> CoreSpec:
    """Test core: ``data_in`` (16) -> ``data_out`` (16) and ``bit_in`` (1) -> ``bit_out`` (1),
    each combinational (0 cycles) or registered (1 cycle, holds while ``clk_en`` = 0) when its
    config bit ``data_reg`` / ``bit_reg`` is 1. Config (feature 0, register 0):
    bit 0 = data_reg, bit 1 = bit_reg."""
    ports = (PortSpec("data_in", 16, "in"), PortSpec("data_out", 16, "out"),
             PortSpec("bit_in", 1, "in"), PortSpec("bit_out", 1, "out"))
    fields = (ConfigField("data_reg", 1, 0), ConfigField("bit_reg", 1, 0))
    return CoreSpec(name, tag, ports, fields, functools.partial(_passthru_circuit, name),
                    {"timing_class": "pe"})
