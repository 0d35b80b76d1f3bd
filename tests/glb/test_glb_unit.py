"""GLB parameters, DMA register encoding, glb.json and the configuration network's image
and cycle model (AHA §4.4, Fig. 12)."""
from __future__ import annotations

import json
import random

import pytest

from cgra.config import config_address
from cgra.errors import CollateralError, ConfigError
from garnet.glb.collateral import collateral, read, write
from garnet.glb.confignet import expand, glb_image, simulate
from garnet.glb.dma import DmaProgram, encode, register_fields
from garnet.glb.params import GlbParams, from_dict
from lake.program import program


def test_params_derived_sizes():
    p = from_dict({"tiles": 16, "bank_words": 2048})
    assert (p.lanes, p.tile_elements, p.tile_words, p.columns) == (4, 16384, 4096, 32)
    assert p.address_width == 18 and p.word_address_width == 16


@pytest.mark.parametrize("doc,needle", [
    ({"tiles": 0}, "'tiles' = 0"),
    ({"banks": 3}, "two SRAM banks"),
    ({"bank_words": 1000}, "power of two"),
    ({"colums_per_tile": 2}, "'colums_per_tile': unknown"),
    ({"tiles": "4"}, "expected an integer"),
    ({"word_width": 32}, "use 64 or 128"),
])
def test_params_errors_name_the_field(doc, needle):
    with pytest.raises(ConfigError) as exc:
        from_dict(doc, "glb.toml")
    assert needle in str(exc.value) and "\n" not in str(exc.value)
    assert str(exc.value).startswith("glb.toml: [glb] field")


def test_dma_registers_are_lake_recurrence_deltas():
    p = GlbParams(tiles=2, bank_words=64)
    prog = DmaProgram(program([4, 3], [1, 10], 5, [1, 6], 2))
    regs = encode(p, 0, "ld", prog)
    # delta_1 = s_1 - (e_0 - 1) s_0 = 10 - 3 = 7; schedule delta_1 = 6 - 3 = 3
    assert regs["ld_addr_delta_0"] == 1 and regs["ld_addr_delta_1"] == 7
    assert regs["ld_sched_delta_1"] == 3 and regs["ld_range_0"] == 3
    assert regs["ld_range_1"] == 2 and regs["ld_range_2"] == 0 and regs["ld_dim"] == 2
    neg = encode(p, 0, "st", DmaProgram(program([4], [-1], 3, [1], 0)))
    assert neg["st_addr_delta_0"] == (1 << p.address_width) - 1
    assert len(register_fields(p)) == 2 * (5 + 3 * p.dma_dims) + 2 * p.banks  # + streamers


def test_dma_program_outside_the_tile_is_refused():
    p = GlbParams(tiles=2, bank_words=64)            # 512 words per tile
    with pytest.raises(ConfigError, match="address-range"):
        encode(p, 1, "ld", DmaProgram(program([600], [1], 0, [1], 0)))
    # chained, the same program addresses two tiles and is accepted
    assert encode(p, 1, "ld", DmaProgram(program([600], [1], 0, [1], 0), True))["ld_chain"] == 1


def test_glb_json_maps(tmp_path):
    p = GlbParams(tiles=2, bank_words=64)
    doc = collateral(p)
    assert doc["host_map"][3] == {"tile": 1, "bank": 1, "first": 192, "last": 255}
    assert doc["element_map"][1] == {"tile": 1, "first": 512, "last": 1023}
    assert doc["capabilities"]["load_latency"] == {"local": 1, "chained": 3}
    assert doc["columns_of_tile"] == [[0, 1], [2, 3]]
    path = write(p, tmp_path)
    assert read(path) == p
    bad = json.loads(path.read_text())
    bad["host_map"][0]["last"] = 7
    path.write_text(json.dumps(bad))
    with pytest.raises(CollateralError, match="do not match"):
        read(path)


def _words(spec):
    return [(config_address(r, f, x, y), d) for r, f, x, y, d in spec]


