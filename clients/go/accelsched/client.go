package accelsched

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"time"

	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Backoff says how a call that failed with UNAVAILABLE (the server is down,
// restarting, or not the leader) or DEADLINE_EXCEEDED (one attempt ran past
// PerAttempt) is retried: waits start at Initial and double up to Max, each
// drawn uniformly from [w/2, w] (jitter, so clients that lost one server do
// not come back in step), for at most Attempts calls in all, and never past
// the context's deadline. Every call this package retries is idempotent:
// Allocate by request id, Release by allocation id, the rest read.
type Backoff struct {
	Initial  time.Duration
	Max      time.Duration
	Attempts int
	// Each attempt's own deadline (within the context's), so that a call
	// stuck on a server that stopped answering (frozen, cut off) is tried
	// again instead of holding the caller until the context ends. 0: none.
	PerAttempt time.Duration
}

// DefaultBackoff rides out a server restart or a leader's failover: about a
// minute when attempts fail at once, each at most 10 s against a server that
// does not answer.
var DefaultBackoff = Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Attempts: 16,
	PerAttempt: 10 * time.Second}

// normalized is b with its gaps filled: no Initial (or a negative one) takes
// DefaultBackoff's, Max is at least Initial, there is at least one attempt,
// and a negative PerAttempt is none.
func (b Backoff) normalized() Backoff {
	if b.Initial <= 0 {
		b.Initial = DefaultBackoff.Initial
	}
	if b.Max < b.Initial {
		b.Max = b.Initial
	}
	if b.Attempts < 1 {
		b.Attempts = 1
	}
	if b.PerAttempt < 0 {
		b.PerAttempt = 0
	}
	return b
}

// Each process draws its own jitter.
var (
	jitterMu sync.Mutex
	jitter   = rand.New(rand.NewSource(time.Now().UnixNano()))
)

// jittered is a wait drawn uniformly from [w/2, w].
func jittered(w time.Duration) time.Duration {
	jitterMu.Lock()
	defer jitterMu.Unlock()
	return w/2 + time.Duration(jitter.Int63n(int64(w-w/2)+1))
}

// Client calls accelsched. Every method is safe to retry and is retried as
// its Backoff says.
type Client struct {
	stub    pb.AcceleratorSchedulerClient
	backoff Backoff
}

// NewClient uses conn (from grpc.NewClient, with the credentials the server
// asks for) and DefaultBackoff.
func NewClient(conn grpc.ClientConnInterface) *Client {
	return &Client{stub: pb.NewAcceleratorSchedulerClient(conn), backoff: DefaultBackoff}
}

// WithBackoff returns a copy of c that retries by b (its gaps filled in as
// normalized says).
func (c *Client) WithBackoff(b Backoff) *Client {
	copied := *c
	copied.backoff = b.normalized()
	return &copied
}

// Stub is the generated client, for the calls this package does not wrap.
func (c *Client) Stub() pb.AcceleratorSchedulerClient { return c.stub }

func (c *Client) retry(ctx context.Context, call func(context.Context) error) error {
	return c.backoff.retry(ctx, call)
}

// Retryable says whether a call that failed with err may be tried again:
// UNAVAILABLE, or DEADLINE_EXCEEDED of an attempt (not of the caller's
// context, which retry checks separately).
func Retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

// retry calls call, each time with a context bounded by PerAttempt, until it
// returns an error Retryable refuses (or none), b.Attempts calls were made,
// or ctx is done, and returns its last error.
func (b Backoff) retry(ctx context.Context, call func(context.Context) error) error {
	b = b.normalized()
	wait := b.Initial
	for attempt := 1; ; attempt++ {
		err := b.attempt(ctx, call)
		if !Retryable(err) || attempt >= b.Attempts {
			return err
		}
		timer := time.NewTimer(jittered(wait))
		select {
		case <-ctx.Done():
			timer.Stop()
			return err
		case <-timer.C:
		}
		wait = b.next(wait)
	}
}

func (b Backoff) attempt(ctx context.Context, call func(context.Context) error) error {
	if b.PerAttempt == 0 {
		return call(ctx)
	}
	attemptCtx, cancel := context.WithTimeout(ctx, b.PerAttempt)
	defer cancel()
	return call(attemptCtx)
}

// next is the wait after w: doubled, at most Max (and never overflowing).
func (b Backoff) next(w time.Duration) time.Duration {
	if w > b.Max/2 {
		return b.Max
	}
	return w * 2
}

