// Package configs is the gateway's YAML configuration and the files it
// ships: gateway.yaml (the embedded default), production.example.yaml and
// models.yaml (the catalog). Loading starts from the defaults, decodes
// strictly (an unknown key is an error naming its path), expands ${VAR}
// from the environment, then validates once, reporting every problem at
// once.
package configs

import (
	"fmt"
	"time"

	"github.com/dustin/go-humanize"
	"gopkg.in/yaml.v3"
)

// Config is the whole configuration of one gateway process.
type Config struct {
	Server    Server    `yaml:"server"`
	Log       Log       `yaml:"log"`
	Metadata  Metadata  `yaml:"metadata"`
	Redis     Redis     `yaml:"redis"`
	Catalog   Catalog   `yaml:"catalog"`
	Storage   Storage   `yaml:"storage"`
	Providers Providers `yaml:"providers"`
	Limits    Limits    `yaml:"limits"`
	Files     Files     `yaml:"files"`
	Uploads   Uploads   `yaml:"uploads"`
	Sweeper   Sweeper   `yaml:"sweeper"`
	Console   Console   `yaml:"console"`
	Telemetry Telemetry `yaml:"telemetry"`
	Audit     Audit     `yaml:"audit"`
}

// Telemetry configures what the gateway exports about its own work.
type Telemetry struct {
	Traces Traces `yaml:"traces"`
}

// Traces configures OpenTelemetry traces, exported by OTLP. Off (no
// endpoint, and no OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT in the
// environment) the gateway makes no spans at all. The standard OTEL_*
// variables fill in what the YAML leaves unset.
type Traces struct {
	// Endpoint is the collector's OTLP endpoint: a URL for protocol
	// http/protobuf ("http://collector:4318"; /v1/traces is appended when
	// it has no path), host:port or a URL for grpc.
	Endpoint string `yaml:"endpoint"`
	// Protocol is "http/protobuf" or "grpc" (OTEL_EXPORTER_OTLP_PROTOCOL
	// when unset; else http/protobuf).
	Protocol string `yaml:"protocol"`
	// SampleRatio is the share of traces started here that are recorded,
	// 0 to 1; a caller's sampled traceparent is always followed.
	SampleRatio float64 `yaml:"sample_ratio"`
	// Headers are sent with every export (an authorization token, say;
	// ${VAR} keeps it out of the file).
	Headers map[string]string `yaml:"headers"`
	// Insecure sends to the endpoint without TLS (plain http or an
	// insecure gRPC connection). An http:// endpoint implies it.
	Insecure bool `yaml:"insecure"`
}

// Audit configures the record of management actions.
type Audit struct {
	// Retention is how long an entry is kept; older ones are deleted in
	// the background.
	Retention time.Duration `yaml:"retention"`
}

// Console configures the console in the browser, served under /console/.
type Console struct {
	// Enabled serves the console; off, /console/ is an unknown path of
	// the API (404).
	Enabled bool `yaml:"enabled"`
	// SessionTTL bounds how long a sign-in lasts; revoking the key ends
	// it at once.
	SessionTTL time.Duration `yaml:"session_ttl"`
}

// Files configures the read side of the file routes.
type Files struct {
	// Downloadable lets every key read back the content of uploaded files
	// (GET /files/{id}/content) and says so in every File's downloadable.
	// Off by default, as in the public service: then only service keys
	// may read content.
	Downloadable bool `yaml:"downloadable"`
}

