// Package accelsched is the client a Flyte propeller plugin (or any Go
// program that launches pods) uses to place a task on accelerators chosen by
// accelsched: it builds an AllocateRequest from a Flyte GPUAccelerator,
// allocates (or queues and waits for the admission), polls, renews and
// releases with retries on UNAVAILABLE and DEADLINE_EXCEEDED, and applies the
// allocation's Placement.pod_spec_patch to a PodSpec.
//
// The generated gRPC stubs are in
// github.com/accelsched/accelsched/clients/go/accelschedv1 (committed; made by
// clients/go/generate.sh from proto/accelsched/v1).
package accelsched
