/* A fake libnvidia-ml for the agent's tests: the NVML functions the agent
 * calls (agent/nvml_api.h, whose prototypes this file implements), answering
 * from a scenario file named by $FAKE_NVML_SCENARIO. The file is re-read
 * whenever the agent counts the GPUs (every discovery pass), so a test
 * changes the machine by replacing the file (write, then rename):
 *
 *   # whole GPU
 *   gpu uuid=GPU-1 name="NVIDIA H100 80GB HBM3" memory_mib=81559 used_mib=512
 *       util=35 temp=41 power_mw=250000
 *   # MIG mode, with GPU instances (profile: an NVML_GPU_INSTANCE_PROFILE_*
 *   # index; gi: the GPU instance id; ci=0: no compute instance)
 *   gpu uuid=GPU-2 name="NVIDIA A100-SXM4-40GB" memory_mib=40960 mig=1
 *   mig gpu=1 uuid=MIG-2a profile=0 mem_mib=4864 start=0 gi=7 used_mib=10
 *   # health: lost=1 (GPU_IS_LOST on its handle), broken=1 (its handle, UUID
 *   # and name still read, every other query GPU_IS_LOST, as NVML answers for
 *   # a GPU that fell off the bus), retired_pending=1, remap_failure=1,
 *   # xid=79 (one XID event each time the file changes)
 *
 * (one line per gpu or mig; `gpu=` is the GPU's line order from 0.) Set
 * $FAKE_NVML_INIT_ERROR to make nvmlInit_v2 fail with DRIVER_NOT_LOADED.
 * Single-threaded, as the agent's loop is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/nvml_api.h"

#define MAX_GPUS 16
#define MAX_MIGS 8
#define MAX_TEXT 65536
/* Profile ids differ from profile indexes, as NVML allows: the agent must
 * pass info.id, not the index, to nvmlDeviceGetGpuInstances. */
#define PROFILE_ID_OFFSET 20
#define PROFILE_INDEXES 18

struct nvmlDevice_st {
  int is_mig;
  int gpu; /* index of the parent (for a MIG device) or self */
  int mig;
};
struct nvmlGpuInstance_st {
  int gpu;
  int mig;
};
struct nvmlEventSet_st {
  int unused;
};

typedef struct {
  char uuid[96];
  unsigned int profile, gi, ci, start;
  unsigned long long mem_mib, used_mib;
  struct nvmlDevice_st handle;
  struct nvmlGpuInstance_st gi_handle;
} Mig;

typedef struct {
  char uuid[96], name[96];
  unsigned long long memory_mib, used_mib;
  unsigned int util, temp, power_mw, mig, lost, broken, retired_pending,
      remap_failure, xid, xid_pending;
  Mig migs[MAX_MIGS];
  int mig_count;
  struct nvmlDevice_st handle;
} Gpu;

static Gpu gpus[MAX_GPUS];
static int gpu_count;
static char last_text[MAX_TEXT];
static struct nvmlEventSet_st event_set;

/* Copies the value of `key` in `line` (quoted or not) into `out`; 1 if
 * found. */
static int field(const char* line, const char* key, char* out, size_t size) {
  size_t klen = strlen(key);
  const char* p = line;
  while ((p = strstr(p, key)) != NULL) {
    if ((p == line || p[-1] == ' ' || p[-1] == '\t') && p[klen] == '=') {
      const char* v = p + klen + 1;
      size_t n = 0;
      if (*v == '"') {
        ++v;
        while (v[n] && v[n] != '"') ++n;
      } else {
        while (v[n] && v[n] != ' ' && v[n] != '\t' && v[n] != '\n') ++n;
      }
      if (n >= size) n = size - 1;
      memcpy(out, v, n);
      out[n] = '\0';
      return 1;
    }
    p += klen;
  }
  return 0;
}

static unsigned long long number(const char* line, const char* key) {
  char v[64];
  return field(line, key, v, sizeof(v)) ? strtoull(v, NULL, 10) : 0;
}

