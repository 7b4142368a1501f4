package flyteplugin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"github.com/accelsched/accelsched/clients/go/accelsched"
	"github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery"
	pluginsCore "github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/core"
	"github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/flytek8s/config"
	"github.com/flyteorg/flyte/flyteplugins/go/tasks/pluginmachinery/k8s"
	"github.com/flyteorg/flyte/flyteplugins/go/tasks/plugins/k8s/pod"
	propellerk8s "github.com/flyteorg/flyte/flytepropeller/pkg/controller/nodes/task/k8s"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Register adds the plugin to propeller's registry for the given task types
// (DefaultTaskTypes when none). Call it once, from an init function of the
// propeller build; the blank import of .../flyteplugin/register does it for
// DefaultTaskTypes.
func Register(taskTypes ...string) {
	if len(taskTypes) == 0 {
		taskTypes = DefaultTaskTypes
	}
	pluginmachinery.PluginRegistry().RegisterCorePlugin(pluginsCore.PluginEntry{
		ID:                  ID,
		RegisteredTaskTypes: taskTypes,
		LoadPlugin: func(ctx context.Context, iCtx pluginsCore.SetupContext) (pluginsCore.Plugin, error) {
			return Load(ctx, iCtx, GetConfig(), taskTypes)
		},
	})
}

// Load makes the plugin as propeller loads it: a connection to cfg.Address
// and propeller's k8s plugin manager around PlacingPodPlugin, as propeller
// makes one for the pod plugin (plugin_config.go: NewPluginManagerWithBackOff,
// without the resource-quota back-off, which is propeller's own).
func Load(ctx context.Context, iCtx pluginsCore.SetupContext, cfg *Config, taskTypes []string) (*Plugin, error) {
	if cfg.Lease.Duration <= 0 {
		return nil, fmt.Errorf("accelsched: plugins.accelsched.lease must be positive (the plugin renews it), not %v", cfg.Lease.Duration)
	}
	conn, err := Dial(cfg)
	if err != nil {
		return nil, err
	}
	var clientset kubernetes.Interface
	if config.GetK8sPluginConfig().SendObjectEvents {
		// The manager's event watcher needs a clientset; propeller does not
		// hand its own to plugins.
		restConfig, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("accelsched: send-object-events needs the cluster's config: %w", err)
		}
		if clientset, err = kubernetes.NewForConfig(restConfig); err != nil {
			return nil, err
		}
	}
	pods, err := propellerk8s.NewPluginManager(ctx, iCtx, k8s.PluginEntry{
		ID:                  ID,
		RegisteredTaskTypes: taskTypes,
		ResourceToWatch:     &v1.Pod{},
		Plugin:              PlacingPodPlugin{Plugin: pod.DefaultPodPlugin, Claims: cfg.ResourceClaims},
	}, propellerk8s.NewResourceMonitorIndex(), clientset)
	if err != nil {
		return nil, err
	}
	types := cfg.TaskTypes
	if len(types) == 0 {
		types = taskTypes
	}
	return NewPlugin(accelsched.NewClient(conn).WithBackoff(Backoff(cfg)), pods, Options{
		Lease: cfg.Lease.Duration, TaskTypes: types, ResourceClaims: cfg.ResourceClaims,
		Kube: iCtx.KubeClient().GetClient()}), nil
}

// Backoff is how the plugin retries: three attempts of at most
// cfg.CallTimeout each, since a propeller round must not wait long; the next
// round tries again.
func Backoff(cfg *Config) accelsched.Backoff {
	return accelsched.Backoff{Initial: 100 * time.Millisecond, Max: time.Second, Attempts: 3,
		PerAttempt: cfg.CallTimeout.Duration}
}

// Dial connects to cfg.Address, with TLS when cfg.TLS names a CA.
func Dial(cfg *Config) (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if cfg.TLS.CACert != "" {
		pem, err := os.ReadFile(cfg.TLS.CACert)
		if err != nil {
			return nil, fmt.Errorf("accelsched: tls.ca-cert: %w", err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("accelsched: tls.ca-cert %s holds no PEM certificate", cfg.TLS.CACert)
		}
		tlsConfig := &tls.Config{RootCAs: roots, ServerName: cfg.TLS.ServerName, MinVersion: tls.VersionTLS12}
		if cfg.TLS.ClientCert != "" || cfg.TLS.ClientKey != "" {
			pair, err := tls.LoadX509KeyPair(cfg.TLS.ClientCert, cfg.TLS.ClientKey)
			if err != nil {
				return nil, fmt.Errorf("accelsched: tls.client-cert and tls.client-key: %w", err)
			}
			tlsConfig.Certificates = []tls.Certificate{pair}
		}
		creds = credentials.NewTLS(tlsConfig)
	}
	// Reconnect within a round's retries after accelsched restarts or fails
	// over (gRPC's default waits from 1 s up to 2 min between attempts).
	reconnect := grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond,
		Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second}, MinConnectTimeout: 5 * time.Second}
	return grpc.NewClient(cfg.Address, grpc.WithTransportCredentials(creds), grpc.WithConnectParams(reconnect))
}
