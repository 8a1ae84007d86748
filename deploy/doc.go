// Package deploy holds the gateway's deployment artefacts, none of them Go:
// the container image (Dockerfile), the Kubernetes manifests (kubernetes/,
// applied with kustomize) and a compose file for a full local stack
// (compose/). Its tests check them without a container engine or a
// cluster: every manifest parses, the probes, ports, security settings and
// grace periods agree with each other, and every gateway configuration they
// carry loads with config.Parse, with each ${VAR} it references provided by
// the environment the manifests give the container.
//
// deploy/testenv is a separate module: the scripts and pinned servers that
// `make test` starts.
package deploy
