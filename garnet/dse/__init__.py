"""Design-space exploration: sweeps of GarnetParams x apps on Dask (docs/dse.md).

:mod:`garnet.dse.sweep` (the sweep file), :mod:`garnet.dse.run` (tasks and the Dask driver),
:mod:`garnet.dse.area` (yosys area proxy), :mod:`garnet.dse.plots`, :mod:`garnet.dse.cli`
(``cgra dse``)."""
