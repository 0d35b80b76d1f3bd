"""Verilog of the GLB (AHA paper §4.4, Fig. 11): one ``glb_tile`` module (generated once,
instantiated ``tiles`` times with its index as the parameter ``TILE``) and the top ``glb``
that wires the tiles into a ring and decodes the host and config ports.

Behaviour, port for port and register for register: :mod:`garnet.glb.model` (the same
Lake controller in recurrence form per DMA, :mod:`garnet.glb.dma`). Text generation in the
style of the array top (:func:`garnet.array.array_top`): plain Verilog-2005 that Icarus,
Verilator and yosys read the same way. Each bank is ``lanes`` SRAM arrays of
``bank_words`` x ``data_width`` bits with synchronous read (one lane write enable each), so
a store DMA writes one array word without a read-modify-write.

Top ports (``N = tiles``; widths in bits): ``clk``, ``rst`` (sync, active high),
``start`` [N], ``cfg_go`` [N], per tile t and bank b ``cfg_valid_<t>_<b>``,
``cfg_word_<t>_<b>`` [word_width] (the config stream of column ``t * columns_per_tile + b``), per tile t ``io_in_<t>`` [data_width], ``io_out_<t>`` [data_width],
``io_out_valid_<t>``, ``ld_done_<t>``, ``st_done_<t>``; ``cfg_wr``, ``cfg_addr`` [16]
(``tile << 8 | register``), ``cfg_data`` [32]; ``host_wr``, ``host_waddr``
[word_address_width], ``host_wdata`` [word_width], ``host_rd``, ``host_raddr``
[word_address_width], ``host_rd_valid``, ``host_rdata`` [word_width].
"""
from __future__ import annotations

from cgra.errors import ConfigError
from garnet.glb.collateral import SYSTEM_INPUTS, io_column, store_candidates
from garnet.glb.dma import DMAS, register_fields
from garnet.glb.params import GlbParams


def _bits(n: int) -> int:
    """Bits of an index into ``n`` items (at least 1)."""
    return max(1, (n - 1).bit_length())


