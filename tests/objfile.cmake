# ---- objfile: the containers compiled libraries ship in (docs/objfile.md)
mpk_test(test_obj_real unit unit/test_obj_real.c)        # the six real MLC libraries
mpk_test(test_obj_built unit unit/test_obj_built.c)      # objects and archives built at test time (clang, lld, ar, tar)
mpk_test(test_obj_hostile unit unit/test_obj_hostile.c)  # truncations, huge counts, bombs, non-libraries, a 10 GB sparse file
