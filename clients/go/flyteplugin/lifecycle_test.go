package flyteplugin

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/accelsched/accelsched/clients/go/accelsched"
	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
	"github.com/flyteorg/flyte/flyteidl/gen/pb-go/flyteidl/core"
	pluginsCore "github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/core"
	pluginsCoreMock "github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/core/mocks"
	"github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/k8s"
	"github.com/flyteorg/flyte/flyteplugins/go/tasks/plugins/k8s/pod"
	"github.com/flyteorg/flyte/flytepropeller/pkg/controller/executors/mocks"
	propellerk8s "github.com/flyteorg/flyte/flytepropeller/pkg/controller/nodes/task/k8s"
	"github.com/flyteorg/flyte/flytestdlib/promutils"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// setupContext is what propeller gives a plugin when it loads it, over a
// fake Kubernetes API (controller-runtime's), as propeller's own plugin
// manager tests make it (flytepropeller pkg/controller/nodes/task/k8s/
// plugin_manager_test.go dummySetupContext).
func setupContext(kube client.Client) pluginsCore.SetupContext {
	sCtx := &pluginsCoreMock.SetupContext{}
	sCtx.On("EnqueueOwner").Return(pluginsCore.EnqueueOwner(func(k8stypes.NamespacedName) error { return nil }))
	kubeClient := &pluginsCoreMock.KubeClient{}
	kubeClient.On("GetClient").Return(kube)
	kubeClient.On("GetCache").Return(&mocks.FakeInformers{})
	sCtx.On("KubeClient").Return(kubeClient)
	sCtx.On("OwnerKind").Return("FlyteWorkflow")
	sCtx.On("MetricsScope").Return(promutils.NewTestScope())
	return sCtx
}

