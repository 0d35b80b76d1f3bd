"""Unsupported spec code is rejected with a SpecError naming file, line and construct."""
from __future__ import annotations

import importlib.util
import itertools
import textwrap

import pytest

from cgra.errors import SpecError
from peak.normalize import normal_form

HEADER = '''\
from hwtypes import Bit, BitVector
from hwtypes.adt import Enum, Product
from peak.spec import Peak, Register, name_outputs
Data = BitVector[8]
class Op(Enum):
    A = 0
    B = 1
class Inst(Product):
    op = Op
    flag = Bit
class P(Peak):
    def __init__(self):
        self.r = Register(Data, 0)
    @name_outputs(out=Data)
    def __call__(self, inst: Inst, a: Data, b: Data):
'''
BODY_LINE = HEADER.count("\n") + 1          # line number of the first body line

_counter = itertools.count()


def load(tmp_path, body: str):
    src = HEADER + textwrap.indent(textwrap.dedent(body), " " * 8)
    path = tmp_path / f"spec_{next(_counter)}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.P, str(path)


CASES = [
    ("missing return", """\
        if inst.flag:
            return a
        """, 0, "does not return"),
    ("while", """\
        x = a
        while x != 0:
            x = x - 1
        return x
        """, 1, "while loop"),
    ("for over symbolic", """\
        x = a
        for i in range(a):
            x = x + 1
        return x
        """, 1, "for loop over a symbolic value"),
    ("try", """\
        try:
            x = a + b
        except Exception:
            x = a
        return x
        """, 0, "try statement"),
    ("self assignment", """\
        x = a + b
        self.acc = x
        return x
        """, 1, "assignment to self.acc outside __init__"),
    ("unknown function", """\
        x = frobnicate(a, b)
        return x
        """, 0, "call to unknown function 'frobnicate'"),
    ("builtin function", """\
        x = a + b
        print(x)
        return x
        """, 1, "call to unknown function 'print'"),
    ("membership test", """\
        if inst.op in (Op.A, Op.B):
            return a
        return b
        """, 0, "unsupported comparison `in`"),
    ("register twice on a path", """\
        x = self.r(a)
        y = self.r(b)
        return x + y
        """, 1, "called twice on one path"),
]


@pytest.mark.parametrize("name,body,offset,message", CASES, ids=[c[0] for c in CASES])
def test_spec_error_names_file_and_line(tmp_path, name, body, offset, message):
    P, path = load(tmp_path, body)
    with pytest.raises(SpecError) as info:
        normal_form(P)
    e = info.value
    assert e.file == path
    assert e.line == BODY_LINE + offset
    assert message in str(e)
    assert str(e).startswith(f"{path}:{BODY_LINE + offset}: ")


def test_accepted_constructs_normalise(tmp_path):
    P, _ = load(tmp_path, """\
        x = a
        for i in range(3):
            x = x + 1
        if inst.op == Op.A and not inst.flag:
            return x
        elif inst.op == Op.B:
            y = self.r(b)
            return y if inst.flag else x
        y = a - b
        return y
        """)
    nf = normal_form(P)
    assert "while" not in nf.source and "if " not in nf.source
    from hwtypes import Bit
    from hwtypes import BitVector as BV
    pe = P()
    Inst = nf.isa
    Op = type(Inst.field_dict["op"].A)
    assert int(pe(Inst(Op.A, Bit(0)), 5, 2)) == 8
    assert int(pe(Inst(Op.A, Bit(1)), 5, 2)) == 3
    assert int(pe(Inst(Op.B, Bit(0)), 5, 9)) == 8        # register not written before
    assert int(pe(Inst(Op.B, Bit(1)), 5, 2)) == 9        # register latched 9 last call
    assert int(pe(Inst(Op.B, Bit(1)), 5, BV[8](4))) == 2


def test_non_bit_condition_is_reported_at_its_line(tmp_path):
    P, path = load(tmp_path, """\
        if a:
            return a
        return b
        """)
    with pytest.raises(SpecError) as info:          # found by the type check
        normal_form(P)
    assert info.value.file == path and info.value.line == BODY_LINE
    assert "is not a Bit" in str(info.value)
    with pytest.raises(SpecError, match="is not a Bit"):      # and by the model
        P()(0, 1, 2)
