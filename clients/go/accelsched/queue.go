package accelsched

import (
	"context"
	"time"

	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
)

// WaitAdmitted waits until the allocation a (as Allocate with queue: true
// returned it) is no longer PENDING and returns it as it is then: ACTIVE
// once admitted, or ended (RELEASED, EXPIRED, PREEMPTED) if it left the
// queue another way. It learns of the admission from WatchEvents (filtered
// by a's request id) as it happens, and reads the allocation every poll
// interval besides: that covers an admission before the watch began, a
// server without WatchEvents, and a watch that broke (a restart or a
// failover; it is not reopened, polling carries on). poll <= 0 means 5 s.
// Returns the context's error when it ends first, or the error of a read
// that failed after its retries.
func (c *Client) WaitAdmitted(ctx context.Context, a *pb.Allocation, poll time.Duration) (*pb.Allocation, error) {
	if a.GetState() != pb.AllocationState_PENDING {
		return a, nil
	}
	if poll <= 0 {
		poll = 5 * time.Second
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	admitted := make(chan *pb.Allocation, 1)
	go c.watchForExit(watchCtx, a, admitted)

	// The first read comes at once: the watch may have begun after the
	// admission.
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case out := <-admitted:
			return out, nil
		case <-timer.C:
			out, err := c.Get(ctx, a.GetId())
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err != nil {
				return nil, err
			}
			if out.GetState() != pb.AllocationState_PENDING {
				return out, nil
			}
			timer.Reset(poll)
		}
	}
}

// watchForExit sends a (as an event carries it) on out once an event says
// it left PENDING; it returns when the stream ends, for whatever reason.
func (c *Client) watchForExit(ctx context.Context, a *pb.Allocation, out chan<- *pb.Allocation) {
	stream, err := c.stub.WatchEvents(ctx, &pb.WatchEventsRequest{RequestId: a.GetRequestId()})
	if err != nil {
		return
	}
	for {
		event, err := stream.Recv()
		if err != nil {
			return
		}
		got := event.GetAllocation()
		if got.GetId() == a.GetId() && got.GetState() != pb.AllocationState_PENDING {
			out <- got
			return
		}
	}
}
