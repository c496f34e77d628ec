/* ort_api.h — the part of ONNX Runtime's C API modelpkg calls, declared here (docs/ort.md, "The API
   slots"). No ONNX Runtime header is used or vendored.

   ONNX Runtime exports one C function, OrtGetApiBase(), returning an OrtApiBase: two function
   pointers, GetApi(uint32_t version) and GetVersionString(). GetApi returns `const OrtApi *`, a
   struct made only of function pointers in a FIXED order: a release only ever appends to its end
   (ORT_API_VERSION counts the appends), so slot N of the struct is the same function in every
   release that has it. modelpkg reads the slots it needs by index, `((void *const *)api)[N]`, and
   asks for the lowest API version that has all of them (MPK_ORT_API_VERSION, modelpkg/ort.h).

   The slot numbers were derived by counting the members of `struct OrtApi` in
   include/onnxruntime/core/session/onnxruntime_c_api.h (microsoft/onnxruntime, ORT_API_VERSION 13,
   the order unchanged since) from 0; the signatures are copied from the same header. A wrong slot
   calls the wrong function: tests/ort.cmake's test_ort runs every one of them against the real
   library (npm onnxruntime-node 1.30.0). */
#ifndef MPK_ORT_API_H
#define MPK_ORT_API_H

#include <stddef.h>
#include <stdint.h>

/* ONNX Runtime's opaque types: only pointers to them cross the boundary. */
typedef struct OrtApi OrtApi;
typedef struct OrtEnv OrtEnv;
typedef struct OrtStatus OrtStatus;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtSession OrtSession;
typedef struct OrtValue OrtValue;
typedef struct OrtRunOptions OrtRunOptions;
typedef struct OrtTypeInfo OrtTypeInfo;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtAllocator OrtAllocator;

typedef struct OrtApiBase {
  const OrtApi *(*GetApi)(uint32_t version);
  const char *(*GetVersionString)(void);
} OrtApiBase;
typedef const OrtApiBase *(*mpk_OrtGetApiBase_fn)(void);

/* Enumerations (values from the same header). ONNXTensorElementDataType's numbers are ONNX's
   TensorProto.DataType, which modelpkg's dtype registry already records (mpk_dtype.onnx_type). */
enum { MPK_ORT_LOGGING_LEVEL_WARNING = 2 };       /* OrtLoggingLevel */
enum { MPK_ORT_DISABLE_ALL = 0 };                 /* GraphOptimizationLevel */
enum { MPK_ORT_ARENA_ALLOCATOR = 1 };             /* OrtAllocatorType: OrtArenaAllocator */
enum { MPK_ORT_MEM_TYPE_DEFAULT = 0 };            /* OrtMemType: OrtMemTypeDefault */
enum { MPK_ORT_ONNX_TYPE_TENSOR = 1 };            /* ONNXType: ONNX_TYPE_TENSOR */
enum {                                            /* ONNXTensorElementDataType */
  MPK_ORT_ELEM_FLOAT = 1,
  MPK_ORT_ELEM_INT64 = 7,
  MPK_ORT_ELEM_FLOAT16 = 10,
};

