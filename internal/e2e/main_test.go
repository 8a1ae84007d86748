package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/aigateway/gateway/internal/testenv"
)

// parallelTests is how many tests marked parallel run at once when the
// command line does not say: most of this package's time is spent waiting
// (on a sweeper's grace, a replica's poll, a process starting), not
// computing, so more than GOMAXPROCS (the testing package's default) fit
// on a two-core machine.
const parallelTests = 4

// TestMain gives the run one directory for the gateway binaries the
// process tests share (builtBinary), and removes it afterwards.
//
// It also puts the S3 test server's credentials in the environment, where
// the SDK's default chain reads them (as in production), once for the
// whole run: a test setting them itself (t.Setenv) could not run in
// parallel with others.
func TestMain(m *testing.M) {
	flag.Parse()
	if !flagSet("test.parallel") {
		_ = flag.Set("test.parallel", fmt.Sprint(parallelTests))
	}
	if err := setS3Credentials(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "gateway-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// setS3Credentials copies the S3 test server's credentials, when the test
// environment has one, to the variables the AWS SDK reads.
func setS3Credentials() error {
	access, secret := os.Getenv(testenv.S3AccessKeyVar), os.Getenv(testenv.S3SecretKeyVar)
	if access == "" || secret == "" {
		return nil
	}
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": access, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": "us-east-1"} {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	return nil
}
