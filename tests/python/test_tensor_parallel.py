"""ballast.Shard from Python, with Debian's torch (/usr/bin/python3, as test_python_torch.py):
every rank's shard of row, column, fused (qkv with GQA parts), stacked-expert and uneven
tensors equals torch.chunk of the full tensor, composes with Cast, and bad steps raise."""
from conftest import import_ballast, package_path, run_debian_python

ballast = import_ballast()

PROGRAM = """
import sys, torch, ballast
path = sys.argv[1]
g = torch.Generator().manual_seed(29)
tensors = {"row": torch.randn(10, 6, generator=g), "col": torch.randn(6, 10, generator=g),
           "qkv": torch.randn(16, 6, generator=g).to(torch.bfloat16),
           "experts": torch.randn(5, 4, 3, generator=g)}
torch.save(tensors, path)

def torch_shard(t, rank, world, dim, parts):
    pieces = []
    for p in (t.split(parts, dim) if parts else [t]):
        chunks = torch.chunk(p, world, dim)
        pieces.append(chunks[rank] if rank < len(chunks) else p.narrow(dim, p.shape[dim], 0))
    return torch.cat(pieces, dim)

loader = ballast.Loader(num_threads=2)
checked = 0
for name, dim, parts in [("row", 0, None), ("col", 1, None), ("qkv", 0, [8, 4, 4]),
                         ("experts", 0, None), ("experts", -1, None)]:
    for world in (1, 2, 3, 4):
        shards = []
        for rank in range(world):
            got = loader.load_tensor(name, path, transforms=[ballast.Shard(rank, world, dim, parts)],
                                     framework="torch")
            expected = torch_shard(tensors[name], rank, world, dim, parts)
            assert got.shape == expected.shape and got.dtype == expected.dtype, (name, rank, world)
            assert torch.equal(got, expected), (name, dim, rank, world)
            shards.append(got)
            checked += 1
        if parts is None:
            assert torch.equal(torch.cat(shards, dim), tensors[name])
assert ballast.Shard(1, 4, 0, [8, 4, 4])._text() == "shard:1/4:0:8+4+4"
got = loader.load_tensor("qkv", path, transforms=[ballast.Shard(1, 2, 0, (8, 4, 4)),
                                                  ballast.Cast("f32")], framework="torch")
assert torch.equal(got, torch_shard(tensors["qkv"], 1, 2, 0, [8, 4, 4]).float())
for step, error in [(ballast.Shard(0, 2, 0, [8, 4]), ballast.ShapeMismatchError),
                    (ballast.Shard(2, 2), ballast.InvalidArgumentError)]:
    try:
        loader.load_tensor("qkv", path, transforms=[step])
        raise AssertionError(f"{step} loaded")
    except error:
        pass
print(checked)
"""


def test_shards_equal_torch_chunk(tmp_path):
    folder = package_path(ballast)
    out = run_debian_python(f"import sys; sys.path.insert(0, {str(folder)!r})\n" + PROGRAM,
                            tmp_path / "model.bin")
    assert out.strip() == str(5 * (1 + 2 + 3 + 4))
