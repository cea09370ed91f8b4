// Package deploy holds t2t's deployment files, not Go code: the container
// images (Dockerfile: the static CPU binary on Alpine; Dockerfile.gpu: the
// cgo binary with a PJRT CUDA plugin from the jax wheels), a Compose file
// with Redis, an OpenTelemetry collector and Jaeger (compose.yaml,
// otel-collector.yaml), Kubernetes manifests for kustomize (k8s/: base,
// overlays/gpu, components/redis-tls) and local-cluster.sh, which runs an
// N-node cluster on loopback and analyses its traces.
//
// The package's tests check these files statically, since no container
// engine or Kubernetes API runs here: every Kubernetes manifest decodes
// strictly (unknown fields rejected) into the API types, kustomizations
// name files that exist, probes hit the paths and ports `t2t node --http`
// serves, every container's arguments parse with the real `t2t node` flag
// set (the test builds the binary), the Compose services fit together, and
// the Dockerfiles build as non-root images with a t2t entrypoint. One test
// runs local-cluster.sh with three nodes and checks the traces of every
// node (it needs redis-server; it skips without one unless
// T2T_REQUIRE_REDIS=1).
package deploy
