# ---- fetch: sources and the download engine (its HTTP behaviour is proven through mt install, in
# mt.cmake: test_mt_install, test_install_http, test_install_hostile)
# The engine's own API, used as an MLC installer would (tensor-cache.json, size + MD5 per shard):
# directory and HTTP sources, a wrong MD5, a cancelled run resumed.
mpk_test(test_fetch_engine unit unit/test_fetch_engine.c)

# Parallel ranged transfers (docs/fetch.md, "Ranged transfers"): the engine driven through its public
# API by mpk_fetch_get against nginx (concurrent Range requests, HTTP/2 over TLS, SIGKILL and resume,
# peak RSS) and tests/integration/ranged_http.py (pieces out of order, a dropped piece, no ranges,
# a file changed between ranges, a wrong total, Retry-After).
add_executable(mpk_fetch_get util/fetch_get.c)
target_link_libraries(mpk_fetch_get PRIVATE mpk_testutil)
mpk_script_test(test_fetch_ranged "integration;slow" ${MPK_IT}/test_fetch_ranged.sh $<TARGET_FILE:mpk_fetch_get> ${MPK_CLI} ${MPK_SHARED_DIR})
set_tests_properties(test_fetch_ranged PROPERTIES TIMEOUT 600)
