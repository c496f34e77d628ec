# ---- fetch: sources and the download engine (its HTTP behaviour is proven through mt install, in
# mt.cmake: test_mt_install, test_install_http, test_install_hostile)
