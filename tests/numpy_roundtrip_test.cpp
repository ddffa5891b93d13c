// Files written here by Debian's numpy (/usr/bin/python3): every tensor dtype in both byte
// orders, Fortran order, format versions 1.0 / 2.0 / 3.0, scalars, empty arrays, and .npz
// archives stored and deflated. Python records each array's hash (C-order, little-endian) and
// ballast's loaded tensors must match it exactly.
#include <gtest/gtest.h>

#include "ballast/ballast.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;

// Writes the files into argv[1]; prints {"<file>": {"<tensor>": {dtype, shape, sha256}}}.
constexpr const char* kWriter = R"(
import hashlib, json, os, sys
import numpy as np
from numpy.lib import format as npf
out = sys.argv[1]
names = {'?': 'bool', 'i1': 'i8', 'i2': 'i16', 'i4': 'i32', 'i8': 'i64', 'u1': 'u8',
         'u2': 'u16', 'u4': 'u32', 'u8': 'u64', 'f2': 'f16', 'f4': 'f32', 'f8': 'f64',
         'c8': 'c64', 'c16': 'c128'}
rng = np.random.default_rng(7)
def array(code, shape):
    n = int(np.prod(shape)) if shape else 1
    if code == '?':
        return (rng.integers(0, 2, n) == 1).reshape(shape)
    if code[0] in 'iu':
        info = np.iinfo(np.dtype(code))
        return rng.integers(info.min, info.max, n, dtype=np.dtype(code), endpoint=True).reshape(shape)
    if code[0] == 'c':
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(code).reshape(shape)
    return rng.standard_normal(n).astype(code).reshape(shape)
def record(a):
    le = np.ascontiguousarray(a).astype(a.dtype.newbyteorder('<'))
    return {'dtype': names[a.dtype.str[1:] if a.dtype.char != '?' else '?'],
            'shape': list(a.shape), 'sha256': hashlib.sha256(le.tobytes()).hexdigest()}
expect = {}
for code in names:
    for order in ('<', '>'):
        a = array(code, (3, 4, 5)).astype(np.dtype(code).newbyteorder(order))
        f = 'd_%s_%s.npy' % ('le' if order == '<' else 'be', code.replace('?', 'b1'))
        np.save(os.path.join(out, f), a)
        expect[f] = {'arr_0': record(a)}
        ft = np.asfortranarray(a)
        f = 'fortran_' + f
        np.save(os.path.join(out, f), ft)
        expect[f] = {'arr_0': record(ft)}
for version in ((1, 0), (2, 0), (3, 0)):
    a = array('f4', (2, 3, 4))
    f = 'v%d.npy' % version[0]
    with open(os.path.join(out, f), 'wb') as fh:
        npf.write_array(fh, a, version=version)
    expect[f] = {'arr_0': record(a)}
cases = {'scalar': array('f8', ()), 'scalar_be': np.array(3.5, dtype='>f4'),
         'empty_0': np.zeros((0,), 'i2'), 'empty_3x0x2': np.zeros((3, 0, 2), '>f4'),
         'fortran_empty': np.asfortranarray(np.zeros((2, 0, 3), 'f4')),
         'fortran_1d': np.asfortranarray(array('i4', (7,))),
         'fortran_ones': np.asfortranarray(array('u2', (1, 5, 1)))}
for name, a in cases.items():
    np.save(os.path.join(out, name + '.npy'), a)
    expect[name + '.npy'] = {'arr_0': record(a)}
members = {'w': array('f4', (16, 8)), 'b': array('f2', (8,)), 'be': array('>i8', (3, 2)),
           'ft': np.asfortranarray(array('c8', (4, 3))), 's': array('u1', ()),
           'e': np.zeros((0, 4), 'f8'), 'dir/nested': array('?', (9,))}
for f, save in (('stored.npz', np.savez), ('compressed.npz', np.savez_compressed)):
    save(os.path.join(out, f), **members)
    expect[f] = {k: record(v) for k, v in members.items()}
np.savez_compressed(os.path.join(out, 'mixed.npz'), x=array('i4', (2, 2)), text=np.array(['ab', 'c']),
                    when=np.array(['2020-01-01'], dtype='M8[D]'))
expect['mixed.npz'] = {}
print(json.dumps(expect))
)";

TEST(NumpyRoundTrip, EveryDtypeOrderVersionAndArchiveMatchesNumpy) {
  BALLAST_REQUIRE_PYTHON("numpy");
  TempDir dir;
  json expect = json::parse(run_python(kWriter, {dir.path().string()}));
  ASSERT_GT(expect.size(), 60u);
  auto loader = make_weight_loader();
  for (auto& [file, tensors] : expect.items()) {
    SCOPED_TRACE(file);
    if (file == "mixed.npz") continue;
    auto source = WeightSource::file(dir / file);
    WeightMetadata meta = loader->get_metadata(source);
    EXPECT_EQ(meta.format, WeightFormat::numpy());
    EXPECT_EQ(meta.tensors.size(), tensors.size());
    for (auto& [name, want] : tensors.items()) {
      SCOPED_TRACE(name);
      auto tensor = loader->load_tensor(TensorSpec{.name = name, .source = source});
      EXPECT_EQ(dtype_name(tensor->dtype()), want["dtype"].get<std::string>());
      EXPECT_EQ(tensor->shape(), want["shape"].get<Shape>());
      EXPECT_EQ(sha256_hex(*tensor), want["sha256"].get<std::string>());
    }
  }
}

TEST(NumpyRoundTrip, NonTensorNpzMembersAreSkippedAndListed) {
  BALLAST_REQUIRE_PYTHON("numpy");
  TempDir dir;
  run_python(kWriter, {dir.path().string()});
  auto source = WeightSource::file(dir / "mixed.npz");
  WeightMetadata meta = make_weight_loader()->get_metadata(source);
  ASSERT_EQ(meta.tensors.size(), 1u);
  EXPECT_TRUE(meta.tensors.count("x"));
  json extra = json::parse(meta.extra);
  EXPECT_TRUE(extra["skipped"].contains("text")) << meta.extra;
  EXPECT_TRUE(extra["skipped"].contains("when")) << meta.extra;
  auto r = run_command(cli_path() + " inspect --json " + shell_quote((dir / "mixed.npz").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(json::parse(r.out)["metadata"]["skipped"].contains("text"));
}

TEST(NumpyRoundTrip, DeflatedMembersRespectInflateLimits) {
  BALLAST_REQUIRE_PYTHON("numpy");
  TempDir dir;
  run_python(kWriter, {dir.path().string()});
  WeightLoaderConfig config;
  config.limits.max_inflated_bytes = 256;
  auto source = WeightSource::file(dir / "compressed.npz");
  try {
    make_weight_loader(config)->get_metadata(source);
    FAIL() << "a 512-byte member passed a 256-byte inflate limit";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::limit_exceeded) << e.what();
  }
  EXPECT_NO_THROW(make_weight_loader(config)->get_metadata(WeightSource::file(dir / "stored.npz")));
}

}  // namespace
}  // namespace ballast::test
