package configs

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aigateway/gateway/files/blob"
	"gopkg.in/yaml.v3"
)

// Error lists every problem found in a configuration, each naming the path
// of the offending key ("server.listen: ...").
type Error struct {
	Problems []string
}

func (e *Error) Error() string {
	return "invalid configuration:\n  " + strings.Join(e.Problems, "\n  ")
}

// LoadFile reads and parses the configuration at path.
func LoadFile(path string, getenv func(string) string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	return Parse(data, getenv)
}

// Parse decodes YAML onto Default(), expands ${VAR} from getenv in scalar
// values, and validates the result. It returns *Error listing every problem.
func Parse(data []byte, getenv func(string) string) (Config, error) {
	cfg := Default()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return cfg, &Error{Problems: []string{err.Error()}}
	}
	if len(doc.Content) == 0 { // empty file: all defaults
		return cfg, cfg.Validate()
	}
	root := doc.Content[0]
	var problems []string
	lines := map[int]string{}
	walk(root, reflect.TypeOf(cfg), "", lines, &problems, getenv)
	if len(problems) > 0 {
		return cfg, &Error{Problems: problems}
	}

	// walk already refused unknown keys with their paths, which yaml.v3's
	// KnownFields cannot name; decoding the checked tree leaves type errors.
	if err := root.Decode(&cfg); err != nil {
		return cfg, &Error{Problems: placeErrors(err, lines)}
	}
	return cfg, cfg.Validate()
}

var durationType = reflect.TypeOf(time.Duration(0))

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// walk expands ${VAR} in scalars, records the path of every line and reports
// keys that the target type does not have.
func walk(n *yaml.Node, t reflect.Type, path string, lines map[int]string, problems *[]string, getenv func(string) string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if path != "" {
		if _, seen := lines[n.Line]; !seen {
			lines[n.Line] = path
		}
	}
	switch n.Kind {
	case yaml.ScalarNode:
		// A duration written as a bare number: yaml.v3 refuses every
		// integer for a time.Duration, "0" included, which the README
		// offers for switching things off. As a string it goes through
		// time.ParseDuration like any other duration: 0 is zero, and 5
		// is refused for its missing unit rather than taken as 5 ns.
		if t == durationType && n.Tag == "!!int" {
			n.Tag = "!!str"
		}
		if n.Tag == "!!str" || strings.Contains(n.Value, "${") {
			n.Value = envRef.ReplaceAllStringFunc(n.Value, func(ref string) string {
				name := ref[2 : len(ref)-1]
				v := getenv(name)
				if v == "" {
					*problems = append(*problems, fmt.Sprintf("%s: environment variable %s is not set", path, name))
				}
				return v
			})
		}
	case yaml.MappingNode:
		if t.Kind() != reflect.Struct {
			return // type errors are reported by the decoder
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			child := joinPath(path, key.Value)
			lines[key.Line] = child
			f, ok := fieldByTag(t, key.Value)
			if !ok {
				*problems = append(*problems, fmt.Sprintf("%s: unknown key", child))
				continue
			}
			walk(val, f.Type, child, lines, problems, getenv)
		}
	case yaml.SequenceNode:
		if t.Kind() != reflect.Slice {
			return
		}
		for i, item := range n.Content {
			walk(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), lines, problems, getenv)
		}
	}
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

var lineNumber = regexp.MustCompile(`^line (\d+): `)

