package accelsched

import (
	"strings"
	"testing"
	"time"

	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
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
		Accelerator: acc, Count: 2, Container: "f1a2b3-n0-0", Lease: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := &pb.AllocateRequest{RequestId: "f1a2b3-n0-0", Tenant: "flytesnacks/development", Accelerator: acc, Count: 2,
		ContainerName: "f1a2b3-n0-0"}
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
	plain, err := NewAllocateRequest(Task{ExecutionID: "e"})
	if err != nil || plain.Accelerator != nil || plain.Tenant != "" || plain.Lease != nil {
		t.Errorf("plain gpu: %v, %v", plain, err)
	}
	for _, c := range []struct {
		task Task
		want string
	}{
		{Task{}, "ExecutionID"},
		{Task{ExecutionID: "e", Count: -1}, "Count"},
		{Task{ExecutionID: "e", Lease: -time.Second}, "Lease"},
	} {
		if _, err := NewAllocateRequest(c.task); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewAllocateRequest(%+v) = %v, want an error naming %s", c.task, err, c.want)
		}
	}
}
