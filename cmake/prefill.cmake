# mlc: prompt assembly and prefill planning (issue 10).
list(APPEND MPK_SOURCES
  src/mlc/prefill.c           # the planner: assembly, chunks, context checks, the call plan
  src/mlc/prefill_legacy.c    # the pre-manifest chunker (getChunkedPrefillInputData)
  src/mlc/prefill_open.c      # a planner from a package directory and its library
  src/mlc/prefill_segments.c  # SEGMENTS.json
)
list(APPEND MPK_CLI_SOURCES src/cli/cmd_mlc_plan.c)
