// The CLI's conventions: every command exits 2 on a usage error (with `ballast: error:` and a
// hint to `ballast help CMD`) and 1 on a runtime error; `ballast help CMD`; --tensor takes one
// name per flag; numeric options say in words what they accept; an unknown dtype lists the
// valid ones; options that do not apply are refused; convert warns about an extension that is
// not .safetensors; -q and -v.
#include <gtest/gtest.h>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

class CliUsage : public testing::Test {
 protected:
  void SetUp() override {
    path_ = (dir_ / "m.safetensors").string();
    write_file(path_, safetensors_file({{"w", "F32", {2, 2}, f32_bytes({1, 2, 3, 4})},
                                        {"layers.0.w", "F32", {2}, f32_bytes({5, 6})}}));
    write_file(dir_ / "garbage.bin", "not a checkpoint at all");
  }
  CommandResult ballast(const std::string& args) { return run_command(cli_path() + " " + args); }
  std::string quoted(const std::string& name) { return shell_quote((dir_ / name).string()); }

  TempDir dir_;
  std::string path_;
};

TEST_F(CliUsage, EveryCommandExits2OnAUsageErrorAnd1OnARuntimeError) {
  // A Hub cache holding a blob whose content does not match its name: `cache verify` fails.
  const auto hub = dir_ / "hub";
  write_file(hub / "models--org--repo" / "blobs" / std::string(64, 'a'), "not that content");
  const std::string m = shell_quote(path_), out = quoted("out.safetensors");
  struct Case {
    std::string command, usage_error, runtime_error;
  };
  const std::vector<Case> cases = {
      {"inspect", "inspect --format raw " + m, "inspect " + quoted("missing.safetensors")},
      {"hash", "hash --dtype f17 " + m, "hash --tensor nothing " + m},
      {"load", "load --threads -1 " + m, "load " + quoted("garbage.bin")},
      {"convert", "convert " + m + " " + out + " --transform bogus:1",
       "convert " + quoted("garbage.bin") + " " + out},
      {"fetch", "fetch --shape 2 " + m, "fetch " + quoted("garbage.bin")},
      {"cache verify", "cache verify --bogus",
       "cache verify --cache-dir " + quoted("objects") + " --hub-cache " +
           shell_quote(hub.string())},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.command);
    const auto usage = ballast(c.usage_error);
    EXPECT_EQ(usage.exit_code, 2) << usage.err;
    EXPECT_TRUE(usage.err.starts_with("ballast: error: ")) << usage.err;
    EXPECT_NE(usage.err.find("Run 'ballast help " + c.command + "' for its options."),
              std::string::npos)
        << usage.err;
    const auto runtime = ballast(c.runtime_error);
    EXPECT_EQ(runtime.exit_code, 1) << runtime.err;
    EXPECT_TRUE(runtime.err.starts_with("ballast: error: ")) << runtime.err;
    EXPECT_EQ(runtime.err.find("ballast help"), std::string::npos) << runtime.err;
  }
  const auto help = ballast("help nothing");
  EXPECT_EQ(help.exit_code, 2);
  EXPECT_EQ(help.err,
            "ballast: error: no command 'nothing'\nRun 'ballast help' for the commands.\n");
  EXPECT_EQ(ballast("").exit_code, 2);
}

TEST_F(CliUsage, HelpCommandShowsACommandsOptions) {
  for (const std::string command :
       {"inspect", "hash", "load", "convert", "fetch", "cache verify"}) {
    SCOPED_TRACE(command);
    const auto help = ballast("help " + command);
    EXPECT_EQ(help.exit_code, 0) << help.err;
    EXPECT_EQ(help.out, ballast(command + " --help").out);
    EXPECT_NE(help.out.find("--quiet"), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("--verbose"), std::string::npos) << help.out;
  }
  const auto all = ballast("help");
  EXPECT_EQ(all.exit_code, 0);
  EXPECT_EQ(all.out, ballast("--help").out);
}

// The example: --tensor no longer swallows the SOURCE after its name.
TEST_F(CliUsage, TensorTakesOneNamePerFlag) {
  const auto r = ballast("hash --json --tensor w " + shell_quote(path_) + " --transform cast:f16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto tensors = nlohmann::json::parse(r.out)["tensors"];
  ASSERT_EQ(tensors.size(), 1u);
  EXPECT_EQ(tensors["w"]["dtype"], "f16");
  const auto two = ballast("hash --json --tensor w --tensor 'layers.*' " + shell_quote(path_));
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(nlohmann::json::parse(two.out)["tensors"].size(), 2u);
  // Two names after one flag: the second is an extra argument.
  EXPECT_EQ(ballast("hash --tensor w layers.0.w " + shell_quote(path_)).exit_code, 2);
}

TEST_F(CliUsage, NumericOptionsSayWhatTheyAccept) {
  const std::string m = " " + shell_quote(path_);
  const std::string url = " http://127.0.0.1:1/m.safetensors";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"load --threads many" + m,
       "--threads: must be a whole number from 0 to 4096 (0 = all cores), not 'many'"},
      {"load --threads -1" + m, "--threads: must be a whole number from 0 to 4096"},
      {"load --repeat 0" + m, "--repeat: must be a whole number from 1 to 1000000, not '0'"},
      {"inspect --connections 0" + url, "--connections: must be a whole number from 1 to 256"},
      {"inspect --retries 1e3" + url, "--retries: must be a whole number from 0 to 100"},
      {"inspect --timeout nan" + url,
       "--timeout: must be a number of seconds above 0, at most 86400, not 'nan'"},
      {"inspect --max-cache-size -5" + url,
       "--max-cache-size: must be a whole number 0 or more (0 = unbounded), not '-5'"},
      {"inspect --format raw --dtype u8 --offset x" + m,
       "--offset: must be a whole number 0 or more, not 'x'"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = ballast(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.err.find("ballast: error: " + message), std::string::npos) << args << "\n" << r.err;
  }
}

