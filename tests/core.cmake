# ---- core: JSON, canonical identities, transactions, the worker pool, atomic writes, opening files,
# the output contract
mpk_test(test_core_json unit unit/test_core_json.c)
mpk_test(test_core_canonical unit unit/test_core_canonical.c)
mpk_test(test_core_txn unit unit/test_core_txn.c)
mpk_script_test(test_core_txn_sigkill unit $<TARGET_FILE:test_core_txn> --sigkill)
mpk_test(test_core_parallel unit unit/test_core_parallel.c)
mpk_test(test_core_atomic unit unit/test_core_atomic.c)
mpk_test(test_core_open unit unit/test_core_open.c)
mpk_test(test_core_dtype unit unit/test_core_dtype.c)
mpk_test(test_core_document unit unit/test_core_document.c)
mpk_test(test_core_findings unit unit/test_core_findings.c)
mpk_test(test_core_output unit unit/test_core_output.c)
