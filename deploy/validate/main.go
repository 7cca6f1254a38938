// Checks Orrery's deploy/ files with the parsers their own tools use:
//   - each Kubernetes manifest decoded strictly into its k8s.io/api type (an unknown, misspelt or
//     mistyped field fails, as `kubectl apply --validate=strict` would), plus what a cluster of Orrery
//     needs: selectors that match their pods, and probes and resources on every container;
//   - the compose file loaded by compose-go, docker compose's own loader, which checks it against
//     the compose specification's JSON schema and resolves its anchors and references.
//
// Usage: go run . <file>... (compose.yaml, or Kubernetes manifests).
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

func main() {
	failed := false
	for _, path := range os.Args[1:] {
		var err error
		if filepath.Base(path) == "compose.yaml" {
			err = checkCompose(path)
		} else {
			err = checkManifests(path)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			failed = true
		} else {
			fmt.Printf("%s: valid\n", path)
		}
	}
	if failed || len(os.Args) < 2 {
		os.Exit(1)
	}
}

func checkCompose(path string) error {
	options, err := cli.NewProjectOptions([]string{path},
		cli.WithName("orrery"),
		cli.WithEnv([]string{`MICROMEGAS_API_KEYS=[{"name":"admin","key":"k"}]`}),
	)
	if err != nil {
		return err
	}
	project, err := options.LoadProject(context.Background())
	if err != nil {
		return err
	}
	for _, name := range []string{"postgres", "s3", "serve-1", "serve-2", "maintain"} {
		if _, ok := project.Services[name]; !ok {
			return fmt.Errorf("no service %q", name)
		}
	}
	return nil
}

func checkManifests(path string) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for i, document := range bytes.Split(text, []byte("\n---\n")) {
		if len(bytes.TrimSpace(document)) == 0 {
			continue
		}
		if err := checkManifest(document); err != nil {
			return fmt.Errorf("document %d: %w", i+1, err)
		}
	}
	return nil
}

func checkManifest(document []byte) error {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(document, &meta); err != nil {
		return err
	}
	strict := func(into any) error { return yaml.UnmarshalStrict(document, into) }
	switch meta.APIVersion + " " + meta.Kind {
	case "apps/v1 Deployment":
		var d appsv1.Deployment
		if err := strict(&d); err != nil {
			return err
		}
		for key, value := range d.Spec.Selector.MatchLabels {
			if d.Spec.Template.Labels[key] != value {
				return fmt.Errorf("deployment %s: selector %s=%s matches none of its pods", d.Name, key, value)
			}
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.ReadinessProbe == nil || c.LivenessProbe == nil {
				return fmt.Errorf("deployment %s: container %s needs readiness and liveness probes", d.Name, c.Name)
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
				return fmt.Errorf("deployment %s: container %s needs a CPU request and a memory limit", d.Name, c.Name)
			}
		}
		return nil
	case "v1 Service":
		var s corev1.Service
		if err := strict(&s); err != nil {
			return err
		}
		if len(s.Spec.Selector) == 0 || len(s.Spec.Ports) == 0 {
			return fmt.Errorf("service %s: needs a selector and ports", s.Name)
		}
		return nil
	case "v1 Secret":
		return strict(&corev1.Secret{})
	case "v1 ConfigMap":
		return strict(&corev1.ConfigMap{})
	case "policy/v1 PodDisruptionBudget":
		var p policyv1.PodDisruptionBudget
		if err := strict(&p); err != nil {
			return err
		}
		if p.Spec.Selector == nil || (p.Spec.MinAvailable == nil && p.Spec.MaxUnavailable == nil) {
			return fmt.Errorf("pod disruption budget %s: needs a selector and minAvailable or maxUnavailable", p.Name)
		}
		return nil
	}
	return fmt.Errorf("no check for %s", strings.TrimSpace(meta.APIVersion+" "+meta.Kind))
}
