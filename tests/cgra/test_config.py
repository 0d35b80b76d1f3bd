import pytest
from hypothesis import given, strategies as st

from cgra.config import (ConfigField, config_address, decode_fields, encode_fields,
                         pack_fields, split_address)
from cgra.errors import ConfigError


def test_address_layout_known_answer():
    assert config_address(reg=2, feature=1, x=3, y=4) == 0x02010304
    assert split_address(0x02010304) == (2, 1, 3, 4)


def test_address_field_out_of_range_names_field():
    with pytest.raises(ConfigError, match="x=256"):
        config_address(0, 0, 256, 0)


def test_pack_small_fields_share_a_register_and_wide_fields_span():
    fields = [ConfigField("a", 20), ConfigField("b", 12), ConfigField("c", 5),
              ConfigField("d", 40)]
    slices = pack_fields(fields)
    assert [(s.name, s.reg, s.lo, s.width, s.field_lo) for s in slices] == [
        ("a", 0, 0, 20, 0), ("b", 0, 20, 12, 0), ("c", 1, 0, 5, 0),
        ("d", 2, 0, 32, 0), ("d", 3, 0, 8, 32)]


def test_field_that_does_not_fit_starts_next_register():
    slices = pack_fields([ConfigField("a", 30), ConfigField("b", 4)])
    assert (slices[1].reg, slices[1].lo) == (1, 0)


def test_duplicate_and_zero_width_rejected():
    with pytest.raises(ConfigError, match="'a' is declared twice"):
        pack_fields([ConfigField("a", 1), ConfigField("a", 2)])
    with pytest.raises(ConfigError, match="width 0"):
        pack_fields([ConfigField("z", 0)])


def test_encode_rejects_value_too_wide_and_unknown_field():
    fields = [ConfigField("a", 3)]
    with pytest.raises(ConfigError, match="'a' = 8 does not fit 3 bits"):
        encode_fields(fields, {"a": 8})
    with pytest.raises(ConfigError, match="unknown config field 'q'"):
        encode_fields(fields, {"q": 1})


@given(st.lists(st.integers(1, 70), min_size=1, max_size=8), st.data())
def test_encode_decode_round_trip(widths, data):
    fields = [ConfigField(f"f{i}", w) for i, w in enumerate(widths)]
    values = {f.name: data.draw(st.integers(0, (1 << f.width) - 1)) for f in fields}
    regs = encode_fields(fields, values)
    assert all(0 <= v < 2**32 for v in regs.values())
    assert decode_fields(fields, regs) == values
