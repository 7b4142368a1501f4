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
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	k8serrors "k8s.io/apimachinery/pkg/api/errors"
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

// loaded is the plugin as Load makes it (Dial, Backoff, the manager), on a
// test server and a fake Kubernetes API; claims is Config.ResourceClaims.
func loaded(t *testing.T, s server, kube client.Client, claims bool) (*Plugin, *grpc.ClientConn) {
	t.Helper()
	pods, err := propellerk8s.NewPluginManager(context.Background(), setupContext(kube), k8s.PluginEntry{
		ID: ID, RegisteredTaskTypes: DefaultTaskTypes, ResourceToWatch: &v1.Pod{},
		Plugin: PlacingPodPlugin{Plugin: pod.DefaultPodPlugin, Claims: claims},
	}, propellerk8s.NewResourceMonitorIndex(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := *GetConfig()
	cfg.Address = s.Address()
	conn, err := Dial(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return NewPlugin(accelsched.NewClient(conn).WithBackoff(Backoff(&cfg)), pods, Options{
		Lease: time.Hour, TaskTypes: DefaultTaskTypes, ResourceClaims: claims, Kube: kube}), conn
}

// cluster is a test's accelschedd with one node of n A100s ("n1"), a fake
// Kubernetes API and the plugin loaded on both.
type cluster struct {
	s    server
	c    *accelsched.Client
	kube client.Client
	p    *Plugin
	conn *grpc.ClientConn
}

func newCluster(t *testing.T, n int, claims bool) cluster {
	t.Helper()
	propellerDefaults(t)
	s := startServer(t)
	s.Register(node("n1", nil, gpus("nvidia-tesla-a100", n)...))
	kube := fake.NewClientBuilder().WithStatusSubresource(&v1.Pod{}).Build()
	p, conn := loaded(t, s, kube, claims)
	return cluster{s: s, c: s.client(), kube: kube, p: p, conn: conn}
}

// round is one propeller round of the attempt: its state handed over as
// propeller hands it, then Handle. An error fails the test: under
// propeller each counts against the workflow's retries.
func round(t *testing.T, p *Plugin, a attempt) pluginsCore.PhaseInfo {
	t.Helper()
	a.store.beginRound()
	transition, err := p.Handle(context.Background(), a)
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	return transition.Info()
}

// ready waits until conn is connected again (the next round of a real
// propeller comes seconds later).
func ready(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn.Connect()
	for state := conn.GetState(); state != connectivity.Ready; state = conn.GetState() {
		if !conn.WaitForStateChange(ctx, state) {
			t.Fatalf("the plugin's connection stays %v", state)
		}
	}
}

func requestID(name string) string { return "flytesnacks-development/" + name }

func allocationOf(t *testing.T, c *accelsched.Client, name string) *pb.Allocation {
	t.Helper()
	out, err := c.GetRequest(context.Background(), requestID(name))
	if err != nil {
		t.Fatalf("GetAllocation %s: %v", name, err)
	}
	return out
}

func podOf(t *testing.T, kube client.Client, name string) (*v1.Pod, error) {
	p := &v1.Pod{}
	err := kube.Get(context.Background(), k8stypes.NamespacedName{Namespace: "flytesnacks-development", Name: name}, p)
	return p, err
}

func a100Task(name string) task {
	return task{name: name, gpus: 1, accelerator: &core.GPUAccelerator{Device: "nvidia-tesla-a100"}}
}

func waitingAt(t *testing.T, info pluginsCore.PhaseInfo, position string, version uint32) {
	t.Helper()
	if info.Phase() != pluginsCore.PhaseWaitingForResources || !strings.Contains(info.Reason(), "position "+position) ||
		info.Version() != version {
		t.Fatalf("%v %q v%d; want waiting at position %s, v%d", info.Phase(), info.Reason(), info.Version(), position, version)
	}
}

// Queued behind other tasks, moving up the queue, admitted when the GPU is
// released, the pod built with the placement, succeeded, released; a kill -9
// of accelsched while the task waits changes nothing the task sees.
func TestTaskWaitsRunsAndReleases(t *testing.T) {
	cl := newCluster(t, 1, false)
	s, kube, p := cl.s, cl.kube, cl.p
	c := cl.c
	conn := cl.conn
	holder, err := c.Allocate(context.Background(), &pb.AllocateRequest{RequestId: "holder", Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	ahead, err := c.Allocate(context.Background(), &pb.AllocateRequest{RequestId: "ahead", Count: 1, Queue: true})
	if err != nil || ahead.GetState() != pb.AllocationState_PENDING {
		t.Fatalf("ahead: %v, %v", ahead, err)
	}

	tk := a100Task("f7c2a9-n0-0")
	a := taskContext(tk)
	waitingAt(t, round(t, p, a), "2", 0)
	waitingAt(t, round(t, p, a), "2", 0) // nothing new: no event
	s.Kill()
	s.Start()
	ready(t, conn)
	waitingAt(t, round(t, p, a), "2", 0)

	// The one ahead gets the GPU: this one moves up, and the new reason
	// comes with the next version (an event).
	if _, err := c.Release(context.Background(), holder.GetId()); err != nil {
		t.Fatal(err)
	}
	waitingAt(t, round(t, p, a), "1", 1)
	waitingAt(t, round(t, p, a), "1", 1) // the same reason keeps its version
	if _, err := c.ReleaseRequest(context.Background(), "ahead"); err != nil {
		t.Fatal(err)
	}

	if info := round(t, p, a); info.Phase() != pluginsCore.PhaseQueued {
		t.Fatalf("after the release: %v %q", info.Phase(), info.Reason())
	}
	alloc := allocationOf(t, c, tk.name)
	created, err := podOf(t, kube, tk.name)
	if err != nil || alloc.GetState() != pb.AllocationState_ACTIVE || created.Annotations[AllocationAnnotation] != alloc.GetId() ||
		!hasRequirement(requirementsOf(created), requirement("kubernetes.io/hostname", v1.NodeSelectorOpIn, "n1-host")) {
		t.Fatalf("allocation %v; pod %v %v %v", alloc.GetState(), err, created.Annotations, requirementsOf(created))
	}
	// Rounds while the pod runs read the state the launch wrote.
	if info := round(t, p, a); info.Phase().IsTerminal() {
		t.Fatalf("a pending pod: %v %q", info.Phase(), info.Reason())
	}

	created.Status.Phase = v1.PodSucceeded
	if err := kube.Status().Update(context.Background(), created); err != nil {
		t.Fatal(err)
	}
	if done := round(t, p, a); done.Phase() != pluginsCore.PhaseSuccess {
		t.Fatalf("after the pod succeeded: %v %q", done.Phase(), done.Reason())
	}
	if got := allocationOf(t, c, tk.name); got.GetState() != pb.AllocationState_RELEASED {
		t.Fatalf("after success the allocation is %v", got.GetState())
	}
	if err := p.Finalize(context.Background(), a); err != nil {
		t.Fatalf("Finalize: %v", err)
	}
}

// While the pod runs its allocation is read at most once a minute: the lease
// is renewed before half of it is left, and an allocation that ends under
// the pod fails the attempt with cleanup. accelsched down, even for a
// plugin that just started, never sends a running task back to waiting.
func TestRunningPodKeepsItsAllocation(t *testing.T) {
	cl := newCluster(t, 1, false)
	s, kube, p := cl.s, cl.kube, cl.p
	c := cl.c
	tk := a100Task("f7c2a9-n0-0")
	a := taskContext(tk)
	if info := round(t, p, a); info.Phase() != pluginsCore.PhaseQueued {
		t.Fatalf("%v %q", info.Phase(), info.Reason())
	}
	start := p.now()
	before := allocationOf(t, c, tk.name).GetExpiresAt().AsTime()
	p.now = func() time.Time { return start.Add(40 * time.Minute) }
	round(t, p, a)
	if got := allocationOf(t, c, tk.name).GetExpiresAt().AsTime(); !got.After(before) {
		t.Fatalf("not renewed with 20 of 60 minutes left: %v -> %v", before, got)
	}

	if _, err := c.ReleaseRequest(context.Background(), requestID(tk.name)); err != nil {
		t.Fatal(err)
	}
	if info := round(t, p, a); info.Phase().IsFailure() {
		t.Fatalf("read again within the minute: %v %v", info.Phase(), info.Err())
	}
	p.now = func() time.Time { return start.Add(42 * time.Minute) }
	info := round(t, p, a)
	if info.Phase() != pluginsCore.PhaseRetryableFailure || info.Err().GetCode() != "AccelschedAllocationEnded" ||
		!info.CleanupOnFailure() {
		t.Fatalf("with its allocation released under it: %v %v", info.Phase(), info.Err())
	}

	// A propeller that restarted (a new plugin) while accelsched is down.
	other := a100Task("f7c2a9-n1-0")
	b := taskContext(other)
	if info := round(t, p, b); info.Phase() != pluginsCore.PhaseQueued {
		t.Fatalf("%v %q", info.Phase(), info.Reason())
	}
	s.Kill()
	fresh, _ := loaded(t, s, kube, false)
	if info := round(t, fresh, b); info.Phase() == pluginsCore.PhaseWaitingForResources || info.Phase().IsFailure() {
		t.Fatalf("a running task with accelsched down: %v %q", info.Phase(), info.Reason())
	}
	if got := b.store.data; got == nil {
		t.Fatal("the manager's state was dropped")
	}
}

// Abort deletes the pod and releases; a retried attempt is a new request.
func TestAbortReleasesAndARetryIsANewRequest(t *testing.T) {
	cl := newCluster(t, 1, false)
	kube, p := cl.kube, cl.p
	c := cl.c
	first := a100Task("f7c2a9-n0-0")
	a := taskContext(first)
	if info := round(t, p, a); info.Phase() != pluginsCore.PhaseQueued {
		t.Fatalf("first attempt: %v %q", info.Phase(), info.Reason())
	}
	a.store.beginRound()
	if err := p.Abort(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if got := allocationOf(t, c, first.name); got.GetState() != pb.AllocationState_RELEASED {
		t.Fatalf("after Abort: %v", got.GetState())
	}
	if _, err := podOf(t, kube, first.name); !k8serrors.IsNotFound(err) {
		t.Fatalf("after Abort the pod is still there: %v", err)
	}
	retry := a100Task("f7c2a9-n0-1")
	if info := round(t, p, taskContext(retry)); info.Phase() != pluginsCore.PhaseQueued {
		t.Fatalf("second attempt: %v %q", info.Phase(), info.Reason())
	}
	if one, two := allocationOf(t, c, first.name), allocationOf(t, c, retry.name); one.GetId() == two.GetId() ||
		two.GetState() != pb.AllocationState_ACTIVE {
		t.Fatalf("attempts share %s, or the retry is %v", one.GetId(), two.GetState())
	}
}

// A refusal fails the task with accelsched's message; accelsched down keeps
// it waiting, saying so; a task without a GPU never asks.
func TestRefusalsAndOutages(t *testing.T) {
	cl := newCluster(t, 1, false)
	s, kube, p := cl.s, cl.kube, cl.p

	unknown := task{name: "bad-n0-0", gpus: 1, accelerator: &core.GPUAccelerator{Device: "nvidia-tesla-z99"}}
	info := round(t, p, taskContext(unknown))
	if info.Phase() != pluginsCore.PhasePermanentFailure || !strings.Contains(info.Err().GetMessage(), "accelerator.device") ||
		info.Err().GetCode() != "AccelschedInvalidArgument" {
		t.Errorf("an unknown device: %v %v", info.Phase(), info.Err())
	}
	tooMany := task{name: "big-n0-0", gpus: 9, accelerator: &core.GPUAccelerator{Device: "nvidia-tesla-a100"}}
	if info := round(t, p, taskContext(tooMany)); info.Phase() != pluginsCore.PhasePermanentFailure ||
		info.Err().GetCode() != "AccelschedFailedPrecondition" {
		t.Errorf("more than any node holds: %v %v", info.Phase(), info.Err())
	}

	cpu := task{name: "cpu-n0-0"}
	if info := round(t, p, taskContext(cpu)); info.Phase() != pluginsCore.PhaseQueued {
		t.Fatalf("a task without a GPU: %v %q", info.Phase(), info.Reason())
	}
	if created, err := podOf(t, kube, cpu.name); err != nil || created.Annotations[AllocationAnnotation] != "" {
		t.Errorf("a task without a GPU: %v, annotations %v", err, created.Annotations)
	}

	s.Kill()
	down := a100Task("down-n0-0")
	if info := round(t, p, taskContext(down)); info.Phase() != pluginsCore.PhaseWaitingForResources ||
		!strings.Contains(info.Reason(), "accelsched is unreachable") {
		t.Errorf("accelsched down: %v %q", info.Phase(), info.Reason())
	}
}

// The pod the plugin creates through propeller's manager, placed by a real
// accelschedd, keeps the CPU and memory propeller's pod plugin gave it; and
// the allocation holds them as its pod_resources. The last assertion needs
// an accelschedd that implements NodeResources (an older one drops the
// field, and GetAllocation answers none).
func TestServerHoldsThePodsCPUAndMemory(t *testing.T) {
	cl := newCluster(t, 1, false)
	tk := a100Task("f7c2a9-n0-0")
	tk.requests = []*core.Resources_ResourceEntry{{Name: core.Resources_CPU, Value: "1"}, {Name: core.Resources_MEMORY, Value: "4Gi"}}
	a := taskContext(tk)
	o, err := pod.DefaultPodPlugin.BuildResource(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	propeller := o.(*v1.Pod)
	if info := round(t, cl.p, a); info.Phase() != pluginsCore.PhaseQueued {
		t.Fatalf("%v %q", info.Phase(), info.Reason())
	}
	created, err := podOf(t, cl.kube, tk.name)
	if err != nil {
		t.Fatal(err)
	}
	got, want := containerOf(t, created, tk.name).Resources, containerOf(t, propeller, tk.name).Resources
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		if q := got.Requests[name]; q.Cmp(want.Requests[name]) != 0 {
			t.Errorf("request %s %v, propeller's pod %v", name, q.String(), want.Requests[name])
		}
		if q := got.Limits[name]; q.Cmp(want.Limits[name]) != 0 {
			t.Errorf("limit %s %v, propeller's pod %v", name, q.String(), want.Limits[name])
		}
	}
	if q := want.Requests[v1.ResourceCPU]; q.MilliValue() != 1000 {
		t.Errorf("propeller's pod requests %v CPU, the task 1", q.String())
	}
	held := allocationOf(t, cl.c, tk.name).GetPodResources()
	if want := (&pb.NodeResources{CpuMilli: 1000, MemoryBytes: 4 << 30, Pods: 1}); !proto.Equal(held, want) {
		t.Errorf("the allocation holds pod_resources %v, want %v (the task's requests)", held, want)
	}
}

// The task's timeout is sent as the request's expected_duration, which the
// server's packing weighs in place of the plugin's lease (a renewal period);
// a task without one sends none.
func TestTheTasksTimeoutIsItsExpectedDuration(t *testing.T) {
	cl := newCluster(t, 3, false)
	timed := a100Task("f7c2a9-n0-0")
	timed.timeout = 90 * time.Minute
	untimed := a100Task("f7c2a9-n1-0")
	// A timeout past what the server takes as a duration is sent as the most
	// it takes, not refused.
	long := a100Task("f7c2a9-n2-0")
	long.timeout = 400 * 24 * time.Hour
	for _, tk := range []task{timed, untimed, long} {
		if info := round(t, cl.p, taskContext(tk)); info.Phase() != pluginsCore.PhaseQueued {
			t.Fatalf("%s: %v %q", tk.name, info.Phase(), info.Reason())
		}
	}
	if got := allocationOf(t, cl.c, timed.name).GetExpectedDuration(); got.AsDuration() != 90*time.Minute {
		t.Errorf("the timed task's allocation has expected_duration %v, want its timeout 1h30m", got)
	}
	if got := allocationOf(t, cl.c, untimed.name).GetExpectedDuration(); got != nil {
		t.Errorf("the task without a timeout sent expected_duration %v", got)
	}
	if got := allocationOf(t, cl.c, long.name).GetExpectedDuration(); got.AsDuration() != 366*24*time.Hour {
		t.Errorf("the 400-day task's allocation has expected_duration %v, want 366 days", got)
	}
}

// With resource-claims, the pod takes the very devices accelsched chose
// through NVIDIA's DRA driver: the claim exists, owned by the workflow, and
// the pod names it instead of asking the device plugin for nvidia.com/gpu.
func TestResourceClaimCarriesTheDevices(t *testing.T) {
	cl := newCluster(t, 2, true)
	s, kube, p := cl.s, cl.kube, cl.p
	tk := a100Task("f7c2a9-n0-0")
	a := taskContext(tk)
	if info := round(t, p, a); info.Phase() != pluginsCore.PhaseQueued {
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
	created, err := podOf(t, kube, tk.name)
	if err != nil {
		t.Fatal(err)
	}
	container := containerOf(t, created, tk.name)
	if len(created.Spec.ResourceClaims) != 1 || *created.Spec.ResourceClaims[0].ResourceClaimName != name ||
		len(container.Resources.Claims) != 1 || container.Resources.Claims[0].Name != created.Spec.ResourceClaims[0].Name {
		t.Errorf("the pod does not take its devices through %s: %v, %v", name, created.Spec.ResourceClaims, container.Resources.Claims)
	}
	if _, ok := container.Resources.Limits["nvidia.com/gpu"]; ok {
		t.Errorf("the pod still asks the device plugin: %v", container.Resources.Limits)
	}
	// A claim an earlier round created is taken as it is.
	if err := createClaim(context.Background(), kube, a, alloc); err != nil {
		t.Errorf("creating it again: %v", err)
	}
}

// Tasks of two workflows that ask, with KAI's gpu-fraction annotation, for
// shares of one MPS GPU: each pod carries its own MPS limits and takes the
// GPU through the GPU's one claim, which both workflows own (neither as its
// controller, so the claim outlives the first to go).
func TestSharesOfOneGpuShareItsClaim(t *testing.T) {
	propellerDefaults(t)
	s := startServer(t)
	shared := gpu("GPU-S0", "nvidia-tesla-t4", 0)
	shared.Sharing = pb.GpuSharing_MPS
	shared.MemoryBytes = 16 << 30
	s.Register(node("n1", nil, shared))
	kube := fake.NewClientBuilder().WithStatusSubresource(&v1.Pod{}).Build()
	p, _ := loaded(t, s, kube, true)
	shareTask := func(name, workflow, fraction string) task {
		return task{name: name, workflow: workflow, accelerator: &core.GPUAccelerator{Device: "nvidia-tesla-t4"},
			annotations: map[string]string{GPUFractionAnnotation: fraction}}
	}
	const claimName = "accelsched-share-mps-gpu-s0"
	for _, c := range []struct {
		task    task
		percent string
	}{
		{shareTask("wf1-n0-0", "wf1", "0.25"), "25"},
		{shareTask("wf2-n0-0", "wf2", "0.5"), "50"},
	} {
		if info := round(t, p, taskContext(c.task)); info.Phase() != pluginsCore.PhaseQueued {
			t.Fatalf("%s: %v %q", c.task.name, info.Phase(), info.Reason())
		}
		alloc := allocationOf(t, s.client(), c.task.name)
		if alloc.GetDevices()[0].GetShare().GetComputeMilli() == 0 {
			t.Fatalf("%s: not a share: %v", c.task.name, alloc)
		}
		// Its group is the pod's namespace, whose claim it takes: the
		// server puts no other namespace's share on this GPU.
		if group := alloc.GetDevices()[0].GetShare().GetGroup(); group != "flytesnacks-development" {
			t.Errorf("%s: share group %q, want the pod's namespace", c.task.name, group)
		}
		created, err := podOf(t, kube, c.task.name)
		if err != nil {
			t.Fatal(err)
		}
		container := containerOf(t, created, c.task.name)
		env := map[string]string{}
		for _, e := range container.Env {
			env[e.Name] = e.Value
		}
		if env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] != c.percent ||
			!strings.HasPrefix(env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"], "0=") {
			t.Errorf("%s: MPS limits %v", c.task.name, env)
		}
		if len(created.Spec.ResourceClaims) != 1 || *created.Spec.ResourceClaims[0].ResourceClaimName != claimName {
			t.Errorf("%s: the pod does not take the GPU's claim: %v", c.task.name, created.Spec.ResourceClaims)
		}
	}
	claim := &resourcev1.ResourceClaim{}
	if err := kube.Get(context.Background(), k8stypes.NamespacedName{Namespace: "flytesnacks-development", Name: claimName}, claim); err != nil {
		t.Fatal(err)
	}
	var owners []string
	for _, o := range claim.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			t.Errorf("owner %s is the shared claim's controller", o.Name)
		}
		owners = append(owners, o.Name)
	}
	if strings.Join(owners, ",") != "wf1,wf2" {
		t.Errorf("the shared claim's owners are %v, want wf1 and wf2", owners)
	}
	if len(claim.Spec.Devices.Config) != 1 || !strings.Contains(string(claim.Spec.Devices.Config[0].Opaque.Parameters.Raw), `"strategy":"MPS"`) {
		t.Errorf("the claim carries no MPS sharing: %+v", claim.Spec.Devices.Config)
	}
	// A task that a plugin without share groups (here: without claims, which
	// sends none) queued keeps waiting after the upgrade, not refused as
	// another request under its id: asked for anew, with its group.
	full := shareTask("wf4-n0-0", "wf4", "0.5")
	old, _ := loaded(t, s, kube, false)
	if info := round(t, old, taskContext(full)); info.Phase() != pluginsCore.PhaseWaitingForResources {
		t.Fatalf("queued by the earlier plugin: %v %q", info.Phase(), info.Reason())
	}
	before := allocationOf(t, s.client(), full.name).GetId()
	if info := round(t, p, taskContext(full)); info.Phase() != pluginsCore.PhaseWaitingForResources {
		t.Errorf("after the upgrade: %v %q %v", info.Phase(), info.Reason(), info.Err())
	}
	if after := allocationOf(t, s.client(), full.name); after.GetId() == before ||
		after.GetState() != pb.AllocationState_PENDING {
		t.Errorf("after the upgrade: %s %v, want a new PENDING allocation, not %s", after.GetId(), after.GetState(), before)
	}
	// A fraction KAI would refuse fails the task, naming the annotation.
	bad := shareTask("wf3-n0-0", "wf3", "1.5")
	if info := round(t, p, taskContext(bad)); info.Phase() != pluginsCore.PhasePermanentFailure ||
		!strings.Contains(info.Err().GetMessage(), GPUFractionAnnotation) {
		t.Errorf("gpu-fraction 1.5: %v %v", info.Phase(), info.Err())
	}
}