/* The slots: "slot N of OrtApi, since API v…" (API 1 is ONNX Runtime 1.0's). */
enum mpk_ort_slot {
  MPK_ORT_SLOT_GetErrorMessage = 2,                  /* slot 2, since API 1 */
  MPK_ORT_SLOT_CreateEnv = 3,                        /* slot 3, since API 1 */
  MPK_ORT_SLOT_CreateSession = 7,                    /* slot 7, since API 1 */
  MPK_ORT_SLOT_Run = 9,                              /* slot 9, since API 1 */
  MPK_ORT_SLOT_CreateSessionOptions = 10,            /* slot 10, since API 1 */
  MPK_ORT_SLOT_SetSessionGraphOptimizationLevel = 23,/* slot 23, since API 1 */
  MPK_ORT_SLOT_SetIntraOpNumThreads = 24,            /* slot 24, since API 1 */
  MPK_ORT_SLOT_SessionGetInputCount = 30,            /* slot 30, since API 1 */
  MPK_ORT_SLOT_SessionGetOutputCount = 31,           /* slot 31, since API 1 */
  MPK_ORT_SLOT_SessionGetInputTypeInfo = 33,         /* slot 33, since API 1 */
  MPK_ORT_SLOT_SessionGetOutputTypeInfo = 34,        /* slot 34, since API 1 */
  MPK_ORT_SLOT_SessionGetInputName = 36,             /* slot 36, since API 1 */
  MPK_ORT_SLOT_SessionGetOutputName = 37,            /* slot 37, since API 1 */
  MPK_ORT_SLOT_CreateTensorWithDataAsOrtValue = 49,  /* slot 49, since API 1 */
  MPK_ORT_SLOT_GetTensorMutableData = 51,            /* slot 51, since API 1 */
  MPK_ORT_SLOT_CastTypeInfoToTensorInfo = 55,        /* slot 55, since API 1 */
  MPK_ORT_SLOT_GetOnnxTypeFromTypeInfo = 56,         /* slot 56, since API 1 */
  MPK_ORT_SLOT_GetTensorElementType = 60,            /* slot 60, since API 1 */
  MPK_ORT_SLOT_GetDimensionsCount = 61,              /* slot 61, since API 1 */
  MPK_ORT_SLOT_GetDimensions = 62,                   /* slot 62, since API 1 */
  MPK_ORT_SLOT_GetSymbolicDimensions = 63,           /* slot 63, since API 1 */
  MPK_ORT_SLOT_GetTensorTypeAndShape = 65,           /* slot 65, since API 1 */
  MPK_ORT_SLOT_CreateCpuMemoryInfo = 69,             /* slot 69, since API 1 */
  MPK_ORT_SLOT_AllocatorFree = 76,                   /* slot 76, since API 1 */
  MPK_ORT_SLOT_GetAllocatorWithDefaultOptions = 78,  /* slot 78, since API 1 */
  MPK_ORT_SLOT_ReleaseEnv = 92,                      /* slot 92, since API 1 */
  MPK_ORT_SLOT_ReleaseStatus = 93,                   /* slot 93, since API 1 */
  MPK_ORT_SLOT_ReleaseMemoryInfo = 94,               /* slot 94, since API 1 */
  MPK_ORT_SLOT_ReleaseSession = 95,                  /* slot 95, since API 1 */
  MPK_ORT_SLOT_ReleaseValue = 96,                    /* slot 96, since API 1 */
  MPK_ORT_SLOT_ReleaseTypeInfo = 98,                 /* slot 98, since API 1 */
  MPK_ORT_SLOT_ReleaseTensorTypeAndShapeInfo = 99,   /* slot 99, since API 1 */
  MPK_ORT_SLOT_ReleaseSessionOptions = 100,          /* slot 100, since API 1 */
  MPK_ORT_SLOT_AddSessionConfigEntry = 130,          /* slot 130, since API 2 (1.2) */
  MPK_ORT_SLOT_AddInitializer = 150,                 /* slot 150, before API 12 (in the struct long before it) */
  /* Not used: AddExternalInitializers (slot 210, API 12) copies the bytes into the graph — measured
     on 1.30: RssAnon grew by the weights' size (docs/ort.md, "Zero-copy, measured"). */
};

/* Typed pointers, one per slot used (signatures from onnxruntime_c_api.h). */
typedef const char *(*mpk_ort_GetErrorMessage_fn)(const OrtStatus *);
typedef OrtStatus *(*mpk_ort_CreateEnv_fn)(int log_severity_level, const char *logid, OrtEnv **out);
typedef OrtStatus *(*mpk_ort_CreateSession_fn)(const OrtEnv *, const char *model_path, const OrtSessionOptions *,
                                               OrtSession **out);
typedef OrtStatus *(*mpk_ort_Run_fn)(OrtSession *, const OrtRunOptions *, const char *const *input_names,
                                     const OrtValue *const *inputs, size_t input_len,
                                     const char *const *output_names, size_t output_names_len, OrtValue **outputs);
