"""The stream harness of a ready-valid array (issue 33): the C++ testbench that
:func:`mapper.sim.verilator.build_harness` compiles instead of the static one when the design's
top has handshake sockets (a data port ``<p>`` with ``<p>_valid`` and ``<p>_ready``,
:func:`garnet.build.generate_rv_rtl`).

Same files and phases as the static harness (:mod:`mapper.sim.verilator`: reset, config
writes, read-back, flush with ``clk_en = 0``, ``flush_wait`` idle edges), one more stimulus
header line after ``readback``::

    stalls <seed> <p_in per mille> <p_out per mille>
    tokens <n> <count>...

(``tokens 0``: every socket moves ``T`` tokens as below; otherwise one count per driven
input, then per sampled output, in the order of the ``in`` and ``out`` lines: input ``i``
presents exactly its count of tokens and then holds ``valid`` at 0, output ``j`` is done
at its count: a dataflow program's streams, :mod:`mapper.dataflow.array`.)

Stream phase (``clk_en = 1``), cycle by cycle: every driven input socket presents its
tokens in order -- token ``k`` is row ``k`` of the stimulus for ``k < T`` and 0 beyond
(what the static harness drives after its last row) -- from the first cycle its random draw
does not stall it (probability ``p_in`` per cycle while it presents nothing), and holds a
presented token until it is taken (``valid & ready`` at the rising edge); every sampled
output socket's ``ready`` is 0 with probability ``p_out`` each cycle (backpressure), and its
transfers are its tokens. The run ends when every sampled output has ``T`` tokens; line
``k`` of the output ``data`` section is token ``k`` of each output, so it lines up with the
static harness's cycle ``k`` (:func:`garnet.build.generate_rv_rtl`: token ``k`` of a stream
of the ready-valid array is the static array's value in cycle ``k``). Draws come from one
xorshift64 generator seeded with ``seed`` (same seed, same run). A run that has not finished
after ``64 * T + 10000`` cycles stops with ``deadlock``: the harness exits with status 4,
naming the first output short of tokens.

Output file: as the static harness; after ``edges``: ``handshake <cycles> <input stall
cycles> <output backpressure cycles> <input tokens taken>`` (stall and backpressure cycles
summed over the sockets; ``cycles``: the stream phase's cycles), then ``toggles 0``.
"""
from __future__ import annotations

from typing import Sequence

from cgra.errors import CollateralError
from garnet.collateral import TopPort

#: control ports the harness drives itself (as :data:`mapper.sim.verilator.CONTROL_PORTS`)
RV_CONTROL_PORTS = ("CLK", "RESET", "clk_en", "flush", "config_addr", "config_data",
                    "config_write", "config_read")


#: C++ of phases 1-4 of both stream harnesses (this one and :mod:`mapper.sim.verilator`'s):
#: reset with the clock disabled (``@ZERO@``: the data inputs' reset lines), the config
#: writes (one per rising edge), the read-back and the flush followed by ``flush_wait`` edges
_CONFIG_PHASES = """  // 1. reset with the clock disabled
  t->CLK = 0; t->RESET = 1; t->clk_en = 0; t->flush = 0;
  t->config_addr = 0; t->config_data = 0; t->config_write = 0; t->config_read = 0;
@ZERO@
  t->eval();
  tick(); tick();
  t->RESET = 0;
  tick();
  // 2. configuration: one write per rising edge
  std::map<uint32_t, uint32_t> last;
  for (auto& w : bs) {
    t->config_addr = w.first; t->config_data = w.second; t->config_write = 1;
    tick();
    last[w.first] = w.second;
  }
  t->config_write = 0; t->config_addr = 0; t->config_data = 0; t->eval();
  // 3. read-back (read_data is combinational)
  std::vector<std::vector<uint32_t>> bad;
  if (readback) {
    t->config_read = 1;
    for (auto& w : last) {
      t->config_addr = w.first; t->eval();
      uint32_t got = t->read_data;
      if (got != w.second) bad.push_back({w.first, w.second, got});
    }
    t->config_read = 0; t->config_addr = 0; t->eval();
  }
  fprintf(fo, "readback %zu\\n", bad.size());
  for (auto& b : bad) fprintf(fo, "mismatch %08x %08x %08x\\n", b[0], b[1], b[2]);
  // 4. flush with the clock disabled, then let the flush spine drain
  t->flush = 1; tick(); t->flush = 0;
  for (long i = 0; i < flush_wait; i++) tick();
"""


