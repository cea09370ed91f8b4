package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
)

// ---- the t2t binary and its node flags ----

var (
	deployBinOnce sync.Once
	deployBinDir  string
	deployBinPath string
	deployBinErr  error
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if deployBinDir != "" {
		os.RemoveAll(deployBinDir)
	}
	os.Exit(code)
}

// deployBinary builds cmd/t2t once per test process.
func deployBinary(t *testing.T) string {
	t.Helper()
	deployBinOnce.Do(func() {
		if deployBinDir, deployBinErr = os.MkdirTemp("", "t2t-deploy-test-"); deployBinErr != nil {
			return
		}
		deployBinPath = filepath.Join(deployBinDir, "t2t")
		out, err := exec.Command("go", "build", "-o", deployBinPath, "../cmd/t2t").CombinedOutput()
		if err != nil {
			deployBinErr = fmt.Errorf("go build ../cmd/t2t: %v\n%s", err, out)
		}
	})
	if deployBinErr != nil {
		t.Fatal(deployBinErr)
	}
	return deployBinPath
}

// deployNodeFlags returns the flag names `t2t node --help` lists.
func deployNodeFlags(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command(deployBinary(t), "node", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("t2t node --help: %v\n%s", err, out)
	}
	flags := map[string]bool{}
	re := regexp.MustCompile(`^  -([a-z0-9-]+)`)
	for _, l := range strings.Split(string(out), "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			flags[m[1]] = true
		}
	}
	if !flags["roles"] || !flags["http"] || len(flags) < 20 {
		t.Fatalf("could not read the flags of t2t node --help:\n%s", out)
	}
	return flags
}

// deployFlagValue returns the value of --name in args ("--name=v" or
// "--name v").
func deployFlagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		a = "-" + strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(a, "-"+name+"="); ok {
			return v, true
		}
		if a == "-"+name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// deployCheckNodeArgs checks a container's command line against the real
// t2t binary: args[0] is "node", every flag is one `t2t node --help` lists,
// and the binary parses them all (values of the right type) when run with
// --help appended. $(VAR) and ${VAR...} references must be defined in vars
// and are replaced by their sample values first.
func deployCheckNodeArgs(t *testing.T, where string, args []string, vars map[string]string) []string {
	t.Helper()
	if len(args) == 0 || args[0] != "node" {
		t.Fatalf("%s: arguments %q do not start with the node subcommand", where, args)
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = deployExpand(t, where, a, vars)
	}
	known := deployNodeFlags(t)
	for _, a := range out[1:] {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !known[name] {
			t.Errorf("%s: t2t node has no flag --%s", where, name)
		}
	}
	cmd := exec.Command(deployBinary(t), append(slices.Clone(out), "--help")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: t2t %s --help: %v\n%s", where, strings.Join(out, " "), err, b)
	}
	if roles, ok := deployFlagValue(out, "roles"); !ok {
		t.Errorf("%s: no --roles", where)
	} else if _, err := cluster.ParseRoles(roles); err != nil {
		t.Errorf("%s: --roles %s: %v", where, roles, err)
	}
	return out
}

var deployRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)|\$\{([A-Za-z_][A-Za-z0-9_]*)[^}]*\}`)

// deployExpand replaces the $(VAR) and ${VAR...} references of s by their
// values in vars; a variable vars lacks is an error.
func deployExpand(t *testing.T, where, s string, vars map[string]string) string {
	t.Helper()
	return deployRef.ReplaceAllStringFunc(s, func(m string) string {
		sm := deployRef.FindStringSubmatch(m)
		name := sm[1] + sm[2]
		v, ok := vars[name]
		if !ok {
			t.Errorf("%s: %q refers to %s, which the container does not define", where, s, name)
		}
		return v
	})
}

// deploySampleGossipKey is a valid gossip key (base64 of 32 bytes), the
// sample value of the gossip-key secret.
var deploySampleGossipKey = base64.StdEncoding.EncodeToString([]byte("t2t-deploy-test-key-0123456789ab"))

// deployCheckSecrets checks a node's secrets as its manifest passes them:
// the --redis URL holds no password (it would show in ps and in the
// manifest) and the password reaches the node as $T2T_REDIS_PASSWORD;
// gossip on an address other hosts reach gets its key from
// $T2T_GOSSIP_KEY, never --insecure. args are expanded, env is the
// container's environment with sample values. The real binary, run with
// args and env, gets past its gossip check (a --listen that does not parse,
// appended, stops it right after) and, without the key, is refused.
func deployCheckSecrets(t *testing.T, where string, args []string, env map[string]string) {
	t.Helper()
	raw, _ := deployFlagValue(args, "redis")
	u, err := url.Parse(raw)
	if err != nil || u.User != nil {
		t.Errorf("%s: --redis %q must not hold a password (give it as $%s)", where, raw, store.PasswordEnv)
	}
	if env[store.PasswordEnv] == "" {
		t.Errorf("%s: no $%s: the node has no Redis password", where, store.PasswordEnv)
	}
	if _, ok := deployFlagValue(args, "insecure"); ok || slices.Contains(args, "--insecure") {
		t.Errorf("%s: --insecure: gossip must carry a key", where)
	}
	run := func(env map[string]string) string {
		cmd := exec.Command(deployBinary(t), append(slices.Clone(args), "--listen", "no-port")...)
		cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
			return strings.HasPrefix(kv, cluster.GossipKeyEnv+"=") || strings.HasPrefix(kv, store.PasswordEnv+"=")
		})
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		b, _ := cmd.CombinedOutput()
		return string(b)
	}
	if out := run(env); !strings.Contains(out, `t2t node: --listen "no-port"`) {
		t.Errorf("%s: the node does not get past its gossip settings:\n%s", where, out)
	}
	bind, _ := deployFlagValue(args, "gossip")
	host, _, _ := net.SplitHostPort(bind)
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return
	}
	noKey := maps.Clone(env)
	delete(noKey, cluster.GossipKeyEnv)
	if out := run(noKey); !strings.Contains(out, "t2t node: --gossip "+bind+": other hosts can reach") {
		t.Errorf("%s: without $%s the node is not refused:\n%s", where, cluster.GossipKeyEnv, out)
	}
}

// deployPort returns the port of a host:port flag value.
func deployPort(t *testing.T, where, hostPort string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(hostPort)
	if err != nil {
		t.Fatalf("%s: %q: %v", where, hostPort, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("%s: %q: %v", where, hostPort, err)
	}
	return n
}

// ---- Kubernetes manifests ----

// kustomization is the part of kustomize's Kustomization (and Component)
// these manifests use; decoding is strict, so a field outside it fails.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Labels     []struct {
		Pairs map[string]string `json:"pairs"`
	} `json:"labels,omitempty"`
	Resources  []string `json:"resources,omitempty"`
	Components []string `json:"components,omitempty"`
	Patches    []struct {
		Path string `json:"path"`
	} `json:"patches,omitempty"`
	SecretGenerator []struct {
		Name  string   `json:"name"`
		Type  string   `json:"type,omitempty"`
		Files []string `json:"files"`
	} `json:"secretGenerator,omitempty"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images,omitempty"`
}