// placeErrors turns the decoder's "line N: ..." messages into "path: ...".
func placeErrors(err error, lines map[int]string) []string {
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		if sub := lineNumber.FindStringSubmatch(m); sub != nil {
			n, _ := strconv.Atoi(sub[1])
			if p, ok := lines[n]; ok {
				m = p + ": " + strings.TrimPrefix(m, sub[0])
			}
		}
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// Validate checks every value and returns *Error listing all problems, or nil.
func (c *Config) Validate() error {
	var p problems

	if _, _, err := net.SplitHostPort(c.Server.Listen); err != nil {
		p.add("server.listen", "want host:port, got %q", c.Server.Listen)
	}
	p.positive("server.read_header_timeout", int64(c.Server.ReadHeaderTimeout))
	p.positive("server.idle_timeout", int64(c.Server.IdleTimeout))
	p.positive("server.body_read_timeout", int64(c.Server.BodyReadTimeout))
	p.nonNegative("server.min_upload_rate", int64(c.Server.MinUploadRate))
	p.nonNegative("server.max_connections", int64(c.Server.MaxConnections))
	p.nonNegative("server.max_connections_per_client", int64(c.Server.MaxConnectionsPerClient))
	p.nonNegative("server.lingering_close.max_bytes", int64(c.Server.LingeringClose.MaxBytes))
	p.positive("server.lingering_close.timeout", int64(c.Server.LingeringClose.Timeout))
	p.nonNegative("server.shutdown_grace", int64(c.Server.ShutdownGrace))
	p.nonNegative("server.drain_delay", int64(c.Server.DrainDelay))
	for i, cidr := range c.Server.TrustedProxies {
		if _, err := parsePrefix(cidr); err != nil {
			p.add(fmt.Sprintf("server.trusted_proxies[%d]", i), "%q is not an IP address or CIDR", cidr)
		}
	}
	if c.Server.MaxHeaderBytes < 4<<10 || c.Server.MaxHeaderBytes > 1<<20 {
		p.add("server.max_header_bytes", "must be between 4KiB and 1MiB")
	}

	c.validateTelemetry(&p)
	p.positive("audit.retention", int64(c.Audit.Retention))

	p.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	p.oneOf("log.format", c.Log.Format, "json", "console")

	p.oneOf("metadata.driver", c.Metadata.Driver, "sqlite", "postgres")
	switch {
	case c.Metadata.DSN == "":
		p.add("metadata.dsn", "must be set")
	case c.Metadata.Driver == "postgres" && !strings.HasPrefix(c.Metadata.DSN, "postgres://") && !strings.HasPrefix(c.Metadata.DSN, "postgresql://"):
		p.add("metadata.dsn", "must be a postgres:// URL for the postgres driver")
	}

	if c.Redis.URL != "" {
		if u, err := url.Parse(c.Redis.URL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			p.add("redis.url", "must be a redis:// or rediss:// URL")
		}
		if len(c.Redis.Addrs) > 0 {
			p.add("redis.addrs", "set either redis.url or redis.addrs, not both")
		}
	}
	if t := c.Redis.TLS; (t.CertFile == "") != (t.KeyFile == "") {
		p.add("redis.tls", "cert_file and key_file go together")
	}
	if t := c.Redis.TLS; !t.Enabled && (t.CAFile != "" || t.ServerName != "" || t.CertFile != "") && !strings.HasPrefix(c.Redis.URL, "rediss://") {
		p.add("redis.tls.enabled", "must be true for the other tls settings to apply")
	}
	if c.Redis.MasterName != "" && len(c.Redis.Addrs) == 0 {
		p.add("redis.master_name", "needs redis.addrs: the Sentinels' addresses")
	}
	for i, a := range c.Redis.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			p.add(fmt.Sprintf("redis.addrs[%d]", i), "want host:port, got %q", a)
		}
	}
	p.positive("redis.timeout", int64(c.Redis.Timeout))
	if c.Redis.ReplicasHint < 1 {
		p.add("redis.replicas_hint", "must be at least 1")
	}

	if c.Catalog.Path == "" {
		p.add("catalog.path", "must be set")
	}

	p.oneOf("storage.backend", c.Storage.Backend, "fs", "s3", "gcs")
	switch c.Storage.Backend {
	case "fs":
		if c.Storage.FS.Dir == "" {
			p.add("storage.fs.dir", "must be set for the fs backend")
		}
	case "s3":
		// The location rules are the backends' own, so the file is refused
		// before start-up for exactly what a backend would refuse. The region
		// is not checked here: the S3 backend takes it from the SDK's chain
		// (AWS_REGION, a profile) when the file leaves it out.
		p.location("storage.s3", c.Storage.S3.Bucket, c.Storage.S3.Endpoint, c.Storage.S3.Prefix)
	case "gcs":
		p.location("storage.gcs", c.Storage.GCS.Bucket, c.Storage.GCS.Endpoint, c.Storage.GCS.Prefix)
	}

	for name, pr := range map[string]Provider{"openai": c.Providers.OpenAI, "anthropic": c.Providers.Anthropic} {
		if pr.BaseURL == "" {
			p.add("providers."+name+".base_url", "must be set")
		} else {
			p.optionalURL("providers."+name+".base_url", pr.BaseURL)
		}
		p.positive("providers."+name+".timeout", int64(pr.Timeout))
	}

	p.positive("limits.max_file_bytes", int64(c.Limits.MaxFileBytes))
	if c.Limits.WorkspaceStorageBytes < c.Limits.MaxFileBytes {
		p.add("limits.workspace_storage_bytes", "must be at least limits.max_file_bytes")
	}
	p.positive("limits.upload_bytes.bytes", int64(c.Limits.UploadBytes.Bytes))
	p.positive("limits.upload_bytes.per", int64(c.Limits.UploadBytes.Per))
	if c.Limits.UploadsInFlightPerKey < 1 {
		p.add("limits.uploads_in_flight_per_key", "must be at least 1")
	}
	p.positive("uploads.max_bytes", int64(c.Uploads.MaxBytes))
	p.positive("uploads.ttl", int64(c.Uploads.TTL))
	if c.Uploads.PendingPerWorkspace < 1 {
		p.add("uploads.pending_per_workspace", "must be at least 1")
	}
	if c.Sweeper.Interval < 0 {
		p.add("sweeper.interval", "must not be negative (0 turns the sweeper off)")
	}
	if c.Sweeper.Batch < 1 {
		p.add("sweeper.batch", "must be at least 1")
	}
	// An unfinished upload older than the grace is taken for a crash's
	// leftover: the grace must outlast the slowest upload the limits allow.
	if c.Sweeper.Interval > 0 && c.Server.MinUploadRate > 0 {
		longest := c.Server.BodyReadTimeout + time.Duration(float64(c.Limits.MaxFileBytes)/float64(c.Server.MinUploadRate)*float64(time.Second))
		if c.Sweeper.Grace <= longest {
			p.add("sweeper.grace", "must be longer than the longest upload the limits allow (%v: body_read_timeout + max_file_bytes / min_upload_rate)", longest.Round(time.Second))
		}
	} else if c.Sweeper.Interval > 0 {
		// Without a minimum rate an upload may trickle for ever: no grace
		// outlasts it, and the sweeper would take a live upload's parts.
		p.add("sweeper.interval", "must be 0 (the sweeper off) while server.min_upload_rate is 0: an upload may then last longer than any grace")
	}
	if c.Limits.UploadLease < 3*time.Second {
		// Renewed every third of it: below a second apart the store is
		// asked too often, and a slow round trip would lose uploads.
		p.add("limits.upload_lease", "must be at least 3s")
	}
	for name, r := range map[string]Rate{"default": c.Limits.Rate.Default, "files": c.Limits.Rate.Files, "usage": c.Limits.Rate.Usage, "auth_failures": c.Limits.Rate.AuthFailures} {
		path := "limits.rate." + name
		p.positive(path+".requests", int64(r.Requests))
		p.positive(path+".per", int64(r.Per))
		p.nonNegative(path+".burst", int64(r.Burst))
	}
	if c.Console.Enabled {
		p.positive("console.session_ttl", int64(c.Console.SessionTTL))
	}

	return p.err()
}

