package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/catalog"
	"github.com/aigateway/gateway/configs"
	"gopkg.in/yaml.v3"
)

// Paths relative to this package's directory, where `go test` runs.
const (
	repoRoot       = ".."
	kubernetesDir  = "kubernetes"
	composeFile    = "compose/compose.yaml"
	dockerfilePath = "Dockerfile"
	modulePath     = "github.com/aigateway/gateway"

	// listenPort is the port the image EXPOSEs and every config listens on.
	listenPort = 8080
	// uploadCleanup bounds how long `gateway serve` waits, after the grace
	// period, for cancelled uploads to clean up (cmd/gateway/serve.go).
	uploadCleanup = 30 * time.Second
	// configMapLimit is the API server's limit on one ConfigMap; the
	// catalog has to leave room for its metadata.
	configMapLimit = 1 << 20
)

// secretEnv are plausible values for the variables the Kubernetes config
// takes from Secrets, which never live in the repository. A config that
// references a variable missing here fails the test: add it here and to
// the Deployment's env.
var secretEnv = map[string]string{
	"DATABASE_URL":                "postgres://gateway:secret@postgres.db.svc:5432/gateway?sslmode=require",
	"REDIS_URL":                   "rediss://:secret@redis.cache.svc:6380/0",
	"GATEWAY_BYOK_ENCRYPTION_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
	"AWS_ACCESS_KEY_ID":           "AKIAEXAMPLEEXAMPLE00",
	"AWS_SECRET_ACCESS_KEY":       "example-secret-access-key",
}

// shellEnv is the environment a developer runs `docker compose` with.
var shellEnv = map[string]string{
	"GATEWAY_BYOK_ENCRYPTION_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
}

// byokKeyEnv must reach every replica that stores metadata in PostgreSQL:
// without it `gateway serve` refuses to start (policy/keys/seal.KeyEnv).
const byokKeyEnv = "GATEWAY_BYOK_ENCRYPTION_KEY"

// ---- YAML ---------------------------------------------------------------

