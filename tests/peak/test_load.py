"""`peak.load_spec`: the one resolver of PE spec references (CLI, garnet `pe`, mapper)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cgra.errors import ConfigError, SpecError
from peak import load_spec, spec_hash, spec_ref
from peak.examples.cgra_pe import PE
from peak.examples.toy_pe import ToyPE

SPEC = '''\
from hwtypes import Bit, BitVector
from hwtypes.adt import Enum, Product
from peak import Peak, name_outputs


class Op(Enum):
    A = 0
    B = 1


class Inst(Product):
    op = Op
    flag = Bit


class PE(Peak):
    @name_outputs(out=BitVector[8])
    def __call__(self, inst: Inst, a: BitVector[8], b: BitVector[8]):
        if inst.op == Op.A:
            return a + b
        return a - {k}
'''


def write(path, k="b"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SPEC.format(k=k))
    return path


def test_module_factory_and_dotted_forms():
    assert load_spec("peak.examples.cgra_pe:PE") is PE
    assert load_spec("peak.examples.toy_pe:ToyPE") is ToyPE
    toy8 = load_spec("peak.examples.toy_pe:make_toy_pe(8)")
    assert toy8.width == 8 and toy8 is load_spec("peak.examples.toy_pe:make_toy_pe( 8 )")
    # keyword arguments: the dataflow PE with its divider, the same class by either spelling
    df = load_spec("peak.examples.dataflow_pe:make_dataflow_pe(4, 2, 2, div=True)")
    assert df.div and df.width == 4 and df.__name__ == "DataflowPE4_2x2_div"
    assert df is load_spec("peak.examples.dataflow_pe:make_dataflow_pe(4, 2, 2, 0, True)")
    assert load_spec(df.peak_ref) is df


def test_file_relative_to_cwd_and_to_base(tmp_path, monkeypatch):
    write(tmp_path / "cfg" / "my_pe.py")
    monkeypatch.chdir(tmp_path / "cfg")
    from_cwd = load_spec("my_pe.py:PE")
    monkeypatch.chdir(tmp_path)
    from_base = load_spec("my_pe.py:PE", base=tmp_path / "cfg")
    assert from_cwd is from_base                   # same file, same content: one module
    assert from_cwd.__module__.startswith("_peak_spec_my_pe_")
    assert sys.modules[from_cwd.__module__].__file__ == str(tmp_path / "cfg" / "my_pe.py")
    mod = sys.modules[from_cwd.__module__]
    assert int(from_cwd()(mod.Inst(mod.Op.B, 0), 7, 3)) == 4


def test_same_stem_in_two_directories_does_not_collide(tmp_path):
    a = load_spec(f"{write(tmp_path / 'a' / 'pe.py')}:PE")
    b = load_spec(f"{write(tmp_path / 'b' / 'pe.py', k='1')}:PE")
    assert a is not b and a.__module__ != b.__module__
    assert a.__module__ in sys.modules and b.__module__ in sys.modules
    assert spec_hash(a) != spec_hash(b)            # each hash reads its own file
    ma, mb = sys.modules[a.__module__], sys.modules[b.__module__]
    assert int(a()(ma.Inst(ma.Op.B, 0), 7, 3)) == 4
    assert int(b()(mb.Inst(mb.Op.B, 0), 7, 3)) == 6


def test_a_byte_identical_copy_has_the_same_spec_hash(tmp_path):
    """The rule cache is keyed by spec hash: copying a spec file (or the stock PE) to
    another folder must not force a resynthesis; a factory argument must change it."""
    from peak.examples import cgra_pe
    a = load_spec(f"{write(tmp_path / 'a' / 'pe.py')}:PE")
    b = load_spec(f"{write(tmp_path / 'b' / 'pe.py')}:PE")
    assert a is not b and spec_hash(a) == spec_hash(b)
    copy = tmp_path / "mine" / "cgra_pe.py"
    copy.parent.mkdir()
    copy.write_text(Path(cgra_pe.__file__).read_text())
    assert spec_hash(load_spec(f"{copy}:PE")) == spec_hash(cgra_pe.PE)
    assert spec_hash(cgra_pe.make_pe(32)) != spec_hash(cgra_pe.PE)


def test_an_edited_file_is_loaded_again(tmp_path):
    path = write(tmp_path / "pe.py")
    first = load_spec(f"{path}:PE")
    write(path, k="2")
    second = load_spec(f"{path}:PE")
    assert first is not second and spec_hash(first) != spec_hash(second)


def test_spec_ref_resolves_back(tmp_path):
    path = write(tmp_path / "pe.py")
    spec = load_spec(f"{path}:PE")
    assert spec_ref(spec) == f"{path}:PE"
    assert load_spec(spec_ref(spec)) is spec
    assert spec_ref(PE) == "peak.examples.cgra_pe:PE"


@pytest.mark.parametrize("ref,words", [
    ("peak.examples.cgra_pe", ["not of the form module:Class", "peak.examples.cgra_pe:PE"]),
    ("a:b:c", ["not of the form"]),
    ("peak.examples.cgra_pe:Nope", ["module peak.examples.cgra_pe has no attribute 'Nope'",
                                    "Peak spec classes there: ['LUT3', 'PE']"]),
    ("no_such_pkg.pe:PE", ["module no_such_pkg.pe does not import", "importable"]),
    ("peak.examples.cgra_pe:ALU", ["ALU is not a PEak spec class", "cgra_pe.py",
                                   "subclass of peak.Peak"]),
    ("peak.examples.toy_pe:make_toy_pe", ["not a PEak spec class", "a factory",
                                          "make_toy_pe(...)"]),
    ("peak.examples.toy_pe:make_toy_pe(x)", ["factory arguments 'x' are not literals"]),
    ("peak.examples.toy_pe:make_toy_pe(**dict(w=8))", ["factory arguments", "not literals"]),
    ("peak.examples.toy_pe:make_toy_pe(width=x)", ["factory arguments", "not literals"]),
    ("peak.examples.dataflow_pe:make_dataflow_pe(4, divider=True)",
     ["make_dataflow_pe(4, divider=True) failed", "TypeError", "divider"]),
    ("peak.examples.toy_pe:make_toy_pe(8", ["malformed factory call"]),
    ("peak.examples.toy_pe:make_toy_pe('a')", ["make_toy_pe('a') failed", "TypeError"]),
    ("missing_pe.py:PE", ["file", "missing_pe.py does not exist", "existing Python file"]),
])
def test_errors_are_one_line_spec_errors(ref, words):
    with pytest.raises(SpecError) as info:
        load_spec(ref)
    msg = str(info.value)
    assert msg.startswith(f"PE spec {ref!r}: ") and "\n" not in msg
    for w in words:
        assert w in msg, msg


def test_a_file_that_does_not_import_names_its_line(tmp_path):
    bad = tmp_path / "broken_pe.py"
    bad.write_text("x = 1\nimport this_module_does_not_exist_either\n")
    with pytest.raises(SpecError) as info:
        load_spec(f"{bad}:PE")
    assert str(info.value).startswith(f"{bad}:2: ModuleNotFoundError: No module named "
                                      f"'this_module_does_not_exist_either' (PE spec ")
    assert (info.value.file, info.value.line) == (str(bad), 2)
    syntax = tmp_path / "syntax_pe.py"
    syntax.write_text("x = 1\ny = (\n")
    with pytest.raises(SpecError) as info:
        load_spec(f"{syntax}:PE")
    msg = str(info.value)
    assert msg.startswith(f"{syntax}:2: SyntaxError: ") and "\n" not in msg, msg
    assert "the file does not import" in msg and f"`python {syntax}` runs" in msg
    assert not [m for m in sys.modules if m.startswith("_peak_spec_broken_pe_")]


def test_where_prefixes_the_message_and_garnet_keeps_config_error(tmp_path):
    from garnet.cores import load_pe_spec
    where = f"{tmp_path / 'x.toml'}: field 'pe'"
    with pytest.raises(SpecError) as info:
        load_spec("nope.py:PE", where=where, base=tmp_path)
    assert str(info.value).startswith(f"{where} = 'nope.py:PE': file {tmp_path / 'nope.py'}")
    assert f"(absolute, or relative to {tmp_path})" in str(info.value)
    with pytest.raises(ConfigError) as cfg:
        load_pe_spec("peak.examples.cgra_pe:Nope", where)
    assert str(cfg.value).startswith(f"{where} = 'peak.examples.cgra_pe:Nope': ")
    write(tmp_path / "ok_pe.py")
    assert load_pe_spec("ok_pe.py:PE", where, str(tmp_path)).__name__ == "PE"
