"""The global buffer (GLB) as a Garnet component (AHA paper §4.4, Figs. 11-12).

Modules, in the package shape of the DSLs (``params`` / ``rtl`` / ``model`` / ``collateral``):

* :mod:`garnet.glb.params` -- :class:`GlbParams` (the ``[glb]`` TOML table), validation;
* :mod:`garnet.glb.dma` -- DMA programs = Lake port programs (one description), register map;
* :mod:`garnet.glb.model` -- the cycle-level model and the functional (golden) semantics;
* :mod:`garnet.glb.rtl` -- Verilog of ``glb_tile`` and the ``glb`` top (ring of tiles);
* :mod:`garnet.glb.sim` -- Icarus runs of the RTL against the model;
* :mod:`garnet.glb.confignet` -- the configuration network: bitstream -> GLB image, config
  cycles (unicast / multicast / broadcast / row multicast vs the single config port);
* :mod:`garnet.glb.collateral` -- ``glb.json`` (address maps, capabilities).

See docs/glb.md.
"""
