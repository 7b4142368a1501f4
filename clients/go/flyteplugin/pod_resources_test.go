package flyteplugin

import (
	"context"
	"testing"
	"time"

	"github.com/accelsched/accelsched/clients/go/accelsched"
	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
	"github.com/flyteorg/flyte/flyteidl/gen/pb-go/flyteidl/core"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// list is a ResourceList from "name=quantity" pairs.
func list(pairs ...string) v1.ResourceList {
	if len(pairs) == 0 {
		return nil
	}
	out := v1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[v1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func container(name string, requests, limits v1.ResourceList) v1.Container {
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func sidecar(name string, requests, limits v1.ResourceList) v1.Container {
	c := container(name, requests, limits)
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

// The pod's effective request, as the scheduler counts it
// (k8s.io/component-helpers/resource PodRequests; kubernetes.io/docs/
// concepts/resource-management/effective-pod-requests-limits/).
func TestPodResourcesIsTheEffectiveRequest(t *testing.T) {
	for _, c := range []struct {
		name string
		spec v1.PodSpec
		want accelsched.PodResources
	}{
		{"requests, not limits", v1.PodSpec{Containers: []v1.Container{
			container("main", list("cpu", "500m", "memory", "4Gi"), list("cpu", "2", "memory", "8Gi", "nvidia.com/gpu", "1"))}},
			accelsched.PodResources{CPUMilli: 500, MemoryBytes: 4 << 30}},
		{"a limit without a request is the request", v1.PodSpec{Containers: []v1.Container{
			container("main", list("cpu", "500m"), list("cpu", "2", "memory", "8Gi"))}},
			accelsched.PodResources{CPUMilli: 500, MemoryBytes: 8 << 30}},
		{"an explicit zero request stays zero", v1.PodSpec{Containers: []v1.Container{
			container("main", list("cpu", "0"), list("cpu", "2"))}},
			accelsched.PodResources{}},
		{"nothing requested", v1.PodSpec{Containers: []v1.Container{
			container("main", nil, list("nvidia.com/gpu", "1"))}},
			accelsched.PodResources{}},
		{"containers add up", v1.PodSpec{Containers: []v1.Container{
			container("main", list("cpu", "1", "memory", "1G"), nil),
			container("logs", list("cpu", "250m", "memory", "256Mi"), nil)}},
			accelsched.PodResources{CPUMilli: 1250, MemoryBytes: 1e9 + 256<<20}},
		// The example of kube-scheduler's computePodResourceRequest comment
		// (pkg/scheduler/framework/plugins/noderesources/fit.go): init
		// containers run one at a time, so the largest counts.
		{"the largest init container", v1.PodSpec{
			InitContainers: []v1.Container{
				container("ic1", list("cpu", "2", "memory", "1G"), nil),
				container("ic2", list("cpu", "2", "memory", "3G"), nil)},
			Containers: []v1.Container{
				container("c1", list("cpu", "2", "memory", "1G"), nil),
				container("c2", list("cpu", "1", "memory", "1G"), nil)}},
			accelsched.PodResources{CPUMilli: 3000, MemoryBytes: 3e9}},
		// A sidecar (restartPolicy Always) runs beside the containers and
		// beside the init containers listed after it.
		{"a sidecar adds to both phases", v1.PodSpec{
			InitContainers: []v1.Container{
				sidecar("proxy", list("cpu", "1", "memory", "1Gi"), nil),
				container("fetch", list("cpu", "3", "memory", "1Gi"), nil)},
			Containers: []v1.Container{container("main", list("cpu", "1", "memory", "4Gi"), nil)}},
			accelsched.PodResources{CPUMilli: 4000, MemoryBytes: 5 << 30}},
		{"an init container before the sidecar runs without it", v1.PodSpec{
			InitContainers: []v1.Container{
				container("fetch", list("cpu", "3"), nil),
				sidecar("proxy", list("cpu", "1"), nil)},
			Containers: []v1.Container{container("main", list("cpu", "1"), nil)}},
			accelsched.PodResources{CPUMilli: 3000}},
		{"overhead", v1.PodSpec{
			Containers: []v1.Container{container("main", list("cpu", "1", "memory", "1Gi"), nil)},
			Overhead:   list("cpu", "250m", "memory", "120Mi")},
			accelsched.PodResources{CPUMilli: 1250, MemoryBytes: 1<<30 + 120<<20}},
		{"pod-level requests replace the containers'", v1.PodSpec{
			Containers: []v1.Container{container("main", list("cpu", "1", "memory", "1Gi"), nil)},
			Resources:  &v1.ResourceRequirements{Requests: list("cpu", "3"), Limits: list("memory", "8Gi")},
			Overhead:   list("cpu", "100m")},
			accelsched.PodResources{CPUMilli: 3100, MemoryBytes: 1 << 30}},
		{"a pod-level limit is the request when no container has one", v1.PodSpec{
			Containers: []v1.Container{container("main", list("cpu", "1"), nil)},
			Resources:  &v1.ResourceRequirements{Limits: list("cpu", "4", "memory", "8Gi")}},
			accelsched.PodResources{CPUMilli: 1000, MemoryBytes: 8 << 30}},
		// Each value as the API server stores it (up to thousandths: 2m and
		// 1m of CPU, 1.5 and 0.201 bytes), the sums up to whole units.
		{"rounded up", v1.PodSpec{Containers: []v1.Container{
			container("a", list("cpu", "1500u", "memory", "1500m"), nil),
			container("b", list("cpu", "0.0005", "memory", "0.2001"), nil)}},
			accelsched.PodResources{CPUMilli: 3, MemoryBytes: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := podResourcesOf(&c.spec); got != c.want {
				t.Errorf("%+v, want %+v", got, c.want)
			}
		})
	}
}

// The request sends the effective request of the pod propeller's pod plugin
// builds (the task's requests, or its limits where it sets none), one pod.
func TestRequestCarriesThePodsCPUAndMemory(t *testing.T) {
	propellerDefaults(t)
	s := startServer(t)
	p := NewPlugin(s.client(), nil, Options{Lease: time.Hour, TaskTypes: DefaultTaskTypes})
	for _, c := range []struct {
		name     string
		requests []*core.Resources_ResourceEntry
		want     *pb.NodeResources
	}{
		{"requests", []*core.Resources_ResourceEntry{{Name: core.Resources_CPU, Value: "1500m"},
			{Name: core.Resources_MEMORY, Value: "3Gi"}}, &pb.NodeResources{CpuMilli: 1500, MemoryBytes: 3 << 30, Pods: 1}},
		{"limits only", nil, &pb.NodeResources{CpuMilli: 2000, MemoryBytes: 8 << 30, Pods: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := p.requestOf(context.Background(), taskContext(task{name: "f7c2a9-n0-0", gpus: 1, requests: c.requests}))
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(req.GetPodResources(), c.want) {
				t.Errorf("pod_resources %v, want %v", req.GetPodResources(), c.want)
			}
		})
	}
}

// ApplyPlacement (and the ResourceClaim's swap) changes only the
// accelerator's resource on the primary container: every container keeps
// the CPU and memory requests and limits the task set.
func TestPlacementKeepsTheTasksCPUAndMemory(t *testing.T) {
	propellerDefaults(t)
	pin := []*pb.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: "In", Values: []string{"n1"}}}
	for _, c := range []struct {
		name      string
		placement *pb.Placement
		claims    bool
		// The primary container's accelerator resources after it.
		want v1.ResourceList
	}{
		{"nvidia.com/gpu", &pb.Placement{NodeAffinity: pin, ResourceName: "nvidia.com/gpu", ResourceCount: 2},
			false, list("nvidia.com/gpu", "2")},
		{"mixed-strategy MIG", &pb.Placement{NodeAffinity: pin, ResourceName: "nvidia.com/mig-3g.20gb", ResourceCount: 1},
			false, list("nvidia.com/mig-3g.20gb", "1")},
		{"TPU", &pb.Placement{NodeAffinity: pin, ResourceName: "google.com/tpu", ResourceCount: 4},
			false, list("google.com/tpu", "4")},
		{"ResourceClaim", &pb.Placement{NodeAffinity: pin, ResourceName: "nvidia.com/gpu", ResourceCount: 1,
			ResourceClaim: `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"accelsched-a1"}}`},
			true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			built := &v1.Pod{Spec: v1.PodSpec{
				InitContainers: []v1.Container{container("init", list("cpu", "250m", "memory", "1Gi"), list("memory", "2Gi"))},
				Containers: []v1.Container{
					container("logs", list("cpu", "100m"), list("cpu", "200m", "memory", "256Mi")),
					container("main", list("cpu", "1500m", "memory", "6Gi", "nvidia.com/gpu", "1"),
						list("cpu", "4", "memory", "12Gi", "nvidia.com/gpu", "1"))}}}
			before := built.DeepCopy()
			if err := ApplyPlacement(&built.Spec, "main", c.placement); err != nil {
				t.Fatal(err)
			}
			if c.claims {
				if err := useClaim(built, "main", c.placement); err != nil {
					t.Fatal(err)
				}
			}
			if !equality.Semantic.DeepEqual(built.Spec.InitContainers[0].Resources, before.Spec.InitContainers[0].Resources) ||
				!equality.Semantic.DeepEqual(built.Spec.Containers[0].Resources, before.Spec.Containers[0].Resources) {
				t.Errorf("other containers changed: %v, %v", built.Spec.InitContainers[0].Resources, built.Spec.Containers[0].Resources)
			}
			main, was := built.Spec.Containers[1].Resources, before.Spec.Containers[1].Resources
			for _, lists := range [][2]v1.ResourceList{{main.Requests, was.Requests}, {main.Limits, was.Limits}} {
				got, before := lists[0], lists[1]
				for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
					if q := got[name]; q.Cmp(before[name]) != 0 {
						t.Errorf("%s %v, the task set %v", name, q.String(), before[name])
					}
				}
				accelerators := v1.ResourceList{}
				for name, q := range got {
					if name != v1.ResourceCPU && name != v1.ResourceMemory {
						accelerators[name] = q
					}
				}
				if want := c.want; !equality.Semantic.DeepEqual(accelerators, want) && !(len(want) == 0 && len(accelerators) == 0) {
					t.Errorf("accelerator resources %v, want %v", accelerators, want)
				}
			}
			if podResourcesOf(&built.Spec) != podResourcesOf(&before.Spec) {
				t.Errorf("the pod's effective request changed: %+v, was %+v", podResourcesOf(&built.Spec), podResourcesOf(&before.Spec))
			}
		})
	}
}
