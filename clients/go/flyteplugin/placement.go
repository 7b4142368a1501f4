package flyteplugin

import (
	"fmt"

	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
	"github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/flytek8s"
	"github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/flytek8s/config"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ApplyPlacement puts an allocation's placement on the pod that propeller's
// pod plugin built, merged the way propeller merges its own accelerator
// rules (flyteplugins v1.16.8 flytek8s/pod_helper.go:59-75 and 190-272):
//   - each node-selector requirement is ANDed into every required term
//     (flytek8s.AddRequiredNodeSelectorRequirements, propeller's own), or
//     forms one term when there is none. Requirements the pod already has on
//     the accelerator labels (propeller's GpuDeviceNodeLabel and
//     GpuPartitionSizeNodeLabel) or on a key the placement sets are dropped
//     first: the placement knows the chosen node, whose own label value wins
//     over the task's spelling, and under the device plugin's mixed MIG
//     strategy the node has no partition label at all;
//   - each toleration is appended unless an equal one is there;
//   - the primary container's requests and limits get the placement's
//     resource and count, replacing propeller's GpuResourceName where the
//     placement names another (nvidia.com/mig-<profile>, google.com/tpu);
//   - the environment, when the server sets one, on the primary container.
//
// Errors: the pod has no container named primary; the placement has no node
// affinity (accelsched's always pins the node).
func ApplyPlacement(podSpec *v1.PodSpec, primary string, p *pb.Placement) error {
	container := containerNamed(podSpec, primary)
	if container == nil {
		return fmt.Errorf("accelsched: the pod has no container %q (the task's primary container)", primary)
	}
	cfg := config.GetK8sPluginConfig()
	if podSpec.Affinity == nil {
		podSpec.Affinity = &v1.Affinity{}
	}
	requirements := make([]v1.NodeSelectorRequirement, 0, len(p.GetNodeAffinity()))
	replaced := map[string]bool{cfg.GpuDeviceNodeLabel: true, cfg.GpuPartitionSizeNodeLabel: true}
	for _, r := range p.GetNodeAffinity() {
		requirements = append(requirements, v1.NodeSelectorRequirement{
			Key: r.GetKey(), Operator: v1.NodeSelectorOperator(r.GetOperator()), Values: r.GetValues()})
		replaced[r.GetKey()] = true
	}
	dropRequirements(podSpec.Affinity, replaced)
	if len(requirements) == 0 {
		return fmt.Errorf("accelsched: a placement without node affinity")
	}
	flytek8s.AddRequiredNodeSelectorRequirements(podSpec.Affinity, requirements...)

	for _, t := range p.GetTolerations() {
		toleration := v1.Toleration{Key: t.GetKey(), Operator: v1.TolerationOperator(t.GetOperator()),
			Value: t.GetValue(), Effect: v1.TaintEffect(t.GetEffect())}
		if !hasToleration(podSpec.Tolerations, toleration) {
			podSpec.Tolerations = append(podSpec.Tolerations, toleration)
		}
	}

	if name := v1.ResourceName(p.GetResourceName()); name != "" {
		gpu := v1.ResourceName(cfg.GpuResourceName)
		if name != gpu {
			delete(container.Resources.Limits, gpu)
			delete(container.Resources.Requests, gpu)
		}
		count := *resource.NewQuantity(p.GetResourceCount(), resource.DecimalSI)
		if container.Resources.Limits == nil {
			container.Resources.Limits = v1.ResourceList{}
		}
		if container.Resources.Requests == nil {
			container.Resources.Requests = v1.ResourceList{}
		}
		container.Resources.Limits[name] = count
		container.Resources.Requests[name] = count
	}

	for name, value := range p.GetEnv() {
		setEnv(container, name, value)
	}
	return nil
}

func containerNamed(podSpec *v1.PodSpec, name string) *v1.Container {
	for i := range podSpec.Containers {
		if podSpec.Containers[i].Name == name {
			return &podSpec.Containers[i]
		}
	}
	return nil
}

// dropRequirements removes the required node-affinity requirements on the
// given keys from every term. A term left empty stays (the placement's
// requirements go into it): dropping it would narrow the terms' OR.
func dropRequirements(affinity *v1.Affinity, keys map[string]bool) {
	if affinity.NodeAffinity == nil || affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return
	}
	terms := affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		kept := terms[i].MatchExpressions[:0]
		for _, r := range terms[i].MatchExpressions {
			if !keys[r.Key] {
				kept = append(kept, r)
			}
		}
		terms[i].MatchExpressions = kept
	}
}

func hasToleration(tolerations []v1.Toleration, t v1.Toleration) bool {
	for _, existing := range tolerations {
		if existing.MatchToleration(&t) && existing.TolerationSeconds == nil {
			return true
		}
	}
	return false
}

func setEnv(c *v1.Container, name, value string) {
	for i := range c.Env {
		if c.Env[i].Name == name {
			c.Env[i] = v1.EnvVar{Name: name, Value: value}
			return
		}
	}
	c.Env = append(c.Env, v1.EnvVar{Name: name, Value: value})
}
