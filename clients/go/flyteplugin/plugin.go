// Package flyteplugin is a Flyte propeller plugin (id "accelsched") that
// gets a task's accelerators from accelsched before its pod is created and
// gives them back when the task ends. It wraps propeller's own k8s plugin
// manager around flyteplugins' default pod plugin, so the pod is built,
// created, watched and cleaned up exactly as propeller does it; accelsched
// adds the waiting (its queue) and the placement (the chosen node and
// devices).
package flyteplugin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/accelsched/accelsched/clients/go/accelsched"
	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
	"github.com/flyteorg/flyte/flyteidl/gen/pb-go/flyteidl/core"
	pluginsCore "github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/core"
	"github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/flytek8s"
	"github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/flytek8s/config"
	"github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/k8s"
	"github.com/flyteorg/flyte/flyteplugins/go/tasks/plugins/k8s/pod"
	propellerk8s "github.com/flyteorg/flyte/flytepropeller/pkg/controller/nodes/task/k8s"
	"github.com/flyteorg/flyte/flytestdlib/logger"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ID is the plugin's id in propeller's configuration (tasks.task-plugins).
const ID = "accelsched"

// AllocationAnnotation names, on the pod, the accelsched allocation that
// holds its devices.
const AllocationAnnotation = "accelsched.io/allocation"

// Plugin is the core plugin. Its only state is the pod plugin manager's:
// before the pod exists the allocation is found again each round by its
// request id (Allocate is idempotent), and the wait's phase version is kept
// in the manager's not-started state.
type Plugin struct {
	client *accelsched.Client
	pods   pluginsCore.Plugin
	opts   Options
	types  map[string]bool
	// Device name -> its class, from ListAcceleratorTypes: a GPUAccelerator
	// of Flyte 1 does not say it.
	classes sync.Map
	now     func() time.Time // the clock leases are renewed by
	// keep's: one short attempt; when each running request id was last
	// read (zero: it has no allocation).
	quick *accelsched.Client
	mu    sync.Mutex
	kept  map[string]time.Time
}

// Options are the plugin's settings (Config, as Load reads them).
type Options struct {
	// How long an allocation is held unless renewed (> 0); the plugin renews
	// it while the pod runs.
	Lease time.Duration
	// The task types that get accelerators from accelsched.
	TaskTypes []string
	// Create the allocation's DRA ResourceClaim through Kube.
	ResourceClaims bool
	Kube           client.Client
}

// NewPlugin makes the plugin from a client of accelsched and the plugin that
// runs the pods (propeller's k8s plugin manager around PlacingPodPlugin, as
// Load makes it).
func NewPlugin(c *accelsched.Client, pods pluginsCore.Plugin, opts Options) *Plugin {
	types := make(map[string]bool, len(opts.TaskTypes))
	for _, t := range opts.TaskTypes {
		types[t] = true
	}
	return &Plugin{client: c, pods: pods, opts: opts, types: types, now: time.Now,
		quick: c.WithBackoff(accelsched.Backoff{Attempts: 1, PerAttempt: 2 * time.Second}),
		kept:  map[string]time.Time{}}
}

// maxExpectedDuration is the longest expected_duration the server takes
// (core/matching/allocation_request.h kMaxExpectedDuration: 366 days).
const maxExpectedDuration = 366 * 24 * time.Hour

func (p *Plugin) GetID() string { return ID }

func (p *Plugin) GetProperties() pluginsCore.PluginProperties { return p.pods.GetProperties() }

// The version of the manager's state (flytepropeller v1.16.8
// pkg/controller/nodes/task/k8s/plugin_manager.go:51 pluginStateVersion),
// which the plugin writes while the task waits.
const managerStateVersion = 1