// Server configures the HTTP listener. There is deliberately no global write
// timeout: uploads of 100 MiB over slow links are legitimate, so deadlines
// are set per route instead.
type Server struct {
	Listen            string        `yaml:"listen"`
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	IdleTimeout       time.Duration `yaml:"idle_timeout"`
	// ShutdownGrace bounds how long in-flight requests may run after SIGTERM.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
	// DrainDelay is how long /readyz fails before the listener closes, so the
	// load balancer stops sending new requests first.
	DrainDelay time.Duration `yaml:"drain_delay"`
	// TrustedProxies are the CIDRs whose X-Forwarded-For entries are skipped
	// when finding the client address.
	TrustedProxies []string `yaml:"trusted_proxies"`
	MaxHeaderBytes ByteSize `yaml:"max_header_bytes"`
	// BodyReadTimeout bounds how long a request body may take to arrive;
	// for uploads, how long one may stay idle.
	BodyReadTimeout time.Duration `yaml:"body_read_timeout"`
	// MinUploadRate is the least an upload's body may average once
	// BodyReadTimeout has passed since it began; 0 means no minimum.
	MinUploadRate ByteSize `yaml:"min_upload_rate"`
	// MaxConnections caps the connections open at once (keep it well below
	// the process's file descriptor limit); 0 means no cap.
	MaxConnections int `yaml:"max_connections"`
	// MaxConnectionsPerClient caps the connections one peer address may
	// hold open; trusted proxies are exempt. 0 means no cap.
	MaxConnectionsPerClient int `yaml:"max_connections_per_client"`
	// LingeringClose bounds the reading of a body still coming when its
	// request is refused early (a 413 by declared length, a 401 before an
	// upload), so clients that send everything before reading get the answer.
	LingeringClose LingeringClose `yaml:"lingering_close"`
}

// LingeringClose is how much of a refused request's body is read and
// dropped, and for how long at most, before its connection closes.
// MaxBytes 0 turns it off (the connection closes on the unread body).
type LingeringClose struct {
	MaxBytes ByteSize      `yaml:"max_bytes"`
	Timeout  time.Duration `yaml:"timeout"`
}

// Log configures the zap logger.
type Log struct {
	Level  string `yaml:"level"`  // debug | info | warn | error
	Format string `yaml:"format"` // json | console
}

// Metadata selects the SQL store of users, keys, workspaces and files.
type Metadata struct {
	Driver string `yaml:"driver"` // sqlite | postgres
	DSN    string `yaml:"dsn"`    // a file path for sqlite, a postgres:// URL for postgres
}

// Redis configures the shared limiter state. Empty URL and Addrs mean
// in-process limits, correct only for a single replica.
type Redis struct {
	URL string `yaml:"url"` // redis:// or rediss://
	// Addrs lists cluster seed nodes; when set, a cluster client is used,
	// or, with MasterName, the Sentinels that know the master.
	Addrs []string `yaml:"addrs"`
	// MasterName is the name of the master the Sentinels in Addrs
	// monitor: set, the client asks them where the master is and follows
	// its failovers.
	MasterName string `yaml:"master_name"`
	Username   string `yaml:"username"`
	Password   string `yaml:"password"`
	// SentinelUsername and SentinelPassword authenticate to the Sentinels
	// themselves (Sentinel's requirepass or ACL user).
	SentinelUsername string `yaml:"sentinel_username"`
	SentinelPassword string `yaml:"sentinel_password"`
	// TLS secures every connection to Redis, whatever the topology.
	TLS RedisTLS `yaml:"tls"`
	// Timeout bounds every Redis call; past it the limiter falls back to
	// local limits rather than make a request wait.
	Timeout time.Duration `yaml:"timeout"`
	// ReplicasHint is how many gateway replicas share the limits; each one
	// allows limit/replicas while Redis is unreachable.
	ReplicasHint int    `yaml:"replicas_hint"`
	KeyPrefix    string `yaml:"key_prefix"`
}

// RedisTLS says how to trust Redis's certificates and, optionally, which
// certificate the gateway shows. A rediss:// URL turns TLS on by itself.
type RedisTLS struct {
	Enabled    bool   `yaml:"enabled"`
	CAFile     string `yaml:"ca_file"`     // PEM bundle; empty: the system's authorities
	ServerName string `yaml:"server_name"` // the name in the servers' certificates, when not the host dialled
	CertFile   string `yaml:"cert_file"`   // the gateway's own certificate and key, both or neither
	KeyFile    string `yaml:"key_file"`
}

// Enabled reports whether a Redis server is configured.
func (r Redis) Enabled() bool { return r.URL != "" || len(r.Addrs) > 0 }

// Catalog locates the model catalog file.
type Catalog struct {
	Path string `yaml:"path"`
}

