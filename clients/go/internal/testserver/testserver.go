// Package testserver runs a real accelschedd for the tests of the Go modules
// under clients/go: the binary ACCELSCHEDD names (scripts/go_test.sh sets it
// to build/accelschedd), on a SQLite file in the test's directory.
package testserver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Server is one accelschedd; Kill and Start restart it on the same port and
// database.
type Server struct {
	t           testing.TB
	db          string
	port        int
	metricsPort int
	cmd         *exec.Cmd
}

// Start runs a server that is killed when the test ends.
func Start(t testing.TB) *Server {
	s := &Server{t: t, db: filepath.Join(t.TempDir(), "accelsched.db"), port: freePort(t), metricsPort: freePort(t)}
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// freePort is a loopback port nobody listens on now, so that a restarted
// server can take the same one.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var ready = regexp.MustCompile(`accelschedd ready: grpc_port=(\d+)`)

// Start runs accelschedd (again) and returns once it says it is ready.
func (s *Server) Start() {
	binary := os.Getenv("ACCELSCHEDD")
	if binary == "" {
		s.t.Fatal("ACCELSCHEDD is not set: run scripts/go_test.sh")
	}
	s.cmd = exec.Command(binary, "--db="+s.db,
		fmt.Sprintf("--listen=127.0.0.1:%d", s.port), fmt.Sprintf("--metrics_listen=127.0.0.1:%d", s.metricsPort))
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
			go func() { // drain, so that the server never blocks on a full pipe
				for lines.Scan() {
				}
			}()
			return
		}
	}
	s.t.Fatalf("accelschedd exited before it was ready: %v", s.cmd.Wait())
}

// Kill is kill -9: nothing is flushed or closed on the way out.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

// Freeze stops the server (SIGSTOP: its connections stay open, nothing is
// read) and returns once the kernel says it is stopped; Thaw resumes it.
func (s *Server) Freeze() {
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatal(err)
	}
	s.waitFor("stopped", func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
		// The state follows the parenthesised command name: "pid (comm) T ...".
		i := bytes.LastIndexByte(stat, ')')
		return err == nil && i >= 0 && i+2 < len(stat) && stat[i+2] == 'T'
	})
}

func (s *Server) Thaw() {
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		s.t.Fatal(err)
	}
}

// WaitWatchers returns once n WatchEvents streams are connected (the
// accelsched_watchers gauge of /metrics).
func (s *Server) WaitWatchers(n int) {
	want := fmt.Sprintf("\naccelsched_watchers %d\n", n)
	s.waitFor(fmt.Sprintf("%d watchers", n), func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", s.metricsPort))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return err == nil && strings.Contains("\n"+string(body), want)
	})
}

// waitFor polls done until it holds, failing the test after 10 s.
func (s *Server) waitFor(what string, done func() bool) {
	deadline := time.Now().Add(10 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			s.t.Fatalf("accelschedd: not %s after 10 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *Server) Address() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

// Conn is a new plaintext connection, closed when the test ends.
func (s *Server) Conn() *grpc.ClientConn {
	conn, err := grpc.NewClient(s.Address(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { conn.Close() })
	return conn
}

// Register registers (upserts) nodes, failing the test on an error.
func (s *Server) Register(nodes ...*pb.Node) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stub := pb.NewAcceleratorSchedulerClient(s.Conn())
	for _, node := range nodes {
		if _, err := stub.RegisterNode(ctx, &pb.RegisterNodeRequest{Node: node}); err != nil {
			s.t.Fatalf("RegisterNode %s: %v", node.GetName(), err)
		}
	}
}
