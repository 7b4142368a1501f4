package flyteplugin

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
	"github.com/flyteorg/flyte/flyteidl/gen/pb-go/flyteidl/core"
	"github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/flytek8s/config"
	"github.com/flyteorg/flyte/flyteplugins/go/tasks/plugins/k8s/pod"
	v1 "k8s.io/api/core/v1"
)

// defaults is flytek8s' configuration before any test sets it: propeller's
// defaults (flyteplugins v1.16.8 flytek8s/config/config.go:31-70).
var defaults = *config.GetK8sPluginConfig()

// propellerDefaults sets flytek8s' configuration to propeller's defaults and
// checks the labels and resource they name.
func propellerDefaults(t *testing.T) {
	t.Helper()
	copied := defaults
	if err := config.SetK8sPluginConfig(&copied); err != nil {
		t.Fatal(err)
	}
	cfg := config.GetK8sPluginConfig()
	if cfg.GpuDeviceNodeLabel != "k8s.amazonaws.com/accelerator" ||
		cfg.GpuPartitionSizeNodeLabel != "k8s.amazonaws.com/gpu-partition-size" ||
		cfg.GpuResourceName != "nvidia.com/gpu" {
		t.Fatalf("propeller's defaults changed: %+v", cfg)
	}
}

// pods builds tk's pod twice: as propeller builds it (its own pod plugin:
// flytek8s.BuildRawPod, ToK8sPodSpec, ApplyGPUNodeSelectors), and as this
// plugin does through a real accelschedd holding nodes. It returns both and
// the allocation.
func pods(t *testing.T, tk task, nodes ...*pb.Node) (propeller, placed *v1.Pod, alloc *pb.Allocation) {
	t.Helper()
	s := startServer(t)
	s.Register(nodes...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tCtx := taskContext(tk)
	o, err := pod.DefaultPodPlugin.BuildResource(ctx, tCtx)
	if err != nil {
		t.Fatalf("propeller's pod: %v", err)
	}
	propeller = o.(*v1.Pod)

	p := NewPlugin(s.client(), nil, Options{Lease: time.Hour, TaskTypes: DefaultTaskTypes})
	req, err := p.requestOf(ctx, tCtx)
	if err != nil || req == nil {
		t.Fatalf("request: %v, %v", req, err)
	}
	if alloc, err = p.client.Allocate(ctx, req); err != nil || alloc.GetState() != pb.AllocationState_ACTIVE {
		t.Fatalf("Allocate %v: %v, %v", req, alloc, err)
	}
	o, err = PlacingPodPlugin{Plugin: pod.DefaultPodPlugin}.BuildResource(context.WithValue(ctx, allocationKey{}, alloc), tCtx)
	if err != nil {
		t.Fatalf("the plugin's pod: %v", err)
	}
	return propeller, o.(*v1.Pod), alloc
}

func requirementsOf(p *v1.Pod) [][]v1.NodeSelectorRequirement {
	var out [][]v1.NodeSelectorRequirement
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			out = append(out, term.MatchExpressions)
		}
	}
	return out
}

