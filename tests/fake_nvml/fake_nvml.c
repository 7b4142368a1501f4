/* A fake libnvidia-ml for the agent's tests: the NVML functions the agent
 * calls (agent/nvml_api.h, whose prototypes this file implements), answering
 * from a scenario file named by $FAKE_NVML_SCENARIO. The file is re-read
 * whenever the agent counts the GPUs (every discovery pass, and the start of
 * every MIG re-layout), so a test changes the machine by replacing the file
 * (write, then rename):
 *
 *   # whole GPU
 *   gpu uuid=GPU-1 name="NVIDIA H100 80GB HBM3" memory_mib=81559 used_mib=512
 *       util=35 temp=41 power_mw=250000
 *   # MIG mode, with GPU instances (profile: an NVML_GPU_INSTANCE_PROFILE_*
 *   # index; gi: the GPU instance id; start: its placement's first memory
 *   # slice; ci=0: no compute instance, hence no MIG device and no uuid;
 *   # procs=N: N compute processes run on its MIG device)
 *   gpu uuid=GPU-2 name="NVIDIA A100-SXM4-40GB" memory_mib=40960 mig=1
 *   mig gpu=1 uuid=MIG-2a profile=0 mem_mib=4864 start=0 gi=7 used_mib=10
 *   # health: lost=1 (GPU_IS_LOST on its handle), broken=1 (its handle, UUID
 *   # and name still read, every other query GPU_IS_LOST, as NVML answers for
 *   # a GPU that fell off the bus), retired_pending=1, remap_failure=1,
 *   # xid=79 (one XID event each time the file changes)
 *   # an injected failure: every call of `call` (optionally only on GPU
 *   # `gpu`, only for the instance or placement starting at `start`, only
 *   # the next `times` calls) returns nvmlReturn_t `error`
 *   fail call=nvmlDeviceCreateGpuInstanceWithPlacement error=23 gpu=0 start=4
 *       times=1
 *
 * (one line per gpu, mig, nvlink or fail; `gpu=` is the GPU's line order
 * from 0.)
 *
 * Topology. Each GPU answers nvmlDeviceGetPciInfo_v3 with bus id
 * "00000000:XX:00.0", XX = 0x1A + its line order in upper-case hex (a bus id
 * a GPU alone has). Optional gpu keys place it:
 *
 *   gpu uuid=GPU-0 name=g memory_mib=1 pcie_switch=0 numa=0 nvswitch_links=18
 *   # 12 direct NVLinks between GPUs 0 and 2
 *   nvlink a=0 b=2 links=12
 *
 * nvmlDeviceGetTopologyCommonAncestor(a, b): NOT_SUPPORTED when either GPU
 * has neither pcie_switch nor numa; else SINGLE for the same pcie_switch,
 * NODE for the same numa, SYSTEM otherwise. NVLinks: a GPU's link slots are
 * filled in order, first its nvswitch_links links to an NVSwitch (remote type
 * SWITCH, remote bus id 00000000:C0:00.0 to C3, a bus no GPU has), then its
 * direct links in nvlink-line order (remote type GPU, remote bus id the
 * peer's in lower case, as the agent must match either case). A GPU has 18
 * link slots, as an older GPU has (NVML_NVLINK_MAX_LINKS is 36): a used slot
 * is ENABLED, an unused one DISABLED, or NOT_SUPPORTED on a GPU without any
 * NVLink; a link index of 18 or more is INVALID_ARGUMENT, and links beyond
 * the 18th are dropped. On the NVLink functions a `fail` line's `start` is
 * the link index.
 *
 * MIG geometry. A GPU in MIG mode offers the GPU instance profiles of an
 * A100 or H100 (nvidia-smi mig -lgip / -lgipp): indexes 0 (1g, placements
 * 0-6, one memory slice of eight), 1 (2g: 0, 2, 4; two), 2 (3g: 0, 4; four),
 * 3 (4g: 0; four), 4 (7g: 0; eight), 7 (1g+me: 0-6; one, one instance) and 9
 * (1g REV2: 0, 2, 4, 6; two), plus any other index a `mig` line uses. A
 * profile's memory is the `mem_mib` of the GPU's first `mig` line of that
 * profile, else its memory slices' eighths of the GPU's memory_mib. Profile
 * ids differ from indexes (index + 20; compute instance profiles index + 40),
 * as NVML allows. Compute instance profiles 0-4 (1, 2, 3, 4 and 7 slices)
 * are offered on a GPU instance of at least as many slices; the fake models
 * one compute instance over its whole GPU instance only, and refuses
 * creating a smaller one (NOT_SUPPORTED).
 *
 * Creating and destroying instances checks what a GPU checks: a GPU
 * instance's placement start must be one of its profile's and its size the
 * profile's memory slices (INVALID_ARGUMENT), it must not overlap another
 * instance and its profile must have instances left (INSUFFICIENT_RESOURCES);
 * a GPU instance with a compute instance, or a compute instance with a
 * process, is IN_USE. A new GPU instance gets the lowest free gi id from 1; a
 * new compute instance a MIG device named MIG-<GPU uuid without "GPU-">-
 * <profile>-<start>.
 *
 * Persistence: instances live on the (fake) GPU, not in the process. After
 * every change the fake makes itself (an instance created or destroyed, an
 * injected failure used up) it writes the scenario file back (write, then
 * rename): the lines other than mig, fail and stats as they were, then one
 * `mig` line per GPU instance, the `fail` lines still armed, and
 *
 *   stats gi_created=N gi_destroyed=N ci_created=N ci_destroyed=N
 *
 * counting the changes made since the file was first written by a test (kept
 * across reloads, so a test can tell that nothing was done twice). Reading
 * its own write back changes nothing; a test that replaces the file replaces
 * the machine, as before. So an agent restarted in the middle of a
 * re-layout (a new dlopen of this library) finds the instances as its
 * predecessor left them, as on a real GPU.
 *
 * Set $FAKE_NVML_INIT_ERROR to make nvmlInit_v2 fail with DRIVER_NOT_LOADED.
 * Single-threaded, as the agent's loop is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/nvml_api.h"

#define MAX_GPUS 16
#define MAX_MIGS 8 /* GPU instance slots per GPU */
#define MAX_FAILS 16
#define MAX_NVLINKS 64 /* nvlink lines */
#define NVLINK_SLOTS 18
#define NVSWITCHES 4
#define MAX_TEXT 65536
#define MAX_LINE 1024
#define PROFILE_ID_OFFSET 20
#define PROFILE_INDEXES 18
#define CI_PROFILE_ID_OFFSET 40
#define CI_PROFILES_OFFERED 5 /* NVML_COMPUTE_INSTANCE_PROFILE_1..7_SLICE */
#define MEMORY_SLICES 8

