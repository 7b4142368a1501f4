package accelsched

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
)

// What Flyte 2's propeller does to a task pod for a GPUAccelerator,
// transcribed from flyteorg/flyte main 6fadb90d,
// flyteplugins/go/tasks/pluginmachinery/flytek8s/, with its default
// configuration. The tests below check accelsched's patch against it, field
// by field. A transcription, because Flyte 2 (github.com/flyteorg/flyte/v2)
// is not on the Go module proxy to compile against; Flyte 1's propeller
// (v1.16.8) is checked against its own code in ../flyteplugin.

// config/config.go:70-120, the default accelerator-devices map.
var propellerDevices = map[string]string{
	"A10": "nvidia-a10", "A10G": "nvidia-a10g", "A100": "nvidia-tesla-a100",
	"A100 80G": "nvidia-a100-80gb", "A100G": "nvidia-a100g", "B200": "nvidia-b200",
	"GB200": "nvidia-gb200", "H100": "nvidia-h100", "H100 80G": "nvidia-h100-80gb",
	"H100 MEGA 80G": "nvidia-h100-mega-80gb", "H200": "nvidia-h200",
	"K80": "nvidia-tesla-k80", "L4": "nvidia-l4", "L40s": "nvidia-l40s",
	"L4_VWS": "nvidia-l4-vws", "M60": "nvidia-tesla-m60", "P4": "nvidia-tesla-p4",
	"P100": "nvidia-tesla-p100", "RTX PRO 6000": "nvidia-rtx-pro-6000",
	"T4": "nvidia-tesla-t4", "V100": "nvidia-tesla-v100",
	"V5E": "tpu-v5-lite-podslice", "V5P": "tpu-v5p-slice", "V6E": "tpu-v6e-slice",
	"INF1": "aws-neuron-inf1", "INF2": "aws-neuron-inf2", "TRN1": "aws-neuron-trn1",
	"TRN1N": "aws-neuron-trn1n", "TRN2": "aws-neuron-trn2", "TRN2U": "aws-neuron-trn2u",
	"MI100": "amd-mi100", "MI210": "amd-mi210", "MI250": "amd-mi250",
	"MI250X": "amd-mi250x", "MI300A": "amd-mi300a", "MI300X": "amd-mi300x",
	"MI325X": "amd-mi325x", "MI350X": "amd-mi350x", "MI355X": "amd-mi355x",
	"GAUDI1": "habana-gaudi-dl1",
}

// config/config.go:67-69 and 121-139; pod_helper.go:321-369 falls back to the
// global labels for a class that names none.
type propellerClass struct{ resource, deviceLabel, partitionLabel string }

var propellerClasses = map[pb.DeviceClass]propellerClass{
	pb.DeviceClass_NVIDIA_GPU:    {"nvidia.com/gpu", "k8s.amazonaws.com/accelerator", "k8s.amazonaws.com/gpu-partition-size"},
	pb.DeviceClass_GOOGLE_TPU:    {"google.com/tpu", "cloud.google.com/gke-tpu-accelerator", "cloud.google.com/gke-tpu-topology"},
	pb.DeviceClass_AMAZON_NEURON: {"aws.amazon.com/neuron", "k8s.amazonaws.com/accelerator", "k8s.amazonaws.com/gpu-partition-size"},
	pb.DeviceClass_AMD_GPU:       {"amd.com/gpu", "k8s.amazonaws.com/accelerator", "k8s.amazonaws.com/gpu-partition-size"},
	pb.DeviceClass_HABANA_GAUDI:  {"habana.ai/gaudi", "k8s.amazonaws.com/accelerator", "k8s.amazonaws.com/gpu-partition-size"},
}

// podFields are the PodSpec fields propeller's accelerator rules write.
type podFields struct {
	Requirements []nodeSelectorRequirement // of the one required term
	Tolerations  []toleration
	Limits       map[string]string // of the first container
	Requests     map[string]string
}

// propeller is what propeller writes on an empty pod for acc (nil: a plain
// `gpu: count`).
func propeller(acc *pb.Accelerator, count int) podFields {
	class := propellerClasses[acc.GetDeviceClass()]
	quantity := fmt.Sprint(count)
	// container_helper.go:133-149: "gpu" becomes the class's resource;
	// 73-86: the request copies the limit.
	f := podFields{Limits: map[string]string{class.resource: quantity}, Requests: map[string]string{class.resource: quantity}}
	if acc == nil {
		return f
	}
	// pod_helper.go:385-404, utils.go:104-110.
	if device := acc.GetDevice(); device != "" {
		value, ok := propellerDevices[strings.ToUpper(device)]
		if !ok {
			value = device
		}
		f.Requirements = append(f.Requirements, nodeSelectorRequirement{class.deviceLabel, "In", []string{value}})
		f.Tolerations = append(f.Tolerations, toleration{class.deviceLabel, "Equal", value, "NoSchedule"})
	}
	// pod_helper.go:407-449.
	switch p := acc.GetPartitionSizeValue().(type) {
	case *pb.Accelerator_Unpartitioned:
		if p.Unpartitioned {
			f.Requirements = append(f.Requirements, nodeSelectorRequirement{Key: class.partitionLabel, Operator: "DoesNotExist"})
		}
	case *pb.Accelerator_PartitionSize:
		f.Requirements = append(f.Requirements, nodeSelectorRequirement{class.partitionLabel, "In", []string{p.PartitionSize}})
		f.Tolerations = append(f.Tolerations, toleration{class.partitionLabel, "Equal", p.PartitionSize, "NoSchedule"})
	}
	return f
}

