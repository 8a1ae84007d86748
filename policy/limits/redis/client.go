package redis

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/redis/go-redis/extra/redisotel/v9"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.uber.org/zap"

	"github.com/aigateway/gateway/internal/telemetry"
)

// ErrInvalidConfig is wrapped by every error of NewClient.
var ErrInvalidConfig = errors.New("invalid redis configuration")

// DefaultTimeout bounds every dial, read and write of a client made by
// NewClient when ClientOptions leaves Timeout zero.
const DefaultTimeout = 200 * time.Millisecond

// ClientOptions says how to reach Redis. Exactly one of URL and Addrs
// must be set.
type ClientOptions struct {
	// URL is a redis:// or rediss:// (TLS) URL of a single server, with
	// optional user, password and database:
	// redis://user:pass@host:6379/0.
	URL string
	// Addrs are seed nodes of a Redis Cluster, or the Sentinels when
	// MasterName is set.
	Addrs []string
	// MasterName selects Sentinel: the name of the monitored master.
	MasterName string
	// Username and Password, when set, override the URL's (keep secrets
	// out of committed files: pass them from the environment).
	Username string
	Password string
	// SentinelUsername and SentinelPassword authenticate to the
	// Sentinels themselves, which may have credentials of their own.
	SentinelUsername string
	SentinelPassword string
	// TLS, when set, secures every connection: to a single server (a
	// rediss:// URL turns TLS on by itself), to every Cluster node, to
	// the Sentinels and to the master they name.
	TLS *TLSOptions

	// Timeout bounds each dial, read and write (default
	// DefaultTimeout). Keep it small: a request waits at most this long
	// for a limit decision before the failover limiter answers locally.
	Timeout time.Duration
	// DialTimeout overrides Timeout for dials, e.g. across regions.
	DialTimeout time.Duration
	// PoolSize is the connection pool size per node (default go-redis's,
	// 10 per CPU).
	PoolSize int
	// PoolTimeout bounds the wait for a free connection when all are busy
	// (default Timeout).
	PoolTimeout time.Duration
}

// TLSOptions say how to trust Redis and, optionally, how to prove who
// the gateway is (managed Redis with in-transit encryption, or a server's
// tls-auth-clients).
type TLSOptions struct {
	// CAFile is a PEM bundle of the authorities that sign the servers'
	// certificates; empty: the system's.
	CAFile string
	// ServerName is the name to expect in the servers' certificates when
	// it is not the host dialled (Cluster nodes announce addresses).
	ServerName string
	// CertFile and KeyFile are the gateway's own certificate and key,
	// both or neither.
	CertFile, KeyFile string
}

// config builds the tls.Config of o; errors name the file, never its
// contents.
func (o *TLSOptions) config() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.ServerName}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: tls ca_file: %v", ErrInvalidConfig, err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: tls ca_file %s: no PEM certificate in it", ErrInvalidConfig, o.CAFile)
		}
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, fmt.Errorf("%w: tls cert_file and key_file go together", ErrInvalidConfig)
	}
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: tls cert_file/key_file: %v", ErrInvalidConfig, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// NewClient returns a client tuned for rate limiting: tight timeouts
// that also honour context deadlines (go-redis ignores them unless
// ContextTimeoutEnabled), no command retries (a retried script whose reply
// was lost would charge a limit twice), one dial attempt per command (the
// failover limiter, not the client, decides when to try again), and a short
// pool wait. A Cluster client still follows up to three MOVED or ASK
// redirects per command (a reshard); it would also retry network errors
// within that budget, whatever MaxRetries says, which is why the limiters
// mark their scripts as never to be retried (see script). The caller
// closes it.
//
// Errors wrap ErrInvalidConfig and never contain the password.
func NewClient(o ClientOptions) (goredis.UniversalClient, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = o.Timeout
	}
	if o.PoolTimeout <= 0 {
		o.PoolTimeout = o.Timeout
	}
	var tlsConfig *tls.Config
	if o.TLS != nil {
		var err error
		if tlsConfig, err = o.TLS.config(); err != nil {
			return nil, err
		}
	}
	var client goredis.UniversalClient
	switch {
	case o.URL != "" && len(o.Addrs) > 0:
		return nil, fmt.Errorf("%w: set either url or addrs, not both", ErrInvalidConfig)
	case o.URL != "":
		c, err := newSingleClient(o, tlsConfig)
		if err != nil {
			return nil, err
		}
		client = c
	case len(o.Addrs) > 0:
		client = newMultiClient(o, tlsConfig)
	default:
		return nil, fmt.Errorf("%w: neither url nor addrs is set", ErrInvalidConfig)
	}
	if telemetry.Enabled() {
		// A client span per command (per script call, mostly), without
		// its arguments: they name limit keys, which hold key ids.
		if err := redisotel.InstrumentTracing(client, redisotel.WithDBStatement(false), redisotel.WithCallerEnabled(false)); err != nil {
			_ = client.Close()
			return nil, fmt.Errorf("redis: tracing: %w", err)
		}
	}
	return client, nil
}