func readKustomization(t *testing.T, dir string) kustomization {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	return k
}

// k8sDocs splits a multi-document YAML file.
func k8sDocs(b []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if strings.TrimRight(sc.Text(), " ") == "---" {
			docs = append(docs, slices.Clone(cur.Bytes()))
			cur.Reset()
			continue
		}
		cur.WriteString(sc.Text())
		cur.WriteByte('\n')
	}
	docs = append(docs, cur.Bytes())
	return slices.DeleteFunc(docs, func(d []byte) bool {
		for _, l := range strings.Split(string(d), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				return false
			}
		}
		return true
	})
}

// k8sObjects decodes every document of a manifest file strictly into its
// Kubernetes API type.
func k8sObjects(t *testing.T, path string) []any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var objs []any
	for i, doc := range k8sDocs(b) {
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("%s document %d: %v", path, i, err)
		}
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 Namespace":
			obj = &corev1.Namespace{}
		case "v1 ConfigMap":
			obj = &corev1.ConfigMap{}
		case "v1 Service":
			obj = &corev1.Service{}
		case "v1 Secret":
			obj = &corev1.Secret{}
		case "apps/v1 Deployment":
			obj = &appsv1.Deployment{}
		case "apps/v1 StatefulSet":
			obj = &appsv1.StatefulSet{}
		case "batch/v1 Job":
			obj = &batchv1.Job{}
		case "autoscaling/v2 HorizontalPodAutoscaler":
			obj = &autoscalingv2.HorizontalPodAutoscaler{}
		default:
			t.Fatalf("%s document %d: unexpected %s %s", path, i, tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("%s document %d (%s): %v", path, i, tm.Kind, err)
		}
		objs = append(objs, obj)
	}
	return objs
}

// k8sSet is every object of a kustomization's resources (recursively) and
// its patches, by "Kind/name".
type k8sSet struct {
	objs    map[string]any
	secrets map[string]map[string]bool // generated Secret name → keys
}

func (s *k8sSet) add(t *testing.T, key string, o any) {
	t.Helper()
	if _, dup := s.objs[key]; dup {
		t.Fatalf("%s defined twice", key)
	}
	s.objs[key] = o
}

func k8sKey(o any) string {
	switch o := o.(type) {
	case *corev1.Namespace:
		return "Namespace/" + o.Name
	case *corev1.ConfigMap:
		return "ConfigMap/" + o.Name
	case *corev1.Service:
		return "Service/" + o.Name
	case *corev1.Secret:
		return "Secret/" + o.Name
	case *appsv1.Deployment:
		return "Deployment/" + o.Name
	case *appsv1.StatefulSet:
		return "StatefulSet/" + o.Name
	case *batchv1.Job:
		return "Job/" + o.Name
	case *autoscalingv2.HorizontalPodAutoscaler:
		return "HorizontalPodAutoscaler/" + o.Name
	}
	return fmt.Sprintf("%T", o)
}

// k8sLoad reads a kustomization directory: its resources (files and
// directories), and checks that every resource, component, patch and
// generator file exists (generator files may instead be git-ignored, as
// secrets are). Patches are returned separately, decoded strictly too.
func k8sLoad(t *testing.T, dir string, set *k8sSet) (kustomization, []any) {
	t.Helper()
	k := readKustomization(t, dir)
	if k.Kind != "Kustomization" && k.Kind != "Component" {
		t.Fatalf("%s: kind %q", dir, k.Kind)
	}
	for _, r := range k.Resources {
		p := filepath.Join(dir, r)
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s: resource %s: %v", dir, r, err)
		}
		if st.IsDir() {
			k8sLoad(t, p, set)
			continue
		}
		for _, o := range k8sObjects(t, p) {
			set.add(t, k8sKey(o), o)
		}
	}
	for _, c := range k.Components {
		if _, err := os.Stat(filepath.Join(dir, c, "kustomization.yaml")); err != nil {
			t.Fatalf("%s: component %s: %v", dir, c, err)
		}
	}
	var patches []any
	for _, p := range k.Patches {
		patches = append(patches, k8sObjects(t, filepath.Join(dir, p.Path))...)
	}
	for _, g := range k.SecretGenerator {
		keys := map[string]bool{}
		for _, f := range g.Files {
			key, file, ok := strings.Cut(f, "=")
			if !ok {
				file, key = f, filepath.Base(f)
			}
			keys[key] = true
			p := filepath.Join(dir, file)
			if _, err := os.Stat(p); err == nil {
				continue
			}
			ign, err := os.ReadFile(filepath.Join(filepath.Dir(p), ".gitignore"))
			if err != nil || !slices.Contains(strings.Fields(string(ign)), "*") {
				t.Errorf("%s: secret file %s neither exists nor is git-ignored in its folder", dir, file)
			}
		}
		set.secrets[g.Name] = keys
	}
	return k, patches
}

