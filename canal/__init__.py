"""Canal: the interconnect DSL — a directed graph per bit width, built by passes, emitted as
RTL (magma), a routing graph (JSON / text) and a bitstream from a routing result, with a
structural check that the RTL is isomorphic to the graph.

Main entry points: :func:`canal.passes.build_uniform` (an :class:`Interconnect` for a W x H
array), :func:`canal.rtl.array_circuit` (magma array), :meth:`Interconnect.route_bitstream`,
:mod:`canal.collateral` (routing-graph dumps), :func:`canal.check.check_rtl`.
See docs/canal.md.
"""
from canal.config import route_bitstream, tile_configs
from canal.graph import IO, InterconnectGraph, Node, NodeKind, Side, TileInfo
from canal.interconnect import Interconnect
from canal.passes import CorePortConnections, InterconnectParams, build_uniform

__all__ = ["IO", "InterconnectGraph", "Node", "NodeKind", "Side", "TileInfo", "Interconnect",
           "CorePortConnections", "InterconnectParams", "build_uniform", "route_bitstream",
           "tile_configs"]
