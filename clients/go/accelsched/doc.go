// Package accelsched is the client a Flyte propeller plugin (or any Go
// program that launches pods) uses to place a task on accelerators chosen by
// accelsched: it builds an AllocateRequest from a Flyte GPUAccelerator,
// allocates, polls, renews and releases with retries on UNAVAILABLE, and
// applies the allocation's Placement.pod_spec_patch to a PodSpec.
//
// The generated gRPC stubs are in
// github.com/accelsched/accelsched/clients/go/accelschedv1 (protoc-gen-go and
// protoc-gen-go-grpc over proto/accelsched/v1; scripts/go_test.sh generates
// them).
package accelsched
