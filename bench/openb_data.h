// Alibaba's openb GPU cluster and pod lists (cluster-trace-gpu-v2023) as
// bench/data/openb/ keeps them (scripts/openb_data.py), read for the
// benchmarks that replay them (openb_replay, packing_bench).
#ifndef ACCELSCHED_BENCH_OPENB_DATA_H_
#define ACCELSCHED_BENCH_OPENB_DATA_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accelsched {

struct NodeSpec {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  int gpus = 0;
  std::string model;
};

struct Pod {
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  int gpus = 0;             // whole GPUs, or 1 for a share
  int64_t trace_milli = 0;  // the GPU the trace asks: num_gpu x gpu_milli
  bool shares = false;      // asks part of a GPU: a share of trace_milli
  std::vector<std::string> models;  // sorted; empty: any
  // pods_default.csv's: seconds from the trace's start; -1 elsewhere.
  int64_t created = -1;
  int64_t deleted = -1;
};

// Every GPU's memory here: shares take the same fraction of it as of its
// compute (the trace has no GPU memory per pod), so it never binds.
constexpr uint64_t kGpuMemory = uint64_t{16} << 30;

// The nodes of nodes.csv, named openb-node-%04d in the list's order; nullopt
// (with the reason on stderr) when the file is missing or malformed.
std::optional<std::vector<NodeSpec>> LoadNodes(const std::string& dir);

// The pods of pods_<trace>.csv; with `timed`, the list has creation_time
// and deletion_time too (pods_default.csv). nullopt (with the reason on
// stderr) when the file is missing or malformed.
std::optional<std::vector<Pod>> LoadPods(const std::string& dir,
                                         const std::string& trace,
                                         bool timed = false);

}  // namespace accelsched

#endif  // ACCELSCHED_BENCH_OPENB_DATA_H_