/* Re-reads the scenario; keeps the last one when the file cannot be read. */
static void load(void) {
  const char* path = getenv("FAKE_NVML_SCENARIO");
  static char text[MAX_TEXT];
  FILE* f = path ? fopen(path, "r") : NULL;
  if (f == NULL) return;
  size_t n = fread(text, 1, sizeof(text) - 1, f);
  fclose(f);
  text[n] = '\0';
  if (strcmp(text, last_text) == 0) return;
  memcpy(last_text, text, n + 1);
  gpu_count = 0;
  memset(gpus, 0, sizeof(gpus));
  char* save = NULL;
  for (char* line = strtok_r(text, "\n", &save); line != NULL;
       line = strtok_r(NULL, "\n", &save)) {
    while (*line == ' ' || *line == '\t') ++line;
    if (strncmp(line, "gpu ", 4) == 0 && gpu_count < MAX_GPUS) {
      Gpu* g = &gpus[gpu_count];
      field(line, "uuid", g->uuid, sizeof(g->uuid));
      field(line, "name", g->name, sizeof(g->name));
      g->memory_mib = number(line, "memory_mib");
      g->used_mib = number(line, "used_mib");
      g->util = (unsigned int)number(line, "util");
      g->temp = (unsigned int)number(line, "temp");
      g->power_mw = (unsigned int)number(line, "power_mw");
      g->mig = (unsigned int)number(line, "mig");
      g->lost = (unsigned int)number(line, "lost");
      g->broken = (unsigned int)number(line, "broken");
      g->retired_pending = (unsigned int)number(line, "retired_pending");
      g->remap_failure = (unsigned int)number(line, "remap_failure");
      g->xid = (unsigned int)number(line, "xid");
      g->xid_pending = g->xid != 0;
      g->handle.gpu = gpu_count;
      ++gpu_count;
    } else if (strncmp(line, "mig ", 4) == 0) {
      unsigned long long gpu = number(line, "gpu");
      if (gpu >= (unsigned long long)gpu_count) continue;
      Gpu* g = &gpus[gpu];
      if (g->mig_count >= MAX_MIGS) continue;
      Mig* m = &g->migs[g->mig_count];
      char ci[16];
      field(line, "uuid", m->uuid, sizeof(m->uuid));
      m->profile = (unsigned int)number(line, "profile");
      m->gi = (unsigned int)number(line, "gi");
      m->ci = field(line, "ci", ci, sizeof(ci)) ? (unsigned int)atoi(ci) : 1;
      m->start = (unsigned int)number(line, "start");
      m->mem_mib = number(line, "mem_mib");
      m->used_mib = number(line, "used_mib");
      m->handle.is_mig = 1;
      m->handle.gpu = (int)gpu;
      m->handle.mig = g->mig_count;
      m->gi_handle.gpu = (int)gpu;
      m->gi_handle.mig = g->mig_count;
      ++g->mig_count;
    }
  }
}

static Gpu* gpu_of(nvmlDevice_t d) {
  return d == NULL || d->gpu < 0 || d->gpu >= gpu_count ? NULL : &gpus[d->gpu];
}

/* The GPU of `d` for a query other than its handle, UUID or name; sets
 * `*r` to GPU_IS_LOST (broken GPU) or INVALID_ARGUMENT and returns NULL when
 * the query fails. */
static Gpu* live(nvmlDevice_t d, nvmlReturn_t* r) {
  Gpu* g = gpu_of(d);
  if (g == NULL) {
    *r = NVML_ERROR_INVALID_ARGUMENT;
    return NULL;
  }
  if (g->broken) {
    *r = NVML_ERROR_GPU_IS_LOST;
    return NULL;
  }
  return g;
}

static Mig* mig_of(nvmlDevice_t d) {
  Gpu* g = gpu_of(d);
  return g == NULL || !d->is_mig || d->mig >= g->mig_count ? NULL
                                                           : &g->migs[d->mig];
}