// Handle, each round until the task ends. Before the pod exists: Allocate
// (queue: true) and report a PENDING allocation as waiting for resources
// with its queue position and reason; once ACTIVE, the manager builds the pod
// (with the placement) and creates it. A refusal (INVALID_ARGUMENT,
// FAILED_PRECONDITION, ALREADY_EXISTS) fails the task with accelsched's
// message; accelsched unreachable, or any other answer, keeps the task
// waiting with the reason (an error from Handle would count against the
// workflow's retries: flytepropeller pkg/controller/handler.go:63-71). While
// the pod runs: the lease is renewed, and an allocation that ended
// (preempted, expired) fails the attempt with cleanup, so its pod goes. The
// allocation is released when the task ends.
func (p *Plugin) Handle(ctx context.Context, tCtx pluginsCore.TaskExecutionContext) (pluginsCore.Transition, error) {
	// Propeller hands a round its state as one buffer, which a read consumes
	// (pkg/controller/nodes/task/plugin_state_manager.go:57-65): read it once
	// and give the manager the decoded copy.
	var state propellerk8s.PluginState
	version, err := tCtx.PluginStateReader().Get(&state)
	if err != nil {
		return pluginsCore.UnknownTransition, fmt.Errorf("accelsched: reading the plugin state: %w", err)
	}
	tCtx = decodedState{tCtx, version, state}
	if state.Phase != propellerk8s.PluginPhaseNotStarted {
		// The pod exists: never back to waiting, whatever accelsched says.
		return p.running(ctx, tCtx)
	}
	req, err := p.requestOf(ctx, tCtx)
	if err != nil {
		return p.failedRequest(tCtx, state, err)
	}
	if req == nil { // no accelerators: the pod plugin alone
		return p.pods.Handle(ctx, tCtx)
	}
	alloc, err := p.client.Allocate(ctx, req)
	if status.Code(err) == codes.AlreadyExists && req.GetShare().GetGroup() != "" {
		// Asked for by a plugin from before share groups, which sent none,
		// so that an upgrade fails no task it queued: placed, it is kept as
		// it is; still waiting, it is asked for anew with its group (a share
		// of no group may join another namespace's on a GPU whose claim its
		// pod could not use), behind the requests queued meanwhile. Admitted
		// between the two calls, it is released all the same: no pod holds
		// it yet, and the task is placed anew.
		earlier := proto.Clone(req).(*pb.AllocateRequest)
		earlier.Share.Group = ""
		if a, earlierErr := p.client.Allocate(ctx, earlier); earlierErr == nil {
			alloc, err = a, nil
			if a.GetState() == pb.AllocationState_PENDING {
				if _, releaseErr := p.client.Release(ctx, a.GetId()); releaseErr == nil {
					alloc, err = p.client.Allocate(ctx, req)
				}
			}
		}
	}
	if err != nil {
		return p.refused(tCtx, state, err)
	}
	switch alloc.GetState() {
	case pb.AllocationState_PENDING:
		return p.waiting(tCtx, state, fmt.Sprintf("accelsched: waiting in the queue at position %d: %s",
			alloc.GetQueuePosition(), alloc.GetPendingReason()))
	case pb.AllocationState_ACTIVE:
		if hosts := len(alloc.GetPlacements()); hosts > 1 {
			// A multi-host TPU slice runs one pod per host (a JobSet); this
			// plugin runs one pod.
			p.release(ctx, tCtx)
			return pluginsCore.DoTransition(pluginsCore.PhaseInfoFailure("AccelschedMultiHost",
				fmt.Sprintf("accelsched: %s %s spans %d hosts, which needs one pod per host; the %s plugin runs one pod",
					alloc.GetModel(), req.GetAccelerator().GetPartitionSize(), hosts, ID), nil)), nil
		}
		if p.opts.ResourceClaims && alloc.GetPlacement().GetResourceClaim() != "" {
			if err := createClaim(ctx, p.opts.Kube, tCtx, alloc); err != nil {
				if permanentClaimError(err) {
					p.release(ctx, tCtx)
					return pluginsCore.DoTransition(pluginsCore.PhaseInfoFailure("AccelschedResourceClaim", err.Error(), nil)), nil
				}
				return p.waiting(tCtx, state, err.Error())
			}
		}
		return p.running(context.WithValue(ctx, allocationKey{}, alloc), tCtx)
	default:
		// PREEMPTED within its grace before this attempt's pod was recorded
		// (an ended allocation's request id allocates anew): the next attempt
		// asks anew; cleanup deletes a pod a lost round may have created.
		return pluginsCore.DoTransition(pluginsCore.PhaseInfoSystemRetryableFailureWithCleanup("AccelschedAllocationEnded",
			fmt.Sprintf("accelsched: allocation %s is %s before its pod started", alloc.GetId(), alloc.GetState()), nil)), nil
	}
}

