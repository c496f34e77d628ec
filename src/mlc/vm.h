/* The Relax VM executable inside a compiled library (docs/mlc-library.md, "The VM function
   table"): parsing its serialization from bytes, and finding it in a library's objects.

   The serialization (TVM's relax Executable::SaveToBinary), after the module's type key
   ("relax.Executable", or "relax.VMExecutable" in TVM FFI builds): a dmlc string (u64 length +
   bytes) holding
     header     u64 magic 0xD225DE2F4214151D, string version
     globals    u64 count; per function: i32 kind, string name, i64 start_instr, i64 end_instr,
                i64 num_args, i64 register_file_size, u64 count + strings param_names
     constants  u64 count; per constant: i32 type, then its value (tensor, data type, shape,
                string, int, float; the type numbers differ between the generations)
     code       u64 count + i64 instruction offsets, u64 count + i64 instruction words
   Every count is checked against the bytes left before anything is allocated, every length
   against the bytes that hold it; nothing read from the input is trusted as an offset first. */
#ifndef MPK_MLC_VM_H
#define MPK_MLC_VM_H

#include "mlc/mlc.h"
#include "objfile/objfile.h"

#define MPK_VM_MAGIC UINT64_C(0xD225DE2F4214151D)
#define MPK_VM_TENSOR_MAGIC UINT64_C(0xDD5E40F096B4A13F)
/* Bounds beyond what the bytes already imply (a real table has under a thousand functions and a
   few thousand constants). */
#define MPK_VM_MAX_FUNCTIONS (1u << 20)
#define MPK_VM_MAX_PARAMS 4096
#define MPK_VM_MAX_CONSTANTS (1u << 24)
/* Executable candidates (type key + length + magic) parsed per library before giving up. */
#define MPK_VM_MAX_CANDIDATES 64

/* The constant types, normalized (the legacy enum: TVM's relax ConstantType). */
enum { MPK_VM_CONST_TENSOR = 0, MPK_VM_CONST_DTYPE = 1, MPK_VM_CONST_SHAPE = 2, MPK_VM_CONST_STRING = 3,
       MPK_VM_CONST_INT = 4, MPK_VM_CONST_FLOAT = 5 };

typedef struct mpk_vm_constant {
  int type;          /* normalized, MPK_VM_CONST_* */
  uint64_t offset;   /* of its value (for a string: of its bytes) in the parsed input */
  uint64_t size;     /* of its value (a string's byte count; a tensor's data bytes) */
} mpk_vm_constant;

typedef struct mpk_vm_exec {
  const char *version;             /* the TVM version string */
  bool ffi_types;                  /* constants typed with TVM FFI type indices */
  mpk_mlc_function *functions;     /* the table, in order */
  int64_t *start_instr, *end_instr;/* per function */
  size_t n_functions;
  mpk_vm_constant *constants;
  size_t n_constants;
  const char *constants_problem;   /* the constants could not all be read (then no code either):
                                      why, with the offset; NULL when they were */
  const char *code_problem;        /* the code section could not be read: why; NULL when it was */
  const uint8_t *instr_offset;     /* the code section (NULL when not read): n_instrs i64 */
  uint64_t n_instrs;
  const uint8_t *instr_data;       /* n_words i64 */
  uint64_t n_words;
  uint64_t total;                  /* bytes of the input the executable spans (8 + payload) */
} mpk_vm_exec;

/* Parse an executable from `d[0, n)`, which starts at its payload's u64 length (right after the
   type key). `ffi_types`: read constant types as TVM FFI type indices ("relax.VMExecutable");
   the other numbering is tried when the first fails. `shown` names the input in errors, `base`
   is added to offsets in messages. Strings are copied into `a`. MPK_EMALFORMED naming the
   offset and the field; MPK_ELIMIT for a count beyond the bounds above. */
int mpk_vm_parse(const uint8_t *d, uint64_t n, bool ffi_types, const char *shown, int64_t base, mpk_arena *a,
                 mpk_vm_exec *out, mpk_error *err);

/* The constant index the VM function `_metadata` returns, read from its bytecode (a Call of
   vm.builtin.copy on a constant, then Ret): -1 when the bytecode does not say. */
int64_t mpk_vm_metadata_constant(const mpk_vm_exec *x);

/* An executable found in a library. */
typedef struct mpk_vm_found {
  const mpk_obj_object *object;
  const mpk_obj_section *section;
  uint64_t pos;                    /* of the payload length in the section's data */
  const char *type_key;
  const char *where;               /* in words: "member X: ELF symbol __tvm_dev_mblob (.rodata),
                                      relax.Executable at offset N" */
  mpk_vm_exec exec;                /* constant offsets are relative to section->data + pos */
} mpk_vm_found;

/* Find the library's one executable: per object, in the range of the defined symbol
   __tvm_dev_mblob or __tvm_ffi__library_bin first, else in each section. 0 with *found set;
   MPK_ENOTFOUND (message saying what was tried and, for a candidate that did not parse, why);
   MPK_EMALFORMED when two different executables are found (naming both places). */
int mpk_vm_find(const mpk_obj_file *f, mpk_arena *a, mpk_vm_found *found, mpk_error *err);

#endif