func newK8sSet() *k8sSet {
	return &k8sSet{objs: map[string]any{}, secrets: map[string]map[string]bool{}}
}

// k8sEnvVars returns a container's environment variables with sample
// values (for $(VAR) expansion in arguments).
func k8sEnvVars(c corev1.Container) map[string]string {
	vars := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.Value != "":
			vars[e.Name] = e.Value
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP":
			vars[e.Name] = "10.1.2.3"
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Key == "gossip-key":
			vars[e.Name] = deploySampleGossipKey
		default:
			vars[e.Name] = "sample-" + strings.ToLower(e.Name)
		}
	}
	return vars
}

// k8sCheckPod checks a pod template's t2t container: arguments, probes
// against --http, ports, secret references, and returns its parsed args.
func k8sCheckPod(t *testing.T, where string, set *k8sSet, spec corev1.PodSpec) (corev1.Container, []string) {
	t.Helper()
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == "t2t" })
	if i < 0 {
		t.Fatalf("%s: no container named t2t", where)
	}
	c := spec.Containers[i]
	if len(c.Command) != 0 {
		t.Errorf("%s: command %q overrides the image's t2t entrypoint", where, c.Command)
	}
	args := deployCheckNodeArgs(t, where, c.Args, k8sEnvVars(c))
	deployCheckSecrets(t, where, args, k8sEnvVars(c))
	httpAddr, ok := deployFlagValue(args, "http")
	if !ok {
		t.Fatalf("%s: no --http: the probes have nothing to hit", where)
	}
	httpPort := deployPort(t, where+" --http", httpAddr)
	portOf := func(p corev1.ContainerPort) bool {
		return p.ContainerPort == int32(httpPort) && p.Protocol != corev1.ProtocolUDP
	}
	pi := slices.IndexFunc(c.Ports, portOf)
	if pi < 0 {
		t.Fatalf("%s: --http port %d is not a container port", where, httpPort)
	}
	for _, pr := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"readinessProbe", c.ReadinessProbe, "/readyz"}, {"livenessProbe", c.LivenessProbe, "/healthz"}} {
		if pr.probe == nil || pr.probe.HTTPGet == nil {
			t.Errorf("%s: no HTTP %s", where, pr.name)
			continue
		}
		g := pr.probe.HTTPGet
		if g.Path != pr.path {
			t.Errorf("%s: %s path %q, want %q", where, pr.name, g.Path, pr.path)
		}
		if !(g.Port.IntValue() == httpPort || (g.Port.StrVal != "" && g.Port.StrVal == c.Ports[pi].Name)) {
			t.Errorf("%s: %s port %s is not the --http port %d (%q)", where, pr.name, g.Port.String(), httpPort, c.Ports[pi].Name)
		}
	}
	gossip, _ := deployFlagValue(args, "gossip")
	gp := deployPort(t, where+" --gossip", gossip)
	for _, proto := range []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP} {
		if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool {
			return p.ContainerPort == int32(gp) && (p.Protocol == proto || (p.Protocol == "" && proto == corev1.ProtocolTCP))
		}) {
			t.Errorf("%s: gossip port %d/%s is not a container port", where, gp, proto)
		}
	}
	listen, _ := deployFlagValue(args, "listen")
	if lp := deployPort(t, where+" --listen", listen); !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == int32(lp) }) {
		t.Errorf("%s: actor port %d is not a container port", where, lp)
	}
	k8sCheckSecretRefs(t, where, set, c)
	if c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("%s: no CPU request", where)
	}
	if spec.SecurityContext == nil || spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot {
		t.Errorf("%s: the pod does not require a non-root user", where)
	}
	return c, args
}

func k8sCheckSecretRefs(t *testing.T, where string, set *k8sSet, c corev1.Container) {
	t.Helper()
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		r := e.ValueFrom.SecretKeyRef
		if keys, ok := set.secrets[r.Name]; !ok || !keys[r.Key] {
			t.Errorf("%s: env %s refers to secret %s key %s, which no secretGenerator makes", where, e.Name, r.Name, r.Key)
		}
	}
}

func k8sGet[T any](t *testing.T, set *k8sSet, key string) T {
	t.Helper()
	o, ok := set.objs[key].(T)
	if !ok {
		t.Fatalf("no %s (have %v)", key, slices.Sorted(func(yield func(string) bool) {
			for k := range set.objs {
				if !yield(k) {
					return
				}
			}
		}))
	}
	return o
}

