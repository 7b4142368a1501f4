/* The part of NVIDIA's NVML API that accelsched-agent uses, declared as
 * NVIDIA's public nvml.h declares it (NVML 13.3.29, as vendored unchanged in
 * NVIDIA/go-nvml gen/nvml/nvml.h at 2f9e261; line numbers below are that
 * file's). The agent has no build-time NVML dependency: it dlopen()s
 * libnvidia-ml.so.1 and looks these symbols up by name. The tests' fake
 * library (tests/fake_nvml) implements the same prototypes, so the compiler
 * checks that the two agree. Plain C, so that the fake can include it. */
#ifndef ACCELSCHED_AGENT_NVML_API_H_
#define ACCELSCHED_AGENT_NVML_API_H_

#ifdef __cplusplus
extern "C" {
#endif

/* nvml.h 1292-1330. Values never change between NVML versions. */
typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

/* nvml.h 158, 160, 3132: opaque handles. */
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlGpuInstance_st* nvmlGpuInstance_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;

/* nvml.h 245-261 */
typedef struct nvmlUtilization_st {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

/* nvml.h 304-314: a process with a compute context (MIG re-layout checks
 * that none runs on an instance it destroys). */
typedef struct nvmlProcessInfo_v2_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t, nvmlProcessInfo_t;

/* nvml.h 884-888 */
typedef enum nvmlEnableState_enum {
  NVML_FEATURE_DISABLED = 0,
  NVML_FEATURE_ENABLED = 1
} nvmlEnableState_t;

/* nvml.h 165 and 170, 196-208: a device's PCI address. busId is
 * "domain:bus:device.function" as nvmlDeviceGetPciInfo_v3 spells it (an
 * NVLink's remote end is named the same way). */
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
typedef struct nvmlPciInfo_st {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

/* nvml.h 455: link indexes run from 0 below this; a GPU with fewer links
 * answers INVALID_ARGUMENT (or NOT_SUPPORTED) past its last. */
#define NVML_NVLINK_MAX_LINKS 36

/* nvml.h 532-538: what is at the other end of an NVLink. */
typedef enum nvmlIntNvLinkDeviceType_enum {
  NVML_NVLINK_DEVICE_TYPE_GPU = 0x00,
  NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01,
  NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02,
  NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF
} nvmlIntNvLinkDeviceType_t;

/* nvml.h 544-554: the nearest common ancestor of two GPUs on the PCIe tree
 * (spaced so that levels can be added between them). */
typedef enum nvmlGpuLevel_enum {
  NVML_TOPOLOGY_INTERNAL = 0,
  NVML_TOPOLOGY_SINGLE = 10,
  NVML_TOPOLOGY_MULTIPLE = 20,
  NVML_TOPOLOGY_HOSTBRIDGE = 30,
  NVML_TOPOLOGY_NODE = 40,
  NVML_TOPOLOGY_SYSTEM = 50
} nvmlGpuTopologyLevel_t;

/* nvml.h 962-968 */
typedef enum nvmlTemperatureSensors_enum {
  NVML_TEMPERATURE_GPU = 0,
  NVML_TEMPERATURE_COUNT
} nvmlTemperatureSensors_t;

/* nvml.h 4080, 4090, 4105 */
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80

/* nvml.h 3168 and 3225-3237 */
#define nvmlEventTypeXidCriticalError 0x0000000000000008LL
typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData; /* the XID */
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

/* nvml.h 12483-12530. Profile indexes, not profile ids: the header advises
 * iterating indexes from 0 until NVML_ERROR_INVALID_ARGUMENT, because
 * NVML_GPU_INSTANCE_PROFILE_COUNT grows with each release. */
#define NVML_DEVICE_MIG_ENABLE 0x1
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE 0x1
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE 0x2
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE 0x3
#define NVML_GPU_INSTANCE_PROFILE_7_SLICE 0x4
#define NVML_GPU_INSTANCE_PROFILE_8_SLICE 0x5
#define NVML_GPU_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 0x7
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 0x8
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 0x9
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX 0x0A
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX 0x0B
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX 0x0C
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME 0x0D
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME 0x0E
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME 0x0F
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME 0x10

/* nvml.h 12549-12571, 12631-12637 */
typedef struct nvmlGpuInstancePlacement_st {
  unsigned int start;
  unsigned int size;
} nvmlGpuInstancePlacement_t;

typedef struct nvmlGpuInstanceProfileInfo_st {
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

typedef struct nvmlGpuInstanceInfo_st {
  nvmlDevice_t device;
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

/* nvml.h 12645-12657: compute instance profile indexes (like the GPU
 * instance ones, iterated from 0 until NVML_ERROR_INVALID_ARGUMENT) and the
 * one engine profile. */
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE 0x1
#define NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE 0x2
#define NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE 0x3
#define NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE 0x4
#define NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE 0x5
#define NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 0x7
#define NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL 0x8
#define NVML_COMPUTE_INSTANCE_PROFILE_COUNT 0x9

#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0x0
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT 0x1

/* nvml.h 12668-12679 and 12745 */
typedef struct nvmlComputeInstanceProfileInfo_st {
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct nvmlComputeInstance_st* nvmlComputeInstance_t;

/* Prototypes (nvml.h line of each). Where nvml.h #defines the plain name to
 * a versioned symbol (nvml.h 118-139), the versioned one is declared. */
nvmlReturn_t nvmlInit_v2(void);                   /* 4002 */
nvmlReturn_t nvmlShutdown(void);                  /* 4036 */
const char* nvmlErrorString(nvmlReturn_t result); /* 4057 */
nvmlReturn_t nvmlSystemGetDriverVersion(char* version,
                                        unsigned int length);  /* 4194 */
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount); /* 4573 */
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                           nvmlDevice_t* device); /* 4641 */
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                               unsigned int length); /* 4784 */
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device,
                                unsigned int* index); /* 4837 */
nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(
    nvmlDevice_t device1, nvmlDevice_t device2,
    nvmlGpuTopologyLevel_t* pathInfo); /* 5123 */
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                               unsigned int length); /* 5186 */
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device,
                                     nvmlPciInfo_t* pci); /* 5471 */
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device,
                                      nvmlTemperatureSensors_t sensorType,
                                      unsigned int* temp); /* 5958 */
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device,
                                     unsigned int* power); /* 6558 */
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
                                     nvmlMemory_t* memory); /* 6708 */