struct nvmlDevice_st {
  int is_mig;
  int gpu; /* index of the parent (for a MIG device) or self */
  int mig;
};
struct nvmlGpuInstance_st {
  int gpu;
  int mig;
};
struct nvmlComputeInstance_st {
  int gpu;
  int mig;
};
struct nvmlEventSet_st {
  int unused;
};

/* Each GPU instance profile index: compute slices, memory slices, placement
 * starts (bit n: start n), instances at most, and whether every MIG GPU
 * offers it. */
typedef struct {
  unsigned int slices, memory_slices, starts, count, standard;
} GiShape;
static const GiShape gi_shapes[PROFILE_INDEXES] = {
    {1, 1, 0x7f, 7, 1}, /* 0 1_SLICE */
    {2, 2, 0x15, 3, 1}, /* 1 2_SLICE */
    {3, 4, 0x11, 2, 1}, /* 2 3_SLICE */
    {4, 4, 0x01, 1, 1}, /* 3 4_SLICE */
    {7, 8, 0x01, 1, 1}, /* 4 7_SLICE */
    {8, 8, 0x01, 1, 0}, /* 5 8_SLICE */
    {6, 8, 0x01, 1, 0}, /* 6 6_SLICE */
    {1, 1, 0x7f, 1, 1}, /* 7 1_SLICE_REV1 (+me) */
    {2, 2, 0x15, 1, 0}, /* 8 2_SLICE_REV1 */
    {1, 2, 0x55, 4, 1}, /* 9 1_SLICE_REV2 */
    {1, 1, 0x7f, 7, 0}, /* 10 1_SLICE_GFX */
    {2, 2, 0x15, 3, 0}, /* 11 2_SLICE_GFX */
    {4, 4, 0x01, 1, 0}, /* 12 4_SLICE_GFX */
    {1, 1, 0x7f, 7, 0}, /* 13 1_SLICE_NO_ME */
    {2, 2, 0x15, 3, 0}, /* 14 2_SLICE_NO_ME */
    {1, 1, 0x7f, 1, 0}, /* 15 1_SLICE_ALL_ME */
    {2, 2, 0x15, 1, 0}, /* 16 2_SLICE_ALL_ME */
    {3, 4, 0x11, 2, 0}, /* 17 3_SLICE_GFX */
};
/* Compute slices of each compute instance profile index. */
static const unsigned int ci_slices[NVML_COMPUTE_INSTANCE_PROFILE_COUNT] = {
    1, 2, 3, 4, 7, 8, 6, 1, 7};

