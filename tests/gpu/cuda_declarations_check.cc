// Compiled only where the CUDA toolkit's headers are (tests/gpu/CMakeLists.txt):
// checks src/gpu/cuda_declarations.h, our own declarations of the driver,
// NVRTC and NCCL entry points, against cuda.h, nvrtc.h and nccl.h: every
// function pointer has the header's arity and argument sizes and kinds, and
// every constant the header's value. A mismatch fails the build.
#include "gpu/cuda_declarations.h"

#include <cstddef>
#include <type_traits>

namespace a = cohort::gpu::abi;
// cuda.h #defines this one; keep ours before it is included.
constexpr unsigned kOurHostAllocPortable = a::CU_MEMHOSTALLOC_PORTABLE;

#include <cuda.h>
#include <nccl.h>
#include <nvrtc.h>

// cuda.h renames these to their _v2 symbols, which our fields name instead.
#undef cuDevicePrimaryCtxRelease
#undef cuMemAlloc
#undef cuMemFree
#undef cuStreamDestroy
#undef cuEventDestroy
#undef cuIpcOpenMemHandle

namespace {

template <typename X, typename Y>
constexpr bool SameArgument() {
  using x = std::remove_cv_t<X>;
  using y = std::remove_cv_t<Y>;
  if constexpr (std::is_pointer_v<x> || std::is_pointer_v<y>) {
    return std::is_pointer_v<x> && std::is_pointer_v<y>;
  } else if constexpr (std::is_class_v<x> || std::is_class_v<y>) {
    return std::is_class_v<x> && std::is_class_v<y> && sizeof(x) == sizeof(y);
  } else {
    return sizeof(x) == sizeof(y) && std::is_floating_point_v<x> == std::is_floating_point_v<y>;
  }
}

template <typename F, typename G>
struct SameAbi : std::false_type {};
template <typename R1, typename... A, typename R2, typename... B>
struct SameAbi<R1 (*)(A...), R2 (*)(B...)> {
  static constexpr bool value =
      sizeof...(A) == sizeof...(B) && SameArgument<R1, R2>() && (SameArgument<A, B>() && ...);
};

#define SAME(table, field, symbol)                                            \
  static_assert(SameAbi<decltype(a::table::field), decltype(&symbol)>::value, \
                #symbol " does not match its declaration in src/gpu/cuda_declarations.h")

SAME(DriverFunctions, cuInit, cuInit);
SAME(DriverFunctions, cuDriverGetVersion, cuDriverGetVersion);
SAME(DriverFunctions, cuGetErrorName, cuGetErrorName);
SAME(DriverFunctions, cuGetErrorString, cuGetErrorString);
SAME(DriverFunctions, cuDeviceGetCount, cuDeviceGetCount);
SAME(DriverFunctions, cuDeviceGet, cuDeviceGet);
SAME(DriverFunctions, cuDeviceGetName, cuDeviceGetName);
SAME(DriverFunctions, cuDeviceGetAttribute, cuDeviceGetAttribute);
SAME(DriverFunctions, cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain);
SAME(DriverFunctions, cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2);
SAME(DriverFunctions, cuCtxSetCurrent, cuCtxSetCurrent);
SAME(DriverFunctions, cuMemAlloc, cuMemAlloc_v2);
SAME(DriverFunctions, cuMemFree, cuMemFree_v2);
SAME(DriverFunctions, cuMemHostAlloc, cuMemHostAlloc);
SAME(DriverFunctions, cuMemFreeHost, cuMemFreeHost);
SAME(DriverFunctions, cuMemcpyAsync, cuMemcpyAsync);
SAME(DriverFunctions, cuStreamCreate, cuStreamCreate);
SAME(DriverFunctions, cuStreamDestroy, cuStreamDestroy_v2);
SAME(DriverFunctions, cuStreamWaitEvent, cuStreamWaitEvent);
SAME(DriverFunctions, cuEventCreate, cuEventCreate);
SAME(DriverFunctions, cuEventDestroy, cuEventDestroy_v2);
SAME(DriverFunctions, cuEventRecord, cuEventRecord);
SAME(DriverFunctions, cuEventQuery, cuEventQuery);
SAME(DriverFunctions, cuIpcGetMemHandle, cuIpcGetMemHandle);
SAME(DriverFunctions, cuIpcOpenMemHandle, cuIpcOpenMemHandle_v2);
SAME(DriverFunctions, cuIpcCloseMemHandle, cuIpcCloseMemHandle);
SAME(DriverFunctions, cuModuleLoadData, cuModuleLoadData);
SAME(DriverFunctions, cuModuleUnload, cuModuleUnload);
SAME(DriverFunctions, cuModuleGetFunction, cuModuleGetFunction);
SAME(DriverFunctions, cuLaunchKernel, cuLaunchKernel);
SAME(DriverFunctions, cuPointerGetAttribute, cuPointerGetAttribute);
SAME(NvrtcFunctions, nvrtcVersion, nvrtcVersion);
SAME(NvrtcFunctions, nvrtcGetErrorString, nvrtcGetErrorString);
SAME(NvrtcFunctions, nvrtcCreateProgram, nvrtcCreateProgram);
SAME(NvrtcFunctions, nvrtcDestroyProgram, nvrtcDestroyProgram);
SAME(NvrtcFunctions, nvrtcCompileProgram, nvrtcCompileProgram);
SAME(NvrtcFunctions, nvrtcGetProgramLogSize, nvrtcGetProgramLogSize);
SAME(NvrtcFunctions, nvrtcGetProgramLog, nvrtcGetProgramLog);
SAME(NvrtcFunctions, nvrtcGetPTXSize, nvrtcGetPTXSize);
SAME(NvrtcFunctions, nvrtcGetPTX, nvrtcGetPTX);
SAME(NvrtcFunctions, nvrtcGetCUBINSize, nvrtcGetCUBINSize);
SAME(NvrtcFunctions, nvrtcGetCUBIN, nvrtcGetCUBIN);
SAME(NvrtcFunctions, nvrtcGetNumSupportedArchs, nvrtcGetNumSupportedArchs);
SAME(NvrtcFunctions, nvrtcGetSupportedArchs, nvrtcGetSupportedArchs);
SAME(NcclFunctions, ncclGetVersion, ncclGetVersion);
SAME(NcclFunctions, ncclGetErrorString, ncclGetErrorString);
SAME(NcclFunctions, ncclGetUniqueId, ncclGetUniqueId);
SAME(NcclFunctions, ncclCommInitRank, ncclCommInitRank);
SAME(NcclFunctions, ncclCommInitRankConfig, ncclCommInitRankConfig);
SAME(NcclFunctions, ncclCommDestroy, ncclCommDestroy);
SAME(NcclFunctions, ncclCommAbort, ncclCommAbort);
SAME(NcclFunctions, ncclCommGetAsyncError, ncclCommGetAsyncError);
SAME(NcclFunctions, ncclAllReduce, ncclAllReduce);
SAME(NcclFunctions, ncclBroadcast, ncclBroadcast);
SAME(NcclFunctions, ncclAllGather, ncclAllGather);
SAME(NcclFunctions, ncclReduceScatter, ncclReduceScatter);

static_assert(kOurHostAllocPortable == CU_MEMHOSTALLOC_PORTABLE);
static_assert(a::CUDA_SUCCESS == ::CUDA_SUCCESS);
static_assert(a::CUDA_ERROR_NOT_READY == ::CUDA_ERROR_NOT_READY);
static_assert(a::CUDA_ERROR_NO_DEVICE == ::CUDA_ERROR_NO_DEVICE);
static_assert(a::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ==
              ::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
static_assert(a::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID == ::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
static_assert(a::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID == ::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
static_assert(a::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID == ::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
static_assert(a::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING ==
              ::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING);
static_assert(a::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ==
              ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
static_assert(a::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ==
              ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
static_assert(a::CU_POINTER_ATTRIBUTE_MEMORY_TYPE == ::CU_POINTER_ATTRIBUTE_MEMORY_TYPE);
static_assert(a::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL == ::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL);
static_assert(a::CU_MEMORYTYPE_HOST == ::CU_MEMORYTYPE_HOST);
static_assert(a::CU_MEMORYTYPE_DEVICE == ::CU_MEMORYTYPE_DEVICE);
static_assert(a::CU_STREAM_NON_BLOCKING == ::CU_STREAM_NON_BLOCKING);
static_assert(a::CU_EVENT_DISABLE_TIMING == ::CU_EVENT_DISABLE_TIMING);
static_assert(a::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS == ::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
static_assert(a::kIpcHandleSize == CU_IPC_HANDLE_SIZE);
static_assert(sizeof(a::CUipcMemHandle) == sizeof(::CUipcMemHandle));
static_assert(sizeof(a::CUdeviceptr) == sizeof(::CUdeviceptr));
static_assert(a::NVRTC_SUCCESS == ::NVRTC_SUCCESS);
static_assert(a::kNcclUniqueIdBytes == NCCL_UNIQUE_ID_BYTES);
static_assert(sizeof(a::ncclUniqueId) == sizeof(::ncclUniqueId));
static_assert(a::ncclSuccess == ::ncclSuccess && a::ncclInProgress == ::ncclInProgress);
static_assert(a::ncclInt8 == ::ncclInt8 && a::ncclUint8 == ::ncclUint8 &&
              a::ncclInt32 == ::ncclInt32 && a::ncclInt64 == ::ncclInt64);
static_assert(a::ncclFloat16 == ::ncclFloat16 && a::ncclFloat32 == ::ncclFloat32 &&
              a::ncclFloat64 == ::ncclFloat64 && a::ncclBfloat16 == ::ncclBfloat16);
static_assert(a::ncclSum == ::ncclSum && a::ncclProd == ::ncclProd && a::ncclMax == ::ncclMax &&
              a::ncclMin == ::ncclMin);
static_assert(a::kNcclConfigUndefInt == NCCL_CONFIG_UNDEF_INT);
// Our config is NCCL 2.17's layout, a prefix of every newer one.
static_assert(offsetof(a::ncclConfig_v21700, blocking) == offsetof(::ncclConfig_t, blocking));
static_assert(offsetof(a::ncclConfig_v21700, netName) == offsetof(::ncclConfig_t, netName));
static_assert(offsetof(a::ncclConfig_v21700, splitShare) == offsetof(::ncclConfig_t, splitShare));

}  // namespace