type problems []string

func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, path+": "+fmt.Sprintf(format, args...))
}

// location adds the backends' problems with an object store's location.
func (p *problems) location(section, bucket, endpoint, prefix string) {
	for _, err := range blob.LocationProblems(section, bucket, endpoint, prefix) {
		*p = append(*p, err.Error())
	}
}

func (p *problems) positive(path string, v int64) {
	if v <= 0 {
		p.add(path, "must be greater than zero")
	}
}

func (p *problems) nonNegative(path string, v int64) {
	if v < 0 {
		p.add(path, "must not be negative")
	}
}

func (p *problems) oneOf(path, v string, allowed ...string) {
	if !slices.Contains(allowed, v) {
		p.add(path, "%q is not one of %s", v, strings.Join(allowed, ", "))
	}
}

func (p *problems) optionalURL(path, v string) {
	if v == "" {
		return
	}
	if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.add(path, "must be an http:// or https:// URL")
	}
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	sort.Strings(p)
	return &Error{Problems: p}
}

// parsePrefix accepts a CIDR or a single address.
func parsePrefix(s string) (netip.Prefix, error) {
	if pfx, err := netip.ParsePrefix(s); err == nil {
		return pfx.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// TrustedPrefixes returns server.trusted_proxies parsed; call after Validate.
func (s Server) TrustedPrefixes() []netip.Prefix {
	out := make([]netip.Prefix, 0, len(s.TrustedProxies))
	for _, v := range s.TrustedProxies {
		if pfx, err := parsePrefix(v); err == nil {
			out = append(out, pfx)
		}
	}
	return out
}

func (c *Config) validateTelemetry(p *problems) {
	t := c.Telemetry.Traces
	if t.Protocol != "" {
		p.oneOf("telemetry.traces.protocol", t.Protocol, "http/protobuf", "grpc")
	}
	if r := t.SampleRatio; !(r >= 0 && r <= 1) {
		p.add("telemetry.traces.sample_ratio", "must be between 0 and 1")
	}
	if t.Endpoint != "" && strings.Contains(t.Endpoint, "://") {
		if u, err := url.Parse(t.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.add("telemetry.traces.endpoint", "must be an http:// or https:// URL, or host:port")
		}
	}
	for name := range t.Headers {
		if name == "" || strings.ContainsAny(name, " \t\r\n:") {
			p.add("telemetry.traces.headers", "%q is not a header name", name)
		}
	}
}