typedef OrtStatus *(*mpk_ort_CreateSessionOptions_fn)(OrtSessionOptions **out);
typedef OrtStatus *(*mpk_ort_SetSessionGraphOptimizationLevel_fn)(OrtSessionOptions *, int level);
typedef OrtStatus *(*mpk_ort_SetIntraOpNumThreads_fn)(OrtSessionOptions *, int n);
typedef OrtStatus *(*mpk_ort_SessionGetCount_fn)(const OrtSession *, size_t *out);
typedef OrtStatus *(*mpk_ort_SessionGetTypeInfo_fn)(const OrtSession *, size_t index, OrtTypeInfo **out);
typedef OrtStatus *(*mpk_ort_SessionGetName_fn)(const OrtSession *, size_t index, OrtAllocator *, char **out);
typedef mpk_ort_SessionGetCount_fn mpk_ort_SessionGetInputCount_fn;
typedef mpk_ort_SessionGetCount_fn mpk_ort_SessionGetOutputCount_fn;
typedef mpk_ort_SessionGetTypeInfo_fn mpk_ort_SessionGetInputTypeInfo_fn;
typedef mpk_ort_SessionGetTypeInfo_fn mpk_ort_SessionGetOutputTypeInfo_fn;
typedef mpk_ort_SessionGetName_fn mpk_ort_SessionGetInputName_fn;
typedef mpk_ort_SessionGetName_fn mpk_ort_SessionGetOutputName_fn;
typedef OrtStatus *(*mpk_ort_CreateTensorWithDataAsOrtValue_fn)(const OrtMemoryInfo *, void *p_data, size_t p_data_len,
                                                                const int64_t *shape, size_t shape_len, int type,
                                                                OrtValue **out);
typedef OrtStatus *(*mpk_ort_GetTensorMutableData_fn)(OrtValue *, void **out);
typedef OrtStatus *(*mpk_ort_CastTypeInfoToTensorInfo_fn)(const OrtTypeInfo *, const OrtTensorTypeAndShapeInfo **out);
typedef OrtStatus *(*mpk_ort_GetOnnxTypeFromTypeInfo_fn)(const OrtTypeInfo *, int *out);
typedef OrtStatus *(*mpk_ort_GetTensorElementType_fn)(const OrtTensorTypeAndShapeInfo *, int *out);
typedef OrtStatus *(*mpk_ort_GetDimensionsCount_fn)(const OrtTensorTypeAndShapeInfo *, size_t *out);
typedef OrtStatus *(*mpk_ort_GetDimensions_fn)(const OrtTensorTypeAndShapeInfo *, int64_t *dims, size_t n);
typedef OrtStatus *(*mpk_ort_GetSymbolicDimensions_fn)(const OrtTensorTypeAndShapeInfo *, const char **names, size_t n);
typedef OrtStatus *(*mpk_ort_GetTensorTypeAndShape_fn)(const OrtValue *, OrtTensorTypeAndShapeInfo **out);
typedef OrtStatus *(*mpk_ort_CreateCpuMemoryInfo_fn)(int allocator_type, int mem_type, OrtMemoryInfo **out);
typedef OrtStatus *(*mpk_ort_AllocatorFree_fn)(OrtAllocator *, void *p);
typedef OrtStatus *(*mpk_ort_GetAllocatorWithDefaultOptions_fn)(OrtAllocator **out);
typedef void (*mpk_ort_ReleaseEnv_fn)(OrtEnv *);
typedef void (*mpk_ort_ReleaseStatus_fn)(OrtStatus *);
typedef void (*mpk_ort_ReleaseMemoryInfo_fn)(OrtMemoryInfo *);
typedef void (*mpk_ort_ReleaseSession_fn)(OrtSession *);
typedef void (*mpk_ort_ReleaseValue_fn)(OrtValue *);
typedef void (*mpk_ort_ReleaseTypeInfo_fn)(OrtTypeInfo *);
typedef void (*mpk_ort_ReleaseTensorTypeAndShapeInfo_fn)(OrtTensorTypeAndShapeInfo *);
typedef void (*mpk_ort_ReleaseSessionOptions_fn)(OrtSessionOptions *);
typedef OrtStatus *(*mpk_ort_AddSessionConfigEntry_fn)(OrtSessionOptions *, const char *key, const char *value);
typedef OrtStatus *(*mpk_ort_AddInitializer_fn)(OrtSessionOptions *, const char *name, const OrtValue *value);

/* The function in slot `name` of the OrtApi `api`, typed: ORT(api, CreateEnv)(...). Converting an
   object pointer to a function pointer is what dlsym() already relies on (POSIX). */
#define ORT(api, name) ((mpk_ort_##name##_fn)(((void *const *)(const void *)(api))[MPK_ORT_SLOT_##name]))

#endif /* MPK_ORT_API_H */
