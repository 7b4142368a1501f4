package accelsched

import (
	"fmt"
	"maps"
	"slices"
	"time"

	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// AcceleratorFromFlyte reads the serialized bytes of a Flyte GPUAccelerator
// (flyteidl2.core.GPUAccelerator, or v1 flyteidl.core.GPUAccelerator, which
// lacks device_class). accelsched.v1.Accelerator has the same field numbers
// (flyteidl2/core/tasks.proto:53-81: device 1, unpartitioned 2,
// partition_size 3, device_class 4), so the bytes are taken unchanged, and
// the fields a newer Flyte adds are kept as unknown fields.
func AcceleratorFromFlyte(gpuAccelerator []byte) (*pb.Accelerator, error) {
	a := &pb.Accelerator{}
	if err := proto.Unmarshal(gpuAccelerator, a); err != nil {
		return nil, fmt.Errorf("accelsched: reading a Flyte GPUAccelerator: %w", err)
	}
	return a, nil
}

// Task is what a propeller plugin knows of a task when it is about to launch
// its pod, and what any other program that launches pods may ask for besides.
// Every field's zero value leaves its part of the request unset (the server's
// default). TestNewAllocateRequestSetsEveryField fails when a field of
// AllocateRequest is neither set from a Task field nor listed in its
// notCarried table with the reason.
type Task struct {
	// Unique per attempt: the task execution id (with its retry attempt). It
	// is the request id, so a retried Allocate returns the same allocation.
	ExecutionID string
	// The tenant is "project/domain", as Flyte scopes quotas.
	Project, Domain string
	// The task's accelerator, or nil for a plain `gpu: N` (any whole NVIDIA
	// GPU).
	Accelerator *pb.Accelerator
	// The task's requested GPU count (its `gpu` resource); 0 means 1.
	Count int32
	// The pod container that gets the devices; "" means the first.
	Container string
	// A share of one GPU (compute_milli 1..1000, memory_bytes 0: the same
	// fraction of the GPU's memory; group: the shares on one GPU are all of
	// one group, the pod's namespace where pods take the GPU's DRA claim)
	// instead of whole devices; Count is then 0 or 1. nil: whole devices.
	Share *pb.GpuShare
	// How long the devices are held unless renewed; 0: the server default.
	Lease time.Duration
	// How long the task is expected to run once admitted (the flyteplugin
	// sends the task's timeout): the server's packing weighs it in place of
	// the lease; never a limit. 0: the server's estimate for the tenant and
	// request shape, learned from finished allocations, else the lease.
	ExpectedDuration time.Duration
	// Wait in accelsched's queue when nothing fits now: Allocate returns a
	// PENDING allocation (WaitAdmitted waits for it) instead of
	// RESOURCE_EXHAUSTED.
	Queue bool
	// Higher is admitted first, and a queued request may preempt allocations
	// of lower priority (the server's --preemption); 0 is the default.
	Priority int32
	// Node labels the chosen node must have, as a pod's nodeSelector (the
	// flyteplugin sends the pod's, with the single-valued In requirements of
	// its node affinity); nil: any node. The request gets a copy.
	NodeSelector map[string]string
	// Further models that will do as well as Accelerator's device (any
	// spelling the accelerator-type registry knows, all of one device
	// class), each with Accelerator's partition; nil: only that one. The
	// request gets a copy.
	AlternativeDevices []string
	// A gang: Replicas groups of Count devices, each group on a node of its
	// own, all admitted together or none; 0 (or 1): one group.
	Replicas int32
	// For a gang: a node label whose one value every group's node shares (a
	// rack, an NVLink domain); "": none.
	TopologyKey string
	// For a gang: a level of the server's --topology_levels (a node label)
	// whose one domain holds every group; FAILED_PRECONDITION naming it when
	// no domain could ever hold them. "": none.
	RequiredTopology string
	// For a gang: a level of --topology_levels narrower than the required
	// one, whose domains the groups take as few of as can hold them (never a
	// refusal for it); "": none.
	PreferredTopology string
	// What the task's pod needs on its node besides the accelerators (its
	// effective CPU and memory request, as the Kubernetes scheduler counts
	// it): only a node with that much free is chosen. The zero value sends
	// none, and the node's CPU and memory are not accounted for the task.
	PodResources PodResources
}

// PodResources is a pod's CPU and memory request in the units of
// accelsched.v1.NodeResources: CPUMilli in thousandths of a CPU (Kubernetes'
// "500m" is 500, "2" is 2000) and MemoryBytes in bytes ("4Gi" is 4<<30).
// Convert a Kubernetes quantity with resource.Quantity's MilliValue (CPU) and
// Value (memory), which round up as the scheduler does.
type PodResources struct {
	CPUMilli    int64
	MemoryBytes int64
}

// nodeResources is the request's pod_resources: one pod with r's CPU and
// memory, or nil for the zero value.
func (r PodResources) nodeResources() *pb.NodeResources {
	if r == (PodResources{}) {
		return nil
	}
	return &pb.NodeResources{CpuMilli: r.CPUMilli, MemoryBytes: r.MemoryBytes, Pods: 1}
}

// NewAllocateRequest turns a task into the request Allocate takes. It checks
// only what the server cannot see; the server validates the rest and names
// the field it refuses.
func NewAllocateRequest(t Task) (*pb.AllocateRequest, error) {
	if t.ExecutionID == "" {
		return nil, fmt.Errorf("accelsched: Task.ExecutionID is required (it is the request id)")
	}
	if t.Count < 0 {
		return nil, fmt.Errorf("accelsched: Task.Count %d is negative", t.Count)
	}
	if t.Lease < 0 {
		return nil, fmt.Errorf("accelsched: Task.Lease %v is negative", t.Lease)
	}
	if t.ExpectedDuration < 0 {
		return nil, fmt.Errorf("accelsched: Task.ExpectedDuration %v is negative", t.ExpectedDuration)
	}
	if t.PodResources.CPUMilli < 0 {
		return nil, fmt.Errorf("accelsched: Task.PodResources.CPUMilli %d is negative", t.PodResources.CPUMilli)
	}
	if t.PodResources.MemoryBytes < 0 {
		return nil, fmt.Errorf("accelsched: Task.PodResources.MemoryBytes %d is negative", t.PodResources.MemoryBytes)
	}
	req := &pb.AllocateRequest{
		RequestId:         t.ExecutionID,
		Count:             t.Count,
		ContainerName:     t.Container,
		Queue:             t.Queue,
		Priority:          t.Priority,
		Replicas:          t.Replicas,
		TopologyKey:       t.TopologyKey,
		RequiredTopology:  t.RequiredTopology,
		PreferredTopology: t.PreferredTopology,
		PodResources:      t.PodResources.nodeResources(),
	}
	if len(t.NodeSelector) > 0 {
		req.NodeSelector = maps.Clone(t.NodeSelector)
	}
	if len(t.AlternativeDevices) > 0 {
		req.AlternativeDevices = slices.Clone(t.AlternativeDevices)
	}
	if t.Project != "" || t.Domain != "" {
		req.Tenant = t.Project + "/" + t.Domain
	}
	if t.Accelerator != nil {
		req.Accelerator = proto.Clone(t.Accelerator).(*pb.Accelerator)
	}
	if t.Share != nil {
		req.Share = proto.Clone(t.Share).(*pb.GpuShare)
	}
	if t.Lease > 0 {
		req.Lease = durationpb.New(t.Lease)
	}
	if t.ExpectedDuration > 0 {
		req.ExpectedDuration = durationpb.New(t.ExpectedDuration)
	}
	return req, nil
}