// decodeAll parses every document of a YAML stream.
func decodeAll(t *testing.T, name string, data []byte) []*yaml.Node {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(n.Content) > 0 && n.Content[0].Kind != 0 {
			docs = append(docs, &n)
		}
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// envRefs lists the ${VAR} references in a config's values (not in its
// comments), the way configs.Parse expands them.
func envRefs(t *testing.T, name string, data []byte) []string {
	t.Helper()
	var refs []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode {
			for _, m := range envRef.FindAllStringSubmatch(n.Value, -1) {
				if !slices.Contains(refs, m[1]) {
					refs = append(refs, m[1])
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	for _, d := range decodeAll(t, name, data) {
		walk(d)
	}
	slices.Sort(refs)
	return refs
}

// parseConfig loads a gateway config the way `gateway serve` does, with
// getenv answering from env only.
func parseConfig(t *testing.T, name string, data []byte, env map[string]string) configs.Config {
	t.Helper()
	cfg, err := configs.Parse(data, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("%s does not load: %v", name, err)
	}
	return cfg
}

// checkListen: the container's config must listen on every interface, on
// the port the image exposes and the probes use.
func checkListen(t *testing.T, name string, cfg configs.Config) {
	t.Helper()
	host, port, err := net.SplitHostPort(cfg.Server.Listen)
	if err != nil {
		t.Fatalf("%s: server.listen %q: %v", name, cfg.Server.Listen, err)
	}
	if host != "0.0.0.0" && host != "" && host != "::" {
		t.Errorf("%s: server.listen %q binds one address only; nothing outside the container reaches it", name, cfg.Server.Listen)
	}
	if port != strconv.Itoa(listenPort) {
		t.Errorf("%s: server.listen port %s, want %d (EXPOSE and probes)", name, port, listenPort)
	}
}

// ---- Kubernetes ---------------------------------------------------------

type meta struct {
	Name        string            `yaml:"name"`
	Namespace   string            `yaml:"namespace"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type object struct {
	file       string
	node       *yaml.Node
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   meta   `yaml:"metadata"`
}

func (o object) decode(t *testing.T, v any) {
	t.Helper()
	if err := o.node.Decode(v); err != nil {
		t.Fatalf("%s: %s %s: %v", o.file, o.Kind, o.Metadata.Name, err)
	}
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type keyRef struct {
	Name     string `yaml:"name"`
	Key      string `yaml:"key"`
	Optional bool   `yaml:"optional"`
}

type envVar struct {
	Name      string  `yaml:"name"`
	Value     *string `yaml:"value"`
	ValueFrom *struct {
		SecretKeyRef    *keyRef `yaml:"secretKeyRef"`
		ConfigMapKeyRef *keyRef `yaml:"configMapKeyRef"`
	} `yaml:"valueFrom"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"` // a number or a port name
	} `yaml:"httpGet"`
}

type securityContext struct {
	RunAsNonRoot             *bool  `yaml:"runAsNonRoot"`
	RunAsUser                *int64 `yaml:"runAsUser"`
	ReadOnlyRootFilesystem   *bool  `yaml:"readOnlyRootFilesystem"`
	AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
	Capabilities             struct {
		Drop []string `yaml:"drop"`
	} `yaml:"capabilities"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env            []envVar `yaml:"env"`
	StartupProbe   *probe   `yaml:"startupProbe"`
	ReadinessProbe *probe   `yaml:"readinessProbe"`
	LivenessProbe  *probe   `yaml:"livenessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext securityContext `yaml:"securityContext"`
	VolumeMounts    []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		SubPath   string `yaml:"subPath"`
	} `yaml:"volumeMounts"`
	Lifecycle *struct {
		PreStop any `yaml:"preStop"`
	} `yaml:"lifecycle"`
}

type configMapSource struct {
	Name  string `yaml:"name"`
	Items []struct {
		Key  string `yaml:"key"`
		Path string `yaml:"path"`
	} `yaml:"items"`
}

type volume struct {
	Name      string           `yaml:"name"`
	ConfigMap *configMapSource `yaml:"configMap"`
	Projected *struct {
		Sources []struct {
			ConfigMap *configMapSource `yaml:"configMap"`
		} `yaml:"sources"`
	} `yaml:"projected"`
	EmptyDir *struct{} `yaml:"emptyDir"`
}

type deployment struct {
	Spec struct {
		Replicas int           `yaml:"replicas"`
		Selector labelSelector `yaml:"selector"`
		Template struct {
			Metadata meta `yaml:"metadata"`
			Spec     struct {
				TerminationGracePeriodSeconds *int64          `yaml:"terminationGracePeriodSeconds"`
				SecurityContext               securityContext `yaml:"securityContext"`
				TopologySpreadConstraints     []struct {
					TopologyKey   string        `yaml:"topologyKey"`
					LabelSelector labelSelector `yaml:"labelSelector"`
				} `yaml:"topologySpreadConstraints"`
				Containers []container `yaml:"containers"`
				Volumes    []volume    `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type service struct {
	Spec struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type podDisruptionBudget struct {
	Spec struct {
		MinAvailable   string        `yaml:"minAvailable"`
		MaxUnavailable string        `yaml:"maxUnavailable"`
		Selector       labelSelector `yaml:"selector"`
	} `yaml:"spec"`
}

type horizontalPodAutoscaler struct {
	Spec struct {
		ScaleTargetRef struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
			Name       string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		MinReplicas int `yaml:"minReplicas"`
		MaxReplicas int `yaml:"maxReplicas"`
		Metrics     []struct {
			Type     string `yaml:"type"`
			Resource *struct {
				Name string `yaml:"name"`
			} `yaml:"resource"`
		} `yaml:"metrics"`
	} `yaml:"spec"`
}

type kustomization struct {
	Kind               string   `yaml:"kind"`
	Resources          []string `yaml:"resources"`
	ConfigMapGenerator []struct {
		Name    string   `yaml:"name"`
		Files   []string `yaml:"files"`
		Options struct {
			DisableNameSuffixHash bool `yaml:"disableNameSuffixHash"`
		} `yaml:"options"`
	} `yaml:"configMapGenerator"`
}

// cluster is everything deploy/kubernetes declares.
type cluster struct {
	kustomization kustomization
	objects       []object
	// configMaps holds every ConfigMap's data, generated ones included
	// (read from the files their generator names).
	configMaps map[string]map[string]string

	deploymentObj object
	deployment    deployment
	container     container
	service       service
	pdb           podDisruptionBudget
	hpa           horizontalPodAutoscaler
	hpaAPIVersion string

	// config is gateway.yaml as the Deployment's container loads it.
	configName string
	configData []byte
	env        map[string]string
	envVars    map[string]envVar
}

func loadCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{configMaps: map[string]map[string]string{}}
	kpath := filepath.Join(kubernetesDir, "kustomization.yaml")
	if err := yaml.Unmarshal(readFile(t, kpath), &c.kustomization); err != nil {
		t.Fatalf("%s: %v", kpath, err)
	}
	if c.kustomization.Kind != "Kustomization" {
		t.Fatalf("%s: kind %q, want Kustomization", kpath, c.kustomization.Kind)
	}
	for _, res := range c.kustomization.Resources {
		file := filepath.Join(kubernetesDir, res)
		for _, doc := range decodeAll(t, file, readFile(t, file)) {
			o := object{file: file, node: doc}
			o.decode(t, &o)
			if o.Kind == "" || o.APIVersion == "" || o.Metadata.Name == "" {
				t.Fatalf("%s: a document without apiVersion, kind or metadata.name", file)
			}
			c.objects = append(c.objects, o)
		}
	}
	for _, gen := range c.kustomization.ConfigMapGenerator {
		data := map[string]string{}
		for _, f := range gen.Files {
			key, src, ok := strings.Cut(f, "=")
			if !ok {
				src, key = f, path.Base(f)
			}
			data[key] = string(readFile(t, filepath.Join(kubernetesDir, src)))
		}
		c.configMaps[gen.Name] = data
	}

	deployments := 0
	for _, o := range c.objects {
		switch o.Kind {
		case "ConfigMap":
			var cm struct {
				Data map[string]string `yaml:"data"`
			}
			o.decode(t, &cm)
			c.configMaps[o.Metadata.Name] = cm.Data
		case "Deployment":
			deployments++
			c.deploymentObj = o
			o.decode(t, &c.deployment)
		case "Service":
			o.decode(t, &c.service)
		case "PodDisruptionBudget":
			o.decode(t, &c.pdb)
		case "HorizontalPodAutoscaler":
			c.hpaAPIVersion = o.APIVersion
			o.decode(t, &c.hpa)
		}
	}
	if deployments != 1 {
		t.Fatalf("found %d Deployments, want 1", deployments)
	}
	pod := c.deployment.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("Deployment has %d containers, want the gateway alone", len(pod.Containers))
	}
	c.container = pod.Containers[0]

	// The environment the container gets: Secrets (never in the
	// repository) answer with plausible values, ConfigMap keys with theirs.
	c.env = map[string]string{}
	c.envVars = map[string]envVar{}
	for _, e := range c.container.Env {
		c.envVars[e.Name] = e
		switch {
		case e.Value != nil:
			c.env[e.Name] = *e.Value
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			if v, ok := secretEnv[e.Name]; ok {
				c.env[e.Name] = v
			}
		case e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			if v, ok := c.configMaps[ref.Name][ref.Key]; ok {
				c.env[e.Name] = v
			}
		}
	}

	// The config file: the one --config names, found through the volume
	// mounted there.
	c.configName = configFlag(t, c.container.Args)
	data, ok := c.mountedFile(t, c.configName)
	if !ok {
		t.Fatalf("--config %s is not a file any volume of the Deployment provides", c.configName)
	}
	c.configData = []byte(data)
	return c
}

// mountedFile returns the content the container sees at file, when a
// ConfigMap-backed volume provides it.
func (c *cluster) mountedFile(t *testing.T, file string) (string, bool) {
	t.Helper()
	pod := c.deployment.Spec.Template.Spec
	for _, m := range c.container.VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, file)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name {
				continue
			}
			var sources []*configMapSource
			if v.ConfigMap != nil {
				sources = append(sources, v.ConfigMap)
			}
			if v.Projected != nil {
				for _, s := range v.Projected.Sources {
					if s.ConfigMap != nil {
						sources = append(sources, s.ConfigMap)
					}
				}
			}
			for _, s := range sources {
				data, ok := c.configMaps[s.Name]
				if !ok {
					t.Errorf("volume %s names ConfigMap %s, which is neither a manifest nor generated", v.Name, s.Name)
					continue
				}
				if len(s.Items) == 0 {
					if content, ok := data[rel]; ok {
						return content, true
					}
				}
				for _, it := range s.Items {
					if _, ok := data[it.Key]; !ok {
						t.Errorf("volume %s projects key %s, which ConfigMap %s does not have", v.Name, it.Key, s.Name)
					}
					if it.Path == rel {
						return data[it.Key], true
					}
				}
			}
		}
	}
	return "", false
}

// configFlag returns the value of --config in args.
func configFlag(t *testing.T, args []string) string {
	t.Helper()
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			return v
		}
		if a == "--config" && i+1 < len(args) {
			return args[i+1]
		}
	}
	t.Fatalf("no --config in %q", args)
	return ""
}

// portNumber resolves a probe's or Service's port (number or name) against
// the container's ports.
func (c *cluster) portNumber(p string) int {
	if n, err := strconv.Atoi(p); err == nil {
		return n
	}
	for _, cp := range c.container.Ports {
		if cp.Name == p {
			return cp.ContainerPort
		}
	}
	return 0
}

func matches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	var k kustomization
	if err := yaml.Unmarshal(readFile(t, filepath.Join(kubernetesDir, "kustomization.yaml")), &k); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(kubernetesDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			onDisk = append(onDisk, b)
		}
	}
	listed := slices.Clone(k.Resources)
	slices.Sort(listed)
	slices.Sort(onDisk)
	if !slices.Equal(listed, onDisk) {
		t.Errorf("kustomization.yaml resources %v, manifests on disk %v: a manifest kustomize does not apply is dead", listed, onDisk)
	}
}

func TestKubernetesKinds(t *testing.T) {
	c := loadCluster(t)
	have := map[string]bool{"Kustomization": c.kustomization.Kind == "Kustomization"}
	for _, o := range c.objects {
		have[o.Kind] = true
		if o.Kind == "Secret" {
			t.Errorf("%s: a Secret manifest; credentials are created out of band and only referenced", o.file)
		}
	}
	for _, kind := range []string{"Kustomization", "Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler", "ConfigMap"} {
		if !have[kind] {
			t.Errorf("no %s in %s", kind, kubernetesDir)
		}
	}
	if c.hpaAPIVersion != "autoscaling/v2" {
		t.Errorf("HorizontalPodAutoscaler apiVersion %q, want autoscaling/v2", c.hpaAPIVersion)
	}
}

func TestDeploymentProbes(t *testing.T) {
	c := loadCluster(t)
	if got := c.portNumber("http"); got != listenPort {
		t.Fatalf("container port \"http\" is %d, want %d", got, listenPort)
	}
	for _, tc := range []struct {
		name  string
		probe *probe
		paths []string
	}{
		{"readinessProbe", c.container.ReadinessProbe, []string{"/readyz"}},
		{"livenessProbe", c.container.LivenessProbe, []string{"/healthz"}},
		// Startup waits for the listener, so either endpoint works; it must
		// not be /readyz's stricter cousin of liveness by accident.
		{"startupProbe", c.container.StartupProbe, []string{"/healthz", "/readyz"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.probe == nil || tc.probe.HTTPGet == nil {
				t.Fatalf("no HTTP %s", tc.name)
			}
			if !slices.Contains(tc.paths, tc.probe.HTTPGet.Path) {
				t.Errorf("%s path %q, want one of %v", tc.name, tc.probe.HTTPGet.Path, tc.paths)
			}
			if got := c.portNumber(tc.probe.HTTPGet.Port); got != listenPort {
				t.Errorf("%s port %q resolves to %d, want %d", tc.name, tc.probe.HTTPGet.Port, got, listenPort)
			}
		})
	}
	cfg := parseConfig(t, c.configName, c.configData, c.env)
	checkListen(t, "ConfigMap gateway.yaml", cfg)
}

func TestDeploymentHardening(t *testing.T) {
	c := loadCluster(t)
	pod := c.deployment.Spec.Template.Spec
	sc := c.container.SecurityContext

	nonRoot := (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) || (pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot)
	if !nonRoot {
		t.Error("runAsNonRoot is not true on the pod or the container")
	}
	for _, uid := range []*int64{sc.RunAsUser, pod.SecurityContext.RunAsUser} {
		if uid != nil && *uid == 0 {
			t.Error("runAsUser is 0")
		}
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem is not true")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Error("capabilities do not drop ALL")
	}
	for _, r := range []string{"cpu", "memory"} {
		if c.container.Resources.Requests[r] == "" {
			t.Errorf("no %s request (the HPA scales on the CPU request; the scheduler needs both)", r)
		}
	}
	if c.container.Resources.Limits["memory"] == "" {
		t.Error("no memory limit")
	}
	if c.container.Lifecycle != nil && c.container.Lifecycle.PreStop != nil {
		t.Error("a preStop hook: the gateway drains itself on SIGTERM (server.drain_delay); a hook would only delay it")
	}
	if len(pod.TopologySpreadConstraints) == 0 {
		t.Error("no topologySpreadConstraints: replicas may share a node")
	}
	for _, tsc := range pod.TopologySpreadConstraints {
		if !matches(tsc.LabelSelector.MatchLabels, c.deployment.Spec.Template.Metadata.Labels) {
			t.Errorf("topology spread on %s selects %v, not the gateway's pods", tsc.TopologyKey, tsc.LabelSelector.MatchLabels)
		}
	}
	for _, m := range c.container.VolumeMounts {
		if m.SubPath != "" {
			t.Errorf("volume %s is mounted with subPath: the kubelet never updates such files, so the catalog would not hot-reload", m.Name)
		}
	}

	ann := c.deployment.Spec.Template.Metadata.Annotations
	if ann["prometheus.io/scrape"] != "true" {
		t.Error("pod template lacks prometheus.io/scrape: \"true\"")
	}
	if ann["prometheus.io/path"] != "/metrics" {
		t.Errorf("prometheus.io/path %q, want /metrics", ann["prometheus.io/path"])
	}
	if ann["prometheus.io/port"] != strconv.Itoa(listenPort) {
		t.Errorf("prometheus.io/port %q, want %d", ann["prometheus.io/port"], listenPort)
	}
}

func TestServiceBudgetAndAutoscaler(t *testing.T) {
	c := loadCluster(t)
	podLabels := c.deployment.Spec.Template.Metadata.Labels
	if !matches(c.deployment.Spec.Selector.MatchLabels, podLabels) {
		t.Errorf("Deployment selector %v does not select its own pods %v", c.deployment.Spec.Selector.MatchLabels, podLabels)
	}
	if !matches(c.service.Spec.Selector, podLabels) {
		t.Errorf("Service selector %v does not select the gateway's pods %v", c.service.Spec.Selector, podLabels)
	}
	if len(c.service.Spec.Ports) == 0 {
		t.Error("Service has no ports")
	}
	for _, p := range c.service.Spec.Ports {
		if got := c.portNumber(p.TargetPort); got != listenPort {
			t.Errorf("Service port %d targets %q = %d, want the container's %d", p.Port, p.TargetPort, got, listenPort)
		}
	}

	if !matches(c.pdb.Spec.Selector.MatchLabels, podLabels) {
		t.Errorf("PodDisruptionBudget selector %v does not select the gateway's pods", c.pdb.Spec.Selector.MatchLabels)
	}
	switch {
	case c.pdb.Spec.MaxUnavailable != "" && c.pdb.Spec.MinAvailable != "":
		t.Error("PodDisruptionBudget sets both minAvailable and maxUnavailable")
	case c.pdb.Spec.MaxUnavailable != "":
		if n, err := strconv.Atoi(c.pdb.Spec.MaxUnavailable); err != nil || n < 1 || n >= c.deployment.Spec.Replicas {
			t.Errorf("PodDisruptionBudget maxUnavailable %q, want 1..%d", c.pdb.Spec.MaxUnavailable, c.deployment.Spec.Replicas-1)
		}
	case c.pdb.Spec.MinAvailable != "":
		if n, err := strconv.Atoi(c.pdb.Spec.MinAvailable); err != nil || n < 1 || n >= c.deployment.Spec.Replicas {
			t.Errorf("PodDisruptionBudget minAvailable %q must leave a replica evictable", c.pdb.Spec.MinAvailable)
		}
	default:
		t.Error("PodDisruptionBudget sets neither minAvailable nor maxUnavailable")
	}

	ref := c.hpa.Spec.ScaleTargetRef
	if ref.Kind != "Deployment" || ref.Name != c.deploymentObj.Metadata.Name || ref.APIVersion != "apps/v1" {
		t.Errorf("HPA targets %s %s (%s), want Deployment %s (apps/v1)", ref.Kind, ref.Name, ref.APIVersion, c.deploymentObj.Metadata.Name)
	}
	cpu := false
	for _, m := range c.hpa.Spec.Metrics {
		cpu = cpu || (m.Type == "Resource" && m.Resource != nil && m.Resource.Name == "cpu")
	}
	if !cpu {
		t.Error("HPA does not scale on CPU")
	}
	if r := c.deployment.Spec.Replicas; r < 3 || r < c.hpa.Spec.MinReplicas || r > c.hpa.Spec.MaxReplicas {
		t.Errorf("replicas %d, want at least 3 and within the HPA's %d..%d", r, c.hpa.Spec.MinReplicas, c.hpa.Spec.MaxReplicas)
	}
}

// TestKubernetesConfig is the point of this file: the gateway.yaml the
// Deployment runs loads, every variable it references reaches the
// container, and the timings and sizes around it agree with it.
func TestKubernetesConfig(t *testing.T) {
	c := loadCluster(t)

	t.Run("every referenced variable is in the Deployment's env", func(t *testing.T) {
		refs := envRefs(t, c.configName, c.configData)
		if len(refs) == 0 {
			t.Fatal("the replicated config references no ${VAR}: where do its credentials come from?")
		}
		for _, name := range refs {
			e, ok := c.envVars[name]
			if !ok {
				t.Errorf("%s references ${%s}, which the Deployment's env does not set", c.configName, name)
				continue
			}
			if e.ValueFrom == nil || (e.ValueFrom.SecretKeyRef == nil && e.ValueFrom.ConfigMapKeyRef == nil) {
				t.Errorf("env %s is set inline; take it from a Secret or a ConfigMap", name)
				continue
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil && r.Optional {
				t.Errorf("env %s is an optional secretKeyRef but the config needs it", name)
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				if _, ok := c.configMaps[r.Name][r.Key]; !ok {
					t.Errorf("env %s reads key %s of ConfigMap %s, which does not exist", name, r.Key, r.Name)
				}
			}
		}
	})

	cfg := parseConfig(t, c.configName, c.configData, c.env)

	t.Run("credentials come from Secrets", func(t *testing.T) {
		for _, name := range []string{"DATABASE_URL", "REDIS_URL", byokKeyEnv, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
			e, ok := c.envVars[name]
			if !ok {
				if name == byokKeyEnv && cfg.Metadata.Driver == "postgres" {
					t.Errorf("no %s: on PostgreSQL the gateway refuses to start without it", name)
				}
				continue
			}
			if e.Value != nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("env %s is not a secretKeyRef", name)
			}
		}
	})

	t.Run("termination grace covers the drain", func(t *testing.T) {
		tgps := c.deployment.Spec.Template.Spec.TerminationGracePeriodSeconds
		if tgps == nil {
			t.Fatal("no terminationGracePeriodSeconds (the default 30s is shorter than the drain)")
		}
		grace := time.Duration(*tgps) * time.Second
		need := cfg.Server.DrainDelay + cfg.Server.ShutdownGrace
		if grace <= need {
			t.Errorf("terminationGracePeriodSeconds %v <= drain_delay %v + shutdown_grace %v", grace, cfg.Server.DrainDelay, cfg.Server.ShutdownGrace)
		}
		if grace <= need+uploadCleanup {
			t.Errorf("terminationGracePeriodSeconds %v leaves cancelled uploads no time to clean up (need > %v)", grace, need+uploadCleanup)
		}
		if cfg.Server.DrainDelay <= 0 {
			t.Error("server.drain_delay is 0: endpoints would still route to a terminating pod")
		}
	})

	t.Run("replicas_hint tracks the replica count", func(t *testing.T) {
		if !cfg.Redis.Enabled() {
			t.Fatal("the replicated config has no Redis: every replica would count limits alone")
		}
		if h := cfg.Redis.ReplicasHint; h != c.deployment.Spec.Replicas || h != c.hpa.Spec.MinReplicas {
			t.Errorf("redis.replicas_hint %d, Deployment replicas %d, HPA minReplicas %d: keep them equal", h, c.deployment.Spec.Replicas, c.hpa.Spec.MinReplicas)
		}
	})

	t.Run("shared backends", func(t *testing.T) {
		if cfg.Metadata.Driver != "postgres" {
			t.Errorf("metadata.driver %q: replicas cannot share SQLite", cfg.Metadata.Driver)
		}
		if cfg.Storage.Backend == "fs" {
			t.Error("storage.backend fs: replicas cannot share a local disk")
		}
		if len(cfg.Server.TrustedProxies) == 0 {
			t.Error("no server.trusted_proxies: behind a load balancer every client would have its address")
		}
	})

	t.Run("catalog is mounted from the generated ConfigMap", func(t *testing.T) {
		data, ok := c.mountedFile(t, cfg.Catalog.Path)
		if !ok {
			t.Fatalf("catalog.path %s is not a file any volume provides", cfg.Catalog.Path)
		}
		if len(data) >= configMapLimit-64<<10 {
			t.Errorf("the catalog is %d bytes; a ConfigMap holds at most %d with its metadata", len(data), configMapLimit)
		}
		cat, err := catalog.FromBytes([]byte(data))
		if err != nil {
			t.Fatalf("the mounted catalog does not load: %v", err)
		}
		if cat.Len() == 0 {
			t.Error("the mounted catalog is empty")
		}
	})
}

// TestConfigCheckCatchesMistakes makes sure the checks above can fail: a
// misspelt key and a variable nobody sets are both refused.
func TestConfigCheckCatchesMistakes(t *testing.T) {
	c := loadCluster(t)
	for _, tc := range []struct {
		name   string
		mutate func(data []byte, env map[string]string) []byte
		want   string
	}{
		{"misspelt key", func(d []byte, _ map[string]string) []byte {
			return bytes.Replace(d, []byte("drain_delay:"), []byte("drain_dealy:"), 1)
		}, "server.drain_dealy: unknown key"},
		{"unset variable", func(d []byte, env map[string]string) []byte {
			delete(env, "REDIS_URL")
			return d
		}, "environment variable REDIS_URL is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range c.env {
				env[k] = v
			}
			data := tc.mutate(slices.Clone(c.configData), env)
			_, err := configs.Parse(data, func(k string) string { return env[k] })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("configs.Parse error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestKustomizeBuild renders the manifests with kubectl's kustomize where
// kubectl is installed (it is not a test dependency, so elsewhere the test
// skips, CI included).
func TestKustomizeBuild(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	out, err := exec.Command(kubectl, "kustomize", "--load-restrictor=LoadRestrictionsNone", kubernetesDir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("kubectl kustomize: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	c := loadCluster(t)
	kinds := map[string]int{}
	for _, doc := range decodeAll(t, "kustomize output", out) {
		o := object{file: "kustomize output", node: doc}
		o.decode(t, &o)
		kinds[o.Kind]++
		if o.Kind != "Namespace" && o.Metadata.Namespace == "" {
			t.Errorf("%s %s has no namespace", o.Kind, o.Metadata.Name)
		}
		switch o.Kind {
		case "Deployment":
			var d deployment
			o.decode(t, &d)
			if img := d.Spec.Template.Spec.Containers[0].Image; img == c.container.Image || !strings.Contains(img, ":") {
				t.Errorf("image %q: the kustomization's images entry did not pin it", img)
			}
		case "ConfigMap":
			var cm struct {
				Data map[string]string `yaml:"data"`
			}
			o.decode(t, &cm)
			if want, ok := c.configMaps[o.Metadata.Name]; !ok || len(cm.Data) != len(want) {
				t.Errorf("rendered ConfigMap %s has keys the deployment does not expect (or is renamed)", o.Metadata.Name)
			}
		}
	}
	if want := len(c.objects) + len(c.kustomization.ConfigMapGenerator); len(decodeAll(t, "kustomize output", out)) != want {
		t.Errorf("kustomize rendered %v, want %d objects", kinds, want)
	}
}

// ---- compose ------------------------------------------------------------

type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	StopGracePeriod string `yaml:"stop_grace_period"`
	ReadOnly        bool   `yaml:"read_only"`
	Networks        map[string]*struct {
		IPv4Address string `yaml:"ipv4_address"`
	} `yaml:"networks"`
}

type compose struct {
	Services map[string]composeService `yaml:"services"`
}

// composeVar matches compose's interpolation: ${VAR}, ${VAR:-default},
// ${VAR-default}, ${VAR:?error}, ${VAR?error}.
var composeVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}`)

// interpolate expands compose variables in every scalar of n from env, as
// `docker compose` does before using the file.
func interpolate(t *testing.T, n *yaml.Node, env map[string]string) {
	t.Helper()
	if n.Kind == yaml.ScalarNode {
		s := strings.ReplaceAll(n.Value, "$$", "\x00")
		s = composeVar.ReplaceAllStringFunc(s, func(ref string) string {
			m := composeVar.FindStringSubmatch(ref)
			v, set := env[m[1]]
			empty := !set || (strings.HasPrefix(m[2], ":") && v == "")
			switch m[2] {
			case ":-", "-":
				if empty {
					return m[3]
				}
			case ":?", "?":
				if empty {
					t.Errorf("compose needs %s set: %s", m[1], m[3])
				}
			}
			return v
		})
		n.Value = strings.ReplaceAll(s, "\x00", "$")
	}
	for _, c := range n.Content {
		interpolate(t, c, env)
	}
}

func loadCompose(t *testing.T) compose {
	t.Helper()
	docs := decodeAll(t, composeFile, readFile(t, composeFile))
	if len(docs) != 1 {
		t.Fatalf("%s holds %d documents, want 1", composeFile, len(docs))
	}
	interpolate(t, docs[0], shellEnv)
	var c compose
	if err := docs[0].Decode(&c); err != nil {
		t.Fatalf("%s: %v", composeFile, err)
	}
	return c
}

// composeBind returns the host path, relative to this package, of the bind
// mount the service has at target (or at a directory above it).
func composeBind(s composeService, target string) (string, bool) {
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || !(strings.HasPrefix(parts[0], ".") || strings.HasPrefix(parts[0], "/")) {
			continue // a named volume
		}
		rel, err := filepath.Rel(parts[1], target)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		return filepath.Join(filepath.Dir(composeFile), parts[0], rel), true
	}
	return "", false
}

// gatewayServices are the compose services built from deploy/Dockerfile.
func gatewayServices(c compose) []string {
	var names []string
	for name, s := range c.Services {
		if s.Build != nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// serviceHost returns the host of a URL (or host:port) and whether it names a
// compose service.
func serviceHost(c compose, raw string) (string, bool) {
	host := raw
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		host = u.Hostname()
	} else if h, _, err := net.SplitHostPort(raw); err == nil {
		host = h
	}
	_, ok := c.Services[host]
	return host, ok
}

func TestComposeStack(t *testing.T) {
	c := loadCompose(t)
	gateways := gatewayServices(c)
	if len(gateways) != 2 {
		t.Fatalf("compose builds %d gateway services (%v), want 2", len(gateways), gateways)
	}
	deps := map[string][]string{ // role -> acceptable images
		"postgres": {"postgres"},
		"redis":    {"redis", "valkey"},
		"s3":       {"versitygw", "minio"},
		"gcs":      {"fake-gcs-server"},
		"lb":       {"caddy", "nginx", "haproxy", "traefik"},
	}
	for role, images := range deps {
		t.Run(role, func(t *testing.T) {
			s, ok := c.Services[role]
			if !ok {
				t.Fatalf("no %s service", role)
			}
			if !slices.ContainsFunc(images, func(img string) bool { return strings.Contains(s.Image, img) }) {
				t.Errorf("%s runs image %q, want one of %v", role, s.Image, images)
			}
			if !strings.Contains(s.Image, ":") || strings.HasSuffix(s.Image, ":latest") {
				t.Errorf("%s image %q is not pinned to a version", role, s.Image)
			}
			if s.Healthcheck == nil || len(s.Healthcheck.Test) == 0 {
				t.Errorf("%s has no healthcheck", role)
			}
		})
	}
	for _, g := range gateways {
		t.Run(g, func(t *testing.T) {
			s := c.Services[g]
			ctx := filepath.Join(filepath.Dir(composeFile), s.Build.Context)
			if _, err := os.Stat(filepath.Join(ctx, "go.mod")); err != nil {
				t.Errorf("build context %s is not the repository root", s.Build.Context)
			}
			got, err1 := os.Stat(filepath.Join(ctx, s.Build.Dockerfile))
			want, err2 := os.Stat(dockerfilePath)
			if err1 != nil || err2 != nil || !os.SameFile(got, want) {
				t.Errorf("builds %s, want deploy/Dockerfile", s.Build.Dockerfile)
			}
			for _, dep := range []string{"postgres", "redis", "s3", "gcs"} {
				if got := s.DependsOn[dep].Condition; got != "service_healthy" {
					t.Errorf("depends_on %s with condition %q, want service_healthy", dep, got)
				}
			}
			if !s.ReadOnly {
				t.Error("read_only is not true (the Kubernetes pod's root is read-only too)")
			}
		})
	}
	lb := c.Services["lb"]
	for _, g := range gateways {
		if _, ok := lb.DependsOn[g]; !ok {
			t.Errorf("lb does not depend on %s", g)
		}
	}
}

// TestComposeGatewayConfigs: each gateway service's config loads with the
// environment compose gives it, and agrees with the stack around it.
func TestComposeGatewayConfigs(t *testing.T) {
	c := loadCompose(t)
	gateways := gatewayServices(c)
	for _, g := range gateways {
		s := c.Services[g]
		name, ok := composeBind(s, configFlag(t, s.Command))
		if !ok {
			t.Fatalf("%s: --config %s is not bind-mounted", g, configFlag(t, s.Command))
		}
		t.Run(g, func(t *testing.T) {
			data := readFile(t, name)
			for _, ref := range envRefs(t, name, data) {
				if _, ok := s.Environment[ref]; !ok {
					t.Errorf("%s references ${%s}, which %s's environment does not set", name, ref, g)
				}
			}
			cfg := parseConfig(t, name, data, s.Environment)
			checkListen(t, name, cfg)
			if cfg.Metadata.Driver == "postgres" && s.Environment[byokKeyEnv] == "" {
				t.Errorf("no %s: on PostgreSQL the gateway refuses to start without it", byokKeyEnv)
			}
			if h, ok := serviceHost(c, cfg.Metadata.DSN); !ok {
				t.Errorf("metadata.dsn points at %q, not a compose service", h)
			}
			if h, ok := serviceHost(c, cfg.Redis.URL); !ok {
				t.Errorf("redis.url points at %q, not a compose service", h)
			}
			if cfg.Redis.ReplicasHint != len(gateways) {
				t.Errorf("redis.replicas_hint %d, want %d (the gateway services)", cfg.Redis.ReplicasHint, len(gateways))
			}
			if cfg.Storage.Backend != "s3" || !cfg.Storage.S3.PathStyle {
				t.Errorf("storage %q (path_style %v): the default compose config stores files in the S3 service with path-style URLs", cfg.Storage.Backend, cfg.Storage.S3.PathStyle)
			}
			if h, ok := serviceHost(c, cfg.Storage.S3.Endpoint); !ok {
				t.Errorf("storage.s3.endpoint points at %q, not a compose service", h)
			}
			catalogFile, ok := composeBind(s, cfg.Catalog.Path)
			if !ok {
				t.Errorf("catalog.path %s is not bind-mounted", cfg.Catalog.Path)
			} else if _, err := os.Stat(catalogFile); err != nil {
				t.Errorf("catalog.path %s: %v", cfg.Catalog.Path, err)
			}

			lbAddr := ""
			for _, n := range c.Services["lb"].Networks {
				if n != nil && n.IPv4Address != "" {
					lbAddr = n.IPv4Address
				}
			}
			if !slices.Contains(cfg.Server.TrustedProxies, lbAddr) {
				t.Errorf("server.trusted_proxies %v does not hold the load balancer's address %q", cfg.Server.TrustedProxies, lbAddr)
			}

			grace, err := time.ParseDuration(s.StopGracePeriod)
			if err != nil {
				t.Fatalf("stop_grace_period %q: %v", s.StopGracePeriod, err)
			}
			if need := cfg.Server.DrainDelay + cfg.Server.ShutdownGrace + uploadCleanup; grace <= need {
				t.Errorf("stop_grace_period %v <= drain_delay + shutdown_grace + upload cleanup (%v): docker would SIGKILL a draining gateway", grace, need)
			}
		})
	}
}

// TestEveryDeployConfigLoads finds every gateway*.yaml under deploy/: each
// must be mounted into the compose gateways, load with their environment,
// and differ from the default compose config in its storage only.
func TestEveryDeployConfigLoads(t *testing.T) {
	c := loadCompose(t)
	gw := c.Services[gatewayServices(c)[0]]
	var files []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p == "testenv" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), "gateway") && strings.HasSuffix(d.Name(), ".yaml") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("found %v, want compose/gateway.yaml and compose/gateway-gcs.yaml at least", files)
	}
	mounted := map[string]bool{}
	for _, v := range gw.Volumes {
		if host, _, ok := strings.Cut(v, ":"); ok {
			mounted[filepath.Clean(filepath.Join(filepath.Dir(composeFile), host))] = true
		}
	}
	base := parseConfig(t, "compose/gateway.yaml", readFile(t, "compose/gateway.yaml"), gw.Environment)
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			if !mounted[filepath.Clean(f)] {
				t.Errorf("%s is not mounted into the compose gateways: nothing uses it", f)
			}
			data := readFile(t, f)
			for _, ref := range envRefs(t, f, data) {
				if _, ok := gw.Environment[ref]; !ok {
					t.Errorf("%s references ${%s}, which the compose gateways' environment does not set", f, ref)
				}
			}
			cfg := parseConfig(t, f, data, gw.Environment)
			checkListen(t, f, cfg)
			if cfg.Storage.Backend == "gcs" {
				if h, ok := serviceHost(c, cfg.Storage.GCS.Endpoint); !ok {
					t.Errorf("storage.gcs.endpoint points at %q, not a compose service", h)
				}
			}
			cfg.Storage, base.Storage = configs.Storage{}, configs.Storage{}
			if !reflect.DeepEqual(cfg, base) {
				t.Errorf("%s differs from compose/gateway.yaml beyond storage:\n%+v\n%+v", f, cfg, base)
			}
		})
	}
}

