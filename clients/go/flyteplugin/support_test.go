package flyteplugin

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/accelsched/accelsched/clients/go/accelsched"
	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
	"github.com/accelsched/accelsched/clients/go/internal/testserver"
	"github.com/flyteorg/flyte/flyteidl/gen/pb-go/flyteidl/core"
	pluginsCore "github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/core"
	pluginsCoreMock "github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/core/mocks"
	pluginsIOMock "github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/io/mocks"
	"github.com/flyteorg/flyte/flytestdlib/contextutils"
	"github.com/flyteorg/flyte/flytestdlib/logger"
	"github.com/flyteorg/flyte/flytestdlib/promutils/labeled"
	"github.com/flyteorg/flyte/flytestdlib/storage"
	"github.com/stretchr/testify/mock"
	"google.golang.org/protobuf/types/known/durationpb"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// server is a real accelschedd (clients/go/internal/testserver).
type server struct{ *testserver.Server }

func startServer(t *testing.T) server { return server{testserver.Start(t)} }

func (s server) client() *accelsched.Client { return accelsched.NewClient(s.Conn()) }

func gpu(id, model string, index int32) *pb.Device {
	return &pb.Device{Id: id, Model: model, Index: index, Healthy: true}
}

func migGpu(id, model string, index int32, profile string, starts ...int32) *pb.Device {
	d := gpu(id, model, index)
	d.MigEnabled = true
	for i, start := range starts {
		d.MigSlices = append(d.MigSlices, &pb.MigSlice{Id: fmt.Sprintf("%s-mig-%d", id, i), Profile: profile, Start: start})
	}
	return d
}

// task is what a test says of a Flyte task: its type, GPU limit and
// accelerator, its attempt's generated name (the request id), and its
// resource requests (its limits are 2 CPUs and 8Gi of memory).
type task struct {
	taskType    string
	gpus        int64
	accelerator *core.GPUAccelerator
	name        string
	requests    []*core.Resources_ResourceEntry
	// The pod's annotations (the execution's); none when nil.
	annotations map[string]string
	// The workflow that owns the task's objects; "f7c2a9" when empty.
	workflow string
	// The task's timeout (its metadata's); none when 0.
	timeout time.Duration
}

func (tk task) template() *core.TaskTemplate {
	taskType := tk.taskType
	if taskType == "" {
		taskType = "python-task"
	}
	resources := &core.Resources{Requests: tk.requests, Limits: []*core.Resources_ResourceEntry{
		{Name: core.Resources_CPU, Value: "2"}, {Name: core.Resources_MEMORY, Value: "8Gi"}}}
	if tk.gpus > 0 {
		resources.Limits = append(resources.Limits,
			&core.Resources_ResourceEntry{Name: core.Resources_GPU, Value: fmt.Sprint(tk.gpus)})
	}
	t := &core.TaskTemplate{
		Type: taskType,
		Target: &core.TaskTemplate_Container{Container: &core.Container{
			Image: "ghcr.io/flyteorg/flytekit:py3.11", Command: []string{"pyflyte-execute"},
			Args: []string{"--inputs", "{{.Input}}"}, Resources: resources,
		}},
	}
	if tk.accelerator != nil {
		t.ExtendedResources = &core.ExtendedResources{GpuAccelerator: tk.accelerator}
	}
	if tk.timeout > 0 {
		t.Metadata = &core.TaskMetadata{Timeout: durationpb.New(tk.timeout)}
	}
	return t
}

// stateStore keeps the plugin state between rounds as propeller does: what
// a round wrote (gob) is the next round's, handed to it as one buffer that a
// read consumes (flytepropeller pkg/controller/nodes/task/
// plugin_state_manager.go:38-65); a round that writes nothing keeps it.
type stateStore struct {
	version uint8
	data    []byte
	round   *bytes.Buffer
}

// beginRound hands the next round its state.
func (s *stateStore) beginRound() {
	s.round = nil
	if s.data != nil {
		s.round = bytes.NewBuffer(append([]byte(nil), s.data...))
	}
}

type stateReader struct{ s *stateStore }

func (r stateReader) GetStateVersion() uint8 { return r.s.version }

func (r stateReader) Get(t interface{}) (uint8, error) {
	if r.s.round == nil {
		return r.s.version, nil
	}
	return r.s.version, gob.NewDecoder(r.s.round).Decode(t)
}

type stateWriter struct{ s *stateStore }

func (w stateWriter) Put(version uint8, v interface{}) error {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return err
	}
	w.s.version, w.s.data = version, b.Bytes()
	return nil
}

func (w stateWriter) Reset() error {
	w.s.data = nil
	return nil
}

// attempt is one attempt's task context with its state.
type attempt struct {
	pluginsCore.TaskExecutionContext
	store *stateStore
}

