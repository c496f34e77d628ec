# ---- fetch: sources and the download engine (its HTTP behaviour is proven through mt install, in
# mt.cmake: test_mt_install, test_install_http, test_install_hostile)
# The engine's own API, used as an MLC installer would (tensor-cache.json, size + MD5 per shard):
# directory and HTTP sources, a wrong MD5, a cancelled run resumed.
mpk_test(test_fetch_engine unit unit/test_fetch_engine.c)