#: C++ of both stream harnesses' ``die`` (exit status 3 with a message) and ``tick`` (one
#: clock period, counted in ``edges``)
HARNESS_HELPERS = """static void die(const char* msg, const char* arg) {
  fprintf(stderr, "harness: %s %s\\n", msg, arg ? arg : "");
  exit(3);
}
static void tick() {
  t->CLK = 1; t->eval();
  t->CLK = 0; t->eval();
  edges++;
}
"""

#: C++ of both stream harnesses: the stimulus lines ``in``, ``out`` (top port indices into
#: ``in_idx`` / ``out_idx``) and ``data``
PORT_LINES = """  std::vector<int> in_idx, out_idx;
  if (fscanf(fs, "%63s", word) != 1 || strcmp(word, "in")) die("stimulus: expected 'in'", argv[2]);
  int k;
  while (fscanf(fs, "%d", &k) == 1) in_idx.push_back(k);
  if (fscanf(fs, "%63s", word) != 1 || strcmp(word, "out")) die("stimulus: expected 'out'", argv[2]);
  while (fscanf(fs, "%d", &k) == 1) out_idx.push_back(k);
  if (fscanf(fs, "%63s", word) != 1 || strcmp(word, "data")) die("stimulus: expected 'data'", argv[2]);
"""

#: C++ of both stream harnesses' ``main`` up to the stimulus header's ``readback`` line:
#: the bitstream file read into ``bs``, the stimulus file opened as ``fs`` and its
#: ``cycles``, ``flush_wait`` and ``readback`` lines read (``@CLS@``: the Verilated class)
_OPENING = """int main(int argc, char** argv) {
  if (argc < 4) die("usage: harness <bitstream> <stimulus> <output>", "");
  Verilated::commandArgs(1, argv);
  t = new @CLS@;
  FILE* fb = fopen(argv[1], "r");
  if (!fb) die("cannot open bitstream", argv[1]);
  std::vector<std::pair<uint32_t, uint32_t>> bs;
  unsigned a, d;
  while (fscanf(fb, "%x %x", &a, &d) == 2) bs.push_back({a, d});
  fclose(fb);
  FILE* fs = fopen(argv[2], "r");
  if (!fs) die("cannot open stimulus", argv[2]);
  long cycles = 0, flush_wait = 0, readback = 1;
  char word[64];
  if (fscanf(fs, "%63s %ld", word, &cycles) != 2 || strcmp(word, "cycles")) die("stimulus: expected 'cycles'", argv[2]);
  if (fscanf(fs, "%63s %ld", word, &flush_wait) != 2 || strcmp(word, "flush_wait")) die("stimulus: expected 'flush_wait'", argv[2]);
  if (fscanf(fs, "%63s %ld", word, &readback) != 2 || strcmp(word, "readback")) die("stimulus: expected 'readback'", argv[2]);
"""


def harness_opening(cls: str) -> str:
    """The opening of a stream harness's ``main`` (:data:`_OPENING`) for Verilated class
    ``cls``."""
    return _OPENING.replace("@CLS@", cls)


def config_phases(zero: str) -> str:
    """Phases 1-4 of a stream harness (:data:`_CONFIG_PHASES`) with ``zero`` (C++ statements
    that clear the data inputs during reset)."""
    return _CONFIG_PHASES.replace("@ZERO@", zero)


def is_handshake_design(ports: Sequence[TopPort]) -> bool:
    """True when the top has a ready-valid socket (a data port ``p`` with ``p_valid`` and
    ``p_ready``)."""
    names = {p.name for p in ports}
    return any(f"{n}_valid" in names and f"{n}_ready" in names for n in names)