// running lets the manager create or check the pod. A task of the
// plugin's types has its devices released when the manager says it ended;
// while it runs its allocation is checked (keep).
func (p *Plugin) running(ctx context.Context, tCtx pluginsCore.TaskExecutionContext) (pluginsCore.Transition, error) {
	transition, err := p.pods.Handle(ctx, tCtx)
	if err != nil || !p.ours(ctx, tCtx) {
		return transition, err
	}
	if transition.Info().Phase().IsTerminal() {
		p.release(ctx, tCtx)
		return transition, nil
	}
	if ended := p.keep(ctx, requestIDOf(tCtx)); ended != "" {
		return pluginsCore.DoTransition(pluginsCore.PhaseInfoSystemRetryableFailureWithCleanup(
			"AccelschedAllocationEnded", ended, nil)), nil
	}
	return transition, nil
}

// keepEvery is how often a running task's allocation is read: renewing at
// half a lease of hours, or seeing a preemption within its grace (30 s by
// default), needs no call every round.
const keepEvery = time.Minute

// keep reads the allocation of requestID at most every keepEvery, with one
// short attempt (a round must not wait on accelsched), renews it when less
// than half its lease is left, and says why it is no longer the task's when
// it ended ("" while it is ACTIVE, when the task never had one, or when
// accelsched cannot be asked: the pod carries on).
func (p *Plugin) keep(ctx context.Context, requestID string) string {
	p.mu.Lock()
	last, seen := p.kept[requestID]
	if seen && (last.IsZero() || p.now().Sub(last) < keepEvery) {
		p.mu.Unlock()
		return ""
	}
	p.kept[requestID] = p.now()
	p.mu.Unlock()
	a, err := p.quick.GetRequest(ctx, requestID)
	if status.Code(err) == codes.NotFound { // a task without devices: never again
		p.mu.Lock()
		p.kept[requestID] = time.Time{}
		p.mu.Unlock()
		return ""
	}
	if err != nil {
		logger.Warnf(ctx, "accelsched: reading allocation %s: %v", requestID, err)
		return ""
	}
	if a.GetState() != pb.AllocationState_ACTIVE {
		return fmt.Sprintf("accelsched: allocation %s of this task's devices is %s while its pod runs",
			a.GetId(), a.GetState())
	}
	if a.GetExpiresAt().AsTime().Sub(p.now()) < p.opts.Lease/2 {
		if _, err := p.quick.Renew(ctx, a.GetId(), p.opts.Lease); err != nil {
			logger.Warnf(ctx, "accelsched: renewing allocation %s: %v", a.GetId(), err)
		}
	}
	return ""
}

// Abort deletes the pod as propeller does and releases the allocation.
func (p *Plugin) Abort(ctx context.Context, tCtx pluginsCore.TaskExecutionContext) error {
	err := p.pods.Abort(ctx, tCtx)
	p.release(ctx, tCtx)
	return err
}

// Finalize clears the pod's finalizers as propeller does and releases the
// allocation (again: releasing is idempotent).
func (p *Plugin) Finalize(ctx context.Context, tCtx pluginsCore.TaskExecutionContext) error {
	err := p.pods.Finalize(ctx, tCtx)
	p.release(ctx, tCtx)
	return err
}

// release frees what this attempt's request id holds, for a task of the
// plugin's types (one that never allocated gets NOT_FOUND). It never fails
// the caller: when accelsched cannot be reached the lease frees the devices
// in the end.
func (p *Plugin) release(ctx context.Context, tCtx pluginsCore.TaskExecutionContext) {
	if !p.ours(ctx, tCtx) {
		return
	}
	requestID := requestIDOf(tCtx)
	p.mu.Lock()
	delete(p.kept, requestID)
	p.mu.Unlock()
	if _, err := p.client.ReleaseRequest(ctx, requestID); err != nil && status.Code(err) != codes.NotFound {
		logger.Warnf(ctx, "accelsched: releasing %s (its lease frees it in the end): %v", requestID, err)
	}
}

// ours says whether the task's type is one the plugin allocates for (a
// template that cannot be read counts: releasing what was never allocated
// is harmless).
func (p *Plugin) ours(ctx context.Context, tCtx pluginsCore.TaskExecutionContext) bool {
	template, err := tCtx.TaskReader().Read(ctx)
	return err != nil || p.types[template.GetType()]
}