// Allocate allocates req's devices, or returns the allocation an earlier
// call with the same request id made. Errors are the server's status:
// RESOURCE_EXHAUSTED when nothing fits now, FAILED_PRECONDITION when nothing
// ever could, INVALID_ARGUMENT naming the field, ALREADY_EXISTS when the
// request id was used for a different request.
func (c *Client) Allocate(ctx context.Context, req *pb.AllocateRequest) (*pb.Allocation, error) {
	var out *pb.Allocation
	err := c.retry(ctx, func(ctx context.Context) (err error) {
		out, err = c.stub.Allocate(ctx, req)
		return err
	})
	return out, err
}

// Get reads an allocation by its id.
func (c *Client) Get(ctx context.Context, allocationID string) (*pb.Allocation, error) {
	var out *pb.Allocation
	err := c.retry(ctx, func(ctx context.Context) (err error) {
		out, err = c.stub.GetAllocation(ctx, &pb.GetAllocationRequest{
			Key: &pb.GetAllocationRequest_AllocationId{AllocationId: allocationID}})
		return err
	})
	return out, err
}

// Poll reads the allocation every interval until it is no longer PENDING
// (propeller's model: a plugin checks each round) and returns it, or returns
// the context's error.
func (c *Client) Poll(ctx context.Context, allocationID string, interval time.Duration) (*pb.Allocation, error) {
	for {
		a, err := c.Get(ctx, allocationID)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil || a.GetState() != pb.AllocationState_PENDING {
			return a, err
		}
		timer := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

// Renew extends the allocation's lease to lease from now (0: the server
// default). FAILED_PRECONDITION once it has ended.
func (c *Client) Renew(ctx context.Context, allocationID string, lease time.Duration) (*pb.Allocation, error) {
	if lease < 0 {
		return nil, fmt.Errorf("accelsched: lease %v is negative", lease)
	}
	req := &pb.RenewLeaseRequest{AllocationId: allocationID}
	if lease > 0 {
		req.Lease = durationpb.New(lease)
	}
	var out *pb.Allocation
	err := c.retry(ctx, func(ctx context.Context) (err error) {
		out, err = c.stub.RenewLease(ctx, req)
		return err
	})
	return out, err
}

// Release frees the allocation's devices; releasing an ended allocation
// returns it unchanged.
func (c *Client) Release(ctx context.Context, allocationID string) (*pb.Allocation, error) {
	var out *pb.Allocation
	err := c.retry(ctx, func(ctx context.Context) (err error) {
		out, err = c.stub.Release(ctx, &pb.ReleaseRequest{
			Key: &pb.ReleaseRequest_AllocationId{AllocationId: allocationID}})
		return err
	})
	return out, err
}

// ReleaseRequest releases the allocation made for requestID (its latest),
// as Release does; NOT_FOUND when that request id never allocated.
func (c *Client) ReleaseRequest(ctx context.Context, requestID string) (*pb.Allocation, error) {
	var out *pb.Allocation
	err := c.retry(ctx, func(ctx context.Context) (err error) {
		out, err = c.stub.Release(ctx, &pb.ReleaseRequest{
			Key: &pb.ReleaseRequest_RequestId{RequestId: requestID}})
		return err
	})
	return out, err
}

// AcceleratorTypes is the accelerator type that name (any alias,
// case-insensitive) denotes, or every type when name is empty; none for an
// unknown name.
func (c *Client) AcceleratorTypes(ctx context.Context, name string) ([]*pb.AcceleratorType, error) {
	var out *pb.ListAcceleratorTypesResponse
	err := c.retry(ctx, func(ctx context.Context) (err error) {
		out, err = c.stub.ListAcceleratorTypes(ctx, &pb.ListAcceleratorTypesRequest{Name: name})
		return err
	})
	return out.GetTypes(), err
}

// GetRequest reads the allocation made for requestID (its latest).
func (c *Client) GetRequest(ctx context.Context, requestID string) (*pb.Allocation, error) {
	var out *pb.Allocation
	err := c.retry(ctx, func(ctx context.Context) (err error) {
		out, err = c.stub.GetAllocation(ctx, &pb.GetAllocationRequest{
			Key: &pb.GetAllocationRequest_RequestId{RequestId: requestID}})
		return err
	})
	return out, err
}
