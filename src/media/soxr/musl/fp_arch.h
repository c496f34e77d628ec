/* musl's arch/generic/fp_arch.h (empty): no target's own barriers or rounding intrinsics, so that
   every target runs the same C. */