def rv_harness_source(top: str, ports: Sequence[TopPort]) -> tuple[str, list[str], list[str]]:
    """C++ source of the ready-valid stream harness of top module ``top`` (module docstring).
    Returns ``(source, data inputs, data outputs)``: the input sockets (the data of a
    ``_valid`` input) and the output sockets, each in design.json order. Raises
    :class:`CollateralError` for a missing control port or a socket wider than 64 bits."""
    by = {p.name: p for p in ports}
    for c in RV_CONTROL_PORTS:
        if c not in by:
            raise CollateralError(f"design.json: top module {top} has no port '{c}' (the "
                                  f"harness drives {', '.join(RV_CONTROL_PORTS)}); regenerate "
                                  f"the design")
    ins, outs = [], []
    for p in ports:
        if p.name in RV_CONTROL_PORTS or p.name == "read_data" or \
                p.name.endswith(("_valid", "_ready")):
            continue
        if f"{p.name}_valid" not in by or f"{p.name}_ready" not in by:
            raise CollateralError(f"design.json: port {p.name} of {top} has no _valid/_ready "
                                  f"pair; the ready-valid harness drives handshake sockets "
                                  f"only (a static track class in a ready-valid array is not "
                                  f"simulated)")
        if p.width > 64:
            raise CollateralError(f"design.json: socket {p.name} is {p.width} bits; the "
                                  f"harness handles up to 64")
        (ins if p.direction.startswith("in") else outs).append(p.name)
    cls = f"V{top}"

    def cases(names: list[str], body: str) -> str:
        return "\n".join(f"    case {k}: {body.format(n=n)} break;" for k, n in enumerate(names))

    zero = "\n".join(f"  t->{n} = 0; t->{n}_valid = 0;" for n in ins) + "\n" + \
        "\n".join(f"  t->{n}_ready = 0;" for n in outs)
    phases, opening = config_phases(zero), harness_opening(cls)
    helpers, port_lines = HARNESS_HELPERS, PORT_LINES
    src = f"""// generated by mapper.sim.rv_harness; do not edit
#include "{cls}.h"
#include "verilated.h"
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

static {cls}* t;
static uint64_t edges = 0;
static uint64_t rng;
static uint64_t draw() {{ rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }}
{helpers}static void set_in(int k, uint64_t v, int valid) {{
  switch (k) {{
{cases(ins, "t->{n} = v; t->{n}_valid = valid;")}
    default: die("bad input index", "");
  }}
}}
static int in_ready(int k) {{
  switch (k) {{
{cases(ins, "return t->{n}_ready;")}
    default: die("bad input index", "");
  }}
  return 0;
}}
static void set_ready(int k, int r) {{
  switch (k) {{
{cases(outs, "t->{n}_ready = r;")}
    default: die("bad output index", "");
  }}
}}
static uint64_t get_out(int k, int* valid) {{
  switch (k) {{
{cases(outs, "*valid = t->{n}_valid; return (uint64_t)t->{n};")}
    default: die("bad output index", "");
  }}
  return 0;
}}

{opening}  long p_in = 0, p_out = 0;
  unsigned long long seed = 0;
  if (fscanf(fs, "%63s %llu %ld %ld", word, &seed, &p_in, &p_out) != 4 || strcmp(word, "stalls")) die("stimulus: expected 'stalls <seed> <p_in> <p_out>' (a ready-valid design)", argv[2]);
  rng = seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
  if (!rng) rng = 1;
  long ntok = 0;
  if (fscanf(fs, "%63s %ld", word, &ntok) != 2 || strcmp(word, "tokens")) die("stimulus: expected 'tokens <n> <count>...'", argv[2]);
  std::vector<long> tok_count(ntok > 0 ? ntok : 0);
  for (long i = 0; i < ntok; i++)
    if (fscanf(fs, "%ld", &tok_count[i]) != 1) die("stimulus: short 'tokens' line", argv[2]);
{port_lines}  size_t ni = in_idx.size(), no = out_idx.size();
  // per-socket token counts: every socket `cycles` (inputs then present 0s) or the
  // 'tokens' line's counts (inputs then go invalid)
  std::vector<long> in_cnt(ni, cycles), out_cnt(no, cycles);
  int counted = ntok > 0;
  if (counted) {{
    if ((size_t)ntok != ni + no) die("stimulus: 'tokens' needs one count per input and output", argv[2]);
    for (size_t i = 0; i < ni; i++) in_cnt[i] = tok_count[i];
    for (size_t j = 0; j < no; j++) out_cnt[j] = tok_count[ni + j];
  }}
  std::vector<unsigned long long> stim(cycles * ni);
  for (long c = 0; c < cycles; c++)
    for (size_t i = 0; i < ni; i++)
      if (fscanf(fs, "%llu", &stim[c * ni + i]) != 1) die("stimulus: short data", argv[2]);
  fclose(fs);
  FILE* fo = fopen(argv[3], "w");
  if (!fo) die("cannot open output", argv[3]);

{phases}  // 5. stream: tokens with random input stalls and output backpressure
  t->clk_en = 1;
  std::vector<long> sent(ni, 0), got(no, 0);
  std::vector<int> presenting(ni, 0), ready(no, 0);
  std::vector<unsigned long long> tokens(cycles * no, 0);
  unsigned long long in_stalls = 0, out_stalls = 0, taken = 0;
  long limit = 64 * cycles + 10000, c = 0;
  auto done = [&]() {{ for (size_t j = 0; j < no; j++) if (got[j] < out_cnt[j]) return false; return true; }};
  for (; !done(); c++) {{
    if (c >= limit) {{
      size_t j = 0;
      while (got[j] >= out_cnt[j]) j++;
      fprintf(stderr, "harness: deadlock: output %d has %ld of %ld tokens after %ld cycles\\n",
              out_idx[j], got[j], out_cnt[j], c);
      exit(4);
    }}
    for (size_t i = 0; i < ni; i++) {{
      if (counted && sent[i] >= in_cnt[i]) {{ presenting[i] = 0; set_in(in_idx[i], 0, 0); continue; }}
      if (!presenting[i]) {{
        if ((long)(draw() % 1000) < p_in) in_stalls++;
        else presenting[i] = 1;
      }}
      uint64_t v = sent[i] < cycles ? stim[sent[i] * ni + i] : 0;
      set_in(in_idx[i], v, presenting[i]);
    }}
    for (size_t j = 0; j < no; j++) {{
      ready[j] = (long)(draw() % 1000) >= p_out;
      if (!ready[j]) out_stalls++;
      set_ready(out_idx[j], ready[j]);
    }}
    t->eval();
    std::vector<int> fire_in(ni, 0);
    for (size_t i = 0; i < ni; i++) fire_in[i] = presenting[i] && in_ready(in_idx[i]);
    for (size_t j = 0; j < no; j++) {{
      int valid = 0;
      uint64_t v = get_out(out_idx[j], &valid);
      if (valid && ready[j]) {{
        if (got[j] < cycles) tokens[got[j] * no + j] = v;
        got[j]++;
      }}
    }}
    tick();
    for (size_t i = 0; i < ni; i++)
      if (fire_in[i]) {{ sent[i]++; presenting[i] = 0; taken++; }}
  }}
  fprintf(fo, "data\\n");
  for (long r = 0; r < cycles; r++)
    for (size_t j = 0; j < no; j++)
      fprintf(fo, j + 1 < no ? "%llu " : "%llu\\n", tokens[r * no + j]);
  if (!no) for (long r = 0; r < cycles; r++) fprintf(fo, "\\n");
  fprintf(fo, "edges %llu\\n", (unsigned long long)edges);
  fprintf(fo, "handshake %ld %llu %llu %llu\\n", c, in_stalls, out_stalls, taken);
  fprintf(fo, "toggles 0\\n");
  fclose(fo);
  t->final();
  delete t;
  return 0;
}}
"""
    return src, ins, outs