nvmlReturn_t nvmlDeviceGetUtilizationRates(
    nvmlDevice_t device, nvmlUtilization_t* utilization); /* 7088 */
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(
    nvmlDevice_t device, unsigned int* infoCount,
    nvmlProcessInfo_t* infos); /* 7402 */
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(
    nvmlDevice_t device, nvmlEnableState_t* isPending); /* 8407 */
nvmlReturn_t nvmlDeviceGetRemappedRows(
    nvmlDevice_t device, unsigned int* corrRows, unsigned int* uncRows,
    unsigned int* isPending, unsigned int* failureOccurred); /* 8434 */
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t* isActive); /* 9506 */
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
                                                 unsigned int link,
                                                 nvmlPciInfo_t* pci); /* 9565 */
nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(
    nvmlDevice_t device, unsigned int link,
    nvmlIntNvLinkDeviceType_t* pNvLinkDeviceType);    /* 9742 */
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set); /* 9882 */
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                      unsigned long long eventTypes,
                                      nvmlEventSet_t set); /* 9918 */
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                 unsigned int timeoutms); /* 9979 */
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);        /* 9995 */
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device,
                                  unsigned int* currentMode,
                                  unsigned int* pendingMode); /* 12803 */
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(
    nvmlDevice_t device, unsigned int profile,
    nvmlGpuInstanceProfileInfo_t* info); /* 12827 */
nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profileId,
    nvmlGpuInstancePlacement_t* placements, unsigned int* count); /* 12918 */
nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profileId,
    const nvmlGpuInstancePlacement_t* placement,
    nvmlGpuInstance_t* gpuInstance);                                /* 12992 */
nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance); /* 13014 */
nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device,
                                       unsigned int profileId,
                                       nvmlGpuInstance_t* gpuInstances,
                                       unsigned int* count); /* 13037 */
nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance,
                                    nvmlGpuInstanceInfo_t* info); /* 13076 */
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gpuInstance, unsigned int profile,
    unsigned int engProfile,
    nvmlComputeInstanceProfileInfo_t* info); /* 13101 */
nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    nvmlComputeInstance_t* computeInstance); /* 13217 */
nvmlReturn_t nvmlComputeInstanceDestroy(
    nvmlComputeInstance_t computeInstance); /* 13267 */
nvmlReturn_t nvmlGpuInstanceGetComputeInstances(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    nvmlComputeInstance_t* computeInstances, unsigned int* count); /* 13292 */
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device,
                                        unsigned int* id); /* 13374 */
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                            unsigned int* count); /* 13414 */
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(
    nvmlDevice_t device, unsigned int index,
    nvmlDevice_t* migDevice); /* 13440 */

#ifdef __cplusplus
}
#endif

#endif /* ACCELSCHED_AGENT_NVML_API_H_ */