def test_config_cycles_known_answer():
    p = GlbParams(tiles=2, bank_words=64, config_pipeline_rows=2)
    # column 0: register 0 = 5 in rows 1..3, register 1 differs per row; column 3: one word
    bs = _words([(0, 0, 0, y, 5) for y in (1, 2, 3)] + [(1, 0, 0, y, 10 + y) for y in (1, 2, 3)]
                + [(0, 1, 3, 3, 9)])
    assert simulate(p, bs, 4, "serial").cycles == 7
    # unicast: column 0 streams 6 words; the last (k = 5, row 3) is written at 5 + 1 + 3 // 2
    uni = simulate(p, bs, 4, "unicast")
    assert (uni.cycles, uni.writes, uni.streams) == (8, 7, 2)
    # row multicast: 3 singles, a mask word, one bundle to rows 1..3 (k = 4) -> 4 + 1 + 1
    rm = simulate(p, bs, 4, "unicast", row_multicast=True)
    assert (rm.cycles, rm.writes) == (7, 7)
    img = glb_image(p, bs, 4, row_multicast=True)
    assert len(img.columns[0]) == 5 and img.placement[3] == (1, 1, 0)
    # broadcast: one stream of 7 words; the last (k = 6, row 3) is written at 6 + 1 + 1
    assert simulate(p, bs, 4, "broadcast").cycles == 9
    with pytest.raises(ConfigError, match="widen the range"):
        simulate(p, bs, 4, "multicast", columns=(0, 1))
    with pytest.raises(ConfigError, match="reserved"):
        simulate(p, _words([(0, 0xFF, 0, 1, 1)]), 4)
    with pytest.raises(ConfigError, match="not served by the GLB"):
        simulate(p, _words([(0, 0, 9, 1, 1)]), 4)


@pytest.mark.parametrize("seed", range(5))
def test_image_expands_to_the_bitstream(seed):
    rng = random.Random(seed)
    p = GlbParams(tiles=4, bank_words=256)
    seen, bs = set(), []
    for _ in range(rng.randint(50, 300)):
        a = config_address(rng.randint(0, 40), rng.randint(0, 3), rng.randint(0, 7),
                           rng.randint(0, 15))
        if a not in seen:
            seen.add(a)
            bs.append((a, rng.choice([0, 1, 7, rng.getrandbits(32)])))
    for rm in (False, True):
        img = glb_image(p, bs, 16, rm)
        assert expand(img, 16) == sorted(bs)
        run = simulate(p, bs, 16, "unicast", rm)
        assert run.writes == len(bs)
        assert run.cycles <= simulate(p, bs, 16, "broadcast").cycles


def test_multicast_reconfigures_a_column_range_only():
    """Partial reconfiguration (AHA §4.4 DPR): a new bitstream for columns 0..3 multicast from
    GLB tile 0 writes no register of columns 4..7, and takes one cycle per word plus the
    column pipeline."""
    p = GlbParams(tiles=4, bank_words=64, config_pipeline_rows=4)
    first = _words([(r, 0, x, y, 100 + x) for x in range(8) for y in (1, 5) for r in range(3)])
    second = _words([(r, 0, x, y, 200 + x) for x in range(4) for y in (1, 5) for r in range(3)])
    run = simulate(p, second, 8, "multicast", source=0, columns=(0, 3))
    assert (run.writes, run.streams) == (24, 1)
    assert run.cycles == 23 + 1 + 5 // 4 + 1           # last word k = 23, row 5: stage 1
    state = dict(expand(glb_image(p, first, 8), 8))
    state.update(expand(glb_image(p, second, 8), 8))
    assert all(d == 100 + ((a >> 8) & 0xFF) for a, d in state.items() if (a >> 8) & 0xFF >= 4)
    assert all(d == 200 + ((a >> 8) & 0xFF) for a, d in state.items() if (a >> 8) & 0xFF < 4)
