"""A DNN layer plan on a generated design (mapper.dnn.plan.Resources.from_design reads
design.json and mem.json): the tile counts and the MEM preset's words and ports, a plan that
fits the 8x8 array and one that does not; the blocks a layer can take."""
from __future__ import annotations

import pytest

from cgra.errors import CollateralError, MappingError
from mapper.apps import dnn
from mapper.dnn.plan import Resources, plan_layer


def test_resources_of_the_small_design(small_design):
    result, out = small_design
    res = Resources.from_design(out)
    assert (res.name, res.pes, res.mems, res.ios) == (
        "small", result.tile_counts["PE"], result.tile_counts["MEM"], result.tile_counts["IO"])
    assert (res.mem_words, res.mem_read_ports, res.mem_write_ports, res.fetch_width,
            res.read_latency) == (2048, 1, 1, 1, 1)
    plan = plan_layer(dnn.resnet_layer(10, 10, 4, 4, 2, 2), res)
    # 2 x 2 lanes: 4 weight streams + 2 input + 2 accumulation MEMs + the first-pass flag
    assert plan.mem_count == 9 <= res.mems
    with pytest.raises(MappingError, match=f"needs 161 PEs, design small has {res.pes}"):
        plan_layer(dnn.resnet_layer(), res)
    # 8 input x 2 output lanes: 16 + 16 + 3 + 6 PEs fit, 16 + 8 + 2 + 1 MEMs do not
    with pytest.raises(MappingError, match=f"needs 27 MEM tiles, design small has {res.mems}"):
        plan_layer(dnn.resnet_layer(10, 10, 8, 8, 8, 2), res)


def test_resources_of_a_directory_that_is_not_a_design(tmp_path):
    with pytest.raises(CollateralError, match="design.json"):
        Resources.from_design(tmp_path)


def test_default_counts_follow_the_default_config():
    """mapper.dnn.plan.DEFAULT_32X16 (what `cgra layer` plans on without --design) is
    configs/default.toml's array."""
    from pathlib import Path

    from garnet.build import _tile_counts
    from lake.collateral import MemInfo
    from garnet.params import load_toml
    from mapper.dnn.plan import DEFAULT_32X16

    params = load_toml(Path(__file__).resolve().parents[2] / "configs" / "default.toml")
    counts = _tile_counts(params)
    mem = MemInfo.of_preset(params.mem_preset)
    assert (DEFAULT_32X16.pes, DEFAULT_32X16.mems, DEFAULT_32X16.ios) == \
        (counts["PE"], counts["MEM"], counts["IO"])
    assert (DEFAULT_32X16.mem_words, DEFAULT_32X16.mem_read_ports,
            DEFAULT_32X16.mem_write_ports, DEFAULT_32X16.fetch_width) == (
        mem.capacity_words, len(mem.out_ports), len(mem.in_ports), mem.fetch_width)


def test_block_choices_divide_the_blocked_extent():
    """The blocks the array flow tries with no --block (mapper.dnn.array.map_layer), largest
    first: divisors of the channels (gemm: of m = n) up to the paper's 8."""
    assert dnn.block_choices("resnet_layer") == [8, 4, 2, 1]          # C = 16
    assert dnn.block_choices("mobilenet_layer", channels=6) == [6, 3, 2, 1]
    assert dnn.block_choices("gemm") == [8, 4, 2, 1]                  # m = n = 16
    assert dnn.block_choices("gemm", size=12, channels=64) == [6, 4, 3, 2, 1]
    assert dnn.block_choices("resnet_stride2", channels=7) == [7, 1]
    with pytest.raises(MappingError, match="unknown layer 'vgg'"):
        dnn.block_choices("vgg")