// waiting reports the task as waiting for resources with reason. The phase
// version goes up by one when the reason changes (k8s.MaybeUpdatePhaseVersion,
// as propeller's k8s plugins do it), so that propeller sends the new reason
// as an event; it is kept in the manager's state, which stays not started.
func (p *Plugin) waiting(tCtx pluginsCore.TaskExecutionContext, state propellerk8s.PluginState, reason string) (pluginsCore.Transition, error) {
	version := pluginsCore.DefaultPhaseVersion
	if state.K8sPluginState.Phase == pluginsCore.PhaseWaitingForResources {
		version = state.K8sPluginState.PhaseVersion // a repeated reason keeps it
	}
	info := pluginsCore.PhaseInfoWaitingForResourcesInfo(version, reason, nil)
	k8s.MaybeUpdatePhaseVersion(&info, &state.K8sPluginState)
	next := propellerk8s.PluginState{Phase: propellerk8s.PluginPhaseNotStarted, K8sPluginState: k8s.PluginState{
		Phase: info.Phase(), PhaseVersion: info.Version(), Reason: info.Reason()}}
	if next != state {
		if err := tCtx.PluginStateWriter().Put(managerStateVersion, &next); err != nil {
			return pluginsCore.UnknownTransition, err
		}
	}
	return pluginsCore.DoTransition(info), nil
}

// refused turns a failed Allocate into a transition. accelsched's refusal
// of the request (INVALID_ARGUMENT naming the field, FAILED_PRECONDITION
// when nothing could ever fit, ALREADY_EXISTS) fails the task with its
// message; anything else (unreachable, a quota without room to queue,
// refused credentials) keeps it waiting with the reason, until accelsched
// answers otherwise.
func (p *Plugin) refused(tCtx pluginsCore.TaskExecutionContext, state propellerk8s.PluginState, err error) (pluginsCore.Transition, error) {
	s := status.Convert(err)
	switch s.Code() {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.AlreadyExists:
		return pluginsCore.DoTransition(pluginsCore.PhaseInfoFailure("Accelsched"+s.Code().String(),
			"accelsched: "+s.Message(), nil)), nil
	case codes.Unavailable, codes.DeadlineExceeded:
		return p.waiting(tCtx, state, "accelsched is unreachable: "+s.Message())
	}
	return p.waiting(tCtx, state, fmt.Sprintf("accelsched: %s: %s", s.Code(), s.Message()))
}

// badTask marks a task whose pod cannot be built: a permanent failure, as
// propeller's manager makes it (plugin_manager.go:212-219).
type badTask struct{ error }

// failedRequest turns requestOf's error into a transition: a task whose
// pod cannot be built fails; accelsched's answer to the class look-up is
// taken as refused takes Allocate's; anything else (reading the template) is
// a system error, as the manager makes a failed read.
func (p *Plugin) failedRequest(tCtx pluginsCore.TaskExecutionContext, state propellerk8s.PluginState, err error) (pluginsCore.Transition, error) {
	var bad badTask
	if errors.As(err, &bad) {
		return pluginsCore.DoTransition(pluginsCore.PhaseInfoFailure("AccelschedBadTask", bad.Error(), nil)), nil
	}
	if _, ok := status.FromError(err); ok {
		return p.refused(tCtx, state, err)
	}
	return pluginsCore.UnknownTransition, err
}

// requestIDOf is the attempt's request id: its namespace (project-domain)
// and generated name (execution, node and retry attempt:
// pkg/controller/nodes/task/taskexec_context.go:216), unique across
// projects and attempts.
func requestIDOf(tCtx pluginsCore.TaskExecutionContext) string {
	metadata := tCtx.TaskExecutionMetadata()
	return metadata.GetNamespace() + "/" + metadata.GetTaskExecutionID().GetGeneratedName()
}

