"""Sub-PEs and register files (Python and SMT models), pe.json collateral, the core wrapper."""
from __future__ import annotations

import json

import hwtypes as ht
from cgra.hdl import m
import pytest
from hwtypes import Bit, BitVector
from hwtypes.adt import Enum, Product

from cgra.errors import CollateralError, ConfigError
from peak.assembler import assembler
from peak.collateral import (PEInfo, assemble_fields, disassemble_fields, load_pe_json,
                             pe_json)
from peak.examples.cgra_pe import PE
from peak.examples.toy_pe import Inst as ToyInst
from peak.examples.toy_pe import Opcode, ToyPE
from peak.model import evaluate
from peak.normalize import normal_form
from peak.rtl import pe_core_spec
from peak.smt import evaluate_smt
from peak.spec import Peak, Register, RegisterFile, name_outputs

Word = BitVector[8]
Addr = BitVector[2]


class RfOp(Enum):
    Read = 0
    Write = 1


class RfInst(Product):
    op = RfOp
    addr = Addr


class RfPE(Peak):
    def __init__(self):
        self.rf = RegisterFile(4, Word, 0)
        self.count = Register(Word, 0)

    @name_outputs(out=Word, n=Word)
    def __call__(self, inst: RfInst, data: Word):
        n = self.count(data)
        if inst.op == RfOp.Write:
            self.rf.write(inst.addr, data)
            return data, n
        return self.rf.read(inst.addr), n


class Inner(Peak):
    def __init__(self):
        self.r = Register(Word, 0)

    @name_outputs(prev=Word)
    def __call__(self, inst: Bit, x: Word):
        return self.r(x)


class Outer(Peak):
    def __init__(self):
        self.inner = Inner()

    @name_outputs(y=Word)
    def __call__(self, inst: Bit, x: Word):
        if inst:
            y = self.inner(inst, x)
        else:
            y = x
        return y


def test_register_file_python_and_smt():
    pe = RfPE()
    w = lambda a: RfInst(RfOp.Write, Addr(a))       # noqa: E731
    r = lambda a: RfInst(RfOp.Read, Addr(a))        # noqa: E731
    pe(w(1), 11)
    pe(w(2), 22)
    assert int(pe(r(1), 0)[0]) == 11
    assert int(pe(r(2), 0)[0]) == 22
    assert int(pe(r(3), 0)[0]) == 0
    assert [leaf.name for leaf in normal_form(RfPE).state] == \
        ["rf[0]", "rf[1]", "rf[2]", "rf[3]", "count"]
    state = (1, 2, 3, 4, 5)
    for inst in (w(0), w(3), r(2)):
        py = evaluate(RfPE, inst, (99,), state)
        outs, nxt = evaluate_smt(RfPE, {"op": inst.op._value_, "addr": int(inst.addr)},
                                 (99,), state)
        assert tuple(int(x.value.constant_value()) for x in outs) == tuple(map(int, py[0]))
        assert tuple(int(x.value.constant_value()) for x in nxt) == tuple(map(int, py[1]))


def test_sub_pe_holds_state_when_not_called():
    o = Outer()
    assert [leaf.name for leaf in normal_form(Outer).state] == ["inner.r"]
    assert int(o(Bit(1), 5)) == 0
    assert int(o(Bit(0), 7)) == 7          # inner not called: holds 5
    assert int(o(Bit(1), 9)) == 5
    assert o.state() == (BitVector[8](9),)
    x = ht.SMTBitVector[8](name="outer_x")
    outs, nxt = evaluate_smt(Outer, {"": 0}, (x,), (3,))          # inst = 0: inner idle
    assert int(nxt[0].value.simplify().constant_value()) == 3
    assert outs[0].value is x.value
    outs, nxt = evaluate_smt(Outer, {"": 1}, (x,), (3,))          # inst = 1: inner runs
    assert int(outs[0].value.simplify().constant_value()) == 3
    assert nxt[0].value is x.value


def test_pe_json_and_field_assembly(tmp_path):
    doc = pe_json(PE)
    assert doc["instruction_width"] == 62 and doc["config"] == {"field": "inst",
                                                                "registers": 2}
    assert [p["name"] for p in doc["outputs"]] == ["res", "res_p"]
    path = tmp_path / "pe.json"
    path.write_text(json.dumps(doc))
    back = load_pe_json(str(path))
    flat = assemble_fields(back, {"alu": "Add", "data1_mode": "CONST", "data1_const": 7})
    assert int(PE()(flat, 35, 0, 0, 0, 0)[0]) == 42
    assert disassemble_fields(back, flat)["data1_const"] == 7
    with pytest.raises(ConfigError, match="no instruction field 'opcode'"):
        assemble_fields(back, {"opcode": 1})
    with pytest.raises(ConfigError, match="has no tag 'Div'"):
        assemble_fields(back, {"alu": "Div"})
    path.write_text(json.dumps({**doc, "schema": "old"}))
    with pytest.raises(CollateralError, match="schema"):
        load_pe_json(str(path))
    toy = PEInfo.of_spec(ToyPE)
    assert assemble_fields(toy, {"op": "And", "reg_out": 1}) == 0b1001
    assert back == PEInfo.of_spec(PE) and back.data_width == 16
    assert back.field("alu").tags["Add"] == assemble_fields(back, {"alu": "Add"})
    with pytest.raises(CollateralError, match=r"pe.json: missing key 'fields'"):
        PEInfo.from_json({k: v for k, v in doc.items() if k != "fields"}, "pe.json")
    assert assembler(ToyInst).decode(0b1001) == ToyInst(Opcode.And, Bit(0), Bit(0), Bit(1))


def test_core_wrapper_verilog(tmp_path):
    cs = pe_core_spec(PE)
    assert cs.tag == "p" and cs.config_fields[0].width == 62
    circ = cs.build()
    assert cs.build() is circ
    ports = set(circ.interface.ports)
    assert {"CLK", "RESET", "clk_en", "flush", "config_inst", "data0", "res_p"} <= ports
    m.compile(str(tmp_path / "core"), circ, output="mlir-verilog")
    text = (tmp_path / "core.v").read_text()
    assert f"module {cs.name}(" in text and "PE_" in text
