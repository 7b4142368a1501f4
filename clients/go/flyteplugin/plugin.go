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
	"encoding/json"
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
	resourcev1 "k8s.io/api/resource/v1"
	k8serrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ID is the plugin's id in propeller's configuration (tasks.task-plugins).
const ID = "accelsched"

// AllocationAnnotation names, on the pod, the accelsched allocation that
// holds its devices.
const AllocationAnnotation = "accelsched.io/allocation"

// Plugin is the core plugin. Its only state is the pod plugin manager's
// (whether the pod was created): the allocation is found again each round by
// its request id, the task attempt's generated name, for which Allocate is
// idempotent.
type Plugin struct {
	client    *accelsched.Client
	pods      pluginsCore.Plugin
	lease     time.Duration
	taskTypes map[string]bool
	// Device name -> its class, from ListAcceleratorTypes: a GPUAccelerator
	// of Flyte 1 does not say it.
	classes sync.Map
}

// NewPlugin makes the plugin from its parts: a client of accelsched, the
// plugin that runs the pods (propeller's k8s plugin manager around
// PlacingPodPlugin, as Load makes it), the lease for each allocation (0: the
// server's) and the task types that get accelerators from accelsched.
func NewPlugin(c *accelsched.Client, pods pluginsCore.Plugin, lease time.Duration, taskTypes []string) *Plugin {
	types := make(map[string]bool, len(taskTypes))
	for _, t := range taskTypes {
		types[t] = true
	}
	return &Plugin{client: c, pods: pods, lease: lease, taskTypes: types}
}

func (p *Plugin) GetID() string { return ID }

func (p *Plugin) GetProperties() pluginsCore.PluginProperties { return p.pods.GetProperties() }

// Handle, each round until the task ends: before the pod exists, Allocate
// (queue: true) and report a PENDING allocation as waiting for resources with
// its queue position and reason; once ACTIVE, let the pod plugin manager
// build the pod (with the placement) and run it. A refusal fails the task
// with accelsched's message; accelsched unreachable is a system error, which
// propeller retries. The allocation is released when the task ends.
func (p *Plugin) Handle(ctx context.Context, tCtx pluginsCore.TaskExecutionContext) (pluginsCore.Transition, error) {
	var state propellerk8s.PluginState
	if _, err := tCtx.PluginStateReader().Get(&state); err != nil || state.Phase != propellerk8s.PluginPhaseNotStarted {
		// The pod exists (or the state cannot be read, which the manager
		// reports).
		return p.handlePod(ctx, tCtx)
	}
	req, err := p.requestOf(ctx, tCtx)
	if err != nil {
		return pluginsCore.DoTransition(pluginsCore.PhaseInfoFailure("AccelschedBadTask", err.Error(), nil)), nil
	}
	if req == nil { // no accelerators: the pod plugin alone
		return p.pods.Handle(ctx, tCtx)
	}
	alloc, err := p.client.Allocate(ctx, req)
	if err != nil {
		return refused(err)
	}
	switch alloc.GetState() {
	case pb.AllocationState_PENDING:
		// The phase version rises as the task moves up the queue, so that
		// propeller sends the new position as an event.
		version := uint32(1 << 20)
		if position := alloc.GetQueuePosition(); position > 0 && position < 1<<20 {
			version -= uint32(position)
		}
		return pluginsCore.DoTransition(pluginsCore.PhaseInfoWaitingForResourcesInfo(version,
			fmt.Sprintf("accelsched: waiting in the queue at position %d: %s",
				alloc.GetQueuePosition(), alloc.GetPendingReason()), nil)), nil
	case pb.AllocationState_ACTIVE:
		if hosts := len(alloc.GetPlacements()); hosts > 1 {
			// A multi-host TPU slice runs one pod per host (a JobSet); this
			// plugin runs one pod.
			if err := p.release(ctx, tCtx); err != nil {
				return pluginsCore.UnknownTransition, err
			}
			return pluginsCore.DoTransition(pluginsCore.PhaseInfoFailure("AccelschedMultiHost",
				fmt.Sprintf("accelsched: %s %s spans %d hosts, which needs one pod per host; the %s plugin runs one pod",
					alloc.GetModel(), req.GetAccelerator().GetPartitionSize(), hosts, ID), nil)), nil
		}
		return p.handlePod(context.WithValue(ctx, allocationKey{}, alloc), tCtx)
	default:
		// Ended before its pod was made (preempted while it waited, say):
		// the attempt is retried with a new request id.
		return pluginsCore.DoTransition(pluginsCore.PhaseInfoRetryableFailure("AccelschedAllocationEnded",
			fmt.Sprintf("accelsched: allocation %s is %s before its pod started",
				alloc.GetId(), alloc.GetState()), nil)), nil
	}
}

