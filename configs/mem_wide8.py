"""An architect's wide-fetch memory tile (issue 39): the physical unified buffer of the
unified-buffer paper (Liu et al., ACM TACO 2023, Sec. 6.1) with a fetch width of 8 instead
of the stock preset's 4 -- a single-port SRAM of 256 wide words of 8 x 16 bits (2048
words), two inputs through 16-word aggregators and two outputs through 16-word transpose
buffers. Used by configs/small_wide8.toml (``mem = "mem_wide8.py:MEM"``).
"""
import dataclasses

from lake.spec import physical_unified_buffer

MEM = dataclasses.replace(
    physical_unified_buffer(capacity=256, data_width=16, fetch_width=8),
    name="wide8_256x128")