typedef struct {
  int used;
  char uuid[96];
  unsigned int profile, gi, ci, start, procs;
  unsigned long long mem_mib, used_mib;
  struct nvmlDevice_st handle;
  struct nvmlGpuInstance_st gi_handle;
  struct nvmlComputeInstance_st ci_handle;
} Mig;

typedef struct {
  char uuid[96], name[96];
  unsigned long long memory_mib, used_mib;
  unsigned int util, temp, power_mw, mig, lost, broken, retired_pending,
      remap_failure, xid, xid_pending;
  int pcie_switch, numa; /* -1: not given */
  unsigned int nvswitch_links;
  Mig migs[MAX_MIGS];
  /* Per profile index: memory, and instances in the file when loaded. */
  unsigned long long profile_mem[PROFILE_INDEXES];
  unsigned int profile_loaded[PROFILE_INDEXES];
  struct nvmlDevice_st handle;
} Gpu;

/* `links` direct NVLinks between GPUs `a` and `b`. */
typedef struct {
  int a, b;
  unsigned int links;
} NvLink;

typedef struct {
  char call[64];
  int error, gpu, start, times; /* gpu, start, times: -1 for any, always */
} Fail;

static Gpu gpus[MAX_GPUS];
static int gpu_count;
static Fail fails[MAX_FAILS];
static int fail_count;
static NvLink nvlinks[MAX_NVLINKS];
static int nvlink_count;
static unsigned long long gi_created, gi_destroyed, ci_created, ci_destroyed;
/* The file's lines other than mig, fail and stats, as they were. */
static char other_lines[MAX_TEXT];
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

/* `key`'s value, or `otherwise` when the line has none. */
static int number_or(const char* line, const char* key, int otherwise) {
  char v[64];
  return field(line, key, v, sizeof(v)) ? atoi(v) : otherwise;
}

static void append(char* out, size_t* n, const char* text) {
  size_t len = strlen(text);
  if (*n + len >= MAX_TEXT) return;
  memcpy(out + *n, text, len + 1);
  *n += len;
}

static void set_handles(int gpu, int slot) {
  Mig* m = &gpus[gpu].migs[slot];
  m->handle.is_mig = 1;
  m->handle.gpu = gpu;
  m->handle.mig = slot;
  m->gi_handle.gpu = m->ci_handle.gpu = gpu;
  m->gi_handle.mig = m->ci_handle.mig = slot;
}

/* Writes the machine back to the scenario file (see the top). */
static void save(void) {
  const char* path = getenv("FAKE_NVML_SCENARIO");
  static char text[MAX_TEXT];
  char line[MAX_LINE];
  size_t n = 0;
  text[0] = '\0';
  append(text, &n, other_lines);
  for (int g = 0; g < gpu_count; ++g) {
    for (int i = 0; i < MAX_MIGS; ++i) {
      const Mig* m = &gpus[g].migs[i];
      if (!m->used) continue;
      snprintf(line, sizeof(line),
               "mig gpu=%d uuid=%s profile=%u mem_mib=%llu start=%u gi=%u "
               "ci=%u used_mib=%llu procs=%u\n",
               g, m->uuid, m->profile, m->mem_mib, m->start, m->gi, m->ci,
               m->used_mib, m->procs);
      append(text, &n, line);
    }
  }
  for (int i = 0; i < fail_count; ++i) {
    const Fail* f = &fails[i];
    if (f->times == 0) continue;
    snprintf(line, sizeof(line), "fail call=%.63s error=%d", f->call, f->error);
    append(text, &n, line);
    if (f->gpu >= 0) {
      snprintf(line, sizeof(line), " gpu=%d", f->gpu);
      append(text, &n, line);
    }
    if (f->start >= 0) {
      snprintf(line, sizeof(line), " start=%d", f->start);
      append(text, &n, line);
    }
    if (f->times > 0) {
      snprintf(line, sizeof(line), " times=%d", f->times);
      append(text, &n, line);
    }
    append(text, &n, "\n");
  }
  snprintf(line, sizeof(line),
           "stats gi_created=%llu gi_destroyed=%llu ci_created=%llu "
           "ci_destroyed=%llu\n",
           gi_created, gi_destroyed, ci_created, ci_destroyed);
  append(text, &n, line);
  memcpy(last_text, text, n + 1);
  if (path == NULL) return;
  char tmp[4096];
  snprintf(tmp, sizeof(tmp), "%s.fake-nvml-tmp", path);
  FILE* f = fopen(tmp, "w");
  if (f == NULL) return;
  fwrite(text, 1, n, f);
  fclose(f);
  rename(tmp, path);
}