func k8sSelects(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestK8sBase decodes every manifest of deploy/k8s/base strictly and checks
// that the pieces fit: the coordinator Job and the rollout Deployment run
// flags t2t node accepts, probe /readyz and /healthz on the --http port,
// reach Redis at its Service, mount the stage-0 ConfigMap their --config
// names (a valid, feasible config), and find each other through the
// headless gossip Service; the HPA scales the rollout Deployment; Redis
// keeps an append-only file on a PVC.
func TestK8sBase(t *testing.T) {
	set := newK8sSet()
	k, patches := k8sLoad(t, "k8s/base", set)
	if len(patches) != 0 || k.Namespace == "" {
		t.Fatalf("base: %d patches, namespace %q", len(patches), k.Namespace)
	}
	if ns := k8sGet[*corev1.Namespace](t, set, "Namespace/"+k.Namespace); ns == nil {
		t.Fatal("no namespace")
	}
	if !slices.ContainsFunc(k.Images, func(i struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	}) bool {
		return i.Name == "t2t"
	}) {
		t.Errorf("base: no images entry for t2t")
	}

	// Redis: AOF on a PVC, a Service in front.
	rsts := k8sGet[*appsv1.StatefulSet](t, set, "StatefulSet/t2t-redis")
	rc := rsts.Spec.Template.Spec.Containers[0]
	rargs := strings.Join(append(slices.Clone(rc.Command), rc.Args...), " ")
	if !strings.Contains(rargs, "--appendonly yes") || !strings.Contains(rargs, "--requirepass $(REDIS_PASSWORD)") {
		t.Errorf("redis: %q lacks --appendonly yes or --requirepass", rargs)
	}
	k8sCheckSecretRefs(t, "redis", set, rc)
	if len(rsts.Spec.VolumeClaimTemplates) != 1 || !slices.ContainsFunc(rc.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == rsts.Spec.VolumeClaimTemplates[0].Name && m.MountPath == "/data"
	}) || !strings.Contains(rargs, "--dir /data") {
		t.Errorf("redis: the AOF directory /data is not the PVC")
	}
	if !k8sSelects(rsts.Spec.Selector.MatchLabels, rsts.Spec.Template.Labels) {
		t.Errorf("redis: selector does not match the pod labels")
	}
	rsvc := k8sGet[*corev1.Service](t, set, "Service/t2t-redis")
	if !k8sSelects(rsvc.Spec.Selector, rsts.Spec.Template.Labels) {
		t.Errorf("redis service selects no redis pod")
	}

	// The run's node and the rollout nodes.
	job := k8sGet[*batchv1.Job](t, set, "Job/t2t-coordinator")
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever || job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 {
		t.Errorf("coordinator job: restart policy %q, backoffLimit %v; a failed run must not restart under its run id", job.Spec.Template.Spec.RestartPolicy, job.Spec.BackoffLimit)
	}
	cc, cargs := k8sCheckPod(t, "coordinator", set, job.Spec.Template.Spec)
	dep := k8sGet[*appsv1.Deployment](t, set, "Deployment/t2t-rollout")
	_, rollArgs := k8sCheckPod(t, "rollout", set, dep.Spec.Template.Spec)
	if !k8sSelects(dep.Spec.Selector.MatchLabels, dep.Spec.Template.Labels) {
		t.Errorf("rollout: selector does not match the pod labels")
	}
	if roles, _ := deployFlagValue(cargs, "roles"); roles != "coordinator,learner,engineer" {
		t.Errorf("coordinator --roles %s", roles)
	}
	if roles, _ := deployFlagValue(rollArgs, "roles"); roles != "rollout" {
		t.Errorf("rollout --roles %s", roles)
	}
	for _, a := range [][]string{cargs, rollArgs} {
		raw, _ := deployFlagValue(a, "redis")
		if u, err := url.Parse(raw); err != nil || u.Host != rsvc.Name+":"+strconv.Itoa(int(rsvc.Spec.Ports[0].Port)) {
			t.Errorf("--redis %s does not name the redis service %s:%d", raw, rsvc.Name, rsvc.Spec.Ports[0].Port)
		}
	}
	// The nodes' password is the one Redis requires.
	for _, c := range []corev1.Container{cc, rc} {
		name := map[string]string{"t2t": store.PasswordEnv, "redis": "REDIS_PASSWORD"}[c.Name]
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			r := e.ValueFrom
			return e.Name == name && r != nil && r.SecretKeyRef != nil && r.SecretKeyRef.Key == "redis-password"
		}) {
			t.Errorf("%s: $%s is not the secret's redis-password", c.Name, name)
		}
	}

	// Rollouts join through the headless gossip Service.
	gsvc := k8sGet[*corev1.Service](t, set, "Service/t2t-coordinator-gossip")
	if gsvc.Spec.ClusterIP != corev1.ClusterIPNone || !k8sSelects(gsvc.Spec.Selector, job.Spec.Template.Labels) {
		t.Errorf("gossip service: clusterIP %q, selector %v, coordinator labels %v", gsvc.Spec.ClusterIP, gsvc.Spec.Selector, job.Spec.Template.Labels)
	}
	join, _ := deployFlagValue(rollArgs, "join")
	host, _, _ := net.SplitHostPort(join)
	jp := deployPort(t, "rollout --join", join)
	cg, _ := deployFlagValue(cargs, "gossip")
	if host != gsvc.Name || jp != deployPort(t, "coordinator --gossip", cg) {
		t.Errorf("rollout --join %s: want %s:<the coordinator's gossip port>", join, gsvc.Name)
	}
	for _, proto := range []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP} {
		i := slices.IndexFunc(gsvc.Spec.Ports, func(p corev1.ServicePort) bool { return int(p.Port) == jp && p.Protocol == proto })
		if i < 0 {
			t.Errorf("gossip service has no %d/%s port", jp, proto)
			continue
		}
		tp := gsvc.Spec.Ports[i].TargetPort
		if !slices.ContainsFunc(cc.Ports, func(p corev1.ContainerPort) bool {
			return p.Protocol == proto && (p.Name == tp.StrVal || int(p.ContainerPort) == tp.IntValue())
		}) {
			t.Errorf("gossip service port %d/%s targets %s, not a coordinator container port", jp, proto, tp.String())
		}
	}

	// The stage-0 config: mounted where --config looks, valid and feasible.
	cm := k8sGet[*corev1.ConfigMap](t, set, "ConfigMap/t2t-stage0")
	cfgPath, ok := deployFlagValue(cargs, "config")
	if !ok {
		t.Fatal("coordinator: no --config")
	}
	mi := slices.IndexFunc(cc.VolumeMounts, func(m corev1.VolumeMount) bool { return strings.HasPrefix(cfgPath, m.MountPath+"/") })
	if mi < 0 {
		t.Fatalf("coordinator: --config %s is under no volume mount", cfgPath)
	}
	vi := slices.IndexFunc(job.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == cc.VolumeMounts[mi].Name })
	if vi < 0 || job.Spec.Template.Spec.Volumes[vi].ConfigMap == nil || job.Spec.Template.Spec.Volumes[vi].ConfigMap.Name != cm.Name {
		t.Fatalf("coordinator: --config %s is not in the ConfigMap %s", cfgPath, cm.Name)
	}
	data, ok := cm.Data[strings.TrimPrefix(cfgPath, cc.VolumeMounts[mi].MountPath+"/")]
	if !ok {
		t.Fatalf("ConfigMap %s has no key for %s", cm.Name, cfgPath)
	}
	cfg, err := env.ParseConfig([]byte(data))
	if err != nil {
		t.Fatalf("stage-0 config: %v", err)
	}
	if err := env.CheckFeasible(cfg); err != nil {
		t.Fatalf("stage-0 config: %v", err)
	}

	// The HPA scales the rollout Deployment.
	hpa := k8sGet[*autoscalingv2.HorizontalPodAutoscaler](t, set, "HorizontalPodAutoscaler/t2t-rollout")
	ref := hpa.Spec.ScaleTargetRef
	if ref.Kind != "Deployment" || ref.Name != dep.Name || ref.APIVersion != "apps/v1" {
		t.Errorf("HPA targets %+v", ref)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 1 || hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas || len(hpa.Spec.Metrics) == 0 {
		t.Errorf("HPA bounds or metrics: %+v", hpa.Spec)
	}
}