func newSingleClient(o ClientOptions, tlsConfig *tls.Config) (goredis.UniversalClient, error) {
	// url.Parse errors quote the whole URL, password included: report only
	// the cause.
	u, err := url.Parse(o.URL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%w: url: %v", ErrInvalidConfig, err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("%w: url scheme %q: want redis or rediss", ErrInvalidConfig, u.Scheme)
	}
	opts, err := goredis.ParseURL(o.URL)
	if err != nil {
		// go-redis errors past url.Parse name the path or an option, not
		// the user info.
		return nil, fmt.Errorf("%w: url: %v", ErrInvalidConfig, err)
	}
	if o.Username != "" {
		opts.Username = o.Username
	}
	if o.Password != "" {
		opts.Password = o.Password
	}
	if tlsConfig != nil {
		if tlsConfig.ServerName == "" && opts.TLSConfig != nil {
			tlsConfig.ServerName = opts.TLSConfig.ServerName // the URL's host
		}
		opts.TLSConfig = tlsConfig
	}
	opts.DialTimeout = o.DialTimeout
	opts.ReadTimeout = o.Timeout
	opts.WriteTimeout = o.Timeout
	opts.ContextTimeoutEnabled = true
	opts.MaxRetries = -1
	opts.DialerRetries = 1
	opts.PoolTimeout = o.PoolTimeout
	if o.PoolSize > 0 {
		opts.PoolSize = o.PoolSize
	}
	opts.DisableIdentity = true
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return goredis.NewClient(opts), nil
}

func newMultiClient(o ClientOptions, tlsConfig *tls.Config) goredis.UniversalClient {
	uo := &goredis.UniversalOptions{
		Addrs:                 o.Addrs,
		MasterName:            o.MasterName,
		IsClusterMode:         o.MasterName == "",
		Username:              o.Username,
		Password:              o.Password,
		SentinelUsername:      o.SentinelUsername,
		SentinelPassword:      o.SentinelPassword,
		TLSConfig:             tlsConfig,
		DialTimeout:           o.DialTimeout,
		ReadTimeout:           o.Timeout,
		WriteTimeout:          o.Timeout,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialerRetries:         1,
		PoolSize:              o.PoolSize,
		PoolTimeout:           o.PoolTimeout,
		DisableIdentity:       true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}
	return goredis.NewUniversalClient(uo)
}

// LogToDebug sends go-redis's own messages (a failed dial per probe during
// an outage) to log at debug level: the failover limiter already logs each
// change of state once, which is what an operator needs. go-redis keeps one
// logger per process, so this applies to every client.
func LogToDebug(log *zap.Logger) {
	goredis.SetLogger(debugLog{log})
}

type debugLog struct{ log *zap.Logger }

func (d debugLog) Printf(_ context.Context, format string, v ...any) {
	d.log.Debug(fmt.Sprintf(format, v...))
}
