// Command probe is the health check and smoke test that ships inside every
// oncepay image. The images are distroless (no shell, no curl), so compose
// healthchecks and the Helm test pod run this static binary instead.
//
// Usage:
//
//	probe [-timeout 2s] URL
//	    GET URL; exit 0 on a 2xx answer, 1 otherwise.
//	probe wait [-timeout 5m] HOST:PORT...
//	    wait until every address accepts TCP connections (an init container).
//	probe smoke [-api URL] [-wait 60s]
//	    POST a payment to the api with the key in PROBE_API_KEY, replay it,
//	    GET it, and wait until it is succeeded or failed.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "probe: %v\n", err)
		os.Exit(1)
	}
}