func (p *Plugin) handlePod(ctx context.Context, tCtx pluginsCore.TaskExecutionContext) (pluginsCore.Transition, error) {
	transition, err := p.pods.Handle(ctx, tCtx)
	if err == nil && transition.Info().Phase().IsTerminal() {
		if err := p.release(ctx, tCtx); err != nil {
			// The lease frees the devices in the end.
			logger.Warnf(ctx, "accelsched: releasing the devices of a finished task: %v", err)
		}
	}
	return transition, err
}

// Abort deletes the pod as propeller does and releases the allocation; an
// error (accelsched unreachable) makes propeller try again.
func (p *Plugin) Abort(ctx context.Context, tCtx pluginsCore.TaskExecutionContext) error {
	if err := p.pods.Abort(ctx, tCtx); err != nil {
		return err
	}
	return p.release(ctx, tCtx)
}

// Finalize clears the pod's finalizers as propeller does and releases the
// allocation (again: releasing is idempotent).
func (p *Plugin) Finalize(ctx context.Context, tCtx pluginsCore.TaskExecutionContext) error {
	if err := p.pods.Finalize(ctx, tCtx); err != nil {
		return err
	}
	return p.release(ctx, tCtx)
}

// release frees what this attempt's request id holds; a request id that
// never allocated (a task without accelerators, a refused one) is fine.
func (p *Plugin) release(ctx context.Context, tCtx pluginsCore.TaskExecutionContext) error {
	requestID := tCtx.TaskExecutionMetadata().GetTaskExecutionID().GetGeneratedName()
	_, err := p.client.ReleaseRequest(ctx, requestID)
	if status.Code(err) == codes.NotFound {
		return nil
	}
	return err
}

// refused turns a failed Allocate into a transition: accelsched's refusal
// fails the task with its message (INVALID_ARGUMENT naming the field,
// FAILED_PRECONDITION when nothing could ever fit, ...); RESOURCE_EXHAUSTED
// (a quota, without room to queue) waits; unreachable is a system error.
func refused(err error) (pluginsCore.Transition, error) {
	if accelsched.Retryable(err) {
		return pluginsCore.UnknownTransition, fmt.Errorf("accelsched is unreachable: %w", err)
	}
	s := status.Convert(err)
	message := "accelsched: " + s.Message()
	if s.Code() == codes.ResourceExhausted {
		return pluginsCore.DoTransition(pluginsCore.PhaseInfoWaitingForResourcesInfo(
			pluginsCore.DefaultPhaseVersion, message, nil)), nil
	}
	return pluginsCore.DoTransition(pluginsCore.PhaseInfoFailure("Accelsched"+s.Code().String(), message, nil)), nil
}

// requestOf is the AllocateRequest of the task's attempt, or nil when the
// task asks for no accelerator (its type is not one of the plugin's, or its
// pod has no GPU limit). The count and the primary container are those of
// the pod propeller's pod plugin builds (resources with the task's overrides
// and the platform's defaults applied); the accelerator is the task's
// GPUAccelerator (its override first), its bytes unchanged.
func (p *Plugin) requestOf(ctx context.Context, tCtx pluginsCore.TaskExecutionContext) (*pb.AllocateRequest, error) {
	template, err := tCtx.TaskReader().Read(ctx)
	if err != nil {
		return nil, err
	}
	if !p.taskTypes[template.GetType()] {
		return nil, nil
	}
	o, err := pod.DefaultPodPlugin.BuildResource(ctx, tCtx)
	if err != nil {
		return nil, err
	}
	built := o.(*v1.Pod)
	primary := primaryContainer(built, tCtx)
	container := containerNamed(&built.Spec, primary)
	if container == nil {
		return nil, fmt.Errorf("the task's pod has no container %q", primary)
	}
	limit := container.Resources.Limits[v1.ResourceName(config.GetK8sPluginConfig().GpuResourceName)]
	if limit.Value() <= 0 {
		return nil, nil
	}
	task := accelsched.Task{
		ExecutionID: tCtx.TaskExecutionMetadata().GetTaskExecutionID().GetGeneratedName(),
		Count:       int32(limit.Value()),
		Container:   primary,
		Lease:       p.lease,
		Queue:       true,
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
			return nil, err
		}
		// The pod's limit counts a TPU slice's chips; accelsched allocates
		// the slice whole (count 1).
		if p.classOf(ctx, gpu.GetDevice()) == pb.DeviceClass_GOOGLE_TPU {
			task.Count = 1
		}
	}
	return accelsched.NewAllocateRequest(task)
}

