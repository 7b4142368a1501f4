package accelsched

import (
	"context"
	"sync"
	"testing"
	"time"

	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

func a100Node() *pb.Node {
	return &pb.Node{Name: "n1", Devices: []*pb.Device{gpu("GPU-1", "NVIDIA A100-SXM4-40GB", 0)}}
}

func allocateA100(t *testing.T, c *Client, id string) (*pb.Allocation, error) {
	req, err := NewAllocateRequest(Task{ExecutionID: id, Accelerator: &pb.Accelerator{Device: "A100"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return c.Allocate(ctx, req)
}

// An Allocate that finds the server down is retried with the same request
// id until the server is back, and the devices are allocated once.
func TestAllocateRidesOutAServerRestart(t *testing.T) {
	s := startServer(t)
	s.Register(a100Node())

	// A fast reconnect, so that the test waits on accelsched, not on gRPC's
	// default reconnect backoff (1 s doubling).
	var once sync.Once
	failed := make(chan struct{})
	conn, err := grpc.NewClient(s.Address(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{
			BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, MaxDelay: 500 * time.Millisecond}}),
		grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply interface{},
			cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			err := invoker(ctx, method, req, reply, cc, opts...)
			if status.Code(err) == codes.Unavailable {
				once.Do(func() { close(failed) })
			}
			return err
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := NewClient(conn).WithBackoff(Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, Attempts: 1000})

	s.Kill()
	type result struct {
		a   *pb.Allocation
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := allocateA100(t, c, "exec-1")
		done <- result{a, err}
	}()
	<-failed // the first attempt met the stopped server
	s.Start()
	r := <-done
	if r.err != nil {
		t.Fatalf("Allocate after the restart: %v", r.err)
	}
	if r.a.GetState() != pb.AllocationState_ACTIVE || len(r.a.GetDevices()) != 1 {
		t.Fatalf("allocation %v", r.a)
	}
	// The same request id gives the same allocation, not a second one.
	again, err := allocateA100(t, c, "exec-1")
	if err != nil || again.GetId() != r.a.GetId() {
		t.Errorf("retry: %v, %v; want %s", again.GetId(), err, r.a.GetId())
	}
}

func TestPollRenewRelease(t *testing.T) {
	s := startServer(t)
	c := s.client()
	s.Register(a100Node())
	a, err := allocateA100(t, c, "exec-1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	polled, err := c.Poll(ctx, a.GetId(), 10*time.Millisecond)
	if err != nil || polled.GetState() != pb.AllocationState_ACTIVE {
		t.Fatalf("Poll: %v, %v", polled, err)
	}
	renewed, err := c.Renew(ctx, a.GetId(), 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got := renewed.GetExpiresAt().AsTime().Sub(a.GetCreatedAt().AsTime()); got < 2*time.Hour-time.Minute {
		t.Errorf("renewed for %v", got)
	}
	// Nothing else fits while it is held; that is not retried.
	start := time.Now()
	if _, err := allocateA100(t, c, "exec-2"); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("second Allocate: %v, want RESOURCE_EXHAUSTED", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("RESOURCE_EXHAUSTED took %v: retried?", waited)
	}
	for i := 0; i < 2; i++ { // idempotent
		released, err := c.Release(ctx, a.GetId())
		if err != nil || released.GetState() != pb.AllocationState_RELEASED {
			t.Fatalf("Release #%d: %v, %v", i+1, released, err)
		}
	}
	if _, err := c.Renew(ctx, a.GetId(), time.Hour); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("Renew after Release: %v, want FAILED_PRECONDITION", err)
	}
	if _, err := c.Get(ctx, "a-missing"); status.Code(err) != codes.NotFound {
		t.Errorf("Get of a missing id: %v", err)
	}
	if _, err := c.Renew(ctx, a.GetId(), -time.Second); err == nil {
		t.Error("a negative lease was sent")
	}
}

func TestBackoffFillsItsGapsAndStopsAtAttempts(t *testing.T) {
	if got := (Backoff{}).normalized(); got != (Backoff{Initial: DefaultBackoff.Initial, Max: DefaultBackoff.Initial, Attempts: 1}) {
		t.Errorf("zero Backoff normalized to %+v", got)
	}
	if got := (Backoff{Initial: -time.Second, Max: time.Second, Attempts: 3}).normalized(); got.Initial != DefaultBackoff.Initial {
		t.Errorf("negative Initial normalized to %+v", got)
	}
	for _, w := range []time.Duration{1, 2, 7, time.Second, 1 << 62} {
		for i := 0; i < 100; i++ {
			if j := jittered(w); j < w/2 || j > w {
				t.Fatalf("jittered(%v) = %v, outside [w/2, w]", w, j)
			}
		}
	}
	calls := 0
	unavailable := func(context.Context) error { calls++; return status.Error(codes.Unavailable, "down") }
	huge := Backoff{Initial: time.Second, Max: 1<<63 - 1}
	if got := huge.next(1 << 62); got != huge.Max {
		t.Errorf("next(2^62) = %v, want Max (no overflow)", got)
	}
	if got := huge.next(time.Second); got != 2*time.Second {
		t.Errorf("next(1s) = %v", got)
	}
	b := Backoff{Initial: time.Microsecond, Max: 8 * time.Microsecond, Attempts: 40}
	if err := b.retry(context.Background(), unavailable); status.Code(err) != codes.Unavailable || calls != 40 {
		t.Errorf("%d calls, %v; want 40 and UNAVAILABLE", calls, err)
	}
	calls = 0
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (Backoff{Initial: time.Hour, Attempts: 5}).retry(ctx, unavailable); status.Code(err) != codes.Unavailable || calls != 1 {
		t.Errorf("cancelled: %d calls, %v; want 1", calls, err)
	}
	calls = 0
	exhausted := func(context.Context) error { calls++; return status.Error(codes.ResourceExhausted, "full") }
	if err := b.retry(context.Background(), exhausted); status.Code(err) != codes.ResourceExhausted || calls != 1 {
		t.Errorf("RESOURCE_EXHAUSTED: %d calls, %v; want no retry", calls, err)
	}
}