static nvmlReturn_t copy(const char* s, char* out, unsigned int length) {
  if (out == NULL || strlen(s) + 1 > length)
    return NVML_ERROR_INSUFFICIENT_SIZE;
  strcpy(out, s);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void) {
  if (getenv("FAKE_NVML_INIT_ERROR") != NULL) {
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  load();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) { return NVML_SUCCESS; }

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    default:
      return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return copy("fake-nvml", version, length);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  load();
  *deviceCount = (unsigned int)gpu_count;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                           nvmlDevice_t* device) {
  if (index >= (unsigned int)gpu_count) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpus[index].lost) return NVML_ERROR_GPU_IS_LOST;
  *device = &gpus[index].handle;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                               unsigned int length) {
  Gpu* g = gpu_of(device);
  return g ? copy(g->name, name, length) : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  if (gpu_of(device) == NULL || device->is_mig) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *index = (unsigned int)device->gpu;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                               unsigned int length) {
  Mig* m = mig_of(device);
  if (m != NULL) return copy(m->uuid, uuid, length);
  Gpu* g = gpu_of(device);
  return g ? copy(g->uuid, uuid, length) : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device,
                                      nvmlTemperatureSensors_t sensorType,
                                      unsigned int* temp) {
  nvmlReturn_t r;
  Gpu* g = live(device, &r);
  if (g == NULL) return r;
  if (sensorType != NVML_TEMPERATURE_GPU) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *temp = g->temp;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  nvmlReturn_t r;
  Gpu* g = live(device, &r);
  if (g == NULL) return r;
  *power = g->power_mw;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
                                     nvmlMemory_t* memory) {
  const unsigned long long mib = 1024ull * 1024;
  Mig* m = mig_of(device);
  nvmlReturn_t r;
  Gpu* g = live(device, &r);
  if (g == NULL) return r;
  memory->total = (m ? m->mem_mib : g->memory_mib) * mib;
  memory->used = (m ? m->used_mib : g->used_mib) * mib;
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                           nvmlUtilization_t* utilization) {
  nvmlReturn_t r;
  Gpu* g = live(device, &r);
  if (g == NULL) return r;
  /* nvml.h 7075: not supported on MIG-enabled GPUs. */
  if (g->mig) return NVML_ERROR_NOT_SUPPORTED;
  utilization->gpu = g->util;
  utilization->memory = 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(
    nvmlDevice_t device, nvmlEnableState_t* isPending) {
  nvmlReturn_t r;
  Gpu* g = live(device, &r);
  if (g == NULL) return r;
  *isPending =
      g->retired_pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device,
                                       unsigned int* corrRows,
                                       unsigned int* uncRows,
                                       unsigned int* isPending,
                                       unsigned int* failureOccurred) {
  nvmlReturn_t r;
  Gpu* g = live(device, &r);
  if (g == NULL) return r;
  if (g->mig) return NVML_ERROR_NOT_SUPPORTED; /* nvml.h 8422-8423 */
  *corrRows = *uncRows = *isPending = 0;
  *failureOccurred = g->remap_failure;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  *set = &event_set;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                      unsigned long long eventTypes,
                                      nvmlEventSet_t set) {
  if (gpu_of(device) == NULL || set != &event_set) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return eventTypes == nvmlEventTypeXidCriticalError ? NVML_SUCCESS
                                                     : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                 unsigned int timeoutms) {
  (void)timeoutms;
  if (set != &event_set || data == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < gpu_count; ++i) {
    if (gpus[i].xid_pending) {
      gpus[i].xid_pending = 0;
      data->device = &gpus[i].handle;
      data->eventType = nvmlEventTypeXidCriticalError;
      data->eventData = gpus[i].xid;
      data->gpuInstanceId = 0xFFFFFFFFu;
      data->computeInstanceId = 0xFFFFFFFFu;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_TIMEOUT;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  return set == &event_set ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device,
                                  unsigned int* currentMode,
                                  unsigned int* pendingMode) {
  nvmlReturn_t r;
  Gpu* g = live(device, &r);
  if (g == NULL) return r;
  *currentMode = *pendingMode = g->mig;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(
    nvmlDevice_t device, unsigned int profile,
    nvmlGpuInstanceProfileInfo_t* info) {
  nvmlReturn_t r;
  Gpu* g = live(device, &r);
  if (g == NULL) return r;
  if (profile >= PROFILE_INDEXES) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (!g->mig) return NVML_ERROR_NOT_SUPPORTED;
  for (int i = 0; i < g->mig_count; ++i) {
    if (g->migs[i].profile == profile) {
      memset(info, 0, sizeof(*info));
      info->id = profile + PROFILE_ID_OFFSET;
      info->instanceCount = MAX_MIGS;
      info->memorySizeMB = g->migs[i].mem_mib;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device,
                                       unsigned int profileId,
                                       nvmlGpuInstance_t* gpuInstances,
                                       unsigned int* count) {
  nvmlReturn_t r;
  Gpu* g = live(device, &r);
  if (g == NULL) return r;
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  /* The caller's array holds instanceCount (MAX_MIGS) entries. */
  unsigned int n = 0;
  for (int i = 0; i < g->mig_count && n < MAX_MIGS; ++i) {
    if (g->migs[i].profile + PROFILE_ID_OFFSET == profileId) {
      gpuInstances[n++] = &g->migs[i].gi_handle;
    }
  }
  *count = n;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance,
                                    nvmlGpuInstanceInfo_t* info) {
  if (gpuInstance == NULL || gpuInstance->gpu >= gpu_count) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  Gpu* g = &gpus[gpuInstance->gpu];
  Mig* m = &g->migs[gpuInstance->mig];
  info->device = &g->handle;
  info->id = m->gi;
  info->profileId = m->profile + PROFILE_ID_OFFSET;
  info->placement.start = m->start;
  info->placement.size = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  Mig* m = mig_of(device);
  if (m == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *id = m->gi;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                            unsigned int* count) {
  nvmlReturn_t r;
  Gpu* g = live(device, &r);
  if (g == NULL) return r;
  *count = g->mig ? 7 : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                 unsigned int index,
                                                 nvmlDevice_t* migDevice) {
  nvmlReturn_t r;
  Gpu* g = live(device, &r);
  if (g == NULL) return r;
  if (!g->mig) return NVML_ERROR_INVALID_ARGUMENT;
  /* A GPU instance without a compute instance has no MIG device. */
  unsigned int seen = 0;
  for (int i = 0; i < g->mig_count; ++i) {
    if (g->migs[i].ci == 0) continue;
    if (seen++ == index) {
      *migDevice = &g->migs[i].handle;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}