def tile_verilog(p: GlbParams) -> str:
    """The ``glb_tile`` module (Verilog text)."""
    dw, ww, aw, sw, ew = (p.data_width, p.word_width, p.address_width, p.schedule_width,
                          p.extent_width)
    lanes, bw, nd = p.lanes, p.bank_words, p.dma_dims
    eb = _bits(p.tile_elements)
    lb = (lanes - 1).bit_length()
    wb = _bits(bw)
    tb = _bits(p.tiles)
    twb = _bits(p.tile_words)
    fields = register_fields(p)
    L: list[str] = []
    a = L.append
    a("module glb_tile #(parameter TILE = 0) (")
    a("  input clk, input rst, input start, input cfg_go,")
    a(f"  input [{dw - 1}:0] io_in, output io_out_valid, output [{dw - 1}:0] io_out,")
    a("  output ld_done, output st_done,")
    a("  input cfg_wr, input [7:0] cfg_reg, input [31:0] cfg_data,")
    a(f"  input host_wr, input [{twb - 1}:0] host_waddr, input [{ww - 1}:0] host_wdata,")
    a(f"  input host_rd, input [{twb - 1}:0] host_raddr,")
    a(f"  output host_rd_valid, output [{ww - 1}:0] host_rdata,")
    for b in range(p.banks):
        a(f"  output cfg_valid_{b}, output [{ww - 1}:0] cfg_word_{b},")
    a(f"  input rl_in_valid, input [{aw - 1}:0] rl_in_addr, input [{tb - 1}:0] rl_in_src,")
    a(f"  input [{dw - 1}:0] rl_in_data,")
    a(f"  output rl_out_valid, output [{aw - 1}:0] rl_out_addr, output [{tb - 1}:0] rl_out_src,")
    a(f"  output [{dw - 1}:0] rl_out_data,")
    a(f"  input rs_in_valid, input [{aw - 1}:0] rs_in_addr, input [{tb - 1}:0] rs_in_src,")
    a(f"  input [{dw - 1}:0] rs_in_data,")
    a(f"  output reg rs_out_valid, output reg [{aw - 1}:0] rs_out_addr,")
    a(f"  output reg [{tb - 1}:0] rs_out_src, output reg [{dw - 1}:0] rs_out_data);")
    # config registers
    for name, w in fields:
        a(f"  reg [{w - 1}:0] cfg_{name};")
    a("  always @(posedge clk) begin")
    a("    if (rst) begin")
    for name, _w in fields:
        a(f"      cfg_{name} <= 0;")
    a("    end else if (cfg_wr) begin")
    a("      case (cfg_reg)")
    for i, (name, w) in enumerate(fields):
        a(f"        8'd{i}: cfg_{name} <= cfg_data[{w - 1}:0];")
    a("        default: ;")
    a("      endcase")
    a("    end")
    a("  end")
    # cycle counter
    a(f"  reg [{sw - 1}:0] cycle;")
    a("  always @(posedge clk) if (rst || start) cycle <= 0; else cycle <= cycle + 1;")

    def own(expr: str) -> str:
        if p.tiles == 1 or aw <= eb:
            return "1'b1"
        return f"({expr}[{aw - 1}:{eb}] == TILE)"

    def bank(expr: str) -> str:
        return f"{expr}[{eb - 1}]"

    def word(expr: str) -> str:
        return f"{expr}[{lb + wb - 1}:{lb}]"

    def lane(expr: str) -> str:
        return f"{expr}[{lb - 1}:0]" if lb else "1'b0"

    # controllers
    for d in DMAS:
        for k in range(nd):
            a(f"  reg [{ew - 1}:0] {d}_cnt_{k};")
        a(f"  reg [{aw - 1}:0] {d}_addr; reg [{sw - 1}:0] {d}_sched; reg {d}_dn;")
        a(f"  wire {d}_fire = !start && cfg_{d}_enable && !{d}_dn && ({d}_sched == cycle);")
        for k in range(nd):
            a(f"  wire {d}_max_{k} = ({d}_cnt_{k} == cfg_{d}_range_{k}) || (cfg_{d}_dim <= 3'd{k});")
        for k in range(nd):
            lower = " && ".join([f"{d}_max_{j}" for j in range(k)] + [f"!{d}_max_{k}"])
            a(f"  wire {d}_inc_{k} = {lower};")
        a(f"  wire {d}_all = " + " && ".join(f"{d}_max_{k}" for k in range(nd)) + ";")
        sel_a = f"{aw}'d0"
        sel_s = f"{sw}'d0"
        for k in reversed(range(nd)):
            sel_a = f"({d}_inc_{k} ? cfg_{d}_addr_delta_{k} : {sel_a})"
            sel_s = f"({d}_inc_{k} ? cfg_{d}_sched_delta_{k} : {sel_s})"
        a("  always @(posedge clk) begin")
        a("    if (rst) begin")
        for k in range(nd):
            a(f"      {d}_cnt_{k} <= 0;")
        a(f"      {d}_addr <= 0; {d}_sched <= 0; {d}_dn <= 0;")
        a("    end else if (start) begin")
        for k in range(nd):
            a(f"      {d}_cnt_{k} <= 0;")
        a(f"      {d}_addr <= cfg_{d}_addr_offset; {d}_sched <= cfg_{d}_sched_offset;")
        a(f"      {d}_dn <= 0;")
        a(f"    end else if ({d}_fire) begin")
        a(f"      if ({d}_all) {d}_dn <= 1;")
        a("      else begin")
        for k in range(nd):
            higher = " || ".join(f"{d}_inc_{j}" for j in range(k + 1, nd)) or "1'b0"
            a(f"        {d}_cnt_{k} <= {d}_inc_{k} ? {d}_cnt_{k} + 1'b1 : "
              f"(({higher}) ? {ew}'d0 : {d}_cnt_{k});")
        a(f"        {d}_addr <= {d}_addr + {sel_a};")
        a(f"        {d}_sched <= {d}_sched + {sel_s};")
        a("      end")
        a("    end")
        a("  end")

    a("  assign ld_done = ld_dn;")
    a("  assign st_done = st_dn;")
    # address fields
    a(f"  wire ld_own = {own('ld_addr')}; wire st_own = {own('st_addr')};")
    a("  wire rl_pass = rl_in_valid && (rl_in_src != TILE);")
    a("  wire rl_mine = rl_in_valid && (rl_in_src == TILE);")
    a(f"  wire rl_serve = rl_pass && {own('rl_in_addr')};")
    a("  wire rs_pass = rs_in_valid && (rs_in_src != TILE);")
    a(f"  wire rs_write = rs_pass && {own('rs_in_addr')};")
    a("  wire ld_read = ld_fire && (!cfg_ld_chain || ld_own);")
    a("  wire ld_inject = ld_fire && cfg_ld_chain;")
    a("  wire st_inject = st_fire && cfg_st_chain && !st_own;")
    a("  wire st_write = st_fire && !(cfg_st_chain && !st_own);")
    # banks
    for b in range(p.banks):
        a(f"  wire h_re_{b} = host_rd && (host_raddr[{twb - 1}] == 1'b{b});")
        a(f"  wire r_re_{b} = rl_serve && ({bank('rl_in_addr')} == 1'b{b});")
        a(f"  wire d_re_{b} = ld_read && ({bank('ld_addr')} == 1'b{b});")
        a(f"  reg [{wb - 1}:0] cs_a_{b}; reg [{wb}:0] cs_n_{b}; reg cs_d_{b};")
        a(f"  wire s_re_{b} = cs_n_{b} != 0;")
        a(f"  wire re_{b} = h_re_{b} || r_re_{b} || d_re_{b} || s_re_{b};")
        a(f"  wire [{wb - 1}:0] ra_{b} = h_re_{b} ? host_raddr[{wb - 1}:0] : "
          f"r_re_{b} ? {word('rl_in_addr')} : d_re_{b} ? {word('ld_addr')} : cs_a_{b};")
        a("  always @(posedge clk) begin")
        a(f"    if (rst) begin cs_a_{b} <= 0; cs_n_{b} <= 0; cs_d_{b} <= 0; end")
        a("    else begin")
        a(f"      cs_d_{b} <= s_re_{b};")
        a(f"      if (cfg_go) begin cs_a_{b} <= cfg_cs_base_{b}; cs_n_{b} <= cfg_cs_count_{b}; end")
        a(f"      else if (s_re_{b}) begin cs_a_{b} <= cs_a_{b} + 1'b1; cs_n_{b} <= cs_n_{b} - 1'b1; end")
        a("    end")
        a("  end")
        a(f"  wire h_we_{b} = host_wr && (host_waddr[{twb - 1}] == 1'b{b});")
        a(f"  wire r_we_{b} = !h_we_{b} && rs_write && ({bank('rs_in_addr')} == 1'b{b});")
        a(f"  wire d_we_{b} = !h_we_{b} && !r_we_{b} && st_write && ({bank('st_addr')} == 1'b{b});")
        a(f"  wire [{wb - 1}:0] wa_{b} = h_we_{b} ? host_waddr[{wb - 1}:0] : "
          f"r_we_{b} ? {word('rs_in_addr')} : {word('st_addr')};")
        a(f"  wire [{dw - 1}:0] wd_{b} = r_we_{b} ? rs_in_data : io_in;")
        a(f"  wire [{lb if lb else 1} - 1:0] wl_{b} = r_we_{b} ? {lane('rs_in_addr')} : {lane('st_addr')};")
        for ln in range(lanes):
            a(f"  reg [{dw - 1}:0] mem_{b}_{ln} [0:{bw - 1}];")
            a(f"  reg [{dw - 1}:0] q_{b}_{ln};")
            a(f"  wire we_{b}_{ln} = h_we_{b} || ((r_we_{b} || d_we_{b}) && wl_{b} == {ln});")
            a(f"  wire [{dw - 1}:0] wv_{b}_{ln} = h_we_{b} ? host_wdata[{(ln + 1) * dw - 1}:{ln * dw}] : wd_{b};")
            a("  always @(posedge clk) begin")
            a(f"    if (we_{b}_{ln}) mem_{b}_{ln}[wa_{b}] <= wv_{b}_{ln};")
            a(f"    if (rst) q_{b}_{ln} <= 0; else if (re_{b}) q_{b}_{ln} <= mem_{b}_{ln}[ra_{b}];")
            a("  end")
        a(f"  wire [{ww - 1}:0] q_{b} = {{" + ", ".join(f"q_{b}_{ln}" for ln in reversed(range(lanes))) + "};")
        a(f"  assign cfg_valid_{b} = cs_d_{b};")
        a(f"  assign cfg_word_{b} = cs_d_{b} ? q_{b} : {ww}'d0;")

    def lane_of(bank_sel: str, lane_sel: str) -> str:
        expr = f"{dw}'d0"
        for b in reversed(range(p.banks)):
            for ln in reversed(range(lanes)):
                expr = f"(({bank_sel} == 1'b{b}) && ({lane_sel} == {ln}) ? q_{b}_{ln} : {expr})"
        return expr

    # local load output, host read
    a(f"  reg ld_d_v; reg ld_d_b; reg [{max(lb, 1) - 1}:0] ld_d_l;")
    a("  reg host_d_v; reg host_d_b;")
    a(f"  reg ro_v; reg [{dw - 1}:0] ro_d;")
    a(f"  reg rl_v; reg [{aw - 1}:0] rl_a; reg [{tb - 1}:0] rl_s; reg rl_h; reg [{dw - 1}:0] rl_d;")
    a("  always @(posedge clk) begin")
    a("    if (rst) begin")
    a("      ld_d_v <= 0; ld_d_b <= 0; ld_d_l <= 0; host_d_v <= 0; host_d_b <= 0;")
    a("      ro_v <= 0; ro_d <= 0; rl_v <= 0; rl_a <= 0; rl_s <= 0; rl_h <= 0; rl_d <= 0;")
    a("      rs_out_valid <= 0; rs_out_addr <= 0; rs_out_src <= 0; rs_out_data <= 0;")
    a("    end else begin")
    a("      ld_d_v <= ld_fire && !cfg_ld_chain;")
    a(f"      ld_d_b <= {bank('ld_addr')}; ld_d_l <= {lane('ld_addr')};")
    a(f"      host_d_v <= host_rd; host_d_b <= host_raddr[{twb - 1}];")
    a(f"      ro_v <= rl_mine; ro_d <= rl_mine ? rl_in_data : {dw}'d0;")
    a("      if (rl_pass) begin")
    a(f"        rl_v <= 1; rl_a <= rl_in_addr; rl_s <= rl_in_src; rl_h <= {own('rl_in_addr')};")
    a("        rl_d <= rl_in_data;")
    a("      end else if (ld_inject) begin")
    a(f"        rl_v <= 1; rl_a <= ld_addr; rl_s <= TILE; rl_h <= ld_own; rl_d <= {dw}'d0;")
    a("      end else begin")
    a(f"        rl_v <= 0; rl_a <= 0; rl_s <= 0; rl_h <= 0; rl_d <= {dw}'d0;")
    a("      end")
    a("      if (rs_pass && !rs_write) begin")
    a("        rs_out_valid <= 1; rs_out_addr <= rs_in_addr; rs_out_src <= rs_in_src;")
    a("        rs_out_data <= rs_in_data;")
    a("      end else if (st_inject) begin")
    a("        rs_out_valid <= 1; rs_out_addr <= st_addr; rs_out_src <= TILE;")
    a("        rs_out_data <= io_in;")
    a("      end else begin")
    a("        rs_out_valid <= 0; rs_out_addr <= 0; rs_out_src <= 0; rs_out_data <= 0;")
    a("      end")
    a("    end")
    a("  end")
    a("  assign io_out_valid = ld_d_v || ro_v;")
    a(f"  assign io_out = ld_d_v ? {lane_of('ld_d_b', 'ld_d_l')} : ro_d;")
    hq = f"{ww}'d0"
    for b in reversed(range(p.banks)):
        hq = f"((host_d_b == 1'b{b}) ? q_{b} : {hq})"
    a("  assign host_rd_valid = host_d_v;")
    a(f"  assign host_rdata = host_d_v ? {hq} : {ww}'d0;")
    a("  assign rl_out_valid = rl_v; assign rl_out_addr = rl_a; assign rl_out_src = rl_s;")
    a(f"  assign rl_out_data = rl_h ? {lane_of(bank('rl_a'), lane('rl_a'))} : rl_d;")
    a("endmodule")
    return "\n".join(L) + "\n"


