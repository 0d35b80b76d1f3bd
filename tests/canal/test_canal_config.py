"""Config map and route_bitstream."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from canal.collateral import from_json, to_json
from canal.config import (POWER_GATE_FEATURE, POWER_GATE_FIELD, power_gate_bitstream,
                          power_gate_feature, route_bitstream, select_width, tile_configs)
from cgra.config import config_address, decode_fields, split_address
from garnet.collateral import FieldLoc, read_config_map, write_config_map
from cgra.errors import ConfigError, RoutingError


def test_feature_numbering_passthru_tile(ic4):
    tc = ic4.configs[(1, 1)]
    assert [(f.index, f.name) for f in tc.features] == [
        (0, "core"), (1, "sb16"), (2, "cb_data_in"), (3, "sb1"), (4, "cb_bit_in"),
        (5, "pg")]
    sb16 = tc.features[1]
    # 20 SB_OUT selects of 2 bits (fan-in 4) then 20 RMUX enables of 1 bit
    assert [f.width for f in sb16.fields] == [2] * 20 + [1] * 20
    assert sb16.num_regs == 2
    assert tc.features[2].fields[0].width == 5           # 20-input connection box
    assert tc.node_field["RMUX:16:1:1:WEST:4"] == (1, "RMUX_T4_WEST_B16_sel")
    io = ic4.configs[(0, 0)]
    assert [f.name for f in io.features] == ["core", "sb16", "cb_f2io_16", "sb1", "cb_f2io_1",
                                             "pg"]
    assert io.features[0].num_regs == 0


def test_select_width():
    assert [select_width(n) for n in (1, 2, 3, 4, 5, 20, 32, 33)] == [1, 1, 2, 2, 3, 5, 5, 6]


def test_route_bitstream_or_merges_known_answer(ic4):
    # SB_OUT N0 of (1,1) has fan-in [S0, E1, W0, core] -> W0 is select 2 (bits 1:0 of reg 0);
    # SB_OUT N1 has fan-in [S1, E2, W4, core] -> W4 is select 2 (bits 3:2); RMUX N1 with its
    # register is select 1 at bit 20*2 - 32 + 1 = 9 of reg 1.
    routes = {"a": [["SB:16:1:1:WEST:0:IN", "SB:16:1:1:NORTH:0:OUT"]],
              "b": [["SB:16:1:1:WEST:4:IN", "SB:16:1:1:NORTH:1:OUT", "REG:16:1:1:NORTH:1",
                     "RMUX:16:1:1:NORTH:1"]]}
    bs = ic4.route_bitstream(routes)
    assert bs == [(0x00010101, 2 | 2 << 2), (0x01010101, 1 << 9)]
    assert [split_address(a) for a, _ in bs] == [(0, 1, 1, 1), (1, 1, 1, 1)]


def test_route_bitstream_connection_box_and_core(ic4):
    # CB of data_in at (2,3) fed from SB_IN EAST track 3: fan-in index = 2*5 + 3 = 13
    bs = ic4.route_bitstream([[["SB:16:2:3:EAST:3:IN", "PORT:16:2:3:data_in"]]])
    assert bs == [(0x00020203, 13)]
    assert ic4.core_bitstream(1, 2, {"data_reg": 1, "bit_reg": 1}) == [(0x00000102, 3)]
    with pytest.raises(ConfigError, match=r"tile \(1, 2\) core: unknown config field 'gain'"):
        ic4.core_bitstream(1, 2, {"gain": 1})


def test_route_edge_not_in_graph_names_net_and_nodes(ic4):
    with pytest.raises(RoutingError) as exc:
        ic4.route_bitstream({"net7": [["SB:16:1:1:WEST:0:IN", "SB:16:1:1:NORTH:1:OUT"]]})
    msg = str(exc.value)
    assert "net net7" in msg
    assert "SB:16:1:1:WEST:0:IN -> SB:16:1:1:NORTH:1:OUT" in msg
    with pytest.raises(RoutingError, match="net n: node 'SB:16:9:9:WEST:0:IN' is not in"):
        ic4.route_bitstream({"n": [["SB:16:9:9:WEST:0:IN", "SB:16:1:1:NORTH:1:OUT"]]})
    with pytest.raises(RoutingError, match="net n: give a list of paths"):
        ic4.route_bitstream({"n": ["SB:16:1:1:WEST:0:IN", "SB:16:1:1:NORTH:0:OUT"]})


def test_route_conflict_is_an_error(ic4):
    with pytest.raises(RoutingError, match="SB:16:1:1:NORTH:0:OUT is driven by .* net a "
                                           "already selects"):
        ic4.route_bitstream({"a": [["SB:16:1:1:WEST:0:IN", "SB:16:1:1:NORTH:0:OUT"]],
                             "b": [["SB:16:1:1:SOUTH:0:IN", "SB:16:1:1:NORTH:0:OUT"]]})
    # one net fanning out from a shared prefix is fine
    bs = ic4.route_bitstream({"a": [["SB:16:1:1:WEST:0:IN", "SB:16:1:1:NORTH:0:OUT"],
                                    ["SB:16:1:1:WEST:0:IN", "SB:16:1:1:EAST:0:OUT"]]})
    assert len(bs) == 1


def test_config_fields_never_overlap(ic4):
    rows = ic4.config_map_rows()
    used: dict[int, int] = {}
    for r in rows:
        mask = ((1 << r["width"]) - 1) << r["lo"]
        assert r["lo"] + r["width"] <= 32
        assert used.get(r["addr"], 0) & mask == 0
        used[r["addr"]] = used.get(r["addr"], 0) | mask
    mux_rows = [r for r in rows if r["node"] is not None]
    n_mux = sum(1 for g in ic4.graphs.values() for f in g.fanin.values() if len(f) > 1)
    assert len(mux_rows) == n_mux
    # 8 pass-through cores x 2 fields, and the power-gate field of each of the 16 tiles
    assert len(rows) == n_mux + 2 * 8 + 16


def test_bitstream_from_collateral_graphs(ic4):
    loaded = {w: from_json(to_json(g)) for w, g in ic4.graphs.items()}
    routes = {"a": [["SB:1:2:2:SOUTH:0:IN", "SB:1:2:2:EAST:3:OUT", "REG:1:2:2:EAST:3",
                     "RMUX:1:2:2:EAST:3", "SB:1:3:2:WEST:3:IN", "PORT:1:3:2:f2io_1"]]}
    assert route_bitstream(loaded, routes) == ic4.route_bitstream(routes)
    assert tile_configs(loaded)[(2, 2)].registers() == ic4.configs[(2, 2)].registers()


def test_shortest_path_is_a_legal_route(ic4):
    from canal.paths import shortest_path, walk_path
    from canal.graph import Side
    g = ic4.graphs[16]
    p = shortest_path(g, "PORT:16:0:1:io2f_16", "PORT:16:3:1:f2io_16")
    assert p[0] == "PORT:16:0:1:io2f_16" and p[-1] == "PORT:16:3:1:f2io_16"
    outs = [n.split(":") for n in p if n.endswith(":OUT")]
    assert [(o[2], o[3], o[4]) for o in outs] == [("0", "1", "EAST"), ("1", "1", "EAST"),
                                                  ("2", "1", "EAST")]
    assert not any(n.startswith("REG:") for n in p)
    assert ic4.route_bitstream({"n": [p]})
    with pytest.raises(RoutingError, match="no SB_OUT on side NORTH"):
        walk_path(g, "PORT:16:0:1:io2f_16", [Side.NORTH], "PORT:16:0:0:f2io_16", track=9)
    with pytest.raises(RoutingError, match="leaves the array"):
        walk_path(g, "PORT:16:0:0:io2f_16", [Side.NORTH], "PORT:16:0:0:f2io_16")


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_bitstream_decodes_to_the_chosen_selects(ic4, data):
    """Property: decoding the bitstream with the config map gives back every select value
    (fields OR-merged into shared registers do not disturb each other)."""
    from cgra.config import decode_fields
    muxes = sorted(nid for g in ic4.graphs.values() for nid, f in g.fanin.items()
                   if len(f) > 1)
    chosen = data.draw(st.lists(st.sampled_from(muxes), min_size=1, max_size=40, unique=True))
    routes, want = {}, {}
    for i, nid in enumerate(chosen):
        fanin = ic4.graphs[int(nid.split(":")[1])].fanin[nid]
        sel = data.draw(st.integers(0, len(fanin) - 1))
        routes[f"n{i}"] = [[fanin[sel], nid]]
        want[nid] = sel
    regs: dict[tuple[int, int, int], dict[int, int]] = {}
    for addr, value in ic4.route_bitstream(routes):
        reg, feature, x, y = split_address(addr)
        regs.setdefault((x, y, feature), {})[reg] = value
    for (x, y), tc in ic4.configs.items():
        for f in tc.features:
            values = decode_fields(f.fields, regs.get((x, y, f.index), {}))
            for fname, nid in f.nodes.items():
                assert values[fname] == want.get(nid, 0)


def _config_items(configs):
    """Everything of a config map, with dict orders, as comparable lists."""
    return [(xy, tc.x, tc.y, tc.config_memory, list(tc.node_field.items()),
             [(f.index, f.name, f.fields, list(f.nodes.items()), f.words, f.slices, f.num_regs)
              for f in tc.features])
            for xy, tc in configs.items()]


def _irregular_graphs(extra_sb_edge):
    """A 6x5 wilton array with 4 tracks and registers on two tracks of two sides only,
    where tile (2, 2) has one extra switch-box edge (a 5-input mux: wider select, so every
    later field of its sb16 feature moves)."""
    from canal_testutil import io_west_east

    from canal.graph import Side
    from canal.passes import InterconnectParams, build_uniform
    regs = [(t, s) for t in (0, 2) for s in (Side.NORTH, Side.EAST)]
    ic = build_uniform(InterconnectParams(6, 5, tracks=4, topology="wilton",
                                          pipeline_registers=regs), io_west_east(6, 5))
    graphs = {w: g.copy() for w, g in ic.graphs.items()}
    extra_sb_edge(graphs[16], "SB:16:2:2:NORTH:0:OUT")
    return graphs


def test_templated_config_map_equals_tile_by_tile(extra_sb_edge):
    from canal.config import _general_tile_configs, _tile_rows, config_map_rows
    graphs = _irregular_graphs(extra_sb_edge)
    fast, general = tile_configs(graphs), _general_tile_configs(graphs)
    assert _config_items(fast) == _config_items(general)
    odd, plain = fast[(2, 2)], fast[(3, 2)]
    assert odd.feature("sb16").fields[0].width == 3          # the extra edge: 5 inputs
    assert plain.feature("sb16").fields[0].width == 2
    assert plain.node_field["SB:16:3:2:NORTH:0:OUT"] == (1, "SB_T0_NORTH_SB_OUT_B16_sel")
    assert all(nid.split(":")[2:4] == ["3", "2"] for nid in plain.node_field)
    # rows: templated (shared slices) == unshared configs == tile by tile, key order too
    want = [list(r.items()) for (x, y), tc in general.items() for r in _tile_rows(x, y, tc)]
    assert [list(r.items()) for r in config_map_rows(fast)] == want
    assert [list(r.items()) for r in config_map_rows(general)] == want


def test_power_gate_field_round_trips_through_the_config_map(ic4, tmp_path):
    """Every tile's last feature is ``pg`` with the 1-bit field ``gate`` (reset 0 = on); it
    is in config_map.json and read back into ConfigMap.power_gates, and the word
    power_gate_bitstream writes decodes to that field."""
    assert (POWER_GATE_FIELD.name, POWER_GATE_FIELD.width, POWER_GATE_FIELD.reset) == ("gate", 1, 0)
    for tc in ic4.configs.values():
        pg = power_gate_feature(tc)
        assert tc.features[-1] is pg and pg.name == POWER_GATE_FEATURE
        assert [(s.name, s.reg, s.lo, s.width) for s in pg.slices] == [("gate", 0, 0, 1)]
    cmap = read_config_map(write_config_map(tmp_path / "config_map.json", ic4.tiles,
                                            ic4.configs))
    assert sorted(cmap.power_gates) == sorted(ic4.configs)
    assert cmap.power_gates[(1, 1)] == FieldLoc("gate", 5, "pg", 0, 0, 1, 0)   # pass-through
    assert cmap.power_gates[(0, 0)] == FieldLoc("gate", 5, "pg", 0, 0, 1, 0)   # IO
    words = power_gate_bitstream(ic4.configs, [(2, 1), (1, 1)])
    assert words == [(config_address(0, 5, 1, 1), 1), (config_address(0, 5, 2, 1), 1)]
    assert words == [(0x00050101, 1), (0x00050201, 1)]
    pg = power_gate_feature(ic4.configs[(1, 1)])
    assert decode_fields(pg.fields, {0: words[0][1]}) == {"gate": 1}
    assert decode_fields(pg.fields, {}) == {"gate": 0}       # reset: the tile is on
    with pytest.raises(ConfigError, match=r"power gate: no tile at \(9, 9\)"):
        power_gate_bitstream(ic4.configs, [(9, 9)])
