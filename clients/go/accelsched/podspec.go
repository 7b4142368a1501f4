package accelsched

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The parts of a Kubernetes PodSpec that Placement.pod_spec_patch carries,
// with Kubernetes' JSON names (k8s.io/api core/v1).
type nodeSelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

type toleration struct {
	Key      string `json:"key,omitempty"`
	Operator string `json:"operator,omitempty"`
	Value    string `json:"value,omitempty"`
	Effect   string `json:"effect,omitempty"`
}

type envVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type podSpecPatch struct {
	Affinity struct {
		NodeAffinity struct {
			Required struct {
				Terms []struct {
					MatchExpressions []nodeSelectorRequirement `json:"matchExpressions"`
				} `json:"nodeSelectorTerms"`
			} `json:"requiredDuringSchedulingIgnoredDuringExecution"`
		} `json:"nodeAffinity"`
	} `json:"affinity"`
	Tolerations []toleration `json:"tolerations"`
	Containers  []struct {
		Name      string `json:"name"`
		Resources struct {
			Limits   map[string]string `json:"limits"`
			Requests map[string]string `json:"requests"`
		} `json:"resources"`
		Env []envVar `json:"env"`
	} `json:"containers"`
}

// ApplyPodSpecPatch applies a Placement.pod_spec_patch to a PodSpec given as
// JSON and returns the patched PodSpec as JSON; fields the patch does not
// touch are kept as they are. It merges as propeller merges its own
// accelerator rules (flyteorg/flyte main 6fadb90d, flytek8s/pod_helper.go:97-117
// and 766-779; v1.16.8 appends without the duplicate check), which on a
// PodSpec without required node affinity or tolerations gives exactly the
// strategic merge:
//   - each node-selector requirement is appended to every required term that
//     does not already hold it, or forms one new term when there is none;
//   - each toleration is appended unless the same one is there;
//   - the resource's requests and limits are set, and the environment
//     variables set (replacing one of the same name), on the container the
//     patch names, or the first container when it names none.
//
// An error names what is wrong: JSON that does not parse, a patch with a
// field this client does not know (a newer server's: update the client
// rather than apply part of a placement), a PodSpec without containers, a
// container the PodSpec does not have.
func ApplyPodSpecPatch(podSpec []byte, patch string) ([]byte, error) {
	var p podSpecPatch
	strict := json.NewDecoder(strings.NewReader(patch))
	strict.DisallowUnknownFields()
	if err := strict.Decode(&p); err != nil {
		return nil, fmt.Errorf("accelsched: pod_spec_patch: %w", err)
	}
	var spec map[string]interface{}
	// Numbers stay as written (json.Number), not rounded through float64.
	exact := json.NewDecoder(bytes.NewReader(podSpec))
	exact.UseNumber()
	if err := exact.Decode(&spec); err != nil {
		return nil, fmt.Errorf("accelsched: PodSpec: %w", err)
	}
	if spec == nil {
		spec = map[string]interface{}{}
	}
	var requirements []nodeSelectorRequirement
	for _, t := range p.Affinity.NodeAffinity.Required.Terms {
		requirements = append(requirements, t.MatchExpressions...)
	}
	if len(requirements) > 0 {
		if err := addRequirements(spec, requirements); err != nil {
			return nil, err
		}
	}
	if err := addTolerations(spec, p.Tolerations); err != nil {
		return nil, err
	}
	for _, c := range p.Containers {
		container, err := findContainer(spec, c.Name)
		if err != nil {
			return nil, err
		}
		resources := object(container, "resources")
		for name, list := range map[string]map[string]string{"limits": c.Resources.Limits, "requests": c.Resources.Requests} {
			if len(list) == 0 {
				continue
			}
			quantities := object(resources, name)
			for resource, quantity := range list {
				quantities[resource] = quantity
			}
		}
		if err := setEnv(container, c.Env); err != nil {
			return nil, err
		}
	}
	return json.Marshal(spec)
}