// fieldsOf reads back the fields of a patched PodSpec.
func fieldsOf(t *testing.T, podSpec []byte) podFields {
	// The fields a patch writes are the fields to read back.
	var spec podSpecPatch
	if err := json.Unmarshal(podSpec, &spec); err != nil {
		t.Fatalf("patched PodSpec %s: %v", podSpec, err)
	}
	var f podFields
	if terms := spec.Affinity.NodeAffinity.Required.Terms; len(terms) > 0 {
		if len(terms) != 1 {
			t.Errorf("%d node-selector terms, want 1", len(terms))
		}
		f.Requirements = terms[0].MatchExpressions
	}
	f.Tolerations = spec.Tolerations
	f.Limits = spec.Containers[0].Resources.Limits
	f.Requests = spec.Containers[0].Resources.Requests
	return f
}

func compare(t *testing.T, got, want podFields) {
	t.Helper()
	if !reflect.DeepEqual(got.Requirements, want.Requirements) {
		t.Errorf("node affinity:\n got %+v\nwant %+v", got.Requirements, want.Requirements)
	}
	if !reflect.DeepEqual(got.Tolerations, want.Tolerations) {
		t.Errorf("tolerations:\n got %+v\nwant %+v", got.Tolerations, want.Tolerations)
	}
	if !reflect.DeepEqual(got.Limits, want.Limits) {
		t.Errorf("limits: got %v, want %v", got.Limits, want.Limits)
	}
	if !reflect.DeepEqual(got.Requests, want.Requests) {
		t.Errorf("requests: got %v, want %v", got.Requests, want.Requests)
	}
}

func pin(host string) nodeSelectorRequirement {
	return nodeSelectorRequirement{"kubernetes.io/hostname", "In", []string{host}}
}

func gpu(id, model string, index int32) *pb.Device {
	return &pb.Device{Id: id, Model: model, Index: index, Healthy: true}
}

func migGpu(id string, index int32) *pb.Device {
	d := gpu(id, "NVIDIA A100-SXM4-40GB", index)
	d.MigEnabled = true
	for s := int32(0); s < 7; s++ {
		d.MigSlices = append(d.MigSlices, &pb.MigSlice{Id: fmt.Sprintf("MIG-%s-%d", id, s), Profile: "1g.5gb", Start: s})
	}
	return d
}

func tpuHost(name string) *pb.Node {
	n := &pb.Node{Name: name, Labels: map[string]string{"pool": "tpu"}}
	for i := int32(0); i < 4; i++ {
		d := gpu(fmt.Sprintf("%s-chip-%d", name, i), "tpu-v5p-slice", i)
		d.DeviceClass = pb.DeviceClass_GOOGLE_TPU
		d.TpuSliceId = "slice-1"
		d.TpuTopology = "2x2x2"
		n.Devices = append(n.Devices, d)
	}
	return n
}

var celUUID = regexp.MustCompile(`\.uuid == "([^"]+)"`)

