#!/usr/bin/env python3
"""Regenerates bench/data/openb/ from Alibaba's cluster-trace-gpu-v2023.

The originals are the CSVs under cluster-trace-gpu-v2023/csv/ of
https://github.com/alibaba/clusterdata (see bench/data/openb/README.md for the
commit and the terms). This keeps only the columns bench/openb_replay reads,
in the originals' row order (nodes and pods are sorted by name there):

  nodes.csv            cpu_milli,memory_mib,gpu,model
                       from openb_node_list_gpu_node.csv (drops sn)
  pods_gpushareNN.csv  cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec
                       from openb_pod_list_gpushareNN.csv (drops name, qos,
                       pod_phase and the three times)
  pods_default.csv     cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,
                       creation_time,deletion_time
                       from openb_pod_list_default.csv (drops name, qos,
                       pod_phase and scheduled_time), for the replay with
                       departures (bench/packing_bench)

Values are copied unchanged. Usage, from the repository root:

  git clone https://github.com/alibaba/clusterdata /tmp/clusterdata
  python3 scripts/openb_data.py --clusterdata=/tmp/clusterdata
"""

import argparse
import csv
import os
import sys

TRACES = ["gpushare20", "gpushare40", "gpushare60", "gpushare80", "gpushare100"]
NODE_COLUMNS = ["cpu_milli", "memory_mib", "gpu", "model"]
POD_COLUMNS = ["cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec"]
TIMED_POD_COLUMNS = POD_COLUMNS + ["creation_time", "deletion_time"]


def convert(source, target, key, columns):
    with open(source, newline="") as f:
        rows = list(csv.DictReader(f))
    names = [r[key] for r in rows]
    if names != sorted(names):
        sys.exit(f"{source}: rows are not in {key} order")
    with open(target, "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(columns)
        for r in rows:
            out.writerow([r[c] for c in columns])
    print(f"{target}: {len(rows)} rows")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusterdata", required=True,
                        help="a checkout of github.com/alibaba/clusterdata")
    parser.add_argument("--out", default="bench/data/openb")
    args = parser.parse_args()
    csv_dir = os.path.join(args.clusterdata, "cluster-trace-gpu-v2023", "csv")
    os.makedirs(args.out, exist_ok=True)
    convert(os.path.join(csv_dir, "openb_node_list_gpu_node.csv"),
            os.path.join(args.out, "nodes.csv"), "sn", NODE_COLUMNS)
    for trace in TRACES:
        convert(os.path.join(csv_dir, f"openb_pod_list_{trace}.csv"),
                os.path.join(args.out, f"pods_{trace}.csv"), "name",
                POD_COLUMNS)
    convert(os.path.join(csv_dir, "openb_pod_list_default.csv"),
            os.path.join(args.out, "pods_default.csv"), "name",
            TIMED_POD_COLUMNS)


if __name__ == "__main__":
    main()
