"""Per-column configuration paths in the array top (canal.rtl.ConfigColumns; issue 37 item 2):
the netlist gives every column its config-path inputs, stall and flush, and every tile the
config bus of its column's path; the refusals. Their behaviour in Verilator (an app
configured only through them, and a column range reconfigured while the others run) is
tests/runtime/test_glb_run.py and test_glb_concurrent.py."""
from __future__ import annotations

import pytest

from canal.config import column_ports
from canal.rtl import ConfigColumns, array_netlist, column_verilog
from cgra.errors import SpecError


def test_column_ports_are_named_per_column():
    assert column_ports(0) == ("cfg_valid_X00", "cfg_word_X00", "flush_X00", "stall_X00")
    assert column_ports(26)[1] == "cfg_word_X1A"


def test_netlist_routes_each_tile_config_bus_through_its_column(ic4):
    plain = array_netlist(ic4, 2)
    net = array_netlist(ic4, 2, columns=ConfigColumns("col4", 4))
    extra = [p for p in net.ports if p not in plain.ports]
    assert extra == [(n, "in", w) for x in range(4)
                     for n, w in zip(column_ports(x), (1, 64, 1, 1), strict=True)]
    assert net.columns == ConfigColumns("col4", 4) and plain.columns is None
    for (x, y), conns in net.inputs.items():
        c = dict(conns)
        h = f"X{x:02X}_Y{y:02X}"
        assert c["config_addr"] == ("wire", f"config_addr_{h}", 32)
        assert c["config_data"] == ("wire", f"config_data_{h}", 32)
        assert c["config_write"] == ("wire", f"config_write_{h}", 1)
        assert c["config_read"] == ("port", "config_read")      # read-back stays shared
        assert c["clk_en"] == ("wire", f"clk_en_X{x:02X}", 1)
        # the rest of the tile's connections are the plain netlist's
        rest = {k: v for k, v in c.items() if k not in ("config_addr", "config_data",
                                                          "config_write", "clk_en", "flush")}
        assert rest == {k: v for k, v in dict(plain.inputs[(x, y)]).items()
                        if k in rest}
    # the flush spine of each column starts from its own flush (flush | flush_X<xx>)
    sources = dict(net.flush_regs)
    assert sources["flush_X02_S1"] == ("wire", "flush_in_X02", 1)
    assert dict(net.inputs[(2, 0)])["flush"] == ("wire", "flush_in_X02", 1)
    assert dict(net.inputs[(2, 3)])["flush"] == ("flush", "flush_X02_S1")


def test_refusals(ic4):
    with pytest.raises(SpecError, match="column config paths of 8 rows for an array of 4"):
        array_netlist(ic4, 2, columns=ConfigColumns("col8", 8))
    net = array_netlist(ic4, 2, columns=ConfigColumns("col4", 4))
    with pytest.raises(SpecError, match="column blocks of an array with column config paths"):
        column_verilog(net, "Top", {}, {}, 2)