func TestCaddyfileBalancesTheGateways(t *testing.T) {
	c := loadCompose(t)
	lb := c.Services["lb"]
	caddyfile, ok := composeBind(lb, "/etc/caddy/Caddyfile")
	if !ok {
		t.Fatal("the lb service does not mount a Caddyfile at /etc/caddy/Caddyfile")
	}
	text := string(readFile(t, caddyfile))
	for _, g := range gatewayServices(c) {
		if !strings.Contains(text, fmt.Sprintf("%s:%d", g, listenPort)) {
			t.Errorf("Caddyfile does not proxy to %s:%d", g, listenPort)
		}
	}
	if !regexp.MustCompile(`(?m)^\s*health_uri\s+/readyz\s*$`).MatchString(text) {
		t.Error("Caddyfile does not health-check /readyz: a draining gateway would keep getting requests")
	}
	if !strings.Contains(strings.Join(lb.Healthcheck.Test, " "), "/readyz") {
		t.Errorf("lb healthcheck %v does not go through to a gateway's /readyz", lb.Healthcheck.Test)
	}
}

// ---- Dockerfile ---------------------------------------------------------

type instruction struct {
	cmd  string // upper case
	args string
}

type stage struct {
	from, name string
	instrs     []instruction
}

// parseDockerfile splits a Dockerfile into stages of instructions, joining
// continuation lines and dropping comments.
func parseDockerfile(t *testing.T, data []byte) []stage {
	t.Helper()
	var stages []stage
	var logical strings.Builder
	flush := func() {
		line := strings.TrimSpace(logical.String())
		logical.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			s := stage{}
			for i := 0; i < len(f); i++ {
				switch {
				case strings.HasPrefix(f[i], "--"):
				case strings.EqualFold(f[i], "AS") && i+1 < len(f):
					s.name = f[i+1]
					i++
				case s.from == "":
					s.from = f[i]
				}
			}
			stages = append(stages, s)
			return
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				t.Fatalf("Dockerfile: %s before the first FROM", in.cmd)
			}
			return
		}
		stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
	}
	for _, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			logical.WriteString(cont + " ")
			continue
		}
		logical.WriteString(line)
		flush()
	}
	flush()
	return stages
}