def top_verilog(p: GlbParams) -> str:
    """The ``glb`` top: ``tiles`` instances of ``glb_tile`` on a ring (Verilog text)."""
    n, dw, ww, aw = p.tiles, p.data_width, p.word_width, p.address_width
    tb = _bits(p.tiles)
    twb = _bits(p.tile_words)
    hw = p.word_address_width
    L: list[str] = []
    a = L.append
    ports = ["input clk", "input rst", f"input [{n - 1}:0] start", f"input [{n - 1}:0] cfg_go",
             "input cfg_wr",
             "input [15:0] cfg_addr", "input [31:0] cfg_data", "input host_wr",
             f"input [{hw - 1}:0] host_waddr", f"input [{ww - 1}:0] host_wdata", "input host_rd",
             f"input [{hw - 1}:0] host_raddr", "output host_rd_valid",
             f"output [{ww - 1}:0] host_rdata"]
    for t in range(n):
        ports += [f"input [{dw - 1}:0] io_in_{t}", f"output [{dw - 1}:0] io_out_{t}",
                  f"output io_out_valid_{t}", f"output ld_done_{t}", f"output st_done_{t}"]
        for b in range(p.banks):
            ports += [f"output cfg_valid_{t}_{b}", f"output [{ww - 1}:0] cfg_word_{t}_{b}"]
    a("module glb (\n  " + ",\n  ".join(ports) + ");")
    for t in range(n):
        a(f"  wire rl_v_{t}; wire [{aw - 1}:0] rl_a_{t}; wire [{tb - 1}:0] rl_s_{t}; "
          f"wire [{dw - 1}:0] rl_d_{t};")
        a(f"  wire rs_v_{t}; wire [{aw - 1}:0] rs_a_{t}; wire [{tb - 1}:0] rs_s_{t}; "
          f"wire [{dw - 1}:0] rs_d_{t};")
        a(f"  wire hv_{t}; wire [{ww - 1}:0] hd_{t};")
    for t in range(n):
        prev = (t - 1) % n

        def tile_sel(addr: str, t: int = t) -> str:
            if hw <= twb:
                return "1'b1"
            return f"({addr}[{hw - 1}:{twb}] == {t})"

        a(f"  glb_tile #(.TILE({t})) tile_{t} (.clk(clk), .rst(rst), .start(start[{t}]), "
          f".cfg_go(cfg_go[{t}]),")
        a("    " + ", ".join(f".cfg_valid_{b}(cfg_valid_{t}_{b}), .cfg_word_{b}(cfg_word_{t}_{b})"
                             for b in range(p.banks)) + ",")
        a(f"    .io_in(io_in_{t}), .io_out_valid(io_out_valid_{t}), .io_out(io_out_{t}),")
        a(f"    .ld_done(ld_done_{t}), .st_done(st_done_{t}),")
        a(f"    .cfg_wr(cfg_wr && cfg_addr[15:8] == 8'd{t}), .cfg_reg(cfg_addr[7:0]), "
          f".cfg_data(cfg_data),")
        a(f"    .host_wr(host_wr && {tile_sel('host_waddr')}), .host_waddr(host_waddr[{twb - 1}:0]),"
          f" .host_wdata(host_wdata),")
        a(f"    .host_rd(host_rd && {tile_sel('host_raddr')}), .host_raddr(host_raddr[{twb - 1}:0]),")
        a(f"    .host_rd_valid(hv_{t}), .host_rdata(hd_{t}),")
        a(f"    .rl_in_valid(rl_v_{prev}), .rl_in_addr(rl_a_{prev}), .rl_in_src(rl_s_{prev}), "
          f".rl_in_data(rl_d_{prev}),")
        a(f"    .rl_out_valid(rl_v_{t}), .rl_out_addr(rl_a_{t}), .rl_out_src(rl_s_{t}), "
          f".rl_out_data(rl_d_{t}),")
        a(f"    .rs_in_valid(rs_v_{prev}), .rs_in_addr(rs_a_{prev}), .rs_in_src(rs_s_{prev}), "
          f".rs_in_data(rs_d_{prev}),")
        a(f"    .rs_out_valid(rs_v_{t}), .rs_out_addr(rs_a_{t}), .rs_out_src(rs_s_{t}), "
          f".rs_out_data(rs_d_{t}));")
    a("  assign host_rd_valid = " + " | ".join(f"hv_{t}" for t in range(n)) + ";")
    a("  assign host_rdata = " + " | ".join(f"hd_{t}" for t in range(n)) + ";")
    a("endmodule")
    return "\n".join(L) + "\n"