// TestK8sGPUOverlay: the GPU overlay patches the base coordinator Job into
// a GPU job: one nvidia.com/gpu, the GPU image, --device xla: with the
// plugin path Dockerfile.gpu installs, and the XLA environment.
func TestK8sGPUOverlay(t *testing.T) {
	set := newK8sSet()
	k, patches := k8sLoad(t, "k8s/overlays/gpu", set)
	if len(patches) != 1 {
		t.Fatalf("gpu overlay: %d patches, want 1", len(patches))
	}
	base := k8sGet[*batchv1.Job](t, set, "Job/t2t-coordinator")
	p, ok := patches[0].(*batchv1.Job)
	if !ok || p.Name != base.Name {
		t.Fatalf("gpu patch is %T %s, want the coordinator Job", patches[0], k8sKey(patches[0]))
	}
	c := p.Spec.Template.Spec.Containers[0]
	if c.Name != "t2t" {
		t.Fatalf("gpu patch container %q", c.Name)
	}
	gpu := c.Resources.Limits[corev1.ResourceName("nvidia.com/gpu")]
	if gpu.Value() != 1 {
		t.Errorf("gpu patch: nvidia.com/gpu limit %v, want 1", gpu.String())
	}
	if !slices.ContainsFunc(k.Images, func(i struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	}) bool {
		return i.Name == c.Image
	}) || c.Image != "t2t-gpu" {
		t.Errorf("gpu patch image %q has no images entry", c.Image)
	}
	// A strategic merge replaces the args list and merges env by name.
	merged := base.Spec.Template.Spec.Containers[0]
	merged.Args = c.Args
	for _, e := range c.Env {
		if i := slices.IndexFunc(merged.Env, func(x corev1.EnvVar) bool { return x.Name == e.Name }); i >= 0 {
			merged.Env[i] = e
		} else {
			merged.Env = append(merged.Env, e)
		}
	}
	args := deployCheckNodeArgs(t, "gpu coordinator", merged.Args, k8sEnvVars(merged))
	deployCheckSecrets(t, "gpu coordinator", args, k8sEnvVars(merged))
	dev, _ := deployFlagValue(args, "device")
	plugin, ok := strings.CutPrefix(dev, "xla:")
	if !ok || !filepath.IsAbs(plugin) {
		t.Fatalf("gpu coordinator --device %q, want xla:/abs/path", dev)
	}
	envs := map[string]string{}
	for _, e := range merged.Env {
		envs[e.Name] = e.Value
	}
	img := dockerfileEnv(t, "Dockerfile.gpu", "pip")
	if envs["GOPJRT_CUDA_CHECKS"] != "0" || envs["GOMLX_NO_AUTO_INSTALL"] != "1" || envs["XLA_FLAGS"] != img["XLA_FLAGS"] {
		t.Errorf("gpu coordinator env %v, image env %v", envs, img)
	}
	if plugin != img["T2T_PJRT_PLUGIN"] {
		t.Errorf("gpu coordinator loads %s; Dockerfile.gpu installs %s", plugin, img["T2T_PJRT_PLUGIN"])
	}
	roles, _ := deployFlagValue(args, "roles")
	if roles != "coordinator,learner,engineer" {
		t.Errorf("gpu coordinator --roles %s", roles)
	}
}

// TestK8sRedisTLSComponent: the component's patches decode strictly, switch
// every node to rediss:// with the CA as Go's roots, and serve Redis over
// TLS only.
func TestK8sRedisTLSComponent(t *testing.T) {
	set := newK8sSet()
	k, patches := k8sLoad(t, "k8s/components/redis-tls", set)
	if k.Kind != "Component" || len(patches) != 3 {
		t.Fatalf("redis-tls: kind %s, %d patches", k.Kind, len(patches))
	}
	nodes := 0
	for _, p := range patches {
		var spec corev1.PodSpec
		switch p := p.(type) {
		case *batchv1.Job:
			spec = p.Spec.Template.Spec
		case *appsv1.Deployment:
			spec = p.Spec.Template.Spec
		case *appsv1.StatefulSet:
			a := strings.Join(p.Spec.Template.Spec.Containers[0].Args, " ")
			if !strings.Contains(a, "--port 0") || !strings.Contains(a, "--tls-port 6379") || !strings.Contains(a, "--appendonly yes") {
				t.Errorf("redis tls args %q", a)
			}
			continue
		}
		nodes++
		c := spec.Containers[0]
		vars := k8sEnvVars(c)
		if vars["REDIS_SCHEME"] != "rediss" || !strings.HasPrefix(vars["SSL_CERT_FILE"], c.VolumeMounts[0].MountPath+"/") {
			t.Errorf("%s: env %v, mounts %v", k8sKey(p), vars, c.VolumeMounts)
		}
		if spec.Volumes[0].Secret == nil || set.secrets[spec.Volumes[0].Secret.SecretName] == nil {
			t.Errorf("%s: the CA volume is not the generated TLS secret", k8sKey(p))
		}
	}
	if nodes != 2 {
		t.Errorf("%d node patches, want the coordinator and the rollouts", nodes)
	}
}

// ---- Compose ----

