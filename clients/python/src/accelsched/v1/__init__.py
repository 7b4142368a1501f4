"""Generated protobuf and gRPC stubs of accelsched.v1 (proto/accelsched/v1); see generate.sh."""
