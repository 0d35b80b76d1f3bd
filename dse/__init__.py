"""Design-space exploration: sweeps of GarnetParams x apps on Dask (docs/dse.md).

:mod:`dse.sweep` (the sweep file), :mod:`dse.run` (tasks and the Dask driver),
:mod:`dse.area` (yosys area proxy), :mod:`dse.plots`, :mod:`dse.cli`
(``cgra dse``)."""
