"""ballast with Debian's torch 1.13 and numpy 1.24 (/usr/bin/python3, the same CPython ABI as
.venv): torch.from_dlpack and numpy.from_dlpack without a copy, and ballast.safetensors.torch
against the real safetensors package (save byte-identical, loads equal, save_model with shared
tensors, slices with steps). Debian's interpreter sees only its own packages plus links to
the ballast package and to .venv's safetensors (conftest.package_path)."""
import pytest

from conftest import import_ballast, package_path, run_debian_python

ballast = import_ballast()
import safetensors  # noqa: E402  the oracle, linked for Debian's interpreter


@pytest.fixture(scope="module")
def debian():
    folder = package_path(ballast, safetensors)

    def run(program, *args):
        return run_debian_python(f"import sys; sys.path.insert(0, {str(folder)!r})\n" + program,
                                 *args)
    return run


def test_torch_and_numpy_take_tensors_without_a_copy(debian, tmp_path):
    out = debian("""
import sys, numpy, torch, ballast
path = sys.argv[1]
torch.save({"w": torch.arange(12, dtype=torch.float32).reshape(3, 4),
            "h": torch.ones(5, dtype=torch.bfloat16)}, path)
loader = ballast.Loader(read_mode="read")
w = loader.load_tensor("w", path)
t = torch.from_dlpack(w)
a = numpy.from_dlpack(w)
assert t.data_ptr() == w.data_ptr == a.ctypes.data, "a copy was made"
assert t.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
h = loader.load_tensor("h", path, framework="pt")
assert h.dtype == torch.bfloat16 and h.sum().item() == 5
del loader, w
t.add_(1)  # ballast's buffer, alive through torch's reference
assert a[0, 0] == 1
try:
    loader2 = ballast.Loader()
    loader2.load_tensor("h", path, framework="np")
except ballast.UnsupportedError as e:
    assert "bf16" in str(e)
else:
    raise AssertionError("bf16 reached numpy")
state = ballast.Loader().load_checkpoint(path, framework="pt")
print(sorted(state), numpy.__version__, torch.__version__)
""", tmp_path / "m.pt")
    assert "['h', 'w'] 1." in out


def test_safetensors_torch_dropin_matches_the_package(debian, tmp_path):
    debian("""
import sys, pathlib, torch
import safetensors, safetensors.torch as theirs
import ballast.safetensors as ours_top, ballast.safetensors.torch as ours
folder = pathlib.Path(sys.argv[1])
torch.manual_seed(0)
tensors = {"f32": torch.randn(3, 4), "bf16": torch.randn(2, 5).to(torch.bfloat16),
           "f16": torch.randn(7).half(), "i64": torch.arange(6), "u8": torch.arange(4).byte(),
           "bool": torch.tensor([True, False]), "scalar": torch.tensor(3.5),
           "empty": torch.zeros(0, 3), "i8": torch.arange(-3, 3).to(torch.int8)}
for metadata in (None, {"format": "pt"}):
    assert ours.save(tensors, metadata) == theirs.save(tensors, metadata)
    ours.save_file(tensors, folder / "o.st", metadata)
    theirs.save_file(tensors, folder / "t.st", metadata)
    assert (folder / "o.st").read_bytes() == (folder / "t.st").read_bytes()

def same(a, b):
    assert list(a) == list(b), (list(a), list(b))
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and torch.equal(a[k], b[k]), k

same(ours.load_file(folder / "t.st"), theirs.load_file(folder / "t.st"))
data = (folder / "t.st").read_bytes()
same(dict(sorted(ours.load(data).items())), dict(sorted(theirs.load(data).items())))
loaded = ours.load_file(folder / "t.st")
loaded["f32"].mul_(2)  # writable, as the package's

with ours_top.safe_open(folder / "t.st", "pt") as f, safetensors.safe_open(folder / "t.st", "pt") as g:
    assert f.keys() == g.keys() and f.metadata() == g.metadata()
    for index in [slice(None), slice(1, None, 2), (slice(None), slice(0, 5, 3)), 1, (-1, 2)]:
        x, y = f.get_slice("bf16")[index], g.get_slice("bf16")[index]
        assert x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y), index

# shared tensors: save refuses them, save_model keeps one name and records the other
shared = torch.randn(4, 4)
for module in (ours, theirs):
    try:
        module.save_file({"a": shared, "b": shared}, folder / "x.st")
    except RuntimeError:
        pass
    else:
        raise AssertionError("shared tensors saved")
    try:
        module.save_file({"a": shared[:, :2]}, folder / "x.st")
    except ValueError:
        pass
    else:
        raise AssertionError("non-contiguous tensor saved")

class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight

model = Tied()
ours.save_model(model, folder / "om.st")
theirs.save_model(model, folder / "tm.st")
assert (folder / "om.st").read_bytes() == (folder / "tm.st").read_bytes()
for module in (ours, theirs):
    fresh = Tied()
    missing, unexpected = module.load_model(fresh, folder / "om.st")
    assert not missing and not unexpected
    assert torch.equal(fresh.head.weight, model.head.weight)
assert ours._find_shared_tensors({"a": shared, "b": shared, "c": torch.ones(1)}) != []
print("ok")
""", tmp_path)