/* Re-reads the scenario; keeps the last one when the file cannot be read,
 * or when it is what the fake last read or wrote. */
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
  fail_count = 0;
  nvlink_count = 0;
  gi_created = gi_destroyed = ci_created = ci_destroyed = 0;
  memset(gpus, 0, sizeof(gpus));
  size_t other = 0;
  other_lines[0] = '\0';
  char* save_ptr = NULL;
  for (char* line = strtok_r(text, "\n", &save_ptr); line != NULL;
       line = strtok_r(NULL, "\n", &save_ptr)) {
    while (*line == ' ' || *line == '\t') ++line;
    if (strncmp(line, "mig ", 4) == 0) {
      unsigned long long gpu = number(line, "gpu");
      if (gpu >= (unsigned long long)gpu_count) continue;
      Gpu* g = &gpus[gpu];
      int slot = 0;
      while (slot < MAX_MIGS && g->migs[slot].used) ++slot;
      if (slot == MAX_MIGS) continue;
      Mig* m = &g->migs[slot];
      m->used = 1;
      field(line, "uuid", m->uuid, sizeof(m->uuid));
      m->profile = (unsigned int)number(line, "profile");
      m->gi = (unsigned int)number(line, "gi");
      m->ci = (unsigned int)number_or(line, "ci", 1);
      m->start = (unsigned int)number(line, "start");
      m->mem_mib = number(line, "mem_mib");
      m->used_mib = number(line, "used_mib");
      m->procs = (unsigned int)number(line, "procs");
      set_handles((int)gpu, slot);
      if (m->profile < PROFILE_INDEXES) {
        ++g->profile_loaded[m->profile];
        if (g->profile_mem[m->profile] == 0) {
          g->profile_mem[m->profile] = m->mem_mib;
        }
      }
      continue;
    }
    if (strncmp(line, "fail ", 5) == 0) {
      if (fail_count == MAX_FAILS) continue;
      Fail* fl = &fails[fail_count++];
      field(line, "call", fl->call, sizeof(fl->call));
      fl->error = number_or(line, "error", NVML_ERROR_UNKNOWN);
      fl->gpu = number_or(line, "gpu", -1);
      fl->start = number_or(line, "start", -1);
      fl->times = number_or(line, "times", -1);
      continue;
    }
    if (strncmp(line, "stats ", 6) == 0) {
      gi_created = number(line, "gi_created");
      gi_destroyed = number(line, "gi_destroyed");
      ci_created = number(line, "ci_created");
      ci_destroyed = number(line, "ci_destroyed");
      continue;
    }
    append(other_lines, &other, line);
    append(other_lines, &other, "\n");
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
      g->pcie_switch = number_or(line, "pcie_switch", -1);
      g->numa = number_or(line, "numa", -1);
      g->nvswitch_links = (unsigned int)number(line, "nvswitch_links");
      g->handle.gpu = gpu_count;
      ++gpu_count;
    }
    if (strncmp(line, "nvlink ", 7) == 0 && nvlink_count < MAX_NVLINKS) {
      NvLink* l = &nvlinks[nvlink_count++];
      l->a = number_or(line, "a", -1);
      l->b = number_or(line, "b", -1);
      l->links = (unsigned int)number(line, "links");
    }
  }
  for (int i = 0; i < gpu_count; ++i) {
    for (int p = 0; p < PROFILE_INDEXES; ++p) {
      if (gpus[i].profile_mem[p] == 0) {
        gpus[i].profile_mem[p] =
            gpus[i].memory_mib * gi_shapes[p].memory_slices / MEMORY_SLICES;
      }
    }
  }
}

/* The error an armed `fail` line injects into `call` on GPU `gpu` at
 * `start` (-1: no instance), using up one of its `times`; NVML_SUCCESS when
 * none. */
