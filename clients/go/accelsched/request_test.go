package accelsched

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The bytes Flyte writes for GPUAccelerator{device: "H100 80G",
// partition_size: "1g.10gb", device_class: NVIDIA_GPU(0)} plus a field a
// newer flyteidl2 might add (number 9), encoded field by field from
// flyteidl2/core/tasks.proto:53-81.
func flyteBytes() []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, "H100 80G")
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	b = protowire.AppendString(b, "1g.10gb")
	b = protowire.AppendTag(b, 4, protowire.VarintType)
	b = protowire.AppendVarint(b, 3) // AMD_GPU
	b = protowire.AppendTag(b, 9, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)
	return b
}

func TestAcceleratorFromFlyteTakesTheBytesUnchanged(t *testing.T) {
	a, err := AcceleratorFromFlyte(flyteBytes())
	if err != nil {
		t.Fatal(err)
	}
	if a.GetDevice() != "H100 80G" || a.GetPartitionSize() != "1g.10gb" || a.GetDeviceClass() != pb.DeviceClass_AMD_GPU {
		t.Errorf("read %v", a)
	}
	// A field accelsched does not know is kept and sent on as it came.
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 1)
	if got := a.ProtoReflect().GetUnknown(); string(got) != string(unknown) {
		t.Errorf("unknown fields %x, want %x", got, unknown)
	}
	if _, err := AcceleratorFromFlyte([]byte{0x0a, 0x05, 'x'}); err == nil {
		t.Error("truncated bytes were accepted")
	}
}

