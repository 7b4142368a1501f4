package accelsched_test

import (
	"context"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/accelsched/accelsched/clients/go/accelsched"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// What a propeller plugin does around a task's pod. docs/integrations/go.md shows this
// function as it is here (TestDocsShowTheExample checks it).
//
// docs:begin
func Example() {
	conn, err := grpc.NewClient("accelsched.accelsched.svc:50051",
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := accelsched.NewClient(conn)
	ctx := context.Background()

	// From the task template: its GPUAccelerator, serialized (proto.Marshal of
	// ExtendedResources.GetGpuAccelerator()), and its `gpu` count.
	var gpuAccelerator []byte
	acc, err := accelsched.AcceleratorFromFlyte(gpuAccelerator)
	if err != nil {
		log.Fatal(err)
	}
	req, err := accelsched.NewAllocateRequest(accelsched.Task{
		ExecutionID: "f7c2a9-n0-0", // the task execution id: a retry is the same request
		Project:     "flytesnacks",
		Domain:      "development",
		Accelerator: acc,
		Count:       1,
		Container:   "f7c2a9-n0-0",
		Lease:       time.Hour,
		Queue:       true, // wait in accelsched's queue when nothing fits now
		// The pod's CPU and memory request (a Kubernetes quantity's
		// MilliValue and Value): only a node with that much free is chosen.
		PodResources: accelsched.PodResources{CPUMilli: 2000, MemoryBytes: 8 << 30},
	})
	if err != nil {
		log.Fatal(err)
	}
	alloc, err := client.Allocate(ctx, req)
	if err != nil {
		log.Fatal(err) // the server's status: INVALID_ARGUMENT naming the field, ...
	}
	// A plugin reports a PENDING allocation as waiting (its queue_position
	// and pending_reason) and reads it again next round; a program that can
	// block waits for its admission.
	alloc, err = client.WaitAdmitted(ctx, alloc, 5*time.Second)
	if err != nil {
		log.Fatal(err)
	}

	// The pod the plugin built, as JSON; the patch adds the node affinity,
	// tolerations and resources propeller would, pinned to the chosen node.
	podSpec := []byte(`{"containers":[{"name":"f7c2a9-n0-0","image":"ghcr.io/flyteorg/flytekit:py3.11"}]}`)
	podSpec, err = accelsched.ApplyPodSpecPatch(podSpec, alloc.GetPlacement().GetPodSpecPatch())
	if err != nil {
		log.Fatal(err)
	}
	_ = podSpec // create the pod from it

	// While the pod runs, renew before the lease ends; when it ends, release.
	if _, err := client.Renew(ctx, alloc.GetId(), time.Hour); err != nil {
		log.Print(err)
	}
	if _, err := client.Release(ctx, alloc.GetId()); err != nil {
		log.Print(err)
	}
}

// docs:end

func TestDocsShowTheExample(t *testing.T) {
	root := os.Getenv("ACCELSCHED_SOURCE_DIR")
	if root == "" {
		t.Fatal("ACCELSCHED_SOURCE_DIR is not set: run scripts/go_test.sh")
	}
	source, err := os.ReadFile(root + "/clients/go/accelsched/example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(source)
	begin, end := strings.Index(text, "// docs:begin\n"), strings.Index(text, "\n// docs:end")
	if begin < 0 || end < begin {
		t.Fatal("example_test.go lost its docs:begin / docs:end markers")
	}
	begin += len("// docs:begin\n")
	page, err := os.ReadFile(root + "/docs/integrations/go.md")
	if err != nil {
		t.Fatal(err)
	}
	if example := text[begin:end]; !strings.Contains(string(page), example) {
		t.Errorf("docs/integrations/go.md does not show Example() as example_test.go has it:\n%s", example)
	}
}