// requestOf is the AllocateRequest of the task's attempt, or nil when the
// task asks for no accelerator (its type is not one of the plugin's, or its
// pod has no GPU limit). The count, the primary container and the pod's CPU
// and memory (pod_resources: its effective request, podResourcesOf) are
// those of the pod propeller's pod plugin builds (resources with the task's
// overrides and the platform's defaults applied); the accelerator is the
// task's GPUAccelerator (its override first), its bytes unchanged.
func (p *Plugin) requestOf(ctx context.Context, tCtx pluginsCore.TaskExecutionContext) (*pb.AllocateRequest, error) {
	template, err := tCtx.TaskReader().Read(ctx)
	if err != nil {
		return nil, err
	}
	if !p.types[template.GetType()] {
		return nil, nil
	}
	o, err := pod.DefaultPodPlugin.BuildResource(ctx, tCtx)
	if err != nil {
		return nil, badTask{err}
	}
	built := o.(*v1.Pod)
	primary := primaryContainer(built, tCtx)
	container := containerNamed(&built.Spec, primary)
	if container == nil {
		return nil, badTask{fmt.Errorf("the task's pod has no container %q", primary)}
	}
	gpuResource := config.GetK8sPluginConfig().GpuResourceName
	limit := container.Resources.Limits[v1.ResourceName(gpuResource)]
	share, err := shareOf(podAnnotationsOf(built, tCtx))
	if err != nil {
		return nil, badTask{err}
	}
	if share == nil && limit.Value() <= 0 {
		return nil, nil
	}
	if share != nil && limit.Value() > 1 {
		return nil, badTask{fmt.Errorf("the pod's annotation %s asks for a share of one GPU, but its %s limit is %d",
			GPUFractionAnnotation, gpuResource, limit.Value())}
	}
	task := accelsched.Task{
		ExecutionID:  requestIDOf(tCtx),
		Count:        int32(limit.Value()),
		Share:        share,
		Container:    primary,
		Lease:        p.opts.Lease,
		Queue:        true,
		NodeSelector: nodeLabelsOf(&built.Spec),
		PodResources: podResourcesOf(&built.Spec),
	}
	// The task's timeout (flyteidl core/tasks.proto:115-116, TaskMetadata's
	// `timeout`, "the overall timeout of a task including user-triggered
	// retries"; v1.16.8) is what the plugin knows of how long the task runs:
	// the server's packing weighs it in place of the lease, which the plugin
	// renews. A hint, never a limit: one past what the server takes (a year)
	// is sent as a year, rather than failing the task.
	if timeout := template.GetMetadata().GetTimeout(); timeout != nil && timeout.AsDuration() > 0 {
		task.ExpectedDuration = min(timeout.AsDuration(), maxExpectedDuration)
	}
	if share != nil {
		task.Count = 1 // the one GPU it shares
		if p.opts.ResourceClaims {
			// A pod can use only its own namespace's claims: every share of
			// one GPU must come from one namespace to use the GPU's claim.
			share.Group = tCtx.TaskExecutionMetadata().GetNamespace()
		}
	}
	id := tCtx.TaskExecutionMetadata().GetTaskExecutionID().GetID()
	execution := id.GetNodeExecutionId().GetExecutionId()
	task.Project, task.Domain = execution.GetProject(), execution.GetDomain()
	if gpu := gpuAcceleratorOf(template, tCtx); gpu != nil {
		bytes, err := proto.Marshal(gpu)
		if err != nil {
			return nil, err
		}
		if task.Accelerator, err = accelsched.AcceleratorFromFlyte(bytes); err != nil {
			return nil, badTask{err}
		}
		// The pod's limit counts a TPU slice's chips; accelsched allocates
		// the slice whole (count 1).
		class, err := p.classOf(ctx, gpu.GetDevice())
		if err != nil {
			return nil, err
		}
		if class == pb.DeviceClass_GOOGLE_TPU {
			task.Count = 1
		}
	}
	req, err := accelsched.NewAllocateRequest(task)
	if err != nil {
		return nil, badTask{err}
	}
	return req, nil
}

// podAnnotationsOf is what the task's pod will be annotated with: the
// annotations of its pod template (the task's, an override's), then the
// execution's over them, as propeller's plugin manager adds those after
// BuildResource (flyteorg/flyte 6fadb90d,
// flyteplugins/go/tasks/pluginmachinery/flytek8s/pod_helper.go:552-556 and
// 749-752; executor/pkg/plugin/k8s/plugin_manager.go:92).
func podAnnotationsOf(built *v1.Pod, tCtx pluginsCore.TaskExecutionContext) map[string]string {
	annotations := map[string]string{}
	for k, v := range built.GetAnnotations() {
		annotations[k] = v
	}
	for k, v := range tCtx.TaskExecutionMetadata().GetAnnotations() {
		annotations[k] = v
	}
	return annotations
}