func hasRequirement(terms [][]v1.NodeSelectorRequirement, want v1.NodeSelectorRequirement) bool {
	if len(terms) == 0 {
		return false
	}
	for _, term := range terms { // in every term
		found := false
		for _, r := range term {
			if fmt.Sprint(r) == fmt.Sprint(want) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func containerOf(t *testing.T, p *v1.Pod, name string) *v1.Container {
	t.Helper()
	c := containerNamed(&p.Spec, name)
	if c == nil {
		t.Fatalf("no container %q in %v", name, p.Spec.Containers)
	}
	return c
}

// conforms checks that placed has every node-selector requirement (in every
// term), toleration and primary-container resource propeller's pod has,
// except the requirements and resources named in differs, the same CPU and
// memory request as a pod, plus the pin to the allocation's node.
func conforms(t *testing.T, propeller, placed *v1.Pod, alloc *pb.Allocation, differs ...string) {
	t.Helper()
	skip := map[string]bool{}
	for _, d := range differs {
		skip[d] = true
	}
	placedTerms := requirementsOf(placed)
	for _, term := range requirementsOf(propeller) {
		for _, r := range term {
			if !skip[r.Key] && !hasRequirement(placedTerms, r) {
				t.Errorf("propeller's requirement %v is not in every term of the plugin's pod: %v", r, placedTerms)
			}
		}
	}
	for _, want := range propeller.Spec.Tolerations {
		if !hasToleration(placed.Spec.Tolerations, want) {
			t.Errorf("propeller's toleration %v is not on the plugin's pod: %v", want, placed.Spec.Tolerations)
		}
	}
	primary := propeller.Spec.Containers[0].Name
	got := containerOf(t, placed, primary).Resources
	for _, lists := range [][2]v1.ResourceList{{propeller.Spec.Containers[0].Resources.Limits, got.Limits},
		{propeller.Spec.Containers[0].Resources.Requests, got.Requests}} {
		for name, q := range lists[0] {
			if skip[string(name)] {
				continue
			}
			if have, ok := lists[1][name]; !ok || have.Cmp(q) != 0 {
				t.Errorf("resource %s: propeller %v, the plugin %v", name, q.String(), have.String())
			}
		}
	}
	if got, want := podResourcesOf(&placed.Spec), podResourcesOf(&propeller.Spec); got != want {
		t.Errorf("the plugin's pod requests %+v of CPU and memory, propeller's %+v", got, want)
	}
	pin := v1.NodeSelectorRequirement{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn,
		Values: []string{alloc.GetNode() + "-host"}}
	if !hasRequirement(placedTerms, pin) {
		t.Errorf("the plugin's pod is not pinned to %v: %v", pin, placedTerms)
	}
	if placed.Annotations[AllocationAnnotation] != alloc.GetId() {
		t.Errorf("annotation %s = %q, want %s", AllocationAnnotation, placed.Annotations[AllocationAnnotation], alloc.GetId())
	}
}

func node(name string, labels map[string]string, devices ...*pb.Device) *pb.Node {
	all := map[string]string{"kubernetes.io/hostname": name + "-host"}
	for k, v := range labels {
		all[k] = v
	}
	return &pb.Node{Name: name, Labels: all, Devices: devices}
}

// deviceIDs numbers devices across nodes: an id is the device's, unique in
// the catalog.
var deviceIDs atomic.Int32

func gpus(model string, n int) []*pb.Device {
	var out []*pb.Device
	for i := 0; i < n; i++ {
		out = append(out, gpu(fmt.Sprintf("GPU-%d", deviceIDs.Add(1)), model, int32(i)))
	}
	return out
}

func requirement(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirement {
	return v1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// Whole NVIDIA GPUs, by flytekit's spellings (which propeller v1 writes
// unchanged), unpartitioned, MIG under the single strategy and a plain
// `gpu: N`: the plugin's pod has all of propeller's pod and the pin.
func TestPluginPodHasAllOfPropellersPod(t *testing.T) {
	propellerDefaults(t)
	for _, c := range []struct {
		name  string
		task  task
		nodes []*pb.Node
		// What propeller writes for the accelerator and the plugin must too.
		want []v1.NodeSelectorRequirement
	}{
		{"flytekit A100", task{gpus: 1, accelerator: &core.GPUAccelerator{Device: "nvidia-tesla-a100"}},
			[]*pb.Node{node("a100", nil, gpus("NVIDIA A100-SXM4-40GB", 2)...)},
			[]v1.NodeSelectorRequirement{requirement("k8s.amazonaws.com/accelerator", v1.NodeSelectorOpIn, "nvidia-tesla-a100")}},
		{"flytekit H100, two", task{gpus: 2, accelerator: &core.GPUAccelerator{Device: "nvidia-h100"}},
			[]*pb.Node{node("h100", nil, gpus("NVIDIA H100 80GB HBM3", 8)...)},
			[]v1.NodeSelectorRequirement{requirement("k8s.amazonaws.com/accelerator", v1.NodeSelectorOpIn, "nvidia-h100")}},
		{"another H100 spelling", task{gpus: 1, accelerator: &core.GPUAccelerator{Device: "nvidia-h100-80gb"}},
			[]*pb.Node{node("h100", nil, gpus("H100", 1)...)},
			[]v1.NodeSelectorRequirement{requirement("k8s.amazonaws.com/accelerator", v1.NodeSelectorOpIn, "nvidia-h100-80gb")}},
		{"flytekit L4", task{gpus: 1, accelerator: &core.GPUAccelerator{Device: "nvidia-l4"}},
			[]*pb.Node{node("l4", nil, gpus("NVIDIA L4", 1)...)},
			[]v1.NodeSelectorRequirement{requirement("k8s.amazonaws.com/accelerator", v1.NodeSelectorOpIn, "nvidia-l4")}},
		{"A100 unpartitioned", task{gpus: 1, accelerator: &core.GPUAccelerator{Device: "nvidia-tesla-a100",
			PartitionSizeValue: &core.GPUAccelerator_Unpartitioned{Unpartitioned: true}}},
			[]*pb.Node{node("a100", nil, gpus("nvidia-tesla-a100", 1)...)},
			[]v1.NodeSelectorRequirement{requirement("k8s.amazonaws.com/gpu-partition-size", v1.NodeSelectorOpDoesNotExist)}},
		{"MIG, single strategy", task{gpus: 1, accelerator: &core.GPUAccelerator{Device: "nvidia-tesla-a100",
			PartitionSizeValue: &core.GPUAccelerator_PartitionSize{PartitionSize: "3g.20gb"}}},
			[]*pb.Node{node("mig", map[string]string{"k8s.amazonaws.com/gpu-partition-size": "3g.20gb"},
				migGpu("GPU-m", "nvidia-tesla-a100", 0, "3g.20gb", 0, 4))},
			[]v1.NodeSelectorRequirement{requirement("k8s.amazonaws.com/gpu-partition-size", v1.NodeSelectorOpIn, "3g.20gb")}},
		{"plain gpu: 1", task{gpus: 1},
			[]*pb.Node{node("any", nil, gpus("nvidia-tesla-t4", 1)...)}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.task.name = "f7c2a9-n0-0"
			propeller, placed, alloc := pods(t, c.task, c.nodes...)
			conforms(t, propeller, placed, alloc)
			for _, r := range c.want {
				if !hasRequirement(requirementsOf(propeller), r) || !hasRequirement(requirementsOf(placed), r) {
					t.Errorf("%v: propeller %v, the plugin %v", r, requirementsOf(propeller), requirementsOf(placed))
				}
			}
			if q := containerOf(t, placed, "f7c2a9-n0-0").Resources.Limits["nvidia.com/gpu"]; q.Value() != c.task.gpus {
				t.Errorf("nvidia.com/gpu %v, want %d", q.String(), c.task.gpus)
			}
		})
	}
}

// Where accelsched knows better than propeller v1.16.8 (whose pod could not
// be scheduled there), the plugin's pod differs in exactly these ways.
func TestPluginPodDiffersWherePropellersCouldNotRun(t *testing.T) {
	propellerDefaults(t)
	const accelerator, partition = "k8s.amazonaws.com/accelerator", "k8s.amazonaws.com/gpu-partition-size"

	t.Run("the node's own label value", func(t *testing.T) {
		tk := task{name: "f7c2a9-n0-0", gpus: 1, accelerator: &core.GPUAccelerator{Device: "nvidia-tesla-a100"}}
		propeller, placed, alloc := pods(t, tk, node("a100", map[string]string{accelerator: "a100-40g"},
			gpus("nvidia-tesla-a100", 1)...))
		conforms(t, propeller, placed, alloc, accelerator)
		if want := requirement(accelerator, v1.NodeSelectorOpIn, "a100-40g"); !hasRequirement(requirementsOf(placed), want) {
			t.Errorf("want %v: %v", want, requirementsOf(placed))
		}
	})

	t.Run("MIG, mixed strategy", func(t *testing.T) {
		tk := task{name: "f7c2a9-n0-0", gpus: 1, accelerator: &core.GPUAccelerator{Device: "nvidia-tesla-a100",
			PartitionSizeValue: &core.GPUAccelerator_PartitionSize{PartitionSize: "3g.20gb"}}}
		propeller, placed, alloc := pods(t, tk, node("mixed", map[string]string{"nvidia.com/mig.strategy": "mixed"},
			migGpu("GPU-m", "nvidia-tesla-a100", 0, "3g.20gb", 0, 4)))
		conforms(t, propeller, placed, alloc, partition, "nvidia.com/gpu")
		limits := containerOf(t, placed, tk.name).Resources.Limits
		if _, ok := limits["nvidia.com/gpu"]; ok || limits["nvidia.com/mig-3g.20gb"] != quantity(1) {
			t.Errorf("limits %v: want nvidia.com/mig-3g.20gb: 1 instead of nvidia.com/gpu", limits)
		}
		for _, term := range requirementsOf(placed) {
			for _, r := range term {
				if r.Key == partition {
					t.Errorf("a partition requirement on a mixed-strategy node: %v", r)
				}
			}
		}
	})

	// propeller v1.16.8 knows NVIDIA GPUs only: it gives any device the GPU
	// label and nvidia.com/gpu. accelsched gives each class its own.
	for _, c := range []struct {
		name, device, partition string
		devices                 []*pb.Device
		resource                string
		want                    []v1.NodeSelectorRequirement
	}{
		{"TPU v5p, one host", "tpu-v5p-slice", "2x2x1", tpuChips("v5p-1", "2x2x1", 4), "google.com/tpu",
			[]v1.NodeSelectorRequirement{
				requirement("cloud.google.com/gke-tpu-accelerator", v1.NodeSelectorOpIn, "tpu-v5p-slice"),
				requirement("cloud.google.com/gke-tpu-topology", v1.NodeSelectorOpIn, "2x2x1")}},
		{"AWS Trainium", "TRN1", "", gpus("aws-trn1", 1), "aws.amazon.com/neuron",
			[]v1.NodeSelectorRequirement{requirement(accelerator, v1.NodeSelectorOpIn, "aws-neuron-trn1")}},
		{"AMD MI300X", "MI300X", "", gpus("amd-mi300x", 1), "amd.com/gpu",
			[]v1.NodeSelectorRequirement{requirement(accelerator, v1.NodeSelectorOpIn, "amd-mi300x")}},
		{"Intel Gaudi", "habana-gaudi2", "", gpus("habana-gaudi2", 1), "habana.ai/gaudi",
			[]v1.NodeSelectorRequirement{requirement(accelerator, v1.NodeSelectorOpIn, "habana-gaudi2")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			acc := &core.GPUAccelerator{Device: c.device}
			count := int64(1)
			if c.partition != "" {
				acc.PartitionSizeValue = &core.GPUAccelerator_PartitionSize{PartitionSize: c.partition}
				count = int64(len(c.devices))
			}
			tk := task{name: "f7c2a9-n0-0", gpus: count, accelerator: acc}
			propeller, placed, alloc := pods(t, tk, node("n", nil, c.devices...))
			conforms(t, propeller, placed, alloc, accelerator, partition, "nvidia.com/gpu")
			for _, r := range c.want {
				if !hasRequirement(requirementsOf(placed), r) {
					t.Errorf("want %v: %v", r, requirementsOf(placed))
				}
			}
			limits := containerOf(t, placed, tk.name).Resources.Limits
			if _, ok := limits["nvidia.com/gpu"]; ok || limits[v1.ResourceName(c.resource)] != quantity(count) {
				t.Errorf("limits %v: want %s: %d and no nvidia.com/gpu", limits, c.resource, count)
			}
		})
	}
}

func tpuChips(slice, topology string, n int) []*pb.Device {
	var out []*pb.Device
	for i := 0; i < n; i++ {
		d := gpu(fmt.Sprintf("chip-%d", i), "tpu-v5p-slice", int32(i))
		d.TpuSliceId, d.TpuTopology = slice, topology
		out = append(out, d)
	}
	return out
}

// What the pod requires of its node as single labels (the platform's
// default-node-selector, its non-interruptible node selector requirement)
// is the request's: the node accelsched chooses has those labels too.
func TestPodNodeRequirementsChooseTheNode(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*config.K8sPluginConfig)
	}{
		{"default-node-selector", func(cfg *config.K8sPluginConfig) {
			cfg.DefaultNodeSelector = map[string]string{"pool": "flyte"}
		}},
		{"non-interruptible-node-selector-requirement", func(cfg *config.K8sPluginConfig) {
			cfg.NonInterruptibleNodeSelectorRequirement = &v1.NodeSelectorRequirement{
				Key: "pool", Operator: v1.NodeSelectorOpIn, Values: []string{"flyte"}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := defaults
			c.set(&cfg)
			if err := config.SetK8sPluginConfig(&cfg); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { propellerDefaults(t) })
			tk := task{name: "f7c2a9-n0-0", gpus: 1, accelerator: &core.GPUAccelerator{Device: "nvidia-tesla-a100"}}
			// Without the requirement, packing would choose "a-other": its
			// one GPU is the best fit.
			propeller, placed, alloc := pods(t, tk, node("a-other", nil, gpus("nvidia-tesla-a100", 1)...),
				node("flyte", map[string]string{"pool": "flyte"}, gpus("nvidia-tesla-a100", 2)...))
			conforms(t, propeller, placed, alloc)
			if alloc.GetNode() != "flyte" {
				t.Errorf("placed on %s", alloc.GetNode())
			}
		})
	}
}
