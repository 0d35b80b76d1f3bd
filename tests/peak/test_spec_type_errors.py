"""Badly typed PE specs are refused at normalisation with one SpecError naming the spec file
and line, the same from the Python API, `cgra rules` and the garnet configuration (`cgra
rtl`): exit status 2, one `error:` line on stderr, no output directory left behind."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cgra.errors import SpecError

ROOT = Path(__file__).resolve().parents[2]
CGRA = str(ROOT / ".venv" / "bin" / "cgra")

HEADER = '''\
from hwtypes import Bit, BitVector
from hwtypes.adt import Enum, Product
from peak import Peak, Register, name_outputs


class Op(Enum):
    A = 0
    B = 1


class Inst(Product):
    op = Op
    flag = Bit


'''

# name -> (spec body; the offending line carries "# <-"), words the message must contain
CASES = {
    "unsized_bitvector": ('''\
Data = BitVector


class PE(Peak):
    @name_outputs(out=BitVector[16])
    def __call__(self, inst: Inst, a: Data, b: BitVector[16]):  # <-
        return b
''', ["input 'a' has type Data = BitVector, a bit vector without a width",
      "e.g. BitVector[16]"]),
    "int_annotation": ('''\
Data = BitVector[16]


class PE(Peak):
    @name_outputs(out=Data)
    def __call__(self, inst: Inst, a: int, b: Data):  # <-
        return b + a
''', ["input 'a' is annotated int, which has no bit width", "BitVector[16] or Bit"]),
    "register_fed_wider_value": ('''\
Data = BitVector[16]


class PE(Peak):
    def __init__(self):
        self.r = Register(Bit, 0)

    @name_outputs(out=Data)
    def __call__(self, inst: Inst, a: Data, b: Data):
        x = a + b
        y = self.r(x)  # <-
        return x
''', ["register self.r is declared Bit", "BitVector[16]", "feed it a Bit"]),
    "branches_of_different_types": ('''\
Data = BitVector[16]


class PE(Peak):
    @name_outputs(out=Data)
    def __call__(self, inst: Inst, a: Data, b: Data):
        if inst.op == Op.A:
            return a + b
        return a == b  # <-
''', ["output 'out' is declared BitVector[16]", "return gives a Bit"]),
    "int_constant_wider_than_operand": ('''\
Data = BitVector[16]


class PE(Peak):
    @name_outputs(out=Data)
    def __call__(self, inst: Inst, a: Data, b: Data):
        return a + (1 << 40)  # <-
''', ["int constant 1 << 40 (= 1099511627776) does not fit the 16-bit operand of `+`",
      "truncate"]),
    "floor_division_has_no_hardware": ('''\
Data = BitVector[16]


class PE(Peak):
    @name_outputs(out=Data)
    def __call__(self, inst: Inst, a: Data, b: Data):
        return a // b  # <-
''', ["`//` on hardware values has no RTL lowering", "x >> k divides by 2**k"]),
    "modulo_has_no_hardware": ('''\
Data = BitVector[16]


class PE(Peak):
    @name_outputs(out=Data)
    def __call__(self, inst: Inst, a: Data, b: Data):
        x = a + b
        return x % 8  # <-
''', ["`%` on hardware values has no RTL lowering", "x & (2**k - 1)"]),
    "enum_field_compared_with_int": ('''\
Data = BitVector[16]


class PE(Peak):
    @name_outputs(out=Data)
    def __call__(self, inst: Inst, a: Data, b: Data):
        if inst.op == 1:  # <-
            return a
        return b
''', ["cannot compare enum field 'op' of type Op with 1", "Op.A"]),
    "unknown_instruction_field": ('''\
Data = BitVector[16]


class PE(Peak):
    @name_outputs(out=Data)
    def __call__(self, inst: Inst, a: Data, b: Data):
        if inst.opp == Op.A:  # <-
            return a
        return b
''', ["has no field 'opp'", "'op'", "'flag'"]),
}


def write_case(tmp_path: Path, name: str) -> tuple[Path, int]:
    body, _ = CASES[name]
    src = HEADER + body
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    line = next(i for i, t in enumerate(src.splitlines(), 1) if t.endswith("# <-"))
    return path, line


@pytest.mark.parametrize("name", CASES)
def test_normal_form_names_file_and_line(tmp_path, name):
    from peak import load_spec, normal_form
    path, line = write_case(tmp_path, name)
    spec = load_spec(f"{path}:PE")
    with pytest.raises(SpecError) as info:
        normal_form(spec)
    e = info.value
    assert (e.file, e.line) == (str(path), line)
    msg = str(e)
    assert msg.startswith(f"{path}:{line}: PE.")
    assert "\n" not in msg
    for w in CASES[name][1]:
        assert w in msg, msg


@pytest.mark.parametrize("name", ["register_fed_wider_value", "int_constant_wider_than_operand"])
def test_rules_entry_and_garnet_config_give_the_same_error(tmp_path, name):
    from garnet.params import from_dict
    from peak import load_spec, normal_form
    from peak.rules import build_table
    path, line = write_case(tmp_path, name)
    spec = load_spec(f"{path}:PE")
    with pytest.raises(SpecError) as api:
        normal_form(spec)
    out = tmp_path / "rules"
    with pytest.raises(SpecError) as rules:
        build_table(spec, out, only=["coreir.add"])
    assert not out.exists()
    with pytest.raises(SpecError) as garnet:
        from_dict({"width": 4, "height": 3, "pe": f"{path}:PE"}, "cfg.toml")
    assert str(api.value) == str(rules.value) == str(garnet.value)
    assert str(api.value).startswith(f"{path}:{line}: ")


def _one_error_line(r: subprocess.CompletedProcess, path: Path, line: int) -> str:
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error: ")
    assert f"{path.name}:{line}:" in lines[0]
    return lines[0]


@pytest.mark.parametrize("name", CASES)
def test_cgra_rules_cli(tmp_path, name):
    path, line = write_case(tmp_path, name)
    out = tmp_path / "out"
    r = subprocess.run([CGRA, "rules", "--pe", f"{path}:PE", "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    msg = _one_error_line(r, path, line)
    for w in CASES[name][1]:
        assert w in msg
    assert not out.exists()


def test_cgra_rtl_cli_reports_the_same_line(tmp_path):
    path, line = write_case(tmp_path, "branches_of_different_types")
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(f'name = "tiny"\nwidth = 4\nheight = 3\npe = "{path}:PE"\n')
    out = tmp_path / "rtl"
    r = subprocess.run([CGRA, "rtl", "--config", str(cfg), "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    msg = _one_error_line(r, path, line)
    assert "output 'out' is declared BitVector[16] but this return gives a Bit" in msg
    assert not out.exists()


def test_register_declared_with_unsized_type_names_the_init_line(tmp_path):
    from peak import load_spec, normal_form
    path = tmp_path / "unsized_reg.py"
    src = HEADER + '''\
class PE(Peak):
    def __init__(self):
        self.r = Register(BitVector, 0)  # <-

    @name_outputs(out=BitVector[8])
    def __call__(self, inst: Inst, a: BitVector[8]):
        return a
'''
    path.write_text(src)
    line = next(i for i, t in enumerate(src.splitlines(), 1) if t.endswith("# <-"))
    with pytest.raises(SpecError) as info:
        normal_form(load_spec(f"{path}:PE"))
    assert (info.value.file, info.value.line) == (str(path), line)
    assert "sized BitVector" in str(info.value)


def test_other_type_errors_get_their_line(tmp_path):
    """Operands of different widths, a constructor widening a Bit, an int too wide for a
    register, a tuple of the wrong arity: each at its line."""
    from peak import load_spec, normal_form
    bodies = {
        "widths": ("x = a + b.zext(8)  # <-\nreturn x", "different widths"),
        "ctor": ("x = BitVector[8](inst.flag)  # <-\nreturn x", "changes the width"),
        "reg_int": ("y = self.r(300)  # <-\nreturn a", "int constant 300"),
        "arity": ("return a, b  # <-", "gives 2 values but name_outputs declares 1"),
        "ok_ints": ("x = a + 255\ny = self.r(-1)\nreturn x if inst.flag else 3", None),
    }
    for key, (body, words) in bodies.items():
        src = HEADER + "class PE(Peak):\n    def __init__(self):\n" \
            "        self.r = Register(BitVector[8], 0)\n\n" \
            "    @name_outputs(out=BitVector[8])\n" \
            "    def __call__(self, inst: Inst, a: BitVector[8], b: BitVector[8]):\n" + \
            "".join(f"        {t}\n" for t in body.splitlines())
        path = tmp_path / f"{key}.py"
        path.write_text(src)
        spec = load_spec(f"{path}:PE")
        if words is None:                   # ints that fit are accepted
            normal_form(spec)
            mod = sys.modules[spec.__module__]
            assert int(spec()(mod.Inst(mod.Op.A, 1), 1, 2)) == 0       # 1 + 255 mod 2**8
            assert int(spec()(mod.Inst(mod.Op.A, 0), 1, 2)) == 3
            continue
        line = next(i for i, t in enumerate(src.splitlines(), 1) if t.endswith("# <-"))
        with pytest.raises(SpecError) as info:
            normal_form(spec)
        assert info.value.line == line, (key, str(info.value))
        assert words in str(info.value), (key, str(info.value))


@pytest.mark.parametrize("ref", ["peak.examples.cgra_pe:PE", "peak.examples.toy_pe:ToyPE",
                                 "peak.examples.toy_pe:make_toy_pe(8)",
                                 f"{ROOT / 'tests' / 'mapper' / 'mapper_pe_nomul.py'}:PE"])
def test_existing_pes_type_check(ref):
    from peak import load_spec, normal_form
    nf = normal_form(load_spec(ref))
    assert nf.outputs and len(nf.spec_lines) == nf.source.count("\n")
