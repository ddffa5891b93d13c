"""ballast.Shard from Python: every rank's shard of row, column, fused (qkv with GQA parts)
and uneven tensors equals torch.chunk of the full tensor, and the ranks' shards put back
together are the tensor."""
import pytest
import torch

from conftest import import_ballast

ballast = import_ballast()
import safetensors.torch as reference  # noqa: E402  the writer of the fixtures


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("tp") / "model.safetensors"
    g = torch.Generator().manual_seed(29)
    tensors = {"row": torch.randn(10, 6, generator=g), "col": torch.randn(6, 10, generator=g),
               "qkv": torch.randn(16, 6, generator=g).to(torch.bfloat16),
               "experts": torch.randn(5, 4, 3, generator=g)}
    reference.save_file(tensors, str(path))
    return path, tensors


def torch_shard(t, rank, world, dim, parts):
    pieces = []
    for p in (t.split(parts, dim) if parts else [t]):
        chunks = torch.chunk(p, world, dim)
        pieces.append(chunks[rank] if rank < len(chunks) else p.narrow(dim, p.shape[dim], 0))
    return torch.cat(pieces, dim)


@pytest.mark.parametrize("name,dim,parts", [("row", 0, None), ("col", 1, None),
                                            ("qkv", 0, [8, 4, 4]), ("experts", 0, None),
                                            ("experts", -1, None)])
@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_shards_equal_torch_chunk(checkpoint, name, dim, parts, world):
    path, tensors = checkpoint
    loader = ballast.Loader(num_threads=2)
    shards = []
    for rank in range(world):
        step = ballast.Shard(rank, world, dim, parts)
        got = loader.load_tensor(name, path, transforms=[step], framework="torch")
        expected = torch_shard(tensors[name], rank, world, dim, parts)
        assert got.shape == expected.shape and got.dtype == expected.dtype
        assert torch.equal(got, expected)
        shards.append(got)
    if parts is None:
        assert torch.equal(torch.cat(shards, dim), tensors[name])


def test_shard_text_and_composition(checkpoint):
    path, tensors = checkpoint
    assert ballast.Shard(1, 4, 0, [8, 4, 4])._text() == "shard:1/4:0:8+4+4"
    loader = ballast.Loader(num_threads=2)
    got = loader.load_tensor("qkv", path, transforms=[ballast.Shard(1, 2, 0, (8, 4, 4)),
                                                      ballast.Cast("f32")], framework="torch")
    assert torch.equal(got, torch_shard(tensors["qkv"], 1, 2, 0, [8, 4, 4]).float())
    with pytest.raises(ballast.ShapeMismatchError):
        loader.load_tensor("qkv", path, transforms=[ballast.Shard(0, 2, 0, [8, 4])])
    with pytest.raises(ballast.InvalidArgumentError):
        loader.load_tensor("qkv", path, transforms=[ballast.Shard(2, 2)])
