// A flytepropeller with the accelsched plugin, as docs/integrations/flyte.md shows it: the
// test command compiles it (go vet ./...), so the plugin keeps building into
// propeller's own main. A production build also imports
// github.com/flyteorg/flyte/flytepropeller/plugins, propeller's full set.
package main

import (
	_ "github.com/accelsched/accelsched/clients/go/flyteplugin/register"
	_ "github.com/flyteorg/flyte/flyteplugins/go/tasks/plugins/k8s/pod"
	"github.com/flyteorg/flyte/flytepropeller/cmd/controller/cmd"
)

func main() { cmd.Execute() }