static nvmlReturn_t injected(const char* call, int gpu, int start) {
  for (int i = 0; i < fail_count; ++i) {
    Fail* f = &fails[i];
    if (f->times == 0 || strcmp(f->call, call) != 0 ||
        (f->gpu >= 0 && f->gpu != gpu) ||
        (f->start >= 0 && f->start != start)) {
      continue;
    }
    if (f->times > 0) {
      --f->times;
      save();
    }
    return (nvmlReturn_t)f->error;
  }
  return NVML_SUCCESS;
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

/* The instance behind MIG device `d`: NULL for a whole GPU's handle, or for
 * a MIG device whose compute instance is gone. */
static Mig* mig_of(nvmlDevice_t d) {
  Gpu* g = gpu_of(d);
  if (g == NULL || !d->is_mig || d->mig < 0 || d->mig >= MAX_MIGS) {
    return NULL;
  }
  Mig* m = &g->migs[d->mig];
  return m->used && m->ci != 0 ? m : NULL;
}

static Mig* slot_of(int gpu, int mig) {
  if (gpu < 0 || gpu >= gpu_count || mig < 0 || mig >= MAX_MIGS) return NULL;
  Mig* m = &gpus[gpu].migs[mig];
  return m->used ? m : NULL;
}

static Mig* gi_of(nvmlGpuInstance_t gi) {
  return gi == NULL ? NULL : slot_of(gi->gpu, gi->mig);
}

static int supported(const Gpu* g, unsigned int profile) {
  if (!g->mig || profile >= PROFILE_INDEXES) return 0;
  return gi_shapes[profile].standard || g->profile_loaded[profile] > 0;
}

static unsigned int instance_count(const Gpu* g, unsigned int profile) {
  unsigned int n = gi_shapes[profile].count;
  return g->profile_loaded[profile] > n ? g->profile_loaded[profile] : n;
}

static unsigned int gi_slices(const Mig* m) {
  return m->profile < PROFILE_INDEXES ? gi_shapes[m->profile].slices : 1;
}

static unsigned int memory_slices(unsigned int profile) {
  return profile < PROFILE_INDEXES ? gi_shapes[profile].memory_slices : 1;
}

/* The compute instance profile index covering GPU instance `m` whole. */
static unsigned int whole_ci_profile(const Mig* m) {
  for (unsigned int p = 0; p < CI_PROFILES_OFFERED; ++p) {
    if (ci_slices[p] == gi_slices(m)) return p;
  }
  return NVML_COMPUTE_INSTANCE_PROFILE_COUNT;
}

static nvmlReturn_t copy(const char* s, char* out, unsigned int length) {
  if (out == NULL || strlen(s) + 1 > length)
    return NVML_ERROR_INSUFFICIENT_SIZE;
  strcpy(out, s);
  return NVML_SUCCESS;
}

/* What link slot `link` of GPU `gpu` reaches (see the top): 1 with *peer
 * -1 for an NVSwitch or the peer GPU for a direct link; 0 for an unused
 * slot. *used: the GPU's slots in use. */
static int link_end(int gpu, unsigned int link, int* peer, unsigned int* used) {
  const Gpu* g = &gpus[gpu];
  unsigned int slot = g->nvswitch_links;
  int found = 0;
  if (link < slot) {
    *peer = -1;
    found = 1;
  }
  for (int i = 0; i < nvlink_count; ++i) {
    const NvLink* l = &nvlinks[i];
    if ((l->a != gpu && l->b != gpu) || l->a == l->b || l->a < 0 || l->b < 0 ||
        l->a >= gpu_count || l->b >= gpu_count) {
      continue;
    }
    if (!found && link < slot + l->links) {
      *peer = l->a == gpu ? l->b : l->a;
      found = 1;
    }
    slot += l->links;
  }
  *used = slot < NVLINK_SLOTS ? slot : NVLINK_SLOTS;
  return found && link < NVLINK_SLOTS;
}

/* GPU `gpu`'s PCI address (see the top); `lower`: in lower case. */
static void pci_info(int gpu, int lower, nvmlPciInfo_t* pci) {
  memset(pci, 0, sizeof(*pci));
  pci->bus = 0x1A + (unsigned int)gpu;
  pci->pciDeviceId = 0x233010DE; /* H100 SXM5, NVIDIA */
  snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0",
           pci->bus);
  snprintf(pci->busId, sizeof(pci->busId),
           lower ? "00000000:%02x:00.0" : "00000000:%02X:00.0", pci->bus);
}

/* The GPU of `device` and its link `link` for the NVLink queries: NULL with
 * `*r` set when NVML would refuse (no such GPU or link, an injected
 * failure); else *peer and *used as link_end says, *enabled whether the slot
 * is in use. */
