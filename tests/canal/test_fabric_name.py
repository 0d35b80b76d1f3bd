"""Network names of the thesis's Table 3.2 (:mod:`canal.fabric_name`)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cgra.errors import ConfigError

from canal.fabric_name import FabricName, parse_fabric_name


@pytest.mark.parametrize("name,fields", [
    ("S-x2-db", ("S", 2, None, None, None, "db")),
    ("H-x3-v2-b3-f16", ("H", 3, 2, 3, 16, None)),
    ("D-x0-v4-f16", ("D", 0, 4, None, 16, None)),
    ("D-x0-v4-f512", ("D", 0, 4, None, 512, None)),
    ("S-x1", ("S", 1, None, None, None, None)),
    ("H-x2-v1-f32-cd", ("H", 2, 1, None, 32, "cd")),
])
def test_names_round_trip(name, fields):
    fn = parse_fabric_name(name)
    assert fn == FabricName(*fields)
    assert str(fn) == name


def test_router_params_of_a_name():
    rp = parse_fabric_name("H-x3-v2-b4-f16").router_params(data_width=32)
    assert (rp.vcs, rp.buffers, rp.flit_width, rp.flits_per_packet) == (2, 4, 16, 2)
    assert parse_fabric_name("D-x0-v4-f16").router_params().buffers == 3   # thesis default
    with pytest.raises(ConfigError, match="static network has no router"):
        parse_fabric_name("S-x2-db").router_params()


@pytest.mark.parametrize("name,field", [
    ("D-x1-v4-f16", "field x"),
    ("H-x3-b3-f16", "field v"),
    ("H-x3-v2", "field f"),
    ("S-x2-v2", "field v"),
    ("S-x0", "field x"),
    ("Q-x1", "kind 'Q'"),
    ("S-x2-zz", "token 'zz'"),
    ("H-x3-f16-v2", "field v (VCs) is out of order"),
    ("D-x0-v0-f8", "field v (VCs) = 0"),
    ("S-x2-db-cd", "db/cd is given twice"),
    ("D-x0-v2-f8-db", "field db/cd"),
    ("S", "field x"),
])
def test_bad_names_name_the_field(name, field):
    with pytest.raises(ConfigError, match="fabric name") as e:
        parse_fabric_name(name)
    assert field in str(e.value)


@given(st.sampled_from("SHD"), st.integers(1, 8), st.integers(1, 8),
       st.one_of(st.none(), st.integers(1, 8)), st.sampled_from([8, 16, 32, 512]),
       st.sampled_from([None, "db", "cd"]))
def test_round_trip_property(kind, x, v, b, f, fc):
    if kind == "S":
        fn = FabricName("S", x, flit_width=f, flow_control=fc)
    elif kind == "H":
        fn = FabricName("H", x, v, b, f, fc)
    else:
        fn = FabricName("D", 0, v, b, f)
    assert parse_fabric_name(str(fn)) == fn
