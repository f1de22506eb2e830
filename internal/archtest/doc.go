// Package archtest enforces the dependency rules of docs/architecture.md
// over every module of the workspace. It has no API: its tests run
// `go list -deps -json` on the workspace's packages and `go mod graph` on
// the library's module (the repository's root module), and fail naming the
// import chain that breaks a rule:
//
//  1. The library (lua, pkg/idem and below) imports no other oncepay
//     package, and its module's graph names no Postgres or RabbitMQ driver,
//     no HTTP router, no metrics client and no other module of this
//     repository (a service or the test rig).
//  2. Shared packages (pkg/...) import no service.
//  3. A service imports no other service's packages; the one exception is
//     the psp's client, services/psp/pspclient. Services meet through the
//     broker, the databases and pkg/message.
//  4. No product package (services, pkg, lua) imports the test rig:
//     internal/..., loadtest/... and test-helper packages (name ending in
//     "test", e.g. psptest). Tests (_test.go files) may.
//  5. Production binaries (main packages under services/) do not link the
//     teaching strategies, pkg/idem/naive.
package archtest