// Storage selects the native file storage backend.
type Storage struct {
	Backend string    `yaml:"backend"` // fs | s3 | gcs
	FS      FSStorage `yaml:"fs"`
	S3      S3Storage `yaml:"s3"`
	GCS     GCSBucket `yaml:"gcs"`
}

// FSStorage stores files under a local directory.
type FSStorage struct {
	Dir string `yaml:"dir"`
}

// S3Storage stores files in an S3 bucket or an S3-compatible server.
// Credentials come from the SDK's standard chain, never from this file.
type S3Storage struct {
	Bucket    string `yaml:"bucket"`
	Region    string `yaml:"region"`
	Endpoint  string `yaml:"endpoint"`
	PathStyle bool   `yaml:"path_style"`
	Prefix    string `yaml:"prefix"`
}

// GCSBucket stores files in Google Cloud Storage (or its emulator when
// Endpoint is set). Credentials come from Application Default Credentials.
type GCSBucket struct {
	Bucket   string `yaml:"bucket"`
	Endpoint string `yaml:"endpoint"`
	Prefix   string `yaml:"prefix"`
}

// Providers locates the BYOK providers' Files APIs.
type Providers struct {
	OpenAI    Provider `yaml:"openai"`
	Anthropic Provider `yaml:"anthropic"`
}

// Provider is one BYOK provider endpoint.
type Provider struct {
	BaseURL string        `yaml:"base_url"`
	Timeout time.Duration `yaml:"timeout"`
}

// Limits are the per-file, per-workspace and per-key limits.
type Limits struct {
	MaxFileBytes          ByteSize `yaml:"max_file_bytes"`
	WorkspaceStorageBytes ByteSize `yaml:"workspace_storage_bytes"`
	// UploadBytes is a rolling byte budget per workspace for uploads.
	UploadBytes ByteBudget `yaml:"upload_bytes"`
	// UploadsInFlightPerKey caps concurrent uploads of one key.
	UploadsInFlightPerKey int `yaml:"uploads_in_flight_per_key"`
	// UploadLease is how long what an upload holds (its quota reservation,
	// its in-flight slot) outlives a replica that died mid-upload. Live
	// uploads renew it every third of it.
	UploadLease time.Duration `yaml:"upload_lease"`
	Rate        Rates         `yaml:"rate"`
}

// Uploads are the limits of resumable uploads: files sent in parts and
// assembled in storage (POST /uploads).
type Uploads struct {
	// MaxBytes is the largest file an upload may declare.
	MaxBytes ByteSize `yaml:"max_bytes"`
	// TTL is how long an upload may stay pending; its quota reservation
	// lapses then, and the sweeper removes its parts.
	TTL time.Duration `yaml:"ttl"`
	// PendingPerWorkspace caps the uploads a workspace may hold pending.
	PendingPerWorkspace int `yaml:"pending_per_workspace"`
}

// Sweeper collects what crashes and lapsed records leave behind; every
// replica runs one.
type Sweeper struct {
	// Interval between passes; 0 turns the sweeper off.
	Interval time.Duration `yaml:"interval"`
	// Grace is how old an object without a record, or an unfinished
	// upload, must be before it is removed. Longer than the longest upload.
	Grace time.Duration `yaml:"grace"`
	// Batch bounds the items of each kind one pass handles.
	Batch int `yaml:"batch"`
}

// Rates are the request rate limits per route class.
type Rates struct {
	Enabled *bool `yaml:"enabled"`
	Default Rate  `yaml:"default"`
	Files   Rate  `yaml:"files"`
	// Usage limits usage reports per key: the other components report a
	// fleet's requests with one service key.
	Usage Rate `yaml:"usage"`
	// AuthFailures limits failed authentications per client address: past
	// it the address's wrong keys get 429, its right keys still pass.
	AuthFailures Rate `yaml:"auth_failures"`
}

// On reports whether rate limiting is enabled (the default).
func (r Rates) On() bool { return r.Enabled == nil || *r.Enabled }

// Rate is a GCRA limit: Requests per Per, with Burst extra.
type Rate struct {
	Requests int           `yaml:"requests"`
	Per      time.Duration `yaml:"per"`
	Burst    int           `yaml:"burst"`
}

