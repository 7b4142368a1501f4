// Package register adds the accelsched plugin to propeller's registry for
// flyteplugin.DefaultTaskTypes; import it for its side effect:
//
//	import _ "github.com/accelsched/accelsched/clients/go/flyteplugin/register"
package register

import "github.com/accelsched/accelsched/clients/go/flyteplugin"

func init() { flyteplugin.Register() }
