package accelsched

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

func queuedA100(t *testing.T, c *Client, id string) *pb.Allocation {
	req, err := NewAllocateRequest(Task{ExecutionID: id, Accelerator: &pb.Accelerator{Device: "A100"}, Queue: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := c.Allocate(ctx, req)
	if err != nil {
		t.Fatalf("Allocate %s: %v", id, err)
	}
	return a
}

// waitAdmittedAfterRelease queues a request behind a held A100, releases the
// holder once WaitAdmitted is under way (its watch connected, when watched),
// and returns what WaitAdmitted gave.
func waitAdmittedAfterRelease(t *testing.T, s server, c *Client, poll time.Duration, watched bool) *pb.Allocation {
	s.Register(a100Node())
	holder := queuedA100(t, c, "holder")
	waiter := queuedA100(t, c, "waiter")
	if holder.GetState() != pb.AllocationState_ACTIVE || waiter.GetState() != pb.AllocationState_PENDING ||
		waiter.GetQueuePosition() != 1 {
		t.Fatalf("holder %v, waiter %v", holder.GetState(), waiter)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		a   *pb.Allocation
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := c.WaitAdmitted(ctx, waiter, poll)
		done <- result{a, err}
	}()
	if watched {
		s.WaitWatchers(1)
	}
	select {
	case r := <-done:
		t.Fatalf("WaitAdmitted returned before the release: %v, %v", r.a, r.err)
	default:
	}
	if _, err := c.Release(ctx, holder.GetId()); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("WaitAdmitted: %v", r.err)
	}
	if r.a.GetId() != waiter.GetId() || r.a.GetState() != pb.AllocationState_ACTIVE ||
		len(r.a.GetDevices()) != 1 || r.a.GetPlacement().GetPodSpecPatch() == "" {
		t.Fatalf("WaitAdmitted gave %v", r.a)
	}
	return r.a
}

// The watch tells of the admission: with polling an hour apart, only
// WatchEvents can end the wait.
func TestWaitAdmittedLearnsFromTheWatch(t *testing.T) {
	s := startServer(t)
	start := time.Now()
	waitAdmittedAfterRelease(t, s, s.client(), time.Hour, true)
	if waited := time.Since(start); waited > 20*time.Second {
		t.Errorf("took %v", waited)
	}
}

// Where WatchEvents is refused, polling finds the admission.
func TestWaitAdmittedFallsBackToPolling(t *testing.T) {
	s := startServer(t)
	var watches atomic.Int32
	conn, err := grpc.NewClient(s.Address(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn,
			method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			watches.Add(1)
			return nil, status.Error(codes.Unimplemented, "no WatchEvents here")
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	waitAdmittedAfterRelease(t, s, NewClient(conn), 20*time.Millisecond, false)
	if n := watches.Load(); n != 1 {
		t.Errorf("%d watches, want 1", n)
	}
}

func TestWaitAdmittedReturnsWhatIsNotPending(t *testing.T) {
	s := startServer(t)
	c := s.client()
	s.Register(a100Node())
	a := queuedA100(t, c, "now")
	got, err := c.WaitAdmitted(context.Background(), a, time.Hour)
	if err != nil || got != a {
		t.Errorf("WaitAdmitted of an ACTIVE allocation: %v, %v", got, err)
	}
	waiter := queuedA100(t, c, "never")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.WaitAdmitted(ctx, waiter, 10*time.Millisecond); err != context.DeadlineExceeded {
		t.Errorf("WaitAdmitted past its context: %v", err)
	}
}

// A server that stops answering (SIGSTOP: connections open, nothing read)
// costs one attempt's deadline, not the caller's: the next attempt, after it
// resumes, succeeds.
func TestAnAttemptPastItsDeadlineIsRetried(t *testing.T) {
	s := startServer(t)
	c := s.client()
	s.Register(a100Node())
	c = c.WithBackoff(Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond, Attempts: 100,
		PerAttempt: 300 * time.Millisecond})
	s.Freeze()
	attempts := 0
	first := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- c.retry(ctx, func(ctx context.Context) error {
			attempts++
			_, err := c.stub.GetNode(ctx, &pb.GetNodeRequest{Name: "n1"})
			if attempts == 1 {
				first <- err
			}
			return err
		})
	}()
	if err := <-first; status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("the first attempt, on the frozen server: %v", err)
	}
	s.Thaw()
	if err := <-done; err != nil {
		t.Fatalf("after SIGCONT: %v (%d attempts)", err, attempts)
	}
	if attempts < 2 {
		t.Errorf("%d attempts, want a retry after DEADLINE_EXCEEDED", attempts)
	}

	// The caller's own deadline is final.
	attempts = 0
	short, cancelShort := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancelShort()
	<-short.Done()
	err := c.retry(short, func(ctx context.Context) error {
		attempts++
		return status.FromContextError(ctx.Err()).Err()
	})
	if attempts != 1 || status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("past the caller's deadline: %d attempts, %v", attempts, err)
	}
}