type composeHealthcheck struct {
	Test     []string `json:"test"`
	Interval string   `json:"interval,omitempty"`
	Timeout  string   `json:"timeout,omitempty"`
	Retries  int      `json:"retries,omitempty"`
}

type composeService struct {
	Image         string            `json:"image,omitempty"`
	ContainerName string            `json:"container_name,omitempty"`
	Hostname      string            `json:"hostname,omitempty"`
	Command       []string          `json:"command,omitempty"`
	Environment   map[string]string `json:"environment,omitempty"`
	Ports         []string          `json:"ports,omitempty"`
	Volumes       []string          `json:"volumes,omitempty"`
	Healthcheck   *composeHealthcheck
	DependsOn     map[string]struct {
		Condition string `json:"condition"`
	} `json:"depends_on,omitempty"`
	Build *struct {
		Context    string `json:"context"`
		Dockerfile string `json:"dockerfile"`
	} `json:"build,omitempty"`
	Deploy *struct {
		Replicas int `json:"replicas"`
	} `json:"deploy,omitempty"`
	Restart string `json:"restart,omitempty"`
}

type composeFile struct {
	Name     string                     `json:"name"`
	Services map[string]*composeService `json:"services"`
	Volumes  map[string]*struct{}       `json:"volumes,omitempty"`
}

// composeEnv gives sample values to the variables compose.yaml expands.
var composeEnv = map[string]string{"REDIS_PASSWORD": "0123abcd", "T2T_RUN_ID": "compose-1", "T2T_POLICY": "gridnet",
	"T2T_STAGES": "8", "T2T_SEED": "1", "T2T_ROLLOUT_CAPACITY": "2", "T2T_GOSSIP_KEY": deploySampleGossipKey}

// TestCompose decodes compose.yaml strictly and checks that the services
// fit: Redis with AOF on a volume, the collector and Jaeger wired as
// otel-collector.yaml says, a coordinator whose health check is its
// /readyz, and a rollout service that scales (no fixed name, no host ports)
// and joins the coordinator's gossip address by service name.
func TestCompose(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.UnmarshalStrict(b, &cf); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	for _, name := range []string{"redis", "otel-collector", "jaeger", "coordinator", "rollout"} {
		if cf.Services[name] == nil {
			t.Fatalf("compose.yaml: no service %s", name)
		}
	}
	for name, s := range cf.Services {
		for dep, d := range s.DependsOn {
			if cf.Services[dep] == nil {
				t.Errorf("%s depends on unknown service %s", name, dep)
			}
			if d.Condition == "service_healthy" && cf.Services[dep].Healthcheck == nil {
				t.Errorf("%s waits for %s to be healthy, which has no healthcheck", name, dep)
			}
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, ".") {
				if _, err := os.Stat(src); err != nil {
					t.Errorf("%s mounts %s: %v", name, src, err)
				}
			} else if _, ok := cf.Volumes[src]; !ok {
				t.Errorf("%s mounts undeclared volume %s", name, src)
			}
		}
		if s.Build != nil {
			if _, err := os.Stat(filepath.Join(s.Build.Context, s.Build.Dockerfile)); err != nil {
				t.Errorf("%s builds %s: %v", name, s.Build.Dockerfile, err)
			}
		}
	}
	redis := cf.Services["redis"]
	rcmd := strings.Join(redis.Command, " ")
	if !strings.Contains(rcmd, "--appendonly yes") || !slices.ContainsFunc(redis.Volumes, func(v string) bool { return strings.HasSuffix(v, ":/data") }) {
		t.Errorf("redis: %q, volumes %v: want AOF on a volume at /data", rcmd, redis.Volumes)
	}

	nodeArgs := map[string][]string{}
	for _, name := range []string{"coordinator", "rollout"} {
		s := cf.Services[name]
		if s.Image == "" || s.Build == nil {
			t.Errorf("%s: image %q build %v", name, s.Image, s.Build)
		}
		nodeArgs[name] = deployCheckNodeArgs(t, "compose "+name, s.Command, composeEnv)
		u, _ := deployFlagValue(nodeArgs[name], "redis")
		if u != "redis://redis:6379/0" || s.DependsOn["redis"].Condition != "service_healthy" {
			t.Errorf("%s: --redis %s, depends on redis %+v", name, u, s.DependsOn["redis"])
		}
		// The secrets come from required variables: compose refuses to
		// start without them rather than start nodes without a password or key.
		env := map[string]string{}
		for k, v := range s.Environment {
			env[k] = deployExpand(t, "compose "+name, v, composeEnv)
		}
		for k, from := range map[string]string{store.PasswordEnv: "REDIS_PASSWORD", cluster.GossipKeyEnv: "T2T_GOSSIP_KEY"} {
			if v := s.Environment[k]; !strings.HasPrefix(v, "${"+from+":?") {
				t.Errorf("%s: %s: %q, want ${%s:?…} (required)", name, k, v, from)
			}
		}
		deployCheckSecrets(t, "compose "+name, nodeArgs[name], env)
		otlp, _ := deployFlagValue(nodeArgs[name], "otlp")
		if h, _, _ := net.SplitHostPort(otlp); h != "otel-collector" || deployPort(t, name+" --otlp", otlp) != otelHTTPPort(t) {
			t.Errorf("%s: --otlp %s is not the collector's OTLP/HTTP receiver", name, otlp)
		}
	}
	coord, roll := cf.Services["coordinator"], cf.Services["rollout"]
	httpPort := deployPort(t, "coordinator --http", must(deployFlagValue(nodeArgs["coordinator"], "http")))
	if hc := coord.Healthcheck; hc == nil || !slices.Contains(hc.Test, fmt.Sprintf("http://127.0.0.1:%d/readyz", httpPort)) {
		t.Errorf("coordinator healthcheck %+v: want a GET of /readyz on its --http port %d", coord.Healthcheck, httpPort)
	}
	if roll.ContainerName != "" || roll.Hostname != "" || len(roll.Ports) != 0 {
		t.Errorf("rollout cannot scale: container_name %q hostname %q ports %v", roll.ContainerName, roll.Hostname, roll.Ports)
	}
	if roll.DependsOn["coordinator"].Condition != "service_healthy" {
		t.Errorf("rollout does not wait for a ready coordinator: %+v", roll.DependsOn)
	}
	join := must(deployFlagValue(nodeArgs["rollout"], "join"))
	if h, _, _ := net.SplitHostPort(join); h != "coordinator" ||
		deployPort(t, "rollout --join", join) != deployPort(t, "coordinator --gossip", must(deployFlagValue(nodeArgs["coordinator"], "gossip"))) {
		t.Errorf("rollout --join %s: want coordinator:<its --gossip port>", join)
	}
	for name, a := range nodeArgs {
		// Several replicas on one network: the actor address must be the
		// container's own (0.0.0.0 resolves to it), not a fixed name.
		if l := must(deployFlagValue(a, "listen")); !strings.HasPrefix(l, "0.0.0.0:") {
			t.Errorf("%s --listen %s: want 0.0.0.0:<port>", name, l)
		}
	}
	jaeger := cf.Services["jaeger"]
	if jaeger.Environment["COLLECTOR_OTLP_ENABLED"] != "true" {
		t.Errorf("jaeger does not accept OTLP: %v", jaeger.Environment)
	}
	if h := otelJaegerHost(t); cf.Services[h] == nil {
		t.Errorf("the collector exports to %s, not a compose service", h)
	}
}

