package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// kustomizeCmd returns the kustomize command: $T2T_KUSTOMIZE (split on
// spaces, e.g. "go run sigs.k8s.io/kustomize/kustomize/v5@v5.8.1"), else
// kustomize on PATH, else nil.
func kustomizeCmd() []string {
	if s := strings.Fields(os.Getenv("T2T_KUSTOMIZE")); len(s) > 0 {
		return s
	}
	if p, err := exec.LookPath("kustomize"); err == nil {
		return []string{p}
	}
	return nil
}

// TestKustomizeBuild builds the base, the GPU overlay and an overlay with
// the redis-tls component with a real kustomize (skipped without one), on
// a copy of deploy/k8s with sample secret files, and decodes the output
// strictly: every object lands in the namespace, every Secret reference
// names a generated Secret (with its hash suffix), the GPU Job asks for a
// GPU with the GPU image while the rollouts keep the CPU image.
func TestKustomizeBuild(t *testing.T) {
	kz := kustomizeCmd()
	if kz == nil {
		t.Skip("no kustomize on PATH (or set T2T_KUSTOMIZE to a command)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("cp", "-r", "k8s", dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	root := filepath.Join(dir, "k8s")
	for _, f := range []string{"base/secrets/gossip.key", "base/secrets/redis.password", "components/redis-tls/secrets/tls.crt",
		"components/redis-tls/secrets/tls.key", "components/redis-tls/secrets/ca.crt"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("sample"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	all := filepath.Join(root, "overlays", "all")
	if err := os.MkdirAll(all, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(all, "kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../gpu]\ncomponents: [../../components/redis-tls]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"base", "overlays/gpu", "overlays/all"} {
		cmd := exec.Command(kz[0], append(kz[1:], "build", filepath.Join(root, target))...)
		out, err := cmd.Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("kustomize build %s: %v\n%s", target, err, stderr)
		}
		path := filepath.Join(dir, strings.ReplaceAll(target, "/", "-")+".yaml")
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		secrets := map[string]bool{}
		var pods []struct {
			key  string
			spec corev1.PodSpec
		}
		for _, o := range k8sObjects(t, path) {
			var ns string
			switch o := o.(type) {
			case *corev1.Namespace:
				continue
			case *corev1.Secret:
				secrets[o.Name], ns = true, o.Namespace
			case *corev1.ConfigMap:
				ns = o.Namespace
			case *corev1.Service:
				ns = o.Namespace
			case *appsv1.Deployment:
				ns = o.Namespace
				pods = append(pods, struct {
					key  string
					spec corev1.PodSpec
				}{k8sKey(o), o.Spec.Template.Spec})
			case *appsv1.StatefulSet:
				ns = o.Namespace
				pods = append(pods, struct {
					key  string
					spec corev1.PodSpec
				}{k8sKey(o), o.Spec.Template.Spec})
			case *batchv1.Job:
				ns = o.Namespace
				pods = append(pods, struct {
					key  string
					spec corev1.PodSpec
				}{k8sKey(o), o.Spec.Template.Spec})
				gpu := o.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceName("nvidia.com/gpu")]
				img := o.Spec.Template.Spec.Containers[0].Image
				if target == "base" && (!gpu.IsZero() || img != "t2t:dev") {
					t.Errorf("%s: Job gpu %v image %s", target, gpu.String(), img)
				}
				if target != "base" && (gpu.Value() != 1 || img != "t2t-gpu:dev") {
					t.Errorf("%s: Job gpu %v image %s", target, gpu.String(), img)
				}
			default:
				ns = "t2t"
			}
			if ns != "t2t" {
				t.Errorf("%s: %s in namespace %q", target, k8sKey(o), ns)
			}
		}
		for _, p := range pods {
			for _, c := range p.spec.Containers {
				for _, e := range c.Env {
					if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && !secrets[r.SecretKeyRef.Name] {
						t.Errorf("%s: %s env %s names secret %s, not in the build", target, p.key, e.Name, r.SecretKeyRef.Name)
					}
				}
				if p.key == "Deployment/t2t-rollout" && c.Image != "t2t:dev" {
					t.Errorf("%s: rollout image %s", target, c.Image)
				}
			}
			for _, v := range p.spec.Volumes {
				if v.Secret != nil && !secrets[v.Secret.SecretName] {
					t.Errorf("%s: %s volume %s names secret %s, not in the build", target, p.key, v.Name, v.Secret.SecretName)
				}
			}
		}
		if len(secrets) == 0 {
			t.Errorf("%s: no generated secrets", target)
		}
	}
}
