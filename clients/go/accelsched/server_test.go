package accelsched

import (
	"testing"

	"github.com/accelsched/accelsched/clients/go/internal/testserver"
)

// server is a real accelschedd (internal/testserver).
type server struct{ *testserver.Server }

func startServer(t *testing.T) server { return server{testserver.Start(t)} }

func (s server) client() *Client { return NewClient(s.Conn()) }
