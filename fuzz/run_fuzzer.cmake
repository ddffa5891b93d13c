# Runs one libFuzzer target for SECONDS over a fresh working corpus WORK seeded from SEEDS
# (read-only folders), failing on any crash, leak, timeout or sanitizer report; the input that
# failed is left in WORK as crash-*, leak-* or timeout-*. $BALLAST_FUZZ_SECONDS, when set,
# overrides SECONDS (scripts/fuzz.sh).
if(DEFINED ENV{BALLAST_FUZZ_SECONDS})
  set(SECONDS $ENV{BALLAST_FUZZ_SECONDS})
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
# The run's time limit (a ctest TIMEOUT could not follow $BALLAST_FUZZ_SECONDS): the run, plus
# the seeds' replay and libFuzzer's start and merge.
math(EXPR limit "${SECONDS} + 120")
execute_process(COMMAND ${FUZZER} -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048
                        -artifact_prefix=${WORK}/
                        -max_len=1048576 -print_final_stats=1 ${WORK} ${SEEDS}
                RESULT_VARIABLE result TIMEOUT ${limit})
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (exit ${result}); the reproducer is in the working folder")
endif()