// nodeLabelsOf is what the pod requires of its node as labels accelsched can
// match: its nodeSelector (the platform's default-node-selector, a pod
// template's) and the single-valued In requirements of its required node
// affinity that every term has (the interruptible and non-interruptible
// node selector requirements), but for the accelerator labels. Other
// requirements (NotIn, Exists, several
// values, one term of several) are not sent: the pod keeps them, and a node
// that fails them leaves it Pending.
func nodeLabelsOf(spec *v1.PodSpec) map[string]string {
	labels := map[string]string{}
	for k, v := range spec.NodeSelector {
		labels[k] = v
	}
	a := spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return labels
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		return labels
	}
	single := func(r v1.NodeSelectorRequirement) bool {
		return r.Operator == v1.NodeSelectorOpIn && len(r.Values) == 1
	}
	// The accelerator labels are accelsched's to choose (ApplyPlacement
	// replaces propeller's).
	cfg := config.GetK8sPluginConfig()
	for _, r := range terms[0].MatchExpressions {
		if !single(r) || labels[r.Key] != "" || r.Key == cfg.GpuDeviceNodeLabel || r.Key == cfg.GpuPartitionSizeNodeLabel {
			continue
		}
		inAll := true
		for _, other := range terms[1:] {
			found := false
			for _, o := range other.MatchExpressions {
				found = found || (single(o) && o.Key == r.Key && o.Values[0] == r.Values[0])
			}
			inAll = inAll && found
		}
		if inAll {
			labels[r.Key] = r.Values[0]
		}
	}
	return labels
}

// classOf is the class of the accelerator type named device, NVIDIA_GPU when
// accelsched does not know the name (Allocate then says so); accelsched's
// error when it cannot be asked.
func (p *Plugin) classOf(ctx context.Context, device string) (pb.DeviceClass, error) {
	if class, ok := p.classes.Load(device); ok {
		return class.(pb.DeviceClass), nil
	}
	types, err := p.client.AcceleratorTypes(ctx, device)
	if err != nil && status.Code(err) != codes.NotFound {
		return 0, err
	}
	class := pb.DeviceClass_NVIDIA_GPU
	if len(types) > 0 {
		class = types[0].GetDeviceClass()
	}
	p.classes.Store(device, class)
	return class, nil
}

// decodedState is the round's task context with its plugin state already
// read: the manager reads the copy.
type decodedState struct {
	pluginsCore.TaskExecutionContext
	version uint8
	state   propellerk8s.PluginState
}

func (d decodedState) PluginStateReader() pluginsCore.PluginStateReader { return d }

func (d decodedState) GetStateVersion() uint8 { return d.version }

// Get fills in the manager's state; the manager reads nothing else.
func (d decodedState) Get(t interface{}) (uint8, error) {
	state, ok := t.(*propellerk8s.PluginState)
	if !ok {
		return d.version, fmt.Errorf("accelsched: plugin state read as %T", t)
	}
	*state = d.state
	return d.version, nil
}

// gpuAcceleratorOf is the task's GPUAccelerator as propeller applies it: the
// override's when it has one, else the template's
// (flytek8s/pod_helper.go:108-131 applyExtendedResourcesOverrides).
func gpuAcceleratorOf(template *core.TaskTemplate, tCtx pluginsCore.TaskExecutionContext) *core.GPUAccelerator {
	if overrides := tCtx.TaskExecutionMetadata().GetOverrides(); overrides != nil {
		if gpu := overrides.GetExtendedResources().GetGpuAccelerator(); gpu != nil {
			return gpu
		}
	}
	return template.GetExtendedResources().GetGpuAccelerator()
}

// primaryContainer is the container that gets the devices: the one the pod
// plugin named primary, the only one, or (a container task) the one named
// after the attempt, as flytek8s.BuildRawPod names it.
func primaryContainer(built *v1.Pod, tCtx pluginsCore.TaskExecutionContext) string {
	if name, ok := built.GetAnnotations()[flytek8s.PrimaryContainerKey]; ok {
		return name
	}
	if len(built.Spec.Containers) == 1 {
		return built.Spec.Containers[0].Name
	}
	return tCtx.TaskExecutionMetadata().GetTaskExecutionID().GetGeneratedName()
}