TEST_F(CliUsage, UnknownDtypesListTheValidOnes) {
  const auto option = ballast("hash --dtype f17 " + shell_quote(path_));
  EXPECT_EQ(option.exit_code, 2);
  EXPECT_NE(option.err.find("--dtype: unknown dtype 'f17'; valid: f64, f32, f16, bf16,"),
            std::string::npos)
      << option.err;
  const auto raw = ballast("inspect --format raw --dtype float17 " + shell_quote(path_));
  EXPECT_NE(raw.err.find("unknown dtype 'float17'; valid: f64, f32"), std::string::npos) << raw.err;
  // A cast step: the library's message, which Python users get too.
  const auto step = ballast("hash --transform cast:f17 " + shell_quote(path_));
  EXPECT_EQ(step.exit_code, 2);
  EXPECT_NE(step.err.find("unknown dtype 'f17'; valid: f64, f32, f16, bf16,"), std::string::npos)
      << step.err;
  try {
    parse_transformations("cast:f17");
    FAIL() << "an unknown dtype was accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("valid: f64, f32"), std::string::npos) << e.what();
  }
}

TEST_F(CliUsage, OptionsThatDoNotApplyAreRefused) {
  const std::string m = " " + shell_quote(path_);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"inspect --connections 4" + m, "--connections applies only to remote sources"},
      {"hash --no-cache" + m, "--no-cache applies only to remote sources"},
      {"load --cache-dir /tmp" + m, "--cache-dir applies only to remote sources"},
      {"inspect --timeout 5" + m, "--timeout applies only to remote sources"},
      {"inspect --s3-region eu-west-1 http://127.0.0.1:1/m.safetensors",
       "--s3-region applies only to s3:// sources"},
      {"inspect --max-cache-size 10 hf://org/repo",
       "--max-cache-size does not apply to hf:// sources"},
      {"inspect --shape 2" + m, "--shape applies only with --format raw"},
      {"fetch --offset 8" + m, "--offset applies only with --format raw"},
      {"inspect --dtype f16" + m, "--dtype applies only with --format raw here"},
      {"inspect --tensor w" + m, "--tensor"},
      {"inspect --format tar" + m,
       "--format: unknown format 'tar'; valid: safetensors, pytorch, numpy, onnx, gguf, raw"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = ballast(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
  }
}

TEST_F(CliUsage, ConvertWarnsWhenTheExtensionIsNotSafetensors) {
  const auto warned = ballast("convert " + shell_quote(path_) + " " + quoted("out.bin"));
  ASSERT_EQ(warned.exit_code, 0) << warned.err;
  EXPECT_EQ(warned.err, "ballast: warning: '" + (dir_ / "out.bin").string() +
                            "' does not end in .safetensors, but convert writes a safetensors "
                            "file\n");
  const auto quiet = ballast("convert -q " + shell_quote(path_) + " " + quoted("q.bin"));
  EXPECT_NE(quiet.err.find("warning"), std::string::npos) << "warnings outlive -q";
  const auto fine = ballast("convert " + shell_quote(path_) + " " + quoted("out.safetensors"));
  ASSERT_EQ(fine.exit_code, 0) << fine.err;
  EXPECT_EQ(fine.err, "");
}

TEST_F(CliUsage, VerboseAddsNotesAndQuietNone) {
  for (const char* command : {"inspect", "hash", "load", "fetch"}) {
    SCOPED_TRACE(command);
    const auto verbose = ballast(std::string(command) + " -v " + shell_quote(path_));
    ASSERT_EQ(verbose.exit_code, 0) << verbose.err;
    EXPECT_NE(verbose.err.find("ballast: read mode auto, threads: all cores\n"), std::string::npos)
        << verbose.err;
    EXPECT_NE(verbose.err.find("ballast: " + std::string(command) + " took "), std::string::npos)
        << verbose.err;
    const auto quiet = ballast(std::string(command) + " --quiet " + shell_quote(path_));
    ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
    EXPECT_EQ(quiet.err, "");
    EXPECT_EQ(ballast(std::string(command) + " -q -v " + shell_quote(path_)).exit_code, 2);
  }
  const auto noted = ballast("hash -v " + shell_quote(path_));
  EXPECT_NE(noted.err.find(": safetensors, 2 tensors, 24 B"), std::string::npos) << noted.err;
}

}  // namespace
}  // namespace ballast::test
