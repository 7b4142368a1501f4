package flyteplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
	pluginsCore "github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/core"
	"github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/k8s"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	k8serrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

type allocationKey struct{}

// PlacingPodPlugin is flyteplugins' pod plugin whose pods carry the
// placement of the allocation Handle passes down (in the context): the
// chosen node, the devices' labels, tolerations and resource. With Claims
// set, a pod whose placement has a ResourceClaim (which Handle created) takes
// its devices through it.
type PlacingPodPlugin struct {
	k8s.Plugin
	Claims bool
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
		if err := useClaim(built, primary, placement); err != nil {
			return nil, err
		}
	}
	if built.Annotations == nil {
		built.Annotations = map[string]string{}
	}
	built.Annotations[AllocationAnnotation] = alloc.GetId()
	return built, nil
}

func claimOf(placement *pb.Placement) (*resourcev1.ResourceClaim, error) {
	claim := &resourcev1.ResourceClaim{}
	if err := json.Unmarshal([]byte(placement.GetResourceClaim()), claim); err != nil {
		return nil, fmt.Errorf("accelsched: the allocation's resource_claim: %w", err)
	}
	return claim, nil
}

// createClaim creates the allocation's ResourceClaim in the task's
// namespace, owned by the workflow (so it goes with it), unless an earlier
// round did.
//
// A share's claim is its GPU's, named by the GPU and used by every pod that
// shares it (NVIDIA's DRA driver gives a device to one claim): each
// workflow that uses it is added as one of its owners, none of them its
// controller, so that the garbage collector deletes it only after the last.
// One being deleted is waited for (the next round creates it afresh).
func createClaim(ctx context.Context, kube client.Client, tCtx pluginsCore.TaskExecutionContext, alloc *pb.Allocation) error {
	claim, err := claimOf(alloc.GetPlacement())
	if err != nil {
		return err
	}
	metadata := tCtx.TaskExecutionMetadata()
	owner := metadata.GetOwnerReference()
	shared := len(alloc.GetDevices()) == 1 && alloc.GetDevices()[0].GetShare() != nil
	if shared {
		owner.Controller = nil
	}
	claim.Namespace = metadata.GetNamespace()
	claim.OwnerReferences = []metav1.OwnerReference{owner}
	err = kube.Create(ctx, claim)
	if err == nil || (!shared && k8serrors.IsAlreadyExists(err)) {
		return nil
	}
	if !k8serrors.IsAlreadyExists(err) {
		return fmt.Errorf("accelsched: creating ResourceClaim %s: %w", claim.Name, err)
	}
	existing := &resourcev1.ResourceClaim{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(claim), existing); err != nil {
		return fmt.Errorf("accelsched: reading the shared ResourceClaim %s: %w", claim.Name, err)
	}
	if existing.DeletionTimestamp != nil {
		return fmt.Errorf("accelsched: the shared ResourceClaim %s is being deleted; waiting to create it again", claim.Name)
	}
	for _, o := range existing.OwnerReferences {
		if o.UID == owner.UID && o.Kind == owner.Kind && o.Name == owner.Name {
			return nil
		}
	}
	existing.OwnerReferences = append(existing.OwnerReferences, owner)
	if err := kube.Update(ctx, existing); err != nil {
		return fmt.Errorf("accelsched: adding an owner to the shared ResourceClaim %s: %w", claim.Name, err)
	}
	return nil
}

// permanentClaimError says whether createClaim's error would recur on every
// round: a claim that does not parse, or one the API refuses.
func permanentClaimError(err error) bool {
	var syntax *json.SyntaxError
	var unmarshal *json.UnmarshalTypeError
	return errors.As(err, &syntax) || errors.As(err, &unmarshal) ||
		k8serrors.IsForbidden(err) || k8serrors.IsInvalid(err) || k8serrors.IsBadRequest(err)
}

// useClaim swaps the primary container's device-plugin resource for the
// placement's ResourceClaim.
func useClaim(built *v1.Pod, primary string, placement *pb.Placement) error {
	claim, err := claimOf(placement)
	if err != nil {
		return err
	}
	name := claim.Name
	built.Spec.ResourceClaims = append(built.Spec.ResourceClaims, v1.PodResourceClaim{Name: ClaimName, ResourceClaimName: &name})
	container := containerNamed(&built.Spec, primary)
	delete(container.Resources.Limits, v1.ResourceName(placement.GetResourceName()))
	delete(container.Resources.Requests, v1.ResourceName(placement.GetResourceName()))
	container.Resources.Claims = append(container.Resources.Claims, v1.ResourceClaim{Name: ClaimName})
	return nil
}