// loaded is the plugin as Load makes it, but on a test server's connection
// and a fake Kubernetes API; claims is Config.ResourceClaims.
func loaded(t *testing.T, s server, kube client.Client, claims ...bool) *Plugin {
	t.Helper()
	pods, err := propellerk8s.NewPluginManager(context.Background(), setupContext(kube), k8s.PluginEntry{
		ID: ID, RegisteredTaskTypes: DefaultTaskTypes, ResourceToWatch: &v1.Pod{},
		Plugin: PlacingPodPlugin{Plugin: pod.DefaultPodPlugin, Claims: len(claims) > 0 && claims[0], Kube: kube},
	}, propellerk8s.NewResourceMonitorIndex(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return NewPlugin(s.client().WithBackoff(Backoff(GetConfig())), pods, time.Hour, DefaultTaskTypes)
}

// round is one propeller round of the task: Handle, again while it returns
// a system error (propeller re-runs the round), at most 100 times.
func round(t *testing.T, p *Plugin, tCtx pluginsCore.TaskExecutionContext) pluginsCore.PhaseInfo {
	t.Helper()
	for i := 0; ; i++ {
		transition, err := p.Handle(context.Background(), tCtx)
		if err == nil {
			return transition.Info()
		}
		if i == 100 {
			t.Fatalf("Handle: %v", err)
		}
	}
}

func allocationOf(t *testing.T, c *accelsched.Client, requestID string) *pb.Allocation {
	t.Helper()
	out, err := c.Stub().GetAllocation(context.Background(),
		&pb.GetAllocationRequest{Key: &pb.GetAllocationRequest_RequestId{RequestId: requestID}})
	if err != nil {
		t.Fatalf("GetAllocation %s: %v", requestID, err)
	}
	return out
}

func podOf(t *testing.T, kube client.Client, name string) *v1.Pod {
	t.Helper()
	p := &v1.Pod{}
	if err := kube.Get(context.Background(), k8stypes.NamespacedName{Namespace: "flytesnacks-development", Name: name}, p); err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
	return p
}

func a100Task(name string) task {
	return task{name: name, gpus: 1, accelerator: &core.GPUAccelerator{Device: "nvidia-tesla-a100"}}
}

// Queued behind another task, admitted when it releases, the pod built with
// the placement, succeeded, released; a kill -9 of accelsched while the task
// waits changes nothing the task sees.
func TestTaskWaitsRunsAndReleases(t *testing.T) {
	propellerDefaults(t)
	s := startServer(t)
	s.Register(node("n1", nil, gpus("nvidia-tesla-a100", 1)...))
	c := s.client()
	kube := fake.NewClientBuilder().WithStatusSubresource(&v1.Pod{}).Build()
	p := loaded(t, s, kube)
	holder, err := c.Allocate(context.Background(), &pb.AllocateRequest{RequestId: "holder", Count: 1})
	if err != nil {
		t.Fatal(err)
	}

	tk := a100Task("f7c2a9-n0-0")
	tCtx := taskContext(tk, &stateStore{})
	waiting := round(t, p, tCtx)
	if waiting.Phase() != pluginsCore.PhaseWaitingForResources || !strings.Contains(waiting.Reason(), "position 1") {
		t.Fatalf("behind the holder: %v %q", waiting.Phase(), waiting.Reason())
	}
	s.Kill()
	s.Start()
	if again := round(t, p, tCtx); again.Phase() != waiting.Phase() || again.Reason() != waiting.Reason() ||
		again.Version() != waiting.Version() {
		t.Fatalf("after a restart: %v %q v%d; before: %v %q v%d", again.Phase(), again.Reason(), again.Version(),
			waiting.Phase(), waiting.Reason(), waiting.Version())
	}
	if _, err := c.Release(context.Background(), holder.GetId()); err != nil {
		t.Fatal(err)
	}

	launched := round(t, p, tCtx)
	if launched.Phase() != pluginsCore.PhaseQueued {
		t.Fatalf("after the release: %v %q", launched.Phase(), launched.Reason())
	}
	alloc := allocationOf(t, c, tk.name)
	if alloc.GetState() != pb.AllocationState_ACTIVE {
		t.Fatalf("allocation %v", alloc)
	}
	created := podOf(t, kube, tk.name)
	if created.Annotations[AllocationAnnotation] != alloc.GetId() ||
		!hasRequirement(requirementsOf(created), requirement("kubernetes.io/hostname", v1.NodeSelectorOpIn, "n1-host")) {
		t.Fatalf("the pod: %v %v", created.Annotations, requirementsOf(created))
	}

	created.Status.Phase = v1.PodSucceeded
	if err := kube.Status().Update(context.Background(), created); err != nil {
		t.Fatal(err)
	}
	if done := round(t, p, tCtx); done.Phase() != pluginsCore.PhaseSuccess {
		t.Fatalf("after the pod succeeded: %v %q", done.Phase(), done.Reason())
	}
	if a := allocationOf(t, c, tk.name); a.GetState() != pb.AllocationState_RELEASED {
		t.Fatalf("after success the allocation is %v", a.GetState())
	}
	if err := p.Finalize(context.Background(), tCtx); err != nil {
		t.Fatalf("Finalize: %v", err)
	}
}

// Abort deletes the pod and releases; a retried attempt is a new request.
func TestAbortReleasesAndARetryIsANewRequest(t *testing.T) {
	propellerDefaults(t)
	s := startServer(t)
	s.Register(node("n1", nil, gpus("nvidia-tesla-a100", 1)...))
	c := s.client()
	kube := fake.NewClientBuilder().Build()
	p := loaded(t, s, kube)
	first := a100Task("f7c2a9-n0-0")
	tCtx := taskContext(first, &stateStore{})
	if info := round(t, p, tCtx); info.Phase() != pluginsCore.PhaseQueued {
		t.Fatalf("first attempt: %v %q", info.Phase(), info.Reason())
	}
	if err := p.Abort(context.Background(), tCtx); err != nil {
		t.Fatal(err)
	}
	if a := allocationOf(t, c, first.name); a.GetState() != pb.AllocationState_RELEASED {
		t.Fatalf("after Abort: %v", a.GetState())
	}
	retry := a100Task("f7c2a9-n0-1")
	if info := round(t, p, taskContext(retry, &stateStore{})); info.Phase() != pluginsCore.PhaseQueued {
		t.Fatalf("second attempt: %v %q", info.Phase(), info.Reason())
	}
	if a, b := allocationOf(t, c, first.name), allocationOf(t, c, retry.name); a.GetId() == b.GetId() ||
		b.GetState() != pb.AllocationState_ACTIVE {
		t.Fatalf("attempts share %s, or the retry is %v", a.GetId(), b.GetState())
	}
}

// A refusal fails the task with accelsched's message; accelsched down is a
// system error; a task without a GPU never asks.
func TestRefusalsAndOutages(t *testing.T) {
	propellerDefaults(t)
	s := startServer(t)
	s.Register(node("n1", nil, gpus("nvidia-tesla-a100", 1)...))
	kube := fake.NewClientBuilder().Build()
	p := loaded(t, s, kube)

	unknown := task{name: "bad-n0-0", gpus: 1, accelerator: &core.GPUAccelerator{Device: "nvidia-tesla-z99"}}
	info := round(t, p, taskContext(unknown, &stateStore{}))
	if info.Phase() != pluginsCore.PhasePermanentFailure || !strings.Contains(info.Err().GetMessage(), "accelerator.device") ||
		info.Err().GetCode() != "AccelschedInvalidArgument" {
		t.Errorf("an unknown device: %v %v", info.Phase(), info.Err())
	}
	tooMany := task{name: "big-n0-0", gpus: 9, accelerator: &core.GPUAccelerator{Device: "nvidia-tesla-a100"}}
	if info := round(t, p, taskContext(tooMany, &stateStore{})); info.Phase() != pluginsCore.PhasePermanentFailure ||
		info.Err().GetCode() != "AccelschedFailedPrecondition" {
		t.Errorf("more than any node holds: %v %v", info.Phase(), info.Err())
	}

	cpu := task{name: "cpu-n0-0"}
	if info := round(t, p, taskContext(cpu, &stateStore{})); info.Phase() != pluginsCore.PhaseQueued {
		t.Fatalf("a task without a GPU: %v %q", info.Phase(), info.Reason())
	}
	if created := podOf(t, kube, cpu.name); created.Annotations[AllocationAnnotation] != "" {
		t.Errorf("a task without a GPU got an allocation: %v", created.Annotations)
	}

	s.Kill()
	if _, err := p.Handle(context.Background(), taskContext(a100Task("down-n0-0"), &stateStore{})); err == nil {
		t.Error("Handle with accelsched down gave no system error")
	}
}

// With resource-claims, the pod takes the very devices accelsched chose
// through NVIDIA's DRA driver: the claim exists, owned by the workflow, and
// the pod names it instead of asking the device plugin for nvidia.com/gpu.
func TestResourceClaimCarriesTheDevices(t *testing.T) {
	propellerDefaults(t)
	s := startServer(t)
	s.Register(node("n1", nil, gpus("nvidia-tesla-a100", 2)...))
	kube := fake.NewClientBuilder().Build()
	p := loaded(t, s, kube, true)
	tk := a100Task("f7c2a9-n0-0")
	tCtx := taskContext(tk, &stateStore{})
	if info := round(t, p, tCtx); info.Phase() != pluginsCore.PhaseQueued {
		t.Fatalf("%v %q", info.Phase(), info.Reason())
	}
	alloc := allocationOf(t, s.client(), tk.name)
	claim := &resourcev1.ResourceClaim{}
	name := "accelsched-" + alloc.GetId()
	if err := kube.Get(context.Background(), k8stypes.NamespacedName{Namespace: "flytesnacks-development", Name: name}, claim); err != nil {
		t.Fatalf("claim %s: %v", name, err)
	}
	requests := claim.Spec.Devices.Requests
	if len(requests) != 1 || requests[0].Exactly == nil || len(requests[0].Exactly.Selectors) != 1 ||
		!strings.Contains(requests[0].Exactly.Selectors[0].CEL.Expression, alloc.GetDevices()[0].GetDeviceId()) ||
		len(claim.OwnerReferences) != 1 || claim.OwnerReferences[0].Name != "f7c2a9" {
		t.Fatalf("claim %+v", claim)
	}
	created := podOf(t, kube, tk.name)
	container := containerOf(t, created, tk.name)
	if len(created.Spec.ResourceClaims) != 1 || *created.Spec.ResourceClaims[0].ResourceClaimName != name ||
		len(container.Resources.Claims) != 1 || container.Resources.Claims[0].Name != created.Spec.ResourceClaims[0].Name {
		t.Errorf("the pod does not take its devices through %s: %v, %v", name, created.Spec.ResourceClaims, container.Resources.Claims)
	}
	if _, ok := container.Resources.Limits["nvidia.com/gpu"]; ok {
		t.Errorf("the pod still asks the device plugin: %v", container.Resources.Limits)
	}
	// A round that builds the pod again finds the claim there.
	if _, err := (PlacingPodPlugin{Plugin: pod.DefaultPodPlugin, Claims: true, Kube: kube}).BuildResource(
		context.WithValue(context.Background(), allocationKey{}, alloc), tCtx); err != nil {
		t.Errorf("a second build: %v", err)
	}
}