func must(v string, ok bool) string {
	if !ok {
		return ""
	}
	return v
}

// ---- OpenTelemetry collector ----

type otelConfig struct {
	Receivers struct {
		OTLP struct {
			Protocols struct {
				HTTP struct {
					Endpoint string `json:"endpoint"`
				} `json:"http"`
			} `json:"protocols"`
		} `json:"otlp"`
	} `json:"receivers"`
	Processors map[string]map[string]any `json:"processors"`
	Exporters  map[string]struct {
		Endpoint  string `json:"endpoint,omitempty"`
		Verbosity string `json:"verbosity,omitempty"`
		TLS       *struct {
			Insecure bool `json:"insecure"`
		} `json:"tls,omitempty"`
	} `json:"exporters"`
	Service struct {
		Pipelines map[string]struct {
			Receivers  []string `json:"receivers"`
			Processors []string `json:"processors"`
			Exporters  []string `json:"exporters"`
		} `json:"pipelines"`
	} `json:"service"`
}

func readOtel(t *testing.T) otelConfig {
	t.Helper()
	b, err := os.ReadFile("otel-collector.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c otelConfig
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		t.Fatalf("otel-collector.yaml: %v", err)
	}
	return c
}

func otelHTTPPort(t *testing.T) int {
	return deployPort(t, "collector OTLP/HTTP receiver", readOtel(t).Receivers.OTLP.Protocols.HTTP.Endpoint)
}

func otelJaegerHost(t *testing.T) string {
	e := readOtel(t).Exporters["otlp/jaeger"].Endpoint
	h, _, err := net.SplitHostPort(e)
	if err != nil {
		t.Fatalf("otlp/jaeger endpoint %q: %v", e, err)
	}
	return h
}

// TestOtelCollector: the traces pipeline uses only defined components and
// ends at Jaeger's OTLP/gRPC port.
func TestOtelCollector(t *testing.T) {
	c := readOtel(t)
	p, ok := c.Service.Pipelines["traces"]
	if !ok {
		t.Fatal("no traces pipeline")
	}
	if !slices.Equal(p.Receivers, []string{"otlp"}) {
		t.Errorf("receivers %v", p.Receivers)
	}
	for _, n := range p.Processors {
		if _, ok := c.Processors[n]; !ok {
			t.Errorf("processor %s is not defined", n)
		}
	}
	for _, n := range p.Exporters {
		if _, ok := c.Exporters[n]; !ok {
			t.Errorf("exporter %s is not defined", n)
		}
	}
	if !slices.Contains(p.Exporters, "otlp/jaeger") || !strings.HasSuffix(c.Exporters["otlp/jaeger"].Endpoint, ":4317") {
		t.Errorf("traces do not reach Jaeger's OTLP/gRPC port: %+v", c.Exporters)
	}
}

// ---- Dockerfiles ----

type dockerInstr struct {
	cmd, args string
	line      int
}

type dockerStage struct {
	from, name string
	instrs     []dockerInstr
}

// dockerParse reads a Dockerfile into stages (continuation lines joined,
// comments and parser directives dropped).
func dockerParse(t *testing.T, path string) ([]dockerStage, map[string]string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		stages   []dockerStage
		globals  = map[string]string{}
		cur      strings.Builder
		curStart int
	)
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		trim := strings.TrimSpace(l)
		if cur.Len() == 0 && (trim == "" || strings.HasPrefix(trim, "#")) {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(trim, "#") {
			continue
		}
		if cur.Len() == 0 {
			curStart = i + 1
		}
		if s, ok := strings.CutSuffix(trim, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(trim)
		full := cur.String()
		cur.Reset()
		cmd, args, _ := strings.Cut(full, " ")
		in := dockerInstr{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: curStart}
		switch {
		case in.cmd == "FROM":
			f := strings.Fields(in.args)
			st := dockerStage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			} else if len(f) != 1 {
				t.Fatalf("%s:%d: FROM %s", path, in.line, in.args)
			}
			stages = append(stages, st)
		case len(stages) == 0:
			if in.cmd != "ARG" {
				t.Fatalf("%s:%d: %s before the first FROM", path, in.line, in.cmd)
			}
			k, v, _ := strings.Cut(in.args, "=")
			globals[k] = v
		default:
			stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
		}
	}
	return stages, globals
}