def glb_verilog(p: GlbParams) -> str:
    """The whole GLB: ``glb_tile`` then ``glb`` (Verilog text)."""
    return tile_verilog(p) + "\n" + top_verilog(p)


def column_verilog(height: int, rows_per_stage: int, name: str = "glb_cfg_column") -> str:
    """One column's configuration path (Verilog text; :mod:`garnet.glb.confignet` is its
    model): ``in_valid`` / ``in_word`` [64] (``addr << 32 | data``, one bundle per cycle from
    a GLB bank's read register) is stage 0; a register stage follows every
    ``rows_per_stage`` rows. A word with feature 0xFF loads row-mask chunk ``reg`` (32 rows)
    and is not forwarded; a bundle with row 0xFF carries the current mask, any other one the
    one-hot mask of its row. Outputs: ``wr`` [height] (row y writes this cycle),
    ``addr_<y>`` [32] (the bundle's address with row y), ``data_<y>`` [32]."""
    h, r = height, rows_per_stage
    stages = -(-h // r)
    chunks = -(-h // 32)
    L: list[str] = []
    a = L.append
    ports = ["input clk", "input rst", "input in_valid", "input [63:0] in_word",
             f"output [{h - 1}:0] wr"]
    ports += [f"output [31:0] addr_{y}" for y in range(h)]
    ports += [f"output [31:0] data_{y}" for y in range(h)]
    a(f"module {name} (\n  " + ",\n  ".join(ports) + ");")
    a(f"  reg [{32 * chunks - 1}:0] mask;")
    a("  wire is_mask = in_word[55:48] == 8'hFF;")
    a("  wire all_rows = in_word[39:32] == 8'hFF;")
    a(f"  wire [{32 * chunks - 1}:0] onehot = {{{{{32 * chunks - 1}{{1'b0}}}}, 1'b1}} << in_word[39:32];")
    a("  wire v_0 = in_valid && !is_mask;")
    a("  wire [63:0] w_0 = in_word;")
    a(f"  wire [{h - 1}:0] m_0 = all_rows ? mask[{h - 1}:0] : onehot[{h - 1}:0];")
    a("  always @(posedge clk) begin")
    a("    if (rst) mask <= 0;")
    a("    else if (in_valid && is_mask) begin")
    a("      case (in_word[63:56])")
    for c in range(chunks):
        a(f"        8'd{c}: mask[{32 * c + 31}:{32 * c}] <= in_word[31:0];")
    a("        default: ;")
    a("      endcase")
    a("    end")
    a("  end")
    for s in range(1, stages):
        a(f"  reg v_{s}; reg [63:0] w_{s}; reg [{h - 1}:0] m_{s};")
        a("  always @(posedge clk) begin")
        a(f"    if (rst) begin v_{s} <= 0; w_{s} <= 0; m_{s} <= 0; end")
        a(f"    else begin v_{s} <= v_{s - 1}; w_{s} <= w_{s - 1}; m_{s} <= m_{s - 1}; end")
        a("  end")
    for y in range(h):
        s = y // r
        a(f"  assign wr[{y}] = v_{s} && m_{s}[{y}];")
        a(f"  assign addr_{y} = {{w_{s}[63:40], 8'd{y}}};")
        a(f"  assign data_{y} = w_{s}[31:0];")
    a("endmodule")
    return "\n".join(L) + "\n"


def system_ports(p: GlbParams) -> list[tuple[str, str, int]]:
    """The GLB's own ports in a system top, as (name, ``in``/``out``, width): the GLB
    inputs of :data:`SYSTEM_INPUTS` as ``glb_<name>``, ``glb_io_sel_<t>`` per tile (which of
    its columns' IO outputs its store DMA takes), and the outputs ``glb_host_rd_valid``,
    ``glb_host_rdata``, ``glb_ld_done_<t>``, ``glb_st_done_<t>``."""
    n, hw, ww = p.tiles, p.word_address_width, p.word_width
    widths = {"start": n, "cfg_go": n, "cfg_wr": 1, "cfg_addr": 16, "cfg_data": 32,
              "host_wr": 1, "host_waddr": hw, "host_wdata": ww, "host_rd": 1,
              "host_raddr": hw}
    ports = [(f"glb_{k}", "in", widths[k]) for k in SYSTEM_INPUTS]
    ports += [(f"glb_io_sel_{t}", "in", _bits(p.columns_per_tile)) for t in range(n)]
    ports += [("glb_host_rd_valid", "out", 1), ("glb_host_rdata", "out", ww)]
    for t in range(n):
        ports += [(f"glb_ld_done_{t}", "out", 1), (f"glb_st_done_{t}", "out", 1)]
    return ports


def system_verilog(p: GlbParams, array_top: str, array_ports: list[tuple[str, str, int]],
                   name: str) -> tuple[str, list[tuple[str, str, int]]]:
    """The system top ``name`` (Verilog text) and its ports (name, ``in``/``out``, width):
    the array ``array_top`` (ports ``array_ports``, with the per-column config paths of
    :class:`canal.rtl.ConfigColumns`) and the ``glb`` beside it (AHA paper §4.4, Fig. 11):

    * GLB tile ``t``'s config streams ``cfg_valid_<t>_<b>`` / ``cfg_word_<t>_<b>`` drive
      column ``t * columns_per_tile + b``'s ``cfg_valid_X<xx>`` / ``cfg_word_X<xx>``;
    * its load DMA's ``io_out_<t>`` drives every ``glb2io_<data_width>_X<xx>_Y<yy>`` of the
      columns it serves; its store DMA's ``io_in_<t>`` is the ``io2glb_<data_width>_...``
      of the column ``glb_io_sel_<t>`` selects among them (0: its first column with one);
    * every other array port stays a system port under its own name (the shared config bus,
      ``clk_en``, ``flush``, the columns' ``stall`` / ``flush``, 1-bit IO ports, and every
      array output, so a run can observe them), and the GLB's host and control ports are
      system ports named ``glb_<port>`` (:func:`system_ports`).

    Raises :class:`~cgra.errors.ConfigError` when the GLB serves fewer columns than the
    array has or its data width differs from the array's IO ports."""
    dw, n, cpt = p.data_width, p.tiles, p.columns_per_tile
    if p.word_width != 64:
        raise ConfigError(f"[glb] word_width {p.word_width}: a column config path takes "
                          f"64-bit bundles (addr << 32 | data); use word_width = 64")
    if cpt != p.banks:
        raise ConfigError(f"[glb] columns_per_tile {cpt}: bank b of a tile streams column "
                          f"t * columns_per_tile + b; use columns_per_tile = banks "
                          f"({p.banks})")
    array_ports = [q for q in array_ports if q[0] not in ("CLK", "RESET")]
    by_name = {q[0]: q for q in array_ports}
    cols = sorted({int(q[0][len("cfg_word_X"):], 16) for q in array_ports
                   if q[0].startswith("cfg_word_X")})
    if not cols:
        raise ConfigError(f"array {array_top} has no column config paths (cfg_word_X<xx>); "
                          f"generate it with the [glb] table")
    if max(cols) >= n * cpt:
        raise ConfigError(f"[glb] {n} tiles x {cpt} columns serve {n * cpt} columns; the "
                          f"array has {max(cols) + 1}: raise tiles to "
                          f"{-(-(max(cols) + 1) // cpt)}")
    loads = {q[0]: c for q in array_ports if q[1] == "in"
             and (c := io_column(q[0], "glb2io", dw)) is not None}
    stores = store_candidates(p, [q[0] for q in array_ports if q[1] == "out"])
    for pn in [*loads, *(s for v in stores.values() for s in v)]:
        if by_name[pn][2] != dw:
            raise ConfigError(f"[glb] data_width {dw}: array port {pn} is {by_name[pn][2]} "
                              f"bits")
    driven = set(loads) | {f"cfg_valid_X{x:02X}" for x in cols} | \
        {f"cfg_word_X{x:02X}" for x in cols}
    ports = [q for q in array_ports if q[0] not in driven] + system_ports(p)
    L = [f"// {name}: the array {array_top} and its global buffer (garnet.glb.rtl."
         f"system_verilog)", f"module {name}("]
    decl = ["  input  CLK", "  input  RESET"]
    decl += [f"  {'input ' if d == 'in' else 'output'} {'' if w == 1 else f'[{w - 1}:0] '}{pn}"
             for pn, d, w in ports]
    L.append(",\n".join(decl))
    L.append(");")
    for t in range(n):
        L += [f"  wire [{dw - 1}:0] io_out_{t};", f"  wire [{dw - 1}:0] io_in_{t};",
              f"  wire io_out_valid_{t};"]
        for b in range(p.banks):
            L += [f"  wire cfg_valid_{t}_{b};", f"  wire [{p.word_width - 1}:0] cfg_word_{t}_{b};"]
        sel = f"glb_io_sel_{t}"
        outs = stores.get(t, [])
        expr = "0"
        for k, pn in reversed(list(enumerate(outs))):
            expr = pn if expr == "0" and k == len(outs) - 1 else f"({sel} == {k}) ? {pn} : {expr}"
        L.append(f"  assign io_in_{t} = {expr};")
    glb_conns = [".clk(CLK)", ".rst(RESET)"]
    glb_conns += [f".{k}(glb_{k})" for k in SYSTEM_INPUTS]
    glb_conns += [".host_rd_valid(glb_host_rd_valid)", ".host_rdata(glb_host_rdata)"]
    for t in range(n):
        glb_conns += [f".io_in_{t}(io_in_{t})", f".io_out_{t}(io_out_{t})",
                      f".io_out_valid_{t}(io_out_valid_{t})", f".ld_done_{t}(glb_ld_done_{t})",
                      f".st_done_{t}(glb_st_done_{t})"]
        glb_conns += [f".cfg_valid_{t}_{b}(cfg_valid_{t}_{b}), .cfg_word_{t}_{b}(cfg_word_{t}_{b})"
                      for b in range(p.banks)]
    L.append("  glb glb (\n    " + ",\n    ".join(glb_conns) + ");")
    arr = [".CLK(CLK)", ".RESET(RESET)"]
    for pn, _d, _w in array_ports:
        if pn in loads:
            arr.append(f".{pn}(io_out_{loads[pn] // cpt})")
        elif pn.startswith(("cfg_valid_X", "cfg_word_X")):
            x = int(pn[-2:], 16)
            kind = "cfg_valid" if pn.startswith("cfg_valid") else "cfg_word"
            arr.append(f".{pn}({kind}_{x // cpt}_{x % cpt})")
        else:
            arr.append(f".{pn}({pn})")
    L.append(f"  {array_top} array (\n    " + ",\n    ".join(arr) + ");")
    L.append("endmodule")
    return "\n".join(L) + "\n", ports + [("CLK", "in", 1), ("RESET", "in", 1)]
