package redis

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/aigateway/gateway/internal/testenv"
	"github.com/aigateway/gateway/policy/limits"
)

// TestTLSWithAnACLUser: a Redis that takes TLS only, asks clients for a
// certificate and knows one ACL user is reached with the CA, the
// gateway's certificate and that user; without any of them, not.
func TestTLSWithAnACLUser(t *testing.T) {
	bin := testenv.Require(t, testenv.RedisServerVar)
	dir := t.TempDir()
	ca, caKey := writeCA(t, dir)
	serverCert, serverKey := writeLeaf(t, dir, "server", ca, caKey)
	clientCert, clientKey := writeLeaf(t, dir, "client", ca, caKey)
	caFile := filepath.Join(dir, "ca.pem")

	port := freePort(t)
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", "0", "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", serverCert, "--tls-key-file", serverKey, "--tls-ca-cert-file", caFile,
		"--tls-auth-clients", "yes", "--user", "default", "off", "--user", "gw", "on", ">s3cret", "~*", "&*", "+@all",
		"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	url := "rediss://127.0.0.1:" + strconv.Itoa(port) + "/0"
	good := ClientOptions{URL: url, Username: "gw", Password: "s3cret", Timeout: time.Second,
		TLS: &TLSOptions{CAFile: caFile, CertFile: clientCert, KeyFile: clientKey}}
	client, err := NewClient(good)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for err := client.Ping(ctx).Err(); err != nil; err = client.Ping(ctx).Err() {
		if time.Now().After(deadline) {
			t.Fatalf("no answer over TLS as gw: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling a child process, bounded by the deadline
	}
	l := NewLimiter(client, "tls:")
	if d, err := l.Allow(ctx, "k", limits.Limit{Rate: 1, Per: time.Hour, Burst: 5}, 1); err != nil || !d.Allowed || client.Exists(ctx, "tls:k").Val() != 1 {
		t.Fatalf("a decision over TLS = %+v, %v", d, err)
	}

	for name, o := range map[string]ClientOptions{
		"no client certificate": {URL: url, Username: "gw", Password: "s3cret", TLS: &TLSOptions{CAFile: caFile}},
		"the system's CAs":      {URL: url, Username: "gw", Password: "s3cret", TLS: &TLSOptions{CertFile: clientCert, KeyFile: clientKey}},
		"a wrong password":      {URL: url, Username: "gw", Password: "guess", TLS: good.TLS},
		"the default user":      {URL: url, TLS: good.TLS},
	} {
		c, err := NewClient(o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := c.Ping(ctx).Err(); err == nil {
			t.Errorf("%s: Redis answered", name)
		}
		_ = c.Close()
	}

	// Files that cannot be used are a configuration error naming the
	// file, never its contents.
	for name, o := range map[string]*TLSOptions{
		"missing CA":       {CAFile: filepath.Join(dir, "none.pem")},
		"CA not PEM":       {CAFile: serverKey + ".txt"},
		"cert without key": {CertFile: clientCert},
	} {
		if name == "CA not PEM" {
			if err := os.WriteFile(o.CAFile, []byte("not a certificate"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := NewClient(ClientOptions{URL: url, TLS: o}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: NewClient = %v, want ErrInvalidConfig", name, err)
		}
	}
}

// TestClusterOverTLSWithAnACLUser: a Cluster whose nodes take TLS only
// (their bus and replication too), ask clients for a certificate and know
// one ACL user is reached through the limiter's own TLS and user options:
// two limiters share each key's budget on whichever master serves its
// slot. Without the CA, the client certificate or the right password, no
// decision is made.
func TestClusterOverTLSWithAnACLUser(t *testing.T) {
	auth := newTLSAuth(t)
	nodes := startAuthCluster(t, auth, 3, 0)
	good := auth.options(ClientOptions{Addrs: []string{nodes[0].Addr()}, Timeout: time.Second})
	ctx := context.Background()
	const prefix = "tls-cluster:"
	limiters := make([]*Limiter, 2)
	var client goredis.UniversalClient
	for i := range limiters {
		c, err := NewClient(good)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		client, limiters[i] = c, NewLimiter(c, prefix)
	}

	// One key on each of two masters.
	keys := make([]string, 2)
	for m := range keys {
		slots := masterSlots(t, client, nodes[m].Addr())
		for i := 0; keys[m] == ""; i++ {
			if key := fmt.Sprintf("k%d", i); slots(client.ClusterKeySlot(ctx, prefix+key).Val()) {
				keys[m] = key
			}
		}
	}
	lim := limits.Limit{Rate: 1, Per: time.Hour, Burst: 3}
	for m, key := range keys {
		// The budget of 3 spent alternately through both limiters.
		for i := range lim.Burst {
			if d, err := limiters[i%2].Allow(ctx, key, lim, 1); err != nil || !d.Allowed {
				t.Fatalf("%s, decision %d: Allow = %+v, %v", key, i+1, d, err)
			}
		}
		for i, l := range limiters {
			if d, err := l.Allow(ctx, key, lim, 1); err != nil || d.Allowed {
				t.Errorf("%s through limiter %d after the budget was spent: Allow = %+v, %v", key, i, d, err)
			}
		}
		direct := nodes[m].client()
		if n := direct.Exists(ctx, prefix+key).Val(); n != 1 {
			t.Errorf("%s is not on %s, the master of its slot", key, nodes[m].Addr())
		}
		_ = direct.Close()
	}

	// with returns good changed by change, good itself left as it is.
	with := func(change func(*ClientOptions)) ClientOptions {
		o := good
		change(&o)
		return o
	}
	var unknownCA x509.UnknownAuthorityError
	var remote *net.OpError
	for _, tc := range []struct {
		name string
		o    ClientOptions
		is   func(error) bool
	}{
		{"the system's CAs", with(func(o *ClientOptions) { o.TLS = &TLSOptions{CertFile: auth.certFile, KeyFile: auth.keyFile} }),
			func(err error) bool { return errors.As(err, &unknownCA) }},
		// The server refuses the handshake once it has read the client's
		// (empty) certificate: TLS 1.3 reports that as an alert on the
		// first read.
		{"no client certificate", with(func(o *ClientOptions) { o.TLS = &TLSOptions{CAFile: auth.caFile} }),
			func(err error) bool { return errors.As(err, &remote) && remote.Op == "remote error" }},
		{"a wrong password", with(func(o *ClientOptions) { o.Password = "guess" }),
			goredis.IsAuthError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClient(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			d, err := NewLimiter(c, prefix).Allow(ctx, "refused", lim, 1)
			if !errors.Is(err, limits.ErrLimiterUnavailable) || !tc.is(err) {
				t.Errorf("Allow = %+v, %v (%T)", d, err, errors.Unwrap(err))
			}
		})
	}
}

func writeCA(t testing.TB, dir string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, "ca.pem"), "CERTIFICATE", der)
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return ca, key
}

// writeLeaf writes a certificate for 127.0.0.1 signed by ca, good for a
// server and a client, and returns the files of it and its key.
func writeLeaf(t testing.TB, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