// dockerCheckRuntime checks a final stage: a non-root USER, an exec-form
// ENTRYPOINT running the t2t binary the stage copied from the builder.
func dockerCheckRuntime(t *testing.T, path string, st dockerStage) {
	t.Helper()
	var user, entry, copied string
	for _, in := range st.instrs {
		switch in.cmd {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entry = in.args
		case "COPY":
			f := strings.Fields(in.args)
			if len(f) == 3 && f[0] == "--from=builder" {
				copied = f[2]
			}
		}
	}
	u, _, _ := strings.Cut(user, ":")
	if u == "" || u == "root" || u == "0" {
		t.Errorf("%s stage %s: USER %q, want a non-root user", path, st.name, user)
	}
	var ep []string
	if err := json.Unmarshal([]byte(entry), &ep); err != nil || len(ep) == 0 {
		t.Errorf("%s stage %s: ENTRYPOINT %q is not exec form", path, st.name, entry)
		return
	}
	if copied == "" || ep[0] != copied || filepath.Base(copied) != "t2t" {
		t.Errorf("%s stage %s: ENTRYPOINT %v does not run the t2t binary copied from the builder (%q)", path, st.name, ep, copied)
	}
}

func goModVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	return string(m[1])
}

// dockerCheckBuilder checks the builder stage: golang:<go.mod's version>,
// building ./cmd/t2t with the cgo setting wanted, copying files that exist.
func dockerCheckBuilder(t *testing.T, path string, st dockerStage, cgo string) {
	t.Helper()
	if st.name != "builder" {
		t.Fatalf("%s: the first stage is %q, want AS builder", path, st.name)
	}
	if img := "golang:" + goModVersion(t); st.from != img && !strings.HasPrefix(st.from, img+"-") {
		t.Errorf("%s: builder FROM %s, want %s (go.mod)", path, st.from, img)
	}
	built := false
	for _, in := range st.instrs {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			built = strings.Contains(in.args, "CGO_ENABLED="+cgo) && strings.Contains(in.args, "./cmd/t2t")
		}
		if in.cmd == "COPY" {
			f := strings.Fields(in.args)
			for _, src := range f[:len(f)-1] {
				if src == "." {
					continue
				}
				if _, err := os.Stat(filepath.Join("..", src)); err != nil {
					t.Errorf("%s:%d: COPY %s: %v", path, in.line, src, err)
				}
			}
		}
	}
	if !built {
		t.Errorf("%s: the builder does not build ./cmd/t2t with CGO_ENABLED=%s", path, cgo)
	}
}

// dockerfileEnv returns the ENV values of a stage, with ${ARG} references
// expanded from the global ARG defaults.
func dockerfileEnv(t *testing.T, path, stage string) map[string]string {
	t.Helper()
	stages, globals := dockerParse(t, path)
	i := slices.IndexFunc(stages, func(s dockerStage) bool { return s.name == stage })
	if i < 0 {
		t.Fatalf("%s: no stage %s", path, stage)
	}
	out := map[string]string{}
	ref := regexp.MustCompile(`\$\{([A-Z_]+)\}`)
	for _, in := range stages[i].instrs {
		if in.cmd != "ENV" {
			continue
		}
		for _, kv := range strings.Fields(in.args) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("%s:%d: ENV %q: want KEY=VALUE", path, in.line, kv)
			}
			out[k] = ref.ReplaceAllStringFunc(v, func(m string) string { return globals[ref.FindStringSubmatch(m)[1]] })
		}
	}
	return out
}

// TestDockerfiles lints both images: a golang builder of go.mod's version
// AS builder (static for the CPU image, cgo for the GPU one), and runtime
// stages that run t2t as a non-root user; the GPU image sets the XLA
// environment GOMLX.md asks for.
func TestDockerfiles(t *testing.T) {
	cpu, _ := dockerParse(t, "Dockerfile")
	if len(cpu) != 2 {
		t.Fatalf("Dockerfile: %d stages, want builder + runtime", len(cpu))
	}
	dockerCheckBuilder(t, "Dockerfile", cpu[0], "0")
	dockerCheckRuntime(t, "Dockerfile", cpu[1])

	gpu, globals := dockerParse(t, "Dockerfile.gpu")
	if len(gpu) != 3 {
		t.Fatalf("Dockerfile.gpu: %d stages, want builder, mount, pip", len(gpu))
	}
	dockerCheckBuilder(t, "Dockerfile.gpu", gpu[0], "1")
	for _, st := range gpu[1:] {
		dockerCheckRuntime(t, "Dockerfile.gpu", st)
		e := dockerfileEnv(t, "Dockerfile.gpu", st.name)
		if e["GOPJRT_CUDA_CHECKS"] != "0" || e["GOMLX_NO_AUTO_INSTALL"] != "1" {
			t.Errorf("Dockerfile.gpu stage %s: env %v", st.name, e)
		}
	}
	if gpu[len(gpu)-1].name != "pip" {
		t.Errorf("Dockerfile.gpu: the default (last) stage is %s, want pip", gpu[len(gpu)-1].name)
	}
	pip := dockerfileEnv(t, "Dockerfile.gpu", "pip")
	if !strings.HasPrefix(pip["XLA_FLAGS"], "--xla_gpu_cuda_data_dir=/") || !strings.Contains(pip["T2T_PJRT_PLUGIN"], "xla_cuda"+globals["CUDA_MAJOR"]+"/xla_cuda_plugin.so") {
		t.Errorf("Dockerfile.gpu pip env %v", pip)
	}
	if _, err := os.Stat("Dockerfile.dockerignore"); err != nil {
		t.Errorf("no Dockerfile.dockerignore: %v", err)
	}
}

// ---- local-cluster.sh ----

// TestLocalClusterScriptUsage: bad arguments are refused with status 2
// before anything starts.
func TestLocalClusterScriptUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"zero"}, {"0"}, {"3", "--policy", "llm"}, {"3", "--bogus"}} {
		cmd := exec.Command("bash", append([]string{"local-cluster.sh"}, args...)...)
		cmd.Env = append(os.Environ(), "T2T_BIN=/nonexistent")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("local-cluster.sh %v: %v, want exit 2\n%s", args, err, out)
		}
	}
}