func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t, readFile(t, dockerfilePath))
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a builder and a runtime stage", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]

	t.Run("builder", func(t *testing.T) {
		if !strings.HasPrefix(build.from, "golang:") {
			t.Errorf("builder FROM %s, want a golang image", build.from)
		}
		download, firstSource, buildAt := -1, -1, -1
		for i, in := range build.instrs {
			switch {
			case in.cmd == "RUN" && strings.Contains(in.args, "go mod download"):
				download = i
			case in.cmd == "COPY" && firstSource < 0 && !strings.Contains(in.args, "go.mod"):
				firstSource = i
			case in.cmd == "RUN" && strings.Contains(in.args, "go build"):
				buildAt = i
				for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-s -w", "./cmd/gateway"} {
					if !strings.Contains(in.args, want) {
						t.Errorf("go build step lacks %s: %s", want, in.args)
					}
				}
			}
		}
		if download < 0 {
			t.Error("no `go mod download` step: modules would be fetched on every source change")
		} else if firstSource >= 0 && download > firstSource {
			t.Error("`go mod download` runs after the sources are copied, so its layer is rebuilt on every edit")
		}
		if buildAt < 0 {
			t.Fatal("no go build step")
		}
	})

	t.Run("Go version follows go.mod", func(t *testing.T) {
		m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(readFile(t, filepath.Join(repoRoot, "go.mod")))
		if m == nil {
			t.Fatal("no go directive in go.mod")
		}
		arg := regexp.MustCompile(`(?m)^ARG GO_VERSION=(\S+)`).FindSubmatch(readFile(t, dockerfilePath))
		if arg == nil {
			t.Fatal("no ARG GO_VERSION= default in the Dockerfile")
		}
		if v := string(arg[1]); v != string(m[1]) && !strings.HasPrefix(v, string(m[1])+".") {
			t.Errorf("builder Go %s, go.mod asks for %s", v, m[1])
		}
	})

	t.Run("every package the binary needs is copied", func(t *testing.T) {
		copied := map[string]bool{}
		for _, in := range build.instrs {
			if in.cmd != "COPY" || strings.Contains(in.args, "--from") {
				continue
			}
			f := strings.Fields(in.args)
			for _, src := range f[:len(f)-1] {
				copied[strings.Trim(path.Clean(src), "/")] = true
			}
		}
		for _, want := range []string{"go.mod", "go.sum"} {
			if !copied[want] {
				t.Errorf("%s is not copied", want)
			}
		}
		if copied["."] {
			return // the whole context
		}
		cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./cmd/gateway")
		cmd.Dir = repoRoot
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("go list: %v\n%s", err, ee.Stderr)
			}
			t.Fatal(err)
		}
		for _, pkg := range strings.Fields(string(out)) {
			rel, ok := strings.CutPrefix(pkg, modulePath+"/")
			if !ok {
				continue
			}
			top, _, _ := strings.Cut(rel, "/")
			if !copied[top] {
				t.Errorf("./cmd/gateway imports %s, but the Dockerfile does not COPY %s/", pkg, top)
			}
		}
	})

	t.Run("runtime", func(t *testing.T) {
		distrolessNonroot := strings.Contains(final.from, "distroless") && strings.Contains(final.from, "nonroot")
		user := ""
		for _, in := range final.instrs {
			if in.cmd == "USER" {
				user = in.args
			}
			if in.cmd == "RUN" {
				t.Errorf("RUN in the runtime stage: %s (it has no shell)", in.args)
			}
		}
		name, _, _ := strings.Cut(user, ":")
		switch {
		case user != "" && (name == "root" || name == "0"):
			t.Errorf("runtime stage runs as %q", user)
		case user == "" && !distrolessNonroot:
			t.Errorf("runtime stage %s sets no non-root USER", final.from)
		}
		if !strings.Contains(final.from, "distroless") && final.from != "scratch" {
			t.Errorf("runtime FROM %s, want distroless or scratch", final.from)
		}
	})

	t.Run("entrypoint", func(t *testing.T) {
		var entry, cmdArgs []string
		exposed := false
		for _, in := range final.instrs {
			switch in.cmd {
			case "ENTRYPOINT":
				if err := yaml.Unmarshal([]byte(in.args), &entry); err != nil {
					t.Errorf("ENTRYPOINT is not an exec-form list (signals must reach the gateway directly): %s", in.args)
				}
			case "CMD":
				if err := yaml.Unmarshal([]byte(in.args), &cmdArgs); err != nil {
					t.Errorf("CMD is not an exec-form list: %s", in.args)
				}
			case "EXPOSE":
				exposed = exposed || slices.Contains(strings.Fields(in.args), strconv.Itoa(listenPort))
			}
		}
		if len(entry) < 2 || entry[len(entry)-1] != "serve" {
			t.Errorf("ENTRYPOINT %v, want the gateway binary with serve", entry)
		}
		if !exposed {
			t.Errorf("no EXPOSE %d", listenPort)
		}
		c := loadCluster(t)
		if got := configFlag(t, cmdArgs); got != c.configName {
			t.Errorf("CMD --config %s, but the Deployment mounts %s", got, c.configName)
		}
	})
}