// taskContext is the TaskExecutionContext propeller hands a plugin for one
// attempt of tk, with flyteplugins' mocks for what the pod plugin reads (as
// its own tests set them, go/tasks/plugins/k8s/pod/container_test.go) and
// its state kept as propeller keeps it.
func taskContext(tk task) attempt {
	store := &stateStore{}
	metadata := &pluginsCoreMock.TaskExecutionMetadata{}
	metadata.On("GetNamespace").Return("flytesnacks-development")
	annotations := tk.annotations
	if annotations == nil {
		annotations = map[string]string{}
	}
	workflow := tk.workflow
	if workflow == "" {
		workflow = "f7c2a9"
	}
	metadata.On("GetAnnotations").Return(annotations)
	metadata.On("GetLabels").Return(map[string]string{"execution-id": "f7c2a9"})
	controller := true
	metadata.On("GetOwnerReference").Return(metav1.OwnerReference{Kind: "FlyteWorkflow", Name: workflow,
		UID: types.UID("uid-" + workflow), Controller: &controller})
	metadata.On("GetK8sServiceAccount").Return("default")
	metadata.On("GetSecurityContext").Return(core.SecurityContext{RunAs: &core.Identity{}})
	metadata.On("GetOwnerID").Return(types.NamespacedName{Namespace: "flytesnacks-development", Name: "f7c2a9"})
	metadata.On("GetPlatformResources").Return(&v1.ResourceRequirements{})
	metadata.On("IsInterruptible").Return(false)
	metadata.On("GetEnvironmentVariables").Return(nil)
	metadata.On("GetConsoleURL").Return("")
	metadata.On("GetMaxAttempts").Return(uint32(1))
	id := &pluginsCoreMock.TaskExecutionID{}
	id.On("GetID").Return(core.TaskExecutionIdentifier{NodeExecutionId: &core.NodeExecutionIdentifier{
		NodeId: "n0",
		ExecutionId: &core.WorkflowExecutionIdentifier{
			Project: "flytesnacks", Domain: "development", Name: "f7c2a9"},
	}})
	id.On("GetGeneratedName").Return(tk.name)
	id.On("GetUniqueNodeID").Return("n0")
	metadata.On("GetTaskExecutionID").Return(id)
	overrides := &pluginsCoreMock.TaskOverrides{}
	// No override: the container keeps the template's resources (propeller
	// hands plugins a non-nil one always).
	overrides.On("GetResources").Return(&v1.ResourceRequirements{})
	overrides.On("GetExtendedResources").Return(nil)
	overrides.On("GetPodTemplate").Return(nil)
	overrides.On("GetContainerImage").Return("")
	metadata.On("GetOverrides").Return(overrides)

	tCtx := &pluginsCoreMock.TaskExecutionContext{}
	inputs := &pluginsIOMock.InputReader{}
	inputs.On("GetInputPrefixPath").Return(storage.DataReference("s3://bucket/inputs"))
	inputs.On("GetInputPath").Return(storage.DataReference("s3://bucket/inputs/inputs.pb"))
	inputs.On("Get", mock.Anything).Return(&core.LiteralMap{}, nil)
	tCtx.On("InputReader").Return(inputs)
	outputs := &pluginsIOMock.OutputWriter{}
	outputs.On("GetOutputPath").Return(storage.DataReference("s3://bucket/outputs/outputs.pb"))
	outputs.On("GetOutputPrefixPath").Return(storage.DataReference("s3://bucket/outputs"))
	outputs.On("GetRawOutputPrefix").Return(storage.DataReference("s3://bucket/raw"))
	outputs.On("GetCheckpointPrefix").Return(storage.DataReference("s3://bucket/checkpoint"))
	outputs.On("GetPreviousCheckpointsPrefix").Return(storage.DataReference(""))
	outputs.On("GetErrorPath").Return(storage.DataReference("s3://bucket/outputs/error.pb"))
	outputs.On("Put", mock.Anything, mock.Anything).Return(nil) // a task's outputs, on success
	tCtx.On("OutputWriter").Return(outputs)
	reader := &pluginsCoreMock.TaskReader{}
	reader.On("Read", mock.Anything).Return(tk.template(), nil)
	tCtx.On("TaskReader").Return(reader)
	tCtx.On("TaskExecutionMetadata").Return(metadata)
	tCtx.On("PluginStateReader").Return(stateReader{store})
	tCtx.On("PluginStateWriter").Return(stateWriter{store})
	tCtx.On("DataStore").Return(nil)
	return attempt{tCtx, store}
}

func quantity(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.DecimalSI) }

// TestMain quiets flyteplugins' info logs (a line per pod built) and sets
// the metric keys propeller sets at start-up (as its own tests do).
func TestMain(m *testing.M) {
	if err := logger.SetConfig(&logger.Config{Level: logger.WarnLevel}); err != nil {
		panic(err)
	}
	labeled.SetMetricKeys(contextutils.ProjectKey)
	os.Exit(m.Run())
}
