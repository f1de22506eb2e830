// Command report serves a fault run's page, report.html, and the files next
// to it on 127.0.0.1, and prints the page's URL; it serves until
// interrupted.
//
//	report [-run .run/demo] [-addr 127.0.0.1:0]
//
// Without -run it serves the newest report.html under .run.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}