// object returns m[key] as an object, creating it when absent.
func object(m map[string]interface{}, key string) map[string]interface{} {
	if o, ok := m[key].(map[string]interface{}); ok {
		return o
	}
	o := map[string]interface{}{}
	m[key] = o
	return o
}

// list decodes m[key] (absent: empty) into out, a pointer to a slice.
func list(m map[string]interface{}, key string, out interface{}) error {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(out); err != nil {
		return fmt.Errorf("accelsched: PodSpec field %q: %w", key, err)
	}
	return nil
}

func addRequirements(spec map[string]interface{}, requirements []nodeSelectorRequirement) error {
	required := object(object(object(spec, "affinity"), "nodeAffinity"), "requiredDuringSchedulingIgnoredDuringExecution")
	var terms []map[string]interface{}
	if err := list(required, "nodeSelectorTerms", &terms); err != nil {
		return err
	}
	if len(terms) == 0 {
		terms = []map[string]interface{}{{}}
	}
	for _, term := range terms {
		var expressions []nodeSelectorRequirement
		if err := list(term, "matchExpressions", &expressions); err != nil {
			return err
		}
		for _, r := range requirements {
			if !containsRequirement(expressions, r) {
				expressions = append(expressions, r)
			}
		}
		term["matchExpressions"] = expressions
	}
	required["nodeSelectorTerms"] = terms
	return nil
}

// As propeller's containsNodeSelectorRequirement (flyteorg/flyte main 6fadb90d,
// pod_helper.go:122-139):
// same key, operator and values in the same order.
func containsRequirement(list []nodeSelectorRequirement, r nodeSelectorRequirement) bool {
	for _, e := range list {
		if e.Key == r.Key && e.Operator == r.Operator && equalStrings(e.Values, r.Values) {
			return true
		}
	}
	return false
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func addTolerations(spec map[string]interface{}, add []toleration) error {
	if len(add) == 0 {
		return nil
	}
	var existing []interface{}
	if err := list(spec, "tolerations", &existing); err != nil {
		return err
	}
	// The same list read as tolerations, where an omitted field is "".
	var known []toleration
	if err := list(spec, "tolerations", &known); err != nil {
		return err
	}
	for _, t := range add {
		present := false
		for _, e := range known {
			// Toleration.MatchToleration: key, operator, value and effect.
			if e == t {
				present = true
				break
			}
		}
		if !present {
			existing = append(existing, toMap(t))
			known = append(known, t)
		}
	}
	spec["tolerations"] = existing
	return nil
}

func toMap(t toleration) map[string]interface{} {
	m := map[string]interface{}{}
	for k, v := range map[string]string{"key": t.Key, "operator": t.Operator, "value": t.Value, "effect": t.Effect} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

func findContainer(spec map[string]interface{}, name string) (map[string]interface{}, error) {
	containers, _ := spec["containers"].([]interface{})
	for i, c := range containers {
		container, ok := c.(map[string]interface{})
		if !ok {
			return nil, fmt.Errorf("accelsched: PodSpec containers[%d] is not an object", i)
		}
		if name == "" || container["name"] == name {
			return container, nil
		}
	}
	if name == "" {
		return nil, fmt.Errorf("accelsched: the PodSpec has no container to give the devices to")
	}
	return nil, fmt.Errorf("accelsched: the PodSpec has no container named %q", name)
}

func setEnv(container map[string]interface{}, add []envVar) error {
	if len(add) == 0 {
		return nil
	}
	var env []map[string]interface{}
	if err := list(container, "env", &env); err != nil {
		return err
	}
	for _, v := range add {
		replaced := false
		for _, e := range env {
			if e["name"] == v.Name {
				delete(e, "valueFrom")
				e["value"] = v.Value
				replaced = true
			}
		}
		if !replaced {
			env = append(env, map[string]interface{}{"name": v.Name, "value": v.Value})
		}
	}
	container["env"] = env
	return nil
}
