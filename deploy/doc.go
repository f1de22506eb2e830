// Package deploy holds no code: its tests check the deployment assets of
// oncepay without a cluster or a running Docker daemon.
//
//   - the Helm chart (deploy/helm/oncepay) is rendered with `helm template`
//     for several value sets and every object is decoded strictly into the
//     Kubernetes API types (unknown fields fail), then checked for security
//     contexts, labels, probes, drain timing and consistent references;
//   - docker-compose.yml is validated by `docker compose config` when a
//     Compose binary is there, and always by a Go check of its essentials;
//   - the Prometheus and Grafana configuration is parsed, and every metric a
//     dashboard queries must exist in the services' source.
//
// The probe command (deploy/probe) is the health check and smoke test that
// ships in the images.
//
// helm is required: `make tools` installs the pinned version into bin/.
// A missing tool fails the tests with that hint; nothing is skipped. Run
// with -count=1: the go test cache does not see files outside this module.
package deploy
