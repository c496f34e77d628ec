# ---- objfile: the WebAssembly reader (src/objfile/wasm.c)
mpk_test(test_obj_wasm unit unit/test_obj_wasm.c)
mpk_test(test_mlc_embed_rewrite unit unit/test_mlc_embed.c)
# mlc embed (src/mlc/embed.c): the real WebAssembly libraries with the examples' artifacts
mpk_script_test(test_mlc_embed integration ${MPK_IT}/test_mlc_embed.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} ${MPK_SHARED_DIR})
