package flyteplugin

import (
	"fmt"
	"math"
	"strconv"

	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
)

// A task asks for a share of one GPU with KAI-Scheduler's pod annotations,
// so that a pod template written for KAI asks accelsched for the same
// (kai-scheduler/KAI-Scheduler d5bc503a, pkg/common/constants/constants.go:
// 56-61; parsed in pkg/scheduler/api/pod_info/pod_info.go:521-532).
const (
	// The fraction of one GPU's compute, 0 < x <= 1 ("0.5"); accelsched
	// books it in thousandths (share.compute_milli), rounded to the nearest.
	GPUFractionAnnotation = "gpu-fraction"
	// The GPU memory the share may use, in MiB as KAI writes it ("2000");
	// with gpu-fraction only. Without it the share takes the same fraction
	// of the GPU's memory.
	GPUMemoryAnnotation = "gpu-memory"
)

// shareOf is the share a pod's annotations ask for, or nil when they ask for
// none. An error names the annotation it cannot read.
func shareOf(annotations map[string]string) (*pb.GpuShare, error) {
	fraction, hasFraction := annotations[GPUFractionAnnotation]
	memory, hasMemory := annotations[GPUMemoryAnnotation]
	if !hasFraction {
		if hasMemory {
			return nil, fmt.Errorf("the pod's annotation %s=%q needs %s (the share of the GPU's compute)",
				GPUMemoryAnnotation, memory, GPUFractionAnnotation)
		}
		return nil, nil
	}
	x, err := strconv.ParseFloat(fraction, 64)
	if err != nil || !(x > 0 && x <= 1) {
		return nil, fmt.Errorf("the pod's annotation %s=%q is not a fraction of one GPU (0 < x <= 1)",
			GPUFractionAnnotation, fraction)
	}
	share := &pb.GpuShare{ComputeMilli: int32(math.Round(x * 1000))}
	if share.ComputeMilli < 1 {
		return nil, fmt.Errorf("the pod's annotation %s=%q is less than a thousandth of a GPU",
			GPUFractionAnnotation, fraction)
	}
	if hasMemory {
		mib, err := strconv.ParseInt(memory, 10, 64)
		if err != nil || mib <= 0 || mib > math.MaxInt64>>20 {
			return nil, fmt.Errorf("the pod's annotation %s=%q is not a positive number of MiB",
				GPUMemoryAnnotation, memory)
		}
		share.MemoryBytes = mib << 20
	}
	return share, nil
}