// claimedUUIDs are the UUIDs a resource_claim's requests select, one each.
func claimedUUIDs(t *testing.T, claim string) []string {
	var c struct {
		APIVersion string `json:"apiVersion"`
		Spec       struct {
			Devices struct {
				Requests []struct {
					Exactly struct {
						DeviceClassName string `json:"deviceClassName"`
						Count           int    `json:"count"`
						Selectors       []struct {
							CEL struct {
								Expression string `json:"expression"`
							} `json:"cel"`
						} `json:"selectors"`
					} `json:"exactly"`
				} `json:"requests"`
			} `json:"devices"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(claim), &c); err != nil {
		t.Fatalf("resource_claim %q: %v", claim, err)
	}
	if c.APIVersion != "resource.k8s.io/v1" {
		t.Errorf("apiVersion %q", c.APIVersion)
	}
	var uuids []string
	for _, r := range c.Spec.Devices.Requests {
		if r.Exactly.Count != 1 || len(r.Exactly.Selectors) != 1 {
			t.Errorf("request %+v: want count 1 and one selector", r)
			continue
		}
		m := celUUID.FindStringSubmatch(r.Exactly.Selectors[0].CEL.Expression)
		if m == nil {
			t.Errorf("selector %q names no uuid", r.Exactly.Selectors[0].CEL.Expression)
			continue
		}
		uuids = append(uuids, m[1])
	}
	sort.Strings(uuids)
	return uuids
}

func allocatedIDs(a *pb.Allocation) []string {
	var ids []string
	for _, d := range a.GetDevices() {
		if d.GetMigSliceId() != "" {
			ids = append(ids, d.GetMigSliceId())
		} else {
			ids = append(ids, d.GetDeviceId())
		}
	}
	sort.Strings(ids)
	return ids
}

const emptyPod = `{"containers":[{"name":"task","image":"example/task:1"}]}`

// The done criterion of the Flyte integration: for each device class, the
// patch applied to an empty PodSpec gives exactly propeller's node
// affinity, tolerations and resource for the same GPUAccelerator, plus the
// hostname pin; a MIG-mixed node gets the mig resource and no partition
// label; the ResourceClaim selects exactly the allocated UUIDs.
func TestPatchedPodIsPropellersPlusThePin(t *testing.T) {
	s := startServer(t)
	c := s.client()
	s.Register(&pb.Node{Name: "whole", Labels: map[string]string{"pool": "whole", "kubernetes.io/hostname": "host-whole"},
		Devices: []*pb.Device{gpu("GPU-w0", "NVIDIA A100-SXM4-40GB", 0), gpu("GPU-w1", "NVIDIA A100-SXM4-40GB", 1)}})
	s.Register(&pb.Node{Name: "single", Labels: map[string]string{"pool": "single"}, Devices: []*pb.Device{migGpu("GPU-s", 0)}})
	s.Register(&pb.Node{Name: "mixed", Labels: map[string]string{"pool": "mixed", "nvidia.com/mig.strategy": "mixed"},
		Devices: []*pb.Device{migGpu("GPU-m", 0)}})
	// A node labelled with the value propeller writes for "H100 80G".
	s.Register(&pb.Node{Name: "h100", Labels: map[string]string{"k8s.amazonaws.com/accelerator": "nvidia-h100-80gb"},
		Devices: []*pb.Device{gpu("GPU-h", "NVIDIA H100 80GB HBM3", 0)}})
	s.Register(&pb.Node{Name: "h100-plain", Labels: map[string]string{"pool": "h100-plain"},
		Devices: []*pb.Device{gpu("GPU-h2", "H100", 0)}})
	s.Register(&pb.Node{Name: "plain", Labels: map[string]string{"pool": "plain"}, Devices: []*pb.Device{gpu("GPU-l4", "NVIDIA L4", 0)}})
	s.Register(tpuHost("tpu-a"))
	s.Register(tpuHost("tpu-b"))
	neuron := gpu("trn-0", "TRN1", 0)
	neuron.DeviceClass = pb.DeviceClass_AMAZON_NEURON
	s.Register(&pb.Node{Name: "neuron", Devices: []*pb.Device{neuron}})
	amd0, amd1 := gpu("amd-0", "MI300X", 0), gpu("amd-1", "MI300X", 1)
	amd0.DeviceClass, amd1.DeviceClass = pb.DeviceClass_AMD_GPU, pb.DeviceClass_AMD_GPU
	s.Register(&pb.Node{Name: "amd", Devices: []*pb.Device{amd0, amd1}})
	gaudi := gpu("hl-0", "GAUDI1", 0)
	gaudi.DeviceClass = pb.DeviceClass_HABANA_GAUDI
	s.Register(&pb.Node{Name: "gaudi", Devices: []*pb.Device{gaudi}})

	type hostCheck struct {
		host  string // the kubernetes.io/hostname pinned
		count int    // the devices its pod asks for
	}
	cases := []struct {
		name     string
		acc      *pb.Accelerator // as the Flyte task declares it
		count    int32
		pool     string
		hosts    []hostCheck // one per node of the allocation
		mixed    bool
		claimed  bool
		resource string // accelsched's, where it differs from propeller's
	}{
		{name: "nvidia whole GPU", acc: &pb.Accelerator{Device: "A100"}, count: 2, pool: "whole",
			hosts: []hostCheck{{"host-whole", 2}}, claimed: true},
		{name: "MIG single", acc: &pb.Accelerator{Device: "A100", PartitionSizeValue: &pb.Accelerator_PartitionSize{PartitionSize: "1g.5gb"}},
			count: 1, pool: "single", hosts: []hostCheck{{"single", 1}}, claimed: true},
		{name: "MIG mixed", acc: &pb.Accelerator{Device: "A100", PartitionSizeValue: &pb.Accelerator_PartitionSize{PartitionSize: "1g.5gb"}},
			count: 2, pool: "mixed", hosts: []hostCheck{{"mixed", 2}}, mixed: true, claimed: true, resource: "nvidia.com/mig-1g.5gb"},
		{name: "nvidia unpartitioned, the node's own label", acc: &pb.Accelerator{Device: "H100 80G", PartitionSizeValue: &pb.Accelerator_Unpartitioned{Unpartitioned: true}},
			count: 1, hosts: []hostCheck{{"h100", 1}}, claimed: true},
		// No label on the node: the value propeller writes for the task's
		// spelling, its map's (not the registry's nvidia-h100).
		{name: "nvidia, a spelling the map gives its own value", acc: &pb.Accelerator{Device: "H100 80G"},
			count: 1, pool: "h100-plain", hosts: []hostCheck{{"h100-plain", 1}}, claimed: true},
		{name: "plain gpu: 1", count: 1, pool: "plain", hosts: []hostCheck{{"plain", 1}}, claimed: true},
		{name: "TPU multi-host", acc: &pb.Accelerator{Device: "V5P", DeviceClass: pb.DeviceClass_GOOGLE_TPU,
			PartitionSizeValue: &pb.Accelerator_PartitionSize{PartitionSize: "2x2x2"}},
			hosts: []hostCheck{{"tpu-a", 4}, {"tpu-b", 4}}},
		{name: "Neuron", acc: &pb.Accelerator{Device: "TRN1", DeviceClass: pb.DeviceClass_AMAZON_NEURON}, count: 1, hosts: []hostCheck{{"neuron", 1}}},
		{name: "AMD", acc: &pb.Accelerator{Device: "MI300X", DeviceClass: pb.DeviceClass_AMD_GPU}, count: 2, hosts: []hostCheck{{"amd", 2}}},
		{name: "Gaudi", acc: &pb.Accelerator{Device: "GAUDI1", DeviceClass: pb.DeviceClass_HABANA_GAUDI}, count: 1, hosts: []hostCheck{{"gaudi", 1}}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := NewAllocateRequest(Task{ExecutionID: fmt.Sprintf("exec-%d", i), Project: "flytesnacks",
				Domain: "development", Accelerator: tc.acc, Count: tc.count, Container: "task"})
			if err != nil {
				t.Fatal(err)
			}
			if tc.pool != "" {
				req.NodeSelector = map[string]string{"pool": tc.pool}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			a, err := c.Allocate(ctx, req)
			if err != nil {
				t.Fatalf("Allocate: %v", err)
			}
			if len(a.GetPlacements()) != len(tc.hosts) {
				t.Fatalf("%d placements, want %d", len(a.GetPlacements()), len(tc.hosts))
			}
			for h, host := range tc.hosts {
				p := a.GetPlacements()[h]
				patched, err := ApplyPodSpecPatch([]byte(emptyPod), p.GetPodSpecPatch())
				if err != nil {
					t.Fatal(err)
				}
				want := propeller(tc.acc, host.count)
				if tc.mixed {
					// accelsched's one difference: the mixed strategy's
					// resource, and no partition label for the node to lack.
					want.Requirements = want.Requirements[:1]
					want.Tolerations = want.Tolerations[:1]
				}
				if tc.resource != "" {
					q := fmt.Sprint(host.count)
					want.Limits = map[string]string{tc.resource: q}
					want.Requests = map[string]string{tc.resource: q}
				}
				want.Requirements = append(want.Requirements, pin(host.host))
				compare(t, fieldsOf(t, patched), want)
				if tc.claimed {
					if got, want := claimedUUIDs(t, p.GetResourceClaim()), allocatedIDs(a); !reflect.DeepEqual(got, want) {
						t.Errorf("the claim selects %v, allocated %v", got, want)
					}
				} else if claim := p.GetResourceClaim(); claim != "" {
					t.Errorf("a claim without a DRA driver: %s", claim)
				}
			}
			if len(tc.hosts) > 1 {
				// The slice's own placement: propeller's for one host, no pin.
				patched, err := ApplyPodSpecPatch([]byte(emptyPod), a.GetPlacement().GetPodSpecPatch())
				if err != nil {
					t.Fatal(err)
				}
				compare(t, fieldsOf(t, patched), propeller(tc.acc, tc.hosts[0].count))
			} else if a.GetPlacement().String() != a.GetPlacements()[0].String() {
				t.Errorf("placement %v differs from its one node's %v", a.GetPlacement(), a.GetPlacements()[0])
			}
			if env := a.GetPlacement().GetEnv(); len(env) != 0 {
				t.Errorf("env %v, want none by default", env)
			}
		})
	}
}
