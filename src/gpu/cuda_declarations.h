// Our own declarations of the few CUDA driver API (cuda.h), NVRTC (nvrtc.h)
// and NCCL (nccl.h) entry points cohort calls. Nothing here includes a CUDA
// header: the libraries are found with dlopen at run time (gpu/gpu_stack.h),
// so a build machine needs no CUDA toolkit. Types, enum values and function
// signatures are copied from those public headers (CUDA 11.x-13.x, NCCL
// 2.14+), and the symbol names are the versioned ones cuda.h maps the plain
// names to (`#define cuMemAlloc cuMemAlloc_v2` and so on): dlsym needs the
// real exported name. Every value below is part of a stable ABI those
// headers promise not to renumber.
#ifndef COHORT_GPU_CUDA_DECLARATIONS_H_
#define COHORT_GPU_CUDA_DECLARATIONS_H_

#include <cstddef>
#include <cstdint>

namespace cohort::gpu::abi {

// ---- cuda.h ----
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // cuda.h: CUdeviceptr_v2 on LP64
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUevent_st;
struct CUstream_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUevent = CUevent_st*;
using CUstream = CUstream_st*;  // also cudaStream_t (NCCL takes it)

inline constexpr size_t kIpcHandleSize = 64;  // CU_IPC_HANDLE_SIZE
struct CUipcMemHandle {
  char reserved[kIpcHandleSize];
};

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_NOT_READY = 600;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;

inline constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr int CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33;
inline constexpr int CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34;
inline constexpr int CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41;
inline constexpr int CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

inline constexpr int CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;  // an unsigned int CUmemorytype
inline constexpr int CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9;
inline constexpr unsigned CU_MEMORYTYPE_HOST = 1;
inline constexpr unsigned CU_MEMORYTYPE_DEVICE = 2;

inline constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
inline constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x2;
inline constexpr unsigned CU_MEMHOSTALLOC_PORTABLE = 0x1;
inline constexpr unsigned CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1;

// The driver entry points, by the symbol each is loaded from.
struct DriverFunctions {
  CUresult (*cuInit)(unsigned flags);                                 // cuInit
  CUresult (*cuDriverGetVersion)(int* version);                       // cuDriverGetVersion
  CUresult (*cuGetErrorName)(CUresult error, const char** name);      // cuGetErrorName
  CUresult (*cuGetErrorString)(CUresult error, const char** text);    // cuGetErrorString
  CUresult (*cuDeviceGetCount)(int* count);                           // cuDeviceGetCount
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal);             // cuDeviceGet
  CUresult (*cuDeviceGetName)(char* name, int len, CUdevice device);  // cuDeviceGetName
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute,
                                   CUdevice dev);                      // cuDeviceGetAttribute
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* ctx, CUdevice dev);  // cuDevicePrimaryCtxRetain
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice dev);     // cuDevicePrimaryCtxRelease_v2
  CUresult (*cuCtxSetCurrent)(CUcontext ctx);              // cuCtxSetCurrent
  CUresult (*cuMemAlloc)(CUdeviceptr* ptr, size_t bytes);  // cuMemAlloc_v2
  CUresult (*cuMemFree)(CUdeviceptr ptr);                  // cuMemFree_v2
  CUresult (*cuMemHostAlloc)(void** ptr, size_t bytes, unsigned flags);  // cuMemHostAlloc
  CUresult (*cuMemFreeHost)(void* ptr);                                  // cuMemFreeHost
  CUresult (*cuMemcpyAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                            CUstream stream);  // cuMemcpyAsync (unified addressing: any pair)
  CUresult (*cuStreamCreate)(CUstream* stream, unsigned flags);  // cuStreamCreate
  CUresult (*cuStreamDestroy)(CUstream stream);                  // cuStreamDestroy_v2
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event,
                                unsigned flags);                           // cuStreamWaitEvent
  CUresult (*cuEventCreate)(CUevent* event, unsigned flags);               // cuEventCreate
  CUresult (*cuEventDestroy)(CUevent event);                               // cuEventDestroy_v2
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);               // cuEventRecord
  CUresult (*cuEventQuery)(CUevent event);                                 // cuEventQuery
  CUresult (*cuIpcGetMemHandle)(CUipcMemHandle* handle, CUdeviceptr ptr);  // cuIpcGetMemHandle
  CUresult (*cuIpcOpenMemHandle)(CUdeviceptr* ptr, CUipcMemHandle handle,
                                 unsigned flags);                     // cuIpcOpenMemHandle_v2
  CUresult (*cuIpcCloseMemHandle)(CUdeviceptr ptr);                   // cuIpcCloseMemHandle
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image);  // cuModuleLoadData
  CUresult (*cuModuleUnload)(CUmodule module);                        // cuModuleUnload
  CUresult (*cuModuleGetFunction)(CUfunction* fn, CUmodule module,
                                  const char* name);  // cuModuleGetFunction
  CUresult (*cuLaunchKernel)(CUfunction fn, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                             unsigned block_x, unsigned block_y, unsigned block_z,
                             unsigned shared_bytes, CUstream stream, void** params,
                             void** extra);  // cuLaunchKernel
  CUresult (*cuPointerGetAttribute)(void* data, int attribute,
                                    CUdeviceptr ptr);  // cuPointerGetAttribute
};

