# ---- objfile: the WebAssembly reader (src/objfile/wasm.c)
mpk_test(test_obj_wasm unit unit/test_obj_wasm.c)
