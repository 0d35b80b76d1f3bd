"""The interconnect of an array: one graph per bit width plus the cores placed on it."""
from __future__ import annotations

from dataclasses import InitVar, dataclass, field, replace
from functools import cached_property

from cgra.core import CoreSpec
from cgra.errors import SpecError

from canal.config import (Routes, TileConfig, config_map_rows, core_bitstream, route_bitstream,
                          tile_configs)
from canal.graph import InterconnectGraph, TileInfo
from canal.timing import TimingModel


@dataclass
class Interconnect:
    """``graphs``: bit width -> :class:`InterconnectGraph` (same tile set in every graph);
    ``cores``: core name -> :class:`~cgra.core.CoreSpec` (needed for RTL only; an
    interconnect loaded from collateral has none); ``timing``: the delay model the edge
    delays came from (``None`` when unknown), resolved on the graphs
    (:meth:`~canal.timing.TimingModel.resolve`: the delay of every path class) unless it
    already is or ``resolve_timing`` is False (the caller resolves it later, e.g. beside a
    forked process that does not need it)."""

    graphs: dict[int, InterconnectGraph]
    cores: dict[str, CoreSpec] = field(default_factory=dict)
    timing: TimingModel | None = None
    resolve_timing: InitVar[bool] = True

    def __post_init__(self, resolve_timing: bool = True) -> None:
        if not self.graphs:
            raise SpecError("Interconnect: no graphs; give at least one bit width")
        tiles = [g.tiles for g in self.graphs.values()]
        if any(t != tiles[0] for t in tiles):
            raise SpecError("Interconnect: the graphs of different widths cover different tiles "
                            "or cores; build them from the same tile records")
        if resolve_timing and self.timing is not None and not self.timing.classes:
            self.timing = self.timing.resolve(self.graphs)  # every path class must have a delay
        self._number_config_memories()

    def _number_config_memories(self) -> None:
        """Fill in ``TileInfo.config_memory.feature`` (the first config feature of a core's
        config memory, :mod:`canal.config`) in every graph's tile records, so that the
        routing-graph collateral carries it."""
        if not any(t.config_memory is not None and t.config_memory.feature is None
                   for t in self.tiles.values()):
            return
        configs = self.configs
        for g in self.graphs.values():
            for xy, t in list(g.tiles.items()):
                if t.config_memory is not None:
                    g.tiles[xy] = replace(t, config_memory=configs[xy].config_memory)

    @property
    def tiles(self) -> dict[tuple[int, int], TileInfo]:
        return next(iter(self.graphs.values())).tiles

    @property
    def size(self) -> tuple[int, int]:
        """(columns, rows) of the array."""
        xs = [x for x, _ in self.tiles]
        ys = [y for _, y in self.tiles]
        return max(xs) + 1, max(ys) + 1

    @cached_property
    def configs(self) -> dict[tuple[int, int], TileConfig]:
        """Config map of every tile (see :mod:`canal.config`)."""
        return tile_configs(self.graphs)

    @cached_property
    def nodes_by_tile(self) -> dict[int, dict[tuple[int, int], list]]:
        """width -> (x, y) -> the graph nodes of that tile (graph order)."""
        return {w: g.by_tile() for w, g in self.graphs.items()}

    def route_bitstream(self, routes: Routes) -> list[tuple[int, int]]:
        """``[(addr, data)]`` of a routing result; see :func:`canal.config.route_bitstream`."""
        return route_bitstream(self.graphs, routes, self.configs)

    def core_bitstream(self, x: int, y: int, values: dict[str, int]) -> list[tuple[int, int]]:
        """``[(addr, data)]`` writing core config fields of tile (x, y) (feature 0)."""
        return core_bitstream(self.configs, x, y, values)

    def config_map_rows(self) -> list[dict]:
        """Every config field of the array (see :func:`canal.config.config_map_rows`)."""
        return config_map_rows(self.configs)

    def core(self, x: int, y: int) -> CoreSpec | None:
        info = self.tiles[(x, y)]
        if info.core is None:
            return None
        if info.core not in self.cores:
            raise SpecError(f"tile ({x}, {y}) uses core '{info.core}' but this interconnect has "
                            f"no CoreSpec for it (loaded from collateral?); pass cores=...")
        return self.cores[info.core]