static Gpu* nvlink_of(nvmlDevice_t device, unsigned int link, const char* call,
                      int* peer, int* enabled, nvmlReturn_t* r) {
  Gpu* g = live(device, r);
  if (g == NULL) return NULL;
  if (device->is_mig || link >= NVLINK_SLOTS) {
    *r = NVML_ERROR_INVALID_ARGUMENT;
    return NULL;
  }
  *r = injected(call, device->gpu, (int)link);
  if (*r != NVML_SUCCESS) return NULL;
  unsigned int used = 0;
  *enabled = link_end(device->gpu, link, peer, &used);
  if (used == 0) {
    *r = NVML_ERROR_NOT_SUPPORTED; /* a GPU without NVLink */
    return NULL;
  }
  return g;
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
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_IN_USE:
      return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "Insufficient resources";
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
  Gpu* g = gpu_of(device);
  if (g == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (device->is_mig) {
    Mig* m = mig_of(device);
    return m ? copy(m->uuid, uuid, length) : NVML_ERROR_INVALID_ARGUMENT;
  }
  return copy(g->uuid, uuid, length);
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
  nvmlReturn_t r;
  Gpu* g = live(device, &r);
  if (g == NULL) return r;
  Mig* m = mig_of(device);
  if (device->is_mig && m == NULL) return NVML_ERROR_INVALID_ARGUMENT;
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

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                     unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos) {
  nvmlReturn_t r;
  Gpu* g = live(device, &r);
  if (g == NULL) return r;
  Mig* m = mig_of(device);
  if ((device->is_mig && m == NULL) || infoCount == NULL) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  r = injected("nvmlDeviceGetComputeRunningProcesses_v3", device->gpu,
               m ? (int)m->start : -1);
  if (r != NVML_SUCCESS) return r;
  /* A MIG device's processes, or (a GPU's handle) every instance's. */
  Mig* of[MAX_MIGS * 8];
  unsigned int n = 0;
  for (int i = 0; i < MAX_MIGS; ++i) {
    Mig* each = &g->migs[i];
    if (!each->used || each->ci == 0 || (m != NULL && each != m)) continue;
    for (unsigned int k = 0; k < each->procs && n < MAX_MIGS * 8; ++k) {
      of[n++] = each;
    }
  }
  /* nvml.h 7369-7371: with too small an array, the count needed. */
  if (*infoCount < n) {
    *infoCount = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (n > 0 && infos == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned int k = 0; k < n; ++k) {
    infos[k].pid = 4000 + k;
    infos[k].usedGpuMemory = 0;
    infos[k].gpuInstanceId = of[k]->gi;
    infos[k].computeInstanceId = of[k]->ci;
  }
  *infoCount = n;
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

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  nvmlReturn_t r;
  Gpu* g = live(device, &r);
  if (g == NULL) return r;
  if (device->is_mig || pci == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  r = injected("nvmlDeviceGetPciInfo_v3", device->gpu, -1);
  if (r != NVML_SUCCESS) return r;
  pci_info(device->gpu, 0, pci);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(
    nvmlDevice_t device1, nvmlDevice_t device2,
    nvmlGpuTopologyLevel_t* pathInfo) {
  nvmlReturn_t r;
  Gpu* a = live(device1, &r);
  if (a == NULL) return r;
  Gpu* b = live(device2, &r);
  if (b == NULL) return r;
  if (device1->is_mig || device2->is_mig || pathInfo == NULL) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  r = injected("nvmlDeviceGetTopologyCommonAncestor", device1->gpu, -1);
  if (r != NVML_SUCCESS) return r;
  if ((a->pcie_switch < 0 && a->numa < 0) ||
      (b->pcie_switch < 0 && b->numa < 0)) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  if (a == b) {
    *pathInfo = NVML_TOPOLOGY_INTERNAL;
  } else if (a->pcie_switch >= 0 && a->pcie_switch == b->pcie_switch) {
    *pathInfo = NVML_TOPOLOGY_SINGLE;
  } else if (a->numa >= 0 && a->numa == b->numa) {
    *pathInfo = NVML_TOPOLOGY_NODE;
  } else {
    *pathInfo = NVML_TOPOLOGY_SYSTEM;
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t* isActive) {
  int peer = 0, enabled = 0;
  nvmlReturn_t r;
  if (isActive == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvlink_of(device, link, "nvmlDeviceGetNvLinkState", &peer, &enabled,
                &r) == NULL) {
    return r;
  }
  *isActive = enabled ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
                                                 unsigned int link,
                                                 nvmlPciInfo_t* pci) {
  int peer = 0, enabled = 0;
  nvmlReturn_t r;
  if (pci == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvlink_of(device, link, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &peer,
                &enabled, &r) == NULL) {
    return r;
  }
  if (!enabled) return NVML_ERROR_NOT_SUPPORTED; /* nothing at the far end */
  if (peer >= 0) {
    pci_info(peer, 1, pci);
    return NVML_SUCCESS;
  }
  memset(pci, 0, sizeof(*pci));
  pci->bus = 0xC0 + link % NVSWITCHES;
  pci->pciDeviceId = 0x22A310DE; /* an NVSwitch */
  snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0",
           pci->bus);
  snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", pci->bus);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(
    nvmlDevice_t device, unsigned int link,
    nvmlIntNvLinkDeviceType_t* pNvLinkDeviceType) {
  int peer = 0, enabled = 0;
  nvmlReturn_t r;
  if (pNvLinkDeviceType == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvlink_of(device, link, "nvmlDeviceGetNvLinkRemoteDeviceType", &peer,
                &enabled, &r) == NULL) {
    return r;
  }
  if (!enabled) return NVML_ERROR_NOT_SUPPORTED;
  *pNvLinkDeviceType =
      peer >= 0 ? NVML_NVLINK_DEVICE_TYPE_GPU : NVML_NVLINK_DEVICE_TYPE_SWITCH;
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
  if (profile >= PROFILE_INDEXES || info == NULL) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (!supported(g, profile)) return NVML_ERROR_NOT_SUPPORTED;
  memset(info, 0, sizeof(*info));
  info->id = profile + PROFILE_ID_OFFSET;
  info->sliceCount = gi_shapes[profile].slices;
  info->instanceCount = instance_count(g, profile);
  info->memorySizeMB = g->profile_mem[profile];
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profileId,
    nvmlGpuInstancePlacement_t* placements, unsigned int* count) {
  nvmlReturn_t r;
  Gpu* g = live(device, &r);
  if (g == NULL) return r;
  const unsigned int profile = profileId - PROFILE_ID_OFFSET;
  if (device->is_mig || count == NULL || profile >= PROFILE_INDEXES) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (!supported(g, profile)) return NVML_ERROR_NOT_SUPPORTED;
  unsigned int n = 0;
  for (unsigned int s = 0; s < MEMORY_SLICES; ++s) {
    if (!(gi_shapes[profile].starts & (1u << s))) continue;
    if (placements != NULL) {
      placements[n].start = s;
      placements[n].size = gi_shapes[profile].memory_slices;
    }
    ++n;
  }
  *count = n;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profileId,
    const nvmlGpuInstancePlacement_t* placement,
    nvmlGpuInstance_t* gpuInstance) {
  nvmlReturn_t r;
  Gpu* g = live(device, &r);
  if (g == NULL) return r;
  if (device->is_mig || placement == NULL || gpuInstance == NULL) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (!g->mig) return NVML_ERROR_NOT_SUPPORTED;
  const unsigned int profile = profileId - PROFILE_ID_OFFSET;
  if (!supported(g, profile)) return NVML_ERROR_INVALID_ARGUMENT;
  r = injected("nvmlDeviceCreateGpuInstanceWithPlacement", device->gpu,
               (int)placement->start);
  if (r != NVML_SUCCESS) return r;
  const GiShape* shape = &gi_shapes[profile];
  if (placement->start >= MEMORY_SLICES ||
      !(shape->starts & (1u << placement->start)) ||
      placement->size != shape->memory_slices) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const unsigned int begin = placement->start;
  const unsigned int end = begin + shape->memory_slices;
  unsigned int of_profile = 0;
  int free_slot = -1;
  unsigned int ids = 0; /* bit n: gi id n taken */
  for (int i = 0; i < MAX_MIGS; ++i) {
    const Mig* m = &g->migs[i];
    if (!m->used) {
      if (free_slot < 0) free_slot = i;
      continue;
    }
    const unsigned int b = m->start, e = b + memory_slices(m->profile);
    if (b < end && begin < e) return NVML_ERROR_INSUFFICIENT_RESOURCES;
    if (m->profile == profile) ++of_profile;
    if (m->gi < 32) ids |= 1u << m->gi;
  }
  if (free_slot < 0 || of_profile >= instance_count(g, profile)) {
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  unsigned int id = 1;
  while (id < 31 && (ids & (1u << id))) ++id;
  Mig* m = &g->migs[free_slot];
  memset(m, 0, sizeof(*m));
  m->used = 1;
  m->profile = profile;
  m->start = placement->start;
  m->gi = id;
  m->mem_mib = g->profile_mem[profile];
  set_handles(device->gpu, free_slot);
  ++gi_created;
  save();
  *gpuInstance = &m->gi_handle;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance) {
  Mig* m = gi_of(gpuInstance);
  if (m == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t r =
      injected("nvmlGpuInstanceDestroy", gpuInstance->gpu, (int)m->start);
  if (r != NVML_SUCCESS) return r;
  /* nvml.h 13010-13012 */
  if (m->ci != 0) return NVML_ERROR_IN_USE;
  m->used = 0;
  ++gi_destroyed;
  save();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device,
                                       unsigned int profileId,
                                       nvmlGpuInstance_t* gpuInstances,
                                       unsigned int* count) {
  nvmlReturn_t r;
  Gpu* g = live(device, &r);
  if (g == NULL) return r;
  const unsigned int profile = profileId - PROFILE_ID_OFFSET;
  if (count == NULL || profile >= PROFILE_INDEXES) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (!supported(g, profile)) return NVML_ERROR_NOT_SUPPORTED;
  /* The caller's array holds the profile's instanceCount entries. */
  const unsigned int room = instance_count(g, profile);
  unsigned int n = 0;
  for (int i = 0; i < MAX_MIGS && n < room; ++i) {
    if (g->migs[i].used && g->migs[i].profile == profile) {
      if (gpuInstances == NULL) return NVML_ERROR_INVALID_ARGUMENT;
      gpuInstances[n++] = &g->migs[i].gi_handle;
    }
  }
  *count = n;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance,
                                    nvmlGpuInstanceInfo_t* info) {
  Mig* m = gi_of(gpuInstance);
  if (m == NULL || info == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  info->device = &gpus[gpuInstance->gpu].handle;
  info->id = m->gi;
  info->profileId = m->profile + PROFILE_ID_OFFSET;
  info->placement.start = m->start;
  info->placement.size = memory_slices(m->profile);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gpuInstance, unsigned int profile,
    unsigned int engProfile, nvmlComputeInstanceProfileInfo_t* info) {
  Mig* m = gi_of(gpuInstance);
  if (m == NULL || info == NULL ||
      engProfile >= NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT ||
      profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (profile >= CI_PROFILES_OFFERED || ci_slices[profile] > gi_slices(m)) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  memset(info, 0, sizeof(*info));
  info->id = profile + CI_PROFILE_ID_OFFSET;
  info->sliceCount = ci_slices[profile];
  info->instanceCount = gi_slices(m) / ci_slices[profile];
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    nvmlComputeInstance_t* computeInstance) {
  Mig* m = gi_of(gpuInstance);
  if (m == NULL || computeInstance == NULL) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  nvmlReturn_t r = injected("nvmlGpuInstanceCreateComputeInstance",
                            gpuInstance->gpu, (int)m->start);
  if (r != NVML_SUCCESS) return r;
  const unsigned int profile = profileId - CI_PROFILE_ID_OFFSET;
  if (profile >= CI_PROFILES_OFFERED || ci_slices[profile] > gi_slices(m)) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  if (m->ci != 0) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  /* Only one compute instance over the whole GPU instance (see the top). */
  if (profile != whole_ci_profile(m)) return NVML_ERROR_NOT_SUPPORTED;
  const Gpu* g = &gpus[gpuInstance->gpu];
  const char* tail = strncmp(g->uuid, "GPU-", 4) == 0 ? g->uuid + 4 : g->uuid;
  m->ci = 1;
  m->used_mib = 0;
  m->procs = 0;
  snprintf(m->uuid, sizeof(m->uuid), "MIG-%s-%u-%u", tail, m->profile,
           m->start);
  ++ci_created;
  save();
  *computeInstance = &m->ci_handle;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance) {
  Mig* m = computeInstance == NULL
               ? NULL
               : slot_of(computeInstance->gpu, computeInstance->mig);
  if (m == NULL || m->ci == 0) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t r = injected("nvmlComputeInstanceDestroy", computeInstance->gpu,
                            (int)m->start);
  if (r != NVML_SUCCESS) return r;
  /* nvml.h 13264-13265 */
  if (m->procs > 0) return NVML_ERROR_IN_USE;
  m->ci = 0;
  m->uuid[0] = '\0';
  m->used_mib = 0;
  ++ci_destroyed;
  save();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    nvmlComputeInstance_t* computeInstances, unsigned int* count) {
  Mig* m = gi_of(gpuInstance);
  if (m == NULL || count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  const unsigned int profile = profileId - CI_PROFILE_ID_OFFSET;
  if (profile >= CI_PROFILES_OFFERED || ci_slices[profile] > gi_slices(m)) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  unsigned int n = 0;
  if (m->ci != 0 && profile == whole_ci_profile(m)) {
    if (computeInstances == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    computeInstances[n++] = &m->ci_handle;
  }
  *count = n;
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
  for (int i = 0; i < MAX_MIGS; ++i) {
    if (!g->migs[i].used || g->migs[i].ci == 0) continue;
    if (seen++ == index) {
      *migDevice = &g->migs[i].handle;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}
