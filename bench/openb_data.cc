#include "bench/openb_data.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/model/gpu_share.h"

namespace accelsched {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Rows of a CSV file without quoting, checked against `header`.
std::optional<std::vector<std::vector<std::string>>> ReadCsv(
    const std::string& path, const std::string& header) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line) || line != header) {
    std::fprintf(stderr, "%s: missing, or its header is not \"%s\"\n",
                 path.c_str(), header.c_str());
    return std::nullopt;
  }
  const size_t columns =
      std::vector<std::string>(absl::StrSplit(header, ',')).size();
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> row = absl::StrSplit(line, ',');
    if (row.size() != columns) {
      std::fprintf(stderr, "%s:%zu: %zu columns, want %zu\n", path.c_str(),
                   rows.size() + 2, row.size(), columns);
      return std::nullopt;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

bool ParseInt(const std::string& path, size_t row, const std::string& field,
              int64_t& out) {
  if (absl::SimpleAtoi(field, &out) && out >= 0) return true;
  std::fprintf(stderr, "%s:%zu: \"%s\" is not a count\n", path.c_str(), row + 2,
               field.c_str());
  return false;
}

}  // namespace

std::optional<std::vector<NodeSpec>> LoadNodes(const std::string& dir) {
  const std::string path = dir + "/nodes.csv";
  auto rows = ReadCsv(path, "cpu_milli,memory_mib,gpu,model");
  if (!rows.has_value()) return std::nullopt;
  std::vector<NodeSpec> nodes;
  for (size_t i = 0; i < rows->size(); ++i) {
    const std::vector<std::string>& r = (*rows)[i];
    NodeSpec n;
    int64_t mib = 0, gpus = 0;
    if (!ParseInt(path, i, r[0], n.cpu_milli) ||
        !ParseInt(path, i, r[1], mib) || !ParseInt(path, i, r[2], gpus)) {
      return std::nullopt;
    }
    n.name = absl::StrFormat("openb-node-%04d", i);  // name order = list order
    n.memory_bytes = mib * kMiB;
    n.gpus = static_cast<int>(gpus);
    n.model = r[3];
    nodes.push_back(std::move(n));
  }
  return nodes;
}

std::optional<std::vector<Pod>> LoadPods(const std::string& dir,
                                         const std::string& trace, bool timed) {
  const std::string path = absl::StrCat(dir, "/pods_", trace, ".csv");
  auto rows = ReadCsv(
      path, absl::StrCat("cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec",
                         timed ? ",creation_time,deletion_time" : ""));
  if (!rows.has_value()) return std::nullopt;
  std::vector<Pod> pods;
  for (size_t i = 0; i < rows->size(); ++i) {
    const std::vector<std::string>& r = (*rows)[i];
    Pod p;
    int64_t mib = 0, gpus = 0, milli = 0;
    if (!ParseInt(path, i, r[0], p.cpu_milli) ||
        !ParseInt(path, i, r[1], mib) || !ParseInt(path, i, r[2], gpus) ||
        !ParseInt(path, i, r[3], milli)) {
      return std::nullopt;
    }
    p.memory_bytes = mib * kMiB;
    p.gpus = static_cast<int>(gpus);
    // gpu_milli is "for GPU-sharing workloads (i.e., num_gpu==1)"
    // (alibaba/clusterdata cluster-trace-gpu-v2023/README.md:50); a pod of
    // several GPUs takes them whole.
    p.shares = gpus == 1 && milli > 0 && milli < kGpuMilli;
    p.trace_milli = p.shares ? milli : gpus * kGpuMilli;
    // "V100M16|V100M32": any of these models; "" any model.
    if (!r[4].empty()) {
      p.models = absl::StrSplit(r[4], '|');
      std::sort(p.models.begin(), p.models.end());
      p.models.erase(std::unique(p.models.begin(), p.models.end()),
                     p.models.end());
    }
    if (timed && (!ParseInt(path, i, r[5], p.created) ||
                  !ParseInt(path, i, r[6], p.deleted))) {
      return std::nullopt;
    }
    pods.push_back(std::move(p));
  }
  return pods;
}

}  // namespace accelsched