// ByteBudget is a byte allowance per period.
type ByteBudget struct {
	Bytes ByteSize      `yaml:"bytes"`
	Per   time.Duration `yaml:"per"`
}

// ByteSize is a number of bytes written either as an integer or with a unit
// ("100MiB", "20GiB", "10 GB").
type ByteSize int64

// UnmarshalYAML accepts integers and humanized sizes.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	var i int64
	if err := n.Decode(&i); err == nil {
		*b = ByteSize(i)
		return nil
	}
	var s string
	if err := n.Decode(&s); err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a byte size such as 104857600 or 100MiB", n.Line)}}
	}
	v, err := humanize.ParseBytes(s)
	if err != nil || v > 1<<62 {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not a byte size (e.g. 104857600 or 100MiB)", n.Line, s)}}
	}
	*b = ByteSize(v)
	return nil
}

// Default returns the embedded-default configuration: one machine, SQLite,
// local disk, in-process limits.
func Default() Config {
	return Config{
		Server: Server{
			Listen:            "127.0.0.1:8080",
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       120 * time.Second,
			ShutdownGrace:     30 * time.Second,
			MaxHeaderBytes:    64 << 10,
			BodyReadTimeout:   30 * time.Second,
			MinUploadRate:     10 << 10, // a 100 MiB upload may take up to 3 hours
			// Below the usual descriptor limits (the container sets its
			// own), with room for storage, database and Redis connections.
			MaxConnections:          8192,
			MaxConnectionsPerClient: 256,
			// Enough for an upload a little over the default file limit to
			// finish arriving on a reasonable link, then read its 413.
			LingeringClose: LingeringClose{MaxBytes: 128 << 20, Timeout: 30 * time.Second},
		},
		Log:      Log{Level: "info", Format: "json"},
		Metadata: Metadata{Driver: "sqlite", DSN: "./data/gateway.db"},
		Redis:    Redis{Timeout: 200 * time.Millisecond, ReplicasHint: 1, KeyPrefix: "gw:"},
		Catalog:  Catalog{Path: "configs/models.yaml"},
		Storage:  Storage{Backend: "fs", FS: FSStorage{Dir: "./data/files"}},
		Providers: Providers{
			OpenAI:    Provider{BaseURL: "https://api.openai.com/v1", Timeout: 10 * time.Minute},
			Anthropic: Provider{BaseURL: "https://api.anthropic.com", Timeout: 10 * time.Minute},
		},
		Sweeper:   Sweeper{Interval: time.Minute, Grace: 6 * time.Hour, Batch: 500},
		Uploads:   Uploads{MaxBytes: 8 << 30, TTL: time.Hour, PendingPerWorkspace: 100},
		Console:   Console{Enabled: true, SessionTTL: 12 * time.Hour},
		Audit:     Audit{Retention: 400 * 24 * time.Hour},
		Telemetry: Telemetry{Traces: Traces{SampleRatio: 1}},
		Limits: Limits{
			MaxFileBytes:          104_857_600,
			WorkspaceStorageBytes: 10 << 30,
			UploadBytes:           ByteBudget{Bytes: 20 << 30, Per: time.Hour},
			UploadsInFlightPerKey: 8,
			UploadLease:           time.Minute,
			Rate: Rates{
				// Bursts of 1,000: a folder import of 1,000 small files
				// (uploads pass both classes) goes through at any speed,
				// with 4 clients or more; past it, a key's uploads go at 5
				// a second, enough to end a 2,000-file import in under 4
				// minutes and little for an abuser, whose bytes the upload
				// byte budget and the workspace quota bound anyway.
				Default: Rate{Requests: 600, Per: time.Minute, Burst: 1000},
				Files:   Rate{Requests: 300, Per: time.Minute, Burst: 1000},
				// Batches of up to 1,000 reports: 100 a second carry
				// 100,000 reports a second for the whole fleet.
				Usage: Rate{Requests: 6000, Per: time.Minute, Burst: 600},
				// Generous for a misconfigured client, far too slow to
				// guess a key: 30 tries at once, then one every 2 s.
				AuthFailures: Rate{Requests: 30, Per: time.Minute, Burst: 30},
			},
		},
	}
}
