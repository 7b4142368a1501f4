package flyteplugin

import (
	"time"

	pluginsConfig "github.com/flyteorg/flyte/flyteplugins/go/tasks/config"
	stdconfig "github.com/flyteorg/flyte/flytestdlib/config"
)

// Config is the plugin's section of propeller's configuration,
// `plugins.accelsched`:
//
//	plugins:
//	  accelsched:
//	    address: accelsched.accelsched.svc:50051
//	    tls: {ca-cert: /etc/accelsched/ca.crt}
//	    lease: 24h
//	    resource-claims: false
//	    task-types: [python-task, container]
type Config struct {
	// accelsched's gRPC address (host:port), best the Service in front of
	// its replicas.
	Address string `json:"address"`
	// Without tls.ca-cert the connection is plaintext.
	TLS TLSConfig `json:"tls"`
	// How long an allocation is held unless renewed: the backstop that frees
	// the devices of a task whose release never came (propeller down for
	// good). The plugin renews it while the pod runs, when less than half is
	// left. Must be positive.
	Lease stdconfig.Duration `json:"lease"`
	// Each call's deadline per attempt; a call is tried three times in a
	// round on UNAVAILABLE and DEADLINE_EXCEEDED, then again next round.
	CallTimeout stdconfig.Duration `json:"call-timeout"`
	// On a cluster whose GPUs NVIDIA's DRA driver publishes: create the
	// allocation's ResourceClaim (Placement.resource_claim, the very devices
	// accelsched chose) and have the pod take its GPUs through it instead of
	// the device plugin's nvidia.com/gpu. Classes without a claim are placed
	// as without this.
	ResourceClaims bool `json:"resource-claims"`
	// The task types whose pods get their accelerators from accelsched; a
	// task of another type this plugin was registered for (Register) runs as
	// the pod plugin runs it, without accelsched.
	TaskTypes []string `json:"task-types"`
}

// TLSConfig names PEM files; a client certificate is for servers that ask
// for one (mTLS).
type TLSConfig struct {
	CACert     string `json:"ca-cert"`
	ClientCert string `json:"client-cert"`
	ClientKey  string `json:"client-key"`
	// The name the server's certificate must carry, when it is not the
	// address's host.
	ServerName string `json:"server-name"`
}

// DefaultTaskTypes are the task types propeller's pod plugin runs as one
// container or one pod (flyteplugins go/tasks/plugins/k8s/pod/plugin.go:
// ContainerTaskType, pythonTaskType, rawContainerTaskType, SidecarTaskType).
var DefaultTaskTypes = []string{"container", "python-task", "raw-container", "sidecar"}

var (
	defaultConfig = &Config{
		Address:     "accelsched.accelsched.svc:50051",
		Lease:       stdconfig.Duration{Duration: 24 * time.Hour},
		CallTimeout: stdconfig.Duration{Duration: 10 * time.Second},
		TaskTypes:   DefaultTaskTypes,
	}
	configSection = pluginsConfig.MustRegisterSubSection(ID, defaultConfig)
)

// GetConfig is the configuration propeller loaded.
func GetConfig() *Config {
	return configSection.GetConfig().(*Config)
}
