"""An architect's memory tile written in Lake's components (issue 39): a dual-port SRAM of
4096 words x 16 bits (64 Kbit, twice the stock ``dualport_2048x16``), one write and one
read port, each served by its own controller (6-level iteration domain, schedule generator
and one address generator of log2(4096) + 4 chain bits = 16 bits), with the lookup-table
mode. Used by configs/small_dp4096.toml (``mem = "mem_dp4096.py:MEM"``); any edit here is
picked up by the next ``cgra rtl`` (the spec's content hash is part of the design key).
"""
from lake.spec import (AddressGenerator, Controller, ExternalPort, MemorySpec, MemPort,
                       Storage)

WORDS = 4096          # capacity in words (a power of two)
WIDTH = 16            # bits per word: the design's data_width
CHAIN_BITS = 4        # tile index bits of a chain of MEMs
ADDRESS_BITS = (WORDS - 1).bit_length() + CHAIN_BITS

MEM = MemorySpec(
    name="dp4096x16",
    storage=Storage("storage", capacity=WORDS, data_width=WIDTH, fetch_width=1, kind="sram"),
    mem_ports=(MemPort("w0", "W", latency=0), MemPort("r0", "R", latency=1)),
    external_ports=(ExternalPort("data_in_0", "in", WIDTH),
                    ExternalPort("data_out_0", "out", WIDTH)),
    controllers=(
        Controller("in0", "write", "data_in_0", 6, (AddressGenerator("addr", ADDRESS_BITS),)),
        Controller("out0", "read", "data_out_0", 6, (AddressGenerator("addr", ADDRESS_BITS),)),
    ),
    edges=(("data_in_0", "storage"), ("storage", "data_out_0")),
    chain_bits=CHAIN_BITS,
    lut=True,
)
