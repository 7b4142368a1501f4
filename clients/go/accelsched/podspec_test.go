package accelsched

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const patch = `{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[` +
	`{"key":"k8s.amazonaws.com/accelerator","operator":"In","values":["nvidia-tesla-a100"]},` +
	`{"key":"kubernetes.io/hostname","operator":"In","values":["host-1"]}]}]}}},` +
	`"tolerations":[{"key":"k8s.amazonaws.com/accelerator","operator":"Equal","value":"nvidia-tesla-a100","effect":"NoSchedule"}],` +
	`"containers":[{"name":"main","resources":{"limits":{"nvidia.com/gpu":"1"},"requests":{"nvidia.com/gpu":"1"}},` +
	`"env":[{"name":"NVIDIA_VISIBLE_DEVICES","value":"GPU-a"}]}]}`

func decode(t *testing.T, b []byte) map[string]interface{} {
	t.Helper()
	var m map[string]interface{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

// A PodSpec with its own affinity, tolerations, resources and environment
// keeps them: the patch is added as propeller adds its rules.
func TestPatchKeepsWhatThePodAlreadyHas(t *testing.T) {
	pod := `{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[` +
		`{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]},` +
		`{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["host-1"]}],"matchFields":[{"key":"metadata.name","operator":"In","values":["n"]}]}]}}},` +
		`"tolerations":[{"key":"k8s.amazonaws.com/accelerator","operator":"Equal","value":"nvidia-tesla-a100","effect":"NoSchedule"},{"key":"spot","operator":"Exists"}],` +
		`"containers":[{"name":"sidecar","image":"s"},{"name":"main","image":"m","resources":{"limits":{"cpu":"2"}},` +
		`"env":[{"name":"NVIDIA_VISIBLE_DEVICES","valueFrom":{"fieldRef":{"fieldPath":"x"}}},{"name":"A","value":"b"}]}],` +
		`"restartPolicy":"Never"}`
	out, err := ApplyPodSpecPatch([]byte(pod), patch)
	if err != nil {
		t.Fatal(err)
	}
	want := decode(t, []byte(`{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[`+
		`{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]},`+
		`{"key":"k8s.amazonaws.com/accelerator","operator":"In","values":["nvidia-tesla-a100"]},`+
		`{"key":"kubernetes.io/hostname","operator":"In","values":["host-1"]}]},`+
		`{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["host-1"]},`+
		`{"key":"k8s.amazonaws.com/accelerator","operator":"In","values":["nvidia-tesla-a100"]}],"matchFields":[{"key":"metadata.name","operator":"In","values":["n"]}]}]}}},`+
		`"tolerations":[{"key":"k8s.amazonaws.com/accelerator","operator":"Equal","value":"nvidia-tesla-a100","effect":"NoSchedule"},{"key":"spot","operator":"Exists"}],`+
		`"containers":[{"name":"sidecar","image":"s"},{"name":"main","image":"m","resources":{"limits":{"cpu":"2","nvidia.com/gpu":"1"},"requests":{"nvidia.com/gpu":"1"}},`+
		`"env":[{"name":"NVIDIA_VISIBLE_DEVICES","value":"GPU-a"},{"name":"A","value":"b"}]}],`+
		`"restartPolicy":"Never"}`))
	if got := decode(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("patched:\n%s", out)
	}
}

// Numbers keep every digit; a toleration written with explicit empty fields
// is the same toleration as one that omits them (Kubernetes reads both as "").
func TestPatchKeepsNumbersAndSeesEmptyFieldsAsAbsent(t *testing.T) {
	pod := `{"activeDeadlineSeconds":9007199254740993,` +
		`"tolerations":[{"key":"k8s.amazonaws.com/accelerator","operator":"Equal","value":"nvidia-tesla-a100","effect":"NoSchedule","tolerationSeconds":null}],` +
		`"containers":[{"name":"main"}]}`
	unnamed := `{"tolerations":[{"key":"k8s.amazonaws.com/accelerator","operator":"Equal","value":"nvidia-tesla-a100","effect":"NoSchedule"},` +
		`{"key":"spot","operator":"Exists","effect":"NoSchedule"}],"containers":[{"resources":{"limits":{"x/y":"1"}}}]}`
	out, err := ApplyPodSpecPatch([]byte(pod), unnamed)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"activeDeadlineSeconds":9007199254740993`) {
		t.Errorf("the number changed: %s", out)
	}
	var got struct{ Tolerations []toleration }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Tolerations) != 2 || got.Tolerations[1].Key != "spot" {
		t.Errorf("tolerations %+v, want the existing one and spot", got.Tolerations)
	}
	again, err := ApplyPodSpecPatch([]byte(`{"tolerations":[{"key":"spot","operator":"Exists","value":"","effect":"NoSchedule"}],"containers":[{}]}`), unnamed)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(again), `"spot"`) != 1 {
		t.Errorf("spot twice: %s", again)
	}
}

func TestPatchWithoutAContainerNameGoesToTheFirst(t *testing.T) {
	unnamed := strings.Replace(patch, `"name":"main",`, "", 1)
	out, err := ApplyPodSpecPatch([]byte(`{"containers":[{"name":"a"},{"name":"b"}]}`), unnamed)
	if err != nil {
		t.Fatal(err)
	}
	containers := decode(t, out)["containers"].([]interface{})
	if _, ok := containers[0].(map[string]interface{})["resources"]; !ok {
		t.Errorf("first container has no resources: %s", out)
	}
	if _, ok := containers[1].(map[string]interface{})["resources"]; ok {
		t.Errorf("second container got resources: %s", out)
	}
}

func TestPatchErrorsNameTheProblem(t *testing.T) {
	for _, c := range []struct{ pod, patch, want string }{
		{`{"containers":[{"name":"other"}]}`, patch, `no container named "main"`},
		{`{}`, strings.Replace(patch, `"name":"main",`, "", 1), "no container"},
		{`{"containers":`, patch, "PodSpec"},
		{`{"containers":[{"name":"main"}]}`, `{"tolerations":{}}`, "pod_spec_patch"},
		{`{"tolerations":"x","containers":[{"name":"main"}]}`, patch, `PodSpec field "tolerations"`},
		// A field from a newer server: not applied in part.
		{`{"containers":[{"name":"main"}]}`, `{"containers":[{"name":"main"}],"resourceClaims":[]}`, `unknown field "resourceClaims"`},
	} {
		if _, err := ApplyPodSpecPatch([]byte(c.pod), c.patch); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ApplyPodSpecPatch(%s) = %v, want an error with %q", c.pod, err, c.want)
		}
	}
}