func TestNewAllocateRequest(t *testing.T) {
	acc := &pb.Accelerator{Device: "A100", PartitionSizeValue: &pb.Accelerator_Unpartitioned{Unpartitioned: true}}
	req, err := NewAllocateRequest(Task{ExecutionID: "f1a2b3-n0-0", Project: "flytesnacks", Domain: "development",
		Accelerator: acc, Count: 2, Container: "f1a2b3-n0-0", Lease: 90 * time.Second,
		PodResources: PodResources{CPUMilli: 2500, MemoryBytes: 8 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	want := &pb.AllocateRequest{RequestId: "f1a2b3-n0-0", Tenant: "flytesnacks/development", Accelerator: acc, Count: 2,
		ContainerName: "f1a2b3-n0-0", PodResources: &pb.NodeResources{CpuMilli: 2500, MemoryBytes: 8 << 30, Pods: 1}}
	if req.GetLease().AsDuration() != 90*time.Second {
		t.Errorf("lease %v", req.GetLease())
	}
	req.Lease = nil
	if !proto.Equal(req, want) {
		t.Errorf("got %v, want %v", req, want)
	}
	if req.Accelerator == acc {
		t.Error("the request shares the caller's accelerator")
	}
	share := &pb.GpuShare{ComputeMilli: 250, MemoryBytes: 4 << 30}
	shared, err := NewAllocateRequest(Task{ExecutionID: "e", Share: share})
	if err != nil || !proto.Equal(shared.GetShare(), share) || shared.Share == share {
		t.Errorf("share: %v, %v; want a copy of %v", shared.GetShare(), err, share)
	}
	plain, err := NewAllocateRequest(Task{ExecutionID: "e"})
	if err != nil || plain.Accelerator != nil || plain.Tenant != "" || plain.Lease != nil || plain.PodResources != nil ||
		plain.Share != nil {
		t.Errorf("plain gpu: %v, %v", plain, err)
	}
	// CPU alone or memory alone is sent, the other 0.
	for _, r := range []PodResources{{CPUMilli: 500}, {MemoryBytes: 1}} {
		req, err := NewAllocateRequest(Task{ExecutionID: "e", PodResources: r})
		want := &pb.NodeResources{CpuMilli: r.CPUMilli, MemoryBytes: r.MemoryBytes, Pods: 1}
		if err != nil || !proto.Equal(req.GetPodResources(), want) {
			t.Errorf("%+v: pod_resources %v, %v; want %v", r, req.GetPodResources(), err, want)
		}
	}
	for _, c := range []struct {
		task Task
		want string
	}{
		{Task{}, "ExecutionID"},
		{Task{ExecutionID: "e", Count: -1}, "Count"},
		{Task{ExecutionID: "e", Lease: -time.Second}, "Lease"},
		{Task{ExecutionID: "e", PodResources: PodResources{CPUMilli: -1}}, "PodResources.CPUMilli"},
		{Task{ExecutionID: "e", PodResources: PodResources{MemoryBytes: -1}}, "PodResources.MemoryBytes"},
	} {
		if _, err := NewAllocateRequest(c.task); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewAllocateRequest(%+v) = %v, want an error naming %s", c.task, err, c.want)
		}
	}
}

// The gang, its topology, the node selector, the alternative models and the
// priority go to the request as the Task gives them, the map and the slice
// copied.
func TestNewAllocateRequestGangAndPlacementFields(t *testing.T) {
	task := Task{ExecutionID: "gang-1", Accelerator: &pb.Accelerator{Device: "H100"}, Count: 8, Replicas: 4,
		TopologyKey: "example.com/block", RequiredTopology: "example.com/block", PreferredTopology: "example.com/rack",
		NodeSelector: map[string]string{"pool": "train"}, AlternativeDevices: []string{"H100 80G", "H200"}, Priority: 7}
	req, err := NewAllocateRequest(task)
	if err != nil {
		t.Fatal(err)
	}
	want := &pb.AllocateRequest{RequestId: "gang-1", Accelerator: &pb.Accelerator{Device: "H100"}, Count: 8, Replicas: 4,
		TopologyKey: "example.com/block", RequiredTopology: "example.com/block", PreferredTopology: "example.com/rack",
		NodeSelector: map[string]string{"pool": "train"}, AlternativeDevices: []string{"H100 80G", "H200"}, Priority: 7}
	if !proto.Equal(req, want) {
		t.Errorf("got %v, want %v", req, want)
	}
	task.NodeSelector["pool"] = "other"
	task.AlternativeDevices[0] = "T4"
	if req.NodeSelector["pool"] != "train" || req.AlternativeDevices[0] != "H100 80G" {
		t.Errorf("the request shares the caller's map or slice: %v", req)
	}
	// Empty is not set, as nil.
	empty, err := NewAllocateRequest(Task{ExecutionID: "e", NodeSelector: map[string]string{}, AlternativeDevices: []string{}})
	if err != nil || empty.NodeSelector != nil || empty.AlternativeDevices != nil {
		t.Errorf("empty node selector and alternatives: %v, %v", empty, err)
	}
}

// notCarried are the fields of AllocateRequest that Task deliberately does
// not carry, by name, each with why (say, a field a propeller plugin has no
// source for and no other program needs from this package). A field the proto
// gains fails TestNewAllocateRequestSetsEveryField until NewAllocateRequest
// sets it from a Task field or it is listed here. Today Task carries them all.
var notCarried = map[protoreflect.Name]string{}

// fullTask has every field of Task non-zero (TestNewAllocateRequestSetsEveryField
// checks that it stays so when Task gains one), so that the request it makes
// shows every field a Task can set.
func fullTask() Task {
	return Task{
		ExecutionID:        "f1a2b3-n0-0",
		Project:            "flytesnacks",
		Domain:             "development",
		Accelerator:        &pb.Accelerator{Device: "H100"},
		Count:              8,
		Container:          "main",
		Share:              &pb.GpuShare{ComputeMilli: 250},
		Lease:              time.Hour,
		ExpectedDuration:   3 * time.Hour,
		Queue:              true,
		Priority:           5,
		NodeSelector:       map[string]string{"pool": "train"},
		AlternativeDevices: []string{"H100 80G"},
		Replicas:           4,
		TopologyKey:        "example.com/block",
		RequiredTopology:   "example.com/block",
		PreferredTopology:  "example.com/rack",
		PodResources:       PodResources{CPUMilli: 500, MemoryBytes: 1 << 30},
	}
}

// Every field of AllocateRequest is set by NewAllocateRequest from some Task
// field (it is populated from a full Task, and changes when that Task field
// does), or is listed in notCarried; and every Task field reaches the request.
// The fields are the proto's, walked by reflection, so that a field added to
// AllocateRequest fails here rather than being silently never sent.
func TestNewAllocateRequestSetsEveryField(t *testing.T) {
	task := fullTask()
	taskValue := reflect.ValueOf(task)
	for i := range taskValue.NumField() {
		if taskValue.Field(i).IsZero() {
			t.Errorf("fullTask leaves Task.%s zero: give it a value, so that what it sets is checked",
				taskValue.Type().Field(i).Name)
		}
	}
	req, err := NewAllocateRequest(task)
	if err != nil {
		t.Fatal(err)
	}
	m := req.ProtoReflect()
	fields := m.Descriptor().Fields()
	for name, why := range notCarried {
		if fields.ByName(name) == nil {
			t.Errorf("notCarried lists %s (%s), which AllocateRequest no longer has", name, why)
		}
	}

	// What each Task field sets: the request fields that change when it is
	// changed (a string to another, anything else to its zero value).
	setBy := map[protoreflect.Name][]string{}
	for i := range taskValue.NumField() {
		name := taskValue.Type().Field(i).Name
		changed := fullTask()
		field := reflect.ValueOf(&changed).Elem().Field(i)
		if field.Kind() == reflect.String {
			field.SetString(field.String() + "-changed")
		} else {
			field.SetZero()
		}
		other, err := NewAllocateRequest(changed)
		if err != nil {
			t.Fatalf("Task.%s changed: %v", name, err)
		}
		o := other.ProtoReflect()
		reaches := false
		for j := range fields.Len() {
			f := fields.Get(j)
			if !m.Get(f).Equal(o.Get(f)) {
				setBy[f.Name()] = append(setBy[f.Name()], name)
				reaches = true
			}
		}
		if !reaches {
			t.Errorf("Task.%s changes nothing in the request", name)
		}
	}

	for i := range fields.Len() {
		f := fields.Get(i)
		why, skipped := notCarried[f.Name()]
		switch {
		case skipped && (m.Has(f) || len(setBy[f.Name()]) > 0):
			t.Errorf("AllocateRequest.%s is set from Task.%v but listed in notCarried (%s)", f.Name(), setBy[f.Name()], why)
		case !skipped && !m.Has(f):
			t.Errorf("AllocateRequest.%s is not set from a full Task: carry it in Task and NewAllocateRequest, "+
				"or list it in notCarried with why", f.Name())
		case !skipped && len(setBy[f.Name()]) == 0:
			t.Errorf("AllocateRequest.%s is set, but from no Task field (it does not change with any)", f.Name())
		}
	}
}

// The task's CPU and memory reach the server with the request: the
// allocation carries them as its pod_resources. (Needs an accelschedd that
// implements NodeResources: an older one drops the field.)
func TestPodResourcesReachTheServer(t *testing.T) {
	s := startServer(t)
	s.Register(a100Node())
	req, err := NewAllocateRequest(Task{ExecutionID: "exec-cpu", Accelerator: &pb.Accelerator{Device: "A100"},
		PodResources: PodResources{CPUMilli: 1500, MemoryBytes: 6 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := s.client()
	if _, err := c.Allocate(ctx, req); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetRequest(ctx, "exec-cpu")
	if err != nil {
		t.Fatal(err)
	}
	if want := (&pb.NodeResources{CpuMilli: 1500, MemoryBytes: 6 << 30, Pods: 1}); !proto.Equal(got.GetPodResources(), want) {
		t.Errorf("the server holds pod_resources %v, want %v", got.GetPodResources(), want)
	}
}

// The placement's pod_spec_patch, applied to a pod whose containers set CPU
// and memory requests and limits, keeps them as the task set them: it adds
// only the accelerator's resource.
func TestPodSpecPatchKeepsTheTasksCPUAndMemory(t *testing.T) {
	s := startServer(t)
	s.Register(a100Node())
	req, err := NewAllocateRequest(Task{ExecutionID: "exec-patch", Accelerator: &pb.Accelerator{Device: "A100"},
		Container: "main", PodResources: PodResources{CPUMilli: 2500, MemoryBytes: 5 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alloc, err := s.client().Allocate(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	pod := `{"initContainers":[{"name":"init","resources":{"requests":{"cpu":"250m","memory":"1Gi"}}}],` +
		`"containers":[{"name":"sidecar","resources":{"requests":{"cpu":"500m"},"limits":{"memory":"1Gi"}}},` +
		`{"name":"main","resources":{"requests":{"cpu":"2","memory":"4Gi","nvidia.com/gpu":"1"},"limits":{"cpu":"4","memory":"8Gi","nvidia.com/gpu":"1"}}}]}`
	out, err := ApplyPodSpecPatch([]byte(pod), alloc.GetPlacement().GetPodSpecPatch())
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		InitContainers, Containers []struct {
			Name      string
			Resources struct{ Requests, Limits map[string]string }
		}
	}
	if err := json.Unmarshal(out, &spec); err != nil {
		t.Fatal(err)
	}
	type resources = struct{ Requests, Limits map[string]string }
	want := map[string]resources{
		"init":    {Requests: map[string]string{"cpu": "250m", "memory": "1Gi"}},
		"sidecar": {Requests: map[string]string{"cpu": "500m"}, Limits: map[string]string{"memory": "1Gi"}},
		"main": {Requests: map[string]string{"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"},
			Limits: map[string]string{"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}},
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		if !reflect.DeepEqual(c.Resources, want[c.Name]) {
			t.Errorf("container %s: resources %v, want %v (patch %s)", c.Name, c.Resources, want[c.Name],
				alloc.GetPlacement().GetPodSpecPatch())
		}
	}
}