// ---- nvrtc.h ----
using nvrtcResult = int;
struct _nvrtcProgram;
using nvrtcProgram = _nvrtcProgram*;
inline constexpr nvrtcResult NVRTC_SUCCESS = 0;

struct NvrtcFunctions {
  nvrtcResult (*nvrtcVersion)(int* major, int* minor);
  const char* (*nvrtcGetErrorString)(nvrtcResult result);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram* prog, const char* source, const char* name,
                                    int num_headers, const char* const* headers,
                                    const char* const* include_names);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram* prog);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram prog, int num_options,
                                     const char* const* options);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram prog, size_t* size);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram prog, char* log);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram prog, size_t* size);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram prog, char* ptx);
  // NVRTC 11.1+; null when older (PTX is used then).
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram prog, size_t* size);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram prog, char* cubin);
  // NVRTC 11.2+; null when older.
  nvrtcResult (*nvrtcGetNumSupportedArchs)(int* count);
  nvrtcResult (*nvrtcGetSupportedArchs)(int* archs);
};

// ---- nccl.h ----
using ncclResult_t = int;
struct ncclComm;
using ncclComm_t = ncclComm*;
inline constexpr size_t kNcclUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
struct ncclUniqueId {
  char internal[kNcclUniqueIdBytes];
};
inline constexpr ncclResult_t ncclSuccess = 0;
inline constexpr ncclResult_t ncclInProgress = 7;  // NCCL 2.14+, non-blocking communicators

// ncclDataType_t
inline constexpr int ncclInt8 = 0;
inline constexpr int ncclUint8 = 1;
inline constexpr int ncclInt32 = 2;
inline constexpr int ncclInt64 = 4;
inline constexpr int ncclFloat16 = 6;
inline constexpr int ncclFloat32 = 7;
inline constexpr int ncclFloat64 = 8;
inline constexpr int ncclBfloat16 = 9;  // NCCL 2.10+
// ncclRedOp_t
inline constexpr int ncclSum = 0;
inline constexpr int ncclProd = 1;
inline constexpr int ncclMax = 2;
inline constexpr int ncclMin = 3;

// ncclConfig_t as NCCL 2.17 declares it (ncclConfig_v21700). NCCL reads a
// config by its `size` and `version` fields, so a newer library accepts this
// older layout; every field but `blocking` stays "undefined" (its default).
struct ncclConfig_v21700 {
  size_t size;
  unsigned magic;    // 0xcafebeef
  unsigned version;  // NCCL_VERSION(2, 17, 0) = 21700
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
};
inline constexpr int kNcclConfigUndefInt = INT32_MIN;  // NCCL_CONFIG_UNDEF_INT

struct NcclFunctions {
  ncclResult_t (*ncclGetVersion)(int* version);
  const char* (*ncclGetErrorString)(ncclResult_t result);
  ncclResult_t (*ncclGetUniqueId)(ncclUniqueId* id);
  ncclResult_t (*ncclCommInitRank)(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank);
  // NCCL 2.14+; null when older (then initialisation blocks).
  ncclResult_t (*ncclCommInitRankConfig)(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                         ncclConfig_v21700* config);
  ncclResult_t (*ncclCommDestroy)(ncclComm_t comm);
  ncclResult_t (*ncclCommAbort)(ncclComm_t comm);
  ncclResult_t (*ncclCommGetAsyncError)(ncclComm_t comm, ncclResult_t* result);
  ncclResult_t (*ncclAllReduce)(const void* send, void* recv, size_t count, int dtype, int op,
                                ncclComm_t comm, CUstream stream);
  ncclResult_t (*ncclBroadcast)(const void* send, void* recv, size_t count, int dtype, int root,
                                ncclComm_t comm, CUstream stream);
  ncclResult_t (*ncclAllGather)(const void* send, void* recv, size_t send_count, int dtype,
                                ncclComm_t comm, CUstream stream);
  ncclResult_t (*ncclReduceScatter)(const void* send, void* recv, size_t recv_count, int dtype,
                                    int op, ncclComm_t comm, CUstream stream);
};

}  // namespace cohort::gpu::abi

#endif  // COHORT_GPU_CUDA_DECLARATIONS_H_
