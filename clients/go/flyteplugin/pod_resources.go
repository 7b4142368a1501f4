package flyteplugin

import (
	"github.com/accelsched/accelsched/clients/go/accelsched"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// podResourcesOf is the pod's effective CPU and memory request, as the
// Kubernetes scheduler counts it against a node's allocatable
// (k8s.io/component-helpers/resource helpers.go PodRequests and
// aggregateContainerResourcesByFn, kubernetes/kubernetes 0085214e; the rule
// as documented: kubernetes.io/docs/concepts/resource-management/
// effective-pod-requests-limits/):
//   - each container's request, or its limit where it sets no request
//     (the API server defaults one to the other: pkg/apis/core/v1/defaults.go
//     SetDefaults_Pod);
//   - the sum over the regular containers and the sidecars (init containers
//     with restartPolicy Always, which keep running beside them);
//   - at least what initialization needs at its peak: each regular init
//     container's request plus the sidecars listed before it (init
//     containers run one at a time, sidecars go on running);
//   - pod-level requests (spec.resources, the PodLevelResources feature)
//     replace the containers' for CPU and memory; a pod-level limit without
//     a request counts as the request when no container requests that
//     resource (SetDefaults_Pod defaultPodRequests);
//   - plus the pod's overhead (its RuntimeClass's).
//
// Each quantity is taken as the API server stores it (rounded up to
// thousandths); the sums are CPU in thousandths and memory in bytes, rounded
// up (Quantity.MilliValue, Quantity.Value). The zero value when the pod
// requests neither.
func podResourcesOf(spec *v1.PodSpec) accelsched.PodResources {
	cpu, memory := effectiveRequest(spec, v1.ResourceCPU), effectiveRequest(spec, v1.ResourceMemory)
	return accelsched.PodResources{CPUMilli: cpu.MilliValue(), MemoryBytes: memory.Value()}
}

// effectiveRequest is the pod's request of one resource (see podResourcesOf).
func effectiveRequest(spec *v1.PodSpec, name v1.ResourceName) resource.Quantity {
	total := resource.Quantity{}
	requested := false // does any container request it (or limit it)?
	add := func(into *resource.Quantity, c *v1.Container) {
		if q, ok := requestOf(c, name); ok {
			into.Add(q)
			requested = true
		}
	}
	for i := range spec.Containers {
		add(&total, &spec.Containers[i])
	}
	sidecars := resource.Quantity{} // the sidecars started so far
	initPeak := resource.Quantity{}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(&total, c)
			add(&sidecars, c)
			if sidecars.Cmp(initPeak) > 0 {
				initPeak = sidecars.DeepCopy()
			}
			continue
		}
		running := sidecars.DeepCopy()
		add(&running, c)
		if running.Cmp(initPeak) > 0 {
			initPeak = running
		}
	}
	if initPeak.Cmp(total) > 0 {
		total = initPeak.DeepCopy()
	}
	if pod := spec.Resources; pod != nil {
		if q, ok := pod.Requests[name]; ok {
			total = stored(q)
		} else if q, ok := pod.Limits[name]; ok && !requested {
			total = stored(q)
		}
	}
	if q, ok := spec.Overhead[name]; ok {
		total.Add(stored(q))
	}
	return total
}

// requestOf is the container's request of name, else its limit; false when
// it sets neither.
func requestOf(c *v1.Container, name v1.ResourceName) (resource.Quantity, bool) {
	if q, ok := c.Resources.Requests[name]; ok {
		return stored(q), true
	}
	q, ok := c.Resources.Limits[name]
	return stored(q), ok
}

// stored is q as the API server stores it, and so as the scheduler reads
// it: rounded up to thousandths (pkg/apis/core/v1/defaults.go
// SetDefaults_ResourceList), so "1500u" of CPU counts as 2m.
func stored(q resource.Quantity) resource.Quantity {
	q = q.DeepCopy()
	q.RoundUp(resource.Milli)
	return q
}