// classOf is the class of the accelerator type named device, NVIDIA_GPU when
// accelsched does not know the name (Allocate then says so).
func (p *Plugin) classOf(ctx context.Context, device string) pb.DeviceClass {
	if class, ok := p.classes.Load(device); ok {
		return class.(pb.DeviceClass)
	}
	types, err := p.client.AcceleratorTypes(ctx, device)
	if err != nil || len(types) == 0 {
		return pb.DeviceClass_NVIDIA_GPU
	}
	class := types[0].GetDeviceClass()
	p.classes.Store(device, class)
	return class
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

type allocationKey struct{}

// PlacingPodPlugin is flyteplugins' pod plugin whose pods carry the
// placement of the allocation Handle passes down (in the context): the
// chosen node, the devices' labels, tolerations and resource. With Claims
// set it also creates the allocation's DRA ResourceClaim through Kube and
// gives the pod its devices through it.
type PlacingPodPlugin struct {
	k8s.Plugin
	Claims bool
	Kube   client.Client
}

// ClaimName is the name under which the pod refers to its ResourceClaim.
const ClaimName = "accelsched"

func (p PlacingPodPlugin) BuildResource(ctx context.Context, tCtx pluginsCore.TaskExecutionContext) (client.Object, error) {
	o, err := p.Plugin.BuildResource(ctx, tCtx)
	if err != nil {
		return nil, err
	}
	alloc, _ := ctx.Value(allocationKey{}).(*pb.Allocation)
	if alloc == nil {
		return o, nil
	}
	built := o.(*v1.Pod)
	primary := primaryContainer(built, tCtx)
	placement := alloc.GetPlacement()
	if err := ApplyPlacement(&built.Spec, primary, placement); err != nil {
		return nil, err
	}
	if p.Claims && placement.GetResourceClaim() != "" {
		if err := p.claim(ctx, tCtx, built, primary, placement); err != nil {
			return nil, err
		}
	}
	if built.Annotations == nil {
		built.Annotations = map[string]string{}
	}
	built.Annotations[AllocationAnnotation] = alloc.GetId()
	return built, nil
}

// claim creates the placement's ResourceClaim in the task's namespace, owned
// by the workflow (so it goes with it), unless a round before this one did,
// and swaps the primary container's device-plugin resource for it.
func (p PlacingPodPlugin) claim(ctx context.Context, tCtx pluginsCore.TaskExecutionContext, built *v1.Pod,
	primary string, placement *pb.Placement) error {
	claim := &resourcev1.ResourceClaim{}
	if err := json.Unmarshal([]byte(placement.GetResourceClaim()), claim); err != nil {
		return fmt.Errorf("accelsched: the allocation's resource_claim: %w", err)
	}
	metadata := tCtx.TaskExecutionMetadata()
	claim.Namespace = metadata.GetNamespace()
	claim.OwnerReferences = []metav1.OwnerReference{metadata.GetOwnerReference()}
	if err := p.Kube.Create(ctx, claim); err != nil && !k8serrors.IsAlreadyExists(err) {
		return fmt.Errorf("accelsched: creating ResourceClaim %s: %w", claim.Name, err)
	}
	name := claim.Name
	built.Spec.ResourceClaims = append(built.Spec.ResourceClaims, v1.PodResourceClaim{Name: ClaimName, ResourceClaimName: &name})
	container := containerNamed(&built.Spec, primary)
	delete(container.Resources.Limits, v1.ResourceName(placement.GetResourceName()))
	delete(container.Resources.Requests, v1.ResourceName(placement.GetResourceName()))
	container.Resources.Claims = append(container.Resources.Claims, v1.ResourceClaim{Name: ClaimName})
	return nil
}
