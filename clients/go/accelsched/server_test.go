package accelsched

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// server is a real accelschedd (ACCELSCHEDD, set by scripts/go_test.sh) on a
// SQLite file in a test directory.
type server struct {
	t    *testing.T
	db   string
	port int
	cmd  *exec.Cmd
}

// freePort is a loopback port nobody listens on now, so that a restarted
// server can take the same one.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startServer(t *testing.T) *server {
	s := &server{t: t, db: filepath.Join(t.TempDir(), "accelsched.db"), port: freePort(t)}
	s.start()
	t.Cleanup(s.kill)
	return s
}

var ready = regexp.MustCompile(`accelschedd ready: grpc_port=(\d+)`)

// start runs accelschedd and returns once it says it is ready.
func (s *server) start() {
	binary := os.Getenv("ACCELSCHEDD")
	if binary == "" {
		s.t.Fatal("ACCELSCHEDD is not set: run scripts/go_test.sh")
	}
	s.cmd = exec.Command(binary, "--db="+s.db,
		fmt.Sprintf("--listen=127.0.0.1:%d", s.port), "--metrics_listen=127.0.0.1:0")
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if ready.MatchString(lines.Text()) {
			// Keep draining, so that the server never blocks on a full pipe.
			go func() {
				for lines.Scan() {
				}
			}()
			return
		}
	}
	s.t.Fatalf("accelschedd exited before it was ready: %v", s.cmd.Wait())
}

// kill is kill -9: nothing is flushed or closed on the way out.
func (s *server) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

func (s *server) address() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

func (s *server) client() *Client {
	conn, err := grpc.NewClient(s.address(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { conn.Close() })
	return NewClient(conn)
}

func (s *server) register(c *Client, node *pb.Node) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Stub().RegisterNode(ctx, &pb.RegisterNodeRequest{Node: node}); err != nil {
		s.t.Fatalf("RegisterNode %s: %v", node.GetName(), err)
	}
}
