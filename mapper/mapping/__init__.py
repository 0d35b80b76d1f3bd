"""Mapping: an application's IR onto the design's tiles, before any placement.

Public modules: :mod:`~mapper.mapping.memory` (memory mapping of stencil pipelines onto MEM
tiles: unified buffers, shift registers, port programs; ``map_memory``, ``MemSpec``),
:mod:`~mapper.mapping.compute` (instruction selection: covering kernel DAGs with the rewrite
rules; ``map_compute``, ``cover_kernel``), :mod:`~mapper.mapping.schedule` (earliest-start
affine schedules) over :mod:`~mapper.mapping.polyhedral` (the islpy view: iteration domains,
access maps, buffer capacities) and :mod:`~mapper.mapping.streams` (the cycle-level stream
model that checks a memory mapping). The map stage that drives them is
:func:`mapper.flow.map_app`.
"""
